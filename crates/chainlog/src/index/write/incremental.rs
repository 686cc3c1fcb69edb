//! Extending the projections after an append, without a pass over the file's rows.
//!
//! # Context
//! Most catch-ups add a few ordinary messages at the end of the tree. Re-deriving the whole
//! projection ([`crate::index::write::derive`]) costs a pass over every stored row; this module updates only
//! what an append can change, and declines (the caller then re-derives) for anything else.
//!
//! # Design
//! An append of message `r` under parent `p` can only change the leaf status (format.md §A5 step 7)
//! of `r` itself and of `T`, the first user/assistant at or above `p`: `T` is a leaf iff it has
//! no live user/assistant child and a terminal is reachable from it through non-turn
//! children. Both are recomputed from the stored edges after the whole batch is in.
//!
//! Declined (full re-derivation) whenever the update is not sure:
//! - flagged by ingest: duplicates, progress, compact boundaries, snips, and any uuid that an
//!   earlier entry named before it arrived (a snip's `removedUuids`, a preserved segment's
//!   head/anchor/tail, a dangling parent: the `forward` table);
//! - a parent that is a progress entry, removed by a snip or dropped by a compaction, or the
//!   anchor of the live preserved segment;
//! - a walk through non-turn entries longer than [`WALK_LIMIT`] (never "no leaf" instead).

use std::collections::HashSet;

use redb::{ReadableTable, Table, WriteTransaction};

use crate::chain::MessageRow;
use crate::chain::leaf::leaf_by_children;
use crate::error::IndexFault;
use crate::id::Id;
use crate::index::format::schema::{
    DERIVED, FileState, IDS, LEAF_TIMES, PROGRESS, REPARENTED, ROWS,
};
use crate::index::format::state::{Decoder, Encoder};
use crate::transcript::envelope::Flags;

/// Depth limit for walks through non-turn entries (system/attachment runs are short).
const WALK_LIMIT: usize = 1024;

type Tables<'t> = Decoder<
    Table<'t, (u32, u32), &'static [u8]>,
    Table<'t, (u32, [u8; 16]), &'static [u8]>,
    Table<'t, (u32, u8, [u8; 16]), &'static [u8]>,
    Table<'t, (u32, [u8; 16], u32), ()>,
>;

/// Why the incremental update gave up.
enum Decline {
    /// Not sure: a full re-derivation answers instead.
    Unsure,
    /// The stored state failed or is damaged.
    Fault(IndexFault),
}

impl<E: Into<IndexFault>> From<E> for Decline {
    fn from(e: E) -> Self {
        Decline::Fault(e.into())
    }
}

/// format.md §A5 step 7 for one user/assistant row ([`leaf_by_children`]).
fn is_leaf(t: &Tables<'_>, row: &MessageRow) -> Result<bool, Decline> {
    let children = |id: Id| -> Result<Vec<(Id, bool)>, IndexFault> {
        Ok(t.children_of(id)?
            .into_iter()
            .map(|(_, k)| (k.head.uuid, k.head.kind.is_turn()))
            .collect())
    };
    leaf_by_children(row.head.uuid, &children, WALK_LIMIT)?.ok_or(Decline::Unsure)
}

/// The first user/assistant at or above `row` (through effective parents).
fn first_turn_at_or_above(
    t: &Tables<'_>,
    row: MessageRow,
) -> Result<Option<(u32, MessageRow)>, Decline> {
    let mut cur = row;
    let mut seen = HashSet::new();
    loop {
        let Some(seq) = t.live(cur.head.uuid)? else {
            return Ok(None);
        };
        if cur.head.kind.is_turn() {
            return Ok(Some((seq, cur)));
        }
        if seen.len() > WALK_LIMIT {
            return Err(Decline::Unsure);
        }
        if !seen.insert(cur.head.uuid) {
            return Ok(None);
        }
        let Some(p) = t.parent_of(&cur)? else {
            return Ok(None);
        };
        let Some(pseq) = t.live(p)? else {
            return Ok(None);
        };
        cur = t.row(pseq)?;
    }
}

/// Extends the projections of `st.file` with the rows `new_rows`. Returns `false` when the
/// append needs a full re-derivation instead (nothing was changed then).
pub fn extend(
    txn: &WriteTransaction,
    st: &mut FileState,
    new_rows: &[u32],
) -> Result<bool, IndexFault> {
    if new_rows.is_empty() {
        return Ok(true);
    }
    let progress = txn.open_table(PROGRESS)?;
    let t: Tables<'_> = Decoder::new(
        st.clone(),
        txn.open_table(ROWS)?,
        txn.open_table(IDS)?,
        txn.open_table(DERIVED)?,
        txn.open_table(REPARENTED)?,
    );
    let (plan, sidechain_rows) = match plan(&t, &progress, new_rows) {
        Ok(p) => p,
        Err(Decline::Unsure) => return Ok(false),
        Err(Decline::Fault(e)) => return Err(e),
    };
    let (rows, ids, derived, reparented) = t.into_tables();
    drop((rows, ids));
    let mut enc = Encoder::with(st.file, derived, reparented, txn.open_table(LEAF_TIMES)?);
    for (seq, row, leaf) in plan {
        enc.set_leaf(st, seq, &row.head, leaf)?;
    }
    let added = u32::try_from(new_rows.len()).expect("rows fit u32");
    st.live_rows += added;
    st.main_rows += added - sidechain_rows;
    Ok(true)
}

/// Leaf updates `(seq, row, is_leaf)` and the number of sidechain rows added.
type Plan = (Vec<(u32, MessageRow, bool)>, u32);

/// Checks the batch is a plain append and computes the new leaf status of every turn it can
/// affect.
fn plan(
    t: &Tables<'_>,
    progress: &impl ReadableTable<(u32, [u8; 16]), &'static [u8]>,
    new_rows: &[u32],
) -> Result<Plan, Decline> {
    let f = t.state().file;
    let mut candidates: Vec<(u32, MessageRow)> = Vec::new();
    let mut sidechain_rows = 0;
    for &seq in new_rows {
        let row = t.row(seq)?;
        let h = &row.head;
        if h.flags.has(Flags::SIDECHAIN) {
            sidechain_rows += 1;
        }
        if let Some(p) = h.parent {
            if progress.get((f, p.0))?.is_some() || t.state().segment_anchor == Some(p) {
                return Err(Decline::Unsure);
            }
            // A dangling parent is a chain break: nothing above it to update (its arrival is
            // a forward reference, which ingest hands to a full re-derivation).
            if let Some(pseq) = t.seq_of(p)? {
                if t.live(p)? != Some(pseq) {
                    return Err(Decline::Unsure); // removed by a snip or dropped by a compaction
                }
                if let Some(turn) = first_turn_at_or_above(t, t.row(pseq)?)? {
                    candidates.push(turn);
                }
            }
        }
        if h.kind.is_turn() {
            candidates.push((seq, row));
        }
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (seq, row) in candidates {
        if seen.insert(seq) {
            let leaf = is_leaf(t, &row)?;
            out.push((seq, row, leaf));
        }
    }
    Ok((out, sidechain_rows))
}
