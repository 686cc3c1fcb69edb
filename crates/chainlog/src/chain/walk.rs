//! Walking from the leaf to the root (format.md §A5 steps 9 and 11) for both views.

use std::collections::HashSet;

use super::graph::Graph;
use crate::id::Id;
use crate::transcript::envelope::Flags;

/// Where a walk stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// Chain breaks bridged on the way, nearest to the leaf first.
    pub bridges: Vec<Bridged>,
}

/// A missing parent replaced by the nearest earlier message (format.md §A8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bridged {
    /// The row whose parent is missing.
    pub child: usize,
    /// The missing parent.
    pub missing: Id,
    /// The row the walk went on from.
    pub to: usize,
}

/// The largest age gap a bridge crosses: the client bridges a missing parent to the nearest
/// earlier message of the same sidechain flag when it is at most this much older (format.md §A8:
/// 1.8 s bridged, 38.7 s not).
pub const BRIDGE_MAX_MS: i64 = 5_000;

/// The bridge target for row `child` whose parent is missing, if the client would bridge.
fn bridge_target<G: Graph>(g: &G, child: usize) -> Result<Option<usize>, G::Error> {
    let h = g.head(child)?.into_owned();
    let Some(to) = g.earlier_row(child, h.flags.has(Flags::SIDECHAIN))? else {
        return Ok(None);
    };
    let age = h.timestamp.checked_sub(g.head(to)?.timestamp);
    Ok(age
        .is_some_and(|a| (0..=BRIDGE_MAX_MS).contains(&a))
        .then_some(to))
}

/// Walks `parentUuid` from `leaf`. With `cross_boundaries`, a compact boundary's
/// `logicalParentUuid` is followed (the full view). A missing parent is bridged to the nearest
/// earlier message of the same sidechain flag at most [`BRIDGE_MAX_MS`] older, as the client
/// does (format.md §A8); a larger gap ends the walk with [`Stop::MissingParent`].
pub fn walk<G: Graph>(g: &G, leaf: usize, cross_boundaries: bool) -> Result<Walk, G::Error> {
    let (w, end) = walk_until(g, leaf, cross_boundaries, |_, _| Probe::Go)?;
    debug_assert!(end.is_none(), "the probe never stops the walk");
    Ok(w)
}

/// What a walk does at the row it reached, asked by [`walk_until`] before taking it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Probe {
    /// Take the row and go on.
    Go,
    /// Stop before this row (it is known): the walk ends there.
    Known,
    /// Stop: the walk is not wanted any more.
    Abandon,
}

/// Where a probe stopped a walk: the row, and what the probe said there.
pub(crate) type Stopped = Option<(usize, Probe)>;

/// [`walk`], asking `probe(row, uuid)` before taking each row. When the probe stops it, the
/// rows taken so far (root first, the stopping row not among them) come back with
/// `Some((row, probe))`, and `stop` is meaningless.
pub(crate) fn walk_until<G: Graph>(
    g: &G,
    leaf: usize,
    cross_boundaries: bool,
    mut probe: impl FnMut(usize, Id) -> Probe,
) -> Result<(Walk, Stopped), G::Error> {
    let mut rows = Vec::new();
    let mut bridges = Vec::new();
    let mut seen = HashSet::new();
    let mut cur = leaf;
    let mut ended = None;
    let stop = loop {
        let head = g.head(cur)?;
        match probe(cur, head.uuid) {
            Probe::Go => {}
            p => {
                ended = Some((cur, p));
                break Stop::Root;
            }
        }
        if !seen.insert(cur) {
            break Stop::Cycle { at: head.uuid };
        }
        rows.push(cur);
        let mut next = g.parent_of(cur)?;
        let mut crossing = false;
        if next.is_none() && cross_boundaries && head.flags.has(Flags::COMPACT_BOUNDARY) {
            next = head.logical_parent;
            crossing = true;
        }
        let Some(p) = next else { break Stop::Root };
        match g.get(p)? {
            // A boundary copied by `--fork-session` names a pre-compact message that the copy
            // holds after the boundary (format.md §A8): the conversation starts at the boundary.
            Some(i) if crossing && seen.contains(&i) => break Stop::Root,
            Some(i) => cur = i,
            None => match bridge_target(g, cur)? {
                Some(to) => {
                    bridges.push(Bridged {
                        child: cur,
                        missing: p,
                        to,
                    });
                    cur = to;
                }
                None => {
                    break Stop::MissingParent {
                        child: head.uuid,
                        parent: p,
                    };
                }
            },
        }
    };
    rows.reverse();
    Ok((
        Walk {
            rows,
            stop,
            bridges,
        },
        ended,
    ))
}
