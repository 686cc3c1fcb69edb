//! The redb index sidecar: one database per project directory, caught up by tailing.
//!
//! # Context
//! The JSONL is the truth; the index is a disposable cache that makes a resume read only the
//! chain it returns. Any index state may be missing, stale, damaged or from another schema
//! version: [`Sidecars`] detects it (file identity, length, prefix fingerprint, schema version,
//! value checksums) and rebuilds, and if the index cannot be used at all it answers from the
//! transcript with the reference loader (slow but right).
//!
//! # Design
//! | module | job |
//! |---|---|
//! | [`schema`](format::schema) | tables, [`format::schema::INDEX_SCHEMA_VERSION`], per-file state |
//! | [`open`](db::open) | opening in redb's multi-writer mode, retries, wipe on damage or version |
//! | [`live`](db::live) | whether a chainlog process has a sidecar open read-write (trusted while it is) |
//! | [`ingest`](write::ingest) | catch-up: verify the prefix, frame and store only new lines |
//! | [`derive`](write::derive) | re-derive the projections with the reference code over stored rows |
//! | [`incremental`](write::incremental) | extend the projections after a plain append, or decline |
//! | [`state`](format::state) | the one encoder and decoder of the derived state; [`IndexFault`](crate::error::IndexFault) |
//! | [`query`](read::query) | the [`Graph`](crate::chain::Graph) of one file read row by row |
//! | [`sidechains`](read::sidechains) | the sidechain rows of one file (inline sub-agents) |
//! | [`view`](read::view) | the materialised resume view: a default resume as one range read |
//! | [`extension`](write::extension) | the view kept current after a plain append, from the new lines |
//! | [`overlay`](read::overlay) | a resume right after a plain append, answered without writing |

pub mod db;
pub mod format;
pub mod read;
pub mod write;

use std::cell::OnceCell;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use redb::{ReadableDatabase, ReadableTableMetadata};

use crate::chain::{
    BadLine, LeafInfo, Projection, Resolution, ResolveOptions, Transcript, Tree, View,
    leaf_report_graph, resolve, resolve_graph,
};
use crate::error::IndexFault;
use crate::error::IngestError;
use crate::error::{Error, Result};
use crate::id::IdNames;
use db::listing::Carried;
use db::open::IndexDb;
use format::schema::{BAD_LINES, FILES, FileState, PROGRESS, ROWS};
use read::query::IndexGraph;
use write::ingest::{CatchUp, Stat};
use write::views::{Walked, fresh_views, mark_stored, walk_views, write_views};

/// Bad-line records an [`Answer`] holds: the first ones, in file order; the others are only
/// counted ([`Answer::bad_line_count`]). A transcript can hold millions of bad lines, and a warm
/// resume must not read them all.
pub const BAD_LINES_KEPT: usize = 100;

/// A catch-up that indexed at least this many bytes compacts the sidecar afterwards.
const COMPACT_AFTER_BYTES: u64 = 8 << 20;

/// A sidecar smaller than this is compacted after a catch-up that indexed a transcript from
/// zero: each commit copies the pages of the last one that it changes, and their old places
/// stay as holes (a project of two 20-message sessions: 110,592 bytes, 73,728 compacted; the
/// bench's real transcripts 76.9 % of their bytes never compacted, 64.1 % with this rule, 68.5 %
/// with a 256 KiB limit; its generated tree 5.4 % / 4.8 % / 5.4 %).
const COMPACT_SMALL_BELOW: u64 = 1 << 20;

/// The same limit for a sidecar this process created for the transcript: only the tables'
/// creation commit came before, and its copied pages are 8–12 KB (a 20-message session's
/// sidecar: 86,016 bytes, 73,728 compacted; a 10 MiB transcript's: 499,712, 491,520), while
/// compacting a 500 KB sidecar cost 0.4 ms of a 14 ms first index.
const COMPACT_CREATED_BELOW: u64 = 256 << 10;

/// Transcripts shorter than this are caught up many to a write transaction by
/// [`Sidecars::catch_up_all`] (a project of 20,000 `claude -p` runs paid a commit each: most of
/// `chainlog index`'s time); longer ones, one each, as a resume catches them up.
const BATCH_FILE_BELOW: u64 = 1 << 20;

/// At most this many transcripts, or [`BATCH_BYTES`] of them, to one write transaction: the
/// pages a transaction dirties stay in memory until it commits.
const BATCH_FILES: usize = 4096;
const BATCH_BYTES: u64 = 64 << 20;

/// Gives back the pages a catch-up freed, when it is worth it: after a large ingest or a
/// re-index (the projections were re-derived), and after a transcript indexed from zero into a
/// small sidecar (not after one indexed from zero into a sidecar created for it, unless small:
/// nothing was freed but the creation's pages). Done by `index` and by a resume that caught up
/// alike. Best effort: another process may hold the sidecar open, and then the space is reused
/// by later writes instead.
fn compact_after(db: &mut IndexDb, done: &CatchUp, st: &FileState) {
    let from_zero = done.bytes > 0 && done.bytes == st.indexed_len;
    let limit = if db.created {
        COMPACT_CREATED_BELOW
    } else {
        COMPACT_SMALL_BELOW
    };
    let small = || std::fs::metadata(&db.path).is_ok_and(|m| m.len() < limit);
    let large = done.bytes >= COMPACT_AFTER_BYTES && !(from_zero && db.created);
    if large || done.reindexed.is_some() || (from_zero && small()) {
        db.compact();
    }
}

/// Where an answer came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The index (caught up first).
    Index,
    /// A full scan of the transcript, and why the index was not used.
    Transcript(String),
}

/// A resolved chain with what is needed to read and print it.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The chain and leaves.
    pub resolution: Resolution,
    /// Texts of non-UUID ids.
    pub names: IdNames,
    /// The first [`BAD_LINES_KEPT`] lines skipped in the transcript or kept with unreadable
    /// fields, in file order, each with its line and byte offset.
    pub bad_lines: Vec<BadLine>,
    /// How many such lines the transcript has in all.
    pub bad_line_count: u64,
    /// Unterminated last line, not read yet: `(offset, len)`.
    pub torn_tail: Option<(u64, u64)>,
    /// Bytes of the transcript the answer covers: up to the end of its last complete line
    /// (a full scan of that prefix gives the same answer).
    pub cursor: u64,
    /// Where the answer came from.
    pub source: Source,
    /// How the conversation of the materialised view ends (its lines were read when it was
    /// stored): `Some` exactly when the answer was read from that view
    /// ([`Answer::materialised`]), `None` when it was walked or scanned.
    pub interrupt: Option<crate::resume::Interrupt>,
    /// The index state a walked answer of the index was computed for (to materialise it).
    pub(crate) state: Option<FileState>,
    /// Lines appended since the index was last caught up, read in memory for this answer
    /// (the index was neither caught up nor written); 0 when the index covered
    /// the transcript.
    pub tail_lines: u64,
}

impl Answer {
    /// Read from the materialised resume view (stored by an earlier resume): one range read,
    /// no walk; extended in memory by the lines appended since when [`Answer::tail_lines`]
    /// is not 0.
    pub fn materialised(&self) -> bool {
        self.interrupt.is_some()
    }
}

/// Transcripts and their index sidecars.
#[derive(Debug, Clone)]
pub(crate) struct Sidecars {
    index_dir: PathBuf,
    /// Sidecars whose lock another process held past [`db::wait::LOCK_WAIT`]: not waited on again.
    busy: Arc<Mutex<HashSet<PathBuf>>>,
    /// Sidecars [`Sidecars::catch_up_all`] created, for [`Sidecars::compact_created`].
    created: Arc<Mutex<HashSet<PathBuf>>>,
}

impl Sidecars {
    /// A store keeping its sidecars in `index_dir`.
    pub fn new(index_dir: impl Into<PathBuf>) -> Sidecars {
        Sidecars {
            index_dir: index_dir.into(),
            busy: Arc::default(),
            created: Arc::default(),
        }
    }

    /// The default sidecar folder: `$XDG_CACHE_HOME/chainlog`, else `~/.cache/chainlog`.
    pub fn default_index_dir() -> PathBuf {
        std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .unwrap_or_else(std::env::temp_dir)
            .join("chainlog")
    }

    /// The folder the sidecars are kept in.
    #[cfg(feature = "sync")]
    pub fn index_dir(&self) -> &Path {
        &self.index_dir
    }

    /// The sidecar that indexes `transcript`: one per project directory (the folder under
    /// `projects/`, or the transcript's folder).
    pub fn db_path(&self, transcript: &Path) -> PathBuf {
        let abs = std::fs::canonicalize(transcript).unwrap_or_else(|_| transcript.to_path_buf());
        self.db_path_of(&abs)
    }

    /// [`Sidecars::db_path`] of a transcript's canonical path.
    fn db_path_of(&self, abs: &Path) -> PathBuf {
        let project = abs
            .ancestors()
            .find(|a| {
                a.parent()
                    .and_then(Path::file_name)
                    .is_some_and(|n| n == "projects")
            })
            .or_else(|| abs.parent())
            .unwrap_or(abs)
            .to_path_buf();
        self.index_dir
            .join(format!("{}.redb", project_slug(&project)))
    }

    /// The full-text search index of a project directory (`chainlog search`), beside the
    /// sidecars.
    #[cfg(feature = "search")]
    pub(crate) fn search_dir(&self, project_dir: &Path) -> PathBuf {
        let abs = std::fs::canonicalize(project_dir).unwrap_or_else(|_| project_dir.to_path_buf());
        self.index_dir.join("search").join(project_slug(&abs))
    }

    pub(crate) fn key(transcript: &Path) -> String {
        std::fs::canonicalize(transcript)
            .unwrap_or_else(|_| transcript.to_path_buf())
            .to_string_lossy()
            .into_owned()
    }

    /// Catches the index of `transcript` up with its new bytes.
    pub fn catch_up(&self, transcript: &Path) -> Result<CatchUp> {
        let t = transcript.to_path_buf();
        self.bounded(transcript, move |s| s.catch_up_unguarded(&t))
    }

    /// Runs an index operation on a worker thread ([`wait`](db::wait)): when it waits on another
    /// process's lock for more than [`db::wait::LOCK_WAIT`] (a stopped process holding the write
    /// transaction), the operation is abandoned with a "busy" [`Error::Index`], and later
    /// operations of this store on the same sidecar fail the same way at once.
    fn bounded<T: Send + 'static>(
        &self,
        transcript: &Path,
        op: impl FnOnce(&Sidecars) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let db_path = self.db_path(transcript);
        let busy = || Error::Index {
            path: db_path.clone(),
            source: IndexFault::Busy {
                waited: db::wait::lock_wait(),
            },
        };
        if self.busy.lock().is_ok_and(|b| b.contains(&db_path)) {
            return Err(busy());
        }
        let me = self.clone();
        if let Some(r) = db::wait::bounded(move || op(&me)) {
            r
        } else {
            if let Ok(mut b) = self.busy.lock() {
                b.insert(db_path.clone());
            }
            Err(busy())
        }
    }

    /// Whether an operation on the sidecar at `db_path` was abandoned as busy (a lock held
    /// past `db::wait::LOCK_WAIT`): later operations of these `Sidecars` skip it.
    pub(crate) fn is_busy(&self, db_path: &Path) -> bool {
        self.busy.lock().is_ok_and(|b| b.contains(db_path))
    }

    /// Remembers the sidecar at `db_path` as busy (see [`Sidecars::is_busy`]).
    pub(crate) fn mark_busy(&self, db_path: &Path) {
        if let Ok(mut b) = self.busy.lock() {
            b.insert(db_path.to_path_buf());
        }
    }

    /// Catches up every transcript of `transcripts`, sidecar by sidecar: one read-only open
    /// finds those that changed, one read-write open catches them up (a transaction each) and
    /// is closed once, so the open and close that a catch-up costs are paid once per project
    /// (`chainlog index`). The results come in the order given; `done` is called after each
    /// transcript, sidecar by sidecar (in the order given when each project's transcripts are
    /// given together, as sorted paths are). A sidecar it creates is not compacted after each
    /// transcript: call [`Sidecars::compact_created`] once everything meant for it is written.
    pub fn catch_up_all(
        &self,
        transcripts: &[PathBuf],
        sessions: write::views::Sessions,
        mut done: impl FnMut(&Path, &Result<CatchUp>),
    ) -> Vec<Result<CatchUp>> {
        let mut out: Vec<Option<Result<CatchUp>>> = transcripts.iter().map(|_| None).collect();
        let (groups, keys) = self.by_sidecar(transcripts);
        for (_, group) in groups {
            let paths: Vec<PathBuf> = group.iter().map(|&i| transcripts[i].clone()).collect();
            let group_keys: Vec<String> = group.iter().map(|&i| keys[i].clone()).collect();
            let first = paths[0].clone();
            let results = self
                .bounded(&first, move |s| {
                    Ok(s.catch_up_group(&paths, &group_keys, sessions))
                })
                .unwrap_or_else(|_busy| {
                    // The sidecar is busy: each transcript says so.
                    group
                        .iter()
                        .map(|&i| self.catch_up(&transcripts[i]))
                        .collect()
                });
            for (&i, r) in group.iter().zip(results) {
                done(&transcripts[i], &r);
                out[i] = Some(r);
            }
        }
        out.into_iter()
            .map(|r| r.expect("every transcript is in a group"))
            .collect()
    }

    /// Compacts the sidecars that [`Sidecars::catch_up_all`] created and that are still smaller than
    /// 1 MiB (a catch-up's limit for a sidecar holding more than one commit), once everything
    /// meant for them is written: `chainlog index` calls it after the catch-ups, the listing
    /// rows and the resume views, each of which committed and left the pages it replaced as
    /// holes (the real transcripts' one-session projects: 100 KiB each, 84 KiB compacted). One
    /// compaction per sidecar instead of one after each of its transcripts and one at the end
    /// (a fresh `chainlog index` of the real three-session project, by hand: 0.6–1.5 ms less of
    /// ~17 ms). Best effort: a sidecar another process holds is left as it is.
    /// Returns how many were compacted.
    pub fn compact_created(&self) -> usize {
        let created: Vec<PathBuf> = self
            .created
            .lock()
            .map(|mut c| c.drain().collect())
            .unwrap_or_default();
        let mut compacted = 0;
        for db_path in created {
            let small = std::fs::metadata(&db_path).is_ok_and(|m| m.len() < COMPACT_SMALL_BELOW);
            if !small || self.is_busy(&db_path) {
                continue;
            }
            let done = db::wait::bounded(move || {
                let mut db = IndexDb::open(&db_path)?;
                db.compact();
                Ok::<_, Error>(())
            });
            compacted += usize::from(matches!(done, Some(Ok(()))));
        }
        compacted
    }

    /// The positions of `transcripts` grouped by sidecar, groups in order of first appearance
    /// (a linear search over the sidecars seen: a `~/.claude` has tens of projects), and each
    /// transcript's key ([`Sidecars::key`]), each folder resolved once for all its transcripts
    /// (a project of 20,000 sessions resolved every component of each path several times).
    fn by_sidecar(&self, transcripts: &[PathBuf]) -> (Vec<(PathBuf, Vec<usize>)>, Vec<String>) {
        let mut folders: HashMap<&Path, PathBuf> = HashMap::new();
        let mut by_db: Vec<(PathBuf, Vec<usize>)> = Vec::new();
        let mut keys = Vec::with_capacity(transcripts.len());
        for (i, t) in transcripts.iter().enumerate() {
            let abs = canonical(t, &mut folders);
            let db = self.db_path_of(&abs);
            keys.push(abs.to_string_lossy().into_owned());
            match by_db.iter_mut().find(|(d, _)| *d == db) {
                Some((_, v)) => v.push(i),
                None => by_db.push((db, vec![i])),
            }
        }
        (by_db, keys)
    }

    /// [`Sidecars::catch_up_all`] for the transcripts of one sidecar.
    fn catch_up_group(
        &self,
        paths: &[PathBuf],
        keys: &[String],
        sessions: write::views::Sessions,
    ) -> Vec<Result<CatchUp>> {
        let Some(first) = paths.first() else {
            return Vec::new();
        };
        let db_path = self.db_path(first);
        let ro = db::open::open_read_only(&db_path);
        let states = ro
            .as_ref()
            .map(|ro| read_states(ro, keys))
            .unwrap_or_default();
        drop(ro);
        let mut lens = vec![None; paths.len()];
        let mut out: Vec<Option<Result<CatchUp>>> = paths
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let stat = match Stat::of(t) {
                    Ok(s) => s,
                    Err(e) => return Some(Err(e)),
                };
                lens[i] = Some(stat.len);
                let st = states.get(i).and_then(Option::as_ref);
                st.is_some_and(|st| stat.unchanged(st, false))
                    .then(|| Ok(CatchUp::default()))
            })
            .collect();
        if out.iter().any(Option::is_none) {
            match IndexDb::open(&db_path) {
                Ok(mut db) => {
                    if db.created
                        && let Ok(mut created) = self.created.lock()
                    {
                        created.insert(db_path.clone());
                    }
                    let todo: Vec<usize> = (0..paths.len()).filter(|&i| out[i].is_none()).collect();
                    let (many, mut alone) = batches(&lens, &todo);
                    let (together, failed) =
                        Self::catch_up_batches(&db, paths, keys, &many, sessions);
                    // The transcripts of a batch that failed: one by one, their views after.
                    let mut retried = Vec::new();
                    for &i in &failed {
                        match Self::catch_up_in(&mut db, &paths[i]) {
                            Ok((d, st)) => retried.push((i, d, st)),
                            Err(e) => out[i] = Some(Err(e)),
                        }
                    }
                    let fresh = fresh_views(paths, keys, &retried, sessions);
                    let stored = write_views(&db, &walk_views(&db, fresh, sessions));
                    mark_stored(
                        &mut retried,
                        keys,
                        &stored.into_iter().map(str::to_owned).collect(),
                    );
                    let mut caught: Vec<(usize, Result<(CatchUp, FileState)>)> = together
                        .into_iter()
                        .chain(retried)
                        .map(|(i, d, st)| (i, Ok((d, st))))
                        .collect();
                    alone.sort_unstable();
                    for i in alone {
                        caught.push((i, Self::catch_up_in(&mut db, &paths[i])));
                    }
                    for (i, r) in caught {
                        out[i] = Some(r.map(|(done, st)| {
                            // A created sidecar waits for `compact_created`.
                            if !db.created {
                                compact_after(&mut db, &done, &st);
                            }
                            done
                        }));
                    }
                }
                Err(_) => {
                    // Each transcript reports the failure itself.
                    for (t, r) in paths.iter().zip(out.iter_mut()) {
                        if r.is_none() {
                            *r = Some(self.catch_up_unguarded(t));
                        }
                    }
                }
            }
        }
        out.into_iter()
            .map(|r| r.expect("every transcript answered"))
            .collect()
    }

    /// Catches up the transcripts of each batch of `batches` (positions in `paths`) in one
    /// write transaction each, extends their stored views as [`Self::catch_up_in`] does, and
    /// stores the views of the sessions (`sessions`) indexed anew: those of a batch are walked
    /// on other threads while the next batch is caught up, and written after it. Returns what
    /// was caught up, and the transcripts of the batches that failed (an unreadable transcript,
    /// damage: the transaction was dropped), to be caught up one by one.
    fn catch_up_batches(
        db: &IndexDb,
        paths: &[PathBuf],
        keys: &[String],
        batches: &[Vec<usize>],
        sessions: write::views::Sessions,
    ) -> (Vec<(usize, CatchUp, FileState)>, Vec<usize>) {
        let (mut done, mut failed) = (Vec::new(), Vec::new());
        let mut stored = std::collections::HashSet::new();
        std::thread::scope(|scope| {
            let mut walking: Option<std::thread::ScopedJoinHandle<'_, Vec<Walked<'_>>>> = None;
            let mut wrote = |h: std::thread::ScopedJoinHandle<'_, Vec<Walked<'_>>>| match h.join() {
                Ok(walked) => {
                    stored.extend(write_views(db, &walked).into_iter().map(str::to_owned));
                }
                Err(panic) => std::panic::resume_unwind(panic),
            };
            for ix in batches {
                let together = db::guard::isolate(|| -> std::result::Result<_, IngestError> {
                    let txn = db.begin_write()?;
                    let mut caught = Vec::with_capacity(ix.len());
                    for &i in ix {
                        caught.push(write::ingest::catch_up(&txn, &keys[i], &paths[i])?);
                    }
                    txn.commit()?;
                    Ok(caught)
                })
                .and_then(std::result::Result::ok);
                let Some(together) = together else {
                    failed.extend_from_slice(ix);
                    continue;
                };
                let batch: Vec<(usize, CatchUp, FileState)> = ix
                    .iter()
                    .zip(together)
                    .map(|(&i, (mut d, st))| {
                        d.batched = true;
                        // Indexed from zero: no view was stored to extend.
                        let from_zero = d.bytes == st.indexed_len;
                        if d.bytes > 0 && d.reindexed.is_none() && !from_zero {
                            d.view = write::extension::extend_view(db, &paths[i], &keys[i], &st);
                        }
                        (i, d, st)
                    })
                    .collect();
                let fresh = fresh_views(paths, keys, &batch, sessions);
                done.extend(batch);
                let next = scope.spawn(move || walk_views(db, fresh, sessions));
                if let Some(h) = walking.replace(next) {
                    wrote(h);
                }
            }
            if let Some(h) = walking {
                wrote(h);
            }
        });
        mark_stored(&mut done, keys, &stored);
        (done, failed)
    }

    fn catch_up_unguarded(&self, transcript: &Path) -> Result<CatchUp> {
        let db_path = self.db_path(transcript);
        let stat = Stat::of(transcript)?;
        if let Some(ro) = db::open::open_read_only(&db_path)
            && read_state(&ro, &Self::key(transcript)).is_some_and(|st| stat.unchanged(&st, false))
        {
            return Ok(CatchUp::default());
        }
        let mut db = IndexDb::open(&db_path)?;
        let (done, st) = Self::catch_up_in(&mut db, transcript)?;
        compact_after(&mut db, &done, &st);
        Ok(done)
    }

    fn catch_up_in(db: &mut IndexDb, transcript: &Path) -> Result<(CatchUp, FileState)> {
        Self::catch_up_with(db, transcript, |_| Ok(()))
    }

    /// [`Self::catch_up_in`], running `first` at the start of the catch-up's write
    /// transaction (of each attempt), so what it writes commits with the catch-up.
    fn catch_up_with(
        db: &mut IndexDb,
        transcript: &Path,
        first: impl Fn(&redb::WriteTransaction) -> std::result::Result<(), redb::Error>,
    ) -> Result<(CatchUp, FileState)> {
        let key = Self::key(transcript);
        let stat = Stat::of(transcript)?;
        // Fast path: nothing changed since the last catch-up (a stat, no write transaction).
        match Self::state(db, &key) {
            Ok(Some(st)) if stat.unchanged(&st, false) => return Ok((CatchUp::default(), st)),
            Ok(_) => {}
            Err(e) if e.is_damage() => db.start_over()?,
            Err(e) => return Err(db.err(e)),
        }
        for attempt in 0..2 {
            // redb panics on some damaged pages, writes included (see `guard`): a catch-up
            // that does found the index damaged.
            let done = db::guard::isolate(|| {
                let txn = db.begin_write().map_err(IngestError::from)?;
                first(&txn)?;
                let done = write::ingest::catch_up(&txn, &key, transcript)?;
                txn.commit()?;
                Ok(done)
            })
            .unwrap_or(Err(IngestError::Damaged));
            match done {
                Ok((mut done, st)) => {
                    if done.bytes > 0 && done.reindexed.is_none() {
                        done.view = write::extension::extend_view(db, transcript, &key, &st);
                    }
                    return Ok((done, st));
                }
                Err(IngestError::Io(e)) => return Err(e),
                Err(IngestError::Db(e)) if attempt > 0 => return Err(db.err(e)),
                Err(IngestError::Damaged) if attempt > 0 => {
                    return Err(db.err(IndexFault::damaged(
                        "rows",
                        "stored rows do not decode after a rebuild",
                    )));
                }
                // Damaged: start this index over.
                Err(_) => db.start_over()?,
            }
        }
        unreachable!("the loop returns")
    }

    /// Stores `ans`, a walked answer of [`read::view::OPTIONS`] whose lines end as `ending` says,
    /// as the materialised view of `transcript` ([`view`](read::view)), if the index still holds the state
    /// it was computed for. A resume that walked stores its answer this way, so the next one
    /// reads it; a catch-up never walks. Best effort: a failure leaves the walk to answer.
    pub(crate) fn store_view(
        &self,
        transcript: &Path,
        ans: &Answer,
        ending: &crate::resume::interrupt::Ending,
    ) -> Result<()> {
        // Only a walked answer of the index carries the state it was computed for.
        let Some(st) = ans.state.clone() else {
            return Ok(());
        };
        let t = transcript.to_path_buf();
        let res = ans.resolution.clone();
        let ending = ending.clone();
        self.bounded(transcript, move |s| {
            let path = s.db_path(&t);
            // redb panics on some damaged pages, writes included (see `guard`), and its close
            // commits the allocator state: the whole store, close included, is isolated, and
            // damage found there starts the sidecar over, as a damaged read does.
            let stored = db::guard::isolate(|| {
                let db = IndexDb::open(&path)?;
                let txn = db.begin_write().map_err(|e| db.err(e))?;
                {
                    let files = txn.open_table(FILES).map_err(|e| db.err(e))?;
                    if write::ingest::file_state(&files, &Self::key(&t))
                        .ok()
                        .flatten()
                        != Some(st.clone())
                    {
                        return Ok(());
                    }
                }
                read::view::store(&txn, &st, &res, &ending).map_err(|e| db.err(e))?;
                txn.commit().map_err(|e| db.err(e))?;
                drop(db);
                Ok(())
            });
            match stored {
                Some(r) => r,
                None => IndexDb::open(&path)?.start_over(),
            }
        })
    }

    fn state(db: &IndexDb, key: &str) -> Result<Option<FileState>, IndexFault> {
        let txn = db.begin_read().map_err(|e| IndexFault::Storage(e.into()))?;
        let files = match db::guard::read("files", || txn.open_table(FILES)) {
            Ok(t) => t,
            Err(IndexFault::Storage(redb::Error::TableDoesNotExist(_))) => return Ok(None),
            Err(e) => return Err(e),
        };
        write::ingest::file_state(&files, key)
    }

    /// Drops what the index knows about `transcript` and indexes it again from zero.
    pub fn rebuild(&self, transcript: &Path) -> Result<CatchUp> {
        let t = transcript.to_path_buf();
        self.bounded(transcript, move |s| s.rebuild_unguarded(&t))
    }

    fn rebuild_unguarded(&self, transcript: &Path) -> Result<CatchUp> {
        let mut db = IndexDb::open(&self.db_path(transcript))?;
        let key = Self::key(transcript);
        if let Err(e) = Self::state(&db, &key) {
            if !e.is_damage() {
                return Err(db.err(e));
            }
            db.start_over()?;
        }
        let txn = db.begin_write().map_err(|e| db.err(e))?;
        let alone = {
            let mut files = txn.open_table(FILES).map_err(|e| db.err(e))?;
            let old = write::ingest::file_state(&files, &key).map_err(|e| db.err(e))?;
            files.remove(key.as_str()).map_err(|e| db.err(e))?;
            let alone = files.is_empty().map_err(|e| db.err(e))?;
            drop(files);
            if let (Some(st), false) = (old, alone) {
                write::ingest::drop_file_rows(&txn, st.file).map_err(|e| db.err(e))?;
            }
            alone
        };
        if alone {
            // The sidecar indexes no other transcript: a new file written from zero (keys in
            // order, nothing to compact) instead of deleting every row and compacting, which
            // cost a third as much as indexing again. The listing rows are carried over, when
            // they read (a cache of a cache: a damaged table is left behind, not an error),
            // in the catch-up's transaction (one commit less).
            let listing =
                db::guard::isolate(|| Carried::read(&txn)).and_then(std::result::Result::ok);
            drop(txn);
            db.recreate()?;
            let (done, st) = Self::catch_up_with(&mut db, transcript, |txn| {
                listing.as_ref().map_or(Ok(()), |l| l.restore(txn))
            })?;
            compact_after(&mut db, &done, &st);
            return Ok(done);
        }
        txn.commit().map_err(|e| db.err(e))?;
        let done = Self::catch_up_in(&mut db, transcript)?.0;
        // Give back the pages freed by the rebuild (best effort: another process may hold
        // the sidecar open, and then the space is reused by later writes instead).
        db.compact();
        Ok(done)
    }

    /// Every leaf of `transcript` with its chain length (`chainlog leaves`), from the index;
    /// `None` when the index turned out damaged.
    pub fn leaf_report(&self, transcript: &Path) -> Result<Option<(Answer, Vec<LeafInfo>)>> {
        self.leaf_report_from(
            transcript,
            ResolveOptions {
                list_leaves: false,
                ..ResolveOptions::default()
            },
        )
    }

    /// [`Sidecars::leaf_report`] with the active leaf chosen by `opts` (a requested leaf).
    pub fn leaf_report_from(
        &self,
        transcript: &Path,
        opts: ResolveOptions,
    ) -> Result<Option<(Answer, Vec<LeafInfo>)>> {
        let t = transcript.to_path_buf();
        self.bounded(transcript, move |s| {
            let transcript = t.as_path();
            // Caught up (never extended in memory): the leaf rows are read from the index next.
            let Some(ans) = s.resolve_indexed_unguarded(transcript, opts, false)? else {
                return Ok(None);
            };
            // The resolve caught the index up: a read-only open reads it (no write, no
            // close commit) unless the sidecar cannot be trusted without its page check.
            let db_path = s.db_path(transcript);
            let key = Self::key(transcript);
            let active = ans.resolution.leaf.map(|(id, _)| id);
            let found = match db::open::open_read_only(&db_path) {
                Some(ro) => leaf_rows(&ro, &key, active),
                None => leaf_rows(IndexDb::open(&db_path)?.db(), &key, active),
            }
            .map_err(|e| Error::Index {
                path: db_path.clone(),
                source: e,
            })?;
            Ok(found.map(|r| (ans, r)))
        })
    }

    /// The materialised resume view of `transcript` as stored, for the state the index holds
    /// (neither caught up first nor checked against the file): `None` when none is stored for
    /// that state or the index cannot be read. `verify` compares it with a full scan.
    pub fn materialised(&self, transcript: &Path) -> Result<Option<Answer>> {
        let Some(ro) = db::open::open_read_only(&self.db_path(transcript)) else {
            return Ok(None);
        };
        let Some(st) = read_state(&ro, &Self::key(transcript)) else {
            return Ok(None);
        };
        let ans = query(&ro, st, transcript, read::view::OPTIONS, true)?;
        Ok(ans.filter(Answer::materialised))
    }

    /// What the index holds for each of `paths`, as it is (neither caught up nor checked
    /// against the file), for `verify`: one read-only open per sidecar, the transcripts read on
    /// every core. `None` where the index holds no state, cannot answer, holds no stored view
    /// or is busy: that transcript is verified on its own.
    pub(crate) fn held_all(&self, paths: &[PathBuf]) -> Vec<Option<Held>> {
        use rayon::prelude::*;
        let mut out: Vec<Option<Held>> = paths.iter().map(|_| None).collect();
        let (groups, keys) = self.by_sidecar(paths);
        for (db_path, group) in groups {
            if self.is_busy(&db_path) {
                continue;
            }
            let items: Vec<(PathBuf, String)> = group
                .iter()
                .map(|&i| (paths[i].clone(), keys[i].clone()))
                .collect();
            let path = db_path.clone();
            let Some(held) = db::wait::bounded(move || {
                let ro = db::open::open_read_only(&path)?;
                Some(
                    items
                        .par_iter()
                        .map(|(t, key)| Held::read(&ro, t, key))
                        .collect::<Vec<_>>(),
                )
            }) else {
                self.mark_busy(&db_path);
                continue;
            };
            for (&i, h) in group.iter().zip(held.into_iter().flatten()) {
                out[i] = h;
            }
        }
        out
    }

    /// The transcripts among `paths` whose index holds no materialised resume view for the
    /// state it has indexed, in order: one read-only open and one read transaction per
    /// sidecar, a look at each view's head. A sidecar that cannot be read answers "none"; a
    /// busy one (a writer stopped mid-commit: the read runs on a bounded worker) is left out.
    pub(crate) fn without_view(&self, paths: &[PathBuf]) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let (groups, all_keys) = self.by_sidecar(paths);
        for (db_path, group) in groups {
            if self.is_busy(&db_path) {
                continue;
            }
            let keys: Vec<String> = group.iter().map(|&i| all_keys[i].clone()).collect();
            let path = db_path.clone();
            let Some(stored) = db::wait::bounded(move || views_stored(&path, &keys)) else {
                self.mark_busy(&db_path);
                continue;
            };
            out.extend(
                group
                    .into_iter()
                    .enumerate()
                    .filter(|(n, _)| !stored.get(*n).copied().unwrap_or(false))
                    .map(|(_, i)| paths[i].clone()),
            );
        }
        out
    }

    /// Which of `lines` (a line's offset and its uuid) of `transcript` are on its default
    /// resume view ([`read::view::OPTIONS`]). Read from the stored view when one is stored
    /// for the file as it is ([`read::view::contains`]: only the blocks whose span of lines
    /// holds one of them); else the file is caught up and the view resolved and stored, as a
    /// resume stores it, so the next question reads it. The flag says whether the stored view
    /// answered.
    #[cfg(feature = "search")]
    pub(crate) fn on_view(
        &self,
        transcript: &Path,
        lines: &[(u64, crate::id::Id)],
    ) -> Result<(Vec<bool>, bool)> {
        let t = transcript.to_path_buf();
        let asked = lines.to_vec();
        let stored = self.bounded(transcript, move |s| {
            let Some(ro) = db::open::open_read_only(&s.db_path(&t)) else {
                return Ok(None);
            };
            let Some(st) = read_state(&ro, &Self::key(&t)) else {
                return Ok(None);
            };
            if !Stat::of(&t)?.unchanged(&st, false) {
                return Ok(None);
            }
            let found = db::wait::waiting(|| ro.begin_read())
                .map_err(redb::Error::from)
                .map_err(IndexFault::Storage)
                .and_then(|txn| {
                    let views = db::guard::read("view", || txn.open_table(format::schema::VIEW))?;
                    read::view::contains(&views, &st, &asked)
                });
            // Damage is found and mended by the resolve below.
            Ok(found.ok().flatten())
        })?;
        if let Some(found) = stored {
            return Ok((found, true));
        }
        // Caught up first: a resolve of a grown file could answer from memory, leaving
        // nothing to store, and every search would resolve it again (a catch-up also
        // settles a state written within the racy window of the file's last write).
        self.catch_up(transcript)?;
        let ans = self.resolve(transcript, read::view::OPTIONS)?;
        if ans.state.is_some()
            && let Ok(ending) = crate::resume::interrupt::Ending::of_lines(
                transcript,
                &ans.resolution.chain,
                &ans.names,
            )
        {
            let _ = self.store_view(transcript, &ans, &ending);
        }
        let on: HashSet<(u64, crate::id::Id)> = ans
            .resolution
            .chain
            .iter()
            .map(|l| (l.pos.offset, l.uuid))
            .collect();
        Ok((lines.iter().map(|l| on.contains(l)).collect(), false))
    }

    /// Resolves the chain of `transcript`, from the index when it can be used.
    pub fn resolve(&self, transcript: &Path, opts: ResolveOptions) -> Result<Answer> {
        match self.resolve_indexed(transcript, opts) {
            Ok(Some(a)) => Ok(a),
            Ok(None) => reference(transcript, opts, "the index was damaged".into()),
            Err(e @ (Error::Io { .. } | Error::UnknownLeaf { .. })) => Err(e),
            Err(e) => reference(transcript, opts, e.to_string()),
        }
    }

    /// The index answer, or `None` when the index turned out damaged (after one rebuild).
    ///
    /// When the transcript did not change since it was indexed, the database is opened
    /// read-only (no write, no fsync); otherwise it is caught up first.
    pub fn resolve_indexed(
        &self,
        transcript: &Path,
        opts: ResolveOptions,
    ) -> Result<Option<Answer>> {
        let t = transcript.to_path_buf();
        self.bounded(transcript, move |s| {
            s.resolve_indexed_unguarded(&t, opts, true)
        })
    }

    /// With `in_memory`, lines appended since the last catch-up may be read in memory
    /// ([`overlay`](read::overlay)) instead of caught up.
    fn resolve_indexed_unguarded(
        &self,
        transcript: &Path,
        opts: ResolveOptions,
        in_memory: bool,
    ) -> Result<Option<Answer>> {
        let db_path = self.db_path(transcript);
        let key = Self::key(transcript);
        let stat = Stat::of(transcript)?;
        if let Some(ro) = db::open::open_read_only(&db_path)
            && let Some(st) = read_state(&ro, &key)
        {
            if stat.unchanged(&st, false) {
                if let Some(a) = query(&ro, st, transcript, opts, true)? {
                    return Ok(Some(a));
                }
            } else if in_memory
                && read::view::serves(&opts)
                && let Some(a) = extended_in_memory(&ro, &st, transcript, &stat)
            {
                return Ok(Some(a));
            }
        }
        let mut db = IndexDb::open(&db_path)?;
        for _ in 0..2 {
            let (done, st) = Self::catch_up_in(&mut db, transcript)?;
            compact_after(&mut db, &done, &st);
            if let Some(a) = query(db.db(), st, transcript, opts, true)? {
                return Ok(Some(a));
            }
            db.start_over()?;
        }
        Ok(None)
    }
}

/// What the index holds for one transcript ([`Sidecars::held_all`]): the walked answers of
/// the resume and the full view, and the stored resume view.
pub(crate) struct Held {
    pub resume: Answer,
    pub full: Answer,
    pub stored: Answer,
}

impl Held {
    fn read(db: &impl ReadableDatabase, transcript: &Path, key: &str) -> Option<Held> {
        let st = read_state(db, key)?;
        let walked = |view| {
            let opts = ResolveOptions {
                leaf: None,
                view,
                ..Default::default()
            };
            query(db, st.clone(), transcript, opts, false)
                .ok()
                .flatten()
        };
        Some(Held {
            resume: walked(View::Resume)?,
            full: walked(View::Full)?,
            stored: query(db, st.clone(), transcript, read::view::OPTIONS, true)
                .ok()
                .flatten()
                .filter(Answer::materialised)?,
        })
    }
}

/// `todo` (positions in `lens`, the transcripts' lengths) cut into batches of short
/// transcripts, up to [`BATCH_FILES`] or [`BATCH_BYTES`] each, and the transcripts to catch up
/// alone: those of [`BATCH_FILE_BELOW`] or more, and those whose size was not read (each
/// reports its error).
fn batches(lens: &[Option<u64>], todo: &[usize]) -> (Vec<Vec<usize>>, Vec<usize>) {
    let (mut many, mut alone) = (Vec::new(), Vec::new());
    let (mut batch, mut bytes) = (Vec::new(), 0u64);
    for &i in todo {
        match lens[i] {
            Some(len) if len < BATCH_FILE_BELOW => {
                if batch.len() == BATCH_FILES || bytes + len > BATCH_BYTES {
                    many.push(std::mem::take(&mut batch));
                    bytes = 0;
                }
                batch.push(i);
                bytes += len;
            }
            _ => alone.push(i),
        }
    }
    if !batch.is_empty() {
        many.push(batch);
    }
    (many, alone)
}

/// The canonical path of `t` ([`Sidecars::key`]), its folder's looked up in or added to
/// `folders`: a transcript that is a link, or whose folder does not resolve, is resolved whole.
fn canonical<'a>(t: &'a Path, folders: &mut HashMap<&'a Path, PathBuf>) -> PathBuf {
    let whole = || std::fs::canonicalize(t).unwrap_or_else(|_| t.to_path_buf());
    let (Some(dir), Some(name)) = (
        t.parent().filter(|d| !d.as_os_str().is_empty()),
        t.file_name(),
    ) else {
        return whole();
    };
    if std::fs::symlink_metadata(t).map_or(true, |m| m.file_type().is_symlink()) {
        return whole();
    }
    let resolved = match folders.get(dir) {
        Some(d) => d.clone(),
        None => match std::fs::canonicalize(dir) {
            Ok(d) => folders.entry(dir).or_insert(d).clone(),
            Err(_) => return whole(),
        },
    };
    resolved.join(name)
}

/// A file name for a project's caches: its folder name (made safe) and a hash of its path.
fn project_slug(project: &Path) -> String {
    let name: String = project
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    let hash = blake3::hash(project.as_os_str().as_encoded_bytes());
    format!("{name}-{}", &hash.to_hex()[..16])
}

/// Every leaf of the file `key` with its chain length (`active`: the chosen leaf); `None` when
/// the index has no state for it or turned out damaged.
fn leaf_rows(
    db: &impl ReadableDatabase,
    key: &str,
    active: Option<crate::id::Id>,
) -> Result<Option<Vec<LeafInfo>>, IndexFault> {
    let Some(st) = read_state(db, key) else {
        return Ok(None);
    };
    let txn = db::wait::waiting(|| db.begin_read()).map_err(|e| IndexFault::Storage(e.into()))?;
    let report = IndexGraph::new(&txn, st).and_then(|g| leaf_report_graph(&g, active));
    match report {
        Ok(r) => Ok(Some(r)),
        Err(e) if e.is_damage() => Ok(None),
        Err(e) => Err(e),
    }
}

/// [`read_state`] of each of `keys`, in one read transaction (empty when it cannot be read).
fn read_states(db: &impl ReadableDatabase, keys: &[String]) -> Vec<Option<FileState>> {
    let Ok(txn) = db::wait::waiting(|| db.begin_read()) else {
        return Vec::new();
    };
    let Ok(files) = db::guard::read("files", || txn.open_table(FILES)) else {
        return Vec::new();
    };
    keys.iter()
        .map(|k| write::ingest::file_state(&files, k).ok().flatten())
        .collect()
}

fn read_state(db: &impl ReadableDatabase, key: &str) -> Option<FileState> {
    let txn = db::wait::waiting(|| db.begin_read()).ok()?;
    let files = db::guard::read("files", || txn.open_table(FILES)).ok()?;
    write::ingest::file_state(&files, key).ok()?
}

/// Answers from an index that is current for `st`; `None` when a stored value is damaged
/// (the caller rebuilds), an error when the storage fails. With `use_view`, an answer the
/// materialised view holds ([`read::view::serves`]) is read from it instead of walked.
fn query(
    db: &impl ReadableDatabase,
    st: FileState,
    transcript: &Path,
    opts: ResolveOptions,
    use_view: bool,
) -> Result<Option<Answer>> {
    let err = |e: IndexFault| Error::Index {
        path: transcript.to_path_buf(),
        source: e,
    };
    let storage = |e: redb::Error| err(IndexFault::Storage(e));
    let txn = db::wait::waiting(|| db.begin_read()).map_err(|e| storage(e.into()))?;
    let f = st.file;
    let rows_st = st.clone();
    let view_st = (use_view && read::view::serves(&opts)).then(|| st.clone());
    let walked_st = read::view::serves(&opts).then(|| st.clone());
    let torn_tail = st.torn_tail;
    let cursor = st.indexed_len;
    let bad_count = st.bad_lines;
    let opened = IndexGraph::names(&txn, &st)
        .and_then(|names| Ok((names, IndexGraph::new(&txn, st)?)))
        .and_then(|(names, graph)| Ok((names, graph, bad_lines(&txn, f, bad_count)?)));
    let (names, graph, bad_lines) = match opened {
        Ok(v) => v,
        Err(e) if e.is_damage() => return Ok(None),
        Err(e) => return Err(err(e)),
    };
    let stored = match &view_st {
        Some(view_st) => match db::guard::read("view", || txn.open_table(format::schema::VIEW))
            .and_then(|t| read::view::load(&t, view_st))
        {
            Ok(stored) => stored,
            Err(e) if e.is_damage() => return Ok(None),
            Err(e) => return Err(err(e)),
        },
        None => None,
    };
    let (resolution, interrupt, state) = if let Some(stored) = stored {
        (stored.resolution, Some(stored.ending.interrupt), None)
    } else {
        let full_rows = OnceCell::new();
        let res = resolve_graph(&graph, opts, &names, || {
            if full_rows.get().is_none() {
                let rows = db::guard::read("rows", || txn.open_table(ROWS))?;
                let progress = db::guard::read("progress", || txn.open_table(PROGRESS))?;
                let _ = full_rows.set(write::derive::load_rows(&rows, &progress, &rows_st, |r| r)?);
            }
            let (rows, progress) = full_rows.get().expect("set above");
            Ok(Tree::from_rows(rows, progress, Projection::Full))
        });
        let res = match res {
            Ok(r) => r,
            Err(e) if e.is_damage() => return Ok(None),
            Err(e) => return Err(err(e)),
        };
        let res = res.map_err(|leaf| Error::UnknownLeaf {
            path: transcript.to_path_buf(),
            leaf,
        })?;
        (res, None, walked_st)
    };
    Ok(Some(Answer {
        resolution,
        names,
        bad_lines,
        bad_line_count: bad_count,
        torn_tail,
        cursor,
        source: Source::Index,
        interrupt,
        state,
        tail_lines: 0,
    }))
}

/// Whether the sidecar at `db_path` holds a view for the indexed state of each of the
/// transcripts `keys` (empty when it cannot be read).
fn views_stored(db_path: &Path, keys: &[String]) -> Vec<bool> {
    let Some(ro) = db::open::open_read_only(db_path) else {
        return Vec::new();
    };
    db::guard::isolate(|| {
        let txn = ro.begin_read().ok()?;
        let files = db::guard::read("files", || txn.open_table(FILES)).ok()?;
        let views = db::guard::read("view", || txn.open_table(format::schema::VIEW)).ok()?;
        Some(
            keys.iter()
                .map(|k| {
                    write::ingest::file_state(&files, k)
                        .ok()
                        .flatten()
                        .is_some_and(|st| read::view::stored_for(&views, &st).unwrap_or(false))
                })
                .collect(),
        )
    })
    .flatten()
    .unwrap_or_default()
}

/// The default resume view of `transcript` from the index as it is (`st`) and the lines
/// appended since, read in memory ([`overlay`](read::overlay)): nothing is written. `None` when the append
/// is not answered that way (the caller catches up).
fn extended_in_memory(
    db: &impl ReadableDatabase,
    st: &FileState,
    transcript: &Path,
    stat: &Stat,
) -> Option<Answer> {
    // redb panics on some damaged pages (see `guard`): a panic here is no answer, and the
    // catch-up that follows finds the damage.
    db::guard::isolate(|| {
        let txn = db.begin_read().ok()?;
        let (resolution, ending, names, summary) =
            read::overlay::answer(&txn, st, transcript, stat)?;
        let bad_lines = bad_lines(&txn, st.file, st.bad_lines).ok()?;
        Some(Answer {
            resolution,
            names,
            bad_lines,
            bad_line_count: st.bad_lines,
            torn_tail: summary.torn_tail,
            cursor: summary.complete_len,
            source: Source::Index,
            interrupt: Some(ending.interrupt),
            state: None,
            tail_lines: summary.lines,
        })
    })
    .flatten()
}

/// The first [`BAD_LINES_KEPT`] skipped lines of file `f` (of `count`); one that does not
/// decode is damage (never left out). The others are not read.
fn bad_lines(txn: &redb::ReadTransaction, f: u32, count: u64) -> Result<Vec<BadLine>, IndexFault> {
    let t = db::guard::read("bad_lines", || txn.open_table(BAD_LINES))?;
    let stored = db::guard::read("bad_lines", || {
        t.range((f, 0)..=(f, u64::MAX))?
            .take(BAD_LINES_KEPT)
            .map(|item| item.map(|(k, v)| (k.value().1, v.value().to_vec())))
            .collect::<Result<Vec<_>, redb::StorageError>>()
    })?;
    if stored.len() as u64 != count.min(BAD_LINES_KEPT as u64) {
        return Err(IndexFault::damaged(
            "bad_lines",
            "fewer or more skipped lines than stored",
        ));
    }
    stored
        .into_iter()
        .map(|(line, v)| {
            format::codec::decode(&format::codec::key_of(f, line), &v).ok_or_else(|| {
                IndexFault::damaged("bad_lines", format!("line {line} does not decode"))
            })
        })
        .collect()
}

impl Sidecars {
    /// The reference answer: a full scan of the transcript (`why` says why it was used).
    pub fn reference(transcript: &Path, opts: ResolveOptions, why: String) -> Result<Answer> {
        reference(transcript, opts, why)
    }
}

fn reference(transcript: &Path, opts: ResolveOptions, why: String) -> Result<Answer> {
    let t = Transcript::open(transcript).map_err(|e| Error::io(transcript, e))?;
    let res = resolve(&t, opts).map_err(|leaf| Error::UnknownLeaf {
        path: transcript.to_path_buf(),
        leaf,
    })?;
    Ok(Answer {
        resolution: res,
        names: t.names.clone(),
        bad_lines: t.bad_lines.iter().take(BAD_LINES_KEPT).cloned().collect(),
        bad_line_count: t.bad_lines.len() as u64,
        torn_tail: t.frame.torn_tail,
        cursor: t.frame.complete_len,
        source: Source::Transcript(why),
        interrupt: None,
        state: None,
        tail_lines: 0,
    })
}
