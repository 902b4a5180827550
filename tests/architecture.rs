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
    paths_after(code, "crate::")
}

/// The first segment of every path that starts a path (`marks` in
/// `marks::attribute(…)`, not `std` in `::std` nor `io` in `std::io`).
fn path_heads(code: &str) -> BTreeSet<String> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices("::") {
        let before = &code[..at];
        let head: String = before
            .chars()
            .rev()
            .take_while(|c| is_ident(*c))
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let rest = &before[..before.len() - head.len()];
        if !head.is_empty() && !rest.ends_with("::") && !rest.ends_with(is_ident) {
            out.insert(head);
        }
    }
    out
}

/// The names a file's `use` items outside `super::` bind (`ingest` in
/// `use crate::{ingest, lanes::X};`): a path starting with one of them is
/// not a sibling's, whatever its name.
fn imported_elsewhere(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for item in code.split("use ").skip(1) {
        let item = item.split(';').next().unwrap_or("");
        if item.starts_with("super::") || item.contains('\n') && !item.contains('{') {
            continue;
        }
        for leaf in item.split(|c: char| "{},".contains(c)) {
            let leaf = leaf.trim();
            let name = leaf.rsplit(" as ").next().unwrap_or(leaf);
            let name = name.rsplit("::").next().unwrap_or(name).trim();
            if !name.is_empty() && name != "self" {
                out.insert(name.to_string());
            }
            if let Some(module) = leaf.strip_suffix("::self") {
                out.insert(module.rsplit("::").next().unwrap_or(module).to_string());
            }
        }
    }
    out
}

/// The first names of every path that starts with `prefix`.
fn paths_after(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    for (at, _) in code.match_indices(prefix) {
        let rest = &code[at + prefix.len()..];
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

/// Inside a module's folder, the files import one another without a cycle:
/// `hub` may use `remote`, and then `remote` does not use `hub`. A folder's
/// `mod.rs` is its facade over its files and is left out (each file may
/// name it as `super::`). Read as above: `super::NAME` and
/// `crate::MODULE::NAME` paths outside tests and comments.
#[test]
fn the_files_of_each_module_folder_import_one_another_without_a_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rs_files(&src, &mut files);
    let mut folders: BTreeMap<std::path::PathBuf, BTreeMap<String, BTreeSet<String>>> =
        BTreeMap::new();
    for file in &files {
        let dir = file.parent().unwrap();
        let stem = file.file_stem().unwrap().to_string_lossy().to_string();
        if dir == src || stem == "mod" {
            continue;
        }
        let rel = dir
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('/', "::");
        let code = code(&std::fs::read_to_string(file).unwrap());
        let mut names = paths_after(&code, "super::");
        names.extend(paths_after(&code, &format!("crate::{rel}::")));
        // A sibling named through the parent's imports (`marks::attribute`
        // after the parent's `pub mod marks`, reached by `use super::*`).
        let bound = imported_elsewhere(&code);
        names.extend(path_heads(&code).into_iter().filter(|h| !bound.contains(h)));
        folders
            .entry(dir.to_path_buf())
            .or_default()
            .insert(stem, names);
    }
    let mut cycles = Vec::new();
    for (dir, graph) in &folders {
        // Only the names that are files of this folder are edges.
        let edges: BTreeMap<&str, Vec<&str>> = graph
            .iter()
            .map(|(f, names)| {
                let to = names
                    .iter()
                    .map(String::as_str)
                    .filter(|n| *n != f && graph.contains_key(*n))
                    .collect();
                (f.as_str(), to)
            })
            .collect();
        if let Some(cycle) = a_cycle(&edges) {
            cycles.push(format!(
                "{}: {}",
                dir.strip_prefix(&src).unwrap().display(),
                cycle.join(" → ")
            ));
        }
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

/// A cycle in `edges`, as the names along it (the first repeated last), if
/// there is one.
fn a_cycle<'a>(edges: &BTreeMap<&'a str, Vec<&'a str>>) -> Option<Vec<&'a str>> {
    fn visit<'a>(
        node: &'a str,
        edges: &BTreeMap<&'a str, Vec<&'a str>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<&'a str>> {
        if let Some(at) = path.iter().position(|n| *n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node);
            return Some(cycle);
        }
        if !done.insert(node) {
            return None;
        }
        path.push(node);
        for next in edges.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|n| visit(n, edges, &mut Vec::new(), &mut done))
}

/// The cycle check can fail: hub → remote → hub is found, a chain is not.
#[test]
fn a_cycle_between_files_is_found() {
    let cyclic = BTreeMap::from([
        ("hub", vec!["remote", "shelf"]),
        ("remote", vec!["hub"]),
        ("shelf", vec![]),
    ]);
    assert_eq!(a_cycle(&cyclic), Some(vec!["hub", "remote", "hub"]));
    let chain = BTreeMap::from([
        ("hub", vec!["remote", "shared"]),
        ("remote", vec!["shared"]),
        ("shared", vec![]),
    ]);
    assert_eq!(a_cycle(&chain), None);
    assert_eq!(
        path_heads("let a = marks::attribute(x); std::io::stdout(); ::core::mem::take()"),
        BTreeSet::from(["marks".to_string(), "std".to_string()])
    );
    assert_eq!(
        paths_after("use super::{hub::Scorers, remote};", "super::"),
        BTreeSet::from(["hub".to_string(), "remote".to_string()])
    );
}

/// What names a storage backend in code: its crates, its connection, SQL.
const BACKEND_WORDS: &[&str] = &[
    "rusqlite",
    "sqlite_vec::",
    "tokio_postgres",
    "postgres::",
    "pgvector::",
    ".conn",
    "SELECT ",
    "INSERT ",
    "DELETE FROM",
    "UPDATE ",
];

/// The backend words in a file's code (comments and unit tests left out).
fn backend_words(code: &str) -> Vec<&'static str> {
    BACKEND_WORDS
        .iter()
        .copied()
        .filter(|w| code.contains(w))
        .collect()
}

/// The store is the one seam between a library and its backend: the lanes
/// decide (gates, floors, the veto, outcomes) and ingest, answers, watches
/// and every surface above them ask the store, so none of them names
/// SQLite, PostgreSQL or SQL. Below the store nothing touches a database;
/// `foreign` talks to other stores by nature, `eval`'s BM25 baseline is
/// its own in-memory FTS5 index, and `error` wraps each backend's errors.
#[test]
fn only_the_store_names_a_backend() {
    const ABOVE_THE_SEAM: &[&str] = &[
        "ingest", "lanes", "answer", "library", "watch", "sweep", "mcp", "serve", "cli",
    ];
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut named = Vec::new();
    for module in ABOVE_THE_SEAM {
        let mut files = Vec::new();
        let dir = src.join(module);
        if dir.is_dir() {
            rs_files(&dir, &mut files);
        } else {
            files.push(src.join(format!("{module}.rs")));
        }
        for file in files {
            let words = backend_words(&code(&std::fs::read_to_string(&file).unwrap()));
            if !words.is_empty() {
                let rel = file.strip_prefix(&src).unwrap().display().to_string();
                named.push(format!("{rel}: {words:?}"));
            }
        }
    }
    assert!(
        named.is_empty(),
        "a backend named above the store (fetch through a Store method instead):\n{}",
        named.join("\n")
    );
}

/// The check itself can fail: a lane that runs SQL is found.
#[test]
fn a_lane_running_sql_is_found() {
    let lane = "fn near(store: &Store) {\n    // SELECT in a comment is fine\n    store.conn.prepare(\"SELECT id FROM cards\");\n}\n";
    assert_eq!(backend_words(&code(lane)), vec![".conn", "SELECT "]);
    assert!(backend_words(&code("// SELECT id FROM cards\nfn f() {}\n")).is_empty());
}
