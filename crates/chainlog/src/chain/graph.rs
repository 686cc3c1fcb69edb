//! The questions resolution asks of a projected message tree.
//!
//! The reference loader answers them from a full scan ([`super::tree::Tree`]); the index
//! answers them from redb tables. Steps 8–11 (leaf choice, walk, splice, breaks) are written
//! once against this trait, so the two paths cannot drift apart in those steps.
//!
//! Every question can fail with the graph's own [`Graph::Error`]: never for the scan's tree
//! ([`Infallible`](std::convert::Infallible)), a typed damage or storage error for the index.
//! A failure ends the resolution; there is no placeholder answer.

use std::borrow::Cow;

use crate::id::Id;
use crate::transcript::envelope::{Flags, MessageHead};
use crate::transcript::frame::LinePos;

/// A projected message tree. Rows are numbered by map position (`seq`).
pub trait Graph {
    /// Why a question could not be answered.
    type Error;
    /// The row of a live message.
    fn get(&self, id: Id) -> Result<Option<usize>, Self::Error>;
    /// The envelope of a row.
    fn head(&self, i: usize) -> Result<Cow<'_, MessageHead>, Self::Error>;
    /// Where the row's line is.
    fn pos(&self, i: usize) -> Result<LinePos, Self::Error>;
    /// The effective parent of a row (after bridge, relink, snip).
    fn parent_of(&self, i: usize) -> Result<Option<Id>, Self::Error>;
    /// Number of live rows.
    fn live_count(&self) -> usize;
    /// The leaves, in map order.
    fn leaves(&self) -> Result<Vec<usize>, Self::Error>;
    /// Whether the usage counts of a row are zeroed (live preserved segment).
    fn zeroed(&self, id: Id) -> Result<bool, Self::Error>;
    /// Live assistant rows sharing `message.id` hash `mid`, in map order.
    fn group(&self, mid: u64) -> Result<Vec<usize>, Self::Error>;
    /// Live tool-result user rows whose effective parent is `parent`, in map order.
    fn tool_results_of(&self, parent: Id) -> Result<Vec<usize>, Self::Error>;
    /// Live attachment rows whose effective parent is `parent`, in map order.
    fn attachments_of(&self, parent: Id) -> Result<Vec<usize>, Self::Error>;
    /// Whether every row is a sidechain message (an agent transcript).
    fn all_sidechain(&self) -> bool;
    /// `leafUuid`s of `last-prompt` entries, in file order.
    fn checkpoints(&self) -> Cow<'_, [Id]>;

    /// The newest leaf by `(timestamp, map position)` among user/assistant leaves, sidechain
    /// ones included only when `sidechain_ok` (format.md §A5 step 8b).
    fn newest_leaf(&self, sidechain_ok: bool) -> Result<Option<usize>, Self::Error> {
        let mut best = None;
        for i in self.leaves()? {
            let h = self.head(i)?;
            if h.kind.is_turn() && (sidechain_ok || !h.flags.has(Flags::SIDECHAIN)) {
                best = best.max(Some((h.timestamp, i)));
            }
        }
        Ok(best.map(|(_, i)| i))
    }

    /// The nearest live row before row `i` in map order whose sidechain flag is `sidechain`
    /// (the candidate of a chain-break bridge, format.md §A8). Scans back from `i`.
    fn earlier_row(&self, i: usize, sidechain: bool) -> Result<Option<usize>, Self::Error> {
        for j in (0..i).rev() {
            let h = self.head(j)?;
            if h.kind != crate::transcript::envelope::Kind::Progress
                && h.flags.has(Flags::SIDECHAIN) == sidechain
                && self.get(h.uuid)? == Some(j)
            {
                return Ok(Some(j));
            }
        }
        Ok(None)
    }

    /// Whether row `i` is a leaf, proven: `false` may also mean "not known cheaply" (the
    /// index declines on a fact it cannot find); only a `true` is relied on.
    fn is_leaf(&self, i: usize) -> Result<bool, Self::Error> {
        Ok(self.leaves()?.contains(&i))
    }

    /// The uuids of the leaves, in map order.
    fn leaf_ids(&self) -> Result<Vec<Id>, Self::Error> {
        self.leaves()?
            .into_iter()
            .map(|i| Ok(self.head(i)?.uuid))
            .collect()
    }
}

/// The value of a result that cannot fail (the scan's tree).
pub fn infallible<T>(r: Result<T, std::convert::Infallible>) -> T {
    match r {
        Ok(v) => v,
        Err(never) => match never {},
    }
}
