//! What a PostgreSQL library keeps besides documents, as the SQLite store
//! keeps it: its identity and read tokens, its embedder, the app's chat,
//! the retrieval log, foreign sources; its languages and vocabulary; and
//! what `carrel doctor` and the caches read of the server.

use std::collections::HashSet;

use super::PgStore;
use super::words::{Within, phrase, phrases};
use crate::error::{Error, Result};
use crate::kb::{Identity, Kb, ReadToken, TokenDigest, TokenInfo};
use crate::language::Language;
use crate::models::EmbedderKind;
use crate::score::Scored;
use crate::store::fts5_words::fts5_words;
use crate::store::keywords::{Vocabulary, match_terms, phrase_words, unsegmented};
use crate::store::{LogEntry, Retention, StoredTurn, now};

impl PgStore {
    /// What this library says about itself.
    pub fn identity(&self) -> Result<Identity> {
        let r = self
            .row(
                "SELECT kb, title, owner, description FROM identity WHERE id = 1",
                &[],
            )?
            .ok_or_else(|| Error::Corrupt("the library has no identity row".into()))?;
        let kb = Kb::parse(r.get(0))
            .map_err(|e| Error::Corrupt(format!("the library's stored name: {e}")))?;
        Ok(Identity {
            kb,
            title: r.get(1),
            owner: r.get(2),
            description: r.get(3),
        })
    }

    /// Replaces what this library says about itself.
    pub fn set_identity(&self, identity: &Identity) -> Result<()> {
        self.execute(
            "UPDATE identity SET kb = $1, title = $2, owner = $3, description = $4 WHERE id = 1",
            &[
                &identity.kb.as_str(),
                &identity.title,
                &identity.owner,
                &identity.description,
            ],
        )
        .map(|_| ())
    }

    /// Keeps a new read token's digest under `label`.
    pub fn add_read_token(&self, token: &ReadToken, label: &str) -> Result<TokenInfo> {
        let created = now();
        let id: i64 = self.one(
            "INSERT INTO read_tokens (sha256, label, created) VALUES ($1, $2, $3) RETURNING id",
            &[&token.digest().0, &label, &created],
        )?;
        Ok(TokenInfo {
            id,
            label: label.to_string(),
            created,
        })
    }

    /// The read tokens, oldest first (never their secrets).
    pub fn read_tokens(&self) -> Result<Vec<TokenInfo>> {
        Ok(self
            .rows(
                "SELECT id, label, created FROM read_tokens ORDER BY id",
                &[],
            )?
            .iter()
            .map(|r| TokenInfo {
                id: r.get(0),
                label: r.get(1),
                created: r.get(2),
            })
            .collect())
    }

    /// Whether a token with this digest opens this library.
    pub fn grants(&self, digest: &TokenDigest) -> Result<bool> {
        Ok(self
            .row("SELECT 1 FROM read_tokens WHERE sha256 = $1", &[&digest.0])?
            .is_some())
    }

    /// Revokes token `id`; false when there was none.
    pub fn revoke_read_token(&self, id: i64) -> Result<bool> {
        Ok(self.execute("DELETE FROM read_tokens WHERE id = $1", &[&id])? > 0)
    }

    /// The embedder this library was made with; the default for a library
    /// that never chose one.
    pub fn embedder(&self) -> Result<EmbedderKind> {
        let name: Option<String> = self
            .row("SELECT value FROM carrel_meta WHERE key = 'embedder'", &[])?
            .map(|r| r.get(0));
        crate::store::identity::stored_embedder(name)
    }

    /// Records the embedder this library's vectors are to be made with.
    pub fn set_embedder(&self, kind: EmbedderKind) -> Result<()> {
        self.execute(
            "INSERT INTO carrel_meta (key, value) VALUES ('embedder', $1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[&kind.name()],
        )
        .map(|_| ())
    }

    pub fn add_turn(
        &self,
        message: &str,
        answer: Option<&str>,
        error: Option<&str>,
    ) -> Result<i64> {
        self.one(
            "INSERT INTO chat_turns (asked_at, message, answer, error, written_by)
             VALUES ($1, $2, $3, $4, $5) RETURNING id",
            &[&now(), &message, &answer, &error, &self.writer],
        )
    }

    /// The newest `limit` turns, oldest first.
    pub fn turns(&self, limit: usize) -> Result<Vec<StoredTurn>> {
        Ok(self
            .rows(
                "SELECT id, asked_at, message, answer, error FROM
                   (SELECT * FROM chat_turns ORDER BY id DESC LIMIT $1) AS newest
                 ORDER BY id",
                &[&(limit as i64)],
            )?
            .iter()
            .map(|r| StoredTurn {
                id: r.get(0),
                asked_at: r.get(1),
                message: r.get(2),
                answer: r.get(3),
                error: r.get(4),
            })
            .collect())
    }

    /// Deletes every turn; returns how many there were.
    pub fn clear_turns(&self) -> Result<usize> {
        Ok(self.execute("DELETE FROM chat_turns", &[])? as usize)
    }

    /// Appends `rows` in one statement (one round trip, however many). A
    /// read replica keeps no log (its primary's is the library's): nothing
    /// is written there.
    pub fn append_log(&self, rows: &[LogEntry]) -> Result<()> {
        if self.replica || rows.is_empty() {
            return Ok(());
        }
        let column = |f: fn(&LogEntry) -> String| rows.iter().map(f).collect::<Vec<String>>();
        let at: Vec<i64> = rows.iter().map(|r| r.at).collect();
        let doc: Vec<i64> = rows.iter().map(|r| r.doc).collect();
        let score: Vec<f64> = rows.iter().map(|r| r.score.get() as f64).collect();
        let flags = |f: fn(&LogEntry) -> bool| rows.iter().map(f).collect::<Vec<bool>>();
        let unjudged: Vec<Option<String>> = rows.iter().map(|r| r.unjudged.clone()).collect();
        self.execute(
            "INSERT INTO retrieval_log (at, query, lane, doc, score, scale, scorer, calibrated,
                admitted, decision, unjudged)
             SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[],
                $5::float8[], $6::text[], $7::text[], $8::bool[], $9::bool[], $10::text[],
                $11::text[])",
            &[
                &at,
                &column(|r| r.query.clone()),
                &column(|r| r.lane.clone()),
                &doc,
                &score,
                &column(|r| r.score.scale().to_string()),
                &column(|r| r.scorer.clone()),
                &flags(|r| r.calibrated),
                &flags(|r| r.admitted),
                &column(|r| r.decision.clone()),
                &unjudged,
            ],
        )
        .map(|_| ())
    }

    /// Drops rows past `keep`; how many: SQLite's statements (`store/log.rs`).
    pub fn prune_log(&self, keep: Retention, now: i64) -> Result<usize> {
        if self.replica {
            return Ok(0);
        }
        let by_count = self.execute(
            "DELETE FROM retrieval_log WHERE id <= (SELECT max(id) FROM retrieval_log) - $1",
            &[&(keep.max_rows as i64)],
        )?;
        let by_age = self.execute(
            "DELETE FROM retrieval_log WHERE id IN
               (SELECT id FROM retrieval_log
                WHERE id < coalesce((SELECT id FROM retrieval_log WHERE at >= $1 ORDER BY id LIMIT 1),
                                    9223372036854775807)
                ORDER BY id LIMIT 10000)",
            &[&(now - keep.max_age_s)],
        )?;
        Ok((by_count + by_age) as usize)
    }

    /// The newest `limit` entries, newest first.
    pub fn read_log(&self, limit: usize) -> Result<Vec<LogEntry>> {
        self.rows(
            "SELECT at, query, lane, doc, score, scale, scorer, calibrated, admitted, decision, unjudged
             FROM retrieval_log ORDER BY id DESC LIMIT $1",
            &[&(limit as i64)],
        )?
        .iter()
        .map(|r| {
            let scale: String = r.get(5);
            let score = Scored::from_parts(&scale, r.get::<_, f64>(4))
                .ok_or_else(|| Error::Corrupt(format!("the retrieval log: unknown scale {scale}")))?;
            Ok(LogEntry {
                at: r.get(0),
                query: r.get(1),
                lane: r.get(2),
                doc: r.get(3),
                score,
                scorer: r.get(6),
                calibrated: r.get(7),
                admitted: r.get(8),
                decision: r.get(9),
                unjudged: r.get(10),
            })
        })
        .collect()
    }

    /// Every foreign source's (name, JSON record), by name.
    pub fn foreign_source_records(&self) -> Result<Vec<(String, String)>> {
        Ok(self
            .rows(
                "SELECT name, source FROM foreign_sources ORDER BY name",
                &[],
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect())
    }

    /// The JSON record of the source called `name`, if there is one.
    pub fn foreign_source_record(&self, name: &str) -> Result<Option<String>> {
        Ok(self
            .row(
                "SELECT source FROM foreign_sources WHERE name = $1",
                &[&name],
            )?
            .map(|r| r.get(0)))
    }

    /// Saves `record` under `name`, replacing what was there.
    pub fn put_foreign_source_record(&self, name: &str, record: &str) -> Result<()> {
        self.execute(
            "INSERT INTO foreign_sources (name, source) VALUES ($1, $2)
             ON CONFLICT (name) DO UPDATE SET source = excluded.source",
            &[&name, &record],
        )
        .map(|_| ())
    }

    /// Forgets the source called `name`; whether there was one.
    pub fn remove_foreign_source_record(&self, name: &str) -> Result<bool> {
        Ok(self.execute("DELETE FROM foreign_sources WHERE name = $1", &[&name])? > 0)
    }

    /// The languages the library's passages are in, most text first.
    pub fn languages(&self) -> Result<Vec<Language>> {
        Ok(self
            .rows(
                "SELECT language FROM language_totals
                 GROUP BY language HAVING sum(passages) > 0 ORDER BY sum(chars) DESC, language",
                &[],
            )?
            .iter()
            .filter_map(|r| Language::from_code(r.get(0)))
            .collect())
    }

    /// The query's content words (those its keyword search reads) that no
    /// passage of the library uses, in any inflection the index stems alike;
    /// runs of scripts written without spaces are not counted (as on SQLite).
    pub fn vocabulary(&self, text: &str) -> Result<Vocabulary> {
        let terms: Vec<String> = match_terms(text)
            .iter()
            .map(|t| t.trim_matches('"').to_string())
            .filter(|t| !t.chars().any(unsegmented))
            .collect();
        let asked: Vec<&str> = terms.iter().map(String::as_str).collect();
        // A term with no token is used; the others are looked up by their
        // tokens, as one phrase each.
        let (looked, tokens): (Vec<String>, Vec<Vec<String>>) = terms
            .iter()
            .zip(fts5_words(&asked)?)
            .filter(|(_, tokens)| !tokens.is_empty())
            .map(|(term, tokens)| (term.clone(), tokens))
            .unzip();
        let found = self.used(&tokens)?;
        let unused = looked
            .into_iter()
            .zip(found)
            .filter(|(_, used)| !used)
            .map(|(term, _)| term)
            .collect();
        Ok(Vocabulary {
            words: terms.len(),
            unused,
        })
    }

    /// Whether any passage holds each list of words as a phrase, in one
    /// read-only transaction. How to look depends on the words. A phrase
    /// whose every word is in the planner's statistics of `words` (ANALYZE's
    /// sample of the most common) is left to the planner: it knows them
    /// common, and a scan finds one at once where the words' index would
    /// read all of their passages first (0.3-0.8 s a question at three
    /// million passages). Any other word the planner takes to be in half as
    /// many passages as the least common it knows, so it scans for the
    /// first match, and for a word in no passage that scan read all three
    /// million (4.4 s, against 0.05 ms through the index): those are looked
    /// up through the index alone. Each phrase is its own parameter, so the
    /// server plans each lookup knowing its words.
    fn used(&self, phrases: &[Vec<String>]) -> Result<Vec<bool>> {
        if phrases.is_empty() {
            return Ok(Vec::new());
        }
        let mut client = self.client();
        let run = |client: &mut postgres::Client| -> std::result::Result<_, postgres::Error> {
            let mut tx = client.transaction()?;
            let known = sampled_words(&mut tx, phrases)?;
            let (common, rare): (Vec<usize>, Vec<usize>) =
                (0..phrases.len()).partition(|&i| phrases[i].iter().all(|w| known.contains(w)));
            let mut found = vec![false; phrases.len()];
            any_holding(&mut tx, phrases, &common, &mut found)?;
            if !rare.is_empty() {
                tx.batch_execute(
                    "SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off",
                )?;
                any_holding(&mut tx, phrases, &rare, &mut found)?;
            }
            tx.commit()?;
            Ok(found)
        };
        run(&mut client).map_err(|e| self.failed(e))
    }

    /// Up to `k` passages holding `line`'s words as one phrase, in order.
    pub fn phrase_chunks(&self, line: &str, k: usize) -> Result<Vec<i64>> {
        let line = phrase_words(line).join(" ");
        let Some(q) = phrases(&[&line], Within::Text)?.remove(0) else {
            return Ok(Vec::new());
        };
        Ok(self
            .rows(
                "SELECT id FROM chunks WHERE words @@ $1::text::tsquery LIMIT $2",
                &[&q, &(k as i64)],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }

    /// Moves whenever a committed change to the library's documents,
    /// passages or cards becomes visible to this reader (the rows the
    /// tables' triggers add, summed), never before.
    pub fn data_version(&self) -> Result<i64> {
        self.one(
            "SELECT coalesce(sum(n), 0)::bigint FROM carrel_changes",
            &[],
        )
    }

    /// pgvector's version on the server, for `carrel doctor`.
    pub fn vec_version(&self) -> Result<String> {
        self.one(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'",
            &[],
        )
    }

    /// "ok" once the server answers: PostgreSQL checks its own pages (WAL,
    /// checksums), where SQLite's file is checked by `integrity_check`.
    pub fn integrity_check(&self) -> Result<String> {
        self.one::<String>("SHOW server_version", &[])?;
        Ok("ok".to_string())
    }

    /// The server holding the library, with its version, for `doctor`.
    pub fn held_by(&self) -> Result<Option<String>> {
        let version: String = self.one("SHOW server_version", &[])?;
        let replica = if self.replica { ", a read replica" } else { "" };
        Ok(Some(format!(
            "PostgreSQL {version} at {}{replica}",
            self.server
        )))
    }
}

/// Those of the phrases' words that the planner's statistics of `words`
/// hold (as [`super::candidates`]' BM25 reads them); none in a library
/// never analysed.
fn sampled_words(
    tx: &mut postgres::Transaction<'_>,
    phrases: &[Vec<String>],
) -> std::result::Result<HashSet<String>, postgres::Error> {
    let words: Vec<&str> = phrases.iter().flatten().map(String::as_str).collect();
    Ok(tx
        .query(
            "SELECT e.lexeme FROM pg_stats s, unnest(s.most_common_elems::text::text[]) AS e(lexeme)
             WHERE s.schemaname = current_schema() AND s.tablename = 'chunks' AND s.attname = 'words'
               AND e.lexeme = ANY($1::text[])",
            &[&words],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect())
}

/// Sets `found[i]` for each phrase `i` of `which` that a passage holds, in
/// one statement (a phrase of no words is held by none).
fn any_holding(
    tx: &mut postgres::Transaction<'_>,
    phrases: &[Vec<String>],
    which: &[usize],
    found: &mut [bool],
) -> std::result::Result<(), postgres::Error> {
    let (asked, queries): (Vec<usize>, Vec<String>) = which
        .iter()
        .filter_map(|&i| Some((i, phrase(&phrases[i], Within::Passage)?)))
        .unzip();
    if queries.is_empty() {
        return Ok(());
    }
    let sql = (1..=queries.len())
        .map(|i| format!("EXISTS (SELECT 1 FROM chunks WHERE words @@ ${i}::text::tsquery)"))
        .collect::<Vec<_>>()
        .join(", ");
    let params: Vec<&(dyn postgres::types::ToSql + Sync)> = queries
        .iter()
        .map(|q| q as &(dyn postgres::types::ToSql + Sync))
        .collect();
    let row = tx.query_one(&format!("SELECT {sql}"), &params)?;
    for (n, &i) in asked.iter().enumerate() {
        found[i] = row.get(n);
    }
    Ok(())
}
