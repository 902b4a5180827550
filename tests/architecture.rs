//! The engine's modules import one way only: each names only modules above
//! it in [`LAYERS`], so there is no import cycle and a newcomer can read
//! the code in the order data flows. Read from the source text: every
//! `crate::` path outside test modules and comments, with the crate root's
//! re-exports (`crate::Library`, `crate::Error`) traced to their module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Bottom to top. Leaves first; the facade (`library`) over everything it
/// wires; the shells (`watch`, `eval`, `mcp`, `cli`) over the facade.
const LAYERS: &[&str] = &[
    "score",
    "mention",
    "kb",
    "words",
    "language",
    "fault",
    "extract",
    "error",
    "paths",
    "chunk",
    "card",
    "models",
    "provenance",
    "store",
    "ingest",
    "lanes",
    "foreign",
    "answer",
    "library",
    "watch",
    "sweep",
    "eval",
    "mcp",
    "serve",
    "cli",
];

fn rs_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The code of a file without its unit tests and comments.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap();
    text.lines()
        .map(|l| l.split("//").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first names of every `crate::` path: `crate::store::X` gives
/// `store`, `crate::{Error, lanes::Y}` gives `Error` and `lanes`.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Top-level names of the group, skipping nested braces.
            let (mut depth, mut start) = (0, true);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if start && !c.is_whitespace() => {
                        out.insert(ident(&group[i..]));
                        start = false;
                    }
                    _ => {}
                }
            }
        } else {
            out.insert(ident(rest));
        }
    }
    out
}

#[test]
fn every_module_imports_only_modules_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    // Re-exports at the root: `pub use library::{Library, …};`.
    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    for line in lib.lines() {
        if let Some(rest) = line.strip_prefix("pub use ") {
            let (module, names) = rest.split_once("::").unwrap();
            for name in names.trim_matches(|c| "{};".contains(c)).split(',') {
                owner.insert(name.trim().to_string(), module.to_string());
            }
        }
    }
    let rank = |m: &str| LAYERS.iter().position(|l| *l == m);
    let mut files = Vec::new();
    rs_files(&src, &mut files);
    let mut wrong = Vec::new();
    let mut seen = BTreeSet::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" || module == "bin" {
            continue;
        }
        seen.insert(module.clone());
        let here = rank(&module)
            .unwrap_or_else(|| panic!("src/{module} is not in LAYERS: place it there"));
        let text = std::fs::read_to_string(&file).unwrap();
        for name in crate_paths(&code(&text)) {
            let target = owner.get(&name).cloned().unwrap_or(name.clone());
            if target == module {
                continue;
            }
            match rank(&target) {
                Some(there) if there < here => {}
                Some(_) => wrong.push(format!("{} names crate::{name} ({target})", rel.display())),
                None => panic!(
                    "{}: crate::{name} is neither a module nor a root re-export",
                    rel.display()
                ),
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the flow:\n{}",
        wrong.join("\n")
    );
    let missing: Vec<_> = LAYERS.iter().filter(|l| !seen.contains(**l)).collect();
    assert!(
        missing.is_empty(),
        "LAYERS names modules that are gone: {missing:?}"
    );
}

/// The check itself can fail: an upward import in a made-up file is found.
#[test]
fn an_upward_import_is_found() {
    let paths = crate_paths(&code(
        "use crate::{error::Result, Library};\n// crate::cli in a comment\nfn f() { crate::lanes::x(); }",
    ));
    assert_eq!(
        paths.into_iter().collect::<Vec<_>>(),
        ["Library", "error", "lanes"]
    );
}
