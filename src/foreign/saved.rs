//! Foreign sources kept in the library (schema v12), one JSON record per
//! source, so what was declared, discovered and acknowledged (with who and
//! when) travels with the library it is asked beside.

use super::{LastUse, Source};
use crate::error::{Error, Result};
use crate::store::Store;

fn parse(name: &str, json: &str) -> Result<Source> {
    serde_json::from_str(json).map_err(|e| Error::Corrupt(format!("foreign source {name}: {e}")))
}

/// Every source, by name.
pub fn list(store: &Store) -> Result<Vec<Source>> {
    store
        .foreign_source_records()?
        .iter()
        .map(|(n, j)| parse(n, j))
        .collect()
}

/// The source called `name`, if there is one.
pub fn get(store: &Store, name: &str) -> Result<Option<Source>> {
    store
        .foreign_source_record(name)?
        .map(|j| parse(name, &j))
        .transpose()
}

/// Saves `source` under its name, replacing what was there.
pub fn put(store: &Store, source: &Source) -> Result<()> {
    let json = serde_json::to_string(source)
        .map_err(|e| Error::Corrupt(format!("foreign source {}: {e}", source.name)))?;
    store.put_foreign_source_record(&source.name, &json)
}

/// Forgets the source called `name`; whether there was one.
pub fn remove(store: &Store, name: &str) -> Result<bool> {
    store.remove_foreign_source_record(name)
}

/// Records what retrieval last did with the source called `name`.
pub fn record_use(store: &Store, name: &str, last: LastUse) -> Result<()> {
    if let Some(mut source) = get(store, name)? {
        source.last_used = Some(last);
        put(store, &source)?;
    }
    Ok(())
}
