//! Catch-up: bring one transcript's rows up to date by reading only new bytes.
//!
//! # Design
//! Before trusting what is indexed, the file is checked: same identity (device, inode), not
//! shorter than the indexed length, and the fingerprint of the bytes just before the cursor
//! (the last complete 64 KiB chunk and the partial chunk after it) unchanged. Any mismatch —
//! a tombstone truncation, an atomic rewrite, another file at the path — drops the file's rows
//! and indexes it again from zero: never a blind seek. Then only the bytes from the indexed
//! length to the last complete line are framed and parsed; a torn tail waits for its `\n`, a
//! bad line is recorded and skipped, and the cursor always advances.
//!
//! Rows are appended in the same map order as the full scan (a duplicate uuid replaces the
//! row in place). The projections are then re-derived ([`crate::index::write::derive`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::hash::BuildHasher;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

use redb::{ReadableTable, WriteTransaction};

use crate::chain::{BadLine, MessageRow};
use crate::error::IndexFault;
use crate::error::{Error, IngestError, Result};
use crate::id::Id;
use crate::index::format::codec::{decode, encode, id_key, key_of, opt_id, tag};
use crate::index::format::ids::{
    IdEntry, decode as decode_ids, decode_response, encode as encode_ids, encode_response,
};
use crate::index::format::schema::{
    BAD_LINES, CHUNK_SIZE, CHUNKS, FILES, FORWARD, FileState, IDS, NAMES, PROGRESS, RESPONSES,
    ROWS, SIDECHAINS,
};
use crate::transcript::envelope::{Entry, Flags, Kind, MessageHead};
use crate::transcript::frame::{FrameSummary, Framer};

/// Batches of at most this many new rows update the projections in place.
pub(crate) const INCREMENTAL_MAX_ROWS: usize = 256;

/// What a catch-up did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatchUp {
    /// Bytes read and indexed.
    pub bytes: u64,
    /// Lines framed.
    pub lines: u64,
    /// Why the file was indexed again from zero, if it was.
    pub reindexed: Option<&'static str>,
    /// What became of the materialised resume view.
    pub view: ViewUpdate,
    /// Caught up together with other short transcripts, in one write transaction
    /// ([`Store::catch_up_all`](crate::Store::catch_up_all)), rather than on its own.
    pub batched: bool,
}

/// What a catch-up did to the materialised resume view of the file (stored by the last
/// resume that walked).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ViewUpdate {
    /// None was stored, or nothing was appended.
    #[default]
    Untouched,
    /// Extended with the appended messages: the next default resume reads it.
    Extended,
    /// Dropped (the append was not a continuation this could prove): the next resume walks.
    Dropped,
    /// Walked and stored by this catch-up (a session indexed anew by
    /// [`Store::catch_up_all`](crate::Store::catch_up_all)): the next default resume reads it.
    Stored,
}

/// The identity and size of a transcript now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stat {
    pub dev: u64,
    pub ino: u64,
    pub len: u64,
    pub mtime_ns: i128,
    /// Status-change time: unlike the modification time, a user cannot set it back.
    pub ctime_ns: i128,
}

/// A file modified less than this before it was last read may have changed again within the
/// same timestamp tick (file timestamps come from a coarse clock, a few ms behind the wall
/// clock, and some filesystems keep whole seconds): such a stat is "racy" and proves nothing.
/// This is the window for a modification time in whole seconds ([`RACY_WINDOW_FINE_NS`] for a
/// finer one).
pub const RACY_WINDOW_NS: i128 = 2_000_000_000;

/// The racy window for a modification time with a sub-second part: the filesystem keeps fine
/// timestamps (ext4, XFS, Btrfs, tmpfs: nanoseconds; exFAT: 10 ms), and a write after a read
/// gets a time at most the coarse clock's lag (one kernel tick, 1–10 ms) plus the timestamp's
/// granularity before the read. A wide margin over both. A whole-second time (a coarse
/// filesystem, or a fine one at an exact second, one time in a billion) keeps the 2 s window.
pub const RACY_WINDOW_FINE_NS: i128 = 100_000_000;

/// The wall clock now, in ns since the epoch (the reference for [`RACY_WINDOW_NS`]).
pub fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX))
}

/// Whether a stat taken when the file was read at `checked_at_ns` can be trusted later: its
/// modification time is clearly before the read (git's racy-index rule). A write after the
/// read sets the modification time to at least the read's time, minus the coarse clock's lag.
pub fn settled(stat_mtime_ns: i128, checked_at_ns: i128) -> bool {
    let window = if stat_mtime_ns.rem_euclid(1_000_000_000) == 0 {
        RACY_WINDOW_NS
    } else {
        RACY_WINDOW_FINE_NS
    };
    stat_mtime_ns + window < checked_at_ns
}

impl Stat {
    /// Stats `path` (following no symlink surprises: the file that `open` would read).
    pub fn of(path: &Path) -> Result<Stat> {
        let m = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
        Ok(Stat::from_meta(&m))
    }

    /// Stats an open file.
    pub fn from_file(file: &File) -> Option<Stat> {
        file.metadata().ok().map(|m| Stat::from_meta(&m))
    }

    pub(crate) fn from_meta(m: &std::fs::Metadata) -> Stat {
        Stat {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            ctime_ns: i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()),
        }
    }

    /// Whether nothing about the file changed since `state` was written: same identity,
    /// length, modification and status-change times, and those times settled before the file
    /// was read (else a write in the same timestamp tick would go unseen).
    pub fn unchanged(&self, state: &FileState, complete: bool) -> bool {
        let len_ok = if complete {
            self.len == state.indexed_len
        } else {
            self.len == state.indexed_len + state.torn_tail.map_or(0, |(_, l)| l)
        };
        self.dev == state.dev
            && self.ino == state.ino
            && self.mtime_ns == state.mtime_ns
            && self.ctime_ns == state.ctime_ns
            && len_ok
            && settled(state.mtime_ns, state.checked_at_ns)
    }
}

/// The fingerprint of a chunk of a transcript (or of the partial chunk at its indexed end).
fn hash16(bytes: &[u8]) -> [u8; 16] {
    xxhash_rust::xxh3::xxh3_128(bytes).to_le_bytes()
}

/// Whether the indexed prefix of `file` still reads the same: the partial chunk at its end
/// and the last complete chunk before it hash as stored in `chunks`.
pub(crate) fn prefix_matches(
    chunks: &impl ReadableTable<(u32, u64), [u8; 16]>,
    file: &File,
    st: &FileState,
) -> Result<bool, redb::Error> {
    if st.indexed_len == 0 {
        // Nothing indexed, nothing to compare: an empty file's tail was never hashed (its
        // catch-ups read no byte), and taking it for rewritten re-indexed it at every
        // catch-up, dropping its stored view each time.
        return Ok(true);
    }
    let base = st.indexed_len / CHUNK_SIZE * CHUNK_SIZE;
    let mut tail = vec![0u8; (st.indexed_len - base) as usize];
    if file.read_exact_at(&mut tail, base).is_err() || hash16(&tail) != st.tail_hash {
        return Ok(false);
    }
    if base >= CHUNK_SIZE {
        let n = base / CHUNK_SIZE - 1;
        let Some(want) = chunks.get((st.file, n))?.map(|v| v.value()) else {
            return Ok(false);
        };
        let mut chunk = vec![0u8; CHUNK_SIZE as usize];
        if file.read_exact_at(&mut chunk, n * CHUNK_SIZE).is_err() || hash16(&chunk) != want {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether every complete chunk of the indexed prefix still hashes as stored (reads the whole
/// prefix: used only when the file changed without growing, an in-place edit).
fn all_chunks_match(
    txn: &WriteTransaction,
    file: &File,
    st: &FileState,
) -> Result<bool, redb::Error> {
    let complete = st.indexed_len / CHUNK_SIZE;
    let chunks = txn.open_table(CHUNKS)?;
    let mut buf = vec![0u8; CHUNK_SIZE as usize];
    for n in 0..complete {
        let Some(want) = chunks.get((st.file, n))?.map(|v| v.value()) else {
            return Ok(false);
        };
        if file.read_exact_at(&mut buf, n * CHUNK_SIZE).is_err() || hash16(&buf) != want {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Deletes every row of file id `f` from every per-file table.
pub fn drop_file_rows(txn: &WriteTransaction, f: u32) -> Result<(), redb::Error> {
    use crate::index::format::schema::{ID_FIRST as ZERO, ID_LAST as MAX};
    txn.open_table(CHUNKS)?
        .retain_in((f, 0)..=(f, u64::MAX), |_, _| false)?;
    txn.open_table(ROWS)?
        .retain_in((f, 0)..=(f, u32::MAX), |_, _| false)?;
    txn.open_table(IDS)?
        .retain_in((f, ZERO)..=(f, MAX), |_, _| false)?;
    txn.open_table(RESPONSES)?
        .retain_in((f, 0)..=(f, u64::MAX), |_, _| false)?;
    txn.open_table(PROGRESS)?
        .retain_in((f, ZERO)..=(f, MAX), |_, _| false)?;
    txn.open_table(NAMES)?
        .retain_in((f, ZERO)..=(f, MAX), |_, _| false)?;
    txn.open_table(BAD_LINES)?
        .retain_in((f, 0)..=(f, u64::MAX), |_, _| false)?;
    txn.open_table(FORWARD)?
        .retain_in((f, ZERO)..=(f, MAX), |_, ()| false)?;
    txn.open_table(SIDECHAINS)?
        .retain_in((f, 0)..=(f, u32::MAX), |_, _| false)?;
    crate::index::write::derive::clear(txn, f)?;
    crate::index::read::view::clear(txn, f)?;
    Ok(())
}

/// Reads the stored state of `path`, if any (and decodable).
pub fn file_state(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    path: &str,
) -> Result<Option<FileState>, IndexFault> {
    let v = crate::index::db::guard::read("files", || {
        Ok::<_, redb::StorageError>(table.get(path)?.map(|v| v.value().to_vec()))
    })?;
    Ok(v.and_then(|v| decode(path.as_bytes(), &v)))
}

/// Catches `path` up inside `txn`. Returns what was done and the new state.
pub fn catch_up(
    txn: &WriteTransaction,
    key: &str,
    path: &Path,
) -> Result<(CatchUp, FileState), IngestError> {
    // Taken before the file is read: a write after this instant leaves a modification time
    // that is not clearly before it, so the next reader re-checks (the racy-mtime rule).
    let checked_at = now_ns();
    let file = File::open(path).map_err(|e| IngestError::Io(Error::io(path, e)))?;
    let stat = Stat::from_meta(
        &file
            .metadata()
            .map_err(|e| IngestError::Io(Error::io(path, e)))?,
    );
    let old = file_state(&txn.open_table(FILES)?, key).map_err(IngestError::from_fault)?;
    // The file changed (or its last check was racy) but did not grow past what was seen: an
    // in-place edit can be anywhere, so every chunk is checked, not only the last one.
    let edited_in_place = |st: &FileState| {
        let seen = st.indexed_len + st.torn_tail.map_or(0, |(_, l)| l);
        stat.len <= seen
            && ((stat.mtime_ns, stat.ctime_ns) != (st.mtime_ns, st.ctime_ns)
                || !settled(st.mtime_ns, st.checked_at_ns))
    };
    let mut report = CatchUp::default();
    let mut st = match old {
        Some(st) if (st.dev, st.ino) != (stat.dev, stat.ino) => {
            report.reindexed = Some("another file is at this path (identity changed)");
            restart(txn, st.file)?
        }
        Some(st) if stat.len < st.indexed_len => {
            report.reindexed =
                Some("the file is shorter than what was indexed (truncated or rewritten)");
            restart(txn, st.file)?
        }
        Some(st) if !prefix_matches(&txn.open_table(CHUNKS)?, &file, &st)? => {
            report.reindexed = Some("the bytes before the index cursor changed (rewritten)");
            restart(txn, st.file)?
        }
        Some(st) if edited_in_place(&st) && !all_chunks_match(txn, &file, &st)? => {
            report.reindexed = Some("the file was edited in place (same length)");
            restart(txn, st.file)?
        }
        Some(st) => st,
        None => FileState {
            file: crate::index::db::open::next_file_id(txn)?,
            ..FileState::default()
        },
    };
    st.dev = stat.dev;
    st.ino = stat.ino;
    st.mtime_ns = stat.mtime_ns;
    st.ctime_ns = stat.ctime_ns;
    st.checked_at_ns = checked_at;
    if stat.len == st.indexed_len {
        // An unterminated tail seen earlier went away (cut off by the writer): forget it.
        st.torn_tail = None;
    }
    if stat.len > st.indexed_len {
        let before = st.indexed_len;
        let mut batch = Batch::default();
        // I/O errors below name the file (they are raised without it); a file that ends
        // before its measured length was truncated meanwhile.
        let named = |e: IngestError| match e {
            IngestError::Io(Error::Io { source, .. })
                if source.kind() == std::io::ErrorKind::UnexpectedEof =>
            {
                IngestError::Io(Error::Changed { path: path.into() })
            }
            IngestError::Io(Error::Io { source, .. }) => IngestError::Io(Error::io(path, source)),
            e => e,
        };
        let (summary, hashed, edges) =
            ingest_from(txn, &file, path, &mut st, stat.len, &mut batch).map_err(named)?;
        report.bytes = summary.complete_len - before;
        report.lines = summary.lines;
        st.torn_tail = summary.torn_tail;
        // Large batches (a first index, a long absence) re-derive in one pass: cheaper than
        // many local updates, which read `ids` (so the edges are written before them).
        let changed = batch.structural || !batch.new_rows.is_empty();
        // A first index derives too, whatever its size: the local updates of a small one
        // look up each row's neighbours (a project of 20,000 two-turn sessions spent a
        // third of its catch-up in them).
        let derive_all =
            batch.structural || before == 0 || batch.new_rows.len() > INCREMENTAL_MAX_ROWS;
        let project = || -> Result<(), IngestError> {
            update_fingerprint(txn, &file, &mut st, &hashed, summary.complete_len)
                .map_err(named)?;
            st.indexed_len = summary.complete_len;
            st.lines += summary.lines;
            if changed {
                let done = !derive_all
                    && crate::index::write::incremental::extend(txn, &mut st, &batch.new_rows)
                        .map_err(IngestError::from_fault)?;
                if !done {
                    crate::index::write::derive::derive(txn, &mut st)?;
                    // The projections were derived again: the stored view can no longer be
                    // extended (see `crate::index::write::extension`), the next resume walks.
                    crate::index::read::view::clear(txn, st.file)?;
                }
            }
            Ok(())
        };
        write_edges_and(edges, changed && derive_all, project)?;
    }
    txn.open_table(FILES)?
        .insert(key, encode(key.as_bytes(), &st).as_slice())?;
    Ok((report, st))
}

fn restart(txn: &WriteTransaction, f: u32) -> Result<FileState, redb::Error> {
    drop_file_rows(txn, f)?;
    Ok(FileState {
        file: f,
        ..FileState::default()
    })
}

/// A reader that fingerprints the bytes passing through it, chunk by chunk.
struct HashingReader<R> {
    inner: R,
    /// Absolute offset of the next byte.
    pos: u64,
    hasher: xxhash_rust::xxh3::Xxh3Default,
    /// Complete chunks: `(chunk no., hash)`.
    done: Vec<(u64, [u8; 16])>,
}

impl<R: Read> HashingReader<R> {
    /// Starts hashing at the chunk boundary below `from`; `prefix` holds the bytes from that
    /// boundary up to `from`.
    fn new(inner: R, from: u64, prefix: &[u8]) -> Self {
        let mut hasher = xxhash_rust::xxh3::Xxh3Default::new();
        hasher.update(prefix);
        HashingReader {
            inner,
            pos: from,
            hasher,
            done: Vec::new(),
        }
    }
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let mut rest = &buf[..n];
        while !rest.is_empty() {
            let room = (CHUNK_SIZE - self.pos % CHUNK_SIZE) as usize;
            let take = room.min(rest.len());
            self.hasher.update(&rest[..take]);
            self.pos += take as u64;
            rest = &rest[take..];
            if self.pos.is_multiple_of(CHUNK_SIZE) {
                let h = self.hasher.digest128().to_le_bytes();
                self.done.push((self.pos / CHUNK_SIZE - 1, h));
                self.hasher.reset();
            }
        }
        Ok(n)
    }
}

/// Stores the chunk hashes that lie inside the indexed prefix `..to`, and the hash of the
/// partial chunk ending at `to` (read again: at most 64 KiB).
fn update_fingerprint(
    txn: &WriteTransaction,
    file: &File,
    st: &mut FileState,
    hashed: &[(u64, [u8; 16])],
    to: u64,
) -> Result<(), IngestError> {
    let mut chunks = txn.open_table(CHUNKS)?;
    for &(n, h) in hashed {
        if (n + 1) * CHUNK_SIZE <= to {
            chunks.insert((st.file, n), h)?;
        }
    }
    let base = to / CHUNK_SIZE * CHUNK_SIZE;
    let mut tail = vec![0u8; (to - base) as usize];
    file.read_exact_at(&mut tail, base)
        .map_err(|e| IngestError::Io(Error::io("transcript", e)))?;
    st.tail_hash = hash16(&tail);
    Ok(())
}

/// What a batch of new lines changed, for choosing between an incremental and a full
/// re-derivation of the projections.
#[derive(Debug, Default)]
pub struct Batch {
    /// Map positions of the rows added (in file order).
    pub new_rows: Vec<u32>,
    /// Something only a full re-derivation handles: a duplicate uuid, a progress entry,
    /// a compact boundary, a snip, or a uuid that an earlier entry named (see [`FORWARD`]).
    pub structural: bool,
}

/// Whether a message line, whatever else is stored, changes the projections in a way only a
/// full re-derivation handles: a legacy progress entry (re-pointed parents), a compact
/// boundary (dropped rows, a preserved segment), a snip (removed rows).
pub(crate) fn structural(head: &MessageHead) -> bool {
    head.kind == Kind::Progress
        || head.flags.has(Flags::COMPACT_BOUNDARY)
        || head.flags.has(Flags::SNIP)
}

/// Fingerprints of complete chunks: `(chunk no., XXH3-128)` ([`hash16`]).
type ChunkHashes = Vec<(u64, [u8; 16])>;

/// The tables one batch writes to.
struct Tables<'t> {
    f: u32,
    rows: redb::Table<'t, (u32, u32), &'static [u8]>,
    ids: redb::Table<'t, (u32, [u8; 16]), &'static [u8]>,
    responses: redb::Table<'t, (u32, u64), &'static [u8]>,
    progress: redb::Table<'t, (u32, [u8; 16]), &'static [u8]>,
    forward: redb::Table<'t, (u32, [u8; 16]), ()>,
    bad: redb::Table<'t, (u32, u64), &'static [u8]>,
    sidechains: crate::index::write::runs::Runs<'t>,
    /// Changes of `ids` (a new message's row, a parent's new and removed children) and of
    /// `responses` (rows gained and lost) waiting to be written in key order (their keys are
    /// random: sorted runs fill B-tree pages sequentially).
    pending_uuids: BTreeMap<[u8; 16], u32>,
    pending_children: BTreeSet<([u8; 16], u32)>,
    removed_children: BTreeSet<([u8; 16], u32)>,
    pending_msg_ids: BTreeSet<(u64, u32)>,
    removed_msg_ids: BTreeSet<(u64, u32)>,
    /// The edges of a first index of the file, written once at its end ([`FromZero`]).
    zero: Option<FromZero>,
    /// The block of rows being written ([`crate::index::format::row::Writer`]).
    rows_w: crate::index::format::row::Writer,
}

/// The random-key edges (`ids`, `responses`) of a file indexed
/// from zero, kept in memory and written once, at the end, in key order. Runs of sorted keys
/// inserted into a growing tree land all over it and leave its pages ~65 % full (a fifth of a
/// large index was such slack); one ascending pass fills them, and a duplicate uuid is a
/// lookup in memory. Memory: ~40 bytes per message while the file is read, ~70 while the edges
/// are written (every Vec with its growth slack), less than what the derivation that follows
/// holds at its peak.
#[derive(Default)]
struct FromZero {
    /// Every message row's uuid, by position.
    ids: Vec<[u8; 16]>,
    /// Positions in `ids`, found by uuid.
    index: hashbrown::HashTable<u32>,
    hasher: foldhash::fast::RandomState,
    /// Per row: the on-disk parent of its (last) line: a row's position, [`NO_PARENT`], or
    /// [`FOREIGN`] for an id no row had when the line was read (kept in `foreign`).
    parents: Vec<u32>,
    foreign: foldhash::HashMap<u32, [u8; 16]>,
    /// `(position, message.id hash)` of the assistant rows, by position.
    mids: Vec<(u32, u64)>,
}

/// The edges of a first index ([`FromZero`]) with the tables they go to, written after the
/// last line is stored. A small first index writes them while the projections are derived on
/// another thread (`catch_up`): the two write different tables of the same transaction.
struct Edges<'t> {
    f: u32,
    ids_t: redb::Table<'t, (u32, [u8; 16]), &'static [u8]>,
    responses_t: redb::Table<'t, (u32, u64), &'static [u8]>,
    zero: FromZero,
}

/// Up to this many rows the edges of a first index are written beside the derivation: both
/// hold their lists at once (~70 + 56 bytes a row, 8 MiB here); above it, one after the other.
const EDGES_BESIDE_MAX_ROWS: usize = 1 << 16;

/// Below this many rows the edges are written first, on the calling thread: starting a thread
/// costs more than the work it would take over (a small session's edges take microseconds).
const EDGES_BESIDE_MIN_ROWS: usize = 1 << 10;

impl Edges<'_> {
    /// Whether they are written beside the derivation (see [`EDGES_BESIDE_MAX_ROWS`]).
    fn beside(&self) -> bool {
        (EDGES_BESIDE_MIN_ROWS..=EDGES_BESIDE_MAX_ROWS).contains(&self.zero.ids.len())
    }

    /// Writes each table in one ascending pass (they hold nothing of the file yet). Each
    /// list is dropped before the next is built.
    fn write(self) -> Result<(), redb::Error> {
        let Edges {
            f,
            mut ids_t,
            mut responses_t,
            zero,
        } = self;
        let FromZero {
            ids,
            index,
            hasher,
            mut parents,
            foreign,
            mids,
        } = zero;
        // A parent written after its child is a message after all.
        let mut others: Vec<([u8; 16], u32)> = Vec::new();
        for (seq, p) in foreign {
            let h = hasher.hash_one(p);
            match index.find(h, |&s| ids[s as usize] == p) {
                Some(&ps) => parents[seq as usize] = ps,
                None => others.push((p, seq)),
            }
        }
        drop(index);
        // Children by parent row, then the ids in key order: each message's entry with its
        // children, and the parents no row has with theirs.
        let mut by_parent: Vec<(u32, u32)> = (0..)
            .zip(parents)
            .filter(|&(_, p)| p < FOREIGN)
            .map(|(seq, p)| (p, seq))
            .collect();
        by_parent.sort_unstable();
        let mut order: Vec<([u8; 16], u32)> = ids.iter().copied().zip(0..).collect();
        order.sort_unstable();
        others.sort_unstable();
        let mut others = others.chunk_by(|a, b| a.0 == b.0).peekable();
        let mut e = IdEntry::default();
        for &(id, seq) in &order {
            while let Some(g) = others.next_if(|g| g[0].0 < id) {
                e.seq = None;
                e.children.clear();
                e.children.extend(g.iter().map(|c| c.1));
                ids_t.insert((f, g[0].0), encode_ids(f, g[0].0, &e).as_slice())?;
            }
            e.seq = Some(seq);
            e.children.clear();
            let from = by_parent.partition_point(|c| c.0 < seq);
            e.children.extend(
                by_parent[from..]
                    .iter()
                    .take_while(|c| c.0 == seq)
                    .map(|c| c.1),
            );
            ids_t.insert((f, id), encode_ids(f, id, &e).as_slice())?;
        }
        for g in others {
            e.seq = None;
            e.children.clear();
            e.children.extend(g.iter().map(|c| c.1));
            ids_t.insert((f, g[0].0), encode_ids(f, g[0].0, &e).as_slice())?;
        }
        drop((by_parent, order, ids));
        let mut mids: Vec<(u64, u32)> = mids.into_iter().map(|(seq, mid)| (mid, seq)).collect();
        mids.sort_unstable();
        let mut rows = Vec::new();
        for g in mids.chunk_by(|a, b| a.0 == b.0) {
            rows.clear();
            rows.extend(g.iter().map(|m| m.1));
            let v = encode_response(f, g[0].0, &rows);
            responses_t.insert((f, g[0].0), v.as_slice())?;
        }
        Ok(())
    }
}

/// See [`FromZero::parents`].
const NO_PARENT: u32 = u32::MAX;
/// See [`FromZero::parents`].
const FOREIGN: u32 = u32::MAX - 1;

impl FromZero {
    /// The position of the row with uuid `id`.
    fn seq_of(&self, id: &[u8; 16]) -> Option<u32> {
        let h = self.hasher.hash_one(id);
        self.index
            .find(h, |&s| self.ids[s as usize] == *id)
            .copied()
    }

    /// Adds a row with uuid `id` (not stored yet) at position `seq`, the next one.
    fn add(&mut self, id: [u8; 16], seq: u32) {
        debug_assert_eq!(seq as usize, self.ids.len());
        let (ids, hasher) = (&self.ids, &self.hasher);
        self.index.insert_unique(hasher.hash_one(id), seq, |&s| {
            hasher.hash_one(ids[s as usize])
        });
        self.ids.push(id);
        self.parents.push(NO_PARENT);
    }

    /// Records the parent and response of the line now stored at row `seq`.
    fn set(&mut self, seq: u32, parent: Option<Id>, mid: Option<u64>) {
        self.foreign.remove(&seq);
        self.parents[seq as usize] = match parent {
            None => NO_PARENT,
            Some(p) => self.seq_of(&p.0).unwrap_or_else(|| {
                self.foreign.insert(seq, p.0);
                FOREIGN
            }),
        };
        match (self.mids.binary_search_by_key(&seq, |m| m.0), mid) {
            (Ok(i), Some(mid)) => self.mids[i].1 = mid,
            (Ok(i), None) => {
                self.mids.remove(i);
            }
            // A new row's goes at the end; a duplicate's (rare) in its place.
            (Err(i), Some(mid)) => self.mids.insert(i, (seq, mid)),
            (Err(_), None) => {}
        }
    }
}

/// What a catch-up changes of one id's `ids` entry (or one response's `responses` entry).
#[derive(Default)]
struct IdChange {
    /// The row of a new message with this uuid.
    seq: Option<u32>,
    /// Rows that name it as their parent now.
    gained: Vec<u32>,
    /// Rows that named it and were replaced by a line naming another parent.
    lost: Vec<u32>,
}

/// Pending keys are written out in sorted runs of this many rows (bounds memory).
const SORTED_RUN: usize = 1 << 16;

impl Tables<'_> {
    /// Whether a message or progress entry with this uuid is stored (or pending).
    fn known(&self, id: Id) -> Result<bool, redb::Error> {
        let stored = match &self.zero {
            Some(z) => z.seq_of(&id.0).is_some(),
            None => self.pending_uuids.contains_key(&id.0) || self.stored_seq(id.0)?.is_some(),
        };
        Ok(stored || self.progress.get((self.f, id.0))?.is_some())
    }

    /// Remembers `id` in [`FORWARD`] when no entry has it yet: the projections depend on it
    /// (a snip removal, a preserved-segment end, a parent), so its arrival re-derives them.
    fn name(&mut self, id: Id) -> Result<(), redb::Error> {
        if !self.known(id)? {
            self.forward.insert((self.f, id.0), ())?;
        }
        Ok(())
    }

    /// A new uuid arrived: if an earlier entry named it, the batch needs a full re-derivation.
    fn arrived(&mut self, batch: &mut Batch, id: Id) -> Result<(), redb::Error> {
        if self.forward.remove((self.f, id.0))?.is_some() {
            batch.structural = true;
        }
        Ok(())
    }

    /// The row stored for uuid `id` (`ids`), not counting pending ones.
    fn stored_seq(&self, id: [u8; 16]) -> Result<Option<u32>, redb::Error> {
        Ok(self.stored_entry(id)?.and_then(|e| e.seq))
    }

    /// The stored `ids` entry of `id`; one that fails its checksum is an error.
    fn stored_entry(&self, id: [u8; 16]) -> Result<Option<IdEntry>, redb::Error> {
        self.ids
            .get((self.f, id))?
            .map(|v| {
                decode_ids(self.f, id, v.value())
                    .ok_or_else(|| redb::Error::Corrupted("an ids entry fails its checksum".into()))
            })
            .transpose()
    }

    /// Writes the pending changes, in key order.
    fn flush(&mut self) -> Result<(), redb::Error> {
        let f = self.f;
        let mut changes: BTreeMap<[u8; 16], IdChange> = BTreeMap::new();
        for (id, seq) in std::mem::take(&mut self.pending_uuids) {
            changes.entry(id).or_default().seq = Some(seq);
        }
        for (p, seq) in std::mem::take(&mut self.pending_children) {
            changes.entry(p).or_default().gained.push(seq);
        }
        for (p, seq) in std::mem::take(&mut self.removed_children) {
            changes.entry(p).or_default().lost.push(seq);
        }
        for (id, IdChange { seq, gained, lost }) in changes {
            let mut e = self.stored_entry(id)?.unwrap_or_default();
            if seq.is_some() {
                e.seq = seq;
            }
            e.children.retain(|c| !lost.contains(c));
            e.children.extend(gained);
            e.children.sort_unstable();
            e.children.dedup();
            if e.is_empty() {
                self.ids.remove((f, id))?;
            } else {
                self.ids.insert((f, id), encode_ids(f, id, &e).as_slice())?;
            }
        }
        let mut responses: BTreeMap<u64, IdChange> = BTreeMap::new();
        for (mid, seq) in std::mem::take(&mut self.pending_msg_ids) {
            responses.entry(mid).or_default().gained.push(seq);
        }
        for (mid, seq) in std::mem::take(&mut self.removed_msg_ids) {
            responses.entry(mid).or_default().lost.push(seq);
        }
        for (mid, IdChange { gained, lost, .. }) in responses {
            let mut rows = match self.responses.get((f, mid))? {
                Some(v) => decode_response(f, mid, v.value()).ok_or_else(|| {
                    redb::Error::Corrupted("a responses entry fails its checksum".into())
                })?,
                None => Vec::new(),
            };
            rows.retain(|r| !lost.contains(r));
            rows.extend(gained);
            rows.sort_unstable();
            rows.dedup();
            if rows.is_empty() {
                self.responses.remove((f, mid))?;
            } else {
                let v = encode_response(f, mid, &rows);
                self.responses.insert((f, mid), v.as_slice())?;
            }
        }
        Ok(())
    }

    /// Removes the edges (its parent's `ids` child, `msg_ids`, `sidechains`) of the row stored at `seq`,
    /// which a duplicate uuid is about to replace.
    fn forget_edges(&mut self, st: &mut FileState, seq: u32) -> Result<(), redb::Error> {
        let f = self.f;
        let old = self.rows_w.get(&self.rows, st, seq)?;
        if let Some(old) = old {
            // A first index keeps one parent and response per row: the new line's replace them.
            if let Some(p) = old.head.parent
                && self.zero.is_none()
                && !self.pending_children.remove(&(p.0, seq))
            {
                self.removed_children.insert((p.0, seq));
            }
            if let Some(mid) = old.head.message_id
                && self.zero.is_none()
                && !self.pending_msg_ids.remove(&(mid, seq))
            {
                self.removed_msg_ids.insert((mid, seq));
            }
            if old.head.flags.has(Flags::SIDECHAIN)
                && crate::index::write::runs::remove(&mut self.sidechains, f, seq)?
            {
                st.sidechain_rows = st.sidechain_rows.saturating_sub(1);
            }
        }
        Ok(())
    }

    /// Stores one parsed line (in file order).
    fn store(
        &mut self,
        st: &mut FileState,
        batch: &mut Batch,
        entry: Result<Entry, crate::transcript::envelope::LineProblem>,
        pos: crate::transcript::frame::LinePos,
    ) -> Result<(), redb::Error> {
        let f = self.f;
        match entry {
            Err(problem) => {
                st.bad_lines += 1;
                self.bad.insert(
                    (f, pos.line),
                    encode(&key_of(f, pos.line), &BadLine { pos, problem }).as_slice(),
                )?;
            }
            Ok(Entry::Meta(meta)) => {
                // A checkpoint may name a message not written yet (Claude Code 2.1.328 writes
                // `last-prompt` first): no derived row depends on it, the leaf choice looks it
                // up at query time, so it is not a forward reference.
                if let (true, Some(leaf)) = (meta.ty == "last-prompt", meta.leaf) {
                    st.checkpoint = Some(leaf);
                }
            }
            Ok(Entry::Message(head)) if head.kind == Kind::Progress => {
                debug_assert!(structural(&head));
                batch.structural = true;
                self.arrived(batch, head.uuid)?;
                // Its children are re-pointed to its parent (`query::check_repointed`).
                if let Some(p) = head.parent {
                    self.name(p)?;
                }
                let value = tag(&id_key(f, 0, head.uuid.0), opt_id(head.parent));
                self.progress.insert((f, head.uuid.0), value.as_slice())?;
            }
            Ok(Entry::Message(head)) => {
                if structural(&head) {
                    batch.structural = true;
                }
                let existing = match (&self.zero, self.pending_uuids.get(&head.uuid.0)) {
                    (Some(z), _) => z.seq_of(&head.uuid.0),
                    (None, Some(&seq)) => Some(seq),
                    (None, None) => self.stored_seq(head.uuid.0)?,
                };
                let seq = if let Some(seq) = existing {
                    batch.structural = true;
                    // A duplicate replaces the value and keeps the first position.
                    self.forget_edges(st, seq)?;
                    seq
                } else {
                    let seq = st.rows;
                    st.rows += 1;
                    self.arrived(batch, head.uuid)?;
                    if let Some(z) = &mut self.zero {
                        z.add(head.uuid.0, seq);
                    } else {
                        self.pending_uuids.insert(head.uuid.0, seq);
                    }
                    batch.new_rows.push(seq);
                    seq
                };
                if let Some(p) = head.parent {
                    self.name(p)?;
                }
                let mid = match (head.kind, head.message_id) {
                    (Kind::Assistant, Some(mid)) => Some(mid),
                    _ => None,
                };
                if let Some(z) = &mut self.zero {
                    z.set(seq, head.parent, mid);
                } else {
                    if let Some(p) = head.parent {
                        self.pending_children.insert((p.0, seq));
                    }
                    if let Some(mid) = mid {
                        self.pending_msg_ids.insert((mid, seq));
                    }
                }
                for &id in &head.snip_removed {
                    self.name(id)?;
                }
                if let Some(seg) = head.preserved {
                    for id in [seg.head, seg.anchor, seg.tail] {
                        self.name(id)?;
                    }
                }
                if head.flags.has(Flags::SIDECHAIN)
                    && crate::index::write::runs::add(&mut self.sidechains, f, seq)?
                {
                    st.sidechain_rows += 1;
                }
                if self.pending_uuids.len() >= SORTED_RUN {
                    self.flush()?;
                }
                self.rows_w
                    .put(&mut self.rows, st, seq, MessageRow { head, pos })?;
            }
        }
        Ok(())
    }
}

/// Writes a first index's `edges`, if any, and runs `project` (the fingerprint and the
/// projections): both at once on two threads when `beside` allows it and the edges are few
/// enough ([`EDGES_BESIDE_MAX_ROWS`]), else the edges first.
fn write_edges_and(
    edges: Option<Edges<'_>>,
    beside: bool,
    project: impl FnOnce() -> Result<(), IngestError> + Send,
) -> Result<(), IngestError> {
    match edges {
        // The edges take longest (~2 ms for 3,000 rows, the derivation ~1): they stay on this
        // thread, which does not wait for the other to start.
        Some(edges) if beside && edges.beside() => std::thread::scope(|scope| {
            let projecting = scope.spawn(project);
            let written = edges.write();
            match projecting.join() {
                Ok(projected) => projected.and(written.map_err(IngestError::from)),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }),
        Some(edges) => {
            edges.write()?;
            project()
        }
        None => project(),
    }
}

/// Frames and stores the lines between `st.indexed_len` and `len`. A first index's edges come
/// back unwritten ([`Edges`]).
fn ingest_from<'t>(
    txn: &'t WriteTransaction,
    file: &File,
    path: &Path,
    st: &mut FileState,
    len: u64,
    batch: &mut Batch,
) -> Result<(FrameSummary, ChunkHashes, Option<Edges<'t>>), IngestError> {
    let mut tables = Tables {
        f: st.file,
        rows: txn.open_table(ROWS)?,
        ids: txn.open_table(IDS)?,
        responses: txn.open_table(RESPONSES)?,
        progress: txn.open_table(PROGRESS)?,
        forward: txn.open_table(FORWARD)?,
        bad: txn.open_table(BAD_LINES)?,
        sidechains: txn.open_table(SIDECHAINS)?,
        pending_uuids: BTreeMap::new(),
        pending_children: BTreeSet::new(),
        removed_children: BTreeSet::new(),
        pending_msg_ids: BTreeSet::new(),
        removed_msg_ids: BTreeSet::new(),
        // No row of the file yet: its edge tables are empty (a restart dropped them).
        zero: (st.rows == 0).then(FromZero::default),
        rows_w: crate::index::format::row::Writer::default(),
    };
    let io = |e| IngestError::Io(Error::io("transcript", e));
    let base = st.indexed_len / CHUNK_SIZE * CHUNK_SIZE;
    let mut prefix = vec![0u8; (st.indexed_len - base) as usize];
    file.read_exact_at(&mut prefix, base).map_err(io)?;
    let mut reader = file;
    reader.seek(SeekFrom::Start(st.indexed_len)).map_err(io)?;
    let reporting = crate::index::db::progress::Reporting::new(
        reader.take(len - st.indexed_len),
        path,
        len - st.indexed_len,
    );
    let mut hashing = HashingReader::new(reporting, st.indexed_len, &prefix);
    let framer = Framer::resume_at(st.indexed_len, st.lines).expecting(len - st.indexed_len);
    // Framing and fingerprinting on one thread, storing on this one in file order, parsing on
    // whichever of the three is free (`crate::index::write::parsing`).
    let mut failure: Option<redb::Error> = None;
    let parsed = crate::index::write::parsing::parse_in_order(
        &framer,
        &mut hashing,
        len - st.indexed_len,
        |lines| {
            // After a failure keep draining, so the parsers never block.
            if failure.is_some() {
                return;
            }
            for (pos, entry, note) in lines {
                if note.is_some() {
                    st.bad_lines += 1;
                }
                let noted = note.map_or(Ok(()), |problem| {
                    tables
                        .bad
                        .insert(
                            (tables.f, pos.line),
                            encode(&key_of(tables.f, pos.line), &BadLine { pos, problem })
                                .as_slice(),
                        )
                        .map(|_| ())
                        .map_err(redb::Error::from)
                });
                if let Err(e) = noted.and_then(|()| tables.store(st, batch, entry, pos)) {
                    failure = Some(e);
                    return;
                }
            }
        },
    );
    let (summary, names) = parsed.map_err(io)?;
    if let Some(e) = failure {
        return Err(e.into());
    }
    tables.rows_w.store(&mut tables.rows, st)?;
    let edges = if let Some(zero) = tables.zero.take() {
        Some(Edges {
            f: tables.f,
            ids_t: tables.ids,
            responses_t: tables.responses,
            zero,
        })
    } else {
        tables.flush()?;
        None
    };
    let mut names_t = txn.open_table(NAMES)?;
    for (id, text) in names.iter() {
        if names_t.insert((tables.f, id.0), text)?.is_none() {
            st.names += 1;
        }
    }
    Ok((summary, hashing.done, edges))
}

#[cfg(test)]
mod tests {
    use super::*;
    use redb::ReadableDatabase;

    /// The `(key, value)` pairs of the tables a catch-up writes, as text.
    fn dump(db: &redb::Database) -> Vec<String> {
        fn all<K: redb::Key + 'static, V: redb::Value + 'static>(
            txn: &redb::ReadTransaction,
            def: redb::TableDefinition<K, V>,
            out: &mut Vec<String>,
        ) where
            for<'a> K::SelfType<'a>: std::fmt::Debug,
            for<'a> V::SelfType<'a>: std::fmt::Debug,
        {
            let t = txn.open_table(def).unwrap();
            for item in t.iter().unwrap() {
                let (k, v) = item.unwrap();
                out.push(format!(
                    "{}: {:?} {:?}",
                    redb::TableHandle::name(&def),
                    k.value(),
                    v.value()
                ));
            }
        }
        let txn = db.begin_read().unwrap();
        let mut out = Vec::new();
        all(&txn, ROWS, &mut out);
        all(&txn, IDS, &mut out);
        all(&txn, RESPONSES, &mut out);
        all(&txn, SIDECHAINS, &mut out);
        all(&txn, FORWARD, &mut out);
        all(&txn, PROGRESS, &mut out);
        out
    }

    /// Catches `path` up in `db` (key `t`).
    fn index(db: &redb::Database, path: &Path) -> CatchUp {
        let txn = db.begin_write().unwrap();
        crate::index::format::schema::create_all(&txn).unwrap();
        let (done, st) = catch_up(&txn, "t", path).unwrap();
        txn.commit().unwrap();
        rows_fill_blocks(db, &st);
        done
    }

    /// The file's rows fill blocks in sequence (every block but the last full) and each row
    /// reads back.
    fn rows_fill_blocks(db: &redb::Database, st: &FileState) {
        let txn = db.begin_read().unwrap();
        let rows = txn.open_table(ROWS).unwrap();
        let per = crate::index::format::row::PER_BLOCK;
        let blocks: Vec<u32> = rows
            .range((st.file, 0)..=(st.file, u32::MAX))
            .unwrap()
            .map(|e| e.unwrap().0.value().1)
            .collect();
        assert_eq!(blocks, (0..st.rows.div_ceil(per)).collect::<Vec<_>>());
        for seq in 0..st.rows {
            assert!(
                crate::index::format::row::get(&rows, st, seq)
                    .unwrap()
                    .is_some(),
                "row {seq}"
            );
        }
        assert!(
            crate::index::format::row::get(&rows, st, st.rows)
                .unwrap()
                .is_none()
        );
    }

    /// `text` indexed at once, and caught up a few lines at a time: what each index holds.
    fn at_once_and_by_parts(text: &[u8]) -> (Vec<String>, Vec<String>) {
        let ends: Vec<usize> = (0..text.len())
            .filter(|&i| text[i] == b'\n')
            .map(|i| i + 1)
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let whole = dir.path().join("whole.jsonl");
        std::fs::write(&whole, text).unwrap();
        let at_once = redb::Database::create(dir.path().join("a.redb")).unwrap();
        index(&at_once, &whole);
        let parts = dir.path().join("parts.jsonl");
        std::fs::write(&parts, &text[..ends[0]]).unwrap();
        let by_parts = redb::Database::create(dir.path().join("b.redb")).unwrap();
        index(&by_parts, &parts);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&parts)
            .unwrap();
        for w in ends.windows(4).step_by(3) {
            std::io::Write::write_all(&mut f, &text[w[0]..w[3]]).unwrap();
            assert!(index(&by_parts, &parts).reindexed.is_none());
        }
        let done = ends.len() - 1 - (ends.len() - 1) % 3;
        std::io::Write::write_all(&mut f, &text[ends[done]..]).unwrap();
        index(&by_parts, &parts);
        assert_eq!(std::fs::read(&parts).unwrap(), text);
        (dump(&at_once), dump(&by_parts))
    }

    /// A first index writes its edges once, at its end, in key order ([`FromZero`]); a
    /// catch-up of appended lines writes them as they come, in sorted runs. On every fixture
    /// and real transcript, and on duplicate uuids whose later line changes the parent, the
    /// response and the sidechain flag, the file indexed at once and the same file caught up
    /// three lines at a time hold the same rows, `ids`, `responses`,
    /// `sidechains`, `forward` and `progress` entries.
    #[test]
    fn a_first_index_writes_the_edges_that_appends_write() {
        let id = |n: u64| format!("00000000-0000-4000-8000-{n:012x}");
        let entry = |n: u64, parent: Option<u64>, ty: &str, mid: &str, side: bool| {
            let parent = parent.map_or("null".into(), |p| format!("\"{}\"", id(p)));
            format!(
                r#"{{"parentUuid":{parent},"isSidechain":{side},"type":"{ty}","message":{{"id":"{mid}","role":"{ty}","content":"x"}},"uuid":"{}","sessionId":"s","timestamp":"2026-01-01T00:00:{n:02}.000Z"}}"#,
                id(n)
            ) + "\n"
        };
        let duplicates = [
            entry(1, None, "user", "", false),
            entry(2, Some(1), "assistant", "m1", false),
            entry(3, Some(2), "assistant", "m1", true),
            entry(4, Some(3), "user", "", false),
            entry(3, Some(1), "assistant", "m2", false),
            entry(5, Some(4), "assistant", "m2", false),
            entry(2, Some(1), "assistant", "m3", false),
            entry(6, Some(5), "user", "", false),
            entry(7, Some(6), "user", "", true),
        ]
        .concat();
        let (at_once, by_parts) = at_once_and_by_parts(duplicates.as_bytes());
        assert_eq!(at_once, by_parts, "duplicates");
        let count = |table: &str| at_once.iter().filter(|e| e.starts_with(table)).count();
        assert_eq!(
            (count("ids"), count("responses"), count("sidechains")),
            (7, 2, 1)
        );
        let mut compared = 0;
        for src in crate::testing::fixture_files() {
            let text = std::fs::read(&src).unwrap();
            if memchr::memchr_iter(b'\n', &text).nth(1).is_none() {
                continue;
            }
            let (at_once, by_parts) = at_once_and_by_parts(&text);
            assert_eq!(at_once, by_parts, "{}", src.display());
            compared += 1;
        }
        assert!(compared > 10, "{compared} transcripts compared");
    }

    /// A whole-second modification time (a filesystem keeping seconds) needs 2 s before the
    /// read to be trusted; a finer one 100 ms.
    #[test]
    fn the_racy_window_follows_the_timestamps_granularity() {
        let second = 1_700_000_000_000_000_000_i128;
        let ms = 1_000_000;
        assert!(!settled(second, second + 1_500 * ms));
        assert!(settled(second, second + 2_001 * ms));
        let fine = second + 123_456_789;
        assert!(!settled(fine, fine + 50 * ms));
        assert!(settled(fine, fine + 101 * ms));
    }
}
