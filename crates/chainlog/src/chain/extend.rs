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
//! the old chain followed by the new segment, what [`super::resolve_graph`] gives, when:
//! - the walk from the new leaf reaches the old leaf within a bounded number of steps (a walk
//!   that meets the old chain anywhere else goes on above the old leaf and never reaches it:
//!   a branch changed the chain);
//! - no appended row changes the splice of the old chain (§A5 step 10): no appended assistant
//!   shares its `message.id` with an older row, and no appended user or attachment row that
//!   the walk did not take hangs off an older row (it could be a recovered result).
//!
//! Anything else is declined (`None`): the caller walks as before.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use super::graph::Graph;
use super::walk::{Probe, Walk, walk_until};
use super::{ChainBreak, Resolution, Stop, chain_bridges, leaf, links, reachable_fraction};
use crate::transcript::envelope::Kind;
use crate::transcript::id::Id;

/// Steps the new segment's walk may take beyond the number of appended rows (rows written
/// before the append but after the old leaf, such as its system entries).
const EXTRA_STEPS: usize = 64;

/// The resume view (leaf chosen, no leaves listed) of `g` after rows `appended` (map
/// positions) were appended to the file whose resume view was `old`, of `old_len` links
/// (`old.chain` is not read: it may hold only some of them), chosen with newest checkpoint
/// `checkpoint`: the answer with only the links that follow the old ones in its `chain`;
/// `None` when the append is not a continuation that this can prove (see the module doc).
pub(crate) fn extend<G: Graph>(
    g: &G,
    old: &Resolution,
    old_len: usize,
    checkpoint: Option<Id>,
    appended: Range<usize>,
) -> Result<Option<Resolution>, G::Error> {
    let Some((old_leaf, old_rule)) = old.leaf else {
        return Ok(None);
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
    if !splice_unchanged(g, &seg, appended)? {
        return Ok(None);
    }
    let leaf_head = g.head(leaf_row)?.into_owned();
    let chain = links(g, &seg)?;
    let mut bridges = chain_bridges(g, &seg.bridges)?;
    bridges.extend(old.bridges.iter().cloned());
    let chain_break = old.chain_break.as_ref().map(|b| ChainBreak {
        reachable_fraction: reachable_fraction(g, old_len + chain.len()),
        ..b.clone()
    });
    debug_assert!(
        old.stop != Some(Stop::Root) || chain_break.is_none(),
        "a chain break comes with a missing parent"
    );
    Ok(Some(Resolution {
        leaf: Some((leaf_head.uuid, rule)),
        chain,
        stop: old.stop,
        chain_break,
        bridges,
        live: g.live_count(),
        leaves: Vec::new(),
        session: Some(leaf_head.session),
    }))
}

/// Whether the appended rows leave the splice of the old chain as it was, and the new
/// segment's splice its own (every response it holds began after the append).
fn splice_unchanged<G: Graph>(g: &G, seg: &Walk, appended: Range<usize>) -> Result<bool, G::Error> {
    let walked: HashSet<usize> = seg.rows.iter().copied().collect();
    let mut groups: HashMap<u64, bool> = HashMap::new();
    for i in appended.clone() {
        let h = g.head(i)?.into_owned();
        if g.get(h.uuid)? != Some(i) {
            continue;
        }
        if let (Kind::Assistant, Some(mid)) = (h.kind, h.message_id) {
            let new = if let Some(&new) = groups.get(&mid) {
                new
            } else {
                let new = g.group(mid)?.iter().all(|m| appended.contains(m));
                groups.insert(mid, new);
                new
            };
            if !new {
                return Ok(false);
            }
        }
        if matches!(h.kind, Kind::User | Kind::Attachment | Kind::Assistant)
            && !walked.contains(&i)
            && let Some(p) = g.parent_of(i)?
            && g.get(p)?.is_some_and(|r| !appended.contains(&r))
        {
            return Ok(false);
        }
    }
    Ok(true)
}
