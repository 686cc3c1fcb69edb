//! The stored layout of message rows: [`PER_BLOCK`] rows in sequence per `rows` value (a
//! block), each written against the row before it in the block, then the CRC-32 of
//! [`crate::index::format::codec::tag`] over the block. A block decodes on its own: its first row is written
//! against nothing.
//!
//! A row holds the parts every row has at fixed places, the optional ones where a presence
//! byte says; against the row before it, its timestamp, line and offset are written as zigzag
//! varint differences (a line most often starts where the one before ended, a second or a
//! minute later), its parent as a bit when it is that row's uuid (most messages of a chain),
//! its `message.id` hash as a bit when it is that row's (the lines of one response). The
//! session is an index into [`FileState::sessions`] (a transcript has one session or a few;
//! past [`SESSIONS_MAX`] the hash is written out), and a tool result's
//! `sourceToolAssistantUUID` a bit when it is the parent (as Claude Code writes it).
//!
//! One row per value, the layout of schema 18, took 53 bytes a row on the real transcripts
//! (key, redb's offset and a checksum each); a block shares those and the differences are a
//! byte or two where the fields took 6 and 8.
//!
//! ```text
//! block: row, row, ... (up to PER_BLOCK) | CRC-32
//! row:   presence u8 | kind u8 (bit 7: the tool's assistant is the parent; 6: the parent is the
//!        row before; 5: the message.id hash is the row before's) | flags u16 | uuid [16]
//!        | parent [16]? | timestamp − the row before's (zigzag) | message.id hash u64?
//!        | session u8 or u64 | logicalParentUuid [16]? | sourceToolAssistantUUID [16]?
//!        | preserved segment [48]? | snip removals: count, [16] each?
//!        | line, offset, length ([`crate::index::format::codec::put_pos`], against the row before's)
//! ```

use std::cell::RefCell;

use redb::ReadableTable;

use crate::chain::scan::MessageRow;
use crate::id::Id;
use crate::index::format::codec::{
    Reader, key_of, put_pos, put_svar, put_uvar, read_chained, tag, untag,
};
use crate::index::format::schema::FileState;
use crate::transcript::envelope::{Flags, Kind, MessageHead, Segment};

const PARENT: u8 = 1;
const LOGICAL: u8 = 1 << 1;
const MID: u8 = 1 << 2;
const SOURCE: u8 = 1 << 3;
const PRESERVED: u8 = 1 << 4;
const SNIP: u8 = 1 << 5;
const WIDE_SESSION: u8 = 1 << 7;
/// In the kind byte (kinds take its low bits): `sourceToolAssistantUUID` is the parent, as on
/// a tool result Claude Code writes, and is not written again.
const SOURCE_IS_PARENT: u8 = 1 << 7;
/// In the kind byte: the parent is the uuid of the row before in the block, and is not
/// written.
const PARENT_BEFORE: u8 = 1 << 6;
/// In the kind byte: the `message.id` hash is the row before's, and is not written.
const MID_BEFORE: u8 = 1 << 5;

/// Sessions a file's rows name by index ([`FileState::sessions`]); later ones are written out.
pub const SESSIONS_MAX: usize = 255;

/// Rows per `rows` value: block `b` of a file holds rows `b * PER_BLOCK` onwards, every
/// block but the last full. 32 rows of a real transcript are ~1 KB: a point read decodes
/// that much, and a walk keeps the block it read ([`Cache`]).
pub const PER_BLOCK: u32 = 32;

/// The block of row `seq` and the row's place in it.
pub fn block_of(seq: u32) -> (u32, usize) {
    (seq / PER_BLOCK, (seq % PER_BLOCK) as usize)
}

/// Encodes `rows`, the rows of one block in sequence, to be stored under `key`. A session
/// not seen in the file yet is added to `st.sessions`.
pub fn encode_block(st: &mut FileState, key: &[u8], rows: &[MessageRow]) -> Vec<u8> {
    let mut out = Vec::with_capacity(rows.len() * 40 + 4);
    let mut prev = None;
    for row in rows {
        put_row(&mut out, st, row, prev);
        prev = Some(row);
    }
    tag(key, out)
}

/// Appends `row`, the row after `prev` in its block.
fn put_row(out: &mut Vec<u8>, st: &mut FileState, row: &MessageRow, prev: Option<&MessageRow>) {
    let h = &row.head;
    let parent_before = h.parent.is_some() && h.parent == prev.map(|p| p.head.uuid);
    let mid_before = h.message_id.is_some() && h.message_id == prev.and_then(|p| p.head.message_id);
    let session = match st.sessions.iter().position(|&s| s == h.session) {
        Some(i) => Some(i),
        None if st.sessions.len() < SESSIONS_MAX => {
            st.sessions.push(h.session);
            Some(st.sessions.len() - 1)
        }
        None => None,
    };
    let source = h.source_tool_assistant.filter(|&s| h.parent != Some(s));
    let source_is_parent = h.source_tool_assistant.is_some() && source.is_none();
    let presence = [
        (h.parent.is_some(), PARENT),
        (h.logical_parent.is_some(), LOGICAL),
        (h.message_id.is_some(), MID),
        (source.is_some(), SOURCE),
        (h.preserved.is_some(), PRESERVED),
        (!h.snip_removed.is_empty(), SNIP),
        (session.is_none(), WIDE_SESSION),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .fold(0, |acc, (_, bit)| acc | bit);
    out.push(presence);
    let bit = |on: bool, bit: u8| if on { bit } else { 0 };
    out.push(
        u8::from(h.kind)
            | bit(source_is_parent, SOURCE_IS_PARENT)
            | bit(parent_before, PARENT_BEFORE)
            | bit(mid_before, MID_BEFORE),
    );
    out.extend_from_slice(&h.flags.0.to_le_bytes());
    out.extend_from_slice(&h.uuid.0);
    if let Some(p) = h.parent.filter(|_| !parent_before) {
        out.extend_from_slice(&p.0);
    }
    let prev_ts = prev.map_or(0, |p| p.head.timestamp);
    put_svar(out, h.timestamp.wrapping_sub(prev_ts));
    if let Some(mid) = h.message_id.filter(|_| !mid_before) {
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
        put_uvar(out, h.snip_removed.len() as u64);
        for id in &h.snip_removed {
            out.extend_from_slice(&id.0);
        }
    }
    put_pos(out, &row.pos, prev.map(|p| &p.pos));
}

/// Decodes a block written by [`encode_block`] and found under `key`: its rows in sequence.
/// `None` when the checksum or the layout is wrong, when it holds no row or more than
/// [`PER_BLOCK`], or a row names a session `st` does not have.
pub fn decode_block(st: &FileState, key: &[u8], bytes: &[u8]) -> Option<Vec<MessageRow>> {
    let rows = read_chained(untag(key, bytes)?, |r, prev| take_row(r, st, prev))?;
    (1..=PER_BLOCK as usize)
        .contains(&rows.len())
        .then_some(rows)
}

/// Reads the row after `prev` in its block.
fn take_row(r: &mut Reader<'_>, st: &FileState, prev: Option<&MessageRow>) -> Option<MessageRow> {
    let presence = r.byte()?;
    let kind_byte = r.byte()?;
    let kind = Kind::try_from(kind_byte & !(SOURCE_IS_PARENT | PARENT_BEFORE | MID_BEFORE)).ok()?;
    let flags = Flags(u16::from_le_bytes(r.take()?));
    let uuid = r.id()?;
    let parent = match (presence & PARENT != 0, kind_byte & PARENT_BEFORE != 0) {
        (false, false) => None,
        (false, true) => return None,
        (true, true) => Some(prev?.head.uuid),
        (true, false) => Some(r.id()?),
    };
    let timestamp = prev.map_or(0, |p| p.head.timestamp).wrapping_add(r.svar()?);
    let message_id = match (presence & MID != 0, kind_byte & MID_BEFORE != 0) {
        (false, false) => None,
        (false, true) => return None,
        (true, true) => Some(prev?.head.message_id?),
        (true, false) => Some(u64::from_le_bytes(r.take()?)),
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
    let pos = r.pos(prev.map(|p| &p.pos))?;
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

/// The block a reader decoded last, kept for its next read: a walk reads row after row,
/// most of them in the block it read before.
#[derive(Default)]
pub struct Cache(RefCell<Option<(u32, Vec<MessageRow>)>>);

/// Row `seq` of `st.file` read from `rows`; `None` when it is missing or its block does not
/// decode.
pub fn get(
    rows: &impl ReadableTable<(u32, u32), &'static [u8]>,
    st: &FileState,
    seq: u32,
) -> Result<Option<MessageRow>, redb::StorageError> {
    get_cached(rows, st, seq, &Cache::default())
}

/// [`get`], through (and into) `cache`.
pub fn get_cached(
    rows: &impl ReadableTable<(u32, u32), &'static [u8]>,
    st: &FileState,
    seq: u32,
    cache: &Cache,
) -> Result<Option<MessageRow>, redb::StorageError> {
    let (b, i) = block_of(seq);
    if let Some((cached, block)) = &*cache.0.borrow()
        && *cached == b
    {
        return Ok(block.get(i).cloned());
    }
    let Some(v) = rows.get((st.file, b))? else {
        return Ok(None);
    };
    let Some(block) = decode_block(st, &key_of(st.file, b.into()), v.value()) else {
        return Ok(None);
    };
    let row = block.get(i).cloned();
    *cache.0.borrow_mut() = Some((b, block));
    Ok(row)
}

/// The rows a catch-up writes, a block at a time: the block being filled is kept decoded and
/// stored when the catch-up moves to another block ([`Writer::put`]) or ends
/// ([`Writer::store`]). A duplicate uuid replaces a row of an earlier block: that block is
/// read, changed and written again.
#[derive(Default)]
pub struct Writer {
    /// The block being written and its rows (only [`Writer::put`] opens one).
    open: Option<(u32, Vec<MessageRow>)>,
}

impl Writer {
    /// Sets row `seq` (the next row of the file, or one it already has).
    pub fn put(
        &mut self,
        rows: &mut redb::Table<'_, (u32, u32), &'static [u8]>,
        st: &mut FileState,
        seq: u32,
        row: MessageRow,
    ) -> Result<(), redb::Error> {
        let (b, i) = block_of(seq);
        self.open_block(rows, st, b)?;
        let (_, block) = self.open.as_mut().expect("opened above");
        match i.cmp(&block.len()) {
            std::cmp::Ordering::Less => block[i] = row,
            std::cmp::Ordering::Equal => block.push(row),
            std::cmp::Ordering::Greater => {
                return Err(redb::Error::Corrupted(format!(
                    "row {seq} written after a block of {} rows",
                    block.len()
                )));
            }
        }
        Ok(())
    }

    /// Row `seq` as written so far (the open block first).
    pub fn get(
        &self,
        rows: &redb::Table<'_, (u32, u32), &'static [u8]>,
        st: &FileState,
        seq: u32,
    ) -> Result<Option<MessageRow>, redb::Error> {
        let (b, i) = block_of(seq);
        match &self.open {
            Some((open, block)) if *open == b => Ok(block.get(i).cloned()),
            _ => Ok(get(rows, st, seq)?),
        }
    }

    /// Makes block `b` the open one, storing the one open before.
    fn open_block(
        &mut self,
        rows: &mut redb::Table<'_, (u32, u32), &'static [u8]>,
        st: &mut FileState,
        b: u32,
    ) -> Result<(), redb::Error> {
        if self.open.as_ref().is_some_and(|(open, _)| *open == b) {
            return Ok(());
        }
        self.store(rows, st)?;
        let key = key_of(st.file, b.into());
        let block = match rows.get((st.file, b))? {
            Some(v) => decode_block(st, &key, v.value()).ok_or_else(|| {
                redb::Error::Corrupted(format!("rows block {b} fails its checksum"))
            })?,
            None => Vec::with_capacity(PER_BLOCK as usize),
        };
        self.open = Some((b, block));
        Ok(())
    }

    /// Stores the open block, if any.
    pub fn store(
        &mut self,
        rows: &mut redb::Table<'_, (u32, u32), &'static [u8]>,
        st: &mut FileState,
    ) -> Result<(), redb::Error> {
        if let Some((b, block)) = self.open.take() {
            let key = key_of(st.file, b.into());
            rows.insert((st.file, b), encode_block(st, &key, &block).as_slice())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::scan::Transcript;
    use crate::transcript::frame::LinePos;

    fn key(b: u64) -> [u8; 12] {
        key_of(3, b)
    }

    /// Every fixture and real transcript's rows, then rows at the edges of each part
    /// (timestamps at the ends of `i64`, more sessions than an index byte holds, every option
    /// present, positions going back and past 2^40).
    fn sample_rows() -> Vec<MessageRow> {
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
        for ts in [i64::MIN, i64::MAX, -1, 0, i64::MIN, 1 << 47] {
            let mut r = edge.clone();
            r.head.timestamp = ts;
            rows.push(r);
        }
        let mut back = edge.clone();
        back.pos = LinePos {
            line: 0,
            offset: 0,
            len: u64::MAX,
        };
        rows.push(back);
        for s in 0..300u64 {
            let mut r = rows[s as usize % 40].clone();
            r.head.session = s.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            rows.push(r);
        }
        rows
    }

    /// Blocks of every sample row come back as they were written; a flipped bit, a byte more
    /// or less, a block read under another key, or more rows than a block holds do not decode.
    #[test]
    fn blocks_come_back_as_they_were_written_and_damage_does_not_decode() {
        let rows = sample_rows();
        let mut st = FileState::default();
        let blocks: Vec<Vec<u8>> = (0..)
            .zip(rows.chunks(PER_BLOCK as usize))
            .map(|(b, chunk)| encode_block(&mut st, &key(b), chunk))
            .collect();
        assert_eq!(st.sessions.len(), SESSIONS_MAX);
        for ((b, chunk), v) in (0..).zip(rows.chunks(PER_BLOCK as usize)).zip(&blocks) {
            assert_eq!(
                decode_block(&st, &key(b), v).as_deref(),
                Some(chunk),
                "block {b}"
            );
            assert_eq!(
                decode_block(&st, &key(b + 1), v),
                None,
                "block {b} elsewhere"
            );
            for bit in [0, 7, 8 * v.len() / 2, 8 * v.len() - 1] {
                let mut bad = v.clone();
                bad[bit / 8] ^= 1 << (bit % 8);
                assert_eq!(
                    decode_block(&st, &key(b), &bad),
                    None,
                    "block {b} bit {bit}"
                );
            }
        }
        // A body cut short or carrying a byte more, with a checksum that matches it.
        let body = untag(&key(0), &blocks[0]).unwrap();
        for len in [0, 1, 4, body.len() - 1] {
            let cut = tag(&key(0), body[..len].to_vec());
            assert_eq!(decode_block(&st, &key(0), &cut), None, "{len} bytes");
        }
        let mut longer = body.to_vec();
        longer.push(0);
        assert_eq!(decode_block(&st, &key(0), &tag(&key(0), longer)), None);
        let over = encode_block(&mut st, &key(0), &rows[..=(PER_BLOCK as usize)]);
        assert_eq!(decode_block(&st, &key(0), &over), None);
    }

    /// A parent that is the row before's uuid and a `message.id` hash that is the row before's
    /// are left out (16 and 8 bytes); the fixtures' rows take fewer than 40 bytes each.
    #[test]
    fn what_the_row_before_has_is_left_out() {
        let rows = sample_rows();
        let mut st = FileState::default();
        let len = |st: &mut FileState, row: &MessageRow, prev: &MessageRow| {
            let mut out = Vec::new();
            put_row(&mut out, st, row, Some(prev));
            out.len()
        };
        let (mut parents, mut mids) = (0, 0);
        for pair in rows.windows(2) {
            let (prev, row) = (&pair[0], &pair[1]);
            let mut other = prev.clone();
            other.head.uuid = Id([0xee; 16]);
            other.head.message_id = prev.head.message_id.map(|m| !m);
            let saved = len(&mut st, row, &other) - len(&mut st, row, prev);
            let parent = row.head.parent.is_some() && row.head.parent == Some(prev.head.uuid);
            let mid = row.head.message_id.is_some() && row.head.message_id == prev.head.message_id;
            assert_eq!(saved, 16 * usize::from(parent) + 8 * usize::from(mid));
            parents += usize::from(parent);
            mids += usize::from(mid);
        }
        assert!(parents > rows.len() / 2, "{parents} of {}", rows.len());
        assert!(mids > 50, "{mids}");
        let fixtures = rows.len() - 308;
        let bytes: usize = rows[..fixtures]
            .chunks(PER_BLOCK as usize)
            .map(|c| encode_block(&mut st, &key(0), c).len())
            .sum();
        assert!(bytes < 40 * fixtures, "{bytes} bytes for {fixtures} rows");
    }

    /// The writer keeps a block open, stores it when it moves on and at the end, replaces a
    /// row of an earlier block, and refuses a row past the end of the file's rows.
    #[test]
    fn the_writer_fills_blocks_in_sequence() {
        let rows = sample_rows();
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("t.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        let mut t = txn.open_table(crate::index::format::schema::ROWS).unwrap();
        let mut st = FileState {
            file: 3,
            ..FileState::default()
        };
        let mut w = Writer::default();
        let n = 100u32;
        for seq in 0..n {
            w.put(&mut t, &mut st, seq, rows[seq as usize].clone())
                .unwrap();
        }
        // A duplicate: row 5 replaced while block 3 is open, then the file goes on.
        w.put(&mut t, &mut st, 5, rows[200].clone()).unwrap();
        assert_eq!(w.get(&t, &st, 5).unwrap().as_ref(), Some(&rows[200]));
        w.put(&mut t, &mut st, n, rows[n as usize].clone()).unwrap();
        assert!(w.put(&mut t, &mut st, n + 2, rows[0].clone()).is_err());
        w.store(&mut t, &mut st).unwrap();
        assert_eq!(
            redb::ReadableTableMetadata::len(&t).unwrap(),
            u64::from(n / PER_BLOCK + 1)
        );
        let cache = Cache::default();
        for seq in 0..=n {
            let want = if seq == 5 {
                &rows[200]
            } else {
                &rows[seq as usize]
            };
            assert_eq!(get(&t, &st, seq).unwrap().as_ref(), Some(want), "row {seq}");
            assert_eq!(
                get_cached(&t, &st, seq, &cache).unwrap().as_ref(),
                Some(want),
                "row {seq}, cached"
            );
        }
        assert_eq!(get(&t, &st, n + 1).unwrap(), None);
    }
}
