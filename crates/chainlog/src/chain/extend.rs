//! The default resume's chain after a plain append, from the chain it had before.
//!
//! # Context
//! Most changes to a transcript are a few messages appended below the active leaf. Walking the
//! whole chain again costs what the chain costs; here only the new segment is walked: from the
//! new leaf up to the old one.
//!
//! # Design
//! Called only after a *plain* append (new rows at the end of the map, no projection changed:
//! the index's incremental update did not decline, see `index::incremental`). Such an append
//! changes no older row's parent, liveness or bridge (a bridge goes to an earlier row, and new
//! rows come later in map order), so the walk below the old leaf is the old walk. The answer is
//! what [`super::resolve_graph`] gives, when the walk from the new leaf reaches the old leaf
//! within a bounded number of steps (a walk that meets the old chain anywhere else goes on above
//! the old leaf and never reaches it: a branch changed the chain). It is the old chain's first
//! `kept` links, then the links of the walk from there spliced again (§A5 step 10): `kept` is
//! the old length unless an appended row continues a response of the old chain's last links
//! (an assistant line of the same `message.id`, a late tool result under one of its lines);
//! then every response with a line from there on must lie wholly among the old view's last
//! links that were read, and is spliced again with the new segment (`reopened`).
//! The leaf comes from [`leaf::after_append`] when the appended rows prove it.
//!
//! Anything else is declined (`None`): the caller walks as before. An empty old view (no leaf)
//! is walked whole when the walk is short.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use super::graph::Graph;
use super::walk::{Bridged, Probe, Walk, walk_until};
use super::{ChainBreak, Resolution, Stop, chain_bridges, leaf, links, reachable_fraction};
use crate::id::Id;
use crate::transcript::envelope::Kind;

/// Steps the new segment's walk may take beyond the number of appended rows (rows written
/// before the append but after the old leaf, such as its system entries).
const EXTRA_STEPS: usize = 64;

/// A view extended: the old view's first `kept` links, then `resolution.chain`.
#[derive(Debug)]
pub(crate) struct Extended {
    /// The answer, its `chain` holding only the links after the first `kept`.
    pub resolution: Resolution,
    /// Links of the old view kept as they were (the old view's length, or less when the end
    /// of the old view was spliced again).
    pub kept: usize,
}

/// The resume view (leaf chosen, no leaves listed) of `g` after rows `appended` (map
/// positions) were appended to the file whose resume view was `old`, of `old_len` links of
/// which `old.chain` holds the last ones, chosen with newest checkpoint `checkpoint`; `None`
/// when the append is not a continuation that this can prove (see the module doc).
pub(crate) fn extend<G: Graph>(
    g: &G,
    old: &Resolution,
    old_len: usize,
    checkpoint: Option<Id>,
    appended: Range<usize>,
) -> Result<Option<Extended>, G::Error> {
    let Some((old_leaf, old_rule)) = old.leaf else {
        return fresh(g, old_len, appended);
    };
    let Some(old_row) = g.get(old_leaf)? else {
        return Ok(None);
    };
    // The leaf: proven from the appended rows, else chosen among every leaf.
    let (leaf_row, rule, unbridged) =
        match leaf::after_append(g, old_row, old_rule, checkpoint, appended.clone())? {
            Some(c) => c,
            None => match leaf::choose(g)? {
                Some((row, rule)) => (row, rule, false),
                None => return Ok(None),
            },
        };
    let limit = appended.len() + EXTRA_STEPS;
    let mut steps = 0;
    let (seg, end) = walk_until(g, leaf_row, false, |row, _| {
        steps += 1;
        if row == old_row {
            Probe::Known
        } else if steps > limit {
            Probe::Abandon
        } else {
            Probe::Go
        }
    })?;
    if !matches!(end, Some((_, Probe::Known))) {
        return Ok(None);
    }
    if unbridged && !seg.bridges.is_empty() {
        return Ok(None);
    }
    let tail_start = old_len - old.chain.len();
    let Some(kept) = reopened(g, &seg, old, tail_start, appended)? else {
        return Ok(None);
    };
    // The walk from the cut on: the old walked rows there (their walk is the old one), then
    // the new segment; bridges of those old rows as the old view recorded them.
    let mut rows = Vec::new();
    for l in old.chain[kept - tail_start..].iter().filter(|l| !l.spliced) {
        match g.get(l.uuid)? {
            Some(r) => rows.push(r),
            None => return Ok(None),
        }
    }
    let mut bridged = Vec::new();
    for b in &old.bridges {
        if let Some(at) = old.chain[kept - tail_start..]
            .iter()
            .position(|l| l.uuid == b.child && !l.spliced)
        {
            match g.get(b.to)? {
                Some(to) => bridged.push(Bridged {
                    child: rows[old.chain[kept - tail_start..][..at]
                        .iter()
                        .filter(|l| !l.spliced)
                        .count()],
                    missing: b.missing,
                    to,
                }),
                None => return Ok(None),
            }
        }
    }
    rows.extend(&seg.rows);
    bridged.extend(seg.bridges.iter().copied());
    let walk = Walk {
        rows,
        stop: seg.stop,
        bridges: bridged,
    };
    let leaf_head = g.head(leaf_row)?.into_owned();
    let chain = links(g, &walk)?;
    let mut bridges = chain_bridges(g, &seg.bridges)?;
    bridges.extend(old.bridges.iter().cloned());
    let chain_break = old.chain_break.as_ref().map(|b| ChainBreak {
        reachable_fraction: reachable_fraction(g, kept + chain.len()),
        ..b.clone()
    });
    debug_assert!(
        old.stop != Some(Stop::Root) || chain_break.is_none(),
        "a chain break comes with a missing parent"
    );
    Ok(Some(Extended {
        resolution: Resolution {
            leaf: Some((leaf_head.uuid, rule)),
            chain,
            stop: old.stop,
            chain_break,
            bridges,
            live: g.live_count(),
            leaves: Vec::new(),
            session: Some(leaf_head.session),
        },
        kept,
    }))
}

/// The view after an append to a file whose view was empty (no leaf): walked whole, when the
/// walk is short (the appended rows' count and a few more steps).
fn fresh<G: Graph>(
    g: &G,
    old_len: usize,
    appended: Range<usize>,
) -> Result<Option<Extended>, G::Error> {
    if old_len != 0 {
        return Ok(None);
    }
    let Some((leaf_row, rule)) = leaf::choose(g)? else {
        return Ok(Some(Extended {
            resolution: super::no_leaf(g, Vec::new()),
            kept: 0,
        }));
    };
    let limit = appended.len() + EXTRA_STEPS;
    let mut steps = 0;
    let (w, end) = walk_until(g, leaf_row, false, |_, _| {
        steps += 1;
        if steps > limit {
            Probe::Abandon
        } else {
            Probe::Go
        }
    })?;
    if end.is_some() {
        return Ok(None);
    }
    let leaf_head = g.head(leaf_row)?.into_owned();
    Ok(Some(Extended {
        resolution: super::walked(g, &w, &leaf_head, rule, Vec::new())?,
        kept: 0,
    }))
}

/// Where the old view must be spliced again from (§A5 step 10), so that the old view's links
/// before it stay as they were: the old view's length when the appended rows touch no response
/// of it; earlier when an appended row continues a response of its last links (a line of the
/// same `message.id`, a late tool result of one of its lines), provided every line of those
/// responses, and every link spliced after them, is among the last links read (`old.chain`,
/// from `tail_start`). `None`: not provable from those links.
fn reopened<G: Graph>(
    g: &G,
    seg: &Walk,
    old: &Resolution,
    tail_start: usize,
    appended: Range<usize>,
) -> Result<Option<usize>, G::Error> {
    let walked: HashSet<usize> = seg.rows.iter().copied().collect();
    let at: HashMap<Id, usize> = (tail_start..)
        .zip(&old.chain)
        .map(|(n, l)| (l.uuid, n))
        .collect();
    let old_len = tail_start + old.chain.len();
    // Responses to splice again, by `message.id`.
    let mut open: HashSet<u64> = HashSet::new();
    for i in appended.clone() {
        let h = g.head(i)?.into_owned();
        if g.get(h.uuid)? != Some(i) {
            continue;
        }
        if let (Kind::Assistant, Some(mid)) = (h.kind, h.message_id)
            && !open.contains(&mid)
            && !g.group(mid)?.iter().all(|m| appended.contains(m))
        {
            open.insert(mid);
        }
        if matches!(h.kind, Kind::User | Kind::Attachment | Kind::Assistant)
            && !walked.contains(&i)
            && let Some(p) = g.parent_of(i)?
            && let Some(pr) = g.get(p)?
            && !appended.contains(&pr)
        {
            // A row off the walk under an older one: a late parallel result (or a branch,
            // which the leaf and walk above already ruled out). Its parent's response is
            // spliced again; a parent that is no assistant line of a response: not proven.
            match g.head(pr)?.message_id {
                Some(mid) if g.head(pr)?.kind == Kind::Assistant => {
                    open.insert(mid);
                }
                _ => return Ok(None),
            }
        }
    }
    let mut cut = old_len;
    let mut done: HashSet<u64> = HashSet::new();
    while let Some(&mid) = open.iter().find(|m| !done.contains(m)) {
        done.insert(mid);
        for m in g.group(mid)? {
            if appended.contains(&m) {
                continue;
            }
            match at.get(&g.head(m)?.uuid) {
                Some(&n) => cut = cut.min(n),
                None => return Ok(None),
            }
        }
        // Every response with a line after the cut is spliced again whole; a spliced link
        // after the cut must hang off a link after it.
        for l in &old.chain[cut - tail_start..] {
            let Some(r) = g.get(l.uuid)? else {
                return Ok(None);
            };
            let h = g.head(r)?;
            if let (Kind::Assistant, Some(m)) = (h.kind, h.message_id) {
                open.insert(m);
            } else if l.spliced {
                match l.parent.and_then(|p| at.get(&p)) {
                    Some(&n) if n >= cut => {}
                    Some(&n) => {
                        cut = n;
                        done.clear();
                    }
                    None => return Ok(None),
                }
            }
        }
    }
    Ok(Some(cut))
}
