//! The usage of each session of a scope: its own file's plus its sub-agents' files'.
//!
//! Every transcript of a project folder is asked for its facts (through a
//! [`FactsSource`]: the listing table answers unchanged files without reading them): session
//! files, their `subagents/` files and top-level `agent-*.jsonl` files (2.0.x, attached by
//! the `sessionId` inside them). An agent file's usage counts toward its session. Team
//! transcripts and top-level agent files whose session is unknown count as sessions of their
//! own (their tokens were paid for too). When a project was given as a working directory,
//! sessions of another `cwd` with the same lossy key are left out, as the listing does.

use std::collections::HashMap;
use std::path::PathBuf;

use crate::catalog::discover::{list_project, session_agent_files, top_level_agents_by_session};
use crate::catalog::list::{FactsSource, Scope, same_dir};
use crate::error::{Error, Result};
use crate::transcript::usage::UsageRow;

/// The token usage of one session and its sub-agents.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionUsage {
    /// The project directory name.
    pub project_key: String,
    /// The session id (an unattached agent or team file: its file stem).
    pub session_id: String,
    /// The session's title (`None` for an agent file without its session).
    pub title: Option<String>,
    /// The session file's rows and its agent files' rows (a (day, model) may repeat).
    pub rows: Vec<UsageRow>,
}

/// What one file adds to.
enum Owner {
    /// A session file (its id, lower case).
    Session,
    /// An agent file of the session with this id (lower case).
    Agent(String),
}

/// The usage of every session of `scope`, sorted by project, then session id. A file or
/// folder that cannot be read is left out and its error pushed to `skipped`.
pub fn gather(
    scope: &Scope,
    facts: &mut dyn FactsSource,
    skipped: &mut Vec<Error>,
) -> Vec<SessionUsage> {
    let mut out = Vec::new();
    for dir in &scope.dirs {
        match gather_dir(&dir.path, &dir.key, scope.cwd.as_deref(), facts, skipped) {
            Ok(mut sessions) => out.append(&mut sessions),
            Err(e) => skipped.push(e),
        }
    }
    out
}

fn gather_dir(
    dir: &std::path::Path,
    key: &str,
    cwd: Option<&str>,
    facts: &mut dyn FactsSource,
    skipped: &mut Vec<Error>,
) -> Result<Vec<SessionUsage>> {
    let listing = list_project(dir)?;
    let mut files: Vec<(PathBuf, Owner)> = listing
        .sessions
        .iter()
        .map(|p| (p.clone(), Owner::Session))
        .collect();
    for sid in &listing.session_dirs {
        match session_agent_files(dir, sid) {
            Ok(agents) => files.extend(
                agents
                    .into_iter()
                    .filter_map(|a| a.path)
                    .map(|p| (p, Owner::Agent(sid.to_ascii_lowercase()))),
            ),
            Err(e) => skipped.push(e),
        }
    }
    let mut attached = std::collections::HashSet::new();
    for (sid, agents) in top_level_agents_by_session(&listing, skipped) {
        for a in agents.into_iter().filter_map(|a| a.path) {
            attached.insert(a.clone());
            files.push((a, Owner::Agent(sid.to_ascii_lowercase())));
        }
    }
    for p in &listing.agent_files {
        if !attached.contains(p) {
            files.push((p.clone(), Owner::Session));
        }
    }
    let paths: Vec<PathBuf> = files.iter().map(|(p, _)| p.clone()).collect();
    let answers = facts.facts_all(&paths);
    let mut sessions: HashMap<String, SessionUsage> = HashMap::new();
    let mut agents: Vec<(String, Vec<UsageRow>)> = Vec::new();
    let mut other_cwd = std::collections::HashSet::new();
    for ((path, owner), answer) in files.into_iter().zip(answers) {
        let f = match answer {
            Err(Error::Changed { .. } | Error::BadEntry { .. }) => facts.facts(&path),
            r => r,
        };
        let f = match f {
            Ok(f) => f,
            // Deleted between the listing and the read: not counted.
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                continue;
            }
            Err(e) => {
                skipped.push(e);
                continue;
            }
        };
        match owner {
            Owner::Session => {
                let id = f.session_id.to_ascii_lowercase();
                if let (Some(want), Some(c)) = (cwd, f.cwd.as_deref())
                    && !same_dir(c, want)
                {
                    other_cwd.insert(id);
                    continue;
                }
                let s = sessions.entry(id).or_insert_with(|| SessionUsage {
                    project_key: key.to_owned(),
                    session_id: f.session_id.clone(),
                    ..SessionUsage::default()
                });
                s.session_id.clone_from(&f.session_id);
                s.title = Some(f.title.clone()).filter(|_| f.is_listed());
                s.rows.extend(f.usage);
            }
            Owner::Agent(sid) => agents.push((sid, f.usage)),
        }
    }
    for (sid, rows) in agents {
        if other_cwd.contains(&sid) {
            continue;
        }
        let s = sessions.entry(sid.clone()).or_insert_with(|| SessionUsage {
            project_key: key.to_owned(),
            session_id: sid,
            ..SessionUsage::default()
        });
        s.rows.extend(rows);
    }
    let mut out: Vec<SessionUsage> = sessions.into_values().collect();
    out.sort_by(|a, b| a.session_id.cmp(&b.session_id));
    Ok(out)
}
