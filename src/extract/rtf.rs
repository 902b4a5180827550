//! RTF: text and paragraphs; a paragraph with an outline level
//! (`\outlinelevelN`) or a "heading N" style is a heading. The title comes
//! from `{\info{\title …}}`, else the first heading.
//!
//! Written here because the RTF crate on the registry (rtf-parser 0.4)
//! exposes neither outline levels nor style names, which are where RTF keeps
//! its structure. The reader is a loop over tokens with an explicit group
//! stack: no recursion, so deep nesting cannot overflow the stack.

use std::collections::HashMap;

use super::flow::{Block, Flow};
use super::{BrokenReason, Extracted, Reader};

/// Destinations whose text is not document text.
const SKIPPED: &[&str] = &[
    "fonttbl",
    "colortbl",
    "pict",
    "object",
    "header",
    "headerl",
    "headerr",
    "headerf",
    "footer",
    "footerl",
    "footerr",
    "footerf",
    "fldinst",
    "themedata",
    "colorschememapping",
    "datastore",
    "latentstyles",
    "listtable",
    "listoverridetable",
    "rsidtbl",
    "generator",
    "xmlnstbl",
    "mmathPr",
    "filetbl",
    "revtbl",
    "pgdsctbl",
    "bkmkstart",
    "bkmkend",
    "xe",
    "tc",
    "private",
    "author",
    "operator",
    "company",
    "subject",
    "keywords",
    "comment",
    "doccomm",
];

/// What a group is doing with its text.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dest {
    Text,
    Skip,
    Title,
    /// The style sheet: its entries are groups of their own.
    StyleSheet,
    /// An entry of the style sheet: its name, then `;`.
    Style,
}

#[derive(Clone, Copy)]
struct Group {
    dest: Dest,
    /// Characters to skip after a `\uN` (`\ucN`).
    uc: usize,
}

pub fn extract(bytes: &[u8]) -> Result<Extracted, BrokenReason> {
    if !bytes.starts_with(b"{\\rtf") {
        return Err(BrokenReason::CorruptDocument {
            format: "RTF".into(),
            detail: "no {\\rtf header".into(),
        });
    }
    let mut r = Rtf::default();
    r.run(bytes);
    if r.open {
        r.end_paragraph();
    }
    let (first_heading, sections) = r.flow.finish();
    let info_title = r.title.trim();
    Ok(Extracted {
        title: if info_title.is_empty() {
            first_heading
        } else {
            info_title.to_string()
        },
        sections,
        reader: Reader::Native,
        ..Default::default()
    })
}

/// A control word at `i` (its letters, then an optional signed number of
/// at most 10 characters, then one space that belongs to it): the word, its
/// number, and where what follows starts.
fn control_word(bytes: &[u8], mut i: usize) -> (&str, Option<i32>, usize) {
    let start = i;
    while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
        i += 1;
    }
    let word = std::str::from_utf8(&bytes[start..i]).unwrap_or("");
    let num_start = i;
    if i < bytes.len() && bytes[i] == b'-' {
        i += 1;
    }
    while i < bytes.len() && bytes[i].is_ascii_digit() && i - num_start < 10 {
        i += 1;
    }
    let param = std::str::from_utf8(&bytes[num_start..i])
        .ok()
        .and_then(|p| p.parse::<i32>().ok());
    if i < bytes.len() && bytes[i] == b' ' {
        i += 1;
    }
    (word, param, i)
}

#[derive(Default)]
struct Rtf {
    flow: Flow,
    open: bool,
    /// The paragraph's outline level or heading style.
    level: Option<u8>,
    style: Option<i32>,
    /// Style number → heading level, from the style sheet.
    headings: HashMap<i32, u8>,
    style_name: String,
    style_number: Option<i32>,
    title: String,
    codepage: Option<&'static encoding_rs::Encoding>,
    /// Characters still to skip after a `\uN`.
    skip: usize,
    /// The row's cells so far (tables: `\cell`, `\row`).
    row: Vec<String>,
    cell: String,
    in_table: bool,
}

impl Rtf {
    fn run(&mut self, bytes: &[u8]) {
        let mut stack: Vec<Group> = Vec::new();
        let mut g = Group {
            dest: Dest::Text,
            uc: 1,
        };
        // The next control word names a destination (after `{` or `{\*`).
        let mut group_start = false;
        let mut ignorable = false;
        let mut i = 0;
        while i < bytes.len() {
            let c = bytes[i];
            i += 1;
            match c {
                b'{' => {
                    stack.push(g);
                    group_start = true;
                    ignorable = false;
                    continue;
                }
                b'}' => {
                    if g.dest == Dest::Style {
                        self.end_style();
                    }
                    g = stack.pop().unwrap_or(g);
                }
                b'\r' | b'\n' => {}
                b'\\' => {
                    let Some(&next) = bytes.get(i) else { break };
                    if next.is_ascii_alphabetic() {
                        let (word, param, end) = control_word(bytes, i);
                        i = end;
                        if group_start {
                            let parent = stack.last().map(|p| p.dest);
                            g.dest = self.destination(word, ignorable, g.dest, parent);
                        }
                        group_start = false;
                        self.control(word, param, &mut g);
                    } else if next == b'*' {
                        i += 1;
                        ignorable = true;
                        continue;
                    } else {
                        i += 1;
                        self.control_symbol(next, bytes, &mut i, &g);
                        group_start = false;
                    }
                }
                _ => {
                    group_start = false;
                    let ch = if c.is_ascii() {
                        c as char
                    } else {
                        self.decode(c)
                    };
                    self.put(&g, ch);
                }
            }
            ignorable = false;
        }
    }

    /// The destination a group starting with control `word` writes to:
    /// skipped, the title, the style sheet or one of its styles, or its
    /// parent's.
    fn destination(
        &mut self,
        word: &str,
        ignorable: bool,
        dest: Dest,
        parent: Option<Dest>,
    ) -> Dest {
        match word {
            _ if ignorable || SKIPPED.contains(&word) => Dest::Skip,
            _ if dest == Dest::Skip => Dest::Skip,
            "title" => Dest::Title,
            "stylesheet" => Dest::StyleSheet,
            _ if parent == Some(Dest::StyleSheet) => {
                self.style_number = None;
                self.style_name.clear();
                Dest::Style
            }
            _ => dest,
        }
    }

    /// A control symbol (`\'hh`, `\~`, `\_`, an escaped brace, …); `i` is
    /// past the symbol, and past the two hex digits of `\'hh`.
    fn control_symbol(&mut self, symbol: u8, bytes: &[u8], i: &mut usize, g: &Group) {
        match symbol {
            b'\'' => {
                let hex = bytes
                    .get(*i..*i + 2)
                    .and_then(|h| std::str::from_utf8(h).ok());
                if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    *i += 2;
                    let ch = self.decode(b);
                    self.put(g, ch);
                }
            }
            b'~' => self.put(g, '\u{a0}'),
            b'_' => self.put(g, '-'),
            b'-' => {}
            b'\\' | b'{' | b'}' => self.put(g, symbol as char),
            b'\n' | b'\r' => self.end_paragraph_in(g),
            _ => {}
        }
    }

    fn control(&mut self, word: &str, param: Option<i32>, g: &mut Group) {
        match word {
            "ansicpg" => {
                self.codepage = param.and_then(|p| {
                    encoding_rs::Encoding::for_label(format!("windows-{p}").as_bytes())
                })
            }
            "uc" => g.uc = param.unwrap_or(1).clamp(0, 8) as usize,
            "u" => {
                if let Some(n) = param {
                    let code = if n < 0 { n + 65536 } else { n } as u32;
                    self.put(g, char::from_u32(code).unwrap_or('\u{fffd}'));
                    self.skip = g.uc;
                }
            }
            "s" if g.dest == Dest::Style => self.style_number = param,
            "s" => self.style = param,
            "pard" => {
                self.level = None;
                self.style = None;
                self.in_table = false;
            }
            "outlinelevel" => {
                self.level = param.filter(|l| (0..9).contains(l)).map(|l| l as u8 + 1)
            }
            "intbl" => self.in_table = true,
            "par" => self.end_paragraph_in(g),
            "line" => self.put(g, '\n'),
            "tab" => self.put(g, '\t'),
            "cell" if g.dest == Dest::Text => {
                self.row
                    .push(std::mem::take(&mut self.cell).trim().to_string());
            }
            "row" if g.dest == Dest::Text => {
                let row = std::mem::take(&mut self.row).join(" | ");
                self.flow.open_paragraph();
                self.flow.text(&row);
                self.flow.close_paragraph(Block::Body);
                self.in_table = false;
            }
            "bullet" => self.put(g, '•'),
            "endash" => self.put(g, '–'),
            "emdash" => self.put(g, '—'),
            "lquote" => self.put(g, '‘'),
            "rquote" => self.put(g, '’'),
            "ldblquote" => self.put(g, '“'),
            "rdblquote" => self.put(g, '”'),
            _ => {}
        }
    }

    fn decode(&self, b: u8) -> char {
        let enc = self.codepage.unwrap_or(encoding_rs::WINDOWS_1252);
        enc.decode_without_bom_handling(&[b])
            .0
            .chars()
            .next()
            .unwrap_or('\u{fffd}')
    }

    fn put(&mut self, g: &Group, ch: char) {
        if self.skip > 0 {
            self.skip -= 1;
            return;
        }
        match g.dest {
            Dest::Skip | Dest::StyleSheet => {}
            Dest::Title => self.title.push(ch),
            Dest::Style => self.style_name.push(ch),
            Dest::Text if self.in_table => self.cell.push(ch),
            Dest::Text => {
                if !self.open {
                    self.flow.open_paragraph();
                    self.open = true;
                }
                let mut buf = [0u8; 4];
                self.flow.text(ch.encode_utf8(&mut buf));
            }
        }
    }

    fn end_paragraph_in(&mut self, g: &Group) {
        match g.dest {
            Dest::Text if self.in_table => self.cell.push(' '),
            Dest::Text => self.end_paragraph(),
            _ => {}
        }
    }

    fn end_paragraph(&mut self) {
        if !self.open {
            return;
        }
        let block = self
            .level
            .or_else(|| self.style.and_then(|s| self.headings.get(&s).copied()))
            .map_or(Block::Body, Block::Heading);
        self.flow.close_paragraph(block);
        self.open = false;
    }

    /// A style-sheet entry ended: "heading N" names a heading style.
    fn end_style(&mut self) {
        let name = std::mem::take(&mut self.style_name);
        let name = name
            .trim()
            .trim_end_matches(';')
            .trim()
            .to_ascii_lowercase();
        if let (Some(n), Some(level)) = (
            self.style_number,
            name.strip_prefix("heading ")
                .and_then(|l| l.parse::<u8>().ok())
                .filter(|l| (1..=9).contains(l)),
        ) {
            self.headings.insert(n, level);
        }
        self.style_number = None;
    }
}
