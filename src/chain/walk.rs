//! Walking from the leaf to the root (SPEC A5 steps 9 and 11) for both views.

use std::collections::HashSet;

use super::graph::Graph;
use crate::transcript::envelope::Flags;
use crate::transcript::id::Id;

/// Where a walk stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Stop {
    /// Reached a message without parent (the root, or a compact boundary in the resume view).
    Root,
    /// The parent named by `child` is not in the transcript: a chain break.
    MissingParent {
        /// The message whose parent is missing.
        child: Id,
        /// The missing parent.
        parent: Id,
    },
    /// `at` was reached twice: a parent cycle.
    Cycle {
        /// The repeated uuid.
        at: Id,
    },
}

/// A walk from a leaf: row indexes root-first, and why it stopped.
#[derive(Debug, Clone)]
pub struct Walk {
    /// Row indexes, root first.
    pub rows: Vec<usize>,
    /// Why the walk ended.
    pub stop: Stop,
}

/// Walks `parentUuid` from `leaf`. With `cross_boundaries`, a compact boundary's
/// `logicalParentUuid` is followed (the full view).
pub fn walk<G: Graph>(g: &G, leaf: usize, cross_boundaries: bool) -> Result<Walk, G::Error> {
    let mut rows = Vec::new();
    let mut seen = HashSet::new();
    let mut cur = leaf;
    let stop = loop {
        let head = g.head(cur)?;
        if !seen.insert(cur) {
            break Stop::Cycle { at: head.uuid };
        }
        rows.push(cur);
        let mut next = g.parent_of(cur)?;
        if next.is_none() && cross_boundaries && head.flags.has(Flags::COMPACT_BOUNDARY) {
            next = head.logical_parent;
        }
        let Some(p) = next else { break Stop::Root };
        match g.get(p)? {
            Some(i) => cur = i,
            None => {
                break Stop::MissingParent {
                    child: head.uuid,
                    parent: p,
                };
            }
        }
    };
    rows.reverse();
    Ok(Walk { rows, stop })
}
