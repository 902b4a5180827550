//! Foreign sources kept in the library (schema v12), one JSON record per
//! source, so what was declared, discovered and acknowledged (with who and
//! when) travels with the library it is asked beside.

use rusqlite::OptionalExtension;

use super::{LastUse, Source};
use crate::error::{Error, Result};
use crate::store::Store;

fn parse(name: &str, json: &str) -> Result<Source> {
    serde_json::from_str(json).map_err(|e| Error::Corrupt(format!("foreign source {name}: {e}")))
}

/// Every source, by name.
pub fn list(store: &Store) -> Result<Vec<Source>> {
    let mut stmt = store
        .conn
        .prepare_cached("SELECT name, source FROM foreign_sources ORDER BY name")?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    rows.iter().map(|(n, j)| parse(n, j)).collect()
}

/// The source called `name`, if there is one.
pub fn get(store: &Store, name: &str) -> Result<Option<Source>> {
    let json: Option<String> = store
        .conn
        .query_row(
            "SELECT source FROM foreign_sources WHERE name = ?1",
            [name],
            |r| r.get(0),
        )
        .optional()?;
    json.map(|j| parse(name, &j)).transpose()
}

/// Saves `source` under its name, replacing what was there.
pub fn put(store: &Store, source: &Source) -> Result<()> {
    let json = serde_json::to_string(source)
        .map_err(|e| Error::Corrupt(format!("foreign source {}: {e}", source.name)))?;
    store.conn.execute(
        "INSERT INTO foreign_sources (name, source) VALUES (?1, ?2)
         ON CONFLICT (name) DO UPDATE SET source = excluded.source",
        rusqlite::params![source.name, json],
    )?;
    Ok(())
}

/// Forgets the source called `name`; whether there was one.
pub fn remove(store: &Store, name: &str) -> Result<bool> {
    Ok(store
        .conn
        .execute("DELETE FROM foreign_sources WHERE name = ?1", [name])?
        > 0)
}

/// Records what retrieval last did with the source called `name`.
pub fn record_use(store: &Store, name: &str, last: LastUse) -> Result<()> {
    if let Some(mut source) = get(store, name)? {
        source.last_used = Some(last);
        put(store, &source)?;
    }
    Ok(())
}
