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
use crate::id::Id;
use crate::transcript::envelope::Flags;

/// Step 7 for one user/assistant row `id`, from the effective children `children` gives
/// (each as its uuid and whether it is a user/assistant): a leaf iff no child is a
/// user/assistant and a terminal (a row without children) is reachable through
/// non-user/assistant children. `None` when that takes more than `limit` rows. The tree of a
/// full scan computes the same set from terminals upward (`Tree`); this is the form an
/// incremental update asks for one row (`index::incremental`, `index::overlay`).
pub(crate) fn leaf_by_children<E>(
    id: Id,
    children: &impl Fn(Id) -> Result<Vec<(Id, bool)>, E>,
    limit: usize,
) -> Result<Option<bool>, E> {
    let kids = children(id)?;
    if kids.iter().any(|&(_, turn)| turn) {
        return Ok(Some(false));
    }
    if kids.is_empty() {
        return Ok(Some(true));
    }
    let mut seen = HashSet::from([id]);
    let mut stack: Vec<Id> = kids.into_iter().map(|(k, _)| k).collect();
    while let Some(c) = stack.pop() {
        if !seen.insert(c) {
            continue;
        }
        if seen.len() > limit {
            return Ok(None);
        }
        let kids = children(c)?;
        if kids.is_empty() {
            return Ok(Some(true));
        }
        stack.extend(kids.into_iter().filter(|&(_, turn)| !turn).map(|(k, _)| k));
    }
    Ok(Some(false))
}

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

/// The leaf [`choose`] picks after rows `appended` (map positions) were appended to a
/// transcript whose chosen leaf was row `old` by `rule`, with newest checkpoint `checkpoint`,
/// when the appended rows prove it without looking at every leaf: `None` when they do not
/// (then ask [`choose`]). With the third value `true`, the answer holds only if the leaf
/// descends from `old` through parents without a bridge (the caller's walk checks it).
///
/// The rows appended are the only new leaves; `old` was the newest of the leaves that could
/// win. So the newest appended candidate `c` wins when it is newer than `old` (rules 2–3, and
/// 1 below a checkpoint); a checkpoint that was the leaf stays it while it is a leaf. The
/// checkpoint must be the one `old` was chosen with, and a rule-2 choice must still have no
/// usable checkpoint.
pub(crate) fn after_append<G: Graph>(
    g: &G,
    old: usize,
    rule: LeafRule,
    checkpoint: Option<Id>,
    appended: std::ops::Range<usize>,
) -> Result<Option<(usize, LeafRule, bool)>, G::Error> {
    let now = g.checkpoints().last().copied();
    let usable = |id: Option<Id>| -> Result<bool, G::Error> {
        Ok(match id {
            Some(id) => g.get(id)?.is_some(),
            None => false,
        })
    };
    let sidechain_ok = match rule {
        LeafRule::Newest => false,
        LeafRule::NewestSidechain if g.all_sidechain() => true,
        LeafRule::LastPrompt | LeafRule::NewerThanCheckpoint
            if now == checkpoint && usable(now)? =>
        {
            false
        }
        _ => return Ok(None),
    };
    if matches!(rule, LeafRule::Newest | LeafRule::NewestSidechain) && usable(now)? {
        return Ok(None);
    }
    // Candidates: the old leaf, the appended rows, and the first turn at or above an older
    // parent of one (the only older rows whose leaf status an append can change).
    let mut best = None;
    for i in std::iter::once(old).chain(appended.clone()) {
        let mut rows = vec![i];
        if i != old
            && let Some(p) = g.parent_of(i)?
            && let Some(p) = g.get(p)?
            && !appended.contains(&p)
        {
            match turn_at_or_above(g, p)? {
                Some(t) => rows.push(t),
                None => return Ok(None),
            }
        }
        for r in rows {
            let h = g.head(r)?;
            if h.kind.is_turn()
                && (sidechain_ok || !h.flags.has(Flags::SIDECHAIN))
                && best.is_none_or(|b: (i64, usize)| (h.timestamp, r) > b)
                && g.get(h.uuid)? == Some(r)
                && g.is_leaf(r)?
            {
                best = Some((h.timestamp, r));
            }
        }
    }
    let Some((ts, c)) = best else {
        return Ok(None);
    };
    let newest = (ts, c) >= (g.head(old)?.timestamp, old);
    let m = match now {
        Some(id) => g.get(id)?,
        None => None,
    };
    Ok(match (rule, m) {
        (LeafRule::Newest | LeafRule::NewestSidechain, _) => newest.then_some((c, rule, false)),
        // The checkpoint is still a leaf: it stays the answer.
        (LeafRule::LastPrompt, Some(m)) if g.is_leaf(m)? => Some((m, LeafRule::LastPrompt, false)),
        // The newest leaf below the checkpoint was `old`: a newer one below it wins. (When the
        // checkpoint itself was the leaf, older leaves below it may count now: not proven.)
        (LeafRule::NewerThanCheckpoint, Some(m)) if newest && !g.is_leaf(m)? => {
            Some((c, LeafRule::NewerThanCheckpoint, true))
        }
        _ => None,
    })
}

/// The first user/assistant row at or above row `i` through parents, within a few steps
/// (`None`: none found there).
fn turn_at_or_above<G: Graph>(g: &G, mut i: usize) -> Result<Option<usize>, G::Error> {
    for _ in 0..64 {
        if g.head(i)?.kind.is_turn() {
            return Ok(Some(i));
        }
        i = match g.parent_of(i)? {
            Some(p) => match g.get(p)? {
                Some(r) => r,
                None => return Ok(None),
            },
            None => return Ok(None),
        };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::{Projection, Transcript, Tree};

    fn id(n: u64) -> String {
        format!("00000000-0000-4000-8000-{n:012x}")
    }

    /// Message `n` (odd: user, even: assistant) under `parent`, `ts` seconds in.
    fn msg(n: u64, parent: Option<u64>, ts: u64) -> String {
        let parent = parent.map_or("null".to_owned(), |p| format!("\"{}\"", id(p)));
        let ty = if n % 2 == 1 { "user" } else { "assistant" };
        format!(
            r#"{{"parentUuid":{parent},"type":"{ty}","message":{{"role":"{ty}","content":"x"}},"uuid":"{}","sessionId":"s","timestamp":"2026-01-01T00:00:{ts:02}.000Z"}}"#,
            id(n)
        ) + "\n"
    }

    fn system(n: u64, parent: u64, ts: u64) -> String {
        format!(
            r#"{{"parentUuid":"{}","type":"system","subtype":"turn_duration","uuid":"{}","sessionId":"s","timestamp":"2026-01-01T00:00:{ts:02}.000Z"}}"#,
            id(parent),
            id(n)
        ) + "\n"
    }

    fn checkpoint(n: u64) -> String {
        format!(
            r#"{{"type":"last-prompt","lastPrompt":"x","leafUuid":"{}","sessionId":"s"}}"#,
            id(n)
        ) + "\n"
    }

    type Chosen = Option<(Id, LeafRule)>;

    /// `after_append` on `before` + `appended`, and `choose` on the whole, as uuids.
    fn both(before: &str, appended: &str) -> (Chosen, Chosen) {
        let old_t = Transcript::scan_bytes(before.as_bytes());
        let old_g = Tree::build(&old_t, Projection::Resume);
        let (old_row, rule) = choose(&old_g).unwrap().expect("a leaf before");
        let old_leaf = old_g.head(old_row).unwrap().uuid;
        let t = Transcript::scan_bytes((before.to_owned() + appended).as_bytes());
        let g = Tree::build(&t, Projection::Resume);
        let uuid = |r: usize| g.head(r).unwrap().uuid;
        let want = choose(&g).unwrap().map(|(r, rule)| (uuid(r), rule));
        let got = after_append(
            &g,
            Graph::get(&g, old_leaf).unwrap().unwrap(),
            rule,
            old_g.checkpoints().last().copied(),
            old_t.rows.len()..t.rows.len(),
        )
        .unwrap()
        .map(|(r, rule, _)| (uuid(r), rule));
        (got, want)
    }

    fn leaf(n: u64, rule: LeafRule) -> (Id, LeafRule) {
        (Id::from_text(&id(n)), rule)
    }

    #[test]
    fn a_continuation_is_proven_from_the_appended_rows() {
        let before = msg(1, None, 1) + &msg(2, Some(1), 2);
        let (got, want) = both(&before, &(msg(3, Some(2), 3) + &msg(4, Some(3), 4)));
        assert_eq!(want, Some(leaf(4, LeafRule::Newest)));
        assert_eq!(got, want, "the fast path answers a continuation");
        // Only a system entry appended: the old leaf stays.
        let (got, want) = both(&before, &system(9, 2, 5));
        assert_eq!(want, Some(leaf(2, LeafRule::Newest)));
        assert_eq!(got, want);
    }

    /// The old leaf got a child older than another old leaf: the other leaf wins, and the
    /// appended rows cannot tell.
    #[test]
    fn an_older_continuation_is_not_proven() {
        let before = msg(1, None, 1) + &msg(2, Some(1), 5) + &msg(4, Some(1), 4);
        let (got, want) = both(&before, &msg(3, Some(2), 2));
        assert_eq!(want, Some(leaf(4, LeafRule::Newest)));
        assert!(got.is_none_or(|g| Some(g) == want), "{got:?}");
    }

    /// The checkpoint leaf is still a leaf (only a system entry below it): it stays the
    /// answer, although a newer branch was appended.
    #[test]
    fn a_checkpoint_that_is_still_a_leaf_stays() {
        let before = msg(1, None, 1) + &msg(2, Some(1), 2) + &checkpoint(2);
        let (got, want) = both(&before, &(system(9, 2, 3) + &msg(3, Some(1), 9)));
        assert_eq!(want, Some(leaf(2, LeafRule::LastPrompt)));
        assert_eq!(got, want);
        // Continued below the checkpoint: the newest leaf below it (older leaves below the
        // checkpoint could count now: not proven from the appended rows).
        let (got, want) = both(&before, &(msg(3, Some(2), 3) + &msg(4, Some(3), 4)));
        assert_eq!(want, Some(leaf(4, LeafRule::NewerThanCheckpoint)));
        assert!(got.is_none(), "{got:?}");
        // Continued further: the newest leaf below the checkpoint is proven.
        let below = before.clone() + &msg(3, Some(2), 3) + &msg(4, Some(3), 4);
        let (got, want) = both(&below, &(msg(5, Some(4), 5) + &msg(6, Some(5), 6)));
        assert_eq!(want, Some(leaf(6, LeafRule::NewerThanCheckpoint)));
        assert_eq!(got, want);
        // A new checkpoint: not proven here.
        let (got, want) = both(&before, &(msg(3, Some(2), 3) + &checkpoint(3)));
        assert_eq!(want, Some(leaf(3, LeafRule::LastPrompt)));
        assert!(got.is_none(), "{got:?}");
    }
}
