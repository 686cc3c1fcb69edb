//! The sidechain rows of a transcript from the index: what inline (1.0.x) sub-agents are made
//! of, read without scanning the file (`chainlog agents`, agent targets).
//!
//! The `sidechains` table lists the row numbers of a file's `isSidechain` messages (written at
//! catch-up, counted in [`FileState::sidechain_rows`]), so an answer reads only those rows:
//! nothing for a session without inline agents, however large.

use std::path::Path;

use redb::ReadableDatabase;

use super::codec::key_of;
use super::guard;
use super::ingest::Stat;
use super::open::{self, IndexDb};
use super::query::IndexGraph;
use super::schema::{FileState, ROWS, SIDECHAINS};
use super::state::IndexFault;
use super::{Store, read_state, wait};
use crate::chain::MessageRow;
use crate::error::Result;
use crate::transcript::envelope::Flags;
use crate::transcript::id::IdNames;

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

/// Reads the sidechain rows of an index current for `st`. A row number without its row, a
/// listed row that is not a sidechain, or another count than stored is damage.
fn read(db: &impl ReadableDatabase, st: &FileState) -> Result<SidechainRows, IndexFault> {
    let txn = wait::waiting(|| db.begin_read()).map_err(|e| IndexFault::Storage(e.into()))?;
    let f = st.file;
    let listed = guard::read("sidechains", || txn.open_table(SIDECHAINS))?;
    let seqs = guard::read("sidechains", || {
        listed
            .range((f, 0)..=(f, u32::MAX))?
            .map(|item| item.map(|(k, _)| k.value().1))
            .collect::<Result<Vec<u32>, redb::StorageError>>()
    })?;
    if seqs.len() as u64 != u64::from(st.sidechain_rows) {
        return Err(IndexFault::damaged(
            "sidechains",
            "fewer or more sidechain rows than counted",
        ));
    }
    let table = guard::read("rows", || txn.open_table(ROWS))?;
    let mut rows = Vec::with_capacity(seqs.len());
    for seq in seqs {
        let bytes = guard::read("rows", || {
            Ok::<_, redb::StorageError>(table.get((f, seq))?.map(|v| v.value().to_vec()))
        })?;
        let row = bytes
            .and_then(|b| super::row::decode(st, &key_of(f, seq.into()), &b))
            .filter(|r| r.head.flags.has(Flags::SIDECHAIN))
            .ok_or_else(|| {
                IndexFault::damaged("sidechains", format!("row {seq} is not a sidechain row"))
            })?;
        rows.push((seq, row));
    }
    let names = IndexGraph::names(&txn, st)?;
    Ok(SidechainRows { rows, names })
}
