//! A PostgreSQL passage's words as SQLite's keyword index counts them
//! ([`fts5_words`]): a `tsvector` of FTS5's tokens, each at its place, the
//! heading's weighted B and the text's A (a phrase is looked for in the
//! text alone, as on SQLite), and their number, the passage's length for
//! BM25. PostgreSQL's own English configuration stems by Snowball, not
//! Porter, and drops stop words, so the two stores counted different words.

use std::collections::BTreeMap;

use postgres::Transaction;

use crate::error::Result;
use crate::store::fts5_words::fts5_words;
use crate::store::keywords::match_terms;

/// A passage's words for its row: `words` and `tokens`.
pub(super) struct PassageWords {
    /// A `tsvector` literal.
    pub vector: String,
    /// Every token of the heading and the text, repeats counted.
    pub tokens: i32,
}

/// PostgreSQL's limits on a `tsvector`: the highest position, positions
/// kept per lexeme, and a lexeme's bytes. A passage near Carrel's 600-char
/// ceiling reaches none; past them a position is held at the highest, a
/// lexeme's further places are not kept, and a longer lexeme (a run of
/// encoded data) is left out of the vector but still counted in `tokens`.
const MAX_POSITION: usize = 16_383;
const MAX_POSITIONS: usize = 256;
const MAX_LEXEME_BYTES: usize = 2_047;

/// Each passage's words, for (heading path, text) as the row stores them.
pub(super) fn passage_words(passages: &[(&str, &str)]) -> Result<Vec<PassageWords>> {
    let texts: Vec<&str> = passages.iter().flat_map(|&(h, t)| [h, t]).collect();
    let words = fts5_words(&texts)?;
    Ok(words
        .chunks(2)
        .map(|pair| tsvector(&pair[0], &pair[1]))
        .collect())
}

fn tsvector(heading: &[String], text: &[String]) -> PassageWords {
    let mut places: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let tokens = heading.iter().map(|w| (w, 'B'));
    for (i, (word, weight)) in tokens.chain(text.iter().map(|w| (w, 'A'))).enumerate() {
        let at = places.entry(word).or_default();
        if word.len() <= MAX_LEXEME_BYTES && at.len() < MAX_POSITIONS {
            at.push(format!("{}{weight}", (i + 1).min(MAX_POSITION)));
        }
    }
    let vector = places
        .iter()
        .filter(|(_, at)| !at.is_empty())
        .map(|(word, at)| format!("{}:{}", quoted(word), at.join(",")))
        .collect::<Vec<_>>()
        .join(" ");
    PassageWords {
        vector,
        tokens: (heading.len() + text.len()) as i32,
    }
}

/// A lexeme as `tsvector` and `tsquery` literals write it.
fn quoted(word: &str) -> String {
    format!("'{}'", word.replace('\\', "\\\\").replace('\'', "''"))
}

/// The lexemes of a query's content words, as SQLite's `MATCH` of those
/// words reads them: one per word, a repeated stem as often as it comes
/// (FTS5's `bm25()` scores each phrase of the query).
pub(super) fn query_lexemes(text: &str) -> Result<Vec<String>> {
    let terms: Vec<String> = match_terms(text)
        .iter()
        .map(|t| t.trim_matches('"').to_string())
        .collect();
    let terms: Vec<&str> = terms.iter().map(String::as_str).collect();
    Ok(fts5_words(&terms)?.into_iter().flatten().collect())
}

/// Where a phrase is looked for: anywhere in a passage, or in its text.
#[derive(Debug, Clone, Copy)]
pub(super) enum Within {
    Passage,
    Text,
}

/// For each text, a `tsquery` of its tokens as one phrase, in order; none
/// for a text with no token. The texts are read by one tokenizer run.
pub(super) fn phrases(texts: &[&str], within: Within) -> Result<Vec<Option<String>>> {
    Ok(fts5_words(texts)?
        .iter()
        .map(|words| phrase(words, within))
        .collect())
}

/// A `tsquery` of `words` as one phrase, in order; none for no words.
pub(super) fn phrase(words: &[String], within: Within) -> Option<String> {
    let weight = match within {
        Within::Passage => "",
        Within::Text => ":A",
    };
    (!words.is_empty()).then(|| {
        words
            .iter()
            .map(|w| format!("{}{weight}", quoted(w)))
            .collect::<Vec<_>>()
            .join(" <-> ")
    })
}

/// Rows filled at a time when a library's words are made again.
const REFILL_BATCH: i64 = 2_000;

/// Makes every passage's words and length again (schema 4), and the
/// library's totals from them; the readers' generation moves.
pub(super) fn refill(tx: &mut Transaction<'_>) -> std::result::Result<(), super::Failed> {
    let mut after = 0i64;
    loop {
        let rows = tx.query(
            "SELECT id, heading_path, text FROM chunks WHERE id > $1 ORDER BY id LIMIT $2",
            &[&after, &REFILL_BATCH],
        )?;
        let Some(last) = rows.last() else { break };
        after = last.get(0);
        let ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
        let passages: Vec<(&str, &str)> = rows.iter().map(|r| (r.get(1), r.get(2))).collect();
        let words = passage_words(&passages).map_err(super::Failed::Carrel)?;
        let vectors: Vec<&str> = words.iter().map(|w| w.vector.as_str()).collect();
        let tokens: Vec<i32> = words.iter().map(|w| w.tokens).collect();
        tx.execute(
            "UPDATE chunks c SET words = w.words::tsvector, tokens = w.tokens
             FROM unnest($1::bigint[], $2::text[], $3::integer[]) AS w (id, words, tokens)
             WHERE c.id = w.id",
            &[&ids, &vectors, &tokens],
        )?;
    }
    tx.batch_execute(
        "DELETE FROM chunk_totals;
         INSERT INTO chunk_totals SELECT count(*), coalesce(sum(tokens), 0) FROM chunks;
         INSERT INTO carrel_changes VALUES (1);",
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(heading: &[&str], text: &[&str]) -> PassageWords {
        let own = |ws: &[&str]| ws.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        tsvector(&own(heading), &own(text))
    }

    #[test]
    fn a_passage_vector_places_each_word_with_its_column() {
        let w = words(&["ice"], &["ski", "o'", "ski"]);
        assert_eq!(w.vector, "'ice':1B 'o''':3A 'ski':2A,4A");
        assert_eq!(w.tokens, 4);
    }

    #[test]
    fn a_vector_keeps_within_postgresqls_limits_and_counts_every_token() {
        let long = "x".repeat(MAX_LEXEME_BYTES + 1);
        let many = vec!["a"; MAX_POSITIONS + 10];
        let w = words(&[&long], &many);
        assert!(!w.vector.contains(&long));
        assert_eq!(w.vector.matches(',').count(), MAX_POSITIONS - 1);
        assert_eq!(w.tokens as usize, MAX_POSITIONS + 11);
    }

    #[test]
    fn a_phrase_is_fts5s_tokens_in_order() {
        assert_eq!(
            phrases(&["Skiing, the news", "snow"], Within::Text).unwrap(),
            [
                Some("'ski':A <-> 'the':A <-> 'new':A".to_string()),
                Some("'snow':A".to_string())
            ]
        );
        assert_eq!(phrases(&["--"], Within::Passage).unwrap(), [None]);
        assert_eq!(
            query_lexemes("skiing and skies in the news").unwrap(),
            ["ski", "ski", "new"]
        );
    }
}
