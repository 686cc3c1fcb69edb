//! Finding sessions and sub-agents on disk (format.md §A3).
//!
//! # Context
//! Discovery is driven by directory listings only, so a transcript deleted by Claude Code's
//! cleanup simply stops being listed. Three sub-agent layouts coexist in real config dirs:
//!
//! | layout | where | session it belongs to |
//! |---|---|---|
//! | [`AgentLayout::Subagents`] (2.1.x) | `<key>/<sid>/subagents/[<dir>/]agent-<id>.jsonl` + `.meta.json` | the `<sid>` folder |
//! | [`AgentLayout::TopLevel`] (2.0.x) | `<key>/agent-<id>.jsonl` beside the sessions | the `sessionId` inside its entries |
//! | [`AgentLayout::Inline`] (1.0.x) | `isSidechain:true` entries in the main file | the file |
//!
//! plus remote agents, `<key>/<sid>/remote-agents/remote-agent-<taskId>.meta.json` (identity
//! only, [`AgentLayout::Remote`]).
//!
//! # Design
//! Only real directories and regular files count (`DirEntry::file_type` does not follow
//! symlinks): a symlinked session or project is never listed. Names taken from the disk are
//! compared, never built from user input.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::paths::projects_root;
use crate::error::{Error, Result};

/// A project directory under `<claude>/projects`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectDir {
    /// The directory name (the project key).
    pub key: String,
    /// The directory.
    pub path: PathBuf,
}

/// What one listing of a project directory finds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectListing {
    /// `<uuid>.jsonl` regular files, sorted by name.
    pub sessions: Vec<PathBuf>,
    /// Names of `<uuid>` directories (they hold `subagents/` and `remote-agents/`).
    pub session_dirs: Vec<String>,
    /// Top-level `agent-<id>.jsonl` regular files (2.0.x), sorted by name.
    pub agent_files: Vec<PathBuf>,
}

/// How a sub-agent transcript is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgentLayout {
    /// `<sid>/subagents/[<dir>/]agent-<id>.jsonl` with `.meta.json` (2.1.x).
    Subagents,
    /// `agent-<id>.jsonl` beside the session files (2.0.x).
    TopLevel,
    /// `isSidechain` entries inside the main file (1.0.x).
    Inline,
    /// `<sid>/remote-agents/remote-agent-<taskId>.meta.json` (identity only).
    Remote,
}

impl AgentLayout {
    /// The name used in listings.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentLayout::Subagents => "subagents",
            AgentLayout::TopLevel => "top-level",
            AgentLayout::Inline => "inline",
            AgentLayout::Remote => "remote",
        }
    }
}

/// A sub-agent stored in its own file (or a remote agent's meta file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentFile {
    /// The agent id (`a<hex>`, `a<label>-<hex>`) or the remote task id.
    pub agent_id: String,
    /// Where it is stored.
    pub layout: AgentLayout,
    /// The transcript (`None` for a remote agent).
    pub path: Option<PathBuf>,
    /// `agent-<id>.meta.json` / `remote-agent-<taskId>.meta.json`, when present.
    pub meta_path: Option<PathBuf>,
}

/// Whether `s` is a UUID in the 8-4-4-4-12 hex form (any case).
pub fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, &c)| match i {
            8 | 13 | 18 | 23 => c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Every project directory (real directories only), sorted by key. A missing projects root
/// is an empty list.
pub fn project_dirs(claude_dir: &Path) -> Result<Vec<ProjectDir>> {
    let root = projects_root(claude_dir);
    let entries = match fs::read_dir(&root) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(&root, e)),
    };
    let mut dirs = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(&root, e))?;
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if let (true, Some(key)) = (is_dir, entry.file_name().to_str()) {
            dirs.push(ProjectDir {
                key: key.to_owned(),
                path: entry.path(),
            });
        }
    }
    dirs.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(dirs)
}

/// Lists one project directory: session files, session folders and top-level agent files.
/// A directory that vanished is empty.
pub fn list_project(dir: &Path) -> Result<ProjectListing> {
    let mut out = ProjectListing::default();
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(Error::io(dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let Ok(ty) = entry.file_type() else { continue };
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if ty.is_file() {
            if let Some(stem) = name.strip_suffix(".jsonl") {
                if is_uuid(stem) {
                    out.sessions.push(entry.path());
                } else if agent_id_of_file(name).is_some() {
                    out.agent_files.push(entry.path());
                }
            }
        } else if ty.is_dir() && is_uuid(name) {
            out.session_dirs.push(name.to_owned());
        }
    }
    // Same folder: byte order equals path order, and comparing bytes is far cheaper than
    // comparing `Path` components (10,000 sessions).
    out.sessions
        .sort_unstable_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
    out.agent_files
        .sort_unstable_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
    out.session_dirs.sort_unstable();
    Ok(out)
}

/// The session id of a session file (its stem), if the name is a session file's.
pub fn session_id_of(path: &Path) -> Option<&str> {
    let name = path.file_name()?.to_str()?;
    name.strip_suffix(".jsonl").filter(|s| is_uuid(s))
}

/// `agent-<id>.jsonl` → `<id>` (a non-empty id that is not path-like).
pub fn agent_id_of_file(name: &str) -> Option<&str> {
    let id = name.strip_prefix("agent-")?.strip_suffix(".jsonl")?;
    crate::error::check_id(id).ok().map(|()| id)
}

/// The sub-agent and remote-agent files of one session (`<dir>/<sid>/subagents/`, one more
/// folder level, and `<dir>/<sid>/remote-agents/`), sorted by layout then id.
pub fn session_agent_files(project_dir: &Path, session_id: &str) -> Result<Vec<AgentFile>> {
    let base = project_dir.join(session_id);
    let mut out = Vec::new();
    let sub = base.join("subagents");
    for (path, ty) in read_dir_typed(&sub)? {
        if ty.is_dir() {
            for (inner, ity) in read_dir_typed(&path)? {
                if ity.is_file() {
                    push_subagent(&mut out, &inner);
                }
            }
        } else if ty.is_file() {
            push_subagent(&mut out, &path);
        }
    }
    for (path, ty) in read_dir_typed(&base.join("remote-agents"))? {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let task = name
            .strip_prefix("remote-agent-")
            .and_then(|r| r.strip_suffix(".meta.json"));
        if let (true, Some(task)) = (ty.is_file(), task)
            && crate::error::check_id(task).is_ok()
        {
            out.push(AgentFile {
                agent_id: task.to_owned(),
                layout: AgentLayout::Remote,
                path: None,
                meta_path: Some(path.clone()),
            });
        }
    }
    out.sort_by(|a, b| (a.layout, &a.agent_id).cmp(&(b.layout, &b.agent_id)));
    Ok(out)
}

fn push_subagent(out: &mut Vec<AgentFile>, path: &Path) {
    let Some(id) = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(agent_id_of_file)
    else {
        return;
    };
    let meta = path.with_file_name(format!("agent-{id}.meta.json"));
    out.push(AgentFile {
        agent_id: id.to_owned(),
        layout: AgentLayout::Subagents,
        path: Some(path.to_path_buf()),
        meta_path: meta.is_file().then_some(meta),
    });
}

/// Entries of a directory with their (non-followed) type; a missing directory is empty.
fn read_dir_typed(dir: &Path) -> Result<Vec<(PathBuf, fs::FileType)>> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(Vec::new());
        }
        Err(e) => return Err(Error::io(dir, e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        if let Ok(ty) = entry.file_type() {
            out.push((entry.path(), ty));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// The `sessionId` a top-level agent file (2.0.x) belongs to: the first one found in its
/// first few lines. Reads those lines only.
pub fn top_level_agent_session(path: &Path) -> Result<Option<String>> {
    #[derive(Deserialize)]
    struct Head {
        #[serde(rename = "sessionId")]
        session_id: Option<String>,
    }
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    };
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    for _ in 0..8 {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| Error::io(path, e))?;
        if n == 0 || line.last() != Some(&b'\n') {
            break;
        }
        if let Ok(Head {
            session_id: Some(sid),
        }) = serde_json::from_slice::<Head>(&line)
        {
            return Ok(Some(sid));
        }
    }
    Ok(None)
}

/// Groups top-level agent files of a project by the session they belong to.
///
/// A file that cannot be read is left out and its error pushed to `skipped`.
pub fn top_level_agents_by_session(
    listing: &ProjectListing,
    skipped: &mut Vec<Error>,
) -> HashMap<String, Vec<AgentFile>> {
    let mut by_session: HashMap<String, Vec<AgentFile>> = HashMap::new();
    for path in &listing.agent_files {
        let sid = match top_level_agent_session(path) {
            Ok(Some(sid)) => sid,
            Ok(None) => continue,
            Err(e) => {
                skipped.push(e);
                continue;
            }
        };
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let Some(id) = agent_id_of_file(name) else {
            continue;
        };
        by_session
            .entry(sid.to_ascii_lowercase())
            .or_default()
            .push(AgentFile {
                agent_id: id.to_owned(),
                layout: AgentLayout::TopLevel,
                path: Some(path.clone()),
                meta_path: None,
            });
    }
    by_session
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_and_agent_names() {
        assert!(is_uuid("155715ec-f4e9-47ea-859c-2e4cfcceab6f"));
        assert!(is_uuid("155715EC-F4E9-47EA-859C-2E4CFCCEAB6F"));
        assert!(!is_uuid("155715ec-f4e9-47ea-859c-2e4cfcceab6"));
        assert!(!is_uuid("155715ecf4e947ea859c2e4cfcceab6f"));
        assert!(!is_uuid("155715ec-f4e9-47ea-859c-2e4cfcceab6g"));
        assert_eq!(agent_id_of_file("agent-a4e3ca2.jsonl"), Some("a4e3ca2"));
        assert_eq!(
            agent_id_of_file("agent-aprompt_suggestion-1f.jsonl"),
            Some("aprompt_suggestion-1f")
        );
        assert_eq!(agent_id_of_file("agent-.jsonl"), None);
        assert_eq!(agent_id_of_file("agent-a..b.jsonl"), None);
        assert_eq!(agent_id_of_file("agent-a.meta.json"), None);
    }

    #[test]
    fn listing_keeps_regular_uuid_files_and_real_dirs_only() {
        let tmp = tempfile::tempdir().unwrap();
        let claude = tmp.path();
        let proj = claude.join("projects/-p");
        fs::create_dir_all(proj.join("11111111-1111-4111-8111-111111111111/subagents/nested"))
            .unwrap();
        fs::create_dir_all(proj.join("11111111-1111-4111-8111-111111111111/remote-agents"))
            .unwrap();
        let sid = "11111111-1111-4111-8111-111111111111";
        fs::write(proj.join(format!("{sid}.jsonl")), "").unwrap();
        fs::write(proj.join("22222222-2222-4222-8222-22222222222A.jsonl"), "").unwrap();
        fs::write(proj.join("notes.jsonl"), "").unwrap();
        fs::write(proj.join("agent-a1.jsonl"), "").unwrap();
        std::os::unix::fs::symlink(
            proj.join(format!("{sid}.jsonl")),
            proj.join("33333333-3333-4333-8333-333333333333.jsonl"),
        )
        .unwrap();
        std::os::unix::fs::symlink(&proj, claude.join("projects/-link")).unwrap();
        let sub = proj.join(sid).join("subagents");
        fs::write(sub.join("agent-a2.jsonl"), "").unwrap();
        fs::write(sub.join("agent-a2.meta.json"), "{}").unwrap();
        fs::write(sub.join("nested/agent-a3.jsonl"), "").unwrap();
        fs::write(
            proj.join(sid)
                .join("remote-agents/remote-agent-t9.meta.json"),
            "{}",
        )
        .unwrap();

        let dirs = project_dirs(claude).unwrap();
        assert_eq!(
            dirs.iter().map(|d| d.key.as_str()).collect::<Vec<_>>(),
            ["-p"]
        );
        let l = list_project(&proj).unwrap();
        let names: Vec<_> = l
            .sessions
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "11111111-1111-4111-8111-111111111111.jsonl",
                "22222222-2222-4222-8222-22222222222A.jsonl"
            ]
        );
        assert_eq!(l.session_dirs, [sid]);
        assert_eq!(l.agent_files, [proj.join("agent-a1.jsonl")]);
        let agents = session_agent_files(&proj, sid).unwrap();
        let summary: Vec<_> = agents
            .iter()
            .map(|a| (a.agent_id.as_str(), a.layout, a.meta_path.is_some()))
            .collect();
        assert_eq!(
            summary,
            [
                ("a2", AgentLayout::Subagents, true),
                ("a3", AgentLayout::Subagents, false),
                ("t9", AgentLayout::Remote, true)
            ]
        );
        assert!(
            session_agent_files(&proj, "44444444-4444-4444-8444-444444444444")
                .unwrap()
                .is_empty()
        );
        assert!(
            list_project(&claude.join("nope"))
                .unwrap()
                .sessions
                .is_empty()
        );
        assert!(project_dirs(&claude.join("nope")).unwrap().is_empty());
    }
}
