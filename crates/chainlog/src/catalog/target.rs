//! What a user means by `resume X` (format.md §A7, §B5).
//!
//! `X` is tried, in order, as:
//!
//! | X | is | looked up by |
//! |---|---|---|
//! | an existing file | a PATH | the file system (the user typed a path) |
//! | a UUID | a session id | comparing session file stems |
//! | anything else that passes [`check_id`] | an agent id (`<id>` or `agent-<id>`) | comparing agent file stems |
//! | ≥ 4 id characters (hex digits and `-`) | a session id prefix | comparing session file stems |
//! | an inline (1.0.x) agent id (`<id>` or `agent-<id>`) | an agent inside a session file | the inline agents of listed sessions that have some |
//! | any text | a title: exact, then any case, then a unique substring (any case) | comparing listed titles |
//!
//! A text shorter than [`MIN_PREFIX`] that is no whole title never picks a session by a part of
//! its title: the sessions whose title contains it or whose id starts with it are listed instead
//! ([`Error::Ambiguous`], exit 2), so `resume a12` never silently resumes a session titled
//! "data123".
//!
//! Several sessions matching one step is [`Error::Ambiguous`] with the candidates (exit 2).
//!
//! Ids are never paths: an id is only compared with names read from directory listings, and
//! an argument containing `..`, `/`, `\` or NUL can only be an existing file or a title. When it
//! is neither, it is refused as an id (exit 2). A NUL byte or an empty argument is refused
//! before anything is read. A title is only ever compared, never joined into a path.
//!
//! Lookups search the given project; without `--project`, the current directory's project
//! first and then every project.

use std::path::{Path, PathBuf};

use super::discover::{
    self, AgentLayout, ProjectDir, agent_id_of_file, is_uuid, list_project, session_agent_files,
};
use super::inline::{InlineTarget, scan_targets};
use super::list::{FactsFn, Scope, list_scope, resolve_scope};
use crate::error::{Error, Result, check_id};

/// A resolved `resume` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A session file found by id or title.
    Session {
        /// The session id (the file stem).
        session_id: String,
        /// The session file.
        path: PathBuf,
    },
    /// A sub-agent transcript found by agent id.
    Agent {
        /// The agent id.
        agent_id: String,
        /// Where it is stored.
        layout: AgentLayout,
        /// Its transcript.
        path: PathBuf,
        /// Its `.meta.json`, if any.
        meta_path: Option<PathBuf>,
        /// An inline agent (its messages are in the session file `path`): its leaves, oldest
        /// first; a resume starts at the last. Empty for an agent in its own file.
        leaves: Vec<String>,
    },
    /// An existing file named by the argument.
    File(PathBuf),
}

impl Target {
    /// The transcript to read.
    pub fn path(&self) -> &Path {
        match self {
            Target::Session { path, .. } | Target::Agent { path, .. } | Target::File(path) => path,
        }
    }

    /// Where a resume of the target starts when no leaf is asked for: an inline agent's
    /// newest leaf in its session file; `None`: the transcript's own leaf rule.
    pub fn leaf(&self) -> Option<&str> {
        match self {
            Target::Agent { leaves, .. } => leaves.last().map(String::as_str),
            _ => None,
        }
    }
}

/// The inline agents of a session file as targets name them (the index answers them in
/// `Store::target`; [`scan_targets`] scans the file).
pub type InlineFn<'a> = dyn FnMut(&Path) -> Result<Vec<InlineTarget>> + 'a;

/// Resolves a `resume` argument (see the module docs for the order). `facts` is the same
/// per-file callback [`super::list::list_sessions`] takes; it is used for title lookups only.
pub fn resolve_target(
    claude_dir: &Path,
    project: Option<&Path>,
    arg: &str,
    facts: &mut FactsFn<'_>,
) -> Result<Target> {
    resolve_target_with(claude_dir, project, arg, facts, &mut scan_targets)
}

/// [`resolve_target`] with the inline agents of a session file given by `inline`.
pub fn resolve_target_with(
    claude_dir: &Path,
    project: Option<&Path>,
    arg: &str,
    facts: &mut FactsFn<'_>,
    inline: &mut InlineFn<'_>,
) -> Result<Target> {
    if arg.is_empty() || arg.contains('\0') {
        check_id(arg)?;
    }
    if Path::new(arg).is_file() {
        check_transcript(Path::new(arg))?;
        return Ok(Target::File(PathBuf::from(arg)));
    }
    let id_problem = check_id(arg).err();
    let scopes = scopes(claude_dir, project)?;
    for scope in &scopes {
        if id_problem.is_none() {
            if let Some(t) = by_session_id(&scope.dirs, arg)? {
                return Ok(t);
            }
            if let Some(t) = by_agent_id(&scope.dirs, arg)? {
                return Ok(t);
            }
            if let Some(t) = by_id_prefix(&scope.dirs, arg)? {
                return Ok(t);
            }
            if let Some(t) = by_inline_agent(scope, arg, facts, inline)? {
                return Ok(t);
            }
        }
        if let Some(t) = by_title(scope, arg, facts)? {
            return Ok(t);
        }
    }
    if id_problem.is_some() && looks_like_a_path(arg) {
        return Err(not_a_file(arg));
    }
    // An argument that could only be a path is refused as an id; one that is simply no id (a
    // title with spaces, say) matched nothing.
    let path_like = arg.contains("..") || arg.contains(['/', '\\']);
    match id_problem {
        Some(e) if path_like => Err(e),
        _ => Err(Error::NoMatch { arg: arg.into() }),
    }
}

/// An argument the user meant as a file: a path with a separator that exists (a directory, a
/// FIFO...), or one named like a transcript. Other path-like arguments (`..`, `a/b`) are
/// refused as ids (exit 2).
fn looks_like_a_path(arg: &str) -> bool {
    (arg.contains('/') && std::fs::symlink_metadata(arg).is_ok())
        || Path::new(arg)
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("jsonl"))
}

fn not_a_file(arg: &str) -> Error {
    let path = PathBuf::from(arg);
    match std::fs::metadata(arg) {
        Ok(m) if m.is_dir() => Error::NotATranscript {
            path,
            what: "a directory",
        },
        Ok(_) => Error::NotATranscript {
            path,
            what: "not a regular file",
        },
        Err(_) => Error::NoTranscript { path },
    }
}

/// How far [`check_transcript`] looks for a line that is a JSON object.
const SNIFF: u64 = 64 << 10;

/// Refuses a file given by path that is not a transcript (`resume /etc/passwd`) before any
/// index is made for it: within its first 64 KiB some line must start with `{` (an empty
/// file passes; a file starting with a longer run of damage must be named by session id).
pub fn check_transcript(path: &Path) -> Result<()> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut head = Vec::new();
    file.take(SNIFF)
        .read_to_end(&mut head)
        .map_err(|e| Error::io(path, e))?;
    let head = head
        .strip_prefix(crate::transcript::frame::UTF8_BOM)
        .unwrap_or(&head);
    let object_line = head.split(|&b| b == b'\n').any(|line| {
        line.iter()
            .find(|b| !b.is_ascii_whitespace())
            .is_some_and(|&b| b == b'{')
    });
    if head.iter().all(u8::is_ascii_whitespace) || object_line {
        return Ok(());
    }
    Err(Error::BadEntry {
        position: crate::error::Position {
            path: path.to_path_buf(),
            line: 1,
            byte_offset: 0,
        },
        reason: format!(
            "not a transcript: no line in the first {} KiB is a JSON object; nothing was indexed",
            SNIFF >> 10
        ),
    })
}

/// The given project; or the current directory's project, then every project.
fn scopes(claude_dir: &Path, project: Option<&Path>) -> Result<Vec<Scope>> {
    if project.is_some() {
        return Ok(vec![resolve_scope(claude_dir, project, false)?]);
    }
    let mut here = resolve_scope(claude_dir, None, false)?;
    // Ids are confirmed by name, titles by listing: the cwd filter would only hide matches.
    here.cwd = None;
    Ok(vec![here, resolve_scope(claude_dir, None, true)?])
}

fn by_session_id(dirs: &[ProjectDir], id: &str) -> Result<Option<Target>> {
    if !is_uuid(id) {
        return Ok(None);
    }
    let mut found = Vec::new();
    for d in dirs {
        for path in list_project(&d.path)?.sessions {
            if discover::session_id_of(&path).is_some_and(|s| s.eq_ignore_ascii_case(id)) {
                found.push(path);
            }
        }
    }
    one(id, found, |path| Target::Session {
        session_id: discover::session_id_of(&path)
            .unwrap_or_default()
            .to_owned(),
        path,
    })
}

/// The shortest id prefix accepted.
pub const MIN_PREFIX: usize = 4;

fn by_id_prefix(dirs: &[ProjectDir], prefix: &str) -> Result<Option<Target>> {
    let id_chars = prefix.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    if prefix.len() < MIN_PREFIX || !id_chars || is_uuid(prefix) {
        return Ok(None);
    }
    let mut found = Vec::new();
    for d in dirs {
        for path in list_project(&d.path)?.sessions {
            let matches = discover::session_id_of(&path).is_some_and(|s| starts_with_id(s, prefix));
            if matches {
                found.push(path);
            }
        }
    }
    one(&format!("id prefix {prefix}"), found, |path| {
        Target::Session {
            session_id: discover::session_id_of(&path)
                .unwrap_or_default()
                .to_owned(),
            path,
        }
    })
}

fn by_agent_id(dirs: &[ProjectDir], arg: &str) -> Result<Option<Target>> {
    let id = arg.strip_prefix("agent-").unwrap_or(arg);
    let mut found = Vec::new();
    for d in dirs {
        let listing = list_project(&d.path)?;
        for path in &listing.agent_files {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if agent_id_of_file(name) == Some(id) {
                found.push((AgentLayout::TopLevel, path.clone(), None));
            }
        }
        for sid in &listing.session_dirs {
            for f in session_agent_files(&d.path, sid)? {
                if let (Some(path), true) = (f.path, f.agent_id == id) {
                    found.push((f.layout, path, f.meta_path));
                }
            }
        }
    }
    let paths: Vec<PathBuf> = found.iter().map(|(_, p, _)| p.clone()).collect();
    let Some(path) = one(arg, paths, |p| p)? else {
        return Ok(None);
    };
    let (layout, path, meta_path) = found
        .into_iter()
        .find(|(_, p, _)| *p == path)
        .expect("one of the found");
    Ok(Some(Target::Agent {
        agent_id: id.to_owned(),
        layout,
        path,
        meta_path,
        leaves: Vec::new(),
    }))
}

/// An inline (1.0.x) agent: looked for only in the listed sessions whose facts count inline
/// agents (cached facts: no transcript is read for the others).
fn by_inline_agent(
    scope: &Scope,
    arg: &str,
    facts: &mut FactsFn<'_>,
    inline: &mut InlineFn<'_>,
) -> Result<Option<Target>> {
    if scope.dirs.is_empty() {
        return Ok(None);
    }
    let id = arg.strip_prefix("agent-").unwrap_or(arg);
    let listed = list_scope(scope, facts)?;
    let mut found = Vec::new();
    for f in listed.iter().filter(|f| f.inline_agents > 0) {
        for a in inline(&f.path)? {
            // Uuids are printed in lower case; the user may type them in any.
            if a.agent_id == id || (is_uuid(id) && a.agent_id.eq_ignore_ascii_case(id)) {
                found.push((f.path.clone(), a));
            }
        }
    }
    let paths: Vec<PathBuf> = found.iter().map(|(p, _)| p.clone()).collect();
    let Some(path) = one(arg, paths, |p| p)? else {
        return Ok(None);
    };
    let Some((_, a)) = found.into_iter().find(|(p, _)| *p == path) else {
        return Ok(None);
    };
    Ok(Some(Target::Agent {
        agent_id: a.agent_id,
        layout: AgentLayout::Inline,
        path,
        meta_path: None,
        leaves: a.leaves,
    }))
}

fn by_title(scope: &Scope, title: &str, facts: &mut FactsFn<'_>) -> Result<Option<Target>> {
    if scope.dirs.is_empty() {
        return Ok(None);
    }
    let listed = list_scope(scope, facts)?;
    let lower = title.to_lowercase();
    // Exact, then any case, then a substring in any case: the first rule that matches decides.
    let rules: [&dyn Fn(&str) -> bool; 3] =
        [&|t| t == title, &|t| t.to_lowercase() == lower, &|t| {
            t.to_lowercase().contains(&lower)
        }];
    for (i, rule) in rules.into_iter().enumerate() {
        let matches: Vec<_> = listed.iter().filter(|f| rule(&f.title)).collect();
        // A part of a title shorter than an id prefix may have been meant as one (`a12`): it
        // never wins alone; the sessions it could mean are listed (exit 2).
        if i == 2 && title.chars().count() < MIN_PREFIX {
            let id_like: Vec<_> = listed
                .iter()
                .filter(|f| starts_with_id(&f.session_id, title))
                .collect();
            let mut candidates: Vec<String> = matches
                .iter()
                .chain(&id_like)
                .map(|f| candidate(f))
                .collect();
            candidates.sort();
            candidates.dedup();
            if candidates.is_empty() {
                return Ok(None);
            }
            return Err(Error::Ambiguous {
                what: format!(
                    "{title:?} (shorter than {MIN_PREFIX} characters: a part of a title or of an id)"
                ),
                candidates,
            });
        }
        match matches.as_slice() {
            [] => {}
            [f] => {
                return Ok(Some(Target::Session {
                    session_id: f.session_id.clone(),
                    path: f.path.clone(),
                }));
            }
            _ => {
                return Err(Error::Ambiguous {
                    what: format!("title {title:?}"),
                    candidates: matches.iter().map(|f| candidate(f)).collect(),
                });
            }
        }
    }
    Ok(None)
}

/// Whether session id `id` starts with `prefix` (any case).
fn starts_with_id(id: &str, prefix: &str) -> bool {
    id.get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

/// A listed session as a line of an ambiguity error: id, title, path.
fn candidate(f: &super::SessionFacts) -> String {
    format!("{}  {}  {}", f.session_id, f.title, f.path.display())
}

/// Zero, one, or an ambiguity error listing the paths.
fn one<T>(
    what: &str,
    mut found: Vec<PathBuf>,
    make: impl FnOnce(PathBuf) -> T,
) -> Result<Option<T>> {
    found.sort();
    found.dedup();
    match found.len() {
        0 => Ok(None),
        1 => Ok(Some(make(found.remove(0)))),
        _ => Err(Error::Ambiguous {
            what: format!("{what:?}"),
            candidates: found.iter().map(|p| p.display().to_string()).collect(),
        }),
    }
}
