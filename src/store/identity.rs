//! The library's identity row (schema v9): its slug, title, owner and
//! description, kept in the library file itself ([`crate::kb`]); and who
//! may read it through `carrel serve`, as read-token digests (schema v10).

use rusqlite::params;

use super::SqliteStore;
use crate::error::{Error, Result};
use crate::kb::{Identity, Kb, ReadToken, TokenDigest, TokenInfo};
use crate::models::EmbedderKind;

impl SqliteStore {
    /// What this library says about itself.
    pub fn identity(&self) -> Result<Identity> {
        let (kb, title, owner, description): (String, String, Option<String>, String) =
            self.conn.query_row(
                "SELECT kb, title, owner, description FROM identity WHERE id = 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )?;
        let kb = Kb::parse(&kb)
            .map_err(|e| Error::Corrupt(format!("the library's stored name: {e}")))?;
        Ok(Identity {
            kb,
            title,
            owner,
            description,
        })
    }

    /// Replaces what this library says about itself.
    pub fn set_identity(&self, identity: &Identity) -> Result<()> {
        self.conn.execute(
            "UPDATE identity SET kb = ?1, title = ?2, owner = ?3, description = ?4 WHERE id = 1",
            params![
                identity.kb.as_str(),
                identity.title,
                identity.owner,
                identity.description
            ],
        )?;
        Ok(())
    }

    /// Keeps a new read token's digest under `label`.
    pub fn add_read_token(&self, token: &ReadToken, label: &str) -> Result<TokenInfo> {
        let created = super::now();
        self.conn.execute(
            "INSERT INTO read_tokens (sha256, label, created) VALUES (?1, ?2, ?3)",
            params![token.digest().0, label, created],
        )?;
        Ok(TokenInfo {
            id: self.conn.last_insert_rowid(),
            label: label.to_string(),
            created,
        })
    }

    /// The read tokens, oldest first (never their secrets).
    pub fn read_tokens(&self) -> Result<Vec<TokenInfo>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, label, created FROM read_tokens ORDER BY id")?;
        let rows = stmt.query_map([], |r| {
            Ok(TokenInfo {
                id: r.get(0)?,
                label: r.get(1)?,
                created: r.get(2)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Whether a token with this digest opens this library.
    pub fn grants(&self, digest: &TokenDigest) -> Result<bool> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT 1 FROM read_tokens WHERE sha256 = ?1")?;
        Ok(stmt.exists([&digest.0])?)
    }

    /// Revokes token `id`; false when there was none.
    pub fn revoke_read_token(&self, id: i64) -> Result<bool> {
        Ok(self
            .conn
            .execute("DELETE FROM read_tokens WHERE id = ?1", [id])?
            > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_library_is_default_with_no_owner_until_it_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l.sqlite3");
        let store = SqliteStore::open(&p).unwrap();
        let id = store.identity().unwrap();
        assert_eq!(id.kb.as_str(), crate::kb::DEFAULT_KB);
        assert_eq!(id.owner, None);
        let named = Identity {
            kb: Kb::parse("research").unwrap(),
            title: "Research notes".into(),
            owner: Some("Ada <ada@example.org>".into()),
            description: "Papers read in 2026".into(),
        };
        store.set_identity(&named).unwrap();
        drop(store);
        assert_eq!(SqliteStore::open(&p).unwrap().identity().unwrap(), named);
    }

    #[test]
    fn a_read_token_opens_its_library_until_revoked_and_its_secret_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l.sqlite3");
        let store = SqliteStore::open(&p).unwrap();
        let token = ReadToken::generate().unwrap();
        let info = store.add_read_token(&token, "ada's laptop").unwrap();
        assert!(store.grants(&token.digest()).unwrap());
        assert!(
            !store
                .grants(&ReadToken::generate().unwrap().digest())
                .unwrap()
        );
        assert_eq!(store.read_tokens().unwrap(), vec![info.clone()]);
        drop(store);
        let bytes = std::fs::read(&p).unwrap();
        let secret = token.secret().as_bytes();
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret),
            "the secret is in the file"
        );
        let store = SqliteStore::open(&p).unwrap();
        assert!(store.revoke_read_token(info.id).unwrap());
        assert!(!store.revoke_read_token(info.id).unwrap());
        assert!(!store.grants(&token.digest()).unwrap());
    }
}

impl SqliteStore {
    /// The embedder this library was made with; the default for a library
    /// that never chose one.
    pub fn embedder(&self) -> Result<EmbedderKind> {
        use rusqlite::OptionalExtension;
        let name: Option<String> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key = 'embedder'", [], |r| {
                r.get(0)
            })
            .optional()?;
        stored_embedder(name)
    }

    /// Records the embedder this library's vectors are to be made with.
    pub fn set_embedder(&self, kind: EmbedderKind) -> Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('embedder', ?1)",
            params![kind.name()],
        )?;
        Ok(())
    }
}

/// The embedder a library records (its name; none: the default), in either
/// store; a name this build does not know is a sentence, never a guess.
pub(crate) fn stored_embedder(name: Option<String>) -> Result<EmbedderKind> {
    match name {
        None => Ok(EmbedderKind::default()),
        Some(name) => EmbedderKind::parse(&name).ok_or_else(|| {
            Error::Corrupt(format!(
                "the library is embedded with {name}, which this version of Carrel does not know (it knows {})",
                EmbedderKind::ALL.map(EmbedderKind::name).join(", ")
            ))
        }),
    }
}
