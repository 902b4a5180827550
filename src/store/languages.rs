//! Each passage's language and its content's ([`crate::language`]), as
//! written and, for rows written before languages were detected, filled
//! in once when the library is opened.

use rusqlite::{Transaction, params};

use super::SqliteStore;
use crate::error::Result;
use crate::language::{self, Language, UNDETERMINED};

/// The share of a document's text its language must hold
/// ([`SqliteStore::settle_content_language`]).
const DOCUMENT_SHARE: f64 = 1.0 / 3.0;

/// The share of a document's text a language needs for its passages to keep
/// it as their own ([`SqliteStore::settle_content_language`]).
const SECTION_SHARE: f64 = 0.2;

/// What is stored for a passage's text, as it is written: its language's
/// code, or [`UNDETERMINED`]; settled with its document's after.
pub(crate) fn code_of(text: &str) -> &'static str {
    language::detect(text).map_or(UNDETERMINED, Language::code)
}

/// A content's language and its passages', settled from each passage's own
/// code and length (in characters): the document's is the one most of its
/// text is in, if that is at least [`DOCUMENT_SHARE`] of all of it
/// (passages that do not tell count in the whole: a table of character
/// names, two rows of it read as Welsh, is no Welsh document); else it does
/// not tell. A passage keeps a language of its own only where that language
/// holds at least [`SECTION_SHARE`] of the document's text (a document that
/// mixes languages, section by section); a stray one (a C prototype read as
/// French) and one whose text does not tell take the document's. One rule
/// for every store.
pub(crate) fn settle<'a>(passages: &[(&'a str, usize)]) -> (&'a str, Vec<&'a str>) {
    let mut shares: Vec<(&str, usize)> = Vec::new();
    for &(code, len) in passages {
        match shares.iter_mut().find(|(c, _)| *c == code) {
            Some((_, n)) => *n += len,
            None => shares.push((code, len)),
        }
    }
    shares.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let total = shares.iter().map(|(_, n)| *n).sum::<usize>() as f64;
    let told: Vec<(&str, f64)> = shares
        .iter()
        .filter(|(l, _)| *l != UNDETERMINED)
        .map(|(l, n)| (*l, *n as f64 / total))
        .collect();
    let document = told
        .first()
        .filter(|(_, share)| *share >= DOCUMENT_SHARE)
        .map_or(UNDETERMINED, |(l, _)| *l);
    let sections: Vec<&str> = told
        .iter()
        .filter(|(_, share)| *share >= SECTION_SHARE)
        .map(|(l, _)| *l)
        .collect();
    let codes = passages
        .iter()
        .map(|&(code, _)| {
            if code == document || sections.contains(&code) {
                code
            } else {
                document
            }
        })
        .collect();
    (document, codes)
}

impl SqliteStore {
    /// Settles a content's language and its passages' ([`settle`]).
    pub(crate) fn settle_content_language(tx: &Transaction<'_>, content_id: i64) -> Result<()> {
        let rows: Vec<(i64, String, i64)> = tx
            .prepare_cached(
                "SELECT id, language, length(text) FROM chunks
                 WHERE content_id = ?1 AND language IS NOT NULL",
            )?
            .query_map([content_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let passages: Vec<(&str, usize)> = rows
            .iter()
            .map(|(_, code, len)| (code.as_str(), *len as usize))
            .collect();
        let (document, codes) = settle(&passages);
        tx.execute(
            "UPDATE contents SET language = ?2 WHERE id = ?1",
            params![content_id, document],
        )?;
        let mut set = tx.prepare_cached("UPDATE chunks SET language = ?2 WHERE id = ?1")?;
        for ((id, was, _), now) in rows.iter().zip(&codes) {
            if was != now {
                set.execute(params![id, now])?;
            }
        }
        Ok(())
    }

    /// Detects the language of every passage written before this build
    /// stored one, and settles their contents'. Runs once per library: a
    /// row looked at keeps its code, or [`UNDETERMINED`].
    pub(crate) fn detect_languages(&mut self) -> Result<()> {
        let tx = self.conn.transaction()?;
        let rows: Vec<(i64, String)> = tx
            .prepare("SELECT id, text FROM chunks WHERE language IS NULL")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        if rows.is_empty() {
            return Ok(());
        }
        tracing::info!(
            passages = rows.len(),
            "detecting the language of each passage"
        );
        {
            let mut set = tx.prepare("UPDATE chunks SET language = ?2 WHERE id = ?1")?;
            for (id, text) in &rows {
                set.execute(params![id, code_of(text)])?;
            }
        }
        let contents: Vec<i64> = tx
            .prepare("SELECT id FROM contents WHERE language IS NULL")?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for id in contents {
            SqliteStore::settle_content_language(&tx, id)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// The languages the library's passages are in, most text first.
    pub fn languages(&self) -> Result<Vec<Language>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT language FROM language_totals WHERE passages > 0
             ORDER BY chars DESC, language",
        )?;
        let codes = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(codes
            .iter()
            .filter_map(|c| Language::from_code(c))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A document in Russian with an English section of its own keeps both;
    /// a stray line read as another language, and one that does not tell,
    /// are its document's.
    #[test]
    fn passages_keep_a_language_of_their_own_only_for_a_section() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = SqliteStore::open(&dir.path().join("l.sqlite3")).unwrap();
        let ru = "Пчёлы зимуют в улье плотным клубом и греются, поедая мёд; \
                  пасечник не открывает улей до весеннего облёта. ";
        let en = "Bees spend the winter in a tight cluster inside the hive, \
                  warming themselves by eating the honey they stored. ";
        let passages = [
            (ru.repeat(3), "ru"),
            (ru.repeat(3), "ru"),
            (en.repeat(2), "en"),
            ("#include <sys/socket.h>".to_string(), "fr"),
            ("1 2 3".to_string(), UNDETERMINED),
        ];
        let tx = store.conn.transaction().unwrap();
        tx.execute(
            "INSERT INTO contents (id, hash, extracted, chars) VALUES (1, 'h', '{}', 1)",
            [],
        )
        .unwrap();
        for (id, (text, language)) in passages.iter().enumerate() {
            tx.execute(
                "INSERT INTO chunks (id, content_id, seq, heading_path, section, start, end, text, language)
                 VALUES (?1, 1, ?1, '[]', 0, 0, 1, ?2, ?3)",
                params![id as i64 + 1, text, language],
            )
            .unwrap();
        }
        SqliteStore::settle_content_language(&tx, 1).unwrap();
        tx.commit().unwrap();
        let languages = |store: &SqliteStore| -> Vec<Option<&str>> {
            (1..=5)
                .map(|chunk| {
                    store
                        .passage(chunk)
                        .unwrap()
                        .unwrap()
                        .language
                        .map(|l| l.code())
                })
                .collect()
        };
        assert_eq!(
            languages(&store),
            [Some("ru"), Some("ru"), Some("en"), Some("ru"), Some("ru")]
        );
        assert_eq!(store.languages().unwrap()[0], Language::RUSSIAN);
        assert_totals_counted(&store);
        // A table whose text does not tell, two rows in twelve read as Welsh,
        // is no Welsh document, and its passages tell nothing.
        let tx = store.conn.transaction().unwrap();
        tx.execute(
            "INSERT INTO contents (id, hash, extracted, chars) VALUES (2, 'g', '{}', 1)",
            [],
        )
        .unwrap();
        for id in 10..22 {
            let language = if id < 12 { "cym" } else { UNDETERMINED };
            tx.execute(
                "INSERT INTO chunks (id, content_id, seq, heading_path, section, start, end, text, language)
                 VALUES (?1, 2, ?1, '[]', 0, 0, 1, 'U+00A9 a', ?2)",
                params![id, language],
            )
            .unwrap();
        }
        SqliteStore::settle_content_language(&tx, 2).unwrap();
        tx.commit().unwrap();
        assert_eq!(store.passage(10).unwrap().unwrap().language, None);
        let table: String = store
            .conn
            .query_row("SELECT language FROM contents WHERE id = 2", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(table, UNDETERMINED);
        // Rows from before languages were stored are looked at once.
        store
            .conn
            .execute("UPDATE chunks SET language = NULL", [])
            .unwrap();
        store
            .conn
            .execute("UPDATE contents SET language = NULL", [])
            .unwrap();
        assert_eq!(store.languages().unwrap(), []);
        assert_totals_counted(&store);
        store.detect_languages().unwrap();
        assert_eq!(
            languages(&store),
            [Some("ru"), Some("ru"), Some("en"), Some("ru"), Some("ru")]
        );
        assert_totals_counted(&store);
        store
            .conn
            .execute("DELETE FROM chunks WHERE content_id = 1", [])
            .unwrap();
        assert_totals_counted(&store);
    }

    /// The totals the triggers keep are those counted from the passages.
    fn assert_totals_counted(store: &SqliteStore) {
        let read = |sql: &str| -> String {
            store
                .conn
                .query_row(sql, [], |r| r.get::<_, Option<String>>(0))
                .unwrap()
                .unwrap_or_default()
        };
        assert_eq!(
            read(
                "SELECT group_concat(language || ' ' || passages || ' ' || chars, ', ')
                 FROM (SELECT * FROM language_totals WHERE passages > 0 ORDER BY language)"
            ),
            read(
                "SELECT group_concat(language || ' ' || n || ' ' || c, ', ') FROM (
                    SELECT language, COUNT(*) AS n, SUM(length(text)) AS c FROM chunks
                    WHERE language IS NOT NULL GROUP BY language ORDER BY language)"
            )
        );
    }
}
