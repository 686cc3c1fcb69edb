//! The reference loader: from a full scan to a chain (format.md §A5).
//!
//! This is the oracle every faster path must match. It is written to be obviously right:
//! each step of format.md §A5 lives in one small module, in order.
//!
//! | step | module |
//! |---|---|
//! | 1–2, 4 parse, map, metadata (boundaries clear context-collapse state) | [`scan`] |
//! | 3 progress bridge, 5 preserved segment, 6 snips, 7 leaves | [`tree`] |
//! | 8 leaf choice | [`leaf`] |
//! | 9 chain walk, 11 breaks | [`walk`] |
//! | 10 parallel tool results | [`splice`] |
//! | the chain after a plain append, from the old one | `extend` |

pub(crate) mod extend;
pub mod graph;
pub mod leaf;
pub mod scan;
pub mod splice;
pub mod tree;
pub mod walk;

use std::collections::HashSet;

use crate::error::UnknownLeaf;
use crate::id::{Id, IdNames};
use crate::transcript::envelope::{Flags, Kind, MessageHead};
use crate::transcript::frame::LinePos;

pub use graph::Graph;

pub use leaf::LeafRule;
pub use scan::{BadLine, MessageRow, Transcript};
pub use tree::{Projection, Tree};
pub use walk::Stop;

/// Which projection of the chain to return.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum View {
    /// What Claude Code hands the model: the walk stops at the last compact boundary.
    #[default]
    Resume,
    /// The whole conversation: compact boundaries crossed through `logicalParentUuid`,
    /// without the preserved-segment projection.
    Full,
}

/// Options of [`resolve`].
#[derive(Debug, Clone, Copy)]
pub struct ResolveOptions {
    /// Start from this message instead of the chosen leaf.
    pub leaf: Option<Id>,
    /// Which view.
    pub view: View,
    /// Fill [`Resolution::leaves`] (work proportional to the number of leaves, which grows
    /// with the file: a resume that only needs the chain leaves it off).
    pub list_leaves: bool,
}

impl Default for ResolveOptions {
    fn default() -> Self {
        ResolveOptions {
            leaf: None,
            view: View::Resume,
            list_leaves: true,
        }
    }
}

// The types below hold [`Id`]s and are not `Serialize`: an `Id` serialises as 16 bytes (for the
// index), and a non-UUID id's bytes are a hash. Output names ids through [`IdNames::name`]
// (`ChainBreak::to_json`, `ChainBridge::to_json`).

/// One message of a resolved chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Its uuid.
    pub uuid: Id,
    /// Where its line is.
    pub pos: LinePos,
    /// Its type.
    pub kind: Kind,
    /// Its parent after the projections (may differ from the line's `parentUuid`).
    pub parent: Option<Id>,
    /// The line's `parentUuid` as it was read when the chain was resolved: reading the line
    /// again must find the same (a mismatch on an unchanged file is index damage).
    pub written_parent: Option<Id>,
    /// Recovered by the parallel tool-result splice rather than by the parent walk.
    pub spliced: bool,
    /// Its usage token counts are zeroed (a live preserved segment).
    pub zero_usage: bool,
}

/// A chain break found on the chosen chain (format.md §A5 step 11).
#[derive(Debug, Clone, PartialEq)]
pub struct ChainBreak {
    /// The message whose parent is missing.
    pub child: Id,
    /// The missing parent.
    pub parent: Id,
    /// Where the child's line is.
    pub pos: LinePos,
    /// The fraction of live messages reachable from the leaf.
    pub reachable_fraction: f64,
}

/// A chain break the walk bridged to the nearest earlier message (format.md §A8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainBridge {
    /// The message whose parent is missing.
    pub child: Id,
    /// The missing parent.
    pub missing: Id,
    /// The message the walk went on from (the child's effective parent in the view).
    pub to: Id,
    /// Where the child's line is.
    pub pos: LinePos,
    /// How much older the bridge target is than the child (ms, at most 5000).
    pub gap_ms: i64,
}

impl ChainBreak {
    /// The break as JSON, ids as the transcript wrote them (`names`: the transcript's).
    pub fn to_json(&self, names: &IdNames) -> serde_json::Value {
        serde_json::json!({
            "child": names.name(self.child),
            "parent": names.name(self.parent),
            "pos": self.pos,
            "reachable_fraction": self.reachable_fraction,
        })
    }
}

impl ChainBridge {
    /// The bridge as JSON, ids as the transcript wrote them (`names`: the transcript's).
    pub fn to_json(&self, names: &IdNames) -> serde_json::Value {
        serde_json::json!({
            "child": names.name(self.child),
            "missing": names.name(self.missing),
            "to": names.name(self.to),
            "pos": self.pos,
            "gap_ms": self.gap_ms,
        })
    }
}

/// The answer of the reference loader for one transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolution {
    /// The active leaf and the rule that picked it (`None`: no message to resume).
    pub leaf: Option<(Id, LeafRule)>,
    /// The chain, root first.
    pub chain: Vec<Link>,
    /// Why the walk ended.
    pub stop: Option<Stop>,
    /// A chain break on the chosen chain, if the walk ended at a missing parent.
    pub chain_break: Option<ChainBreak>,
    /// Chain breaks bridged by the walk, nearest to the leaf first (empty after
    /// [`Resolution::strict`]).
    pub bridges: Vec<ChainBridge>,
    /// Number of live messages (for the reachable fraction of a break).
    pub live: usize,
    /// Every leaf, in map order (empty unless [`ResolveOptions::list_leaves`]).
    pub leaves: Vec<Id>,
    /// The hash of the leaf's `sessionId` (metadata is looked up by it).
    pub session: Option<u64>,
}

impl Resolution {
    /// The strict walk of format.md §A5 step 9 (`--no-bridge`): the chain ends at the first
    /// missing parent seen from the leaf, which is reported as the chain break. Parallel
    /// results spliced after an anchor before the cut go with it.
    #[must_use]
    pub fn strict(mut self) -> Resolution {
        let Some(b) = self.bridges.first().cloned() else {
            return self;
        };
        if let Some(cut) = self.chain.iter().position(|l| l.uuid == b.child) {
            self.chain.drain(..cut);
            self.chain[0].parent = Some(b.missing);
        }
        #[expect(clippy::cast_precision_loss, reason = "a ratio for people")]
        let reachable_fraction = self.chain.len() as f64 / self.live.max(1) as f64;
        self.stop = Some(Stop::MissingParent {
            child: b.child,
            parent: b.missing,
        });
        self.chain_break = Some(ChainBreak {
            child: b.child,
            parent: b.missing,
            pos: b.pos,
            reachable_fraction,
        });
        self.bridges.clear();
        self
    }
}

/// Resolves the active chain of a scanned transcript (format.md §A5 steps 3–11).
pub fn resolve(t: &Transcript, opts: ResolveOptions) -> Result<Resolution, UnknownLeaf> {
    let resume_tree = Tree::build(t, Projection::Resume);
    graph::infallible(resolve_graph(&resume_tree, opts, &t.names, || {
        Ok(Tree::build(t, Projection::Full))
    }))
}

/// Steps 8–11 over any [`Graph`]: the reference tree or the index. `full` builds the graph
/// of the full view (no preserved-segment projection) when it is asked for. The outer error is
/// the graph's (the index damaged or failing); the inner one a requested leaf that is not live.
pub fn resolve_graph<G, F>(
    resume: &G,
    opts: ResolveOptions,
    names: &IdNames,
    full: impl FnOnce() -> Result<F, G::Error>,
) -> Result<Result<Resolution, UnknownLeaf>, G::Error>
where
    G: Graph,
    F: Graph,
    G::Error: From<F::Error>,
{
    let mut full = Some(full);
    let chosen = match opts.leaf {
        Some(id) => match leaf::requested(resume, id)? {
            Some(c) => Some(c),
            // Dropped by the resume projection (before the last compact boundary): the full
            // view still has it (an inline agent of a compacted 1.0.x session).
            None if opts.view == View::Full => {
                let g = (full.take().expect("not taken yet"))()?;
                let Some((i, rule)) = leaf::requested(&g, id)? else {
                    return Ok(Err(UnknownLeaf {
                        id,
                        name: names.name(id),
                    }));
                };
                let leaves = if opts.list_leaves {
                    resume.leaf_ids()?
                } else {
                    Vec::new()
                };
                let head = g.head(i)?.into_owned();
                return Ok(Ok(finish(&g, i, true, &head, rule, leaves)?));
            }
            None => {
                return Ok(Err(UnknownLeaf {
                    id,
                    name: names.name(id),
                }));
            }
        },
        None => leaf::choose(resume)?,
    };
    let leaves = if opts.list_leaves {
        resume.leaf_ids()?
    } else {
        Vec::new()
    };
    let Some((leaf_row, rule)) = chosen else {
        return Ok(Ok(no_leaf(resume, leaves)));
    };
    let leaf_head = resume.head(leaf_row)?.into_owned();
    let res = match opts.view {
        View::Resume => finish(resume, leaf_row, false, &leaf_head, rule, leaves)?,
        View::Full => {
            let g = (full.take().expect("taken only by an early return"))()?;
            // The full graph keeps every row of the resume graph except, in odd files, one
            // removed by a snip that the resume projection dropped; then the resume graph answers.
            match g.get(leaf_head.uuid)? {
                Some(i) => finish(&g, i, true, &leaf_head, rule, leaves)?,
                None => finish(resume, leaf_row, false, &leaf_head, rule, leaves)?,
            }
        }
    };
    Ok(Ok(res))
}

fn finish<G: Graph>(
    g: &G,
    leaf_row: usize,
    cross: bool,
    leaf_head: &MessageHead,
    rule: LeafRule,
    leaves: Vec<Id>,
) -> Result<Resolution, G::Error> {
    let w = walk::walk(g, leaf_row, cross)?;
    walked(g, &w, leaf_head, rule, leaves)
}

/// The answer when no leaf can be chosen: nothing to resume.
fn no_leaf<G: Graph>(g: &G, leaves: Vec<Id>) -> Resolution {
    Resolution {
        leaf: None,
        chain: Vec::new(),
        stop: None,
        chain_break: None,
        bridges: Vec::new(),
        live: g.live_count(),
        leaves,
        session: None,
    }
}

/// The resolution of a whole walk `w` from the leaf `leaf_head` chosen by `rule`.
fn walked<G: Graph>(
    g: &G,
    w: &walk::Walk,
    leaf_head: &MessageHead,
    rule: LeafRule,
    leaves: Vec<Id>,
) -> Result<Resolution, G::Error> {
    let chain = links(g, w)?;
    let chain_break = match w.stop {
        Stop::MissingParent { child, parent } => {
            let row = g.get(child)?.expect("walked rows are live");
            Some(ChainBreak {
                child,
                parent,
                pos: g.pos(row)?,
                reachable_fraction: reachable_fraction(g, chain.len()),
            })
        }
        _ => None,
    };
    Ok(Resolution {
        leaf: Some((leaf_head.uuid, rule)),
        chain,
        stop: Some(w.stop),
        chain_break,
        bridges: chain_bridges(g, &w.bridges)?,
        live: g.live_count(),
        leaves,
        session: Some(leaf_head.session),
    })
}

/// The share of live messages a chain of `len` links reaches (a chain break's measure).
fn reachable_fraction<G: Graph>(g: &G, len: usize) -> f64 {
    #[expect(clippy::cast_precision_loss, reason = "a ratio for people")]
    let f = len as f64 / g.live_count().max(1) as f64;
    f
}

/// The links of a walk (steps 9–10): its rows with the parallel results spliced in, each with
/// its effective parent (a bridge's target where the walk bridged).
fn links<G: Graph>(g: &G, w: &walk::Walk) -> Result<Vec<Link>, G::Error> {
    let walked: HashSet<usize> = w.rows.iter().copied().collect();
    let spliced = splice::splice_parallel(g, &w.rows)?;
    let mut chain = Vec::with_capacity(spliced.len());
    for &i in &spliced {
        let h = g.head(i)?;
        let parent = match w.bridges.iter().find(|b| b.child == i) {
            Some(b) => Some(g.head(b.to)?.uuid),
            None => g.parent_of(i)?,
        };
        chain.push(Link {
            uuid: h.uuid,
            pos: g.pos(i)?,
            kind: h.kind,
            parent,
            written_parent: h.parent,
            spliced: !walked.contains(&i),
            zero_usage: g.zeroed(h.uuid)?,
        });
    }
    Ok(chain)
}

/// The bridges of a walk as reported, nearest to the leaf first.
fn chain_bridges<G: Graph>(g: &G, bridged: &[walk::Bridged]) -> Result<Vec<ChainBridge>, G::Error> {
    let mut bridges = Vec::with_capacity(bridged.len());
    for b in bridged {
        let (child, to) = (g.head(b.child)?.into_owned(), g.head(b.to)?);
        bridges.push(ChainBridge {
            child: child.uuid,
            missing: b.missing,
            to: to.uuid,
            pos: g.pos(b.child)?,
            gap_ms: child.timestamp - to.timestamp,
        });
    }
    Ok(bridges)
}

/// One leaf with the facts `chainlog leaves` shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafInfo {
    /// The leaf's uuid.
    pub uuid: Id,
    /// Its type.
    pub kind: Kind,
    /// Its timestamp (epoch ms).
    pub timestamp: i64,
    /// `isSidechain`.
    pub sidechain: bool,
    /// Length of its resume-view walk (before the splice).
    pub chain_len: usize,
    /// Whether it is the active leaf.
    pub active: bool,
    /// A parallel dead end, not a branch: a line of a multi-line response (same `message.id`)
    /// or a tool result of one, which a resume splices back into its response (step 10).
    pub parallel: bool,
}

/// Every leaf with its chain length, for `chainlog leaves`.
pub fn leaf_report(t: &Transcript, res: &Resolution) -> Vec<LeafInfo> {
    let tree = Tree::build(t, Projection::Resume);
    graph::infallible(leaf_report_graph(&tree, res.leaf.map(|(id, _)| id)))
}

/// [`leaf_report`] over the full view (nothing dropped at compact boundaries): the leaves of
/// inline agents written before a compaction are there.
pub fn leaf_report_full(t: &Transcript, res: &Resolution) -> Vec<LeafInfo> {
    let tree = Tree::build(t, Projection::Full);
    graph::infallible(leaf_report_graph(&tree, res.leaf.map(|(id, _)| id)))
}

/// [`leaf_report`] over any [`Graph`] (the index answers it row by row).
pub fn leaf_report_graph<G: Graph>(g: &G, active: Option<Id>) -> Result<Vec<LeafInfo>, G::Error> {
    let mut out = Vec::new();
    for i in g.leaves()? {
        let h = g.head(i)?;
        out.push(LeafInfo {
            uuid: h.uuid,
            kind: h.kind,
            timestamp: h.timestamp,
            sidechain: h.flags.has(Flags::SIDECHAIN),
            chain_len: walk::walk(g, i, false)?.rows.len(),
            active: Some(h.uuid) == active,
            parallel: parallel_dead_end(g, i)?,
        });
    }
    Ok(out)
}

/// Whether leaf row `i` belongs to a response written as several lines: an assistant line
/// whose `message.id` has other lines, or a tool result hanging off such a line.
fn parallel_dead_end<G: Graph>(g: &G, i: usize) -> Result<bool, G::Error> {
    let group_of = |row: usize| -> Result<bool, G::Error> {
        let hr = g.head(row)?;
        Ok(match (hr.kind, hr.message_id) {
            (Kind::Assistant, Some(mid)) => g.group(mid)?.len() > 1,
            _ => false,
        })
    };
    let h = g.head(i)?;
    match h.kind {
        Kind::Assistant => group_of(i),
        Kind::User if h.flags.has(Flags::TOOL_RESULT) => match g.parent_of(i)? {
            Some(p) => match g.get(p)? {
                Some(row) => group_of(row),
                None => Ok(false),
            },
            None => Ok(false),
        },
        _ => Ok(false),
    }
}
