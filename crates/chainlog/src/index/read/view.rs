//! The materialised resume view: the answer of a default resume (the chosen leaf, the resume
//! view), stored by the resume that walked it, so a warm resume is one range read instead of a
//! walk.
//!
//! # Design
//! One table, `view`, keyed `(file, n)`: `n = 0` holds the [`Head`] (the leaf, how the walk
//! ended, the bridges, and the [`Stamp`] of the file state it was computed for); `n = 1..`
//! hold the chain's links root first, [`BLOCK`] records per value, each written as its
//! difference to the link before it in the block (`encode_link`; a value per link made redb's
//! per-entry work most of a warm resume of 10,000 messages). Every value carries the
//! key-covering checksum of [`crate::index::format::codec`], and the head records how many links follow
//! (every block but the last is full), so a damaged value or key is caught
//! ([`IndexFault::Damaged`]) instead of answered.
//!
//! The view is written by a default resume that had to walk (the file changed, or no view was
//! stored for its state): the walk and the read of its lines were needed for the answer
//! anyway, and the view is their by-product, stored in its own transaction
//! ([`crate::index::Sidecars::store_view`]). A catch-up never walks: it reads only new bytes. A view whose
//! stamp is not the file's current state (appended since, or another process's newer
//! catch-up) is not used: the resume walks as before and stores it again.

use redb::{ReadableTable, WriteTransaction};
use serde::{Deserialize, Serialize};

use crate::chain::{
    ChainBreak, ChainBridge, LeafRule, Link, Resolution, ResolveOptions, Stop, View,
};
use crate::error::IndexFault;
use crate::id::Id;
use crate::index::db::guard::read;
use crate::index::format::codec::{
    Reader, decode, encode, key_of, put_pos, read_chained, tag, untag,
};
use crate::index::format::schema::{FileState, VIEW};
use crate::resume::Interrupt;
use crate::resume::interrupt::Ending;
use crate::transcript::envelope::Kind;
use crate::transcript::frame::LinePos;

/// The longest line a resume view may hold for `chainlog index` to store it (`prepare_views`,
/// the catch-up of many small transcripts): storing a view parses each of its lines once (a
/// parsed line takes up to ten times its bytes), and `chainlog index` keeps its memory bounded
/// whatever the sessions hold. A view with a longer line is left to the session's first resume.
pub const VIEW_LINE_MAX: u64 = 8 << 20;

/// The options whose answer is materialised: what `resume` and `continue` ask by default.
pub const OPTIONS: ResolveOptions = ResolveOptions {
    leaf: None,
    view: View::Resume,
    list_leaves: false,
};

/// Whether the materialised view answers `opts`.
pub fn serves(opts: &ResolveOptions) -> bool {
    opts.leaf.is_none() && opts.view == View::Resume && !opts.list_leaves
}

/// Which state of the file a view was computed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp {
    dev: u64,
    ino: u64,
    indexed_len: u64,
    lines: u64,
    rows: u32,
    tail_hash: [u8; 16],
    /// The newest checkpoint (`last-prompt` leaf) the leaf was chosen with.
    checkpoint: Option<Id>,
}

impl Stamp {
    fn of(st: &FileState) -> Stamp {
        Stamp {
            dev: st.dev,
            ino: st.ino,
            indexed_len: st.indexed_len,
            lines: st.lines,
            rows: st.rows,
            tail_hash: st.tail_hash,
            checkpoint: st.checkpoint,
        }
    }
}

/// Everything of a [`Resolution`] but its links (`leaves` is empty: [`OPTIONS`] lists none).
#[derive(Debug, Serialize, Deserialize)]
struct Head {
    stamp: Stamp,
    len: u32,
    leaf: Option<(Id, u8)>,
    /// 0: a root; 1: a missing parent `(child, parent)`; 2: a cycle at the first id.
    stop: Option<(u8, Id, Id)>,
    chain_break: Option<(Id, Id, LinePos, f64)>,
    bridges: Vec<(Id, Id, Id, LinePos, i64)>,
    live: u64,
    session: Option<u64>,
    /// How the view ends ([`Interrupt`]): 0 none, 1 an interrupted prompt, 2 a cut turn.
    interrupt: u8,
    /// The tool ids the view's lines name ([`Ending::ids`]): what an extension checks.
    ids: Vec<(u64, u32)>,
    /// Each block's first and last line (the lowest and highest offset of its links, which
    /// are not in file order where parallel tool results were spliced): [`contains`] reads
    /// only the blocks whose span holds the line asked for.
    spans: Vec<(u64, u64)>,
}

const INTERRUPTS: [Interrupt; 3] = [
    Interrupt::None,
    Interrupt::InterruptedPrompt,
    Interrupt::InterruptedTurn,
];

const RULES: [LeafRule; 5] = [
    LeafRule::Requested,
    LeafRule::LastPrompt,
    LeafRule::NewerThanCheckpoint,
    LeafRule::Newest,
    LeafRule::NewestSidechain,
];

fn rule_code(rule: LeafRule) -> u8 {
    RULES.iter().position(|r| *r == rule).unwrap_or(0) as u8
}

/// Link records per `view` value.
pub const BLOCK: usize = 256;

/// The `view` key of the block holding link `i` (0-based).
fn block_of(i: usize) -> u32 {
    u32::try_from(i / BLOCK + 1).unwrap_or(u32::MAX)
}

const HAS_PARENT: u8 = 1;
const HAS_WRITTEN: u8 = 2;
const SPLICED: u8 = 4;
const ZERO_USAGE: u8 = 8;
/// The parent is the uuid of the link before (in the same block), and is not written.
const PARENT_BEFORE: u8 = 16;
/// The written parent is the parent, and is not written.
const WRITTEN_IS_PARENT: u8 = 32;
const ALL_FLAGS: u8 = 63;

/// Appends the record of `l` to `b`; `before` is the link before it in the same block.
///
/// ```text
/// flags u8 | kind u8 | uuid [16] | parent [16]? | written parent [16]? | line, as its
/// difference to the line before | offset, as its difference to the end of the line before
/// (+1) | length
/// ```
///
/// The numbers are varints (the differences zigzag): on a chain, a link's parent is the link
/// before it and its line often the next one, so a record is ~22 bytes where fixed fields
/// took 74.
fn encode_link(l: &Link, before: Option<&Link>, b: &mut Vec<u8>) {
    let parent_before = before.is_some_and(|p| l.parent == Some(p.uuid));
    let written_is_parent = l.written_parent.is_some() && l.written_parent == l.parent;
    let flags = [
        (l.parent.is_some(), HAS_PARENT),
        (l.written_parent.is_some(), HAS_WRITTEN),
        (l.spliced, SPLICED),
        (l.zero_usage, ZERO_USAGE),
        (parent_before, PARENT_BEFORE),
        (written_is_parent, WRITTEN_IS_PARENT),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .fold(0, |f, (_, bit)| f | bit);
    b.push(flags);
    b.push(u8::from(l.kind));
    b.extend_from_slice(&l.uuid.0);
    if let Some(p) = l.parent.filter(|_| !parent_before) {
        b.extend_from_slice(&p.0);
    }
    if let Some(w) = l.written_parent.filter(|_| !written_is_parent) {
        b.extend_from_slice(&w.0);
    }
    put_pos(b, &l.pos, before.map(|p| &p.pos));
}

/// Reads the record [`encode_link`] wrote after `before`; `None` when it is malformed.
fn decode_link(r: &mut Reader<'_>, before: Option<&Link>) -> Option<Link> {
    let flags = r.byte()?;
    let has = |bit: u8| flags & bit != 0;
    if flags & !ALL_FLAGS != 0
        || (has(PARENT_BEFORE) && !(has(HAS_PARENT) && before.is_some()))
        || (has(WRITTEN_IS_PARENT) && !(has(HAS_WRITTEN) && has(HAS_PARENT)))
    {
        return None;
    }
    let kind = Kind::try_from(r.byte()?).ok()?;
    let uuid = r.id()?;
    let parent = match (has(HAS_PARENT), has(PARENT_BEFORE)) {
        (false, _) => None,
        (true, true) => before.map(|p| p.uuid),
        (true, false) => Some(r.id()?),
    };
    let written_parent = match (has(HAS_WRITTEN), has(WRITTEN_IS_PARENT)) {
        (false, _) => None,
        (true, true) => parent,
        (true, false) => Some(r.id()?),
    };
    let pos = r.pos(before.map(|p| &p.pos))?;
    Some(Link {
        uuid,
        pos,
        kind,
        parent,
        written_parent,
        spliced: has(SPLICED),
        zero_usage: has(ZERO_USAGE),
    })
}

/// The records of one block's body, in order; `None` when one is malformed or bytes are left.
fn decode_block(body: &[u8]) -> Option<Vec<Link>> {
    read_chained(body, decode_link)
}

/// The head of `res` for `st`, with `len` links in all in blocks of these `spans`.
fn head_of(
    st: &FileState,
    res: &Resolution,
    len: usize,
    ending: &Ending,
    spans: Vec<(u64, u64)>,
) -> Head {
    Head {
        stamp: Stamp::of(st),
        len: u32::try_from(len).unwrap_or(u32::MAX),
        leaf: res.leaf.map(|(id, rule)| (id, rule_code(rule))),
        stop: res.stop.map(|s| match s {
            Stop::Root => (0, Id([0; 16]), Id([0; 16])),
            Stop::MissingParent { child, parent } => (1, child, parent),
            Stop::Cycle { at } => (2, at, Id([0; 16])),
        }),
        chain_break: res
            .chain_break
            .as_ref()
            .map(|b| (b.child, b.parent, b.pos, b.reachable_fraction)),
        bridges: res
            .bridges
            .iter()
            .map(|b| (b.child, b.missing, b.to, b.pos, b.gap_ms))
            .collect(),
        live: res.live as u64,
        session: res.session,
        interrupt: INTERRUPTS
            .iter()
            .position(|i| *i == ending.interrupt)
            .unwrap_or(0) as u8,
        ids: ending.ids.clone(),
        spans,
    }
}

/// A view read back: the answer and how its conversation ends.
pub struct Stored {
    /// The answer of [`OPTIONS`].
    pub resolution: Resolution,
    /// How it ends ([`crate::resume::detect`] of its lines), with what an extension needs.
    pub(crate) ending: Ending,
}

/// A view stored for an earlier state of the same file (appended to since): what
/// [`crate::index::Store`] extends after a plain append. Only its last links are read.
pub(crate) struct Older {
    stamp: Stamp,
    /// The newest checkpoint then.
    pub checkpoint: Option<Id>,
    /// The view as stored, its `chain` holding only the last links (at most the number asked).
    pub stored: Stored,
    /// Links of the view in all.
    pub len: usize,
    /// Rows the file had then: the rows from here on were appended since.
    pub rows: u32,
}

/// Replaces the stored view of `st.file` with `res` (the answer of [`OPTIONS`] for `st`)
/// whose lines end as `ending` says.
pub fn store(
    txn: &WriteTransaction,
    st: &FileState,
    res: &Resolution,
    ending: &Ending,
) -> Result<(), redb::Error> {
    let f = st.file;
    let mut t = txn.open_table(VIEW)?;
    t.retain_in((f, 0)..=(f, u32::MAX), |_, _| false)?;
    put(&mut t, st, res, 0, ending, &[])
}

/// Writes the head of `res` and its links, after `kept` links already stored (the block that
/// holds the last of them is written again with its kept records); `kept_spans`: the
/// [`Head::spans`] of the blocks stored before.
fn put(
    t: &mut redb::Table<'_, (u32, u32), &'static [u8]>,
    st: &FileState,
    res: &Resolution,
    kept: usize,
    ending: &Ending,
    kept_spans: &[(u64, u64)],
) -> Result<(), redb::Error> {
    let f = st.file;
    let len = kept + res.chain.len();
    let mut block = block_of(kept);
    let mut spans = kept_spans.get(..block as usize - 1).map(<[_]>::to_vec);
    if u32::try_from(len).is_err() || len == u32::MAX as usize || spans.is_none() {
        t.retain_in((f, 0)..=(f, u32::MAX), |_, _| false)?;
        return Ok(());
    }
    let spans = spans.as_mut().expect("checked above");
    // The kept records of the first block written.
    let carried = kept % BLOCK;
    let mut links: Vec<Link> = Vec::new();
    if carried > 0 {
        let key = key_of(f, u64::from(block));
        let old = t.get((f, block))?;
        match old
            .as_ref()
            .and_then(|v| untag(&key, v.value()))
            .and_then(decode_block)
        {
            Some(mut l) if l.len() >= carried => {
                l.truncate(carried);
                links = l;
            }
            // Not what the head promised: no view rather than a wrong one.
            _ => {
                drop(old);
                t.retain_in((f, 0)..=(f, u32::MAX), |_, _| false)?;
                return Ok(());
            }
        }
    }
    let mut body = Vec::new();
    let mut in_block = 0;
    let mut before: Option<&Link> = None;
    let mut span = (u64::MAX, 0);
    for link in links.iter().chain(&res.chain) {
        encode_link(link, before, &mut body);
        before = Some(link);
        span = (span.0.min(link.pos.offset), span.1.max(link.pos.offset));
        in_block += 1;
        if in_block == BLOCK {
            let full = std::mem::take(&mut body);
            t.insert(
                (f, block),
                tag(&key_of(f, u64::from(block)), full).as_slice(),
            )?;
            spans.push(std::mem::replace(&mut span, (u64::MAX, 0)));
            block += 1;
            in_block = 0;
            // Each block is read on its own: its first record names no link before.
            before = None;
        }
    }
    if !body.is_empty() {
        t.insert(
            (f, block),
            tag(&key_of(f, u64::from(block)), body).as_slice(),
        )?;
        spans.push(span);
        block += 1;
    }
    // Blocks of a longer view stored before (none when the links after `kept` were spliced
    // again: a splice never drops a link) go.
    t.retain_in((f, block)..=(f, u32::MAX), |_, _| false)?;
    let head = head_of(st, res, len, ending, std::mem::take(spans));
    t.insert((f, 0), encode(&key_of(f, 0), &head).as_slice())?;
    Ok(())
}

/// Stores the view of `older` extended for `st` ([`crate::chain::extend`]): the links after
/// the `ext.kept` first ones are written, the others stay. Returns `false`, writing nothing,
/// when the stored view is no longer `older` (another process stored one meanwhile).
pub(crate) fn store_extended(
    txn: &WriteTransaction,
    st: &FileState,
    older: &Older,
    ext: &crate::chain::extend::Extended,
    ending: &Ending,
) -> Result<bool, redb::Error> {
    let f = st.file;
    let mut t = txn.open_table(VIEW)?;
    let current = t
        .get((f, 0))?
        .and_then(|v| decode::<Head>(&key_of(f, 0), v.value()));
    let Some(current) = current.filter(|h| h.stamp == older.stamp && h.len as usize == older.len)
    else {
        return Ok(false);
    };
    put(
        &mut t,
        st,
        &ext.resolution,
        ext.kept,
        ending,
        &current.spans,
    )?;
    Ok(true)
}

/// Drops the stored view of file `f`.
pub fn clear(txn: &WriteTransaction, f: u32) -> Result<(), redb::Error> {
    txn.open_table(VIEW)?
        .retain_in((f, 0)..=(f, u32::MAX), |_, _| false)?;
    Ok(())
}

/// The stored view of `st`, read with one range scan; `None` when none was stored for this
/// state of the file; [`IndexFault::Damaged`] when a value fails its checksum or links are
/// missing.
pub fn load(
    t: &impl ReadableTable<(u32, u32), &'static [u8]>,
    st: &FileState,
) -> Result<Option<Stored>, IndexFault> {
    let now = Stamp::of(st);
    Ok(load_if(t, st.file, |s| *s == now, None)?.map(|(_, stored, _)| stored))
}

/// Whether a view is stored for `st` (only its head is read).
pub fn stored_for(
    t: &impl ReadableTable<(u32, u32), &'static [u8]>,
    st: &FileState,
) -> Result<bool, IndexFault> {
    let now = Stamp::of(st);
    Ok(load_if(t, st.file, |s| *s == now, Some(0))?.is_some())
}

/// The view stored for an earlier state of the file `st` describes, if one is (same file:
/// device and inode; fewer bytes indexed), with only its last `last` links read.
pub(crate) fn load_older(
    t: &impl ReadableTable<(u32, u32), &'static [u8]>,
    st: &FileState,
    last: usize,
) -> Result<Option<Older>, IndexFault> {
    let older = |s: &Stamp| {
        (s.dev, s.ino) == (st.dev, st.ino) && s.indexed_len < st.indexed_len && s.rows <= st.rows
    };
    Ok(
        load_if(t, st.file, older, Some(last))?.map(|(stamp, stored, len)| Older {
            rows: stamp.rows,
            checkpoint: stamp.checkpoint,
            stamp,
            stored,
            len,
        }),
    )
}

/// The links of file `f` from link `first` (0-based) to `len`, in order: one range scan over
/// their blocks with its iteration and values under the guard, each record decoded where redb
/// holds it (no copy).
fn load_links(
    t: &impl ReadableTable<(u32, u32), &'static [u8]>,
    f: u32,
    first: usize,
    len: usize,
) -> Result<Vec<Link>, IndexFault> {
    let damaged = |what: String| IndexFault::damaged("view", what);
    if first >= len {
        return Ok(Vec::new());
    }
    let (from, to) = (block_of(first), block_of(len - 1));
    let mut chain = Vec::with_capacity(len - first);
    let mut fault = None;
    read("view", || {
        for (expect, item) in (from..).zip(t.range((f, from)..=(f, to))?) {
            let (key, value) = item?;
            let block = key.value().1;
            let at = (block as usize - 1) * BLOCK;
            let want = BLOCK.min(len - at);
            let links = untag(&key_of(f, u64::from(block)), value.value())
                .filter(|_| block == expect)
                .and_then(decode_block)
                .filter(|l| l.len() == want);
            let Some(links) = links else {
                fault = Some(block);
                break;
            };
            chain.extend(links.into_iter().skip(first.saturating_sub(at)));
        }
        Ok::<_, redb::StorageError>(())
    })?;
    if let Some(block) = fault {
        return Err(damaged(format!(
            "block {block} fails its checksum or is out of place"
        )));
    }
    if chain.len() != len - first {
        return Err(damaged(format!(
            "{} links from {first} stored, {len} expected",
            chain.len() + first
        )));
    }
    Ok(chain)
}

/// Which of `lines` (a line's offset and its uuid) are links of the view stored for `st`;
/// `None` when no view is stored for this state of the file. Only the blocks whose span
/// ([`Head::spans`]) holds a line asked for are read.
#[cfg(feature = "search")]
pub fn contains(
    t: &impl ReadableTable<(u32, u32), &'static [u8]>,
    st: &FileState,
    lines: &[(u64, Id)],
) -> Result<Option<Vec<bool>>, IndexFault> {
    let damaged = |what: String| IndexFault::damaged("view", what);
    let f = st.file;
    let Some(head) = read_head(t, f)?.filter(|h| h.stamp == Stamp::of(st)) else {
        return Ok(None);
    };
    let len = head.len as usize;
    if head.spans.len() != len.div_ceil(BLOCK) {
        return Err(damaged(format!(
            "{} block spans for {len} links",
            head.spans.len()
        )));
    }
    let mut on = vec![false; lines.len()];
    for (i, &(lo, hi)) in head.spans.iter().enumerate() {
        let inside: Vec<usize> = (0..lines.len())
            .filter(|&k| !on[k] && (lo..=hi).contains(&lines[k].0))
            .collect();
        if inside.is_empty() {
            continue;
        }
        let at = i * BLOCK;
        for l in load_links(t, f, at, len.min(at + BLOCK))? {
            for &k in &inside {
                on[k] |= (l.pos.offset, l.uuid) == lines[k];
            }
        }
    }
    Ok(Some(on))
}

/// The head of the view stored for file `f`, if one is; [`IndexFault::Damaged`] when it
/// fails its checksum.
fn read_head(
    t: &impl ReadableTable<(u32, u32), &'static [u8]>,
    f: u32,
) -> Result<Option<Head>, IndexFault> {
    let head = read("view", || {
        t.get((f, 0)).map(|v| v.map(|v| v.value().to_vec()))
    })?;
    let Some(head) = head else {
        return Ok(None);
    };
    decode::<Head>(&key_of(f, 0), &head)
        .map(Some)
        .ok_or_else(|| IndexFault::damaged("view", String::from("the head fails its checksum")))
}

/// The stored view of file `f` when its stamp passes `accept`, with its link count; with
/// `last`, only that many of its last links are read.
fn load_if(
    t: &impl ReadableTable<(u32, u32), &'static [u8]>,
    f: u32,
    accept: impl Fn(&Stamp) -> bool,
    last: Option<usize>,
) -> Result<Option<(Stamp, Stored, usize)>, IndexFault> {
    let damaged = |what: String| IndexFault::damaged("view", what);
    let Some(head) = read_head(t, f)?.filter(|h| accept(&h.stamp)) else {
        return Ok(None);
    };
    let len = head.len as usize;
    let first = last.map_or(0, |k| len.saturating_sub(k));
    let chain = load_links(t, f, first, len)?;
    let leaf = match head.leaf {
        Some((id, code)) => Some((
            id,
            *RULES
                .get(code as usize)
                .ok_or_else(|| damaged("unknown leaf rule".into()))?,
        )),
        None => None,
    };
    let stop = match head.stop {
        None => None,
        Some((0, _, _)) => Some(Stop::Root),
        Some((1, child, parent)) => Some(Stop::MissingParent { child, parent }),
        Some((2, at, _)) => Some(Stop::Cycle { at }),
        Some(_) => return Err(damaged("unknown walk end".into())),
    };
    let interrupt = *INTERRUPTS
        .get(head.interrupt as usize)
        .ok_or_else(|| damaged("unknown interrupt".into()))?;
    let resolution = Resolution {
        leaf,
        chain,
        stop,
        chain_break: head
            .chain_break
            .map(|(child, parent, pos, reachable_fraction)| ChainBreak {
                child,
                parent,
                pos,
                reachable_fraction,
            }),
        bridges: head
            .bridges
            .into_iter()
            .map(|(child, missing, to, pos, gap_ms)| ChainBridge {
                child,
                missing,
                to,
                pos,
                gap_ms,
            })
            .collect(),
        live: usize::try_from(head.live).map_err(|_| damaged("live count".into()))?,
        leaves: Vec::new(),
        session: head.session,
    };
    Ok(Some((
        head.stamp,
        Stored {
            resolution,
            ending: Ending {
                interrupt,
                ids: head.ids,
            },
        },
        head.len as usize,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;
    use std::io::Write;

    fn line(n: u64, parent: Option<u64>) -> String {
        let id = |n: u64| format!("00000000-0000-4000-8000-{n:012x}");
        let parent = parent.map_or("null".to_owned(), |p| format!("\"{}\"", id(p)));
        let ty = if n % 2 == 1 { "user" } else { "assistant" };
        format!(
            r#"{{"parentUuid":{parent},"type":"{ty}","message":{{"role":"{ty}","content":"x"}},"uuid":"{}","sessionId":"s","timestamp":"2026-01-01T00:00:0{n}.000Z"}}"#,
            id(n)
        ) + "\n"
    }

    fn append(path: &std::path::Path, text: &str) {
        let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }

    /// A view stored for an older state of the file that the append does not continue (here a
    /// branch from an earlier message) is dropped by the catch-up, not served: the answer is
    /// walked, and that resume stores the view again.
    #[test]
    fn a_view_of_an_older_state_is_not_served() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p/t.jsonl");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, line(1, None) + &line(2, Some(1))).unwrap();
        let store = Store::new(dir.path().join("idx"));
        let resume = || store.conversation(&path, &crate::ResumeOptions::default());
        store.catch_up(&path).unwrap();
        assert!(
            store.materialised(&path).unwrap().is_none(),
            "a catch-up walked"
        );
        resume().unwrap();
        let stored = store
            .materialised(&path)
            .unwrap()
            .expect("a view is stored");
        assert_eq!(stored.resolution.chain.len(), 2);
        append(&path, &line(3, Some(1)));
        let done = store.catch_up(&path).unwrap();
        assert_eq!(done.view, crate::sidecar::ViewUpdate::Dropped);
        assert!(
            store.materialised(&path).unwrap().is_none(),
            "the view of the older state was served"
        );
        let walked = store.resolve_indexed(&path, OPTIONS).unwrap().unwrap();
        assert!(!walked.materialised());
        assert_eq!(walked.resolution.chain.len(), 2, "1 and its newer child 3");
        resume().unwrap();
        let again = store.materialised(&path).unwrap().expect("stored again");
        assert_eq!(again.resolution, walked.resolution);
    }

    /// An append that continues the chain extends the stored view at the catch-up: the next
    /// resume reads it, and it is the full scan's answer (with how the conversation ends).
    #[test]
    fn an_appended_continuation_extends_the_view() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p/t.jsonl");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, line(1, None) + &line(2, Some(1))).unwrap();
        let store = Store::new(dir.path().join("idx"));
        let opts = crate::ResumeOptions::default();
        store.conversation(&path, &opts).unwrap();
        for n in 3..=6 {
            append(&path, &line(n, Some(n - 1)));
            let done = store.catch_up(&path).unwrap();
            assert_eq!(done.view, crate::sidecar::ViewUpdate::Extended, "line {n}");
            let ans = store.resolve_indexed(&path, OPTIONS).unwrap().unwrap();
            assert!(ans.materialised(), "line {n}: walked");
            let scan = Store::reference(&path, OPTIONS, String::new()).unwrap();
            assert_eq!(ans.resolution, scan.resolution, "line {n}");
            let walked = store
                .conversation(
                    &path,
                    &crate::ResumeOptions {
                        no_index: true,
                        ..opts.clone()
                    },
                )
                .unwrap();
            assert_eq!(ans.interrupt, Some(walked.interrupt()), "line {n}");
        }
    }

    /// A view longer than a block, extended one append at a time across a block's end and
    /// then by several blocks at once, stays the full scan's answer, read from the stored
    /// blocks (the block holding the kept end is written again with its kept records).
    #[test]
    fn a_view_extended_across_its_blocks_matches_the_scan() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p/t.jsonl");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let start = 2 * BLOCK as u64 - 2;
        let text: String = (1..=start)
            .map(|n| line(n, (n > 1).then(|| n - 1)))
            .collect();
        std::fs::write(&path, text).unwrap();
        let store = Store::new(dir.path().join("idx"));
        store
            .conversation(&path, &crate::ResumeOptions::default())
            .unwrap();
        let check = |n: u64| {
            let ans = store.resolve_indexed(&path, OPTIONS).unwrap().unwrap();
            assert!(ans.materialised(), "line {n}: walked");
            let scan = Store::reference(&path, OPTIONS, String::new()).unwrap();
            assert_eq!(ans.resolution, scan.resolution, "line {n}");
            assert_eq!(ans.resolution.chain.len() as u64, n);
        };
        check(start);
        for n in start + 1..=start + 4 {
            append(&path, &line(n, Some(n - 1)));
            let done = store.catch_up(&path).unwrap();
            assert_eq!(done.view, crate::sidecar::ViewUpdate::Extended, "line {n}");
            check(n);
        }
        let end = start + 4 + 2 * BLOCK as u64 + 3;
        let more: String = (start + 5..=end).map(|n| line(n, Some(n - 1))).collect();
        append(&path, &more);
        store.catch_up(&path).unwrap();
        store
            .conversation(&path, &crate::ResumeOptions::default())
            .unwrap();
        check(end);
    }

    /// A tool result appended for a call of a response already on the view (a parallel call
    /// answered late) is spliced after that response, not at the end: the catch-up splices the
    /// end of the view again from that response on.
    #[test]
    fn a_late_parallel_result_is_not_appended_at_the_end() {
        let id = |n: u64| format!("00000000-0000-4000-8000-{n:012x}");
        let entry = |n: u64, parent: u64, ty: &str, message: &str| {
            format!(
                r#"{{"parentUuid":"{}","type":"{ty}","message":{message},"uuid":"{}","sessionId":"s","timestamp":"2026-01-01T00:00:{n:02}.000Z"}}"#,
                id(parent),
                id(n)
            ) + "\n"
        };
        let call = |tool: &str| {
            format!(
                r#"{{"id":"m1","role":"assistant","content":[{{"type":"tool_use","id":"{tool}","name":"Bash","input":{{}}}}]}}"#
            )
        };
        let result = |tool: &str| {
            format!(
                r#"{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"{tool}","content":"ok"}}]}}"#
            )
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p/t.jsonl");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let first = line(1, None)
            + &entry(2, 1, "assistant", &call("X"))
            + &entry(3, 2, "assistant", &call("Y"))
            + &entry(5, 3, "user", &result("Y"));
        std::fs::write(&path, first).unwrap();
        let store = Store::new(dir.path().join("idx"));
        store
            .conversation(&path, &crate::ResumeOptions::default())
            .unwrap();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        let reply = r#"{"id":"m2","role":"assistant","content":[{"type":"text","text":"done"}]}"#;
        f.write_all(
            (entry(4, 2, "user", &result("X")) + &entry(6, 5, "assistant", reply)).as_bytes(),
        )
        .unwrap();
        let done = store.catch_up(&path).unwrap();
        assert_eq!(done.view, crate::sidecar::ViewUpdate::Extended);
        let scan = Store::reference(&path, OPTIONS, String::new()).unwrap();
        let order: Vec<Id> = scan.resolution.chain.iter().map(|l| l.uuid).collect();
        let want: Vec<Id> = [1, 2, 3, 4, 5, 6]
            .iter()
            .map(|n| Id::from_text(&id(*n)))
            .collect();
        assert_eq!(order, want, "the late result is spliced after its response");
        let ans = store.resolve_indexed(&path, OPTIONS).unwrap().unwrap();
        assert!(ans.materialised());
        assert_eq!(ans.resolution, scan.resolution);
    }

    /// Links of every shape come back from their block: parents that are and are not the
    /// link before, written parents that are and are not the parent, lines and offsets going
    /// back (a splice) and at the edges of `u64`; a body cut short or longer does not decode.
    #[test]
    fn links_survive_their_block() {
        let link = |n: u8, parent: Option<u8>, line: u64, offset: u64| Link {
            uuid: Id([n; 16]),
            pos: LinePos {
                line,
                offset,
                len: 99,
            },
            kind: Kind::Assistant,
            parent: parent.map(|p| Id([p; 16])),
            written_parent: parent.map(|p| Id([p; 16])),
            spliced: false,
            zero_usage: false,
        };
        let mut links = vec![
            link(1, None, 0, 0),
            link(2, Some(1), 1, 100),
            link(3, Some(2), 2, 200),
            link(4, Some(9), 9, 5_000),
            link(5, Some(4), 3, 300),
            link(6, Some(5), u64::MAX, u64::MAX),
            link(7, Some(6), 0, 0),
        ];
        links[2].written_parent = Some(Id([8; 16]));
        links[3].written_parent = None;
        links[4].spliced = true;
        links[5].zero_usage = true;
        links[6].kind = Kind::User;
        links[6].pos.len = u64::MAX;
        let mut body = Vec::new();
        let mut before = None;
        for l in &links {
            encode_link(l, before, &mut body);
            before = Some(l);
        }
        assert_eq!(decode_block(&body), Some(links.clone()));
        for len in [1, body.len() / 2, body.len() - 1] {
            assert_ne!(
                decode_block(&body[..len]),
                Some(links.clone()),
                "cut at {len}"
            );
        }
        let mut longer = body.clone();
        longer.push(0);
        assert_eq!(decode_block(&longer), None);
        // A link on a chain (parent before it, the next line) is a fraction of the 74 bytes
        // of fixed fields.
        let mut b = Vec::new();
        encode_link(&links[2], Some(&links[1]), &mut b);
        let at = b.len();
        let mut next = links[2].clone();
        next.uuid = Id([10; 16]);
        next.parent = Some(links[2].uuid);
        next.written_parent = next.parent;
        next.pos.line += 1;
        next.pos.offset += next.pos.len + 1;
        encode_link(&next, Some(&links[2]), &mut b);
        assert!(b.len() - at <= 22, "{}", b.len() - at);
    }

    #[test]
    fn every_rule_has_a_code() {
        for r in RULES {
            assert_eq!(RULES[rule_code(r) as usize], r);
        }
        assert_eq!(INTERRUPTS.len(), 3, "a new interrupt needs a code");
    }
}
