//! Re-deriving the projections of one file after its rows changed.
//!
//! The projected tree (format.md §A5 steps 3, 5, 6, 7) is computed by the very code the reference
//! loader uses ([`Tree::from_rows`]) over the rows stored in the index — never by re-reading
//! the transcript — and stored by the one encoder of the derived state
//! ([`super::state::Encoder`]): re-pointed parents, dead rows, leaves and zeroed-usage rows.
//! A resume then reads only the rows of its chain.
//!
//! The cost is one pass over the file's stored rows (≈ 100 bytes each, not the transcript's
//! bytes) per catch-up that added messages.

use std::collections::HashMap;

use redb::{ReadableTable, WriteTransaction};

use super::codec::{decode, id_key, key_of, read_opt_id, untag};
use super::schema::{FileState, ID_FIRST as ZERO, ID_LAST as MAX, PROGRESS, ROWS};
use super::state::{Encoder, Fault, IndexFault};
use crate::chain::{MessageRow, Projection, Tree};
use crate::transcript::id::Id;

/// Removes the derived rows of file `f`.
pub fn clear(txn: &WriteTransaction, f: u32) -> Result<(), redb::Error> {
    Encoder::open(txn, f)?.clear()
}

/// Rows in map order and legacy progress entries (uuid → own parent).
pub type Rows = (Vec<MessageRow>, HashMap<Id, Option<Id>>);

/// Loads every row and progress entry of file `f` (rows in map order).
pub fn load_rows(
    rows_t: &impl ReadableTable<(u32, u32), &'static [u8]>,
    progress_t: &impl ReadableTable<(u32, [u8; 16]), &'static [u8]>,
    f: u32,
) -> Fault<Rows> {
    let stored = super::guard::read("rows", || {
        rows_t
            .range((f, 0)..=(f, u32::MAX))?
            .map(|item| item.map(|(k, v)| (k.value().1, v.value().to_vec())))
            .collect::<Result<Vec<_>, redb::StorageError>>()
    })?;
    let mut rows = Vec::new();
    for (seq, v) in stored {
        let row = decode::<MessageRow>(&key_of(f, seq.into()), &v)
            .ok_or_else(|| IndexFault::damaged("rows", format!("row {seq} does not decode")))?;
        if seq as usize != rows.len() {
            return Err(IndexFault::damaged(
                "rows",
                format!("row {seq} out of sequence"),
            ));
        }
        rows.push(row);
    }
    let mut progress = HashMap::new();
    let stored = super::guard::read("progress", || {
        progress_t
            .range((f, ZERO)..=(f, MAX))?
            .map(|item| item.map(|(k, v)| (k.value().1, v.value().to_vec())))
            .collect::<Result<Vec<_>, redb::StorageError>>()
    })?;
    for (id, v) in stored {
        let parent = untag(&id_key(f, 0, id), &v)
            .ok_or(())
            .and_then(read_opt_id)
            .map_err(|()| IndexFault::damaged("progress", "parent fails its checksum"))?;
        progress.insert(Id(id), parent);
    }
    Ok((rows, progress))
}

/// Recomputes and stores the projections of `st.file`.
pub fn derive(
    txn: &WriteTransaction,
    st: &mut FileState,
) -> Result<(), super::ingest::IngestError> {
    let loaded = {
        let rows_t = txn.open_table(ROWS)?;
        let progress_t = txn.open_table(PROGRESS)?;
        load_rows(&rows_t, &progress_t, st.file)
    };
    let (rows, progress) = loaded.map_err(ingest_error)?;
    let tree = Tree::from_rows(&rows, &progress, Projection::Resume);
    Encoder::open(txn, st.file)?.write_tree(st, &rows, &tree)?;
    Ok(())
}

/// A fault while re-deriving: storage failures are retried, damage rebuilds the index.
pub fn ingest_error(e: IndexFault) -> super::ingest::IngestError {
    match e {
        IndexFault::Storage(e) => super::ingest::IngestError::Db(e),
        _ => super::ingest::IngestError::Damaged,
    }
}
