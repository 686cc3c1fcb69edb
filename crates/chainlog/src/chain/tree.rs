//! The message tree after the load-time projections (format.md §A5 steps 3, 5, 6, 7).
//!
//! # Context
//! The parent links on disk are not the links resume follows. Legacy progress entries sit in
//! the chain, a preserved segment is re-attached after a compaction, and snipped messages are
//! removed with their children re-pointed. [`Tree::build`] applies these in step order to the
//! rows of a full scan and then computes the leaf set.
//!
//! # Design
//! Rows keep their map position (`seq`); the tree holds an *effective* parent per row and an
//! `alive` bit, so nothing is copied and every change is visible in [`Tree::relinked`].
//!
//! | step | before | after |
//! |---|---|---|
//! | 3 bridge | `m.parent = P` (a progress whose parent is `X`) | `m.parent = X` |
//! | 5 preserved (live) | `head.parent = h'`; `c.parent = anchor` | `head.parent = anchor`; `c.parent = tail` |
//! | 5 drop | rows before the last boundary | gone unless preserved |
//! | 6 snip | `r` removed, `c.parent = r`, `r.parent = p` | `c.parent = p` |

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::convert::Infallible;

use super::graph::Graph;
use super::scan::{MessageRow, Transcript};
use crate::id::Id;
use crate::transcript::envelope::{Flags, Kind, MessageHead, Segment};
use crate::transcript::frame::LinePos;

/// What the projections read of a message row.
///
/// The full scan projects its [`MessageRow`]s; the index re-derives over slimmer rows decoded
/// from its own tables (a first index of a large transcript holds them all at once), with this
/// very code.
pub trait RowHead {
    /// `uuid`.
    fn uuid(&self) -> Id;
    /// `parentUuid`.
    fn parent(&self) -> Option<Id>;
    /// `type`.
    fn kind(&self) -> Kind;
    /// The packed booleans.
    fn flags(&self) -> Flags;
    /// `timestamp` in epoch milliseconds (the index orders leaves by it).
    fn timestamp(&self) -> i64;
    /// `compactMetadata.preservedSegment` on a compact boundary.
    fn preserved(&self) -> Option<Segment>;
    /// `snipMetadata.removedUuids` on a snip boundary.
    fn snip_removed(&self) -> &[Id];
}

impl RowHead for MessageHead {
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
        self.preserved
    }
    fn snip_removed(&self) -> &[Id] {
        &self.snip_removed
    }
}

impl RowHead for MessageRow {
    fn uuid(&self) -> Id {
        self.head.uuid
    }
    fn parent(&self) -> Option<Id> {
        self.head.parent
    }
    fn kind(&self) -> Kind {
        self.head.kind
    }
    fn flags(&self) -> Flags {
        self.head.flags
    }
    fn timestamp(&self) -> i64 {
        self.head.timestamp
    }
    fn preserved(&self) -> Option<Segment> {
        self.head.preserved
    }
    fn snip_removed(&self) -> &[Id] {
        &self.head.snip_removed
    }
}

/// The projected tree of one transcript.
#[derive(Debug, Clone)]
pub struct Tree<'t, R = MessageRow> {
    /// The rows this tree projects.
    pub rows: &'t [R],
    /// Row by uuid. The private maps hash with foldhash (seeded per process): `SipHash` of
    /// every uuid was a visible part of building the tree of a large transcript.
    index: FastMap<Id, usize>,
    parent: Vec<Option<Id>>,
    alive: Vec<bool>,
    /// Leaves (format.md §A5 step 7), as row indexes in map order.
    pub leaves: Vec<usize>,
    /// Assistants in a live preserved segment whose usage counts are zeroed.
    pub zeroed_usage: HashSet<Id>,
    /// Rows removed by a snip.
    pub snipped: HashSet<Id>,
    /// Step 5 dropped every row before this map position that is not in [`Tree::preserved`].
    pub drop_before: Option<usize>,
    /// The live preserved segment (kept across the drop).
    pub preserved: HashSet<Id>,
    /// The segment relinked by step 5, if any.
    pub live_segment: Option<crate::transcript::envelope::Segment>,
    /// `leafUuid`s of `last-prompt` entries, in file order (set by the caller).
    pub checkpoints: Vec<Id>,
    groups: FastMap<u64, Vec<usize>>,
    results_by_parent: FastMap<Id, Vec<usize>>,
    attachments_by_parent: FastMap<Id, Vec<usize>>,
}

type FastMap<K, V> = foldhash::HashMap<K, V>;

/// Which projections to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Projection {
    /// Everything (the resume view).
    Resume,
    /// Skip step 5 so compact boundaries can be crossed through `logicalParentUuid`.
    Full,
}

impl<'t> Tree<'t, MessageRow> {
    /// Builds the tree of a scanned transcript.
    pub fn build(t: &'t Transcript, projection: Projection) -> Tree<'t> {
        let mut tree = Tree::from_rows(&t.rows, &t.progress, projection);
        tree.checkpoints = t
            .metadata
            .leaf_checkpoints
            .iter()
            .map(|(id, _)| *id)
            .collect();
        tree
    }

    /// Builds the tree from message rows in map order and the legacy progress entries
    /// (uuid → own parent), with the groups the splice reads. The index calls this with rows
    /// it stored, the scan with rows it read.
    pub fn from_rows(
        rows: &'t [MessageRow],
        progress: &HashMap<Id, Option<Id>>,
        projection: Projection,
    ) -> Tree<'t> {
        let mut tree = Tree::project(rows, progress, projection);
        tree.index_groups();
        tree
    }

    /// Assistant lines by `message.id` and tool results by effective parent, for the splice.
    fn index_groups(&mut self) {
        for i in 0..self.rows.len() {
            if !self.alive[i] {
                continue;
            }
            let h = &self.rows[i].head;
            match (h.kind, h.message_id, self.parent[i]) {
                (Kind::Assistant, Some(mid), _) => self.groups.entry(mid).or_default().push(i),
                (Kind::User, _, Some(p)) if h.flags.has(Flags::TOOL_RESULT) => {
                    self.results_by_parent.entry(p).or_default().push(i);
                }
                (Kind::Attachment, _, Some(p)) => {
                    self.attachments_by_parent.entry(p).or_default().push(i);
                }
                _ => {}
            }
        }
    }
}

impl<'t, R: RowHead> Tree<'t, R> {
    /// The projections alone (no splice groups) of rows in map order and the legacy progress
    /// entries (uuid → own parent): what the index stores of them ([`Tree::from_rows`] is this
    /// plus the groups).
    pub fn project(
        rows: &'t [R],
        progress: &HashMap<Id, Option<Id>>,
        projection: Projection,
    ) -> Tree<'t, R> {
        let index: FastMap<Id, usize> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| (r.uuid(), i))
            .collect();
        let mut tree = Tree {
            rows,
            index,
            parent: rows.iter().map(RowHead::parent).collect(),
            alive: vec![true; rows.len()],
            leaves: Vec::new(),
            zeroed_usage: HashSet::new(),
            snipped: HashSet::new(),
            drop_before: None,
            preserved: HashSet::new(),
            live_segment: None,
            checkpoints: Vec::new(),
            groups: FastMap::default(),
            results_by_parent: FastMap::default(),
            attachments_by_parent: FastMap::default(),
        };
        tree.bridge_progress(progress);
        if projection == Projection::Resume {
            tree.apply_preserved_segment();
        }
        tree.apply_snips();
        tree.compute_leaves();
        tree
    }

    /// The row index of a live message.
    pub fn get(&self, id: Id) -> Option<usize> {
        self.index.get(&id).copied().filter(|&i| self.alive[i])
    }

    /// Number of live rows.
    pub fn live_count_all(&self) -> usize {
        self.alive.iter().filter(|a| **a).count()
    }

    /// Live rows whose effective parent differs from the one on disk: `(row, effective parent)`.
    pub fn relinked(&self) -> Vec<(usize, Option<Id>)> {
        (0..self.rows.len())
            .filter(|&i| self.alive[i] && self.parent[i] != self.rows[i].parent())
            .map(|i| (i, self.parent[i]))
            .collect()
    }

    /// Step 3: a parent that is a legacy progress entry becomes that entry's nearest
    /// non-progress ancestor (also when the progress line comes after its child).
    fn bridge_progress(&mut self, progress: &HashMap<Id, Option<Id>>) {
        if progress.is_empty() {
            return;
        }
        for p in &mut self.parent {
            let mut steps = 0;
            while let Some(id) = *p {
                match progress.get(&id) {
                    Some(up) if steps <= progress.len() => {
                        *p = *up;
                        steps += 1;
                    }
                    _ => break,
                }
            }
        }
    }

    /// Step 5: preserved segment relink and the drop of pre-boundary messages.
    fn apply_preserved_segment(&mut self) {
        let is_boundary = |r: &R| r.flags().has(Flags::COMPACT_BOUNDARY);
        let Some(last_seg) = self
            .rows
            .iter()
            .rposition(|r| is_boundary(r) && r.preserved().is_some())
        else {
            return;
        };
        let last_boundary = self
            .rows
            .iter()
            .rposition(is_boundary)
            .expect("a segment boundary is a boundary");
        let mut preserved = HashSet::new();
        if last_seg == last_boundary {
            let seg = self.rows[last_seg].preserved().expect("checked");
            let mut cur = Some(seg.tail);
            let mut reached = false;
            while let Some(id) = cur {
                let Some(i) = self.get(id) else { break };
                if !preserved.insert(id) {
                    break;
                }
                if id == seg.head {
                    reached = true;
                    break;
                }
                cur = self.parent[i];
            }
            if !reached {
                // The tail→head walk broke: step 5 changes nothing.
                return;
            }
            let head = self.get(seg.head).expect("reached");
            self.live_segment = Some(seg);
            self.parent[head] = Some(seg.anchor);
            for i in 0..self.rows.len() {
                if i != head && self.alive[i] && self.parent[i] == Some(seg.anchor) {
                    self.parent[i] = Some(seg.tail);
                }
            }
            for &id in &preserved {
                let i = self.index[&id];
                if self.rows[i].kind() == Kind::Assistant {
                    self.zeroed_usage.insert(id);
                }
            }
        }
        for i in 0..last_boundary {
            if self.alive[i] && !preserved.contains(&self.rows[i].uuid()) {
                self.alive[i] = false;
            }
        }
        self.drop_before = Some(last_boundary);
        self.preserved = preserved;
    }

    /// Step 6: snip removals, survivors re-pointed to the nearest surviving ancestor.
    fn apply_snips(&mut self) {
        let removed: HashSet<Id> = (0..self.rows.len())
            .filter(|&i| self.alive[i])
            .flat_map(|i| self.rows[i].snip_removed().iter().copied())
            .collect();
        if removed.is_empty() {
            return;
        }
        // Parents of removed entries, looked up before anything is removed.
        let removed_parent: HashMap<Id, Option<Id>> = removed
            .iter()
            .map(|&id| (id, self.get(id).and_then(|i| self.parent[i])))
            .collect();
        for &id in &removed {
            if let Some(i) = self.get(id) {
                self.alive[i] = false;
                self.snipped.insert(id);
            }
        }
        for i in 0..self.rows.len() {
            if !self.alive[i] {
                continue;
            }
            let mut p = self.parent[i];
            let mut steps = 0;
            while let Some(id) = p {
                if !removed.contains(&id) || steps > removed.len() {
                    break;
                }
                p = removed_parent[&id];
                steps += 1;
            }
            self.parent[i] = p;
        }
    }

    /// Step 7: terminals, then from each the first user/assistant above it that no
    /// user/assistant names as parent.
    fn compute_leaves(&mut self) {
        // Whether a row has a live child (of any kind, of a user/assistant kind), by row: a
        // parent that is no row cannot be a leaf anyway.
        let mut has_child = vec![false; self.rows.len()];
        let mut has_turn_child = vec![false; self.rows.len()];
        for i in 0..self.rows.len() {
            if let (true, Some(p)) = (self.alive[i], self.parent[i])
                && let Some(&pi) = self.index.get(&p)
            {
                has_child[pi] = true;
                if self.rows[i].kind().is_turn() {
                    has_turn_child[pi] = true;
                }
            }
        }
        let mut leaves = Vec::new();
        let mut seen_leaf = HashSet::new();
        let terminals = (0..self.rows.len()).filter(|&t| self.alive[t] && !has_child[t]);
        for t in terminals {
            let mut cur = Some(t);
            let mut walked = HashSet::new();
            while let Some(i) = cur {
                if !walked.insert(i) {
                    break;
                }
                if self.rows[i].kind().is_turn() {
                    if !has_turn_child[i] && seen_leaf.insert(i) {
                        leaves.push(i);
                    }
                    break;
                }
                cur = self.parent[i].and_then(|p| self.get(p));
            }
        }
        leaves.sort_unstable();
        self.leaves = leaves;
    }
}

impl Graph for Tree<'_> {
    type Error = Infallible;
    fn get(&self, id: Id) -> Result<Option<usize>, Infallible> {
        Ok(Tree::get(self, id))
    }
    fn head(&self, i: usize) -> Result<Cow<'_, MessageHead>, Infallible> {
        Ok(Cow::Borrowed(&self.rows[i].head))
    }
    fn pos(&self, i: usize) -> Result<LinePos, Infallible> {
        Ok(self.rows[i].pos)
    }
    fn parent_of(&self, i: usize) -> Result<Option<Id>, Infallible> {
        Ok(self.parent[i])
    }
    fn live_count(&self) -> usize {
        self.live_count_all()
    }
    fn leaves(&self) -> Result<Vec<usize>, Infallible> {
        Ok(self.leaves.clone())
    }
    fn zeroed(&self, id: Id) -> Result<bool, Infallible> {
        Ok(self.zeroed_usage.contains(&id))
    }
    fn group(&self, mid: u64) -> Result<Vec<usize>, Infallible> {
        Ok(self.groups.get(&mid).cloned().unwrap_or_default())
    }
    fn tool_results_of(&self, parent: Id) -> Result<Vec<usize>, Infallible> {
        Ok(self
            .results_by_parent
            .get(&parent)
            .cloned()
            .unwrap_or_default())
    }
    fn attachments_of(&self, parent: Id) -> Result<Vec<usize>, Infallible> {
        Ok(self
            .attachments_by_parent
            .get(&parent)
            .cloned()
            .unwrap_or_default())
    }
    fn all_sidechain(&self) -> bool {
        self.rows.iter().all(|r| r.head.flags.has(Flags::SIDECHAIN))
    }
    fn checkpoints(&self) -> Cow<'_, [Id]> {
        Cow::Borrowed(&self.checkpoints)
    }
}
