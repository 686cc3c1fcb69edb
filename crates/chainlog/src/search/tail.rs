//! Reading a transcript for the search index: what changed since the last commit, and the
//! searchable messages of its new lines.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

use super::FileMark;
use crate::error::{Error, Result};
use crate::index::db::progress::{Counted, Tracker};
use crate::index::write::ingest::{now_ns, settled};
use crate::transcript::frame::Framer;

/// How much before the indexed length is hashed to recognise the same file.
const TAIL: u64 = 4096;

/// What a transcript needs.
pub(super) enum Plan {
    /// Nothing changed: its stat proved it (`compared: false`), or, its times not settled
    /// when it was indexed, the bytes before its indexed end (`compared: true`).
    Unchanged { compared: bool },
    /// It grew: index its lines from `from`.
    Append {
        /// The indexed length.
        from: u64,
    },
    /// Anything else: drop its documents and index it from zero.
    Reindex,
}

fn tail_hash(file: &File, len: u64) -> std::io::Result<String> {
    let start = len.saturating_sub(TAIL);
    let mut buf = vec![0; usize::try_from(len - start).unwrap_or(0)];
    file.read_exact_at(&mut buf, start)?;
    Ok(blake3::hash(&buf).to_hex().to_string())
}

/// Compares the transcript with its mark.
pub(super) fn plan(path: &Path, mark: Option<&FileMark>) -> std::io::Result<Plan> {
    let Some(mark) = mark else {
        return Ok(Plan::Reindex);
    };
    let m = std::fs::metadata(path)?;
    // The same file, length and times, and those times settled before it was read (the
    // racy-mtime rule the redb index follows): unchanged, nothing read.
    if (m.dev(), m.ino(), m.len()) == (mark.dev, mark.ino, mark.len)
        && (mtime_ns(&m), ctime_ns(&m)) == (mark.mtime_ns, mark.ctime_ns)
        && settled(mark.mtime_ns, mark.checked_at_ns)
    {
        return Ok(Plan::Unchanged { compared: false });
    }
    let file = File::open(path)?;
    let m = file.metadata()?;
    let same_stat = m.dev() == mark.dev
        && m.ino() == mark.ino
        && m.len() >= mark.len
        && (m.len() > mark.len || (mtime_ns(&m), ctime_ns(&m)) == (mark.mtime_ns, mark.ctime_ns));
    if !same_stat {
        return Ok(Plan::Reindex);
    }
    if tail_hash(&file, mark.len)? != mark.tail_hash {
        return Ok(Plan::Reindex);
    }
    Ok(if m.len() == mark.len {
        Plan::Unchanged { compared: true }
    } else {
        Plan::Append { from: mark.len }
    })
}

/// A message to index.
pub(super) struct Found {
    pub uuid: String,
    pub role: &'static str,
    pub sidechain: bool,
    pub timestamp: Option<String>,
    pub offset: u64,
    pub len: u64,
    pub text: String,
}

/// The searchable message of one line, if it has one ([`super::text`]).
fn found(bytes: &[u8], offset: u64, len: u64) -> Option<Found> {
    let m = super::text::searchable(bytes)?;
    Some(Found {
        role: m.role.as_str(),
        sidechain: m.sidechain,
        timestamp: m.timestamp,
        uuid: m.uuid,
        offset,
        len,
        text: m.text,
    })
}

/// Calls `add` for each searchable message from byte `from` to the last complete line, and
/// returns the file's new mark.
pub(super) fn read_messages(
    path: &Path,
    from: u64,
    progress: &mut Tracker,
    mut add: impl FnMut(Found) -> Result<()>,
) -> Result<FileMark> {
    let io = |e| Error::io(path, e);
    let checked_at_ns = now_ns();
    let mut file = File::open(path).map_err(io)?;
    let m = file.metadata().map_err(io)?;
    file.seek(SeekFrom::Start(from)).map_err(io)?;
    let mut failed = None;
    let reader = Counted {
        inner: (&mut file).take(m.len().saturating_sub(from)),
        tracker: progress,
    };
    let summary = Framer::resume_at(from, 0)
        .frame_reader(reader, |line| {
            if failed.is_some() {
                return;
            }
            if let Some(f) = found(line.bytes, line.pos.offset, line.pos.len)
                && let Err(e) = add(f)
            {
                failed = Some(e);
            }
        })
        .map_err(io)?;
    if let Some(e) = failed {
        return Err(e);
    }
    let len = summary.complete_len;
    Ok(FileMark {
        id: 0,
        dev: m.dev(),
        ino: m.ino(),
        mtime_ns: mtime_ns(&m),
        ctime_ns: ctime_ns(&m),
        len,
        tail_hash: tail_hash(&file, len).map_err(io)?,
        checked_at_ns,
    })
}

/// The searchable message of the line of `file` at `offset` (what a hit shows).
pub(super) fn message_at(file: &File, offset: u64, len: u64) -> Option<Found> {
    let mut buf = vec![0; usize::try_from(len).ok()?];
    file.read_exact_at(&mut buf, offset).ok()?;
    found(&buf, offset, len)
}

pub(super) fn mtime_ns(m: &std::fs::Metadata) -> i128 {
    i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec())
}

pub(super) fn ctime_ns(m: &std::fs::Metadata) -> i128 {
    i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec())
}
