//! Choosing the leaf a resume starts from (SPEC A5 step 8).
//!
//! One rule, documented and overridable:
//! 1. the newest `last-prompt` carrying a `leafUuid` that names a known message;
//! 2. else, among leaves that are non-sidechain user/assistant messages, the greatest
//!    timestamp (ties: later map position);
//! 3. in an agent transcript (every message is a sidechain), the same over all its leaves.

use super::scan::Transcript;
use super::tree::Tree;
use crate::transcript::envelope::Flags;
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

/// Picks the active leaf: `(row index, rule)`.
pub fn choose(t: &Transcript, tree: &Tree<'_>) -> Option<(usize, LeafRule)> {
    if let Some(i) = t
        .metadata
        .leaf_checkpoints
        .iter()
        .rev()
        .find_map(|(id, _)| tree.get(*id))
    {
        return Some((i, LeafRule::LastPrompt));
    }
    let newest = |sidechain_ok: bool| {
        tree.leaves
            .iter()
            .copied()
            .filter(|&i| {
                let h = &tree.rows[i].head;
                h.kind.is_turn() && (sidechain_ok || !h.flags.has(Flags::SIDECHAIN))
            })
            .max_by_key(|&i| (tree.rows[i].head.timestamp, i))
    };
    if let Some(i) = newest(false) {
        return Some((i, LeafRule::Newest));
    }
    let all_sidechain = tree.rows.iter().all(|r| r.head.flags.has(Flags::SIDECHAIN));
    if all_sidechain {
        return newest(true).map(|i| (i, LeafRule::NewestSidechain));
    }
    None
}

/// Resolves a requested leaf id.
pub fn requested(tree: &Tree<'_>, id: Id) -> Option<(usize, LeafRule)> {
    tree.get(id).map(|i| (i, LeafRule::Requested))
}
