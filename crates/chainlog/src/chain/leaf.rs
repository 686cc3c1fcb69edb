//! Choosing the leaf a resume starts from (format.md §A5 step 8).
//!
//! One rule, documented and overridable:
//! 1. the newest `last-prompt` carrying a `leafUuid`, if that names a known message M (an older
//!    checkpoint is never used: it would silently cut off newer messages). A checkpoint can be
//!    stale (Claude Code writes it before the turn completes; SIGINT/SIGKILL leave newer
//!    messages below M): when a user/assistant leaf descends from M, the newest such leaf
//!    (rule 2) wins instead (format.md §A5 step 8a, amended by §A8);
//! 2. else, among leaves that are non-sidechain user/assistant messages, the greatest
//!    timestamp (ties: later map position);
//! 3. in an agent transcript (every message is a sidechain), the same over all its leaves.

use std::collections::{HashMap, HashSet};

use super::graph::Graph;
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
    /// The newest leaf below a stale `last-prompt` checkpoint.
    NewerThanCheckpoint,
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
            LeafRule::NewerThanCheckpoint => {
                "newest leaf below the newest last-prompt checkpoint (the checkpoint is stale)"
            }
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
        return Ok(Some(match newest_below(g, i)? {
            Some(n) => (n, LeafRule::NewerThanCheckpoint),
            None => (i, LeafRule::LastPrompt),
        }));
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

/// The newest non-sidechain user/assistant leaf that descends from row `m` (not `m` itself).
/// Leaves are tried newest first; each walk up stops at a row already decided, so the work
/// is bounded by the number of rows.
fn newest_below<G: Graph>(g: &G, m: usize) -> Result<Option<usize>, G::Error> {
    let leaves = g.leaves()?;
    if leaves.contains(&m) {
        return Ok(None);
    }
    let mut candidates = Vec::new();
    for i in leaves {
        let h = g.head(i)?;
        if h.kind.is_turn() && !h.flags.has(Flags::SIDECHAIN) {
            candidates.push((h.timestamp, i));
        }
    }
    candidates.sort_unstable_by(|a, b| b.cmp(a));
    let mut below: HashMap<usize, bool> = HashMap::from([(m, true)]);
    for (_, leaf) in candidates {
        let mut path = Vec::new();
        let mut seen = HashSet::new();
        let mut cur = Some(leaf);
        let found = loop {
            let Some(i) = cur else { break false };
            if let Some(&known) = below.get(&i) {
                break known;
            }
            if !seen.insert(i) {
                break false;
            }
            path.push(i);
            cur = match g.parent_of(i)? {
                Some(p) => g.get(p)?,
                None => None,
            };
        };
        for i in path {
            below.insert(i, found);
        }
        if found {
            return Ok(Some(leaf));
        }
    }
    Ok(None)
}
