//! The listing table: what `ls` shows of each session, kept per transcript so a listing reads
//! no transcript that did not change.
//!
//! Each session's row in the `listing` table of its project's sidecar holds the file's
//! identity, length, modification and status-change times, when it was read, and the
//! [`SessionFacts`] `ls` prints and joins (see [`Row`]). A listing reads every row of a
//! sidecar with one range scan, `stat`s every file and answers from the row when nothing
//! changed and the times had settled before the read (the racy-mtime rule of
//! [`crate::index::write::ingest::settled`]); a changed or new file is scanned once and its row is
//! written back in one transaction per sidecar at [`FactsCache::flush`]. `chainlog index`
//! fills the rows the same way ([`crate::Store::prepare_listing`]), so the first `ls` after it
//! reads no transcript. Title and prefix lookups (`target`), `pick` and the writers read the
//! same rows through this cache: there is one way to compute a session's facts.
//!
//! Many files at once ([`FactsCache::facts_all`]) scan the changed ones on a few threads.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use redb::ReadOnlyTable;

use super::facts::facts_of_bytes;
use super::list::FactsSource;
use super::{SessionFacts, scan_session_facts};
use crate::error::Result;
use crate::index::Sidecars;
use crate::index::db::listing::{Rows, open_table, read_rows, write_rows};
use crate::index::format::codec::{tag, untag};
use crate::index::write::ingest::{Stat, now_ns, settled};
use crate::index::write::views::WholeRead;

/// A `listing` row: a fixed header (the stat the facts were computed for and when the file
/// was read: [`HEADER`] bytes, little-endian), then the facts (rmp-serde, positional), then
/// the checksum over the value and its key (`codec::tag`).
struct Row {
    stat: Stat,
    /// When the scan that produced the facts started.
    checked_at_ns: i128,
}

/// Bytes of a row's header: dev, ino, len (u64), mtime, ctime, checked-at (i128).
const HEADER: usize = 3 * 8 + 3 * 16;

impl Row {
    fn encode(&self, key: &str, facts: &SessionFacts) -> Vec<u8> {
        let mut v = Vec::with_capacity(HEADER + 512);
        v.extend_from_slice(&self.stat.dev.to_le_bytes());
        v.extend_from_slice(&self.stat.ino.to_le_bytes());
        v.extend_from_slice(&self.stat.len.to_le_bytes());
        v.extend_from_slice(&self.stat.mtime_ns.to_le_bytes());
        v.extend_from_slice(&self.stat.ctime_ns.to_le_bytes());
        v.extend_from_slice(&self.checked_at_ns.to_le_bytes());
        rmp_serde::encode::write(&mut v, facts).expect("facts always serialise");
        tag(key.as_bytes(), v)
    }

    /// The header and the facts' bytes of a stored value; `None` when the checksum is wrong.
    fn header<'a>(key: &str, bytes: &'a [u8]) -> Option<(Row, &'a [u8])> {
        let body = untag(key.as_bytes(), bytes)?;
        let (h, facts) = body.split_at_checked(HEADER)?;
        let u = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().unwrap_or_default());
        let w = |i: usize| i128::from_le_bytes(h[i..i + 16].try_into().unwrap_or_default());
        Some((
            Row {
                stat: Stat {
                    dev: u(0),
                    ino: u(8),
                    len: u(16),
                    mtime_ns: w(24),
                    ctime_ns: w(40),
                },
                checked_at_ns: w(56),
            },
            facts,
        ))
    }
}

/// The listing row of a session read whole by a catch-up of many
/// ([`crate::index::write::views`]): its facts from that read, for the stat it had; `None`
/// when they cannot be computed (the listing scans it and says why).
pub(crate) fn row_of_whole_read(read: &WholeRead<'_>) -> Option<Vec<u8>> {
    let facts = facts_of_bytes(read.path, read.transcript, read.bytes, read.meta).ok()?;
    let row = Row {
        stat: Stat::from_meta(read.meta),
        checked_at_ns: read.checked_at_ns,
    };
    Some(row.encode(read.key, &facts))
}

#[derive(Default)]
struct Slot {
    /// Every row of the sidecar in key order, read with one range scan when many files of
    /// it are asked for at once ([`FactsCache::facts_all`]).
    rows: Option<Rows>,
    /// The sidecar's `listing` table in one read transaction, for single lookups
    /// ([`FactsCache::facts`] before any `facts_all`).
    table: Option<ReadOnlyTable<&'static str, &'static [u8]>>,
    table_opened: bool,
    pending: Vec<(String, Vec<u8>)>,
}

/// What a row says about a file.
#[expect(
    clippy::large_enum_variant,
    reason = "a hit is the common case and is moved once; boxing it costs an allocation per row"
)]
enum Probe {
    /// The row is current.
    Hit(SessionFacts),
    /// No current row: scan the file.
    Miss { stat: Stat, key: String },
}

/// Facts of many sessions, from the listing table where it is current.
pub struct FactsCache<'s> {
    store: &'s Sidecars,
    slots: Vec<(PathBuf, Slot)>,
    /// Folder (as given) → (its slot, its canonical path): one `canonicalize` per folder.
    /// Keyed by the raw bytes: hashing a `Path` walks its components.
    dirs: HashMap<OsString, (usize, PathBuf)>,
    /// Transcripts scanned because their row was missing or stale.
    pub scanned: u64,
    /// Facts answered from the listing table.
    pub cached: u64,
}

impl<'s> FactsCache<'s> {
    /// A cache over the sidecars of `store`.
    pub(crate) fn new(store: &'s Sidecars) -> FactsCache<'s> {
        FactsCache {
            store,
            slots: Vec::new(),
            dirs: HashMap::new(),
            scanned: 0,
            cached: 0,
        }
    }

    /// The facts of the session at `path`: a `stat` and a row of the range scan when it did
    /// not change.
    pub fn facts(&mut self, path: &Path) -> Result<SessionFacts> {
        let (slot, key) = self.locate(path);
        let probed = {
            let (db_path, s) = &mut self.slots[slot];
            if let Some(rows) = &s.rows {
                let at = rows.find(&key, 0);
                probe(rows, at, path, key)
            } else {
                if !s.table_opened {
                    s.table_opened = true;
                    // On a worker: a stopped writer mid-commit must not hold the listing.
                    if !self.store.is_busy(db_path) {
                        let p = db_path.clone();
                        match crate::index::db::wait::bounded(move || open_table(&p)) {
                            Some(t) => s.table = t,
                            None => self.store.mark_busy(db_path),
                        }
                    }
                }
                probe_one(s.table.as_ref(), path, key)
            }
        };
        match probed? {
            Probe::Hit(f) => {
                self.cached += 1;
                Ok(f)
            }
            Probe::Miss { stat, key } => {
                let (facts, checked_at_ns) = scan(path, stat);
                self.record(slot, key, stat, checked_at_ns, facts)
            }
        }
    }

    /// The facts of each of `paths`, in order. The files are checked against their rows on
    /// up to `available_parallelism` threads, and those whose row is missing or stale are
    /// scanned likewise.
    pub fn facts_all(&mut self, paths: &[PathBuf]) -> Vec<Result<SessionFacts>> {
        let keyed: Vec<(usize, String)> = paths.iter().map(|p| self.locate(p)).collect();
        // The files are `stat`ed on rayon's threads while the rows are read (each sidecar's
        // on an index worker): the two do not wait on each other.
        let stats = std::thread::scope(|sc| {
            let stats =
                sc.spawn(|| par_map(paths.iter().collect(), 256, |p: &PathBuf| Stat::of(p)));
            let mut loaded: Vec<usize> = keyed.iter().map(|(slot, _)| *slot).collect();
            loaded.sort_unstable();
            loaded.dedup();
            for slot in loaded {
                self.load_rows(slot);
            }
            stats
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
        // The row of each file is found here, in order (the next row is usually the one),
        // and checked on the threads.
        let mut next = 0;
        let located: Vec<_> = paths
            .iter()
            .zip(keyed)
            .zip(stats)
            .map(|((p, (slot, key)), stat)| {
                let at = self.slots[slot]
                    .1
                    .rows
                    .as_ref()
                    .and_then(|r| r.find(&key, next));
                next = at.map_or(0, |i| i + 1);
                (p, slot, key, at, stat)
            })
            .collect();
        let slots = &self.slots;
        let empty = Rows::default();
        let probed = par_map(located, 256, |(path, slot, key, at, stat)| {
            let rows = slots[slot].1.rows.as_ref().unwrap_or(&empty);
            (slot, path, stat.map(|stat| check(rows, at, stat, key)))
        });
        // The answers in place, a scanned file's filled in after its scan (facts are hundreds
        // of bytes: moved once).
        let mut out: Vec<Result<SessionFacts>> = Vec::with_capacity(paths.len());
        let mut misses = Vec::new();
        for (i, (slot, path, probe)) in probed.into_iter().enumerate() {
            out.push(match probe {
                Ok(Probe::Hit(f)) => {
                    self.cached += 1;
                    Ok(f)
                }
                Ok(Probe::Miss { stat, key }) => {
                    misses.push((i, path, stat, key, slot));
                    Ok(SessionFacts::default())
                }
                Err(e) => Err(e),
            });
        }
        let scanned = par_map(misses, 4, |(i, path, stat, key, slot)| {
            let (facts, checked_at_ns) = scan(path, stat);
            (i, stat, key, slot, facts, checked_at_ns)
        });
        for (i, stat, key, slot, facts, checked_at_ns) in scanned {
            out[i] = self.record(slot, key, stat, checked_at_ns, facts);
        }
        out
    }

    /// The slot of `path`'s sidecar (its rows read on first use) and the key of its row.
    fn locate(&mut self, path: &Path) -> (usize, String) {
        let parent = path.parent().unwrap_or(Path::new(""));
        let slot_no = if let Some((n, _)) = self.dirs.get(parent.as_os_str()) {
            *n
        } else {
            let db_path = self.store.db_path(path);
            let n = if let Some(n) = self.slots.iter().position(|(p, _)| *p == db_path) {
                n
            } else {
                self.slots.push((db_path, Slot::default()));
                self.slots.len() - 1
            };
            let canon = std::fs::canonicalize(parent).unwrap_or_else(|_| parent.to_path_buf());
            self.dirs.insert(parent.as_os_str().to_owned(), (n, canon));
            n
        };
        let canon_dir = &self.dirs[parent.as_os_str()].1;
        let key = match path.file_name() {
            Some(name) => canon_dir.join(name).to_string_lossy().into_owned(),
            None => Sidecars::key(path),
        };
        (slot_no, key)
    }

    /// Reads every row of the slot's sidecar (once).
    fn load_rows(&mut self, slot: usize) {
        let (db_path, s) = &mut self.slots[slot];
        if s.rows.is_none() {
            // On a worker: a stopped writer mid-commit must not hold the listing (`wait`); a
            // sidecar found busy is skipped by this store's later operations.
            let rows = if self.store.is_busy(db_path) {
                None
            } else {
                let p = db_path.clone();
                let r = crate::index::db::wait::bounded(move || read_rows(&p));
                if r.is_none() {
                    self.store.mark_busy(db_path);
                }
                r.flatten()
            };
            s.rows = Some(rows.unwrap_or_default());
        }
    }

    /// Counts a scan and queues its row (only facts of a file that did not change while it
    /// was read are kept).
    fn record(
        &mut self,
        slot: usize,
        key: String,
        stat: Stat,
        checked_at_ns: Option<i128>,
        facts: Result<SessionFacts>,
    ) -> Result<SessionFacts> {
        let facts = facts?;
        self.scanned += 1;
        if let Some(checked_at_ns) = checked_at_ns {
            let value = Row {
                stat,
                checked_at_ns,
            }
            .encode(&key, &facts);
            self.slots[slot].1.pending.push((key, value));
        }
        Ok(facts)
    }

    /// Writes the rows computed by this cache (one transaction per sidecar). A busy,
    /// damaged or unusable sidecar is skipped: the table is an optimisation, the next listing
    /// scans again. A sidecar whose write lock another process holds past
    /// `crate::index::db::wait::LOCK_WAIT` (a stopped process) is skipped too.
    pub fn flush(self) -> Result<()> {
        for (db_path, slot) in self.slots {
            drop(slot.table);
            if slot.pending.is_empty() || self.store.is_busy(&db_path) {
                continue;
            }
            let pending = slot.pending;
            let p = db_path.clone();
            if crate::index::db::wait::bounded(move || write_rows(&p, &pending)).is_none() {
                self.store.mark_busy(&db_path);
            }
        }
        Ok(())
    }
}

impl FactsSource for FactsCache<'_> {
    fn facts(&mut self, path: &Path) -> Result<SessionFacts> {
        FactsCache::facts(self, path)
    }

    fn facts_all(&mut self, paths: &[PathBuf]) -> Vec<Result<SessionFacts>> {
        FactsCache::facts_all(self, paths)
    }
}

/// Stats `path` and checks its row, the row `at` of `rows` (found by [`Rows::find`]).
fn probe(rows: &Rows, at: Option<usize>, path: &Path, key: String) -> Result<Probe> {
    Ok(check(rows, at, Stat::of(path)?, key))
}

/// Checks the row `at` of `rows` against the file's `stat`.
fn check(rows: &Rows, at: Option<usize>, stat: Stat, key: String) -> Probe {
    if let Some(at) = at
        && let Some(facts) = current(&key, rows.value(at), stat)
    {
        return Probe::Hit(facts);
    }
    Probe::Miss { stat, key }
}

/// Stats `path` and checks its row with one lookup in `table`.
fn probe_one(
    table: Option<&ReadOnlyTable<&'static str, &'static [u8]>>,
    path: &Path,
    key: String,
) -> Result<Probe> {
    let stat = Stat::of(path)?;
    let bytes = table.and_then(|t| {
        crate::index::db::guard::read("listing", || {
            Ok::<_, redb::StorageError>(t.get(key.as_str())?.map(|v| v.value().to_vec()))
        })
        .ok()
        .flatten()
    });
    if let Some(bytes) = bytes
        && let Some(facts) = current(&key, &bytes, stat)
    {
        return Ok(Probe::Hit(facts));
    }
    Ok(Probe::Miss { stat, key })
}

/// The facts of a row stored under `key`, if it is intact and current for `stat`.
fn current(key: &str, bytes: &[u8], stat: Stat) -> Option<SessionFacts> {
    let (row, facts) = Row::header(key, bytes)?;
    if row.stat != stat || !settled(row.stat.mtime_ns, row.checked_at_ns) {
        return None;
    }
    rmp_serde::from_slice(facts).ok()
}

/// `f` over `items` on rayon's threads, in order; at least `min_per_thread` items per task,
/// so a short list stays on one thread.
fn par_map<T: Send, R: Send>(
    items: Vec<T>,
    min_per_thread: usize,
    f: impl Fn(T) -> R + Sync + Send,
) -> Vec<R> {
    use rayon::prelude::*;
    items
        .into_par_iter()
        .with_min_len(min_per_thread.max(1))
        .map(f)
        .collect()
}

/// Scans `path` (whose stat was `stat`): its facts, and when the scan started if the file
/// did not change while it was read (`None`: do not keep the answer).
fn scan(path: &Path, stat: Stat) -> (Result<SessionFacts>, Option<i128>) {
    let checked_at_ns = now_ns();
    let facts = scan_session_facts(path);
    let same = facts.is_ok() && Stat::of(path).is_ok_and(|s| s == stat);
    (facts, same.then_some(checked_at_ns))
}
