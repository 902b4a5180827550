//! Where a quote sits in a document. One owner for "does this quote occur
//! here": the MCP `cite` tool and the answer check both ask it.

use std::collections::HashSet;

use crate::store::ChunkRow;

/// Whitespace collapsed and case folded: how quotes are compared.
pub fn squash(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Whether `quote` occurs in `text`, whitespace and case ignored: the rule.
pub fn occurs(quote: &str, text: &str) -> bool {
    squash(text).contains(&squash(quote))
}

#[derive(Debug, Clone, Copy)]
pub enum Located<'a> {
    /// The quote occurs in this passage.
    Verified(&'a ChunkRow),
    /// It occurs nowhere; `nearest` shares the most words with it.
    NotFound { nearest: Option<&'a ChunkRow> },
}

/// Finds `quote` in one of `chunks` (whitespace and case ignored).
pub fn locate<'a>(chunks: &'a [ChunkRow], quote: &str) -> Located<'a> {
    if let Some(hit) = chunks.iter().find(|c| occurs(quote, &c.text)) {
        return Located::Verified(hit);
    }
    let quote = squash(quote);
    let words: HashSet<&str> = quote.split(' ').collect();
    let nearest = chunks
        .iter()
        .map(|c| {
            let shared = squash(&c.text)
                .split(' ')
                .filter(|w| words.contains(w))
                .count();
            (shared, c)
        })
        .filter(|(shared, _)| *shared > 0)
        .max_by_key(|(shared, c)| (*shared, std::cmp::Reverse(c.seq)))
        .map(|(_, c)| c);
    Located::NotFound { nearest }
}
