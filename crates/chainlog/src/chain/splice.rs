//! Recovering parallel tool results (format.md §A5 step 10).
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

use super::graph::Graph;
use crate::transcript::envelope::Kind;

/// Returns the chain with orphaned parallel siblings and tool results spliced in.
pub fn splice_parallel<G: Graph>(g: &G, chain: &[usize]) -> Result<Vec<usize>, G::Error> {
    let mut seen: HashSet<usize> = chain.iter().copied().collect();
    let mut anchor_of: HashMap<u64, usize> = HashMap::new();
    for &i in chain {
        let h = g.head(i)?;
        if let (Kind::Assistant, Some(mid)) = (h.kind, h.message_id) {
            anchor_of.insert(mid, i);
        }
    }
    if anchor_of.is_empty() {
        return Ok(chain.to_vec());
    }
    let mut inserts: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut processed = HashSet::new();
    for &i in chain {
        let h = g.head(i)?;
        let (Kind::Assistant, Some(mid)) = (h.kind, h.message_id) else {
            continue;
        };
        if !processed.insert(mid) {
            continue;
        }
        let group = g.group(mid)?;
        let mut siblings: Vec<usize> = group
            .iter()
            .copied()
            .filter(|s| !seen.contains(s))
            .collect();
        let mut results = Vec::new();
        for &member in &group {
            let uuid = g.head(member)?.uuid;
            results.extend(
                g.tool_results_of(uuid)?
                    .into_iter()
                    .filter(|r| !seen.contains(r)),
            );
        }
        if siblings.is_empty() && results.is_empty() {
            continue;
        }
        // Stable sorts by timestamp: ties keep gathering order (members in map order, each
        // member's results in map order), as Claude Code's `Array.prototype.sort` does.
        sort_by_time(g, &mut siblings)?;
        sort_by_time(g, &mut results)?;
        let mut recovered = siblings;
        for r in results {
            recovered.push(r);
            // Attachments chained after a recovered result (hook additional context) come
            // with it, as the client loads them (format.md §A8).
            let mut at = g.head(r)?.uuid;
            while let Some(a) = g
                .attachments_of(at)?
                .into_iter()
                .find(|a| !seen.contains(a) && !recovered.contains(a))
            {
                recovered.push(a);
                at = g.head(a)?.uuid;
            }
        }
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
    Ok(out)
}

/// Stable sort of rows by timestamp.
fn sort_by_time<G: Graph>(g: &G, rows: &mut Vec<usize>) -> Result<(), G::Error> {
    let mut keyed = Vec::with_capacity(rows.len());
    for &r in rows.iter() {
        keyed.push((g.head(r)?.timestamp, r));
    }
    keyed.sort_by_key(|&(ts, _)| ts);
    *rows = keyed.into_iter().map(|(_, r)| r).collect();
    Ok(())
}
