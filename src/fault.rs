//! Named fault points (the `fail` crate, as TiKV uses it). The crash test
//! sets `FAILPOINTS=ingest::after_commit=2*off->return` and the process dies
//! at exactly that point on its third pass, so a kill lands where it was
//! aimed however fast the machine is. With the variable unset every point is
//! inert.

/// What a lock or a wait on its condition variable returned, carrying on
/// past poison. A panic while a lock is held poisons it; Carrel's shared
/// state survives that by construction: the library's writes are SQLite
/// transactions, caches and marks are rebuilt or re-set by their next user,
/// and gates hold no data. So a poisoned lock is used as it is, never turned
/// into a second panic. The one place that decision is made.
pub fn unpoisoned<G>(result: std::sync::LockResult<G>) -> G {
    result.unwrap_or_else(|p| p.into_inner())
}

/// Locks `m`, carrying on past poison ([`unpoisoned`]).
pub fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    unpoisoned(m.lock())
}

/// Dies as SIGKILL kills: no unwinding, no destructors, no flushing.
pub(crate) fn die() -> ! {
    #[cfg(unix)]
    // SAFETY: raise() only sends a signal to this process.
    unsafe {
        libc::raise(libc::SIGKILL);
    }
    std::process::abort()
}
