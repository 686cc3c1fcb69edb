//! Resume without writing: the index as it is, plus the lines appended since, read in memory.
//!
//! # Context
//! A resume right after an append caught the index up first: a read-write open, a write
//! transaction for the new rows, another to extend the stored view ([`crate::index::write::extension`]), and
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
//! Leaf facts change only for the first user/assistant at or above a new row's parent (the
//! argument of `crate::index::write::incremental`): such a turn is no leaf when a new turn is its child, and
//! still a leaf when it was one (or is new) and only non-turn rows were appended below it;
//! otherwise step 7 is computed for it from its children, old and new
//! ([`leaf_by_children`], the function the incremental update uses). A walk past
//! [`WALK_LIMIT`] rows leaves it unknown: [`Graph::is_leaf`] answers `false` ("unknown" is
//! allowed there) and the list of every leaf is refused, so an extension that needs it gives
//! up. Nothing is written: the next catch-up (`chainlog index`, a writer, a
//! resume past the limits) stores the rows. Whatever is declined is caught up as before.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;

use redb::ReadTransaction;

use crate::chain::leaf::leaf_by_children;
use crate::chain::{Graph, MessageRow, Resolution};
use crate::error::IndexFault;
use crate::id::{Id, IdNames};
use crate::index::db::guard;
use crate::index::format::schema::{CHUNKS, FileState, VIEW};
use crate::index::read::query::IndexGraph;
use crate::index::read::view;
use crate::index::write::extension;
use crate::index::write::ingest::{self, INCREMENTAL_MAX_ROWS, Stat};
use crate::resume::interrupt::Ending;
use crate::transcript::envelope::{Entry, Flags, Kind, MessageHead, parse_framed};
use crate::transcript::frame::{FrameSummary, Framer, LinePos};

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
    /// a new row's parent), each with what was appended below it.
    zones: HashMap<usize, Below>,
}

/// What an append put below a turn (the rows whose first user/assistant above is that turn).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Below {
    /// Only non-turn rows: a terminal is below the turn now, and no new turn child.
    Others,
    /// A turn, under a non-turn row: whether a terminal is left below the turn is computed
    /// from its children.
    TurnUnderOther,
    /// A turn child: the turn is no leaf (format.md §A5 step 7).
    TurnChild,
}

impl<'a> Overlay<'a> {
    fn new(inner: &'a IndexGraph, base: usize, tail: &'a Tail) -> Result<Self, Unsure> {
        let mut g = Overlay {
            inner,
            base,
            tail,
            zones: HashMap::new(),
        };
        let mut zones: HashMap<usize, Below> = HashMap::new();
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
                    let below = match (row.head.kind.is_turn(), step) {
                        (false, _) => Below::Others,
                        (true, 0) => Below::TurnChild,
                        (true, _) => Below::TurnUnderOther,
                    };
                    let z = zones.entry(cur).or_insert(below);
                    *z = (*z).max(below);
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

    /// Whether row `i` is a leaf now; `None`: not known from the appended rows.
    fn leaf_now(&self, i: usize) -> Result<Option<bool>, Unsure> {
        let new = self.new_row(i);
        if new.is_some_and(|r| !r.head.kind.is_turn()) {
            return Ok(Some(false));
        }
        Ok(match (new.is_some(), self.zones.get(&i)) {
            (_, Some(Below::TurnChild)) => Some(false),
            // A new turn: a terminal itself, or with only non-turn rows below it.
            (true, None | Some(Below::Others)) => Some(true),
            (false, None) => Some(self.inner.is_leaf(i)?),
            // Still a leaf if it was one.
            (false, Some(Below::Others)) if self.inner.is_leaf(i)? => Some(true),
            // Otherwise (a turn under a non-turn row below it, or an old non-leaf that may have
            // had no terminal below it) step 7 over its children, the new rows among them.
            _ => {
                let id = self.head(i)?.uuid;
                leaf_by_children(id, &|c| self.children(c), WALK_LIMIT)?
            }
        })
    }

    /// The live children of `id` by effective parent, old and new, each with whether it is a
    /// user/assistant.
    fn children(&self, id: Id) -> Result<Vec<(Id, bool)>, Unsure> {
        let mut out: Vec<(Id, bool)> = if self.tail.at.contains_key(&id) {
            Vec::new()
        } else {
            self.inner
                .children_of(id)?
                .into_iter()
                .map(|(_, r)| (r.head.uuid, r.head.kind.is_turn()))
                .collect()
        };
        out.extend(
            self.tail
                .rows
                .iter()
                .filter(|r| r.head.parent == Some(id))
                .map(|r| (r.head.uuid, r.head.kind.is_turn())),
        );
        Ok(out)
    }

    fn new_row(&self, i: usize) -> Option<&MessageRow> {
        i.checked_sub(self.base).and_then(|k| self.tail.rows.get(k))
    }

    /// One past the last new row's map position.
    fn live_end(&self) -> usize {
        self.base + self.tail.rows.len()
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
        // Only the turns in `zones` and the new rows can have changed.
        for &t in self.zones.keys() {
            if self.leaf_now(t)?.is_none() {
                return Err(Unsure::Unknown);
            }
        }
        let mut out = Vec::new();
        for i in self
            .inner
            .leaves()?
            .into_iter()
            .chain(self.base..self.live_end())
        {
            if self.leaf_now(i)? == Some(true) {
                out.push(i);
            }
        }
        Ok(out)
    }

    fn zeroed(&self, id: Id) -> Result<bool, Unsure> {
        if self.tail.at.contains_key(&id) {
            return Ok(false);
        }
        Ok(self.inner.zeroed(id)?)
    }

    fn group(&self, mid: u64) -> Result<Vec<usize>, Unsure> {
        let new: Vec<usize> = (self.base..)
            .zip(&self.tail.rows)
            .filter(|(_, r)| r.head.kind == Kind::Assistant && r.head.message_id == Some(mid))
            .map(|(i, _)| i)
            .collect();
        // A response is asked for by a row of it. With no new line of it, that row is
        // indexed and so is its entry (a missing one is damage, as in `IndexGraph::group`);
        // a response with new lines may have no indexed row yet.
        let mut out = self.inner.response(mid, new.is_empty())?;
        out.extend(new);
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
        Ok(self.leaf_now(i)? == Some(true))
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
    // A file that did not grow past what was seen (the indexed bytes and a torn tail) may have
    // been edited in place anywhere: the catch-up checks every chunk then.
    let seen = st.indexed_len + st.torn_tail.map_or(0, |(_, l)| l);
    if (stat.dev, stat.ino) != (st.dev, st.ino)
        || stat.len <= seen
        || stat.len - st.indexed_len > MAX_TAIL_BYTES
    {
        return None;
    }
    let stored = guard::read("view", || txn.open_table(VIEW))
        .and_then(|t| view::load(&t, st))
        .ok()??;
    let file = File::open(transcript).ok()?;
    // The file opened is the one stat'ed (not another renamed over it meanwhile).
    if Stat::from_file(&file).is_none_or(|now| (now.dev, now.ino) != (st.dev, st.ino)) {
        return None;
    }
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
    let (ext, ending) = extension::extend_stored(
        &g,
        transcript,
        &names,
        &stored,
        len,
        st.checkpoint,
        appended,
    )?;
    let mut chain = stored.resolution.chain;
    chain.truncate(ext.kept);
    chain.extend(ext.resolution.chain);
    let resolution = Resolution {
        chain,
        ..ext.resolution
    };
    Some((resolution, ending, names, tail.summary))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::{Projection, Transcript, Tree};
    use crate::index::format::schema;
    use redb::ReadableDatabase;
    use std::io::Write;

    fn line(n: u64, parent: Option<u64>, ty: &str) -> String {
        crate::testing::line(n, parent, ty) + "\n"
    }

    /// `old` indexed, then `new` appended: the scan's leaves, the overlay's leaf list, and
    /// its `is_leaf` of each row.
    fn leaf_facts(old: &str, new: &str) -> (Vec<usize>, Result<Vec<usize>, Unsure>, Vec<bool>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(&path, old).unwrap();
        let db = redb::Database::create(dir.path().join("i.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        schema::create_all(&txn).unwrap();
        let (_, st) = ingest::catch_up(&txn, "t", &path).unwrap();
        txn.commit().unwrap();
        let all = old.to_owned() + new;
        std::fs::write(&path, &all).unwrap();
        let tail = read_tail(&File::open(&path).unwrap(), &st, all.len() as u64).unwrap();
        let read = db.begin_read().unwrap();
        let inner = IndexGraph::new(&read, st.clone()).unwrap();
        let g = Overlay::new(&inner, st.rows as usize, &tail).unwrap();
        let t = Transcript::open(&path).unwrap();
        let tree = Tree::from_rows(&t.rows, &t.progress, Projection::Resume);
        let is_leaf = (0..t.rows.len()).map(|i| g.is_leaf(i).unwrap()).collect();
        (tree.leaves.clone(), g.leaves(), is_leaf)
    }

    /// A response whose rows are all indexed must have its `responses` entry on the overlay
    /// too (a lost one would drop its lines from the splice); a response with new lines only
    /// has none yet and is found in memory.
    #[test]
    fn a_lost_response_entry_of_indexed_rows_is_damage_on_the_overlay_too() {
        use crate::transcript::envelope::hash64;
        let assistant = |n: u64, parent: u64, mid: &str| {
            let id = |n: u64| format!("00000000-0000-4000-8000-{n:012x}");
            format!(
                r#"{{"parentUuid":"{}","type":"assistant","message":{{"id":"{mid}","role":"assistant","content":"x"}},"uuid":"{}","sessionId":"s","timestamp":"2026-01-01T00:00:0{n}.000Z"}}"#,
                id(parent),
                id(n)
            ) + "\n"
        };
        let old = line(1, None, "user") + &assistant(2, 1, "m1") + &assistant(3, 2, "m1");
        let new = line(4, Some(3), "user") + &assistant(5, 4, "m2");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(&path, &old).unwrap();
        let db = redb::Database::create(dir.path().join("i.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        schema::create_all(&txn).unwrap();
        let (_, st) = ingest::catch_up(&txn, "t", &path).unwrap();
        txn.commit().unwrap();
        let all = old + &new;
        std::fs::write(&path, &all).unwrap();
        let tail = read_tail(&File::open(&path).unwrap(), &st, all.len() as u64).unwrap();
        let groups = |db: &redb::Database| {
            let read = db.begin_read().unwrap();
            let inner = IndexGraph::new(&read, st.clone()).unwrap();
            let g = Overlay::new(&inner, st.rows as usize, &tail).unwrap();
            (g.group(hash64("m1")), g.group(hash64("m2")))
        };
        let (m1, m2) = groups(&db);
        assert_eq!((m1.ok(), m2.ok()), (Some(vec![1, 2]), Some(vec![4])));
        let txn = db.begin_write().unwrap();
        txn.open_table(schema::RESPONSES)
            .unwrap()
            .remove((st.file, hash64("m1")))
            .unwrap();
        txn.commit().unwrap();
        let (m1, m2) = groups(&db);
        assert!(matches!(m1, Err(Unsure::Fault)), "{:?}", m1.ok());
        assert_eq!(m2.ok(), Some(vec![4]));
    }

    /// A turn appended under one of two system lines below an assistant leaves the assistant a
    /// leaf (the other line is still a terminal below it), and under the only one makes it no
    /// leaf: the new rows alone cannot tell, the assistant's children do.
    #[test]
    fn a_turn_below_a_non_turn_is_decided_by_the_children() {
        let (user, assistant) = (line(1, None, "user"), line(2, Some(1), "assistant"));
        let two = [user.clone(), assistant.clone(), line(3, Some(2), "system")].concat()
            + &line(4, Some(2), "system");
        let (tree, listed, is_leaf) = leaf_facts(&two, &line(5, Some(3), "user"));
        assert_eq!(tree, vec![1, 4], "the assistant and the new user");
        assert_eq!(listed.unwrap(), tree);
        assert_eq!(is_leaf, vec![false, true, false, false, true]);
        let one = [user, assistant, line(3, Some(2), "system")].concat();
        let (tree, listed, is_leaf) = leaf_facts(&one, &line(5, Some(3), "user"));
        assert_eq!(tree, vec![3], "the new user only");
        assert_eq!(listed.unwrap(), tree);
        assert_eq!(is_leaf, vec![false, false, false, true]);
    }

    /// On every fixture, indexed up to each line and then given the next one to three lines in
    /// memory, the overlay's leaf facts are the full scan's: a row it calls a leaf is one, and
    /// the list of leaves, when it gives one, is the scan's.
    #[test]
    fn the_overlays_leaf_facts_are_the_scans() {
        let (mut listed, mut refused, mut leaves_proven) = (0, 0, 0);
        for src in crate::testing::fixture_files() {
            let text = std::fs::read(&src).unwrap();
            let ends: Vec<usize> = (0..text.len())
                .filter(|&i| text[i] == b'\n')
                .map(|i| i + 1)
                .collect();
            for k in 0..ends.len() {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("t.jsonl");
                std::fs::write(&path, &text[..ends[k]]).unwrap();
                let db = redb::Database::create(dir.path().join("i.redb")).unwrap();
                let txn = db.begin_write().unwrap();
                schema::create_all(&txn).unwrap();
                let (_, st) = ingest::catch_up(&txn, "t", &path).unwrap();
                txn.commit().unwrap();
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .unwrap();
                for j in k + 1..ends.len().min(k + 4) {
                    f.write_all(&text[ends[j - 1]..ends[j]]).unwrap();
                    let file = File::open(&path).unwrap();
                    let Some(tail) = read_tail(&file, &st, ends[j] as u64) else {
                        break;
                    };
                    let read = db.begin_read().unwrap();
                    let inner = IndexGraph::new(&read, st.clone()).unwrap();
                    let plain = tail.rows.iter().all(|row| {
                        !inner.seen(row.head.uuid).unwrap()
                            && row.head.parent.is_none_or(|p| {
                                tail.at.contains_key(&p) || inner.plain_parent(p).unwrap()
                            })
                    });
                    if !plain {
                        break;
                    }
                    let Ok(g) = Overlay::new(&inner, st.rows as usize, &tail) else {
                        continue;
                    };
                    let t = Transcript::open(&path).unwrap();
                    let tree = Tree::from_rows(&t.rows, &t.progress, Projection::Resume);
                    let ctx = format!("{} after {} lines, +{}", src.display(), k + 1, j - k);
                    for i in 0..t.rows.len() {
                        if g.is_leaf(i).unwrap() {
                            leaves_proven += 1;
                            assert!(tree.leaves.contains(&i), "{ctx}: row {i} is no leaf");
                        }
                    }
                    match g.leaves() {
                        Ok(l) => {
                            listed += 1;
                            assert_eq!(l, tree.leaves, "{ctx}");
                        }
                        Err(_) => refused += 1,
                    }
                }
            }
        }
        eprintln!("leaf lists given: {listed}, refused: {refused}; leaves proven: {leaves_proven}");
        assert!(
            listed > 5 * refused && leaves_proven > 100,
            "{listed} / {refused}"
        );
    }
}
