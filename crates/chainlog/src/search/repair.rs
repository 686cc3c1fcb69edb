//! Damage to a search index: found before tantivy reads it where a stat can tell, caught where
//! it reads it, and answered by starting the index over.
//!
//! # Context
//! tantivy trusts its files. Damaged ones make it return an error on every run (a truncated
//! `.store`, a deleted segment file), or panic (a `.fast` file cut to under 8 bytes: an
//! overflow in `FileSlice::slice_from_end`); and a panic on one of the threads of its segment
//! updater's rayon pool, which reads the old segments to apply deletes and to merge, aborts the
//! process. Every segment file ends with a footer holding a CRC32 of the file, which tantivy
//! only checks when asked to.
//!
//! # Design
//! - **A clean mark** (`chainlog-clean.json` in the index folder) lists the stat (inode, length,
//!   modification and status-change times) of `meta.json`, `.managed.json` and every file of
//!   the committed segments. It is written after each commit of ours (once merges are done),
//!   and after a [`check`] found nothing; it is removed before a writer opens. An index whose
//!   mark is missing, unreadable or does not match its files (not closed by us, or changed
//!   since) is [`check`]ed before any read: every segment file of `meta.json` must exist and
//!   its footer's checksum must match. A stat does not see bit rot: that damage is found when
//!   a read fails.
//! - **Every tantivy call is guarded** ([`guarded`]): a panic is caught (its message not
//!   printed, [`crate::index::db::guard::isolate`]) and, like any tantivy error, is a [`Fault::Index`].
//!   The caller then starts the index over and asks again, in the same call.
//! - **Starting over** holds tantivy's writer lock: a process writing the index is busy, not
//!   damage. Under the lock the index is checked again (a fault can be another process's commit
//!   seen half-way; its files are then sound), and deleted and created empty only if damaged or
//!   when asked to (`force`).

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tantivy::Index;
use tantivy::index::SegmentComponent;

use crate::error::Error;

/// The clean mark's file name.
const CLEAN: &str = "chainlog-clean.json";

/// The files of a segment besides its deletes, one per extension of tantivy's built-in plugins
/// (inverted index, fast fields, store).
const SEGMENT_FILES: [&str; 6] = ["idx", "pos", "term", "fieldnorm", "fast", "store"];

/// Why a search index call failed.
#[derive(Debug)]
pub(super) enum Fault {
    /// The index: a tantivy error or panic (damage until a check says otherwise).
    Index(String),
    /// Anything else (a transcript unreadable, the index locked by another writer): the
    /// caller's error, as it is.
    Other(Error),
}

impl From<Error> for Fault {
    fn from(e: Error) -> Self {
        Fault::Other(e)
    }
}

impl From<tantivy::TantivyError> for Fault {
    fn from(e: tantivy::TantivyError) -> Self {
        Fault::Index(e.to_string())
    }
}

/// The error of the search index folder `dir`.
pub(super) fn error(dir: &Path, e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Error {
    Error::Index {
        path: dir.to_path_buf(),
        source: crate::error::IndexFault::Search(e.into()),
    }
}

/// Runs `f`, tantivy calls on this thread; a panic is [`Fault::Index`], its message unprinted.
pub(super) fn guarded<T>(f: impl FnOnce() -> Result<T, Fault>) -> Result<T, Fault> {
    crate::index::db::guard::isolate(f).unwrap_or_else(|| {
        Err(Fault::Index(
            "tantivy panicked reading a damaged file".into(),
        ))
    })
}

/// What a file looked like.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Stat {
    ino: u64,
    len: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

fn stat(path: &Path) -> Option<Stat> {
    let m = std::fs::symlink_metadata(path).ok()?;
    m.is_file().then(|| Stat {
        ino: m.ino(),
        len: m.len(),
        mtime_ns: super::tail::mtime_ns(&m),
        ctime_ns: super::tail::ctime_ns(&m),
    })
}

/// The files of the committed segments (with their deletes).
fn segment_files(index: &Index) -> Result<Vec<PathBuf>, Fault> {
    let metas = index.load_metas()?;
    let mut out = Vec::new();
    for seg in &metas.segments {
        let id = seg.id().uuid_string();
        let exts = SEGMENT_FILES
            .iter()
            .copied()
            .chain(metas.persisted_custom_extensions.iter().map(String::as_str));
        out.extend(exts.map(|ext| PathBuf::from(format!("{id}.{ext}"))));
        if seg.delete_opstamp().is_some() {
            out.push(seg.relative_path(SegmentComponent::Delete));
        }
    }
    Ok(out)
}

/// Whether the clean mark of `dir` matches its files.
pub(super) fn is_clean(dir: &Path) -> bool {
    let Ok(text) = std::fs::read(dir.join(CLEAN)) else {
        return false;
    };
    let Ok(mark) = serde_json::from_slice::<BTreeMap<String, Stat>>(&text) else {
        return false;
    };
    mark.contains_key("meta.json")
        && mark
            .iter()
            .all(|(name, s)| stat(&dir.join(name)).as_ref() == Some(s))
}

/// Marks the index in `dir` clean as its files are now (best effort: without a mark, the next
/// open checks the index).
pub(super) fn mark_clean(dir: &Path, index: &Index) -> Result<(), Fault> {
    let mut mark = BTreeMap::new();
    let names = ["meta.json", ".managed.json"].map(PathBuf::from);
    for name in names.into_iter().chain(segment_files(index)?) {
        if let Some(s) = stat(&dir.join(&name)) {
            mark.insert(name.to_string_lossy().into_owned(), s);
        }
    }
    let tmp = dir.join(format!("{CLEAN}.{}.tmp", std::process::id()));
    let text = serde_json::to_vec(&mark).unwrap_or_default();
    if std::fs::write(&tmp, text).is_err() || std::fs::rename(&tmp, dir.join(CLEAN)).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    Ok(())
}

/// Removes the clean mark of `dir` (a writer is about to change the index).
pub(super) fn unmark(dir: &Path) -> Result<(), Fault> {
    match std::fs::remove_file(dir.join(CLEAN)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(Fault::Other(Error::io(dir.join(CLEAN), e)))
        }
        _ => Ok(()),
    }
}

/// Checks every file of the committed segments: it exists and its checksum matches.
pub(super) fn check(index: &Index) -> Result<(), Fault> {
    for path in segment_files(index)? {
        match index.directory().validate_checksum(&path) {
            Ok(true) => {}
            Ok(false) => {
                return Err(Fault::Index(format!(
                    "{}: checksum mismatch",
                    path.display()
                )));
            }
            Err(e) => return Err(Fault::Index(format!("{}: {e}", path.display()))),
        }
    }
    Ok(())
}

/// Holds tantivy's writer lock of the index in `dir` (released when dropped); another writer
/// holding it for longer than [`super::WRITER_WAIT`] is [`Fault::Other`]. Waited for as
/// `ProjectIndex::writer` waits: a child process another thread forks holds the lock's file
/// until it runs its program (CI saw a start-over refused so, once).
pub(super) fn writer_lock(dir: &Path) -> Result<std::fs::File, Fault> {
    let path = dir.join(".tantivy-writer.lock");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    let started = std::time::Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < super::WRITER_WAIT => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(Fault::Other(error(
                    dir,
                    "damaged, and being written by another process: try again",
                )));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(Fault::Other(Error::io(&path, e))),
        }
    }
}

/// Deletes the index folder `dir` and creates it again, empty.
pub(super) fn wipe(dir: &Path) -> Result<(), Error> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(Error::io(dir, e)),
        _ => {}
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))
}
