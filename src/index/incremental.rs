//! Extending the projections after an append, without a pass over the file's rows.
//!
//! # Context
//! Most catch-ups add a few ordinary messages at the end of the tree. Re-deriving the whole
//! projection ([`super::derive`]) costs a pass over every stored row; this module updates only
//! what an append can change, and declines (the caller then re-derives) for anything else.
//!
//! # Design
//! An append of message `r` under parent `p` can only change the leaf status (SPEC A5 step 7)
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

use super::codec::{decode, read_opt_id};
use super::schema::{
    CHILDREN, DERIVED, FileState, LEAF_TIMES, PROGRESS, REPARENTED, ROWS, UUIDS, derived,
    sortable_ts,
};
use crate::chain::MessageRow;
use crate::transcript::envelope::Flags;
use crate::transcript::id::Id;

/// Depth limit for walks through non-turn entries (system/attachment runs are short).
const WALK_LIMIT: usize = 1024;

struct Tables<'t> {
    f: u32,
    st: FileState,
    rows: Table<'t, (u32, u32), &'static [u8]>,
    uuids: Table<'t, (u32, [u8; 16]), u32>,
    children: Table<'t, (u32, [u8; 16], u32), ()>,
    reparented: Table<'t, (u32, [u8; 16], u32), ()>,
    derived: Table<'t, (u32, u8, [u8; 16]), &'static [u8]>,
}

/// Something the stored state cannot answer: fall back to a full re-derivation.
struct Decline;

impl From<redb::Error> for Decline {
    fn from(_: redb::Error) -> Self {
        Decline
    }
}

impl From<redb::StorageError> for Decline {
    fn from(_: redb::StorageError) -> Self {
        Decline
    }
}

impl Tables<'_> {
    fn row(&self, seq: u32) -> Result<MessageRow, Decline> {
        self.rows
            .get((self.f, seq))?
            .and_then(|v| decode(v.value()))
            .ok_or(Decline)
    }

    fn has(&self, kind: u8, id: Id) -> Result<bool, Decline> {
        Ok(self.derived.get((self.f, kind, id.0))?.is_some())
    }

    /// The map position of a live row.
    fn live(&self, id: Id) -> Result<Option<u32>, Decline> {
        let Some(seq) = self.uuids.get((self.f, id.0))?.map(|v| v.value()) else {
            return Ok(None);
        };
        let dropped =
            self.st.drop_before.is_some_and(|b| seq < b) && !self.has(derived::PRESERVED, id)?;
        if dropped || self.has(derived::DEAD, id)? {
            return Ok(None);
        }
        Ok(Some(seq))
    }

    fn parent_of(&self, row: &MessageRow) -> Result<Option<Id>, Decline> {
        match self
            .derived
            .get((self.f, derived::PARENT, row.head.uuid.0))?
        {
            Some(v) => read_opt_id(v.value()).map_err(|()| Decline),
            None => Ok(row.head.parent),
        }
    }

    /// Live children by effective parent, with their rows.
    fn children_of(&self, id: Id) -> Result<Vec<MessageRow>, Decline> {
        let f = self.f;
        let mut seqs: Vec<u32> = Vec::new();
        for item in self.children.range((f, id.0, 0)..=(f, id.0, u32::MAX))? {
            seqs.push(item?.0.value().2);
        }
        for item in self.reparented.range((f, id.0, 0)..=(f, id.0, u32::MAX))? {
            seqs.push(item?.0.value().2);
        }
        seqs.sort_unstable();
        seqs.dedup();
        let mut out = Vec::new();
        for seq in seqs {
            let row = self.row(seq)?;
            if self.live(row.head.uuid)? == Some(seq) && self.parent_of(&row)? == Some(id) {
                out.push(row);
            }
        }
        Ok(out)
    }

    /// A terminal is reachable from non-turn `c` through non-turn children.
    fn reaches_terminal(&self, c: &MessageRow, seen: &mut HashSet<Id>) -> Result<bool, Decline> {
        if seen.len() > WALK_LIMIT {
            return Err(Decline);
        }
        if !seen.insert(c.head.uuid) {
            return Ok(false);
        }
        let kids = self.children_of(c.head.uuid)?;
        if kids.is_empty() {
            return Ok(true);
        }
        for k in &kids {
            if !k.head.kind.is_turn() && self.reaches_terminal(k, seen)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// SPEC A5 step 7 for one user/assistant row.
    fn is_leaf(&self, t: &MessageRow) -> Result<bool, Decline> {
        let kids = self.children_of(t.head.uuid)?;
        if kids.iter().any(|k| k.head.kind.is_turn()) {
            return Ok(false);
        }
        if kids.is_empty() {
            return Ok(true);
        }
        let mut seen = HashSet::from([t.head.uuid]);
        for k in &kids {
            if self.reaches_terminal(k, &mut seen)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The first user/assistant at or above `row` (through effective parents).
    fn first_turn_at_or_above(
        &self,
        row: MessageRow,
    ) -> Result<Option<(u32, MessageRow)>, Decline> {
        let mut cur = row;
        let mut seen = HashSet::new();
        loop {
            let Some(seq) = self.live(cur.head.uuid)? else {
                return Ok(None);
            };
            if cur.head.kind.is_turn() {
                return Ok(Some((seq, cur)));
            }
            if seen.len() > WALK_LIMIT {
                return Err(Decline);
            }
            if !seen.insert(cur.head.uuid) {
                return Ok(None);
            }
            let Some(p) = self.parent_of(&cur)? else {
                return Ok(None);
            };
            let Some(pseq) = self.live(p)? else {
                return Ok(None);
            };
            cur = self.row(pseq)?;
        }
    }
}

/// Extends the projections of `st.file` with the rows `new_rows`. Returns `false` when the
/// append needs a full re-derivation instead (nothing was changed then).
pub fn extend(
    txn: &WriteTransaction,
    st: &mut FileState,
    new_rows: &[u32],
) -> Result<bool, redb::Error> {
    if new_rows.is_empty() {
        return Ok(true);
    }
    let progress = txn.open_table(PROGRESS)?;
    let t = Tables {
        f: st.file,
        st: st.clone(),
        rows: txn.open_table(ROWS)?,
        uuids: txn.open_table(UUIDS)?,
        children: txn.open_table(CHILDREN)?,
        reparented: txn.open_table(REPARENTED)?,
        derived: txn.open_table(DERIVED)?,
    };
    let (plan, sidechain_rows) = match plan(&t, &progress, new_rows) {
        Ok(p) => p,
        Err(Decline) => return Ok(false),
    };
    let Tables {
        mut derived,
        rows,
        uuids,
        children,
        reparented,
        ..
    } = t;
    drop((rows, uuids, children, reparented));
    let mut times = txn.open_table(LEAF_TIMES)?;
    for (seq, row, leaf) in plan {
        let h = &row.head;
        let side = u8::from(h.flags.has(Flags::SIDECHAIN));
        let key = (st.file, side, sortable_ts(h.timestamp), seq);
        if leaf {
            derived.insert(
                (st.file, derived::LEAF, h.uuid.0),
                seq.to_le_bytes().as_slice(),
            )?;
            times.insert(key, ())?;
        } else {
            derived.remove((st.file, derived::LEAF, h.uuid.0))?;
            times.remove(key)?;
        }
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
    let f = t.f;
    let mut candidates: Vec<(u32, MessageRow)> = Vec::new();
    let mut sidechain_rows = 0;
    for &seq in new_rows {
        let row = t.row(seq)?;
        let h = &row.head;
        if h.flags.has(Flags::SIDECHAIN) {
            sidechain_rows += 1;
        }
        if let Some(p) = h.parent {
            if progress.get((f, p.0))?.is_some() || t.st.segment_anchor == Some(p) {
                return Err(Decline);
            }
            // A dangling parent is a chain break: nothing above it to update.
            if let Some(pseq) = t.uuids.get((f, p.0))?.map(|v| v.value()) {
                if t.live(p)? != Some(pseq) {
                    return Err(Decline); // removed by a snip or dropped by a compaction
                }
                if let Some(turn) = t.first_turn_at_or_above(t.row(pseq)?)? {
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
            let leaf = t.is_leaf(&row)?;
            out.push((seq, row, leaf));
        }
    }
    Ok((out, sidechain_rows))
}
