//! The library's identity row (schema v9): its slug, title, owner and
//! description, kept in the library file itself ([`crate::kb`]).

use rusqlite::params;

use super::Store;
use crate::error::{Error, Result};
use crate::kb::{Identity, Kb};

impl Store {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_library_is_default_with_no_owner_until_it_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l.sqlite3");
        let store = Store::open(&p).unwrap();
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
        assert_eq!(Store::open(&p).unwrap().identity().unwrap(), named);
    }
}
