//! The words SQLite's keyword index sees in a text: FTS5's own tokenizer,
//! [`TOKENIZER`] as `chunks_fts` is made (schema v11), run over an
//! in-memory table. A store without FTS5 (PostgreSQL) keeps these words,
//! so both stores' BM25 count the same words: the same stems (Porter's,
//! not Snowball's), the same splits, and no stop word dropped.

use std::cell::RefCell;

use rusqlite::Connection;

use crate::error::Result;

/// The keyword index's tokenizer: Porter's stemmer over `unicode61`
/// (diacritics removed, split on everything but letters and digits).
pub const TOKENIZER: &str = "porter unicode61";

thread_local! {
    /// Each thread's tokenizing table, made once: with a connection and
    /// its tables made for every call, a copy of three million passages
    /// into PostgreSQL spent half its time in `malloc`.
    static TABLE: RefCell<Option<Connection>> = const { RefCell::new(None) };
}

/// FTS5's tokens of each text, in order, as its index holds them.
pub fn fts5_words(texts: &[&str]) -> Result<Vec<Vec<String>>> {
    TABLE.with(|table| {
        let mut table = table.borrow_mut();
        let conn = match table.take() {
            Some(conn) => conn,
            None => tokenizing_table()?,
        };
        let words = words_in(&conn, texts);
        *table = Some(conn);
        words
    })
}

fn tokenizing_table() -> Result<Connection> {
    let conn = Connection::open_in_memory()?;
    conn.execute_batch(&format!(
        "CREATE VIRTUAL TABLE t USING fts5(x, tokenize = '{TOKENIZER}');
         CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance');"
    ))?;
    Ok(conn)
}

/// The texts' tokens, written in a transaction that is never committed:
/// the table is empty again for the next call, whatever happens here.
fn words_in(conn: &Connection, texts: &[&str]) -> Result<Vec<Vec<String>>> {
    let tx = conn.unchecked_transaction()?;
    {
        let mut insert = tx.prepare_cached("INSERT INTO t (rowid, x) VALUES (?1, ?2)")?;
        for (i, text) in texts.iter().enumerate() {
            insert.execute(rusqlite::params![i as i64, text])?;
        }
    }
    let mut words = vec![Vec::new(); texts.len()];
    let mut read = tx.prepare_cached("SELECT doc, term FROM v ORDER BY doc, offset")?;
    let mut rows = read.query([])?;
    while let Some(row) = rows.next()? {
        let doc: i64 = row.get(0)?;
        words[doc as usize].push(row.get(1)?);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_are_fts5s_own() {
        let words = fts5_words(&[
            "News of skies and skiing, before the café's X-ray",
            "",
            "Über 3.5km",
        ])
        .unwrap();
        assert_eq!(
            words[0],
            [
                "new", "of", "ski", "and", "ski", "befor", "the", "cafe", "s", "x", "rai"
            ]
        );
        assert!(words[1].is_empty());
        assert_eq!(words[2], ["uber", "3", "5km"]);
    }

    #[test]
    fn each_call_reads_only_its_own_texts() {
        assert_eq!(fts5_words(&["alpha beta"]).unwrap(), [["alpha", "beta"]]);
        assert_eq!(
            fts5_words(&["gamma", "delta"]).unwrap(),
            [["gamma"], ["delta"]]
        );
    }

    #[test]
    fn the_tokenizer_is_the_keyword_indexs() {
        let made = format!("tokenize = '{TOKENIZER}'");
        assert!(
            super::super::schema::MIGRATIONS
                .iter()
                .any(|sql| sql.contains("CREATE VIRTUAL TABLE chunks_fts") && sql.contains(&made)),
            "chunks_fts is made with {made}"
        );
    }
}
