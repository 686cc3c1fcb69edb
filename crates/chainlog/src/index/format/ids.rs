//! `ids` values: for one id of a file, the row that has it as its uuid and the rows that name
//! it as their on-disk parent, in one value under one key.
//!
//! They were two tables, `uuids` (id → row) and `children` (id, row → ()), with a `counts`
//! entry per parent so that a scan missing a `children` key changed by damage was caught:
//! three B-tree entries per message. In one value, the children are covered by the value's
//! checksum (a key changed by damage fails it, and takes the id's row with it, which the
//! parent checks of `query` catch), and a first index inserts one key per id.
//!
//! ```text
//! row + 1 (0: no row has this id) | children, ascending, each as its difference to the one
//! before (the first: to the row, or to 0) | CRC-32
//! ```
//!
//! The numbers are LEB128 varints: a message's first child is most often the next row, so an
//! entry is 6 to 8 bytes where `u32`s took 12. `responses` values have the same shape for one
//! `message.id` hash: the assistant rows of that response, ascending, the first one's
//! difference to 0 (they were `msg_ids` keys with a `counts` entry per response).

use crate::index::format::codec::{Reader, id_key, key_of, put_uvar, tag, untag};

/// The `ids` table, open for reading.
pub type ReadIds = redb::ReadOnlyTable<(u32, [u8; 16]), &'static [u8]>;

/// What one id of a file is to the tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IdEntry {
    /// The row whose uuid this is (`None`: a parent no message line has, such as a progress
    /// entry or an id never written).
    pub seq: Option<u32>,
    /// Rows whose on-disk parent this is, in map order.
    pub children: Vec<u32>,
}

impl IdEntry {
    /// Whether the entry says nothing (and is not stored).
    pub fn is_empty(&self) -> bool {
        self.seq.is_none() && self.children.is_empty()
    }
}

/// The checksummed key bytes of id `id` of file `f`.
fn key(f: u32, id: [u8; 16]) -> [u8; 21] {
    id_key(f, 0, id)
}

/// Encodes the entry of `id` in file `f`.
pub fn encode(f: u32, id: [u8; 16], e: &IdEntry) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 * (1 + e.children.len()) + 4);
    // A row's position is below `FileState::rows`, a `u32`: one more fits.
    put_uvar(&mut out, u64::from(e.seq.map_or(0, |s| s + 1)));
    put_ascending(&mut out, e.seq.unwrap_or(0), &e.children);
    tag(&key(f, id), out)
}

/// Decodes an entry written by [`encode`] for `id` in file `f`; `None` when the checksum or
/// the layout is wrong (children out of order included).
pub fn decode(f: u32, id: [u8; 16], bytes: &[u8]) -> Option<IdEntry> {
    let mut r = Reader(untag(&key(f, id), bytes)?);
    let seq = u32::try_from(r.uvar()?).ok()?.checked_sub(1);
    let e = IdEntry {
        seq,
        children: read_ascending(r, seq.unwrap_or(0))?,
    };
    (!e.is_empty()).then_some(e)
}

/// Encodes the assistant rows of response `mid` in file `f` (ascending).
pub fn encode_response(f: u32, mid: u64, rows: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 * rows.len() + 4);
    put_ascending(&mut out, 0, rows);
    tag(&key_of(f, mid), out)
}

/// Decodes the rows written by [`encode_response`] for response `mid` in file `f`; `None` when
/// the checksum or the layout is wrong (empty, or rows out of order).
pub fn decode_response(f: u32, mid: u64, bytes: &[u8]) -> Option<Vec<u32>> {
    let rows = read_ascending(Reader(untag(&key_of(f, mid), bytes)?), 0)?;
    (!rows.is_empty()).then_some(rows)
}

/// Appends `rows` (ascending) as differences, the first one's to `base`; wrapping, so rows
/// out of order are written too (and refused by [`read_ascending`]).
fn put_ascending(out: &mut Vec<u8>, base: u32, rows: &[u32]) {
    let mut prev = base;
    for &r in rows {
        put_uvar(out, u64::from(r.wrapping_sub(prev)));
        prev = r;
    }
}

/// The rest of `r` read as [`put_ascending`] wrote it; `None` when the rows are not strictly
/// ascending.
fn read_ascending(mut r: Reader<'_>, base: u32) -> Option<Vec<u32>> {
    let mut rows: Vec<u32> = Vec::new();
    let mut prev = base;
    while !r.is_done() {
        let row = prev.wrapping_add(u32::try_from(r.uvar()?).ok()?);
        if rows.last().is_some_and(|&last| row <= last) {
            return None;
        }
        rows.push(row);
        prev = row;
    }
    Some(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries come back as written; another file or id, a flipped bit, children out of order
    /// and an empty entry do not decode.
    #[test]
    fn entries_come_back_and_damage_does_not_decode() {
        let id = [7; 16];
        for e in [
            IdEntry {
                seq: Some(0),
                children: vec![],
            },
            IdEntry {
                seq: Some(u32::MAX - 1),
                children: vec![1, 5, 9],
            },
            IdEntry {
                seq: None,
                children: vec![3],
            },
        ] {
            let v = encode(2, id, &e);
            assert_eq!(decode(2, id, &v), Some(e.clone()));
            assert_eq!(decode(3, id, &v), None);
            assert_eq!(decode(2, [8; 16], &v), None);
            for bit in 0..8 * v.len() {
                let mut bad = v.clone();
                bad[bit / 8] ^= 1 << (bit % 8);
                assert_eq!(decode(2, id, &bad), None, "{e:?} bit {bit}");
            }
        }
        let unordered = IdEntry {
            seq: Some(1),
            children: vec![4, 2],
        };
        assert_eq!(decode(2, id, &encode(2, id, &unordered)), None);
        assert_eq!(decode(2, id, &encode(2, id, &IdEntry::default())), None);
        let v = encode_response(2, 9, &[3, 4, 8]);
        assert_eq!(decode_response(2, 9, &v), Some(vec![3, 4, 8]));
        assert_eq!(decode_response(2, 10, &v), None);
        assert_eq!(decode_response(3, 9, &v), None);
        for bit in 0..8 * v.len() {
            let mut bad = v.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(decode_response(2, 9, &bad), None, "bit {bit}");
        }
        assert_eq!(decode_response(2, 9, &encode_response(2, 9, &[4, 3])), None);
        assert_eq!(decode_response(2, 9, &encode_response(2, 9, &[])), None);
    }
}
