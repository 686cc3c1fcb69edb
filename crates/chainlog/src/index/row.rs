//! The stored layout of a message row (a `rows` value): the parts every row has at fixed
//! places, the optional ones where a presence byte says, then the line's position as
//! LEB128 varints and the CRC-32 of [`super::codec::tag`].
//!
//! `rmp-serde` wrote a row as a `MessagePack` array: a type byte per field, 9 bytes for each
//! 64-bit value (timestamp, response id, session hash), one byte per absent option; 100 bytes a
//! row over a 1 GiB generated transcript, 73 in this layout. Here a timestamp takes 6 bytes
//! (epoch milliseconds within ±4,400 years; wider ones, and a missing one, 8), the session is
//! an index into [`FileState::sessions`] (a transcript has one session or a few; past
//! [`SESSIONS_MAX`] the hash is written out), the absent options one byte together, and a tool
//! result's `sourceToolAssistantUUID` a bit when it is the parent (as Claude Code writes it),
//! and the parent a bit when it is the uuid of the row before (so a point read of such a row
//! reads that row's uuid too: [`get`]).
//!
//! ```text
//! presence u8 | kind u8 (high bit: the tool's assistant is the parent; next: the parent is the
//! row before) | flags u16 | uuid [16] | parent [16]? | timestamp i48 or i64
//! | message.id hash u64? | session u8 or u64 | logicalParentUuid [16]? | sourceToolAssistantUUID [16]?
//! | preserved segment [48]? | snip removals: count, [16] each? | line, offset, length (LEB128) | CRC-32
//! ```

use super::codec::{Reader, key_of, put_uvar, tag, untag};
use super::schema::FileState;
use crate::chain::scan::MessageRow;
use crate::transcript::envelope::{Flags, Kind, MessageHead, Segment};
use crate::transcript::frame::LinePos;
use crate::transcript::id::Id;

const PARENT: u8 = 1;
const LOGICAL: u8 = 1 << 1;
const MID: u8 = 1 << 2;
const SOURCE: u8 = 1 << 3;
const PRESERVED: u8 = 1 << 4;
const SNIP: u8 = 1 << 5;
const WIDE_TIME: u8 = 1 << 6;
const WIDE_SESSION: u8 = 1 << 7;
/// In the kind byte (kinds take its low bits): `sourceToolAssistantUUID` is the parent, as on
/// a tool result Claude Code writes, and is not written again.
const SOURCE_IS_PARENT: u8 = 1 << 7;
/// In the kind byte: the parent is the uuid of the row before (`seq - 1`), as on 95 % of the
/// messages of the real transcripts, and is not written.
const PARENT_BEFORE: u8 = 1 << 6;

/// Sessions a file's rows name by index ([`FileState::sessions`]); later ones are written out.
pub const SESSIONS_MAX: usize = 255;

/// The narrow timestamp's range: 48-bit two's complement.
const NARROW: std::ops::Range<i64> = -(1 << 47)..(1 << 47);

/// Encodes `row`, to be stored under `key`; `before` is the uuid of the row before it (none
/// for the first). A session not seen in the file yet is added to `st.sessions`.
pub fn encode(st: &mut FileState, key: &[u8], row: &MessageRow, before: Option<Id>) -> Vec<u8> {
    let h = &row.head;
    let parent_before = h.parent.is_some() && h.parent == before;
    let session = match st.sessions.iter().position(|&s| s == h.session) {
        Some(i) => Some(i),
        None if st.sessions.len() < SESSIONS_MAX => {
            st.sessions.push(h.session);
            Some(st.sessions.len() - 1)
        }
        None => None,
    };
    let narrow = NARROW.contains(&h.timestamp);
    let source = h.source_tool_assistant.filter(|&s| h.parent != Some(s));
    let source_is_parent = h.source_tool_assistant.is_some() && source.is_none();
    let presence = [
        (h.parent.is_some(), PARENT),
        (h.logical_parent.is_some(), LOGICAL),
        (h.message_id.is_some(), MID),
        (source.is_some(), SOURCE),
        (h.preserved.is_some(), PRESERVED),
        (!h.snip_removed.is_empty(), SNIP),
        (!narrow, WIDE_TIME),
        (session.is_none(), WIDE_SESSION),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .fold(0, |acc, (_, bit)| acc | bit);
    let mut out = Vec::with_capacity(80);
    out.push(presence);
    let bit = |on: bool, bit: u8| if on { bit } else { 0 };
    out.push(
        u8::from(h.kind)
            | bit(source_is_parent, SOURCE_IS_PARENT)
            | bit(parent_before, PARENT_BEFORE),
    );
    out.extend_from_slice(&h.flags.0.to_le_bytes());
    out.extend_from_slice(&h.uuid.0);
    if let Some(p) = h.parent.filter(|_| !parent_before) {
        out.extend_from_slice(&p.0);
    }
    let ts = h.timestamp.to_le_bytes();
    out.extend_from_slice(if narrow { &ts[..6] } else { &ts });
    if let Some(mid) = h.message_id {
        out.extend_from_slice(&mid.to_le_bytes());
    }
    match session {
        // SESSIONS_MAX keeps the index in a byte.
        Some(i) => out.push(u8::try_from(i).unwrap_or(u8::MAX)),
        None => out.extend_from_slice(&h.session.to_le_bytes()),
    }
    for id in [h.logical_parent, source].into_iter().flatten() {
        out.extend_from_slice(&id.0);
    }
    if let Some(seg) = h.preserved {
        for id in [seg.head, seg.anchor, seg.tail] {
            out.extend_from_slice(&id.0);
        }
    }
    if !h.snip_removed.is_empty() {
        put_uvar(&mut out, h.snip_removed.len() as u64);
        for id in &h.snip_removed {
            out.extend_from_slice(&id.0);
        }
    }
    for n in [row.pos.line, row.pos.offset, row.pos.len] {
        put_uvar(&mut out, n);
    }
    tag(key, out)
}

/// Decodes a row written by [`encode`] and found under `key`; `before` gives the uuid of the
/// row before it, asked only when the row's parent is that uuid. `None` when the checksum or
/// the layout is wrong (or it names a session `st` does not have, or `before` has no uuid).
pub fn decode(
    st: &FileState,
    key: &[u8],
    bytes: &[u8],
    before: impl FnOnce() -> Option<Id>,
) -> Option<MessageRow> {
    let mut r = Reader(untag(key, bytes)?);
    let presence = r.byte()?;
    let kind_byte = r.byte()?;
    let kind = Kind::try_from(kind_byte & !(SOURCE_IS_PARENT | PARENT_BEFORE)).ok()?;
    let flags = Flags(u16::from_le_bytes(r.take()?));
    let uuid = r.id()?;
    let parent = match (presence & PARENT != 0, kind_byte & PARENT_BEFORE != 0) {
        (false, false) => None,
        (false, true) => return None,
        (true, true) => Some(before()?),
        (true, false) => Some(r.id()?),
    };
    let timestamp = if presence & WIDE_TIME != 0 {
        i64::from_le_bytes(r.take()?)
    } else {
        let b: [u8; 6] = r.take()?;
        // Sign-extend the 48 bits.
        i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], 0, 0]) << 16 >> 16
    };
    let message_id = if presence & MID == 0 {
        None
    } else {
        Some(u64::from_le_bytes(r.take()?))
    };
    let session = if presence & WIDE_SESSION != 0 {
        u64::from_le_bytes(r.take()?)
    } else {
        *st.sessions.get(usize::from(r.byte()?))?
    };
    let logical_parent = if presence & LOGICAL == 0 {
        None
    } else {
        Some(r.id()?)
    };
    let source_tool_assistant = match (presence & SOURCE != 0, kind_byte & SOURCE_IS_PARENT != 0) {
        (true, false) => Some(r.id()?),
        (false, true) => Some(parent?),
        (false, false) => None,
        (true, true) => return None,
    };
    let preserved = if presence & PRESERVED == 0 {
        None
    } else {
        Some(Segment {
            head: r.id()?,
            anchor: r.id()?,
            tail: r.id()?,
        })
    };
    let snip_removed = if presence & SNIP == 0 {
        Vec::new()
    } else {
        let n = usize::try_from(r.uvar()?).ok()?;
        // Each removal takes 16 bytes: a count past the value is damage, not an allocation.
        if n == 0 || n > r.0.len() / 16 {
            return None;
        }
        (0..n).map(|_| r.id()).collect::<Option<Vec<Id>>>()?
    };
    let pos = LinePos {
        line: r.uvar()?,
        offset: r.uvar()?,
        len: r.uvar()?,
    };
    if !r.is_done() {
        return None;
    }
    let head = MessageHead {
        uuid,
        parent,
        logical_parent,
        kind,
        flags,
        timestamp,
        message_id,
        session,
        source_tool_assistant,
        preserved,
        snip_removed,
    };
    Some(MessageRow { head, pos })
}

/// The uuid of a row written by [`encode`] and found under `key` (at a fixed place, after
/// the presence, kind and flags bytes); `None` when the checksum is wrong.
pub fn uuid_in(key: &[u8], bytes: &[u8]) -> Option<Id> {
    Reader(untag(key, bytes)?.get(4..)?).id()
}

/// Row `seq` of `st.file` read from `rows` (and the uuid of the row before it when its parent
/// is that uuid); `None` when it is missing or does not decode.
pub fn get(
    rows: &impl redb::ReadableTable<(u32, u32), &'static [u8]>,
    st: &FileState,
    seq: u32,
) -> Result<Option<MessageRow>, redb::StorageError> {
    let f = st.file;
    let Some(v) = rows.get((f, seq))? else {
        return Ok(None);
    };
    let mut fault = None;
    let row = decode(st, &key_of(f, seq.into()), v.value(), || {
        let before = seq.checked_sub(1)?;
        match rows.get((f, before)) {
            Ok(v) => uuid_in(&key_of(f, before.into()), v?.value()),
            Err(e) => {
                fault = Some(e);
                None
            }
        }
    });
    match fault {
        Some(e) => Err(e),
        None => Ok(row),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::scan::Transcript;

    fn key(seq: u64) -> [u8; 12] {
        super::super::codec::key_of(3, seq)
    }

    /// Every row of every fixture and real transcript, and rows at the edges of each part
    /// (timestamps past 48 bits and missing, more sessions than an index byte holds, every
    /// option present), come back as they went in; a flipped bit, a byte more or less, or a
    /// value read under another key does not decode.
    #[test]
    fn rows_come_back_as_they_were_written_and_damage_does_not_decode() {
        let mut rows: Vec<MessageRow> = crate::testing::fixture_files()
            .iter()
            .flat_map(|p| Transcript::open(p).unwrap().rows)
            .collect();
        assert!(rows.len() > 500, "{}", rows.len());
        let id = |n: u8| Id([n; 16]);
        let mut edge = rows[0].clone();
        edge.head.parent = Some(id(1));
        edge.head.logical_parent = Some(id(2));
        edge.head.source_tool_assistant = Some(id(3));
        let mut own = edge.clone();
        own.head.source_tool_assistant = own.head.parent;
        rows.push(own);
        edge.head.preserved = Some(Segment {
            head: id(4),
            anchor: id(5),
            tail: id(6),
        });
        edge.head.snip_removed = vec![id(7), id(8)];
        edge.head.message_id = Some(u64::MAX);
        edge.pos = LinePos {
            line: u64::MAX,
            offset: 1 << 40,
            len: 0,
        };
        for ts in [
            i64::MIN,
            i64::MAX,
            (1 << 47) - 1,
            -(1 << 47),
            1 << 47,
            -1,
            0,
        ] {
            let mut r = edge.clone();
            r.head.timestamp = ts;
            rows.push(r);
        }
        for s in 0..300u64 {
            let mut r = rows[s as usize % 40].clone();
            r.head.session = s.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            rows.push(r);
        }
        let mut st = FileState::default();
        // Each row written after the one before it in the list, as a catch-up writes them.
        let before = |i: usize| i.checked_sub(1).map(|b| rows[b].head.uuid);
        let stored: Vec<Vec<u8>> = (0..)
            .zip(&rows)
            .map(|(i, r)| encode(&mut st, &key(i), r, before(i as usize)))
            .collect();
        assert_eq!(st.sessions.len(), SESSIONS_MAX);
        let mut shorter = 0;
        for ((i, row), v) in (0..).zip(&rows).zip(&stored) {
            let b = before(i as usize);
            assert_eq!(decode(&st, &key(i), v, || b).as_ref(), Some(row), "row {i}");
            assert_eq!(
                decode(&st, &key(i + 1), v, || b),
                None,
                "row {i} under another key"
            );
            assert_eq!(uuid_in(&key(i), v), Some(row.head.uuid));
            if row.head.parent.is_some() && row.head.parent == b {
                // The parent is left out: without the row before, the row does not decode.
                shorter += 1;
                assert_eq!(decode(&st, &key(i), v, || None), None, "row {i}");
                let full = encode(&mut st, &key(i), row, None);
                assert_eq!(full.len(), v.len() + 16);
            }
            for bit in [0, 7, 8 * v.len() / 2, 8 * v.len() - 1] {
                let mut bad = v.clone();
                bad[bit / 8] ^= 1 << (bit % 8);
                assert_eq!(decode(&st, &key(i), &bad, || b), None, "row {i} bit {bit}");
            }
        }
        assert!(shorter > rows.len() / 2, "{shorter} of {}", rows.len());
        // A body cut short or carrying a byte more, with a checksum that matches it.
        let body = untag(&key(0), &stored[0]).unwrap();
        for len in [0, 1, 4, body.len() - 1] {
            assert_eq!(
                decode(&st, &key(0), &tag(&key(0), body[..len].to_vec()), || None),
                None
            );
        }
        let mut longer = body.to_vec();
        longer.push(0);
        assert_eq!(decode(&st, &key(0), &tag(&key(0), longer), || None), None);
        // The common row is smaller than the MessagePack array it replaces.
        let plain = &rows[rows.len() / 2];
        let old = super::super::codec::encode(&key(0), plain).len();
        let new = encode(&mut st, &key(0), plain, None).len();
        assert!(new + 15 <= old, "{new} vs {old}");
    }
}
