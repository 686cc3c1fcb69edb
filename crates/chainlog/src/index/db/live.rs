//! Whether a chainlog process has a sidecar open read-write, trusted.
//!
//! # Context
//! A sidecar is read on the read-only fast path only when it is exactly as chainlog last
//! verified or wrote it (the `<db>.verified` marker: [`crate::index::db::open::is_verified`]). A read-write
//! open rewrites redb's header, so while any chainlog process holds the sidecar open read-write
//! the marker is stale. Without more, every reader then took the read-write path, and a writer
//! stopped with SIGSTOP inside its write transaction made each of them wait ([`crate::index::db::wait`])
//! before answering from the transcript, even for a session whose index is current.
//!
//! # Design
//! Every [`crate::index::db::open::IndexDb`] holds a shared `flock` on `<db>.live` from the moment the file
//! is trusted (its marker matched, or every page checksum was checked) until it has closed the
//! database and written the marker. A sidecar whose `<db>.live` is locked is therefore being
//! changed by chainlog itself, from a trusted state, and may be read through a read-only
//! handle, which reads the last committed snapshot beside live writers and never takes the
//! writer lock. (A read-write open still requires the marker or a page check:
//! [`crate::index::db::open::IndexDb::open`].)
//! A writer killed with SIGKILL loses its lock with the process, so the sidecar is no longer
//! trusted and the next read-write open repairs and checks it. A stopped writer keeps it.

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};

/// A shared lock on `<db>.live`, held while this process has the sidecar open read-write.
#[derive(Debug)]
pub struct Live {
    _file: File,
}

fn live_path(db: &Path) -> PathBuf {
    let mut name = db.file_name().unwrap_or_default().to_os_string();
    name.push(".live");
    db.with_file_name(name)
}

/// Takes a shared lock on `<db>.live` (created 0600), or `None` when the file cannot be made
/// or is not a regular file: readers then simply do not trust the sidecar while it is open.
/// The wait is bounded ([`crate::index::db::wait`]): a reader holds the exclusive lock only for a probe.
pub fn enter(db: &Path) -> Option<Live> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(live_path(db))
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    crate::index::db::wait::waiting(|| file.lock_shared()).ok()?;
    Some(Live { _file: file })
}

/// Whether a chainlog process holds the sidecar at `db` open read-write ([`enter`]): a probe
/// that never waits.
pub fn held(db: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(file) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(live_path(db))
    else {
        return false;
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    // Free (the probe got it, released with `file`) or unusable: not held.
    matches!(file.try_lock(), Err(TryLockError::WouldBlock))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_while_entered() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("x.redb");
        assert!(!held(&db));
        let live = enter(&db).unwrap();
        let second = enter(&db).unwrap();
        assert!(held(&db));
        drop(live);
        assert!(held(&db), "another holder remains");
        drop(second);
        assert!(!held(&db));
    }
}
