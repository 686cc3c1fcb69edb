//! Re-deriving the projections of one file after its rows changed.
//!
//! The projected tree (SPEC A5 steps 3, 5, 6, 7) is computed by the very code the reference
//! loader uses ([`Tree::from_rows`]) over the rows stored in the index — never by re-reading
//! the transcript — and its result is stored as a small delta: re-pointed parents, dead rows,
//! leaves and zeroed-usage rows. A resume then reads only the rows of its chain.
//!
//! The cost is one pass over the file's stored rows (≈ 100 bytes each, not the transcript's
//! bytes) per catch-up that added messages.

use std::collections::HashMap;

use redb::{ReadableTable, WriteTransaction};

use super::codec::{decode, opt_id, read_opt_id};
use super::schema::{
    DERIVED, FileState, LEAF_TIMES, PROGRESS, REPARENTED, ROWS, derived, sortable_ts,
};
use crate::chain::{MessageRow, Projection, Tree};
use crate::transcript::envelope::Flags;
use crate::transcript::id::Id;

use super::schema::{ID_FIRST as ZERO, ID_LAST as MAX};

/// Removes the derived rows of file `f`.
pub fn clear(txn: &WriteTransaction, f: u32) -> Result<(), redb::Error> {
    txn.open_table(DERIVED)?
        .retain_in((f, 0, ZERO)..=(f, u8::MAX, MAX), |_, _| false)?;
    txn.open_table(REPARENTED)?
        .retain_in((f, ZERO, 0)..=(f, MAX, u32::MAX), |_, ()| false)?;
    txn.open_table(LEAF_TIMES)?
        .retain_in((f, 0, 0, 0)..=(f, u8::MAX, u64::MAX, u32::MAX), |_, ()| {
            false
        })?;
    Ok(())
}

/// A stored row that does not decode: the index is damaged.
#[derive(Debug)]
pub struct Damaged;

/// Rows in map order and legacy progress entries (uuid → own parent).
pub type Rows = (Vec<MessageRow>, HashMap<Id, Option<Id>>);

/// Loads every row and progress entry of file `f` (rows in map order).
pub fn load_rows(
    rows_t: &impl ReadableTable<(u32, u32), &'static [u8]>,
    progress_t: &impl ReadableTable<(u32, [u8; 16]), &'static [u8]>,
    f: u32,
) -> Result<Result<Rows, Damaged>, redb::Error> {
    let mut rows = Vec::new();
    for item in rows_t.range((f, 0)..=(f, u32::MAX))? {
        let (k, v) = item?;
        let Some(row) = decode::<MessageRow>(v.value()) else {
            return Ok(Err(Damaged));
        };
        if k.value().1 as usize != rows.len() {
            return Ok(Err(Damaged));
        }
        rows.push(row);
    }
    let mut progress = HashMap::new();
    for item in progress_t.range((f, ZERO)..=(f, MAX))? {
        let (k, v) = item?;
        let Ok(parent) = read_opt_id(v.value()) else {
            return Ok(Err(Damaged));
        };
        progress.insert(Id(k.value().1), parent);
    }
    Ok(Ok((rows, progress)))
}

/// Recomputes and stores the projections of `st.file`.
pub fn derive(
    txn: &WriteTransaction,
    st: &mut FileState,
) -> Result<(), super::ingest::IngestError> {
    let f = st.file;
    let loaded = {
        let rows_t = txn.open_table(ROWS)?;
        let progress_t = txn.open_table(PROGRESS)?;
        load_rows(&rows_t, &progress_t, f)?
    };
    let Ok((rows, progress)) = loaded else {
        return Err(super::ingest::IngestError::Damaged);
    };
    let tree = Tree::from_rows(&rows, &progress, Projection::Resume);
    clear(txn, f)?;
    let mut d = txn.open_table(DERIVED)?;
    let mut reparented = txn.open_table(REPARENTED)?;
    for (i, parent) in tree.relinked() {
        d.insert(
            (f, derived::PARENT, rows[i].head.uuid.0),
            opt_id(parent).as_slice(),
        )?;
        if let Some(p) = parent {
            reparented.insert((f, p.0, u32::try_from(i).expect("rows fit u32")), ())?;
        }
    }
    for id in &tree.snipped {
        d.insert((f, derived::DEAD, id.0), [].as_slice())?;
    }
    for id in &tree.preserved {
        d.insert((f, derived::PRESERVED, id.0), [].as_slice())?;
    }
    st.segment_anchor = tree.live_segment.map(|s| s.anchor);
    st.drop_before = tree
        .drop_before
        .map(|b| u32::try_from(b).expect("rows fit u32"));
    let mut times = txn.open_table(LEAF_TIMES)?;
    for &i in &tree.leaves {
        let seq = u32::try_from(i).expect("rows fit u32");
        let h = &rows[i].head;
        d.insert((f, derived::LEAF, h.uuid.0), seq.to_le_bytes().as_slice())?;
        if h.kind.is_turn() {
            let side = u8::from(h.flags.has(Flags::SIDECHAIN));
            times.insert((f, side, sortable_ts(h.timestamp), seq), ())?;
        }
    }
    for id in &tree.zeroed_usage {
        d.insert((f, derived::ZEROED, id.0), [].as_slice())?;
    }
    st.live_rows = u32::try_from(tree.live_count_all()).expect("rows fit u32");
    st.main_rows = u32::try_from(
        rows.iter()
            .filter(|r| !r.head.flags.has(Flags::SIDECHAIN))
            .count(),
    )
    .expect("rows fit u32");
    Ok(())
}
