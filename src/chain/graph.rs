//! The questions resolution asks of a projected message tree.
//!
//! The reference loader answers them from a full scan ([`super::tree::Tree`]); the index
//! answers them from redb tables. Steps 8–11 (leaf choice, walk, splice, breaks) are written
//! once against this trait, so the two paths cannot drift apart in those steps.

use std::borrow::Cow;

use crate::transcript::envelope::{Flags, MessageHead};
use crate::transcript::frame::LinePos;
use crate::transcript::id::Id;

/// A projected message tree. Rows are numbered by map position (`seq`).
pub trait Graph {
    /// The row of a live message.
    fn get(&self, id: Id) -> Option<usize>;
    /// The envelope of a row.
    fn head(&self, i: usize) -> Cow<'_, MessageHead>;
    /// Where the row's line is.
    fn pos(&self, i: usize) -> LinePos;
    /// The effective parent of a row (after bridge, relink, snip).
    fn parent_of(&self, i: usize) -> Option<Id>;
    /// Number of live rows.
    fn live_count(&self) -> usize;
    /// The leaves, in map order.
    fn leaves(&self) -> Vec<usize>;
    /// Whether the usage counts of a row are zeroed (live preserved segment).
    fn zeroed(&self, id: Id) -> bool;
    /// Live assistant rows sharing `message.id` hash `mid`, in map order.
    fn group(&self, mid: u64) -> Vec<usize>;
    /// Live tool-result user rows whose effective parent is `parent`, in map order.
    fn tool_results_of(&self, parent: Id) -> Vec<usize>;
    /// Live attachment rows whose effective parent is `parent`, in map order.
    fn attachments_of(&self, parent: Id) -> Vec<usize>;
    /// Whether every row is a sidechain message (an agent transcript).
    fn all_sidechain(&self) -> bool;
    /// `leafUuid`s of `last-prompt` entries, in file order.
    fn checkpoints(&self) -> Cow<'_, [Id]>;

    /// The newest leaf by `(timestamp, map position)` among user/assistant leaves, sidechain
    /// ones included only when `sidechain_ok` (SPEC A5 step 8b).
    fn newest_leaf(&self, sidechain_ok: bool) -> Option<usize> {
        self.leaves()
            .into_iter()
            .filter_map(|i| {
                let h = self.head(i);
                let ok = h.kind.is_turn() && (sidechain_ok || !h.flags.has(Flags::SIDECHAIN));
                ok.then_some((h.timestamp, i))
            })
            .max()
            .map(|(_, i)| i)
    }

    /// The nearest live row before row `i` in map order whose sidechain flag is `sidechain`
    /// (the candidate of a chain-break bridge, SPEC A8). Scans back from `i`.
    fn earlier_row(&self, i: usize, sidechain: bool) -> Option<usize> {
        (0..i).rev().find(|&j| {
            let h = self.head(j);
            h.kind != crate::transcript::envelope::Kind::Progress
                && h.flags.has(Flags::SIDECHAIN) == sidechain
                && self.get(h.uuid) == Some(j)
        })
    }

    /// The uuids of the leaves, in map order.
    fn leaf_ids(&self) -> Vec<Id> {
        self.leaves()
            .into_iter()
            .map(|i| self.head(i).uuid)
            .collect()
    }
}
