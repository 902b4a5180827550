//! Named fault points (the `fail` crate, as TiKV uses it). The crash test
//! sets `FAILPOINTS=ingest::after_commit=2*off->return` and the process dies
//! at exactly that point on its third pass, so a kill lands where it was
//! aimed however fast the machine is. With the variable unset every point is
//! inert.

/// Dies as SIGKILL kills: no unwinding, no destructors, no flushing.
pub(crate) fn die() -> ! {
    #[cfg(unix)]
    // SAFETY: raise() only sends a signal to this process.
    unsafe {
        libc::raise(libc::SIGKILL);
    }
    std::process::abort()
}
