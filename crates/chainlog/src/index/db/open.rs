//! Opening a project's index database.
//!
//! # Design
//! redb 4.6 offers `ConcurrencyMode::MultiWriter`: any number of processes may hold the
//! database open read-write at once, with one write transaction at a time (others block
//! briefly in `begin_write`). Every chainlog process opens in that mode, so a `resume` and an
//! `index` running together both succeed. An open that still fails (a foreign process holding
//! the file exclusively, a lock-protocol mismatch) is retried with bounded backoff; the caller
//! then answers from the transcript instead (slow but right).
//!
//! A database that redb cannot open (truncated, corrupted) or that carries another
//! [`INDEX_SCHEMA_VERSION`] is disposable: it is deleted or emptied and rebuilt.

use std::path::{Path, PathBuf};
use std::time::Duration;

use redb::{ConcurrencyMode, Database, DatabaseError, ReadableDatabase, ReadableTable};

use crate::error::{Error, IndexFault, Result};
use crate::index::db::guard::{self, isolate};
use crate::index::db::unsynced;
use crate::index::format::schema::{self, INDEX_SCHEMA_VERSION, META};

/// Attempts before giving up on a busy database; backoff doubles from 2 ms (≈ 1 s in all).
const OPEN_ATTEMPTS: u32 = 9;

/// An open project index.
pub struct IndexDb {
    /// The database file.
    pub path: PathBuf,
    /// The redb handle (taken at drop to close the file before the verified marker is written).
    handle: Option<Database>,
    /// This process's share of `<db>.live` ([`crate::index::db::live`]), taken once the file is trusted and
    /// released after the marker is written.
    live: Option<crate::index::db::live::Live>,
    /// The open created the file: its only commits are this handle's (the tables' creation,
    /// then what the caller writes).
    pub created: bool,
}

fn index_error(path: &Path, e: impl Into<IndexFault>) -> Error {
    Error::Index {
        path: path.to_path_buf(),
        source: e.into(),
    }
}

/// redb's page cache per open sidecar. redb's default (1 GiB) lets one write transaction hold
/// every page it dirtied in memory (half the cache), so a first index of a large transcript
/// grew with the sidecar (a 1 GiB transcript peaked at 203 MiB, 70 MiB of it dirty pages).
/// Past half of this, dirty pages are written out; a query reads a few pages, a catch-up a few
/// more, a listing one range. Building a 1 GiB transcript's index took as long with 16 MiB as
/// with 1 GiB.
pub(crate) const CACHE_BYTES: usize = 16 << 20;

fn builder() -> redb::Builder {
    let mut b = Database::builder();
    b.set_concurrency_mode(ConcurrencyMode::MultiWriter);
    b.set_cache_size(CACHE_BYTES);
    b
}

impl IndexDb {
    /// Opens (creating if needed) the index at `path`, rebuilding it if it is damaged or
    /// from another schema version.
    pub fn open(path: &Path) -> Result<IndexDb> {
        if let Some(dir) = path.parent() {
            create_private_dir(dir).map_err(|e| index_error(dir, e))?;
        }
        // Read before redb's read-write open, which rewrites the header (and so the file's
        // modification time): read after it, the marker would never match. Another chainlog
        // process having the file open ([`crate::index::db::live`]) is not enough here: a writer commits
        // through redb's allocator state, which panics on damaged pages instead of failing.
        let verified = is_verified(path);
        let mut fresh = create_private_file(path).map_err(|e| index_error(path, e))?;
        let mut delay = Duration::from_millis(2);
        let mut attempt = 0;
        let db = loop {
            attempt += 1;
            match create_isolated(path) {
                Ok(db) => break db,
                Err(DatabaseError::DatabaseAlreadyOpen | DatabaseError::LockProtocolMismatch)
                    if attempt < OPEN_ATTEMPTS =>
                {
                    std::thread::sleep(delay);
                    delay *= 2;
                }
                Err(DatabaseError::DatabaseAlreadyOpen | DatabaseError::LockProtocolMismatch) => {
                    let waited = delay.saturating_sub(Duration::from_millis(2));
                    return Err(index_error(path, IndexFault::Busy { waited }));
                }
                Err(e) if attempt < OPEN_ATTEMPTS => {
                    // Damaged or foreign: the index is a cache, start over.
                    let _ = e;
                    std::fs::remove_file(path).map_err(|e| index_error(path, e))?;
                    fresh = create_private_file(path).map_err(|e| index_error(path, e))?;
                }
                Err(e) => return Err(index_error(path, e)),
            }
        };
        let mut idx = IndexDb {
            path: path.to_path_buf(),
            handle: Some(db),
            live: None,
            created: fresh,
        };
        // A file created empty by this open has no pages to check. A version that does not
        // read may be a damaged page the marker could not see: check before emptying tables
        // (redb walks a table's pages to delete it).
        let current = || idx.begin_read().is_ok_and(|txn| is_current(&txn));
        if !fresh && (!verified || !current()) {
            // Pages changed since chainlog last verified or wrote them: check every checksum.
            let ok = matches!(isolate(|| idx.db_mut().check_integrity()), Some(Ok(true)));
            if !ok {
                drop(idx.handle.take());
                std::fs::remove_file(path).map_err(|e| index_error(path, e))?;
                create_private_file(path).map_err(|e| index_error(path, e))?;
                let db = create_isolated(path).map_err(|e| index_error(path, e))?;
                idx.handle = Some(db);
            }
        }
        // Trusted from here on: readers may use the read-only path while this handle is open.
        idx.live = crate::index::db::live::enter(path);
        idx.check_schema()?;
        Ok(idx)
    }

    /// The redb handle.
    pub fn db(&self) -> &Database {
        self.handle.as_ref().expect("open until dropped")
    }

    /// The redb handle, for maintenance (`compact`, `check_integrity`).
    pub fn db_mut(&mut self) -> &mut Database {
        self.handle.as_mut().expect("open until dropped")
    }

    /// Empties the database unless it is of the current layout ([`is_current`]).
    fn check_schema(&self) -> Result<()> {
        if self.begin_read().is_ok_and(|txn| is_current(&txn)) {
            return Ok(());
        }
        self.wipe()
    }

    /// Starts the database over after a damaged entry was found in it: the marker is removed,
    /// so the reopen checks every page and recreates a file whose pages are damaged (bit rot
    /// the marker could not see), then every table is emptied.
    pub fn start_over(&mut self) -> Result<()> {
        // The close commits redb's allocator state, which may sit on a damaged page.
        let handle = self.handle.take();
        let _ = isolate(move || drop(handle));
        drop(self.live.take());
        let _ = std::fs::remove_file(marker_path(&self.path));
        let fresh = IndexDb::open(&self.path)?;
        fresh.wipe()?;
        *self = fresh;
        Ok(())
    }

    /// Replaces the database by a new empty file (a rebuild of a sidecar's only transcript).
    /// Another process that has the old file open keeps writing to it, unseen: index
    /// progress is lost, never an answer changed (the new file holds only what this process
    /// commits, and its marker is written at close as for any sidecar).
    pub fn recreate(&mut self) -> Result<()> {
        // The close commits redb's allocator state: isolated as in `start_over`.
        let handle = self.handle.take();
        let _ = isolate(move || drop(handle));
        drop(self.live.take());
        let _ = std::fs::remove_file(marker_path(&self.path));
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(index_error(&self.path, e));
            }
            _ => {}
        }
        *self = IndexDb::open(&self.path)?;
        Ok(())
    }

    /// Drops every table and writes the schema version.
    pub fn wipe(&self) -> Result<()> {
        let err = |e: redb::Error| index_error(&self.path, e);
        let txn = self.begin_write().map_err(|e| err(e.into()))?;
        {
            let tables: Vec<redb::UntypedTableHandle> =
                txn.list_tables().map_err(|e| err(e.into()))?.collect();
            for handle in tables {
                txn.delete_table(handle).map_err(|e| err(e.into()))?;
            }
            schema::create_all(&txn).map_err(|e| err(e.into()))?;
            let mut meta = txn.open_table(META).map_err(|e| err(e.into()))?;
            meta.insert("schema", INDEX_SCHEMA_VERSION.to_le_bytes().as_slice())
                .map_err(|e| err(e.into()))?;
            meta.insert("next_file", 0u32.to_le_bytes().as_slice())
                .map_err(|e| err(e.into()))?;
        }
        txn.commit().map_err(|e| err(e.into()))?;
        Ok(())
    }

    /// Begins a write transaction (a bounded wait: [`crate::index::db::wait`]).
    pub fn begin_write(
        &self,
    ) -> std::result::Result<redb::WriteTransaction, redb::TransactionError> {
        crate::index::db::wait::waiting(|| self.db().begin_write())
    }

    /// Begins a read transaction (a bounded wait: [`crate::index::db::wait`]).
    pub fn begin_read(&self) -> std::result::Result<redb::ReadTransaction, redb::TransactionError> {
        crate::index::db::wait::waiting(|| self.db().begin_read())
    }

    /// Gives freed pages back (best effort; a bounded wait: [`crate::index::db::wait`]). redb panics on
    /// some damaged pages ([`crate::index::db::guard`]), and a compaction reads them all: one that panics
    /// starts the file over (its handle is dropped in isolation too: the close commits).
    pub fn compact(&mut self) {
        let done = isolate(|| {
            let _ = crate::index::db::wait::waiting(|| self.db_mut().compact());
        });
        if done.is_none() {
            let _ = self.start_over();
        }
    }

    /// Wraps a redb error (or another fault) with this index's path.
    pub fn err(&self, e: impl Into<IndexFault>) -> Error {
        index_error(&self.path, e)
    }
}

/// Opens an existing index for reading only (no header write, no fsync, never the writer lock),
/// when it is trusted ([`is_trusted`]) and carries [`INDEX_SCHEMA_VERSION`]. `None` when it is
/// missing, busy, damaged or of another version: the caller then takes the read-write path,
/// which repairs.
pub fn open_read_only(path: &Path) -> Option<redb::ReadOnlyDatabase> {
    if !is_trusted(path) {
        return None;
    }
    let db =
        isolate(|| crate::index::db::wait::waiting(|| builder().open_read_only(path)))?.ok()?;
    is_current(&crate::index::db::wait::waiting(|| db.begin_read()).ok()?).then_some(db)
}

/// Whether a database is of the current layout: it records [`INDEX_SCHEMA_VERSION`] and has
/// every table of [`schema::TABLES`]. A sidecar of the right version without a table (written
/// by a build whose layout changed without a new version, or damaged) is rebuilt instead of
/// answered around: a missing table would only surface as an error of the first read of it.
fn is_current(txn: &redb::ReadTransaction) -> bool {
    if schema_version(txn) != Some(INDEX_SCHEMA_VERSION) {
        return false;
    }
    let Ok(tables) = guard::read("tables", || {
        txn.list_tables().map(|t| {
            t.map(|h| redb::TableHandle::name(&h).to_owned())
                .collect::<std::collections::HashSet<String>>()
        })
    }) else {
        return false;
    };
    schema::TABLES.iter().all(|t| tables.contains(*t))
}

/// The schema version a database records (`None`: missing, unreadable or damaged).
fn schema_version(txn: &redb::ReadTransaction) -> Option<u32> {
    let table = guard::read("meta", || txn.open_table(META)).ok()?;
    let v = guard::read("meta", || {
        Ok::<_, redb::StorageError>(table.get("schema")?.map(|v| v.value().to_vec()))
    })
    .ok()??;
    Some(u32::from_le_bytes(v.try_into().ok()?))
}

impl Drop for IndexDb {
    fn drop(&mut self) {
        // Close first (the close writes the header), then record the file as it is now: its
        // pages were either verified at open or written by this process's commits. A handle
        // already closed ([`IndexDb::start_over`]) records nothing.
        if let Some(db) = self.handle.take() {
            drop(db);
            if !std::thread::panicking() {
                mark_verified(&self.path);
            }
        }
        // Only now: until the marker is written, the lock is what makes the file trusted.
        drop(self.live.take());
    }
}

/// The marker beside a sidecar: identity, length and modification time of the database file
/// when chainlog last verified its page checksums or closed it after writing.
fn marker_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".verified");
    path.with_file_name(name)
}

/// The database file's identity, length, modification and status-change times, and the boot
/// they were seen in, as the marker records them; `None` unless it is a regular file. The
/// status-change time (ctime) cannot be set back by a user: a write followed by `touch -r`
/// still changes it. The boot id makes a reboot invalidate every marker: sidecars are written
/// without fsync ([`crate::index::db::unsynced`]), so a machine crash may have torn one.
fn file_version(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path)
        .ok()
        .filter(std::fs::Metadata::is_file)?;
    Some(format!(
        "{} {} {} {} {} {}",
        unsynced::boot_id().unwrap_or("-"),
        m.dev(),
        m.ino(),
        m.len(),
        i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
        i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec())
    ))
}

/// The longest marker chainlog writes (a boot id, five decimal numbers, separators), with room.
const MARKER_MAX: u64 = 256;

/// Whether the database file is exactly as chainlog last verified or wrote it. A file changed
/// behind chainlog's back (a flipped bit, a copy, a truncation) fails this and is checked page by
/// page before it is trusted.
pub fn is_verified(path: &Path) -> bool {
    match (
        file_version(path),
        crate::transcript::folder::read_small_file(&marker_path(path), MARKER_MAX),
    ) {
        (Some(now), Some(mark)) => now.as_bytes() == mark.as_slice(),
        _ => false,
    }
}

/// Whether the database file may be read (read-only) without checking its pages: it is as
/// chainlog last verified or wrote it ([`is_verified`]), or a chainlog process that trusted it
/// has it open read-write now ([`crate::index::db::live`]; the marker is stale while it is open).
pub fn is_trusted(path: &Path) -> bool {
    is_verified(path) || crate::index::db::live::held(path)
}

fn mark_verified(path: &Path) {
    use std::io::Write;
    let Some(v) = file_version(path) else { return };
    let marker = marker_path(path);
    let tmp = marker.with_extension(format!("tmp{}", std::process::id()));
    let written = private_options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .and_then(|mut f| f.write_all(v.as_bytes()));
    if written.is_ok() {
        let _ = std::fs::rename(&tmp, &marker);
    } else {
        // A full disk: leave nothing behind.
        let _ = std::fs::remove_file(&tmp);
    }
}

/// `Database::create` in multi-writer mode: a bounded wait, and a panic on a damaged file
/// turned into a corruption error ([`isolate`]).
///
/// Without fsync ([`crate::index::db::unsynced`]) when the boot can be told, so that a machine crash
/// invalidates every marker.
fn create_isolated(path: &Path) -> std::result::Result<Database, DatabaseError> {
    let create = || {
        if unsynced::boot_id().is_none() {
            return builder().create(path);
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        builder().create_with_backend(unsynced::Unsynced(redb::backends::FileBackend::new(file)?))
    };
    isolate(|| crate::index::db::wait::waiting(create)).unwrap_or_else(|| {
        Err(DatabaseError::Storage(redb::StorageError::Corrupted(
            "redb panicked reading the damaged file".into(),
        )))
    })
}

/// Options that create files readable by their owner only: a sidecar holds prompt text from
/// transcripts that Claude Code keeps private (0600 files in 0700 folders).
fn private_options() -> std::fs::OpenOptions {
    use std::os::unix::fs::OpenOptionsExt;
    let mut o = std::fs::OpenOptions::new();
    o.mode(0o600);
    o
}

/// Creates the sidecar file empty with mode 0600 if it does not exist (redb then initialises
/// it); whether it was created. An existing path that is not a regular file is refused
/// (a directory, a FIFO): the location is unusable, and the caller answers from the transcript.
fn create_private_file(path: &Path) -> std::io::Result<bool> {
    match private_options().write(true).create_new(true).open(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let m = std::fs::metadata(path)?;
            if m.is_file() {
                Ok(m.len() == 0)
            } else {
                Err(std::io::Error::other(
                    "the index path is not a regular file",
                ))
            }
        }
        Err(e) => Err(e),
    }
}

/// Creates the sidecar folder (and missing parents) with mode 0700.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Allocates a new file id inside a write transaction.
pub fn next_file_id(txn: &redb::WriteTransaction) -> std::result::Result<u32, redb::Error> {
    let mut meta = txn.open_table(schema::META)?;
    let id = meta
        .get("next_file")?
        .and_then(|v| <[u8; 4]>::try_from(v.value()).ok())
        .map_or(0, u32::from_le_bytes);
    meta.insert("next_file", (id + 1).to_le_bytes().as_slice())?;
    Ok(id)
}
