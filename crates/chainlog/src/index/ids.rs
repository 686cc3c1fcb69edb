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
//! row + 1 (0: no row has this id) u32 | children, ascending, u32 each | CRC-32
//! ```
//!
//! `responses` values have the same shape for one `message.id` hash: the assistant rows of
//! that response, ascending (they were `msg_ids` keys with a `counts` entry per response).

use super::codec::{id_key, key_of, tag, untag};

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
    let mut out = Vec::with_capacity(4 * (1 + e.children.len()) + 4);
    // A row's position is below `FileState::rows`, a `u32`: one more fits.
    out.extend_from_slice(&e.seq.map_or(0, |s| s + 1).to_le_bytes());
    for c in &e.children {
        out.extend_from_slice(&c.to_le_bytes());
    }
    tag(&key(f, id), out)
}

/// Decodes an entry written by [`encode`] for `id` in file `f`; `None` when the checksum or
/// the layout is wrong (children out of order included).
pub fn decode(f: u32, id: [u8; 16], bytes: &[u8]) -> Option<IdEntry> {
    let mut words = words(untag(&key(f, id), bytes)?)?;
    if words.is_empty() {
        return None;
    }
    let seq = words.remove(0).checked_sub(1);
    let e = IdEntry {
        seq,
        children: words,
    };
    (e.children.is_sorted_by(|a, b| a < b) && !e.is_empty()).then_some(e)
}

/// Encodes the assistant rows of response `mid` in file `f` (ascending).
pub fn encode_response(f: u32, mid: u64, rows: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 * rows.len() + 4);
    for r in rows {
        out.extend_from_slice(&r.to_le_bytes());
    }
    tag(&key_of(f, mid), out)
}

/// Decodes the rows written by [`encode_response`] for response `mid` in file `f`; `None` when
/// the checksum or the layout is wrong (empty, or rows out of order).
pub fn decode_response(f: u32, mid: u64, bytes: &[u8]) -> Option<Vec<u32>> {
    let rows = words(untag(&key_of(f, mid), bytes)?)?;
    (!rows.is_empty() && rows.is_sorted_by(|a, b| a < b)).then_some(rows)
}

/// A body of little-endian `u32`s.
fn words(body: &[u8]) -> Option<Vec<u32>> {
    body.len().is_multiple_of(4).then(|| {
        body.chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect()
    })
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
