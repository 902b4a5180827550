//! Each passage's language and its content's ([`crate::language`]), as
//! written and, for rows written before languages were detected, filled
//! in once when the library is opened.

use rusqlite::{OptionalExtension, Transaction, params};

use super::Store;
use crate::error::Result;
use crate::language::{self, Language, UNDETERMINED};

/// What is stored for a passage's text: its language's code, or
/// [`UNDETERMINED`].
pub(crate) fn code_of(text: &str) -> &'static str {
    language::detect(text).map_or(UNDETERMINED, Language::code)
}

impl Store {
    /// Sets a content's language to the one most of its passages' text is
    /// in (by characters); undetermined when none of them tells.
    pub(crate) fn settle_content_language(tx: &Transaction<'_>, content_id: i64) -> Result<()> {
        tx.execute(
            "UPDATE contents SET language = COALESCE(
                 (SELECT language FROM chunks
                  WHERE content_id = ?1 AND language IS NOT NULL AND language != ?2
                  GROUP BY language ORDER BY SUM(length(text)) DESC, language LIMIT 1),
                 ?2)
             WHERE id = ?1",
            params![content_id, UNDETERMINED],
        )?;
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
        tracing::info!(passages = rows.len(), "detecting the language of each passage");
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
            Store::settle_content_language(&tx, id)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// The languages the library's passages are in, most text first.
    pub fn languages(&self) -> Result<Vec<Language>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT language FROM chunks WHERE language IS NOT NULL
             GROUP BY language ORDER BY SUM(length(text)) DESC",
        )?;
        let codes = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(codes.iter().filter_map(|c| Language::from_code(c)).collect())
    }

    /// A passage's language, none when its text does not tell.
    pub fn chunk_language(&self, chunk: i64) -> Result<Option<Language>> {
        let code: Option<Option<String>> = self
            .conn
            .prepare_cached("SELECT language FROM chunks WHERE id = ?1")?
            .query_row([chunk], |r| r.get(0))
            .optional()?;
        Ok(code.flatten().as_deref().and_then(Language::from_code))
    }
}
