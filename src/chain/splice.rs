//! Recovering parallel tool results (SPEC A5 step 10).
//!
//! # Context
//! One API response with N content blocks is written as N assistant lines sharing a
//! `message.id`, chained one after another, and each tool result hangs off the line holding
//! its `tool_use`. Walking parents from the leaf therefore visits only one result per
//! response; the others are dead-end tips that are not branches.
//!
//! # Design
//! For each `message.id` on the chain (first seen first), the anchor is its *last* on-chain
//! line. Right after the anchor we insert the group's assistant lines not on the chain, then
//! the tool-result users whose parent is any line of the group and that are not on the chain,
//! each list sorted by timestamp (stable, map order). One level only: children of recovered
//! messages are not recovered.
//!
//! | chain | inserted after `A3` |
//! |---|---|
//! | `A1 A2 A3 R3 …` (R1→A1, R2→A2) | `R1 R2` |

use std::collections::{HashMap, HashSet};

use super::tree::Tree;
use crate::transcript::envelope::{Flags, Kind};

/// Returns the chain with orphaned parallel siblings and tool results spliced in.
pub fn splice_parallel(tree: &Tree<'_>, chain: &[usize]) -> Vec<usize> {
    let has_group = chain.iter().any(|&i| {
        let h = &tree.rows[i].head;
        h.kind == Kind::Assistant && h.message_id.is_some()
    });
    if !has_group {
        return chain.to_vec();
    }
    // Groups and tool results over the whole live map, in map order.
    let mut groups: HashMap<u64, Vec<usize>> = HashMap::new();
    let mut results_by_parent: HashMap<crate::transcript::id::Id, Vec<usize>> = HashMap::new();
    for i in 0..tree.rows.len() {
        if !tree.is_alive(i) {
            continue;
        }
        let h = &tree.rows[i].head;
        match (h.kind, h.message_id, tree.parent_of(i)) {
            (Kind::Assistant, Some(mid), _) => groups.entry(mid).or_default().push(i),
            (Kind::User, _, Some(p)) if h.flags.has(Flags::TOOL_RESULT) => {
                results_by_parent.entry(p).or_default().push(i);
            }
            _ => {}
        }
    }
    let mut seen: HashSet<usize> = chain.iter().copied().collect();
    let mut anchor_of: HashMap<u64, usize> = HashMap::new();
    for &i in chain {
        let h = &tree.rows[i].head;
        if let (Kind::Assistant, Some(mid)) = (h.kind, h.message_id) {
            anchor_of.insert(mid, i);
        }
    }
    let mut inserts: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut processed = HashSet::new();
    for &i in chain {
        let h = &tree.rows[i].head;
        let (Kind::Assistant, Some(mid)) = (h.kind, h.message_id) else {
            continue;
        };
        if !processed.insert(mid) {
            continue;
        }
        let group = &groups[&mid];
        let mut siblings: Vec<usize> = group
            .iter()
            .copied()
            .filter(|s| !seen.contains(s))
            .collect();
        let mut results = Vec::new();
        for &member in group {
            if let Some(trs) = results_by_parent.get(&tree.rows[member].head.uuid) {
                results.extend(trs.iter().copied().filter(|r| !seen.contains(r)));
            }
        }
        if siblings.is_empty() && results.is_empty() {
            continue;
        }
        siblings.sort_by_key(|&s| tree.rows[s].head.timestamp);
        results.sort_by_key(|&r| tree.rows[r].head.timestamp);
        let mut recovered = siblings;
        recovered.extend(results);
        recovered.dedup();
        seen.extend(recovered.iter().copied());
        inserts.insert(anchor_of[&mid], recovered);
    }
    let mut out = Vec::with_capacity(chain.len() + inserts.values().map(Vec::len).sum::<usize>());
    for &i in chain {
        out.push(i);
        if let Some(extra) = inserts.get(&i) {
            out.extend(extra.iter().copied());
        }
    }
    out
}
