//! Re-deriving the projections of one file after its rows changed.
//!
//! The projected tree (format.md §A5 steps 3, 5, 6, 7) is computed by the very code the reference
//! loader uses ([`Tree::project`]) over the rows stored in the index — never by re-reading
//! the transcript — and stored by the one encoder of the derived state
//! ([`crate::index::format::state::Encoder`]): re-pointed parents, dead rows, leaves and zeroed-usage rows.
//! A resume then reads only the rows of its chain.
//!
//! The cost is one pass over the file's stored rows (≈ 30 bytes each, not the transcript's
//! bytes) per catch-up that added messages.

use std::collections::HashMap;

use redb::{ReadableTable, WriteTransaction};

use crate::chain::tree::RowHead;
use crate::chain::{MessageRow, Projection, Tree};
use crate::error::{Fault, IndexFault, IngestError};
use crate::id::Id;
use crate::index::format::codec::{id_key, key_of, read_opt_id, untag};
use crate::index::format::schema::{FileState, ID_FIRST as ZERO, ID_LAST as MAX, PROGRESS, ROWS};
use crate::index::format::state::Encoder;
use crate::transcript::envelope::{Flags, Kind, Segment};

/// Removes the derived rows of file `f`.
pub fn clear(txn: &WriteTransaction, f: u32) -> Result<(), redb::Error> {
    Encoder::open(txn, f)?.clear()
}

/// Rows in map order and legacy progress entries (uuid → own parent).
pub type Rows<T = MessageRow> = (Vec<T>, HashMap<Id, Option<Id>>);

/// Blocks of rows are read from redb this many at a time, then decoded: only the decoded form
/// of every row is held at once, never the stored bytes of all of them.
const LOAD_BATCH: usize = 128;

/// Loads every row (in map order, each turned into a `T` by `keep` as it is decoded) and
/// progress entry of file `f`. `expected` rows are made room for at once: a vector that
/// grows by doubling holds its old and new buffers at once with allocators that do not remap
/// (`chainlog rebuild` of a 2 GiB transcript: 114 MiB peak against 116.5 without).
pub fn load_rows<T>(
    rows_t: &impl ReadableTable<(u32, u32), &'static [u8]>,
    progress_t: &impl ReadableTable<(u32, [u8; 16]), &'static [u8]>,
    st: &FileState,
    mut keep: impl FnMut(MessageRow) -> T,
) -> Fault<Rows<T>> {
    // Capped: a damaged count must not reserve gigabytes (the vector grows past it if need be).
    let (f, expected) = (st.file, st.rows);
    let mut rows = Vec::with_capacity((expected as usize).min(1 << 24));
    let mut from = 0u32;
    // A batch's stored blocks back to back, and each block's number and end in them.
    let mut bytes = Vec::new();
    let mut ends: Vec<(u32, usize)> = Vec::with_capacity(LOAD_BATCH);
    loop {
        bytes.clear();
        ends.clear();
        crate::index::db::guard::read("rows", || {
            for item in rows_t.range((f, from)..=(f, u32::MAX))?.take(LOAD_BATCH) {
                let (k, v) = item?;
                bytes.extend_from_slice(v.value());
                ends.push((k.value().1, bytes.len()));
            }
            Ok::<_, redb::StorageError>(())
        })?;
        let Some(&(last, _)) = ends.last() else {
            break;
        };
        let mut start = 0;
        for &(b, end) in &ends {
            let v = &bytes[start..end];
            start = end;
            // Every block before this one is full.
            if u64::from(b) * u64::from(crate::index::format::row::PER_BLOCK) != rows.len() as u64 {
                return Err(IndexFault::damaged(
                    "rows",
                    format!("block {b} out of sequence"),
                ));
            }
            let block = crate::index::format::row::decode_block(st, &key_of(f, b.into()), v)
                .ok_or_else(|| IndexFault::damaged("rows", format!("block {b} does not decode")))?;
            rows.extend(block.into_iter().map(&mut keep));
        }
        match last.checked_add(1) {
            Some(next) => from = next,
            None => break,
        }
    }
    if rows.len() != expected as usize {
        return Err(IndexFault::damaged(
            "rows",
            format!("{} rows where {expected} are counted", rows.len()),
        ));
    }
    let mut progress = HashMap::new();
    let stored = crate::index::db::guard::read("progress", || {
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

/// What re-deriving reads of a stored row: the fields of [`RowHead`], without the line's
/// position, ids for the splice and metadata lookups, or room for the rare fields (a
/// quarter of a [`MessageRow`]'s memory: a first index of a large transcript holds one per
/// message).
struct Slim {
    uuid: Id,
    parent: Option<Id>,
    kind: Kind,
    flags: Flags,
    timestamp: i64,
    /// A compact boundary's preserved segment and a snip's removed ids, when there are any.
    rare: Option<Box<(Option<Segment>, Vec<Id>)>>,
}

impl From<MessageRow> for Slim {
    fn from(row: MessageRow) -> Slim {
        let h = row.head;
        let rare = (h.preserved.is_some() || !h.snip_removed.is_empty())
            .then(|| Box::new((h.preserved, h.snip_removed)));
        Slim {
            uuid: h.uuid,
            parent: h.parent,
            kind: h.kind,
            flags: h.flags,
            timestamp: h.timestamp,
            rare,
        }
    }
}

impl RowHead for Slim {
    fn uuid(&self) -> Id {
        self.uuid
    }
    fn parent(&self) -> Option<Id> {
        self.parent
    }
    fn kind(&self) -> Kind {
        self.kind
    }
    fn flags(&self) -> Flags {
        self.flags
    }
    fn timestamp(&self) -> i64 {
        self.timestamp
    }
    fn preserved(&self) -> Option<Segment> {
        self.rare.as_ref().and_then(|r| r.0)
    }
    fn snip_removed(&self) -> &[Id] {
        self.rare.as_ref().map_or(&[], |r| &r.1)
    }
}

/// Recomputes and stores the projections of `st.file`.
pub fn derive(txn: &WriteTransaction, st: &mut FileState) -> Result<(), IngestError> {
    let loaded = {
        let rows_t = txn.open_table(ROWS)?;
        let progress_t = txn.open_table(PROGRESS)?;
        load_rows(&rows_t, &progress_t, st, Slim::from)
    };
    let (rows, progress) = loaded.map_err(IngestError::from_fault)?;
    let tree = Tree::project(&rows, &progress, Projection::Resume);
    Encoder::open(txn, st.file)?.write_tree(st, &rows, &tree)?;
    Ok(())
}
