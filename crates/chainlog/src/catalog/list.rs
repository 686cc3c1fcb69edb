//! Listing sessions (`chainlog ls`, `continue`, title lookups).
//!
//! # Design
//! Discovery is a directory listing ([`super::discover`]); the per-file facts come from a
//! callback, the seam between the semantics here and how the facts are obtained:
//! [`super::facts::scan_session_facts`] scans with the reference loader, an index answers from
//! its tables. The listing then joins what crosses files:
//!
//! 1. summaries written into another file of the project whose `leafUuid` names this
//!    session's leaf (1.0.x–2.0.x) fill `summary` when the file has none of its own;
//! 2. `agents` adds the agent files (`subagents/`, top-level 2.0.x files attached by the
//!    `sessionId` inside them) and remote agents to the inline ones;
//! 3. when the project was given as a working directory, sessions whose first `cwd` is another
//!    directory with the same (lossy) key are left out.
//!
//! Agent and team transcripts are not sessions and are never listed. Empty and
//! metadata-only files are listed (title `(session)`, or their custom title).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::discover::{
    self, ProjectDir, list_project, session_agent_files, top_level_agents_by_session,
};
use super::facts::SessionFacts;
use super::paths::{key_matches, normalize_cwd, project_key, projects_root};
use crate::error::{Error, Result};
use crate::transcript::usage::DayRange;

/// The order of a listing (newest first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortBy {
    /// By the time of the last message (files without messages: their modification time).
    #[default]
    Modified,
    /// By the time of the first message.
    Created,
}

/// What [`list_sessions`] lists.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// A working directory (its project key is looked up) or a project directory. Ignored
    /// with `all`; when neither is given, the current directory's project (say which with
    /// [`ListOptions::all`] or [`ListOptions::project`]).
    pub project: Option<PathBuf>,
    /// Every project.
    pub all: bool,
    /// Keep sessions whose title, first prompt or last prompt contains this
    /// (case-insensitive), or that are in `search_hits`.
    pub search: Option<String>,
    /// Sessions a full-text search found for `search` (the full-text search of feature `search`).
    pub search_hits: Option<std::collections::HashSet<PathBuf>>,
    /// Keep sessions with exactly this tag.
    pub tag: Option<String>,
    /// Keep sessions whose git branch is exactly this.
    pub branch: Option<String>,
    /// At most this many sessions (after sorting).
    pub limit: Option<usize>,
    /// The order.
    pub sort: SortBy,
    /// Keep sessions whose time the listing sorts by (the last message's, or the first's with
    /// [`SortBy::Created`]) falls on these UTC days; sessions without a message only when the
    /// range is open.
    pub days: DayRange,
}

impl ListOptions {
    /// Every session of every project, newest first.
    pub fn all() -> ListOptions {
        ListOptions {
            all: true,
            ..ListOptions::default()
        }
    }

    /// The sessions of one project: `dir` is a working directory (its project key is looked
    /// up), a project directory or a project key.
    pub fn project(dir: impl Into<PathBuf>) -> ListOptions {
        ListOptions {
            project: Some(dir.into()),
            ..ListOptions::default()
        }
    }
}

/// The per-file facts callback: the seam where an index plugs in.
pub type FactsFn<'a> = dyn FnMut(&Path) -> Result<SessionFacts> + 'a;

/// Where a listing gets the facts of each file: a [`FactsFn`] callback, or a source that can
/// also answer a project's files at once (the listing table, [`super::cache::FactsCache`]).
pub trait FactsSource {
    /// The facts of the session file at `path`.
    fn facts(&mut self, path: &Path) -> Result<SessionFacts>;

    /// The facts of each of `paths`, in order (a source may answer them together).
    fn facts_all(&mut self, paths: &[PathBuf]) -> Vec<Result<SessionFacts>> {
        paths.iter().map(|p| self.facts(p)).collect()
    }
}

/// A [`FactsFn`] as a [`FactsSource`].
struct Callback<'a, 'b>(&'a mut FactsFn<'b>);

impl FactsSource for Callback<'_, '_> {
    fn facts(&mut self, path: &Path) -> Result<SessionFacts> {
        (self.0)(path)
    }
}

/// The project directories a listing covers, and the cwd that confirms them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    /// Project directories.
    pub dirs: Vec<ProjectDir>,
    /// When the project was given as a working directory: sessions must have this `cwd`
    /// (or none).
    pub cwd: Option<String>,
}

/// Resolves `--project` / `--all` / the current directory to project directories.
///
/// A directory directly under `<claude_dir>/projects` (or any directory holding session
/// files) is a project directory; anything else is a working directory whose key is looked
/// up (exactly, or by the `<first 200>-` prefix for long keys).
pub fn resolve_scope(claude_dir: &Path, project: Option<&Path>, all: bool) -> Result<Scope> {
    if all {
        return Ok(Scope {
            dirs: discover::project_dirs(claude_dir)?,
            cwd: None,
        });
    }
    let given = match project {
        Some(p) => p.to_path_buf(),
        None => std::env::current_dir().map_err(|e| Error::io(".", e))?,
    };
    if let Some(dir) = as_project_dir(claude_dir, &given) {
        return Ok(Scope {
            dirs: vec![dir],
            cwd: None,
        });
    }
    // A project key (`-home-me-repo`) names a folder under `projects/`: compared with the
    // names listed there, never joined into a path.
    if let Some(name) = given.to_str().filter(|n| !n.contains(['/', '\\']))
        && !given.exists()
        && let Some(dir) = discover::project_dirs(claude_dir)?
            .into_iter()
            .find(|d| d.key == name)
    {
        return Ok(Scope {
            dirs: vec![dir],
            cwd: None,
        });
    }
    let cwd = normalize_cwd(&given);
    let key = project_key(&cwd);
    let dirs = discover::project_dirs(claude_dir)?
        .into_iter()
        .filter(|d| key_matches(&d.key, &key))
        .collect();
    Ok(Scope {
        dirs,
        cwd: Some(cwd),
    })
}

/// `path` as a project directory: a real directory whose parent is the projects root.
fn as_project_dir(claude_dir: &Path, path: &Path) -> Option<ProjectDir> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_dir() {
        return None;
    }
    let root = std::fs::canonicalize(projects_root(claude_dir)).ok()?;
    let real = std::fs::canonicalize(path).ok()?;
    if real.parent() != Some(root.as_path()) {
        return None;
    }
    Some(ProjectDir {
        key: real.file_name()?.to_str()?.to_owned(),
        path: path.to_path_buf(),
    })
}

/// Lists the sessions of a scope with the facts callback, joined across files, filtered,
/// sorted newest first and limited. Strict: the first item that cannot be read (a transcript,
/// a project or `subagents/` folder) is the error; [`list_sessions_skipping`] lists the rest.
pub fn list_sessions(
    claude_dir: &Path,
    opts: &ListOptions,
    facts: &mut FactsFn<'_>,
) -> Result<Vec<SessionFacts>> {
    let mut skipped = Vec::new();
    let out = list_sessions_skipping(claude_dir, opts, facts, &mut skipped)?;
    match skipped.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// [`list_sessions`], but an item that cannot be read (a transcript, a top-level agent file,
/// a project or `subagents/` folder) is left out and its error pushed to `skipped`, so one
/// unreadable file does not hide the others (format.md §B5). Only the projects root itself is
/// fatal.
pub fn list_sessions_skipping(
    claude_dir: &Path,
    opts: &ListOptions,
    facts: &mut FactsFn<'_>,
    skipped: &mut Vec<Error>,
) -> Result<Vec<SessionFacts>> {
    list_sessions_from(claude_dir, opts, &mut Callback(facts), skipped)
}

/// [`list_sessions_skipping`] with the facts from a [`FactsSource`].
pub fn list_sessions_from(
    claude_dir: &Path,
    opts: &ListOptions,
    facts: &mut dyn FactsSource,
    skipped: &mut Vec<Error>,
) -> Result<Vec<SessionFacts>> {
    let scope = resolve_scope(claude_dir, opts.project.as_deref(), opts.all)?;
    let mut out = list_scope_from(&scope, facts, skipped);
    let needle = opts.search.as_deref().map(str::to_lowercase);
    out.retain(|f| {
        let search_ok = needle.as_deref().is_none_or(|n| {
            [
                Some(&f.title),
                f.first_prompt.as_ref(),
                f.last_prompt.as_ref(),
            ]
            .into_iter()
            .flatten()
            .any(|t| t.to_lowercase().contains(n))
                || opts
                    .search_hits
                    .as_ref()
                    .is_some_and(|h| h.contains(&f.path))
        });
        let time = match opts.sort {
            SortBy::Modified => f.modified.as_deref(),
            SortBy::Created => f.created.as_deref(),
        };
        search_ok
            && opts
                .days
                .contains(time.and_then(|t| t.get(..10)).unwrap_or(""))
            && opts
                .tag
                .as_deref()
                .is_none_or(|t| f.tag.as_deref() == Some(t))
            && opts
                .branch
                .as_deref()
                .is_none_or(|b| f.git_branch.as_deref() == Some(b))
    });
    sort_sessions(&mut out, opts.sort);
    if let Some(n) = opts.limit {
        out.truncate(n);
    }
    Ok(out)
}

/// Sorts newest first by message time; sessions without a message (empty or metadata-only
/// files) come after, newest file first; ties by path so the order is stable.
///
/// The two clocks are not mixed: a file's modification time moves when it is copied or
/// checked out, a message time does not.
pub fn sort_sessions(sessions: &mut [SessionFacts], by: SortBy) {
    // RFC 3339 UTC strings of one fixed format order as their instants. The keys are taken
    // once and borrowed; the order is found on them and applied with swaps (a session's
    // facts are hundreds of bytes: they are not moved around by the sort).
    let mut keyed: Vec<SortKey<'_>> = sessions
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let message_time = match by {
                SortBy::Modified => f.modified.as_deref(),
                SortBy::Created => f.created.as_deref(),
            };
            let key = match message_time {
                Some(t) => (true, Some(t)),
                None => (false, f.file_modified.as_deref()),
            };
            (key, f.path.as_os_str().as_encoded_bytes(), i)
        })
        .collect();
    keyed.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)).then(a.2.cmp(&b.2)));
    let order: Vec<usize> = keyed.into_iter().map(|(_, _, i)| i).collect();
    permute(sessions, &order);
}

/// A session's place in a listing: (has a message time, the time), its path's bytes (ties),
/// its index.
type SortKey<'a> = ((bool, Option<&'a str>), &'a [u8], usize);

/// Puts at each position `i` of `items` the item that was at `order[i]` (`order` is a
/// permutation), following its cycles with swaps.
fn permute<T>(items: &mut [T], order: &[usize]) {
    let mut done = vec![false; items.len()];
    for start in 0..items.len() {
        if done[start] {
            continue;
        }
        let mut at = start;
        loop {
            done[at] = true;
            let from = order[at];
            if from == start {
                break;
            }
            items.swap(at, from);
            at = from;
        }
    }
}

/// Every listed session of the scope, joined across files, unfiltered and unsorted. Strict:
/// the first item that cannot be read is the error.
pub fn list_scope(scope: &Scope, facts: &mut FactsFn<'_>) -> Result<Vec<SessionFacts>> {
    let mut skipped = Vec::new();
    let out = list_scope_skipping(scope, facts, &mut skipped);
    match skipped.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// [`list_scope`], leaving out what cannot be read (errors pushed to `skipped`).
pub fn list_scope_skipping(
    scope: &Scope,
    facts: &mut FactsFn<'_>,
    skipped: &mut Vec<Error>,
) -> Vec<SessionFacts> {
    list_scope_from(scope, &mut Callback(facts), skipped)
}

fn list_scope_from(
    scope: &Scope,
    facts: &mut dyn FactsSource,
    skipped: &mut Vec<Error>,
) -> Vec<SessionFacts> {
    let mut out = Vec::new();
    for dir in &scope.dirs {
        let mut sessions = match list_dir_from(&dir.path, facts, skipped) {
            Ok(s) => s,
            Err(e) => {
                skipped.push(e);
                continue;
            }
        };
        if let Some(cwd) = &scope.cwd {
            sessions.retain(|f| f.cwd.as_deref().is_none_or(|c| same_dir(c, cwd)));
        }
        // A session's facts are hundreds of bytes: the first project's are not copied.
        if out.is_empty() {
            out = sessions;
        } else {
            out.extend(sessions);
        }
    }
    out
}

/// Whether two `cwd`s name the same folder (a trailing `/` aside).
pub(crate) fn same_dir(a: &str, b: &str) -> bool {
    let t = |s: &str| {
        let s = s.trim_end_matches('/');
        if s.is_empty() {
            "/".to_owned()
        } else {
            s.to_owned()
        }
    };
    t(a) == t(b)
}

/// The listed sessions of one project directory, joined across its files. A file or
/// `subagents/` folder that cannot be read is left out (its error pushed to `skipped`); only a
/// project directory that cannot be listed is an error.
pub fn list_dir(
    dir: &Path,
    facts: &mut FactsFn<'_>,
    skipped: &mut Vec<Error>,
) -> Result<Vec<SessionFacts>> {
    list_dir_from(dir, &mut Callback(facts), skipped)
}

/// `list_dir` with the facts from a [`FactsSource`] (asked for the whole folder first).
pub fn list_dir_from(
    dir: &Path,
    facts: &mut dyn FactsSource,
    skipped: &mut Vec<Error>,
) -> Result<Vec<SessionFacts>> {
    let listing = list_project(dir)?;
    let answers = facts.facts_all(&listing.sessions);
    let mut all = Vec::with_capacity(listing.sessions.len());
    for (path, answer) in listing.sessions.iter().zip(answers) {
        let answer = match answer {
            Err(Error::Changed { .. } | Error::BadEntry { .. }) => facts.facts(path),
            r => r,
        };
        match answer {
            Ok(f) => all.push(f),
            // Deleted between the listing and the read (Claude Code's cleanup): not listed.
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => skipped.push(e),
        }
    }
    join_summaries(&mut all);
    let top_level = top_level_agents_by_session(&listing, skipped);
    let mut sessions = all;
    sessions.retain(SessionFacts::is_listed);
    for f in &mut sessions {
        let files = match listing
            .session_dirs
            .iter()
            .find(|d| d.eq_ignore_ascii_case(&f.session_id))
        {
            Some(sid_dir) => match session_agent_files(dir, sid_dir) {
                Ok(files) => files.len() as u64,
                Err(e) => {
                    skipped.push(e);
                    0
                }
            },
            None => 0,
        };
        let beside = top_level
            .get(&f.session_id.to_ascii_lowercase())
            .map_or(0, Vec::len) as u64;
        f.agents = f.inline_agents + files + beside;
    }
    Ok(sessions)
}

/// Fills `summary` (and the title) of sessions without one from summaries other files of the
/// project wrote about their leaf. The newest file's summary wins.
fn join_summaries(all: &mut [SessionFacts]) {
    if all.iter().all(|f| f.foreign_summaries.is_empty()) {
        // Nothing to join (as `claude -p` sessions and every client since 2.0 leave them):
        // the files are not put in order for nothing.
        return;
    }
    let mut order: Vec<usize> = (0..all.len()).collect();
    order.sort_by(|&a, &b| {
        all[a]
            .file_modified
            .cmp(&all[b].file_modified)
            .then_with(|| all[a].path.cmp(&all[b].path))
    });
    let mut by_leaf: HashMap<String, String> = HashMap::new();
    for i in order {
        for s in &all[i].foreign_summaries {
            by_leaf.insert(s.leaf_uuid.to_ascii_lowercase(), s.summary.clone());
        }
    }
    if by_leaf.is_empty() {
        return;
    }
    for f in all.iter_mut().filter(|f| f.summary.is_none()) {
        if let Some(s) = f
            .tips
            .iter()
            .find_map(|t| by_leaf.get(&t.to_ascii_lowercase()))
        {
            f.summary = Some(s.clone());
            f.title = f.pick_title();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_of_project_dir_cwd_and_all() {
        let tmp = tempfile::tempdir().unwrap();
        let claude = tmp.path();
        let work = tmp.path().join("work.dir");
        std::fs::create_dir_all(&work).unwrap();
        let real = normalize_cwd(&work);
        let key = project_key(&real);
        std::fs::create_dir_all(claude.join("projects").join(&key)).unwrap();
        std::fs::create_dir_all(claude.join("projects/-other")).unwrap();

        let s = resolve_scope(claude, Some(&work), false).unwrap();
        assert_eq!(s.dirs.len(), 1);
        assert_eq!(s.dirs[0].key, key);
        assert_eq!(s.cwd.as_deref(), Some(real.as_str()));

        let s = resolve_scope(claude, Some(&claude.join("projects/-other")), false).unwrap();
        assert_eq!((s.dirs[0].key.as_str(), s.cwd), ("-other", None));

        assert_eq!(resolve_scope(claude, None, true).unwrap().dirs.len(), 2);
        let none = resolve_scope(claude, Some(Path::new("/no/such/dir")), false).unwrap();
        assert!(none.dirs.is_empty());
    }

    /// The sort on borrowed keys with swaps orders as a stable sort on cloned keys does.
    #[test]
    fn sort_equals_a_stable_sort_on_cloned_keys() {
        let times = [
            None,
            Some("2025-01-01T00:00:01.000Z"),
            Some("2025-01-02T00:00:00.000Z"),
            Some("2024-12-31T23:59:59.999Z"),
        ];
        let mut all = Vec::new();
        for i in 0..64u32 {
            let t = |k: u32| times[((i * 7 + k * 3) % 4) as usize].map(str::to_owned);
            let mut f = blank();
            f.path = PathBuf::from(format!("/p/{:02}.jsonl", (i * 37) % 64));
            f.modified = t(0);
            f.created = t(1);
            f.file_modified = t(2);
            all.push(f);
        }
        for by in [SortBy::Modified, SortBy::Created] {
            let mut want = all.clone();
            let key = |f: &SessionFacts| {
                let m = match by {
                    SortBy::Modified => f.modified.clone(),
                    SortBy::Created => f.created.clone(),
                };
                match m {
                    Some(t) => (true, Some(t)),
                    None => (false, f.file_modified.clone()),
                }
            };
            want.sort_by(|a, b| key(b).cmp(&key(a)).then_with(|| a.path.cmp(&b.path)));
            let mut got = all.clone();
            sort_sessions(&mut got, by);
            assert_eq!(got, want, "{by:?}");
        }
    }

    fn blank() -> SessionFacts {
        SessionFacts::default()
    }
}
