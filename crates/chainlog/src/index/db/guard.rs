//! redb reads of pages nobody checked: a panic of redb on a damaged page becomes a typed fault.
//!
//! # Context
//! A sidecar whose `.verified` marker matches is read without redb's full page check (skipping
//! it is what the marker is for). Damage that no stat sees — bit rot: same inode, length and
//! times — then reaches ordinary reads, and redb 4.6.0 does not verify page checksums on them.
//! Some of them panic on a damaged page instead of returning `StorageError::Corrupted`
//! (measured with `tests/it/index_damage.rs`, zeroed 4 KiB pages): `unreachable!()` when a page's
//! type byte is neither leaf nor branch (`Btree::get_helper`, `tree_store/btree.rs:1110`, for
//! `get`; `descend_to_position`, `tree_store/btree_cursor.rs:167`, for `range` and for stepping
//! to the next leaf), a slice index past the page in `AccessGuard::value`
//! (`tree_store/btree_base.rs:283`), and `unwrap`s and slice indexes reading a table's stored
//! definition in `open_table` (`tree_store/table_tree_base.rs:441`, `TypeName::from_bytes` in
//! `types.rs:109`).
//!
//! # Design
//! [`read`] runs one redb read under `catch_unwind` ([`isolate`]): one `get` with the
//! `value()` of its guard, one `open_table`, or one range scan with its iteration and the
//! `value()`s of its entries — redb code only, never chainlog's decoding or logic. A panic there
//! is [`IndexFault::Damaged`] naming the table; the caller starts the sidecar over
//! ([`crate::index::db::open::IndexDb::start_over`]) and answers again. A panic anywhere else is a bug
//! and is not caught.

use crate::error::{Fault, IndexFault};

/// Runs `call`, one redb read of `table`; a panic of redb is damage of that table.
pub fn read<T, E: Into<redb::Error>>(
    table: &'static str,
    call: impl FnOnce() -> Result<T, E>,
) -> Fault<T> {
    match isolate(call) {
        Some(Ok(v)) => Ok(v),
        Some(Err(e)) => Err(IndexFault::Storage(e.into())),
        None => Err(IndexFault::damaged(
            table,
            "redb panicked reading a damaged page",
        )),
    }
}

/// Runs one redb call that reads a sidecar's pages before chainlog could check them. redb 4.6.0
/// panics on some damaged pages instead of returning `StorageError::Corrupted` (an
/// `unreachable!()` in `Btree::get_helper`, `tree_store/btree.rs:1110`, when a page's type byte
/// is neither leaf nor branch; a database open reads the allocator state and system tables
/// that way). Only these calls (open, read-only open, `check_integrity`, the reads of [`read`])
/// are isolated: a panic there is damage, answered by a rebuild. A panic anywhere else is a
/// bug and is not caught.
///
/// The library installs no panic hook (the process's hook belongs to the program): a program
/// that wants the messages of these caught panics kept off its stderr checks
/// [`isolating`] in its own hook, as the `chainlog` command does.
pub(crate) fn isolate<T>(f: impl FnOnce() -> T) -> Option<T> {
    let before = QUIET.with(|q| q.replace(true));
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok();
    QUIET.with(|q| q.set(before));
    out
}

thread_local! {
    /// Set while an [`isolate`]d redb call runs on this thread.
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the calling thread is inside a redb call whose panic chainlog catches and answers
/// as damage: a panic hook can stay silent for these (they are not bugs, the index is rebuilt).
pub fn isolating() -> bool {
    QUIET.with(std::cell::Cell::get)
}
