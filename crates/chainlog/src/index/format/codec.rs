//! Value encoding: rmp-serde with a CRC-32 over the value *and the key it is stored under*, so
//! a flipped bit in a value is detected instead of decoded into a wrong answer, and so is a
//! flipped bit in its key (the value is then found under another key, or another value under
//! this key, and the checksum does not match). The checksum guards against damage, not
//! against an adversary: CRC-32 detects every burst error up to 32 bits and costs a fraction
//! of a cryptographic hash on the short values read by the thousand (listing rows).

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::transcript::frame::LinePos;

/// The checksum of `body` stored under `key`.
fn sum(key: &[u8], body: &[u8]) -> [u8; 4] {
    let mut h = crc32fast::Hasher::new();
    h.update(&(key.len() as u64).to_le_bytes());
    h.update(key);
    h.update(body);
    h.finalize().to_le_bytes()
}

/// Encodes `v`, to be stored under `key`, with a trailing checksum.
pub fn encode<T: Serialize>(key: &[u8], v: &T) -> Vec<u8> {
    tag(
        key,
        rmp_serde::to_vec(v).expect("index values always serialise"),
    )
}

/// Decodes a value written by [`encode`] and found under `key`; `None` when the checksum or
/// the layout is wrong.
pub fn decode<T: DeserializeOwned>(key: &[u8], bytes: &[u8]) -> Option<T> {
    rmp_serde::from_slice(untag(key, bytes)?).ok()
}

/// Raw bytes `body`, to be stored under `key`, with a trailing checksum.
pub fn tag(key: &[u8], mut body: Vec<u8>) -> Vec<u8> {
    let s = sum(key, &body);
    body.extend_from_slice(&s);
    body
}

/// The raw bytes of a value written by [`tag`] and found under `key`; `None` when the checksum
/// is wrong.
pub fn untag<'a>(key: &[u8], bytes: &'a [u8]) -> Option<&'a [u8]> {
    let (body, s) = bytes.split_at_checked(bytes.len().checked_sub(4)?)?;
    (sum(key, body) == *s).then_some(body)
}

/// The bytes of a `(file, number)` key, for [`encode`] and [`tag`].
pub fn key_of(f: u32, n: u64) -> [u8; 12] {
    let mut k = [0; 12];
    k[..4].copy_from_slice(&f.to_le_bytes());
    k[4..].copy_from_slice(&n.to_le_bytes());
    k
}

/// The bytes of a `(file, kind, id)` key, for [`tag`].
pub fn id_key(f: u32, kind: u8, id: [u8; 16]) -> [u8; 21] {
    let mut k = [0; 21];
    k[..4].copy_from_slice(&f.to_le_bytes());
    k[4] = kind;
    k[5..].copy_from_slice(&id);
    k
}

/// An optional id as 0 or 16 bytes.
pub fn opt_id(id: Option<crate::id::Id>) -> Vec<u8> {
    id.map(|i| i.0.to_vec()).unwrap_or_default()
}

/// The inverse of [`opt_id`]; `Err` on a malformed value.
pub fn read_opt_id(bytes: &[u8]) -> Result<Option<crate::id::Id>, ()> {
    match bytes.len() {
        0 => Ok(None),
        16 => Ok(Some(crate::id::Id(bytes.try_into().map_err(|_| ())?))),
        _ => Err(()),
    }
}

/// Appends `n` as an LEB128 varint (1 byte below 128, 2 below 16,384, ...).
pub fn put_uvar(out: &mut Vec<u8>, n: u64) {
    let mut b = [0; 10];
    let len = integer_encoding::VarInt::encode_var(n, &mut b);
    out.extend_from_slice(&b[..len]);
}

/// Appends `n` as a zigzag LEB128 varint (small magnitudes of either sign take a byte).
pub fn put_svar(out: &mut Vec<u8>, n: i64) {
    let mut b = [0; 10];
    let len = integer_encoding::VarInt::encode_var(n, &mut b);
    out.extend_from_slice(&b[..len]);
}

/// Appends `pos`, the position of a line written after `before` in the same value: its line
/// and offset as zigzag differences to that line and to where that line ended (two's
/// complement: exact for any `u64`, a byte each when the line follows the one before), its
/// length as a varint. The first of a value is written against nothing.
pub fn put_pos(out: &mut Vec<u8>, pos: &LinePos, before: Option<&LinePos>) {
    let (line, next) = bases(before);
    put_svar(out, pos.line.wrapping_sub(line).cast_signed());
    put_svar(out, pos.offset.wrapping_sub(next).cast_signed());
    put_uvar(out, pos.len);
}

/// The line and the offset a position after `before` is written against.
fn bases(before: Option<&LinePos>) -> (u64, u64) {
    before.map_or((0, 0), |p| {
        (p.line, p.offset.wrapping_add(p.len).wrapping_add(1))
    })
}

/// The records of `body`, each written against the one before it (the first against
/// nothing), read by `take` until the body ends; `None` when one does not decode.
pub fn read_chained<T>(
    body: &[u8],
    mut take: impl FnMut(&mut Reader<'_>, Option<&T>) -> Option<T>,
) -> Option<Vec<T>> {
    let mut r = Reader(body);
    let mut out: Vec<T> = Vec::new();
    while !r.is_done() {
        let next = take(&mut r, out.last())?;
        out.push(next);
    }
    Some(out)
}

/// The unread rest of a value in one of the index's own layouts: every read is `None` past
/// its end, so a value cut short decodes to nothing rather than to a wrong answer.
pub struct Reader<'a>(pub &'a [u8]);

impl Reader<'_> {
    /// The next `N` bytes.
    pub fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.0.split_first_chunk::<N>()?;
        self.0 = rest;
        Some(*head)
    }

    /// The next byte.
    pub fn byte(&mut self) -> Option<u8> {
        self.take::<1>().map(|[b]| b)
    }

    /// The next 16 bytes as an id.
    pub fn id(&mut self) -> Option<crate::id::Id> {
        self.take().map(crate::id::Id)
    }

    /// The next [`put_uvar`] integer.
    pub fn uvar(&mut self) -> Option<u64> {
        let (n, len) = <u64 as integer_encoding::VarInt>::decode_var(self.0)?;
        self.0 = &self.0[len..];
        Some(n)
    }

    /// The next [`put_svar`] integer.
    pub fn svar(&mut self) -> Option<i64> {
        let (n, len) = <i64 as integer_encoding::VarInt>::decode_var(self.0)?;
        self.0 = &self.0[len..];
        Some(n)
    }

    /// The next [`put_pos`] position, written after `before`.
    pub fn pos(&mut self, before: Option<&LinePos>) -> Option<LinePos> {
        let (line, next) = bases(before);
        Some(LinePos {
            line: line.wrapping_add(self.svar()?.cast_unsigned()),
            offset: next.wrapping_add(self.svar()?.cast_unsigned()),
            len: self.uvar()?,
        })
    }

    /// Whether every byte was read.
    pub fn is_done(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flipped_bits_are_detected() {
        let v = (1u32, "hello".to_owned(), vec![1u64, 2, 3]);
        let mut key = key_of(3, 7);
        let mut bytes = encode(&key, &v);
        assert_eq!(decode::<(u32, String, Vec<u64>)>(&key, &bytes), Some(v));
        for i in 0..bytes.len() * 8 {
            bytes[i / 8] ^= 1 << (i % 8);
            assert_eq!(
                decode::<(u32, String, Vec<u64>)>(&key, &bytes),
                None,
                "bit {i}"
            );
            bytes[i / 8] ^= 1 << (i % 8);
        }
        // A flipped bit in the key the value is found under is detected too.
        for i in 0..key.len() * 8 {
            key[i / 8] ^= 1 << (i % 8);
            assert_eq!(
                decode::<(u32, String, Vec<u64>)>(&key, &bytes),
                None,
                "key bit {i}"
            );
            key[i / 8] ^= 1 << (i % 8);
        }
    }
}
