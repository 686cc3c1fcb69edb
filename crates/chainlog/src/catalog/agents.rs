//! The sub-agents of one session (`chainlog agents`), in every layout (format.md §A3, §A7).
//!
//! An agent transcript is resumed like a session, with the agent leaf rule the loader applies
//! to files whose every message is a sidechain (its newest message not named as parent by
//! another of its messages). `status` is what a resume would find at the end of its chain:
//! `completed` (ends on an assistant reply), `interrupted` (ends on a prompt or a tool
//! result), `empty` (no message), or, for a remote agent, the `status` of its meta file
//! (`remote` when it has none).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::discover::{
    self, AgentFile, AgentLayout, list_project, session_agent_files, session_id_of,
};
use super::inline::{self, InlineAgent};
use super::prompt;
use crate::chain::{MessageRow, ResolveOptions, Transcript, resolve};
use crate::error::{Error, Result};
use crate::id::IdNames;
use crate::resume::{Interrupt, detect, read_view};
use crate::transcript::envelope::{Flags, Kind};

/// One sub-agent of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInfo {
    /// The agent id (a remote agent's task id; an inline agent without `agentId`: the uuid
    /// of its first message).
    pub agent_id: String,
    /// Where it is stored.
    pub layout: AgentLayout,
    /// Its transcript (the session file for inline agents; `None` for remote agents).
    pub path: Option<PathBuf>,
    /// Its meta file, if any.
    pub meta_path: Option<PathBuf>,
    /// `agentType` from the meta file (`remoteTaskType` for remote agents).
    pub agent_type: Option<String>,
    /// `description` from the meta file (`title` for remote agents), else its first prompt.
    pub description: Option<String>,
    /// `worktreePath` from the meta file.
    pub worktree_path: Option<String>,
    /// Visible messages on its chain.
    pub message_count: u64,
    /// `completed`, `interrupted`, `empty`, or a remote agent's status.
    pub status: String,
}

/// The fields of `agent-<id>.meta.json` / `remote-agent-<taskId>.meta.json` chainlog uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentMeta {
    /// `agentType` or `remoteTaskType`.
    pub agent_type: Option<String>,
    /// `description` or `title`.
    pub description: Option<String>,
    /// `worktreePath`.
    pub worktree_path: Option<String>,
    /// `status` (remote agents).
    pub status: Option<String>,
}

/// The largest `.meta.json` read (real ones are a few hundred bytes).
const META_MAX: u64 = 1 << 20;

/// Reads a meta file; a missing or unreadable one is empty (it is optional). Only a regular
/// file of at most 1 MiB is read (a FIFO would block, a device or huge file would not end).
pub fn read_meta(path: Option<&Path>) -> AgentMeta {
    let read = |p: &Path| {
        use std::io::Read;
        let m = std::fs::metadata(p).ok()?;
        if !m.is_file() || m.len() > META_MAX {
            return None;
        }
        let mut buf = Vec::new();
        std::fs::File::open(p)
            .ok()?
            .take(META_MAX)
            .read_to_end(&mut buf)
            .ok()?;
        Some(buf)
    };
    let Some(v) = path
        .and_then(read)
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
    else {
        return AgentMeta::default();
    };
    let s = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| v.get(*k).and_then(Value::as_str))
            .map(str::to_owned)
    };
    AgentMeta {
        agent_type: s(&["agentType", "remoteTaskType"]),
        description: s(&["description", "title"]),
        worktree_path: s(&["worktreePath"]),
        status: s(&["status"]),
    }
}

/// Every sub-agent of the session stored at `session_path`: agent files under
/// `<sid>/subagents/`, top-level 2.0.x files whose entries name the session, inline
/// sidechains, and remote agents. Sorted by layout, then id.
///
/// The inline agents come from a full scan of the session (the reference: `Store::agents`
/// reads the same rows from the index).
pub fn session_agents(session_path: &Path) -> Result<Vec<AgentInfo>> {
    let t = Transcript::open(session_path).map_err(|e| Error::io(session_path, e))?;
    agents_with(session_path, &inline::sidechain_rows(&t), &t.names)
}

/// [`session_agents`] given the session's sidechain rows (from a scan or the index) and the
/// texts of its non-UUID ids.
pub(crate) fn agents_with(
    session_path: &Path,
    sidechain: &[(u32, MessageRow)],
    names: &IdNames,
) -> Result<Vec<AgentInfo>> {
    let dir = session_path.parent().unwrap_or(Path::new("."));
    let sid = session_id_of(session_path)
        .map(str::to_owned)
        .or_else(|| {
            session_path
                .file_stem()
                .and_then(|s| s.to_str())
                .map(str::to_owned)
        })
        .unwrap_or_default();
    let mut files = session_agent_files(dir, &sid)?;
    let listing = list_project(dir)?;
    let mut unreadable = Vec::new();
    let mut beside = discover::top_level_agents_by_session(&listing, &mut unreadable);
    if let Some(e) = unreadable.into_iter().next() {
        return Err(e);
    }
    files.extend(beside.remove(&sid.to_ascii_lowercase()).unwrap_or_default());
    let mut out = Vec::new();
    for f in &files {
        out.push(agent_file_info(f)?);
    }
    for a in inline::group(session_path, sidechain)? {
        out.push(inline_info(session_path, sidechain, names, &a));
    }
    out.sort_by(|a, b| (a.layout, &a.agent_id).cmp(&(b.layout, &b.agent_id)));
    Ok(out)
}

/// The facts of an inline agent (its rows index `sidechain`).
fn inline_info(
    session_path: &Path,
    sidechain: &[(u32, MessageRow)],
    names: &IdNames,
    a: &InlineAgent,
) -> AgentInfo {
    let head = |i: usize| &sidechain[i].1.head;
    let newest = a
        .rows
        .iter()
        .copied()
        .filter(|&i| head(i).kind.is_turn())
        .max_by_key(|&i| (head(i).timestamp, i));
    let status = match newest.map(|i| head(i).kind) {
        None => "empty",
        Some(Kind::Assistant) => "completed",
        Some(_) => "interrupted",
    };
    AgentInfo {
        agent_id: inline::agent_name(a, names),
        layout: AgentLayout::Inline,
        path: Some(session_path.to_path_buf()),
        meta_path: None,
        agent_type: None,
        description: a.prompt.clone(),
        worktree_path: None,
        message_count: a
            .rows
            .iter()
            .filter(|&&i| head(i).flags.has(Flags::VISIBLE))
            .count() as u64,
        status: status.to_owned(),
    }
}

/// The facts of an agent stored in its own file (or a remote agent's meta file).
pub fn agent_file_info(f: &AgentFile) -> Result<AgentInfo> {
    let meta = read_meta(f.meta_path.as_deref());
    let mut info = AgentInfo {
        agent_id: f.agent_id.clone(),
        layout: f.layout,
        path: f.path.clone(),
        meta_path: f.meta_path.clone(),
        agent_type: meta.agent_type,
        description: meta.description,
        worktree_path: meta.worktree_path,
        message_count: 0,
        status: meta.status.unwrap_or_else(|| "remote".into()),
    };
    let Some(path) = &f.path else {
        return Ok(info);
    };
    let t = Transcript::open(path).map_err(|e| Error::io(path, e))?;
    let res = resolve(&t, ResolveOptions::default()).map_err(|leaf| Error::UnknownLeaf {
        path: path.clone(),
        leaf,
    })?;
    info.message_count = res
        .chain
        .iter()
        .filter(|l| {
            t.row(l.uuid)
                .is_some_and(|r| r.head.flags.has(Flags::VISIBLE))
        })
        .count() as u64;
    let tail = &res.chain[res.chain.len().saturating_sub(8)..];
    let view = read_view(path, tail, &t.names)?;
    let status = if res.leaf.is_none() {
        "empty"
    } else if detect(&view) == Interrupt::None {
        "completed"
    } else {
        "interrupted"
    };
    status.clone_into(&mut info.status);
    if info.description.is_none() {
        let first_user = res.chain.iter().find(|l| l.kind == Kind::User);
        if let Some(l) = first_user {
            let v = read_view(path, std::slice::from_ref(l), &t.names)?;
            info.description = v
                .first()
                .and_then(crate::resume::ViewEntry::value)
                .as_ref()
                .and_then(prompt::user_text)
                .map(prompt::flatten);
        }
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_files_are_read_only_when_small_and_regular() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("agent-f.meta.json");
        crate::testing::mkfifo(&fifo);
        // Opening a FIFO for reading would block until a writer comes.
        assert_eq!(read_meta(Some(&fifo)), AgentMeta::default());
        let huge = tmp.path().join("agent-h.meta.json");
        let f = std::fs::File::create(&huge).unwrap();
        f.set_len(300 << 20).unwrap();
        assert_eq!(read_meta(Some(&huge)), AgentMeta::default());
        let ok = tmp.path().join("agent-o.meta.json");
        std::fs::write(&ok, r#"{"agentType":"Explore"}"#).unwrap();
        assert_eq!(read_meta(Some(&ok)).agent_type.as_deref(), Some("Explore"));
    }

    #[test]
    fn meta_fields_of_both_kinds() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("agent-a1.meta.json");
        std::fs::write(
            &a,
            r#"{"agentType":"Explore","description":"look around","worktreePath":"/w/t"}"#,
        )
        .unwrap();
        let m = read_meta(Some(&a));
        assert_eq!(m.agent_type.as_deref(), Some("Explore"));
        assert_eq!(m.description.as_deref(), Some("look around"));
        assert_eq!(m.worktree_path.as_deref(), Some("/w/t"));
        let r = tmp.path().join("remote-agent-t1.meta.json");
        std::fs::write(
            &r,
            r#"{"taskId":"t1","remoteTaskType":"review","title":"Review PR","status":"running"}"#,
        )
        .unwrap();
        let m = read_meta(Some(&r));
        assert_eq!(
            (
                m.agent_type.as_deref(),
                m.description.as_deref(),
                m.status.as_deref()
            ),
            (Some("review"), Some("Review PR"), Some("running"))
        );
        assert_eq!(
            read_meta(Some(&tmp.path().join("nope"))),
            AgentMeta::default()
        );
    }
}
