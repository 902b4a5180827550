//! The watch list kept in the library. Syncing a watch is [`crate::watch`]'s.

use super::Library;
use crate::error::Result;
use crate::store;

impl Library {
    pub fn watches(&self) -> Result<Vec<store::Watch>> {
        self.store.watches()
    }

    /// Adds a watch (or finds the one on the same target): `(id, created)`.
    pub fn add_watch(&mut self, w: &store::NewWatch) -> Result<(i64, bool)> {
        self.store.add_watch(w)
    }

    /// Stops watching; the documents stay.
    pub fn remove_watch(&mut self, id: i64) -> Result<()> {
        self.store.remove_watch(id)
    }
}
