//! The sidechain rows of a transcript from the index: what inline (1.0.x) sub-agents are made
//! of, read without scanning the file (`chainlog agents`, agent targets).
//!
//! The `sidechains` table lists the row numbers of a file's `isSidechain` messages (written at
//! catch-up, counted in [`FileState::sidechain_rows`]), so an answer reads only those rows:
//! nothing for a session without inline agents, however large. They are stored as runs, the
//! first row of each the key and its last the value: a sub-agent's transcript, every row of
//! which is a sidechain, is one entry instead of one per message.

use std::path::Path;

use redb::ReadableDatabase;

use crate::chain::MessageRow;
use crate::error::IndexFault;
use crate::error::Result;
use crate::id::IdNames;
use crate::index::db::guard;
use crate::index::db::open::{self, IndexDb};
use crate::index::db::wait;
use crate::index::format::schema::{FileState, ROWS, SIDECHAINS};
use crate::index::read::query::IndexGraph;
use crate::index::write::ingest::Stat;
use crate::index::{Sidecars, read_state};
use crate::transcript::envelope::Flags;

/// The sidechain messages of one transcript.
#[derive(Debug, Clone, Default)]
pub struct SidechainRows {
    /// `(row number, row)` of every sidechain message, in map order.
    pub rows: Vec<(u32, MessageRow)>,
    /// Texts of the file's non-UUID ids.
    pub names: IdNames,
}

impl Sidecars {
    /// The sidechain rows of `transcript` from its index, caught up first; `None` when the
    /// index turned out damaged (after one rebuild).
    pub fn sidechain_rows(&self, transcript: &Path) -> Result<Option<SidechainRows>> {
        let t = transcript.to_path_buf();
        self.bounded(transcript, move |s| s.sidechain_rows_unguarded(&t))
    }

    fn sidechain_rows_unguarded(&self, transcript: &Path) -> Result<Option<SidechainRows>> {
        let db_path = self.db_path(transcript);
        let key = Self::key(transcript);
        let stat = Stat::of(transcript)?;
        // Unchanged since the last catch-up: read-only, no write transaction.
        if let Some(ro) = open::open_read_only(&db_path)
            && let Some(st) = read_state(&ro, &key).filter(|st| stat.unchanged(st, false))
            && let Ok(rows) = read(&ro, &st)
        {
            return Ok(Some(rows));
        }
        let mut db = IndexDb::open(&db_path)?;
        for _ in 0..2 {
            let (_, st) = Self::catch_up_in(&mut db, transcript)?;
            match read(db.db(), &st) {
                Ok(rows) => return Ok(Some(rows)),
                Err(e) if e.is_damage() => db.start_over()?,
                Err(e) => return Err(db.err(e)),
            }
        }
        Ok(None)
    }
}

/// Reads the sidechain rows of an index current for `st`. A row number without its row, a
/// listed row that is not a sidechain, or another count than stored is damage.
fn read(db: &impl ReadableDatabase, st: &FileState) -> Result<SidechainRows, IndexFault> {
    let txn = wait::waiting(|| db.begin_read()).map_err(|e| IndexFault::Storage(e.into()))?;
    let f = st.file;
    let listed = guard::read("sidechains", || txn.open_table(SIDECHAINS))?;
    let runs = guard::read("sidechains", || {
        listed
            .range((f, 0)..=(f, u32::MAX))?
            .map(|item| item.map(|(k, v)| (k.value().1, v.value())))
            .collect::<Result<Vec<(u32, u32)>, redb::StorageError>>()
    })?;
    let mut seqs: Vec<u32> = Vec::new();
    for (first, last) in runs {
        // Runs ascend and do not touch; more rows than counted is damage, not an allocation.
        let fits = seqs.last().is_none_or(|&end| first > end.saturating_add(1))
            && first <= last
            && u64::from(last - first)
                < u64::from(st.sidechain_rows).saturating_sub(seqs.len() as u64);
        if !fits {
            return Err(IndexFault::damaged(
                "sidechains",
                format!("run {first}..={last} overlaps, is reversed or exceeds the count"),
            ));
        }
        seqs.extend(first..=last);
    }
    if seqs.len() as u64 != u64::from(st.sidechain_rows) {
        return Err(IndexFault::damaged(
            "sidechains",
            "fewer or more sidechain rows than counted",
        ));
    }
    let table = guard::read("rows", || txn.open_table(ROWS))?;
    let mut rows = Vec::with_capacity(seqs.len());
    let cache = crate::index::format::row::Cache::default();
    for seq in seqs {
        let row = guard::read("rows", || {
            crate::index::format::row::get_cached(&table, st, seq, &cache)
        })?
        .filter(|r| r.head.flags.has(Flags::SIDECHAIN))
        .ok_or_else(|| {
            IndexFault::damaged("sidechains", format!("row {seq} is not a sidechain row"))
        })?;
        rows.push((seq, row));
    }
    let names = IndexGraph::names(&txn, st)?;
    Ok(SidechainRows { rows, names })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs that overlap, touch, are reversed or hold more rows than the file counts are
    /// damage, found before any row is read.
    #[test]
    fn damaged_runs_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let db = redb::Database::create(tmp.path().join("t.redb")).unwrap();
        let st = FileState {
            file: 3,
            sidechain_rows: 4,
            ..FileState::default()
        };
        for runs in [
            &[(0, 2), (2, 3)][..],
            &[(0, 1), (2, 3)],
            &[(3, 0)],
            &[(0, 4)],
            &[(0, u32::MAX)],
        ] {
            let txn = db.begin_write().unwrap();
            {
                let mut t = txn.open_table(SIDECHAINS).unwrap();
                t.retain(|_, _| false).unwrap();
                for &(first, last) in runs {
                    t.insert((3, first), last).unwrap();
                }
            }
            txn.commit().unwrap();
            let fault = read(&db, &st).err();
            assert!(
                fault.as_ref().is_some_and(IndexFault::is_damage),
                "{runs:?}: {fault:?}"
            );
        }
    }
}
