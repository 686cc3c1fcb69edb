//! The derived state of one file — what [`Tree`] computes — stored and read back in one place.
//!
//! # Context
//! The full re-derivation ([`crate::index::write::derive`]), the incremental update after an append
//! ([`crate::index::write::incremental`]) and the query ([`crate::index::read::query`]) all need the same facts: which
//! rows are live, each row's effective parent, its children, the leaves and the zeroed usage.
//! [`Encoder`] is the only code that writes them and [`Decoder`] the only code that reads them,
//! so the three paths cannot disagree on a layout.
//!
//! # Design
//! | fact | stored as |
//! |---|---|
//! | liveness | dead unless `seq ≥ FileState::drop_before` or a `PRESERVED` row; a `DEAD` row (snip) |
//! | effective parent | a `PARENT` row when it differs from the line's `parentUuid`, plus a `reparented` edge |
//! | children | the `ids` entry's children (on-disk edges) ∪ `reparented`, kept when live and the effective parent matches |
//! | leaves | `LEAF` rows (value: seq) and `leaf_times` keys (turn leaves by time) |
//! | zeroed usage | `ZEROED` rows |
//! | scalars | `FileState::{live_rows, main_rows, drop_before, segment_anchor}` |
//!
//! A value that does not decode is a typed [`IndexFault::Damaged`], never a default.

use redb::{ReadableTable, Table, WriteTransaction};

use crate::chain::tree::RowHead;
use crate::chain::{MessageRow, Tree};
use crate::error::{Fault, IndexFault};
use crate::id::Id;
use crate::index::db::guard::read;
use crate::index::format::codec::{id_key, opt_id, read_opt_id, tag, untag};
use crate::index::format::ids::IdEntry;
use crate::index::format::schema::{
    DERIVED, FileState, ID_FIRST as ZERO, ID_LAST as MAX, LEAF_TIMES, REPARENTED, derived,
    sortable_ts,
};
use crate::transcript::envelope::Flags;

/// The one writer of the derived state of a file.
pub struct Encoder<'t> {
    f: u32,
    derived: Table<'t, (u32, u8, [u8; 16]), &'static [u8]>,
    reparented: Table<'t, (u32, [u8; 16], u32), ()>,
    leaf_times: Table<'t, (u32, u8, u64, u32), ()>,
}

impl<'t> Encoder<'t> {
    /// Opens the derived tables of file `f`.
    pub fn open(txn: &'t WriteTransaction, f: u32) -> Result<Encoder<'t>, redb::Error> {
        Ok(Encoder::with(
            f,
            txn.open_table(DERIVED)?,
            txn.open_table(REPARENTED)?,
            txn.open_table(LEAF_TIMES)?,
        ))
    }

    /// An encoder over tables already open (the incremental path read `derived` first).
    pub fn with(
        f: u32,
        derived: Table<'t, (u32, u8, [u8; 16]), &'static [u8]>,
        reparented: Table<'t, (u32, [u8; 16], u32), ()>,
        leaf_times: Table<'t, (u32, u8, u64, u32), ()>,
    ) -> Encoder<'t> {
        Encoder {
            f,
            derived,
            reparented,
            leaf_times,
        }
    }

    /// Removes every derived row of the file.
    pub fn clear(&mut self) -> Result<(), redb::Error> {
        let f = self.f;
        self.derived
            .retain_in((f, 0, ZERO)..=(f, u8::MAX, MAX), |_, _| false)?;
        self.reparented
            .retain_in((f, ZERO, 0)..=(f, MAX, u32::MAX), |_, ()| false)?;
        self.leaf_times
            .retain_in((f, 0, 0, 0)..=(f, u8::MAX, u64::MAX, u32::MAX), |_, ()| {
                false
            })?;
        Ok(())
    }

    /// Replaces the derived state with the one of `tree` (built over `rows`, all of the file's
    /// rows in map order) and sets the scalars of `st`.
    pub fn write_tree<R: RowHead>(
        &mut self,
        st: &mut FileState,
        rows: &[R],
        tree: &Tree<'_, R>,
    ) -> Result<(), redb::Error> {
        let f = self.f;
        self.clear()?;
        let mut reparents = std::collections::BTreeMap::<Id, u32>::new();
        for (i, parent) in tree.relinked() {
            self.put(derived::PARENT, rows[i].uuid(), opt_id(parent))?;
            if let Some(p) = parent {
                self.reparented.insert((f, p.0, seq(i)), ())?;
                *reparents.entry(p).or_default() += 1;
            }
        }
        for (p, n) in reparents {
            self.put(derived::REPARENTS, p, n.to_le_bytes().to_vec())?;
        }
        for &id in &tree.snipped {
            self.put(derived::DEAD, id, Vec::new())?;
        }
        for &id in &tree.preserved {
            self.put(derived::PRESERVED, id, Vec::new())?;
        }
        st.leaf_facts = 0;
        for &i in &tree.leaves {
            self.set_leaf(st, seq(i), &rows[i], true)?;
        }
        for &id in &tree.zeroed_usage {
            self.put(derived::ZEROED, id, Vec::new())?;
        }
        st.dead_facts = seq(tree.snipped.len());
        st.preserved_facts = seq(tree.preserved.len());
        st.zeroed_facts = seq(tree.zeroed_usage.len());
        st.segment_anchor = tree.live_segment.map(|s| s.anchor);
        st.drop_before = tree.drop_before.map(seq);
        st.live_rows = seq(tree.live_count_all());
        st.main_rows = seq(rows
            .iter()
            .filter(|r| !r.flags().has(Flags::SIDECHAIN))
            .count());
        Ok(())
    }

    /// Stores a derived fact of `id`, checksummed with its key ([`tag`]).
    fn put(&mut self, kind: u8, id: Id, payload: Vec<u8>) -> Result<(), redb::Error> {
        let value = tag(&id_key(self.f, kind, id.0), payload);
        self.derived
            .insert((self.f, kind, id.0), value.as_slice())?;
        Ok(())
    }

    /// Sets or clears the leaf status of row `seq`, counted in `st.leaf_facts`.
    pub fn set_leaf(
        &mut self,
        st: &mut FileState,
        seq: u32,
        h: &impl RowHead,
        leaf: bool,
    ) -> Result<(), redb::Error> {
        let f = self.f;
        let side = u8::from(h.flags().has(Flags::SIDECHAIN));
        let time_key = (f, side, sortable_ts(h.timestamp()), seq);
        let key = (f, derived::LEAF, h.uuid().0);
        if leaf {
            let value = tag(
                &id_key(f, derived::LEAF, h.uuid().0),
                seq.to_le_bytes().to_vec(),
            );
            if self.derived.insert(key, value.as_slice())?.is_none() {
                st.leaf_facts += 1;
            }
            if h.kind().is_turn() {
                self.leaf_times.insert(time_key, ())?;
            }
        } else {
            if self.derived.remove(key)?.is_some() {
                st.leaf_facts = st.leaf_facts.saturating_sub(1);
            }
            self.leaf_times.remove(time_key)?;
        }
        Ok(())
    }
}

fn seq(i: usize) -> u32 {
    u32::try_from(i).expect("rows fit u32")
}

/// The one reader of the derived state of a file, over read-only or read-write tables.
pub struct Decoder<R, I, D, P> {
    st: FileState,
    rows: R,
    ids: I,
    derived: D,
    reparented: P,
    /// The `DEAD`, `PRESERVED` and `ZEROED` facts, read once (a scan whose count is checked
    /// against the file state: a point lookup cannot tell a missing fact from a key changed by
    /// damage, a scan with a count can).
    sets: std::cell::OnceCell<[std::collections::HashSet<Id>; 3]>,
    /// Check what the projections imply of a parent ([`Decoder::strict`]).
    strict: bool,
    /// The block of rows read last.
    block: crate::index::format::row::Cache,
}

impl<R, I, D, P> Decoder<R, I, D, P>
where
    R: ReadableTable<(u32, u32), &'static [u8]>,
    I: ReadableTable<(u32, [u8; 16]), &'static [u8]>,
    D: ReadableTable<(u32, u8, [u8; 16]), &'static [u8]>,
    P: ReadableTable<(u32, [u8; 16], u32), ()>,
{
    /// A decoder for the file of `st`.
    pub fn new(st: FileState, rows: R, ids: I, derived: D, reparented: P) -> Self {
        Decoder {
            st,
            rows,
            ids,
            derived,
            reparented,
            sets: std::cell::OnceCell::new(),
            block: crate::index::format::row::Cache::default(),
            strict: false,
        }
    }

    /// Checks, when answering, what the projections imply of an effective parent: a live row
    /// whose line names a snipped parent is always re-pointed (format.md §A5 step 6), so one without
    /// a `PARENT` fact lost it to damage. (Not while a batch is being added: its facts are not
    /// written yet.)
    pub fn strict(mut self) -> Self {
        self.strict = true;
        self
    }

    /// The tables, back (to write through the same handles).
    pub fn into_tables(self) -> (R, I, D, P) {
        (self.rows, self.ids, self.derived, self.reparented)
    }

    /// The file's state.
    pub fn state(&self) -> &FileState {
        &self.st
    }

    fn f(&self) -> u32 {
        self.st.file
    }

    /// The stored row at map position `seq`.
    pub fn row(&self, seq: u32) -> Fault<MessageRow> {
        read("rows", || {
            crate::index::format::row::get_cached(&self.rows, &self.st, seq, &self.block)
        })?
        .ok_or_else(|| IndexFault::damaged("rows", format!("row {seq} missing or undecodable")))
    }

    /// The payload of a derived fact of `id`, its checksum checked against its key.
    fn get_derived(&self, kind: u8, id: Id) -> Fault<Option<Vec<u8>>> {
        let v = read("derived", || {
            Ok::<_, redb::StorageError>(
                self.derived
                    .get((self.f(), kind, id.0))?
                    .map(|v| v.value().to_vec()),
            )
        })?;
        v.map(|v| {
            untag(&id_key(self.f(), kind, id.0), &v)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| {
                    IndexFault::damaged("derived", format!("fact {kind} fails its checksum"))
                })
        })
        .transpose()
    }

    /// Whether `id` has the derived fact `kind` (`DEAD`, `PRESERVED` or `ZEROED`).
    fn has(&self, kind: u8, id: Id) -> Fault<bool> {
        let slot = match kind {
            derived::DEAD => 0,
            derived::PRESERVED => 1,
            _ => 2,
        };
        if self.sets.get().is_none() {
            let sets = [
                self.scan_facts(derived::DEAD, self.st.dead_facts)?,
                self.scan_facts(derived::PRESERVED, self.st.preserved_facts)?,
                self.scan_facts(derived::ZEROED, self.st.zeroed_facts)?,
            ];
            let _ = self.sets.set(sets);
        }
        Ok(self.sets.get().is_some_and(|s| s[slot].contains(&id)))
    }

    /// The ids with fact `kind`, checked against the `count` the file state records.
    fn scan_facts(&self, kind: u8, count: u32) -> Fault<std::collections::HashSet<Id>> {
        let f = self.f();
        let found = read("derived", || {
            self.derived
                .range((f, kind, ZERO)..=(f, kind, MAX))?
                .map(|item| item.map(|(k, v)| (k.value().2, v.value().to_vec())))
                .collect::<Result<Vec<_>, redb::StorageError>>()
        })?;
        if found.len() != count as usize {
            return Err(IndexFault::damaged(
                "derived",
                format!("{} facts of kind {kind}, {count} stored", found.len()),
            ));
        }
        found
            .into_iter()
            .map(|(id, v)| {
                untag(&id_key(f, kind, id), &v)
                    .map(|_| Id(id))
                    .ok_or_else(|| IndexFault::damaged("derived", "a fact fails its checksum"))
            })
            .collect()
    }

    /// The `ids` entry of `id`: its row and the rows naming it as their parent.
    pub fn entry(&self, id: Id) -> Fault<Option<IdEntry>> {
        let f = self.f();
        let v = read("ids", || {
            Ok::<_, redb::StorageError>(self.ids.get((f, id.0))?.map(|v| v.value().to_vec()))
        })?;
        v.map(|v| {
            crate::index::format::ids::decode(f, id.0, &v)
                .ok_or_else(|| IndexFault::damaged("ids", "an entry fails its checksum"))
        })
        .transpose()
    }

    /// The map position of a message, live or not.
    pub fn seq_of(&self, id: Id) -> Fault<Option<u32>> {
        Ok(self.entry(id)?.and_then(|e| e.seq))
    }

    /// The map position of a live message (format.md §A5 steps 5 and 6 applied).
    pub fn live(&self, id: Id) -> Fault<Option<u32>> {
        let Some(seq) = self.seq_of(id)? else {
            return Ok(None);
        };
        let dropped =
            self.st.drop_before.is_some_and(|b| seq < b) && !self.has(derived::PRESERVED, id)?;
        if dropped || self.has(derived::DEAD, id)? {
            return Ok(None);
        }
        Ok(Some(seq))
    }

    /// The effective parent of a row.
    pub fn parent_of(&self, row: &MessageRow) -> Fault<Option<Id>> {
        if let Some(v) = self.get_derived(derived::PARENT, row.head.uuid)? {
            return read_opt_id(&v)
                .map_err(|()| IndexFault::damaged("derived", "effective parent of wrong length"));
        }
        if self.strict
            && let Some(p) = row.head.parent
            && self.has(derived::DEAD, p)?
            && self.live(row.head.uuid)?.is_some()
        {
            return Err(IndexFault::damaged(
                "derived",
                "a live row names a snipped parent and is not re-pointed",
            ));
        }
        Ok(row.head.parent)
    }

    /// Whether the usage counts of a message are zeroed.
    pub fn zeroed(&self, id: Id) -> Fault<bool> {
        self.has(derived::ZEROED, id)
    }

    /// Live children by effective parent, in map order.
    pub fn children_of(&self, id: Id) -> Fault<Vec<(u32, MessageRow)>> {
        let f = self.f();
        let mut seqs = self.entry(id)?.map(|e| e.children).unwrap_or_default();
        let reparented = read("reparented", || {
            self.reparented
                .range((f, id.0, 0)..=(f, id.0, u32::MAX))?
                .map(|item| item.map(|(k, _)| k.value().2))
                .collect::<Result<Vec<u32>, redb::StorageError>>()
        })?;
        let stored =
            match self.get_derived(derived::REPARENTS, id)? {
                Some(v) => u32::from_le_bytes(<[u8; 4]>::try_from(v.as_slice()).map_err(|_| {
                    IndexFault::damaged("derived", "reparent count of wrong length")
                })?),
                None => 0,
            };
        if reparented.len() != stored as usize {
            return Err(IndexFault::damaged(
                "reparented",
                format!(
                    "a scan found {} edges, {stored} are stored",
                    reparented.len()
                ),
            ));
        }
        seqs.extend(reparented);
        seqs.sort_unstable();
        seqs.dedup();
        let mut out = Vec::new();
        for seq in seqs {
            let row = self.row(seq)?;
            // Every row is the one `ids` names for its uuid (a duplicate line replaces the
            // row in place): one it does not name lost its `ids` key to damage.
            if self.strict && self.seq_of(row.head.uuid)? != Some(seq) {
                return Err(IndexFault::damaged(
                    "ids",
                    format!("row {seq} is not the row of its uuid"),
                ));
            }
            if self.live(row.head.uuid)? == Some(seq) && self.parent_of(&row)? == Some(id) {
                out.push((seq, row));
            }
        }
        Ok(out)
    }

    /// The map position of `id` when it is a leaf. A leaf fact that damage moved is not found
    /// (the caller then asks [`Decoder::leaves`]); one that damage changed fails its checksum.
    pub fn leaf_seq(&self, id: Id) -> Fault<Option<u32>> {
        self.get_derived(derived::LEAF, id)?
            .map(|v| {
                <[u8; 4]>::try_from(v.as_slice())
                    .map(u32::from_le_bytes)
                    .map_err(|_| IndexFault::damaged("derived", "leaf value of wrong length"))
            })
            .transpose()
    }

    /// The leaves `(seq, uuid)`, in map order.
    pub fn leaves(&self) -> Fault<Vec<(u32, Id)>> {
        let f = self.f();
        let mut out = Vec::new();
        let leaves = read("derived", || {
            self.derived
                .range((f, derived::LEAF, ZERO)..=(f, derived::LEAF, MAX))?
                .map(|item| item.map(|(k, v)| (k.value().2, v.value().to_vec())))
                .collect::<Result<Vec<_>, redb::StorageError>>()
        })?;
        for (id, v) in leaves {
            let payload = untag(&id_key(f, derived::LEAF, id), &v)
                .ok_or_else(|| IndexFault::damaged("derived", "leaf fails its checksum"))?;
            let b = <[u8; 4]>::try_from(payload)
                .map_err(|_| IndexFault::damaged("derived", "leaf value of wrong length"))?;
            out.push((u32::from_le_bytes(b), Id(id)));
        }
        // A scan cannot tell a fact that damage moved out of its range from one never written.
        if out.len() != self.st.leaf_facts as usize {
            return Err(IndexFault::damaged(
                "derived",
                format!(
                    "a scan found {} leaves, {} are counted",
                    out.len(),
                    self.st.leaf_facts
                ),
            ));
        }
        out.sort_unstable();
        Ok(out)
    }
}

/// The newest turn leaf of file `f` by `(timestamp, seq)`, sidechain ones included only when
/// `sidechain_ok` (the last key of `leaf_times`): `(sortable timestamp, seq)`.
pub fn newest_leaf(
    leaf_times: &impl ReadableTable<(u32, u8, u64, u32), ()>,
    f: u32,
    sidechain_ok: bool,
) -> Fault<Option<(u64, u32)>> {
    let last = |side: u8| -> Fault<Option<(u64, u32)>> {
        read("leaf_times", || {
            let mut r = leaf_times.range((f, side, 0, 0)..=(f, side, u64::MAX, u32::MAX))?;
            match r.next_back() {
                Some(item) => {
                    let (_, _, ts, seq) = item?.0.value();
                    Ok::<_, redb::StorageError>(Some((ts, seq)))
                }
                None => Ok(None),
            }
        })
    };
    let main = last(0)?;
    let best = if sidechain_ok {
        main.max(last(1)?)
    } else {
        main
    };
    Ok(best)
}
