//! A batch of lines appended to a transcript as one unit, through a journal beside it.
//!
//! # The rule (README "Writing", ARCHITECTURE "writer/")
//! A chainlog writer never appends a batch straight from memory. It first writes the whole
//! batch to a journal, `.<transcript name>.chainlog-batch` in the transcript's folder (mode
//! 0600), closed by a trailer that records where the transcript ended when the batch began,
//! the batch's length and its XXH3 hash; only then does it append the batch to the transcript
//! (in writes that end on line boundaries, so a line another process appends meanwhile never
//! lands inside one of ours) and remove the journal.
//!
//! A writer killed at any point therefore leaves one of:
//! - no journal, or one without a valid trailer: the transcript was not touched (the journal is
//!   complete before the first transcript byte is written); the journal is removed;
//! - a valid journal: the batch may be partly in the transcript. The next chainlog writer of
//!   that transcript, or the next reader that resumes it ([`settle_path`]), **completes** it
//!   under the writers' lock: when the transcript ends with a prefix of the batch, the rest is
//!   appended (the torn last line is completed byte for byte); when other bytes follow (Claude
//!   Code appended after the torn batch), every line of the batch not in the transcript since
//!   the batch began is appended after a `\n`. Then the journal is removed.
//!
//! So a batch is visible to `resume` and to the next `append` either not at all (the writer
//! died before its first transcript byte: the journal is just removed) or whole, and no byte
//! chainlog did not write is ever truncated or rewritten. A batch that was already complete
//! is not written again.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use xxhash_rust::xxh3::{Xxh3, xxh3_64};

use super::folder::Folder;
use crate::error::{Error, Result};

/// A batch up to this size is held in memory; a larger one goes to its journal as it is made.
pub const IN_MEMORY: usize = 8 << 20;

/// The bytes of one write to a transcript (more when a single line is longer).
const WRITE_CHUNK: usize = 8 << 20;

/// The journal's name for transcript file `name`.
pub fn journal_name(name: &str) -> String {
    format!(".{name}.chainlog-batch")
}

/// The trailer closing a complete journal.
#[derive(Debug, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
struct Trailer {
    /// The transcript's length when the batch began.
    start: u64,
    /// The batch's length (the journal's bytes before the trailer).
    len: u64,
    /// XXH3-64 of those bytes.
    xxh3: u64,
}

/// A batch being made for one transcript (see the module docs).
pub struct Batch {
    journal: String,
    start: u64,
    mem: Vec<u8>,
    spill: Option<BufWriter<File>>,
    len: u64,
    hash: Xxh3,
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch")
            .field("journal", &self.journal)
            .field("start", &self.start)
            .field("len", &self.len)
            .field("spilled", &self.spill.is_some())
            .finish_non_exhaustive()
    }
}

impl Batch {
    /// A batch for the transcript named `name`, which is `start` bytes long now.
    pub fn new(name: &str, start: u64) -> Batch {
        Batch {
            journal: journal_name(name),
            start,
            mem: Vec::new(),
            spill: None,
            len: 0,
            hash: Xxh3::new(),
        }
    }

    /// Nothing in the batch.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds `bytes` (whole lines, each ending in `\n`, or the fence `\n`).
    #[allow(
        clippy::single_match_else,
        reason = "two states, each with its own work"
    )]
    pub fn push(&mut self, folder: &Folder, bytes: &[u8]) -> Result<()> {
        self.hash.update(bytes);
        self.len += bytes.len() as u64;
        match &mut self.spill {
            Some(w) => w
                .write_all(bytes)
                .map_err(|e| Error::io(folder.join(&self.journal), e)),
            None => {
                self.mem.extend_from_slice(bytes);
                if self.mem.len() > IN_MEMORY {
                    let mut w = BufWriter::with_capacity(1 << 20, self.create_journal(folder)?);
                    w.write_all(&self.mem)
                        .map_err(|e| Error::io(folder.join(&self.journal), e))?;
                    self.mem = Vec::new();
                    self.spill = Some(w);
                }
                Ok(())
            }
        }
    }

    fn create_journal(&self, folder: &Folder) -> Result<File> {
        // A journal left here was settled under the lock this writer holds: a stale one is
        // one a reader could not settle, and this batch's journal replaces it only after
        // [`settle`] ran, which it did before the batch began.
        folder.remove(&self.journal)?;
        folder
            .create_new(&self.journal, 0o600)?
            .ok_or_else(|| Error::Refused {
                path: folder.join(&self.journal),
                reason: "the journal's name is taken".into(),
            })
    }

    /// Drops the batch: nothing reaches the transcript, the journal is removed.
    pub fn abort(self, folder: &Folder) {
        if self.spill.is_some() {
            let _ = folder.remove(&self.journal);
        }
    }

    /// Writes the journal, then the batch to `transcript` (opened for appending, the writers'
    /// lock held), then removes the journal. Returns the bytes appended.
    #[allow(
        clippy::single_match_else,
        reason = "two states, each with its own work"
    )]
    pub fn commit(self, folder: &Folder, transcript: &mut File, fsync: bool) -> Result<u64> {
        if self.len == 0 {
            return Ok(0);
        }
        let jpath = folder.join(&self.journal);
        let io = |e| Error::io(&jpath, e);
        let trailer = Trailer {
            start: self.start,
            len: self.len,
            xxh3: self.hash.digest(),
        };
        let mut trailer = serde_json::to_vec(&trailer).expect("a trailer serialises");
        trailer.push(b'\n');
        let (journal, in_memory) = match self.spill {
            Some(mut w) => {
                w.write_all(&trailer).map_err(io)?;
                (w.into_inner().map_err(|e| io(e.into_error()))?, None)
            }
            None => {
                let mut f = self.create_journal(folder)?;
                f.write_all(&self.mem).map_err(io)?;
                f.write_all(&trailer).map_err(io)?;
                (f, Some(self.mem))
            }
        };
        if fsync {
            journal.sync_data().map_err(io)?;
            folder.sync()?;
        }
        let tpath = folder.path();
        match in_memory {
            // One write: the batch fits one chunk.
            Some(bytes) => transcript
                .write_all(&bytes)
                .map_err(|e| Error::io(tpath, e))?,
            None => copy_lines(&journal, &jpath, 0, self.len, transcript)?,
        }
        if fsync {
            transcript.sync_data().map_err(|e| Error::io(tpath, e))?;
        }
        folder.remove(&self.journal)?;
        Ok(self.len)
    }
}

/// Appends `src[from..to)` to `dst` in writes that each end on a line boundary of `src` (one
/// write per [`WRITE_CHUNK`], longer for a longer line).
fn copy_lines(src: &File, src_path: &Path, from: u64, to: u64, dst: &mut File) -> Result<()> {
    let mut buf: Vec<u8> = Vec::new();
    let mut at = from;
    while at < to {
        let want = usize::try_from(to - at)
            .unwrap_or(usize::MAX)
            .min(WRITE_CHUNK);
        let old = buf.len();
        buf.resize(old + want, 0);
        src.read_exact_at(&mut buf[old..], at)
            .map_err(|e| Error::io(src_path, e))?;
        at += want as u64;
        let cut = if at == to {
            buf.len()
        } else {
            match memchr::memrchr(b'\n', &buf) {
                Some(i) => i + 1,
                // One line longer than a chunk: read on until it ends.
                None => continue,
            }
        };
        dst.write_all(&buf[..cut])
            .map_err(|e| Error::io(src_path, e))?;
        buf.drain(..cut);
    }
    Ok(())
}

/// Reads the journal's trailer; `None` when the journal is not complete and intact.
fn read_trailer(journal: &File, path: &Path) -> Result<Option<Trailer>> {
    let jlen = journal.metadata().map_err(|e| Error::io(path, e))?.len();
    let tail_len = jlen.min(512);
    let mut tail = vec![0u8; tail_len as usize];
    journal
        .read_exact_at(&mut tail, jlen - tail_len)
        .map_err(|e| Error::io(path, e))?;
    let Some(body) = tail.strip_suffix(b"\n") else {
        return Ok(None);
    };
    let line = match memchr::memrchr(b'\n', body) {
        Some(i) => &body[i + 1..],
        None if tail_len == jlen => body,
        None => return Ok(None),
    };
    let Ok(t) = serde_json::from_slice::<Trailer>(line) else {
        return Ok(None);
    };
    if t.len + line.len() as u64 + 1 != jlen {
        return Ok(None);
    }
    let mut hash = Xxh3::new();
    for_chunks(journal, path, 0, t.len, |b| {
        hash.update(b);
        Ok(())
    })?;
    Ok((hash.digest() == t.xxh3).then_some(t))
}

/// Calls `f` with `file[from..to)` in chunks of at most 1 MiB.
fn for_chunks(
    file: &File,
    path: &Path,
    from: u64,
    to: u64,
    mut f: impl FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    let mut buf = vec![0u8; 1 << 20];
    let mut at = from;
    while at < to {
        let n = usize::try_from(to - at)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        file.read_exact_at(&mut buf[..n], at)
            .map_err(|e| Error::io(path, e))?;
        f(&buf[..n])?;
        at += n as u64;
    }
    Ok(())
}

/// Calls `f` with each complete line (its `\n` included) of `file[from..to)`; returns the
/// offset after the last complete line.
fn for_lines(
    file: &File,
    path: &Path,
    from: u64,
    to: u64,
    mut f: impl FnMut(&[u8]) -> Result<()>,
) -> Result<u64> {
    let mut carry: Vec<u8> = Vec::new();
    let mut end = from;
    for_chunks(file, path, from, to, |chunk| {
        let mut rest = chunk;
        while let Some(i) = memchr::memchr(b'\n', rest) {
            let n = if carry.is_empty() {
                f(&rest[..=i])?;
                i + 1
            } else {
                carry.extend_from_slice(&rest[..=i]);
                f(&carry)?;
                let n = carry.len();
                carry.clear();
                n
            };
            end += n as u64;
            rest = &rest[i + 1..];
        }
        carry.extend_from_slice(rest);
        Ok(())
    })?;
    Ok(end)
}

/// What [`settle`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// No journal.
    Nothing,
    /// A journal without a valid trailer (the writer died before touching the transcript):
    /// removed.
    Dropped,
    /// The batch was already whole in the transcript: the journal removed.
    Complete,
    /// The batch was completed: this many bytes appended.
    Completed(u64),
}

/// Completes or drops the batch a killed writer left for the transcript `name` in `folder`,
/// opened for appending with the writers' lock held (see the module docs).
pub fn settle(folder: &Folder, name: &str, transcript: &mut File, fsync: bool) -> Result<Settled> {
    let jname = journal_name(name);
    let jpath = folder.join(&jname);
    let Some(journal) = folder.open_read(&jname)? else {
        return Ok(Settled::Nothing);
    };
    let Some(t) = read_trailer(&journal, &jpath)? else {
        folder.remove(&jname)?;
        return Ok(Settled::Dropped);
    };
    let tpath = folder.join(name);
    let len = transcript
        .metadata()
        .map_err(|e| Error::io(&tpath, e))?
        .len();
    // How much of the batch the transcript holds where the batch began.
    let shared = if len >= t.start {
        let n = (len - t.start).min(t.len);
        let mut theirs = vec![0u8; 1 << 20];
        let mut at = 0u64;
        let mut same = true;
        for_chunks(&journal, &jpath, 0, n, |ours| {
            if same {
                let got = &mut theirs[..ours.len()];
                transcript
                    .read_exact_at(got, t.start + at)
                    .map_err(|e| Error::io(&tpath, e))?;
                same = got == ours;
                at += ours.len() as u64;
            }
            Ok(())
        })?;
        same.then_some(n)
    } else {
        None
    };
    let appended = match shared {
        Some(n) if n == t.len => 0,
        // The transcript ends with a prefix of the batch: append the rest.
        Some(n) if t.start + n == len => {
            copy_lines(&journal, &jpath, n, t.len, transcript)?;
            t.len - n
        }
        // Other bytes came after the batch began: append each line of it not there.
        _ => append_missing(
            &journal,
            &jpath,
            t.len,
            transcript,
            &tpath,
            t.start.min(len),
            len,
        )?,
    };
    if fsync && appended > 0 {
        transcript.sync_data().map_err(|e| Error::io(&tpath, e))?;
    }
    folder.remove(&jname)?;
    Ok(if appended == 0 {
        Settled::Complete
    } else {
        Settled::Completed(appended)
    })
}

/// Appends the lines of `journal[..batch_len)` that are not complete lines of
/// `transcript[from..len)`, after a `\n` when the transcript ends inside a line.
fn append_missing(
    journal: &File,
    jpath: &Path,
    batch_len: u64,
    transcript: &mut File,
    tpath: &Path,
    from: u64,
    len: u64,
) -> Result<u64> {
    let mut present = HashSet::new();
    let complete_end = for_lines(transcript, tpath, from, len, |l| {
        present.insert(xxh3_64(l));
        Ok(())
    })?;
    let mut out: Vec<u8> = Vec::new();
    if complete_end < len {
        out.push(b'\n');
    }
    let mut written = 0u64;
    let mut flush = |out: &mut Vec<u8>, transcript: &mut File| -> Result<()> {
        transcript.write_all(out).map_err(|e| Error::io(tpath, e))?;
        written += out.len() as u64;
        out.clear();
        Ok(())
    };
    for_lines(journal, jpath, 0, batch_len, |l| {
        if l != b"\n" && !present.contains(&xxh3_64(l)) {
            out.extend_from_slice(l);
            if out.len() >= WRITE_CHUNK {
                flush(&mut out, transcript)?;
            }
        }
        Ok(())
    })?;
    if out.len() > usize::from(complete_end < len) {
        flush(&mut out, transcript)?;
    }
    Ok(written)
}

/// Settles the batch a killed writer may have left for the transcript at `path` (see the
/// module docs): one `stat` when there is none. A reader calls it before it reads; it takes
/// the writers' lock only when a journal is there. Errors (a read-only folder, a link) leave
/// the journal for a writer and are not the reader's.
pub fn settle_path(path: &Path) -> Result<Settled> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return Ok(Settled::Nothing);
    };
    match std::fs::symlink_metadata(dir.join(journal_name(name))) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Settled::Nothing),
        _ => {}
    }
    let folder = Folder::open(dir, false)?;
    let Some(mut file) = folder.open_locked(name, false)? else {
        return Ok(Settled::Nothing);
    };
    settle(&folder, name, &mut file, true)
}

/// Leaves the journal a writer killed after writing it (before the transcript) leaves: batch
/// `bytes` for the transcript at `path`, which was `start` bytes long when the batch began.
#[cfg(test)]
pub(crate) fn leave_journal(path: &Path, start: u64, bytes: &[u8]) {
    let trailer = Trailer {
        start,
        len: bytes.len() as u64,
        xxh3: xxh3_64(bytes),
    };
    let mut journal = bytes.to_vec();
    journal.extend_from_slice(&serde_json::to_vec(&trailer).expect("a trailer serialises"));
    journal.push(b'\n');
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .expect("a file name");
    std::fs::write(path.with_file_name(journal_name(name)), &journal)
        .expect("the journal is written");
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A transcript `before` bytes long, a batch of `batch` lines journalled for it, and the
    /// transcript as `state` leaves it (what a killed writer and Claude Code did); returns the
    /// file after [`settle`] and what it said.
    fn settled(
        before: &[u8],
        batch: &[&[u8]],
        state: impl Fn(&[u8]) -> Vec<u8>,
    ) -> (Vec<u8>, Settled) {
        let tmp = tempfile::tempdir().unwrap();
        let folder = Folder::open(tmp.path(), false).unwrap();
        let jname = journal_name("s.jsonl");
        // A commit (here into a scratch file) removes its journal.
        let mut b = Batch::new("s.jsonl", before.len() as u64);
        for l in batch {
            b.push(&folder, l).unwrap();
        }
        b.commit(&folder, &mut tempfile::tempfile().unwrap(), false)
            .unwrap();
        assert!(folder.stat(&jname).unwrap().is_none());
        let bytes = batch.concat();
        leave_journal(&tmp.path().join("s.jsonl"), before.len() as u64, &bytes);
        let mut file = std::fs::File::create(tmp.path().join("s.jsonl")).unwrap();
        file.write_all(before).unwrap();
        file.write_all(&state(&bytes)).unwrap();
        drop(file);
        let mut file = folder.open_locked("s.jsonl", false).unwrap().unwrap();
        let what = settle(&folder, "s.jsonl", &mut file, false).unwrap();
        assert!(
            folder.stat(&jname).unwrap().is_none(),
            "settle removes the journal"
        );
        (std::fs::read(tmp.path().join("s.jsonl")).unwrap(), what)
    }

    #[test]
    fn a_killed_batch_is_completed_or_found_whole() {
        let before: &[u8] = b"{\"a\":1}\n";
        let lines: [&[u8]; 3] = [b"{\"b\":2}\n", b"{\"c\":3}\n", b"{\"d\":4}\n"];
        let whole: Vec<u8> = [before, &lines.concat()].concat();
        // Not written at all, cut inside a line, cut between lines, one byte short.
        for cut in [0, 3, 8, 12, 23] {
            let (got, what) = settled(before, &lines, |b| b[..cut].to_vec());
            assert_eq!(got, whole, "cut at {cut}");
            assert_eq!(what, Settled::Completed(24 - cut as u64), "cut at {cut}");
        }
        let (got, what) = settled(before, &lines, <[u8]>::to_vec);
        assert_eq!((got, what), (whole.clone(), Settled::Complete));
        // Claude Code appended after a torn batch: its line stays, the missing lines follow.
        let foreign: &[u8] = b"{\"cc\":9}\n";
        let (got, _) = settled(before, &lines, |b| [&b[..12], foreign].concat());
        let want = [
            before,
            lines[0],
            &lines[1][..4],
            foreign,
            lines[1],
            lines[2],
        ]
        .concat();
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want)
        );
        // A line still being written after it: the missing lines follow a fence.
        let (got, _) = settled(before, &lines, |b| [&b[..12], &b"{\"cc\""[..]].concat());
        let want = [
            before,
            lines[0],
            &lines[1][..4],
            b"{\"cc\"\n",
            lines[1],
            lines[2],
        ]
        .concat();
        assert_eq!(got, want);
        // ... or before the batch began: every line of the batch is there once.
        let (got, _) = settled(before, &lines, |b| [foreign, b].concat());
        assert_eq!(got, [before, foreign, &lines.concat()].concat());
    }

    #[test]
    fn a_journal_without_its_trailer_is_dropped_and_the_file_untouched() {
        let tmp = tempfile::tempdir().unwrap();
        let folder = Folder::open(tmp.path(), false).unwrap();
        std::fs::write(tmp.path().join("s.jsonl"), b"{}\n").unwrap();
        let jname = journal_name("s.jsonl");
        for journal in [
            &b""[..],
            b"{\"b\":2}\n",
            b"{\"b\":2}\n{\"start\":3,\"len\":8,\"xxh3\":1}\n",
        ] {
            std::fs::write(tmp.path().join(&jname), journal).unwrap();
            let mut file = folder.open_locked("s.jsonl", false).unwrap().unwrap();
            let what = settle(&folder, "s.jsonl", &mut file, false).unwrap();
            assert_eq!(what, Settled::Dropped);
            assert!(folder.stat(&jname).unwrap().is_none());
            assert_eq!(std::fs::read(tmp.path().join("s.jsonl")).unwrap(), b"{}\n");
        }
    }

    #[test]
    fn a_batch_past_memory_is_journalled_as_it_is_made() {
        let tmp = tempfile::tempdir().unwrap();
        let folder = Folder::open(tmp.path(), false).unwrap();
        let mut b = Batch::new("s.jsonl", 0);
        let line = [vec![b'x'; 999_999], vec![b'\n']].concat();
        let n = IN_MEMORY / line.len() + 3;
        for _ in 0..n {
            b.push(&folder, &line).unwrap();
        }
        assert!(
            folder.stat(&journal_name("s.jsonl")).unwrap().is_some(),
            "spilled"
        );
        let mut out = folder.open_append("s.jsonl").unwrap();
        let written = b.commit(&folder, &mut out, false).unwrap();
        assert_eq!(written, (n * line.len()) as u64);
        assert_eq!(
            std::fs::read(tmp.path().join("s.jsonl")).unwrap(),
            line.repeat(n)
        );
        assert!(folder.stat(&journal_name("s.jsonl")).unwrap().is_none());
    }
}
