//! A line checked verbatim against a whole library: "did X say '…'?" is
//! answered by the library's text, before any model is asked. Found, with
//! each document and passage that holds it, or not in this library, with
//! the passage that comes closest. `carrel verify`, `carrel ask` and the
//! chat, and MCP's `verify` all ask [`verify_line`]; whether a line occurs in
//! a passage is [`cite::locate`]'s rule.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::{Corpus, cite};
use crate::error::Result;

/// Passages the keyword index may offer as holding the line's words in
/// order; each is then read for the line itself.
const PHRASE_CANDIDATES: usize = 200;
/// The fewest words a quoted stretch of a question needs to be taken as a
/// line to check ("did she say 'yes'?" quotes a word, not a line).
pub const LINE_MIN_WORDS: usize = 3;

/// Where a line is, or the passage closest to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
pub struct LinePlace {
    pub doc: i64,
    pub title: String,
    pub source: String,
    pub chunk: i64,
    pub heading_path: Vec<String>,
    pub page: Option<u32>,
    pub passage: String,
}

/// What the library says of a line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum LineCheck {
    /// It occurs verbatim (whitespace and case aside) in each of `places`.
    Found { places: Vec<LinePlace> },
    /// It occurs nowhere in the library; `nearest` shares the most words.
    NotInLibrary { nearest: Option<LinePlace> },
}

/// A line a question quotes, and what the library says of it.
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type)]
pub struct QuotedLine {
    pub line: String,
    pub check: LineCheck,
}

/// Checks `line` against every document of `lib`.
pub fn verify_line(lib: &dyn Corpus, line: &str) -> Result<LineCheck> {
    let store = lib.store();
    let mut contents = BTreeSet::new();
    for chunk in store.phrase_chunks(line, PHRASE_CANDIDATES)? {
        contents.extend(store.chunk_content(chunk)?);
    }
    let mut places = Vec::new();
    for doc in lib.list()? {
        let Some(content) = store.document_content(doc.id)? else {
            continue;
        };
        if !contents.contains(&content) {
            continue;
        }
        if let cite::Located::Verified(c) = cite::locate(&store.chunks(content)?, line) {
            places.push(LinePlace {
                doc: doc.id,
                title: doc.title,
                source: doc.source,
                chunk: c.id,
                heading_path: c.heading_path.clone(),
                page: c.page,
                passage: c.text.clone(),
            });
        }
    }
    Ok(match places.is_empty() {
        false => LineCheck::Found { places },
        true => LineCheck::NotInLibrary {
            nearest: closest(lib, line)?,
        },
    })
}

/// The passage whose words best match `line` (BM25), as a place.
fn closest(lib: &dyn Corpus, line: &str) -> Result<Option<LinePlace>> {
    let store = lib.store();
    let Some(&chunk) = store.keyword_chunks(line, 1)?.first() else {
        return Ok(None);
    };
    let Some(content) = store.chunk_content(chunk)? else {
        return Ok(None);
    };
    for doc in lib.list()? {
        if store.document_content(doc.id)? == Some(content)
            && let Some(c) = store.chunks(content)?.into_iter().find(|c| c.id == chunk)
        {
            return Ok(Some(LinePlace {
                doc: doc.id,
                title: doc.title,
                source: doc.source,
                chunk: c.id,
                heading_path: c.heading_path,
                page: c.page,
                passage: c.text,
            }));
        }
    }
    Ok(None)
}

/// The line a message quotes, if it quotes one: the longest stretch of at
/// least [`LINE_MIN_WORDS`] words between a pair of quotation marks that
/// open after a space (or the start) and close before one (or the end).
pub fn quoted_line(message: &str) -> Option<String> {
    const PAIRS: [(char, char); 5] = [('"', '"'), ('“', '”'), ('«', '»'), ('„', '“'), ('\'', '\'')];
    let chars: Vec<(usize, char)> = message.char_indices().collect();
    let mut best: Option<&str> = None;
    for (open, close) in PAIRS {
        for (i, &(at, c)) in chars.iter().enumerate() {
            let opens = c == open && (i == 0 || !chars[i - 1].1.is_alphanumeric());
            if !opens {
                continue;
            }
            let start = at + c.len_utf8();
            let end = chars[i + 1..].iter().enumerate().find(|&(j, &(_, d))| {
                d == close
                    && chars
                        .get(i + 1 + j + 1)
                        .is_none_or(|&(_, after)| !after.is_alphanumeric())
            });
            if let Some((_, &(end, _))) = end {
                let inner = message[start..end].trim();
                if inner.split_whitespace().count() >= LINE_MIN_WORDS
                    && best.is_none_or(|b| inner.len() > b.len())
                {
                    best = Some(inner);
                }
            }
        }
    }
    best.map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_line_is_found_in_a_question_and_a_quoted_word_is_not() {
        assert_eq!(
            quoted_line("did the guide say \"feed it twice a day\"?").as_deref(),
            Some("feed it twice a day")
        );
        assert_eq!(
            quoted_line("Он писал «воля к власти есть жизнь»?").as_deref(),
            Some("воля к власти есть жизнь")
        );
        assert_eq!(
            quoted_line("is 'discard half the starter' in my notes").as_deref(),
            Some("discard half the starter")
        );
        assert_eq!(quoted_line("did she say \"yes\"?"), None);
        assert_eq!(quoted_line("the starter's jar isn't big"), None);
        assert_eq!(quoted_line("no quotes at all here"), None);
    }
}
