//! The writing verbs: `append`, `fork`, `branch`, `title`, `tag` (format.md §A4, §A7, §A8).
//! Each one resolves the session the user named, calls the library writer and prints its
//! result.
//!
//! A session is named by its full id, its transcript path or its exact title (the lookup is
//! `resume`'s, but the prefix and substring matches it also accepts are refused for writes; ids
//! are never paths). Only `append` may create a session, and only one named by a new UUID (in the
//! project of `--project`, default the current directory); the others write to an existing
//! session file, or create a new session beside it (`fork`, `branch`).

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::CliError;
use chainlog::Error;
use chainlog::Position;
use chainlog::SessionWriter;
use chainlog::Target;
use chainlog::WriterOptions;
use chainlog::format::check_id;
use chainlog::writer::check_entry;
use serde_json::Value;

use super::{Cli, CliResult};

#[derive(Debug, clap::Args)]
pub struct AppendArgs {
    /// The session: an existing session (id, path or title) or a new session UUID.
    #[arg(add = super::complete::sessions())]
    pub session: String,
    /// The project of a new session (a working directory; default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Append to this sub-agent's transcript (`isSidechain` and `agentId` are filled in).
    #[arg(long, value_name = "ID")]
    pub agent: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct ForkArgs {
    /// The session to fork (id, path or title).
    #[arg(add = super::complete::sessions())]
    pub session: String,
    /// Cut the copied view after this message (a message on another branch: copy the chain
    /// ending at it).
    #[arg(long, value_name = "UUID")]
    pub at: Option<String>,
    /// Look the session up in this project.
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct BranchArgs {
    /// The session to branch (id, path or title).
    #[arg(add = super::complete::sessions())]
    pub session: String,
    /// The branch name (default: the session's first prompt).
    pub name: Option<String>,
    /// Look the session up in this project.
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct MetaArgs {
    /// The session (id, path or title); it must exist.
    #[arg(add = super::complete::sessions())]
    pub session: String,
    /// The text (`""` clears a tag).
    pub text: String,
    /// Look the session up in this project.
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
}

/// Which metadata verb.
#[derive(Debug, Clone, Copy)]
pub enum Meta {
    Title,
    Tag,
}

/// An existing main session transcript named by the user.
fn existing_session(cli: &Cli, project: Option<&Path>, arg: &str) -> Result<PathBuf, CliError> {
    match super::target(cli, project, arg)? {
        Target::Session { session_id, path } => {
            // Lookups also accept id prefixes and title substrings; a write needs the session
            // named exactly: its full id or its exact title.
            let exact = arg.eq_ignore_ascii_case(&session_id) || {
                let store = super::store(cli)?;
                let mut cache = store.facts_cache();
                let title = cache.facts(&path).map(|f| f.title);
                let _ = cache.flush();
                title.is_ok_and(|t| t == arg)
            };
            if exact {
                Ok(path)
            } else {
                Err(CliError::not_found(format!(
                    "{arg:?} matches session {session_id} only by an id prefix or part of its \
                     title; writing needs its full id, path or exact title"
                )))
            }
        }
        Target::File(path) if path.extension().is_some_and(|e| e == "jsonl") => Ok(path),
        Target::File(path) => Err(Error::NotATranscript {
            path,
            what: "not a session transcript, .jsonl",
        }
        .into()),
        Target::Agent { agent_id, .. } => Err(CliError::not_found(format!(
            "{arg}: names agent {agent_id}; name its session and pass --agent {agent_id}"
        ))),
    }
}

fn open_writer(cli: &Cli, path: &Path, cwd: String) -> Result<SessionWriter, Error> {
    let sid = path
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or_else(|| Error::NotATranscript {
            path: path.to_path_buf(),
            what: "not a session file",
        })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    super::store(cli)?.writer(dir, sid, WriterOptions::new(cwd))
}

/// The `cwd` a session's messages carry (its first message's), else the current directory.
fn session_cwd(cli: &Cli, path: &Path) -> String {
    let cwd = super::store(cli).ok().and_then(|store| {
        let mut cache = store.facts_cache();
        let cwd = cache.facts(path).ok().and_then(|f| f.cwd);
        let _ = cache.flush();
        cwd
    });
    cwd.unwrap_or_else(current_dir)
}

fn current_dir() -> String {
    std::env::current_dir()
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Input bytes read between two flushes of a streamed batch: the entries waiting in memory
/// stay a small multiple of this (or of the longest line).
const FEED_CHUNK: u64 = 1 << 20;

/// Streams the JSONL entries of `input` into `w`'s open batch, a chunk at a time; a bad line is
/// an error naming it (the caller drops the batch).
fn feed(w: &mut SessionWriter, input: impl BufRead, agent: Option<&str>) -> Result<(), Error> {
    let mut entries = Vec::new();
    let mut offset = 0u64;
    let mut since_flush = 0u64;
    for (i, line) in input.split(b'\n').enumerate() {
        let line = line.map_err(|e| Error::io("<stdin>", e))?;
        let at = offset;
        offset += line.len() as u64 + 1;
        since_flush += line.len() as u64 + 1;
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        let bad = |reason: String| Error::BadEntry {
            position: Position {
                path: "<stdin>".into(),
                line: i as u64 + 1,
                byte_offset: at,
            },
            reason,
        };
        let mut v: Value =
            serde_json::from_slice(text).map_err(|e| bad(format!("invalid JSON: {e}")))?;
        if let (Some(a), Some(o)) = (agent, v.as_object_mut()) {
            let ty = o.get("type").and_then(Value::as_str).unwrap_or("");
            if matches!(ty, "user" | "assistant" | "attachment" | "system") {
                o.entry("isSidechain").or_insert(true.into());
                o.entry("agentId").or_insert(a.into());
            } else if ty == "content-replacement" {
                o.entry("agentId").or_insert(a.into());
            }
        }
        check_entry(&v).map_err(bad)?;
        entries.push(v);
        if since_flush >= FEED_CHUNK {
            w.append_all(std::mem::take(&mut entries))?;
            w.flush()?;
            since_flush = 0;
        }
    }
    w.append_all(entries)?;
    Ok(())
}

pub fn append(cli: &Cli, a: &AppendArgs, out: &mut impl Write) -> CliResult {
    // `agent-<id>` names agent `<id>`, as targets do.
    let agent = a
        .agent
        .as_deref()
        .map(|x| x.strip_prefix("agent-").unwrap_or(x));
    if let Some(agent) = agent {
        check_id(agent)?;
    }
    let (path, cwd) = match existing_session(cli, a.project.as_deref(), &a.session) {
        Ok(p) => {
            let cwd = session_cwd(cli, &p);
            (p, cwd)
        }
        Err(CliError::Lib(
            Error::NoTranscript { .. } | Error::NotATranscript { .. } | Error::NoMatch { .. },
        )) if chainlog::discovery::is_uuid(&a.session) => {
            let cwd = a
                .project
                .as_deref()
                .map_or_else(current_dir, chainlog::discovery::normalize_cwd);
            let claude = chainlog::claude_dir(cli.claude_dir.as_deref())?;
            let dir = chainlog::discovery::projects_root(&claude)
                .join(chainlog::discovery::project_key(&cwd));
            (dir.join(format!("{}.jsonl", a.session)), cwd)
        }
        Err(e) => return Err(e),
    };
    let mut w = open_writer(cli, &path, cwd)?;
    // One batch however long the input: all of it or none of it is written.
    w.begin_batch();
    if let Err(e) = feed(&mut w, std::io::stdin().lock(), agent) {
        w.abort_batch();
        return Err(e.into());
    }
    let report = w.close()?;
    for d in &report.duplicates {
        eprintln!("chainlog: note: {d} is already in the session; not written again");
    }
    for (_, uuid) in &report.written {
        writeln!(out, "{uuid}")?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn fork(cli: &Cli, a: &ForkArgs, out: &mut impl Write) -> CliResult {
    if let Some(at) = &a.at {
        check_id(at)?;
    }
    let path = existing_session(cli, a.project.as_deref(), &a.session)?;
    let sid = super::store(cli)?.fork(&path, a.at.as_deref())?;
    writeln!(out, "{sid}")?;
    Ok(ExitCode::SUCCESS)
}

pub fn branch(cli: &Cli, a: &BranchArgs, out: &mut impl Write) -> CliResult {
    let path = existing_session(cli, a.project.as_deref(), &a.session)?;
    let sid = super::store(cli)?.branch(&path, a.name.as_deref())?;
    writeln!(out, "{sid}")?;
    Ok(ExitCode::SUCCESS)
}

pub fn meta(cli: &Cli, a: &MetaArgs, which: Meta) -> CliResult {
    let path = existing_session(cli, a.project.as_deref(), &a.session)?;
    let cwd = session_cwd(cli, &path);
    let mut w = open_writer(cli, &path, cwd)?;
    match which {
        Meta::Title => w.set_title(&a.text),
        Meta::Tag => w.set_tag(&a.text),
    }
    w.close()?;
    Ok(ExitCode::SUCCESS)
}
