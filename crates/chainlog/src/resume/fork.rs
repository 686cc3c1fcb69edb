//! Fork agents (`subagent_type:"fork"`, format.md §A8): the agent file starts with a
//! `fork-context-ref` entry instead of a copy of the parent's lines. The agent's real context
//! is the parent's chain up to `parentLastUuid` (the line of the spawning `tool_use`),
//! followed by the agent's own lines.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{Error, Result};

/// How many leading lines are searched for the `fork-context-ref` entry (it is written first).
const HEAD_LINES: usize = 8;

/// Where a fork agent's context starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkContext {
    /// The parent session's transcript (`<key>/<parentSessionId>.jsonl`).
    pub parent_path: PathBuf,
    /// The parent's last message of the context (the spawning `tool_use` line).
    pub parent_last: String,
}

/// Reads the `fork-context-ref` of the agent transcript at `path`, if it has one. The parent
/// file is looked for in the project folder of the agent's session
/// (`<key>/<sessionId>/subagents/agent-*.jsonl` → `<key>/<parentSessionId>.jsonl`).
pub fn fork_context(path: &Path) -> Result<Option<ForkContext>> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    for line in BufReader::new(file).lines().take(HEAD_LINES) {
        let line = line.map_err(|e| Error::io(path, e))?;
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if v.get("type").and_then(Value::as_str) != Some("fork-context-ref") {
            continue;
        }
        let (Some(parent), Some(last)) = (
            v.get("parentSessionId").and_then(Value::as_str),
            v.get("parentLastUuid").and_then(Value::as_str),
        ) else {
            return Ok(None);
        };
        crate::error::check_id(parent)?;
        crate::error::check_id(last)?;
        let Some(project) = path
            .ancestors()
            .find(|d| d.parent().is_some() && d.join(format!("{parent}.jsonl")).is_file())
        else {
            return Ok(None);
        };
        return Ok(Some(ForkContext {
            parent_path: project.join(format!("{parent}.jsonl")),
            parent_last: last.to_owned(),
        }));
    }
    Ok(None)
}
