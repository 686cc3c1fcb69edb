//! Resume without writing: the index as it is, plus the lines appended since, read in memory.
//!
//! # Context
//! A resume right after an append caught the index up first: a read-write open, a write
//! transaction for the new rows, another to extend the stored view ([`super::extension`]), and
//! redb's close — about 1.7 ms, more than the resume itself for short views, with the sidecar
//! locked meanwhile. The answer needs none of it stored.
//!
//! # Design
//! When the transcript only grew since it was indexed (same identity, the fingerprint of the
//! indexed prefix's end unchanged), a view is stored for the indexed state, and the bytes since
//! are few ([`MAX_TAIL_BYTES`], at most [`INCREMENTAL_MAX_ROWS`] messages), a read-only resume
//! parses those lines in memory. If they are a plain append — what a catch-up would store
//! without deriving the projections again: no progress entry, compaction or snip
//! ([`ingest::structural`]), no preserved segment or snip list, no bad or repaired line, no id
//! the index has seen or that is not a UUID, every parent a live message that is no progress
//! entry and not the preserved segment's anchor ([`IndexGraph::plain_parent`]) or a new row —
//! the stored view is extended over [`Overlay`] by the code a catch-up runs
//! ([`extension::extend_stored`]): the index's read-only snapshot with the new rows on top.
//!
//! The overlay answers only what it can prove from the new rows. Leaf facts change only for
//! the first user/assistant at or above a new row's parent (the argument of
//! `super::incremental`): such a turn is still a leaf when it was one (or is new) and only
//! non-turn rows were appended below it; otherwise the overlay does not know ([`Graph::is_leaf`]
//! may answer `false` for "unknown"), and the list of every leaf is refused: an extension that
//! needs it gives up. Nothing is written: the next catch-up (`chainlog index`, a writer, a
//! resume past the limits) stores the rows. Whatever is declined is caught up as before.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;

use redb::ReadTransaction;

use super::extension;
use super::guard;
use super::ingest::{self, INCREMENTAL_MAX_ROWS, Stat};
use super::query::IndexGraph;
use super::schema::{CHUNKS, FileState, VIEW};
use super::state::IndexFault;
use super::view;
use crate::chain::{Graph, MessageRow, Resolution};
use crate::resume::interrupt::Ending;
use crate::transcript::envelope::{Entry, Flags, Kind, MessageHead, parse_framed};
use crate::transcript::frame::{FrameSummary, Framer, LinePos};
use crate::transcript::id::{Id, IdNames};

/// Bytes appended since the last catch-up that a read-only resume parses in memory; more
/// is caught up (and stored) first.
pub const MAX_TAIL_BYTES: u64 = 1 << 20;

/// Steps through non-turn rows when looking for the turn above a new row.
const WALK_LIMIT: usize = 1024;

/// The lines appended since the last catch-up, parsed: the new rows in map order.
struct Tail {
    rows: Vec<MessageRow>,
    /// Row of each new uuid (index into `rows`).
    at: HashMap<Id, usize>,
    /// The newest checkpoint among the new lines.
    checkpoint: Option<Id>,
    summary: FrameSummary,
}

/// Reads and parses the complete lines of `file` after `st.indexed_len` (up to `len`);
/// `None` when they are no plain append this module can answer (see the module doc).
fn read_tail(file: &File, st: &FileState, len: u64) -> Option<Tail> {
    let mut bytes = vec![0u8; usize::try_from(len - st.indexed_len).ok()?];
    file.read_exact_at(&mut bytes, st.indexed_len).ok()?;
    let mut names = IdNames::default();
    let mut tail = Tail {
        rows: Vec::new(),
        at: HashMap::new(),
        checkpoint: None,
        summary: FrameSummary::default(),
    };
    let mut plain = true;
    tail.summary = Framer::resume_at(st.indexed_len, st.lines).frame_slice(&bytes, |line| {
        if !plain {
            return;
        }
        let mut parsed = parse_framed(&line, &mut names);
        if parsed.repaired || parsed.note_problem().is_some() {
            plain = false;
            return;
        }
        match parsed.entry {
            Err(_) => plain = false,
            Ok(Entry::Meta(meta)) => {
                // The one metadata line the resume view depends on (as `ingest` reads it).
                if let (true, Some(leaf)) = (meta.ty == "last-prompt", meta.leaf) {
                    tail.checkpoint = Some(leaf);
                }
            }
            Ok(Entry::Message(head)) => {
                if ingest::structural(&head)
                    || head.preserved.is_some()
                    || !head.snip_removed.is_empty()
                    || tail.at.contains_key(&head.uuid)
                    || tail.rows.len() >= INCREMENTAL_MAX_ROWS
                {
                    plain = false;
                    return;
                }
                tail.at.insert(head.uuid, tail.rows.len());
                tail.rows.push(MessageRow {
                    head,
                    pos: line.pos,
                });
            }
        }
    });
    // Ids that are not UUIDs are kept in the index's `names`: a catch-up stores them.
    (plain && names.iter().next().is_none()).then_some(tail)
}

/// Why the overlay gave no answer.
#[derive(Debug)]
enum Unsure {
    /// Not provable from the new rows (the caller catches up instead).
    Unknown,
    /// The index failed (the caller catches up, which finds out).
    Fault,
}

impl From<IndexFault> for Unsure {
    fn from(_: IndexFault) -> Self {
        Unsure::Fault
    }
}

/// The index's projected tree with the rows of a plain append on top: rows from `base` on are
/// the new ones.
struct Overlay<'a> {
    inner: &'a IndexGraph,
    base: usize,
    tail: &'a Tail,
    /// The turns whose leaf facts the append can change (the first user/assistant at or above
    /// a new row's parent), each with whether only non-turn rows were appended below it.
    zones: HashMap<usize, bool>,
}

impl<'a> Overlay<'a> {
    fn new(inner: &'a IndexGraph, base: usize, tail: &'a Tail) -> Result<Self, Unsure> {
        let mut g = Overlay {
            inner,
            base,
            tail,
            zones: HashMap::new(),
        };
        let mut zones = HashMap::new();
        for row in &tail.rows {
            let Some(p) = row.head.parent else { continue };
            let Some(mut cur) = g.get(p)? else {
                return Err(Unsure::Unknown);
            };
            for step in 0.. {
                if step > WALK_LIMIT {
                    return Err(Unsure::Unknown);
                }
                if g.head(cur)?.kind.is_turn() {
                    let only_others = zones.entry(cur).or_insert(true);
                    *only_others &= !row.head.kind.is_turn();
                    break;
                }
                match g.parent_of(cur)? {
                    Some(p) => match g.get(p)? {
                        Some(next) => cur = next,
                        None => break,
                    },
                    None => break,
                }
            }
        }
        g.zones = zones;
        Ok(g)
    }

    fn new_row(&self, i: usize) -> Option<&MessageRow> {
        i.checked_sub(self.base).and_then(|k| self.tail.rows.get(k))
    }

    /// New rows whose parent is `parent` and that pass `keep`, as map positions.
    fn new_children(&self, parent: Id, keep: impl Fn(&MessageHead) -> bool) -> Vec<usize> {
        (self.base..)
            .zip(&self.tail.rows)
            .filter(|(_, r)| r.head.parent == Some(parent) && keep(&r.head))
            .map(|(i, _)| i)
            .collect()
    }
}

impl Graph for Overlay<'_> {
    type Error = Unsure;

    fn get(&self, id: Id) -> Result<Option<usize>, Unsure> {
        match self.tail.at.get(&id) {
            Some(&k) => Ok(Some(self.base + k)),
            None => Ok(self.inner.get(id)?),
        }
    }

    fn head(&self, i: usize) -> Result<Cow<'_, MessageHead>, Unsure> {
        match self.new_row(i) {
            Some(r) => Ok(Cow::Borrowed(&r.head)),
            None => Ok(Cow::Owned(self.inner.head(i)?.into_owned())),
        }
    }

    fn pos(&self, i: usize) -> Result<LinePos, Unsure> {
        match self.new_row(i) {
            Some(r) => Ok(r.pos),
            None => Ok(self.inner.pos(i)?),
        }
    }

    fn parent_of(&self, i: usize) -> Result<Option<Id>, Unsure> {
        // A plain append re-points no parent: a new row's effective parent is its own.
        match self.new_row(i) {
            Some(r) => Ok(r.head.parent),
            None => Ok(self.inner.parent_of(i)?),
        }
    }

    fn live_count(&self) -> usize {
        self.inner.live_count() + self.tail.rows.len()
    }

    fn leaves(&self) -> Result<Vec<usize>, Unsure> {
        Err(Unsure::Unknown)
    }

    fn zeroed(&self, id: Id) -> Result<bool, Unsure> {
        if self.tail.at.contains_key(&id) {
            return Ok(false);
        }
        Ok(self.inner.zeroed(id)?)
    }

    fn group(&self, mid: u64) -> Result<Vec<usize>, Unsure> {
        let mut out = self.inner.group(mid)?;
        out.extend(
            (self.base..)
                .zip(&self.tail.rows)
                .filter(|(_, r)| r.head.kind == Kind::Assistant && r.head.message_id == Some(mid))
                .map(|(i, _)| i),
        );
        Ok(out)
    }

    fn tool_results_of(&self, parent: Id) -> Result<Vec<usize>, Unsure> {
        let mut out = self.inner.tool_results_of(parent)?;
        out.extend(self.new_children(parent, |h| {
            h.kind == Kind::User && h.flags.has(Flags::TOOL_RESULT)
        }));
        Ok(out)
    }

    fn attachments_of(&self, parent: Id) -> Result<Vec<usize>, Unsure> {
        let mut out = self.inner.attachments_of(parent)?;
        out.extend(self.new_children(parent, |h| h.kind == Kind::Attachment));
        Ok(out)
    }

    fn is_leaf(&self, i: usize) -> Result<bool, Unsure> {
        let before = match self.new_row(i) {
            Some(r) => r.head.kind.is_turn(),
            None => self.inner.is_leaf(i)?,
        };
        Ok(before && self.zones.get(&i).copied().unwrap_or(true))
    }

    fn all_sidechain(&self) -> bool {
        self.inner.all_sidechain()
            && self
                .tail
                .rows
                .iter()
                .all(|r| r.head.flags.has(Flags::SIDECHAIN))
    }

    fn checkpoints(&self) -> Cow<'_, [Id]> {
        let mut out = self.inner.checkpoints().into_owned();
        if let Some(c) = self.tail.checkpoint {
            out = vec![c];
        }
        Cow::Owned(out)
    }
}

/// The default resume view of `transcript` (stat `stat`) from the index state `st` read in
/// `txn` and the lines appended since, without writing; with the lines read from the tail and
/// the bytes covered. `None` when the append is not answered this way (see the module doc).
pub(crate) fn answer(
    txn: &ReadTransaction,
    st: &FileState,
    transcript: &Path,
    stat: &Stat,
) -> Option<(Resolution, Ending, IdNames, FrameSummary)> {
    if (stat.dev, stat.ino) != (st.dev, st.ino)
        || stat.len <= st.indexed_len
        || stat.len - st.indexed_len > MAX_TAIL_BYTES
    {
        return None;
    }
    let stored = guard::read("view", || txn.open_table(VIEW))
        .and_then(|t| view::load(&t, st))
        .ok()??;
    let file = File::open(transcript).ok()?;
    let chunks = guard::read("chunks", || txn.open_table(CHUNKS)).ok()?;
    if !ingest::prefix_matches(&chunks, &file, st).ok()? {
        return None;
    }
    let tail = read_tail(&file, st, stat.len)?;
    if tail.rows.is_empty() && tail.checkpoint.is_none() {
        // Only a torn line or metadata: the view stands.
        let summary = tail.summary;
        let names = IndexGraph::names(txn, st).ok()?;
        return Some((stored.resolution, stored.ending, names, summary));
    }
    let inner = IndexGraph::new(txn, st.clone()).ok()?;
    for row in &tail.rows {
        if inner.seen(row.head.uuid).ok()? {
            return None;
        }
        if let Some(p) = row.head.parent
            && !tail.at.contains_key(&p)
            && !inner.plain_parent(p).ok()?
        {
            return None;
        }
    }
    let base = st.rows as usize;
    let g = Overlay::new(&inner, base, &tail).ok()?;
    let names = IndexGraph::names(txn, st).ok()?;
    let appended: Range<usize> = base..base + tail.rows.len();
    let len = stored.resolution.chain.len();
    let (ext, ending) =
        extension::extend_stored(&g, transcript, &names, &stored, len, st.checkpoint, appended)?;
    let mut chain = stored.resolution.chain;
    chain.truncate(ext.kept);
    chain.extend(ext.resolution.chain);
    let resolution = Resolution {
        chain,
        ..ext.resolution
    };
    Some((resolution, ending, names, tail.summary))
}
