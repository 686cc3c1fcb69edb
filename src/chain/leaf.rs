//! Choosing the leaf a resume starts from (SPEC A5 step 8).
//!
//! One rule, documented and overridable:
//! 1. the newest `last-prompt` carrying a `leafUuid`, if that names a known message (an older
//!    checkpoint is never used: it would silently cut off newer messages);
//! 2. else, among leaves that are non-sidechain user/assistant messages, the greatest
//!    timestamp (ties: later map position);
//! 3. in an agent transcript (every message is a sidechain), the same over all its leaves.

use super::graph::Graph;
use crate::transcript::id::Id;

/// Which rule picked the active leaf.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LeafRule {
    /// Asked for with `--leaf`.
    Requested,
    /// The newest `last-prompt` entry's `leafUuid`.
    LastPrompt,
    /// The newest non-sidechain user/assistant leaf.
    Newest,
    /// The newest leaf of an agent (sidechain) transcript.
    NewestSidechain,
}

impl LeafRule {
    /// A short human explanation.
    pub fn explain(self) -> &'static str {
        match self {
            LeafRule::Requested => "requested with --leaf",
            LeafRule::LastPrompt => "named by the newest last-prompt entry (leafUuid)",
            LeafRule::Newest => "newest non-sidechain user/assistant leaf by timestamp",
            LeafRule::NewestSidechain => "newest leaf of an agent transcript by timestamp",
        }
    }
}

/// Picks the active leaf: `(row, rule)`.
pub fn choose<G: Graph>(g: &G) -> Result<Option<(usize, LeafRule)>, G::Error> {
    // Only the newest checkpoint counts: an older one would silently cut newer messages.
    let checkpoint = g.checkpoints().last().copied();
    if let Some(id) = checkpoint
        && let Some(i) = g.get(id)?
    {
        return Ok(Some((i, LeafRule::LastPrompt)));
    }
    if let Some(i) = g.newest_leaf(false)? {
        return Ok(Some((i, LeafRule::Newest)));
    }
    if g.all_sidechain() {
        return Ok(g.newest_leaf(true)?.map(|i| (i, LeafRule::NewestSidechain)));
    }
    Ok(None)
}

/// Resolves a requested leaf id.
pub fn requested<G: Graph>(g: &G, id: Id) -> Result<Option<(usize, LeafRule)>, G::Error> {
    Ok(g.get(id)?.map(|i| (i, LeafRule::Requested)))
}
