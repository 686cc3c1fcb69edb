//! Value encoding: rmp-serde with a 4-byte blake3 checksum, so a flipped bit in a value is
//! detected instead of decoded into a wrong answer.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Encodes `v` with a trailing checksum.
pub fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    let mut out = rmp_serde::to_vec(v).expect("index values always serialise");
    let sum = blake3::hash(&out);
    out.extend_from_slice(&sum.as_bytes()[..4]);
    out
}

/// Decodes a value written by [`encode`]; `None` when the checksum or the layout is wrong.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Option<T> {
    let (body, sum) = bytes.split_at_checked(bytes.len().checked_sub(4)?)?;
    if blake3::hash(body).as_bytes()[..4] != *sum {
        return None;
    }
    rmp_serde::from_slice(body).ok()
}

/// An optional id as 0 or 16 bytes.
pub fn opt_id(id: Option<crate::transcript::id::Id>) -> Vec<u8> {
    id.map(|i| i.0.to_vec()).unwrap_or_default()
}

/// The inverse of [`opt_id`]; `Err` on a malformed value.
pub fn read_opt_id(bytes: &[u8]) -> Result<Option<crate::transcript::id::Id>, ()> {
    match bytes.len() {
        0 => Ok(None),
        16 => Ok(Some(crate::transcript::id::Id(
            bytes.try_into().map_err(|_| ())?,
        ))),
        _ => Err(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flipped_bits_are_detected() {
        let v = (1u32, "hello".to_owned(), vec![1u64, 2, 3]);
        let mut bytes = encode(&v);
        assert_eq!(decode::<(u32, String, Vec<u64>)>(&bytes), Some(v));
        for i in 0..bytes.len() * 8 {
            bytes[i / 8] ^= 1 << (i % 8);
            assert_eq!(decode::<(u32, String, Vec<u64>)>(&bytes), None, "bit {i}");
            bytes[i / 8] ^= 1 << (i % 8);
        }
    }
}
