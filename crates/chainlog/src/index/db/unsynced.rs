//! The sidecar's storage: redb's own file backend, without `fsync`.
//!
//! # Why
//! The index is a cache of the transcripts. redb in multi-writer mode makes every commit
//! durable (it refuses `Durability::None`), and an open, a catch-up's commit and the close's
//! allocator-state commit and header cost 8 `fdatasync` calls: on a busy shared disk about
//! 30–40 ms for a one-message catch-up whose own work takes well under a millisecond.
//!
//! Skipping the syncs changes nothing a process crash can do: the writes are in the page cache,
//! which every process sees in the order they were made, so redb's commit protocol holds as
//! before (the kill -9 tests). What it changes is a crash of the machine: pages may then reach
//! the disk out of order. That is why the verified marker beside each sidecar records the boot
//! it was written in ([`boot_id`]): after a reboot no marker matches, every sidecar's page
//! checksums are checked at its first open, and a torn one is rebuilt from the transcripts.
//! Where the boot cannot be told (no `/proc/sys/kernel/random/boot_id`), chainlog keeps redb's
//! durable backend.

use std::ops::Bound;
use std::sync::OnceLock;

use redb::backends::FileBackend;
use redb::{BackendError, StorageBackend};

/// redb's file backend with `sync_data` a no-op; everything else (reads, writes, the
/// multi-process byte-range locks) is redb's.
#[derive(Debug)]
pub struct Unsynced(pub FileBackend);

impl StorageBackend for Unsynced {
    fn len(&self) -> std::io::Result<u64> {
        self.0.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> std::io::Result<()> {
        self.0.read(offset, out)
    }

    fn set_len(&self, len: u64) -> std::io::Result<()> {
        self.0.set_len(len)
    }

    fn sync_data(&self) -> std::io::Result<()> {
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> std::io::Result<()> {
        self.0.write(offset, data)
    }

    fn close(&self) -> std::io::Result<()> {
        self.0.close()
    }

    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.0.try_lock_range(start, end)
    }

    fn try_lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, BackendError> {
        self.0.try_lock_shared_range(start, end)
    }

    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.0.lock_range(start, end)
    }

    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.0.lock_shared_range(start, end)
    }

    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.0.unlock_range(start, end)
    }

    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.0.query_lock_range(start, end)
    }
}

/// The running kernel's boot id (Linux), read once; `None` where it cannot be told, and then
/// sidecars are written durably.
pub fn boot_id() -> Option<&'static str> {
    static ID: OnceLock<Option<String>> = OnceLock::new();
    ID.get_or_init(|| {
        let raw = crate::transcript::folder::read_small_file(
            std::path::Path::new("/proc/sys/kernel/random/boot_id"),
            64,
        )?;
        let id = String::from_utf8(raw).ok()?.trim().to_owned();
        (!id.is_empty()).then_some(id)
    })
    .as_deref()
}

#[cfg(test)]
mod tests {
    use crate::index::db::open::{IndexDb, is_verified};

    #[test]
    fn a_marker_from_another_boot_does_not_verify() {
        let Some(boot) = super::boot_id() else {
            eprintln!("no boot id on this system: sidecars are written durably, nothing to test");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("p.redb");
        drop(IndexDb::open(&db).unwrap());
        assert!(is_verified(&db), "a sidecar closed in this boot verifies");
        let marker = dir.path().join("p.redb.verified");
        let text = std::fs::read_to_string(&marker).unwrap();
        assert!(
            text.starts_with(boot),
            "the marker records the boot: {text}"
        );
        let other = text.replacen(boot, "00000000-0000-0000-0000-000000000000", 1);
        std::fs::write(&marker, other).unwrap();
        assert!(
            !is_verified(&db),
            "after a reboot the pages may be torn: they must be checked"
        );
    }
}
