//! Picker facts cached per transcript, so a listing reads no transcript that did not change.
//!
//! Each session's [`SessionFacts`] is stored in the `facts` table of its project's sidecar
//! with the file's identity, length, modification and status-change times, and when it was
//! read. A listing `stat`s every file and answers from the cache when nothing changed and the
//! times had settled before the read (the racy-mtime rule of [`crate::index::ingest::settled`]); a
//! changed or new file is scanned once and its facts are written back in one transaction per
//! sidecar at [`FactsCache::flush`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use redb::{ReadOnlyTable, ReadableDatabase};

use super::{SessionFacts, scan_session_facts};
use crate::error::Result;
use crate::index::Store;
use crate::index::codec::{decode, encode};
use crate::index::ingest::{Stat, now_ns, settled};
use crate::index::open::{self, IndexDb};
use crate::index::schema::FACTS;

#[derive(serde::Serialize, serde::Deserialize)]
struct Cached {
    stat: Stat,
    /// When the scan that produced `facts` started.
    checked_at_ns: i128,
    facts: SessionFacts,
}

#[derive(Default)]
struct Slot {
    /// The sidecar's `facts` table in one read transaction for the whole listing (a
    /// transaction per lookup costs four lock syscalls).
    table: Option<ReadOnlyTable<&'static str, &'static [u8]>>,
    opened: bool,
    pending: Vec<(String, Vec<u8>)>,
}

/// Facts of many sessions, from the index where it is current.
pub struct FactsCache<'s> {
    store: &'s Store,
    slots: Vec<(PathBuf, Slot)>,
    /// Folder (as given) → (its slot, its canonical path): one `canonicalize` per folder.
    /// Keyed by the raw bytes: hashing a `Path` walks its components.
    dirs: HashMap<std::ffi::OsString, (usize, PathBuf)>,
    /// Transcripts scanned because their cached facts were missing or stale.
    pub scanned: u64,
    /// Facts answered from the cache.
    pub cached: u64,
}

impl<'s> FactsCache<'s> {
    /// A cache over the sidecars of `store`.
    pub fn new(store: &'s Store) -> FactsCache<'s> {
        FactsCache {
            store,
            slots: Vec::new(),
            dirs: HashMap::new(),
            scanned: 0,
            cached: 0,
        }
    }

    /// The facts of the session at `path`: a `stat` and one lookup when it did not change.
    pub fn facts(&mut self, path: &Path) -> Result<SessionFacts> {
        let stat = Stat::of(path)?;
        let parent = path.parent().unwrap_or(Path::new(""));
        let (slot_no, canon_dir) = if let Some((n, d)) = self.dirs.get(parent.as_os_str()) {
            (*n, d.clone())
        } else {
            let db_path = self.store.db_path(path);
            let n = if let Some(n) = self.slots.iter().position(|(p, _)| *p == db_path) {
                n
            } else {
                self.slots.push((db_path, Slot::default()));
                self.slots.len() - 1
            };
            let canon = std::fs::canonicalize(parent).unwrap_or_else(|_| parent.to_path_buf());
            self.dirs
                .insert(parent.as_os_str().to_owned(), (n, canon.clone()));
            (n, canon)
        };
        let key = match path.file_name() {
            Some(name) => canon_dir.join(name).to_string_lossy().into_owned(),
            None => Store::key(path),
        };
        let (db_path, slot) = &mut self.slots[slot_no];
        if !slot.opened {
            slot.opened = true;
            // On a worker: a stopped writer mid-commit must not hold the listing (`wait`).
            let p = db_path.clone();
            slot.table = crate::index::wait::bounded(move || {
                open::open_read_only(&p)
                    .and_then(|db| crate::index::wait::waiting(|| db.begin_read()).ok())
                    .and_then(|txn| {
                        crate::index::guard::read("facts", || txn.open_table(FACTS)).ok()
                    })
            })
            .flatten();
        }
        if let Some(c) = slot.table.as_ref().and_then(|t| lookup(t, &key))
            && c.stat == stat
            && settled(c.stat.mtime_ns, c.checked_at_ns)
        {
            self.cached += 1;
            return Ok(c.facts);
        }
        let checked_at_ns = now_ns();
        let facts = scan_session_facts(path)?;
        self.scanned += 1;
        // Only cache facts of a file that did not change while it was read.
        if Stat::of(path).is_ok_and(|s| s == stat) {
            let value = encode(
                key.as_bytes(),
                &Cached {
                    stat,
                    checked_at_ns,
                    facts: facts.clone(),
                },
            );
            slot.pending.push((key, value));
        }
        Ok(facts)
    }

    /// Writes the facts computed by this cache (one transaction per sidecar). A busy,
    /// damaged or unusable sidecar is skipped: the cache is an optimisation, the next listing
    /// scans again. A sidecar whose write lock another process holds past
    /// `crate::index::wait::LOCK_WAIT` (a stopped process) is skipped too.
    pub fn flush(self) -> Result<()> {
        for (db_path, slot) in self.slots {
            drop(slot.table);
            if slot.pending.is_empty() {
                continue;
            }
            let pending = slot.pending;
            crate::index::wait::bounded(move || write_facts(&db_path, &pending));
        }
        Ok(())
    }
}

fn write_facts(db_path: &Path, pending: &[(String, Vec<u8>)]) {
    let Ok(db) = IndexDb::open(db_path) else {
        return;
    };
    let Ok(txn) = db.begin_write() else {
        return;
    };
    {
        let Ok(mut t) = txn.open_table(FACTS) else {
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

fn lookup(t: &ReadOnlyTable<&'static str, &'static [u8]>, key: &str) -> Option<Cached> {
    let v = crate::index::guard::read("facts", || {
        Ok::<_, redb::StorageError>(t.get(key)?.map(|v| v.value().to_vec()))
    })
    .ok()??;
    decode(key.as_bytes(), &v)
}
