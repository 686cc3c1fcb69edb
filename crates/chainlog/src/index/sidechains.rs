//! The sidechain rows of a transcript from the index: what inline (1.0.x) sub-agents are made
//! of, read without scanning the file (`chainlog agents`, agent targets).
//!
//! The `sidechains` table lists the row numbers of a file's `isSidechain` messages (written at
//! catch-up, counted in [`FileState::sidechain_rows`]), so an answer reads only those rows:
//! nothing for a session without inline agents, however large. They are stored as runs, the
//! first row of each the key and its last the value: a sub-agent's transcript, every row of
//! which is a sidechain, is one entry instead of one per message.

use std::path::Path;

use redb::{ReadableDatabase, ReadableTable};

use super::guard;
use super::ingest::Stat;
use super::open::{self, IndexDb};
use super::query::IndexGraph;
use super::schema::{FileState, ROWS, SIDECHAINS};
use super::{Store, read_state, wait};
use crate::chain::MessageRow;
use crate::error::IndexFault;
use crate::error::Result;
use crate::id::IdNames;
use crate::transcript::envelope::Flags;

/// The sidechain messages of one transcript.
#[derive(Debug, Clone, Default)]
pub struct SidechainRows {
    /// `(row number, row)` of every sidechain message, in map order.
    pub rows: Vec<(u32, MessageRow)>,
    /// Texts of the file's non-UUID ids.
    pub names: IdNames,
}

impl Store {
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

/// The `sidechains` table, open for writing: runs of rows, `(file, first) → last`.
pub(super) type Runs<'t> = redb::Table<'t, (u32, u32), u32>;

/// The run of file `f` that starts at or before `seq`, as `(first, last)`.
fn run_before(t: &Runs<'_>, f: u32, seq: u32) -> Result<Option<(u32, u32)>, redb::StorageError> {
    Ok(t.range((f, 0)..=(f, seq))?
        .next_back()
        .transpose()?
        .map(|(k, v)| (k.value().1, v.value())))
}

/// Lists row `seq` of file `f` as a sidechain row, joining the runs beside it; `false` when
/// it was listed already.
pub(super) fn add(t: &mut Runs<'_>, f: u32, seq: u32) -> Result<bool, redb::StorageError> {
    let before = run_before(t, f, seq)?;
    if before.is_some_and(|(_, last)| last >= seq) {
        return Ok(false);
    }
    let first = match before {
        Some((first, last)) if last.checked_add(1) == Some(seq) => first,
        _ => seq,
    };
    let last = match seq.checked_add(1) {
        Some(next) => t.remove((f, next))?.map_or(seq, |v| v.value()),
        None => seq,
    };
    t.insert((f, first), last)?;
    Ok(true)
}

/// Unlists row `seq` of file `f`, splitting its run; `false` when it was not listed.
pub(super) fn remove(t: &mut Runs<'_>, f: u32, seq: u32) -> Result<bool, redb::StorageError> {
    let Some((first, last)) = run_before(t, f, seq)?.filter(|&(_, last)| last >= seq) else {
        return Ok(false);
    };
    t.remove((f, first))?;
    if first < seq {
        t.insert((f, first), seq - 1)?;
    }
    if seq < last {
        t.insert((f, seq + 1), last)?;
    }
    Ok(true)
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
    let cache = super::row::Cache::default();
    for seq in seqs {
        let row = guard::read("rows", || super::row::get_cached(&table, st, seq, &cache))?
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
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        /// Any sequence of adds and removes leaves the runs listing exactly the rows a set
        /// holds, as few runs as those rows make (no two runs touch), and another file's
        /// runs untouched.
        #[test]
        fn runs_list_what_a_set_holds(ops in proptest::collection::vec((any::<bool>(), 0u32..40), 0..120)) {
            let tmp = tempfile::tempdir().unwrap();
            let db = redb::Database::create(tmp.path().join("t.redb")).unwrap();
            let txn = db.begin_write().unwrap();
            let mut t = txn.open_table(SIDECHAINS).unwrap();
            t.insert((9, 0), 5).unwrap();
            let mut model = BTreeSet::new();
            for (adding, seq) in ops {
                let listed = if adding { add(&mut t, 3, seq) } else { remove(&mut t, 3, seq) };
                let changed = if adding { model.insert(seq) } else { model.remove(&seq) };
                prop_assert_eq!(listed.unwrap(), changed);
            }
            let runs: Vec<(u32, u32)> = t
                .range((3, 0)..=(3, u32::MAX))
                .unwrap()
                .map(|i| i.map(|(k, v)| (k.value().1, v.value())).unwrap())
                .collect();
            let rows: Vec<u32> = runs.iter().flat_map(|&(a, b)| a..=b).collect();
            prop_assert_eq!(rows, model.iter().copied().collect::<Vec<_>>());
            let gaps = model.iter().zip(model.iter().skip(1)).filter(|(a, b)| **b > **a + 1).count();
            prop_assert_eq!(runs.len(), if model.is_empty() { 0 } else { gaps + 1 });
            prop_assert_eq!(t.get((9, 0)).unwrap().map(|v| v.value()), Some(5));
        }
    }

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
