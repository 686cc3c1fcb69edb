//! Inline (1.0.x) sub-agents: the `isSidechain` messages of a session file, grouped by the
//! first sidechain message they descend from, then merged by `agentId` when the entries carry
//! one (format.md §A3).
//!
//! The grouping needs only the sidechain rows, so the scan ([`sidechain_rows`] of a
//! [`Transcript`]) and the index (`Store::sidechain_rows`) hand the same rows to [`group`] and
//! get the same agents. Each group's first line is read again (by offset) for `agentId` and
//! the prompt.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::path::Path;

use serde_json::Value;

use super::prompt;
use crate::chain::{MessageRow, Transcript};
use crate::error::{Error, Result};
use crate::id::{Id, IdNames};
use crate::transcript::envelope::{Flags, Kind};
use crate::transcript::frame::read_line;

/// The sidechain rows of a scanned transcript: `(map position, row)`, in map order.
pub fn sidechain_rows(t: &Transcript) -> Vec<(u32, MessageRow)> {
    t.rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.head.flags.has(Flags::SIDECHAIN))
        .map(|(i, r)| (u32::try_from(i).unwrap_or(u32::MAX), r.clone()))
        .collect()
}

/// A sub-agent whose entries are inline in the session file (1.0.x).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineAgent {
    /// `agentId` of its first entry, if written.
    pub agent_id: Option<String>,
    /// The uuid of its first message.
    pub root: Id,
    /// Its messages: indexes into the sidechain rows it was grouped from
    /// ([`group`]), in map order.
    pub rows: Vec<usize>,
    /// Its first prompt, flattened.
    pub prompt: Option<String>,
    /// Its user/assistant messages that none of its messages names as parent, oldest first:
    /// a resume of the agent starts at the last.
    pub leaves: Vec<Id>,
}

/// The inline sub-agents of a scanned session file (1.0.x): sidechain messages grouped by
/// the first sidechain message they descend from, then merged by `agentId` when the entries
/// carry one. Reads only each group's first line (for `agentId` and the prompt).
pub fn inline_agents(path: &Path, t: &Transcript) -> Result<Vec<InlineAgent>> {
    group(path, &sidechain_rows(t))
}

/// Groups the sidechain `rows` of the session file at `path` into agents. An agent's `rows`
/// are indexes into `rows`.
pub fn group(path: &Path, rows: &[(u32, MessageRow)]) -> Result<Vec<InlineAgent>> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let index: HashMap<Id, usize> = rows
        .iter()
        .enumerate()
        .map(|(i, (_, r))| (r.head.uuid, i))
        .collect();
    let mut root_of: HashMap<usize, usize> = HashMap::new();
    let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for i in 0..rows.len() {
        // Walk up through sidechain rows; bounded so a cycle cannot loop.
        let mut cur = i;
        let mut path_rows = vec![i];
        for _ in 0..rows.len() {
            if let Some(&r) = root_of.get(&cur) {
                cur = r;
                break;
            }
            match rows[cur].1.head.parent.and_then(|p| index.get(&p)) {
                Some(&p) if p != cur && !path_rows.contains(&p) => {
                    path_rows.push(p);
                    cur = p;
                }
                _ => break,
            }
        }
        for r in path_rows {
            root_of.insert(r, cur);
        }
        groups.entry(cur).or_default().push(i);
    }
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut merged: Vec<InlineAgent> = Vec::new();
    let mut by_agent_id: HashMap<String, usize> = HashMap::new();
    for (root, members) in groups {
        let head = &rows[root].1;
        let value = read_line(&file, path, head.pos)
            .ok()
            .and_then(|b| crate::resume::body::parse_value(&b));
        let agent_id = value
            .as_ref()
            .and_then(|v| v.get("agentId"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let prompt = value
            .as_ref()
            .filter(|_| head.head.kind == Kind::User)
            .and_then(prompt::user_text)
            .map(prompt::flatten);
        if let Some(&k) = agent_id.as_ref().and_then(|a| by_agent_id.get(a)) {
            merged[k].rows.extend(members);
            merged[k].rows.sort_unstable();
            continue;
        }
        if let Some(a) = &agent_id {
            by_agent_id.insert(a.clone(), merged.len());
        }
        merged.push(InlineAgent {
            agent_id,
            root: head.head.uuid,
            rows: members,
            prompt,
            leaves: Vec::new(),
        });
    }
    for a in &mut merged {
        a.leaves = leaves(rows, &a.rows);
    }
    Ok(merged)
}

/// The user/assistant messages of one agent that no other of its messages names as parent,
/// oldest first (by timestamp, then map position): the last is where its resume starts.
fn leaves(rows: &[(u32, MessageRow)], members: &[usize]) -> Vec<Id> {
    let parents: HashSet<Id> = members
        .iter()
        .filter_map(|&i| rows[i].1.head.parent)
        .collect();
    let mut tips: Vec<usize> = members
        .iter()
        .copied()
        .filter(|&i| rows[i].1.head.kind.is_turn() && !parents.contains(&rows[i].1.head.uuid))
        .collect();
    tips.sort_by_key(|&i| (rows[i].1.head.timestamp, rows[i].0));
    tips.into_iter().map(|i| rows[i].1.head.uuid).collect()
}

/// The id `chainlog agents` prints for an inline agent: its `agentId`, else the uuid of its
/// first message.
pub fn agent_name(a: &InlineAgent, names: &IdNames) -> String {
    a.agent_id.clone().unwrap_or_else(|| names.name(a.root))
}

/// An inline agent as a target names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineTarget {
    /// Its id ([`agent_name`]).
    pub agent_id: String,
    /// Its leaves, oldest first (see [`InlineAgent::leaves`]).
    pub leaves: Vec<String>,
}

/// The inline agents of the session file at `path` as targets, from its sidechain `rows`.
pub fn targets(
    path: &Path,
    rows: &[(u32, MessageRow)],
    names: &IdNames,
) -> Result<Vec<InlineTarget>> {
    Ok(group(path, rows)?
        .iter()
        .map(|a| InlineTarget {
            agent_id: agent_name(a, names),
            leaves: a.leaves.iter().map(|&l| names.name(l)).collect(),
        })
        .collect())
}

/// [`targets`] of a full scan of the session file (the reference; `Store::target` reads the
/// rows from the index).
pub fn scan_targets(path: &Path) -> Result<Vec<InlineTarget>> {
    let t = Transcript::open(path).map_err(|e| Error::io(path, e))?;
    targets(path, &sidechain_rows(&t), &t.names)
}
