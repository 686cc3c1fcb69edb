//! The listing table: what `ls` shows of each session, kept per transcript so a listing reads
//! no transcript that did not change.
//!
//! Each session's row in the `listing` table of its project's sidecar holds the file's
//! identity, length, modification and status-change times, when it was read, and the
//! [`SessionFacts`] `ls` prints and joins (see [`Row`]). A listing reads every row of a
//! sidecar with one range scan, `stat`s every file and answers from the row when nothing
//! changed and the times had settled before the read (the racy-mtime rule of
//! [`crate::index::ingest::settled`]); a changed or new file is scanned once and its row is
//! written back in one transaction per sidecar at [`FactsCache::flush`]. `chainlog index`
//! fills the rows the same way ([`crate::Store::prepare_listing`]), so the first `ls` after it
//! reads no transcript. Title and prefix lookups (`target`), `pick` and the writers read the
//! same rows through this cache: there is one way to compute a session's facts.
//!
//! Many files at once ([`FactsCache::prefetch`]) scan the changed ones on a few threads.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata};

use super::list::FactsSource;
use super::{SessionFacts, scan_session_facts};
use crate::error::Result;
use crate::index::Store;
use crate::index::codec::{tag, untag};
use crate::index::ingest::{Stat, now_ns, settled};
use crate::index::open::{self, IndexDb};
use crate::index::schema::LISTING;

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

#[derive(Default)]
struct Slot {
    /// Every row of the sidecar, read with one range scan when the slot is first used.
    rows: HashMap<String, Box<[u8]>>,
    opened: bool,
    pending: Vec<(String, Vec<u8>)>,
}

/// What a row says about a file.
enum Probe {
    /// The row is current.
    Hit(SessionFacts),
    /// No current row: scan the file.
    Miss {
        stat: Stat,
        key: String,
        slot: usize,
    },
}

/// Facts of many sessions, from the listing table where it is current.
pub struct FactsCache<'s> {
    store: &'s Store,
    slots: Vec<(PathBuf, Slot)>,
    /// Folder (as given) → (its slot, its canonical path): one `canonicalize` per folder.
    /// Keyed by the raw bytes: hashing a `Path` walks its components.
    dirs: HashMap<OsString, (usize, PathBuf)>,
    /// Answers computed by [`FactsCache::prefetch`], taken by [`FactsCache::facts`].
    ready: HashMap<OsString, Result<SessionFacts>>,
    /// Transcripts scanned because their row was missing or stale.
    pub scanned: u64,
    /// Facts answered from the listing table.
    pub cached: u64,
}

impl<'s> FactsCache<'s> {
    /// A cache over the sidecars of `store`.
    pub fn new(store: &'s Store) -> FactsCache<'s> {
        FactsCache {
            store,
            slots: Vec::new(),
            dirs: HashMap::new(),
            ready: HashMap::new(),
            scanned: 0,
            cached: 0,
        }
    }

    /// The facts of the session at `path`: a `stat` and a row of the range scan when it did
    /// not change.
    pub fn facts(&mut self, path: &Path) -> Result<SessionFacts> {
        if let Some(r) = self.ready.remove(path.as_os_str()) {
            return r;
        }
        match self.probe(path)? {
            Probe::Hit(f) => {
                self.cached += 1;
                Ok(f)
            }
            Probe::Miss { stat, key, slot } => {
                let (facts, checked_at_ns) = scan(path, stat);
                self.record(slot, key, stat, checked_at_ns, facts)
            }
        }
    }

    /// Answers `paths` ahead of [`FactsCache::facts`]: the files whose row is missing or stale
    /// are scanned on up to `available_parallelism` threads. Errors are left for `facts` to
    /// report.
    pub fn prefetch(&mut self, paths: &[PathBuf]) {
        let mut misses = Vec::new();
        for path in paths {
            match self.probe(path) {
                Ok(Probe::Hit(f)) => {
                    self.cached += 1;
                    self.ready.insert(path.as_os_str().to_owned(), Ok(f));
                }
                Ok(Probe::Miss { stat, key, slot }) => misses.push((path, stat, key, slot)),
                Err(_) => {}
            }
        }
        let threads = std::thread::available_parallelism()
            .map_or(1, std::num::NonZero::get)
            .min(misses.len().div_ceil(4))
            .max(1);
        let scanned: Vec<(Result<SessionFacts>, Option<i128>)> = if threads == 1 {
            misses.iter().map(|(p, s, _, _)| scan(p, *s)).collect()
        } else {
            let per = misses.len().div_ceil(threads);
            std::thread::scope(|sc| {
                let handles: Vec<_> = misses
                    .chunks(per)
                    .map(|chunk| {
                        sc.spawn(move || {
                            chunk
                                .iter()
                                .map(|(p, s, _, _)| scan(p, *s))
                                .collect::<Vec<_>>()
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                    .collect()
            })
        };
        for ((path, stat, key, slot), (facts, checked_at_ns)) in misses.into_iter().zip(scanned) {
            let r = self.record(slot, key, stat, checked_at_ns, facts);
            self.ready.insert(path.as_os_str().to_owned(), r);
        }
    }

    fn probe(&mut self, path: &Path) -> Result<Probe> {
        let stat = Stat::of(path)?;
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
            None => Store::key(path),
        };
        let (db_path, slot) = &mut self.slots[slot_no];
        if !slot.opened {
            slot.opened = true;
            // On a worker: a stopped writer mid-commit must not hold the listing (`wait`).
            let p = db_path.clone();
            slot.rows = crate::index::wait::bounded(move || read_rows(&p))
                .flatten()
                .unwrap_or_default();
        }
        if let Some(bytes) = slot.rows.get(&key)
            && let Some((row, facts)) = Row::header(&key, bytes)
            && row.stat == stat
            && settled(row.stat.mtime_ns, row.checked_at_ns)
            && let Ok(facts) = rmp_serde::from_slice::<SessionFacts>(facts)
        {
            return Ok(Probe::Hit(facts));
        }
        Ok(Probe::Miss {
            stat,
            key,
            slot: slot_no,
        })
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
    /// `crate::index::wait::LOCK_WAIT` (a stopped process) is skipped too.
    pub fn flush(self) -> Result<()> {
        for (db_path, slot) in self.slots {
            if slot.pending.is_empty() {
                continue;
            }
            let pending = slot.pending;
            crate::index::wait::bounded(move || write_rows(&db_path, &pending));
        }
        Ok(())
    }
}

impl FactsSource for FactsCache<'_> {
    fn facts(&mut self, path: &Path) -> Result<SessionFacts> {
        FactsCache::facts(self, path)
    }

    fn prefetch(&mut self, paths: &[PathBuf]) {
        FactsCache::prefetch(self, paths);
    }
}

/// Scans `path` (whose stat was `stat`): its facts, and when the scan started if the file
/// did not change while it was read (`None`: do not keep the answer).
fn scan(path: &Path, stat: Stat) -> (Result<SessionFacts>, Option<i128>) {
    let checked_at_ns = now_ns();
    let facts = scan_session_facts(path);
    let same = facts.is_ok() && Stat::of(path).is_ok_and(|s| s == stat);
    (facts, same.then_some(checked_at_ns))
}

/// Every row of a sidecar's `listing` table: one read transaction, one range scan.
fn read_rows(db_path: &Path) -> Option<HashMap<String, Box<[u8]>>> {
    let db = open::open_read_only(db_path)?;
    let txn = crate::index::wait::waiting(|| db.begin_read()).ok()?;
    crate::index::guard::read("listing", || {
        let t = txn.open_table(LISTING)?;
        let mut rows = HashMap::with_capacity(usize::try_from(t.len()?).unwrap_or(0));
        for entry in t.iter()? {
            let (k, v) = entry?;
            rows.insert(k.value().to_owned(), Box::from(v.value()));
        }
        Ok::<_, redb::Error>(rows)
    })
    .ok()
}

fn write_rows(db_path: &Path, pending: &[(String, Vec<u8>)]) {
    let Ok(db) = IndexDb::open(db_path) else {
        return;
    };
    let Ok(txn) = db.begin_write() else {
        return;
    };
    {
        let Ok(mut t) = txn.open_table(LISTING) else {
            return;
        };
        for (k, v) in pending {
            if t.insert(k.as_str(), v.as_slice()).is_err() {
                return;
            }
        }
    }
    let _ = txn.commit();
}
