//! Picker facts cached per transcript, so a listing reads no transcript that did not change.
//!
//! Each session's [`SessionFacts`] is stored in the `facts` table of its project's sidecar
//! with the file's identity, length and modification time. A listing `stat`s every file and
//! answers from the cache when nothing changed; a changed or new file is scanned once and its
//! facts are written back in one transaction per sidecar at [`FactsCache::flush`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use redb::{ReadOnlyTable, ReadableDatabase};

use super::Store;
use super::codec::{decode, encode};
use super::ingest::Stat;
use super::open::{self, IndexDb};
use super::schema::FACTS;
use crate::catalog::{SessionFacts, scan_session_facts};
use crate::error::Result;

#[derive(serde::Serialize, serde::Deserialize)]
struct Cached {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
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
            slot.table = open::open_read_only(db_path)
                .and_then(|db| db.begin_read().ok())
                .and_then(|txn| txn.open_table(FACTS).ok());
        }
        if let Some(c) = slot.table.as_ref().and_then(|t| lookup(t, &key))
            && (c.dev, c.ino, c.len, c.mtime_ns) == (stat.dev, stat.ino, stat.len, stat.mtime_ns)
        {
            self.cached += 1;
            return Ok(c.facts);
        }
        let facts = scan_session_facts(path)?;
        self.scanned += 1;
        // Only cache facts of a file that did not change while it was read.
        if Stat::of(path).is_ok_and(|s| {
            (s.dev, s.ino, s.len, s.mtime_ns) == (stat.dev, stat.ino, stat.len, stat.mtime_ns)
        }) {
            let value = encode(&Cached {
                dev: stat.dev,
                ino: stat.ino,
                len: stat.len,
                mtime_ns: stat.mtime_ns,
                facts: facts.clone(),
            });
            slot.pending.push((key, value));
        }
        Ok(facts)
    }

    /// Writes the facts computed by this cache (one transaction per sidecar). A busy or
    /// damaged sidecar is skipped: the cache is an optimisation, the next listing scans again.
    pub fn flush(self) -> Result<()> {
        for (db_path, slot) in self.slots {
            drop(slot.table);
            if slot.pending.is_empty() {
                continue;
            }
            let Ok(db) = IndexDb::open(&db_path) else {
                continue;
            };
            let Ok(txn) = db.db().begin_write() else {
                continue;
            };
            {
                let Ok(mut t) = txn.open_table(FACTS) else {
                    continue;
                };
                for (k, v) in &slot.pending {
                    if t.insert(k.as_str(), v.as_slice()).is_err() {
                        break;
                    }
                }
            }
            let _ = txn.commit();
        }
        Ok(())
    }
}

fn lookup(t: &ReadOnlyTable<&'static str, &'static [u8]>, key: &str) -> Option<Cached> {
    let v = t.get(key).ok()??;
    decode(v.value())
}
