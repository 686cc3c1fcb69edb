//! `chainlog ls`: the sessions of a project (or all), newest first.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use chainlog::ListOptions;
use chainlog::SessionFacts;
use chainlog::SortBy;

use super::table::{self, Column, Style};
use super::{Cli, CliResult};

/// The order of `ls`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SortArg {
    /// By the time of the last message.
    Modified,
    /// By the time of the first message.
    Created,
}

#[derive(Debug, clap::Args)]
pub struct LsArgs {
    #[command(flatten)]
    pub scope: super::Scope,
    /// Only sessions whose title, first prompt or last prompt contains TEXT (any case).
    #[arg(long, value_name = "TEXT")]
    pub search: Option<String>,
    /// Only sessions with this tag.
    #[arg(long, value_name = "T")]
    pub tag: Option<String>,
    /// Only sessions on this git branch.
    #[arg(long, value_name = "B")]
    pub branch: Option<String>,
    /// At most N sessions.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// The order (newest first).
    #[arg(long, value_enum, default_value_t = SortArg::Modified)]
    pub sort: SortArg,
    /// Only sessions whose last message (first with `--sort created`) is on this UTC day or
    /// later.
    #[arg(long, value_name = "YYYY-MM-DD")]
    pub since: Option<String>,
    /// Only sessions whose last message (first with `--sort created`) is on this UTC day or
    /// earlier.
    #[arg(long, value_name = "YYYY-MM-DD")]
    pub until: Option<String>,
    /// Also list sessions without a message (metadata-only or empty files).
    #[arg(long)]
    pub include_empty: bool,
    /// List every machine's sessions on a sync remote (`s3://…`, `file://…`) from its
    /// manifests, without downloading a transcript.
    #[arg(long, value_name = "REMOTE")]
    pub remote: Option<String>,
    /// The key the remote is encrypted with (as given to `sync`).
    #[arg(long, value_name = "FILE", requires = "remote")]
    pub key_file: Option<PathBuf>,
}

pub fn run(cli: &Cli, a: &LsArgs, out: &mut impl Write) -> CliResult {
    if let Some(remote) = &a.remote {
        return remote_listing(cli, a, remote, out);
    }
    let opts = ListOptions {
        project: a.scope.project.clone(),
        all: a.scope.all,
        search: a.search.clone(),
        tag: a.tag.clone(),
        branch: a.branch.clone(),
        limit: a.limit,
        search_hits: None,
        sort: match a.sort {
            SortArg::Modified => SortBy::Modified,
            SortArg::Created => SortBy::Created,
        },
        days: super::usage::day_range(a.since.as_deref(), a.until.as_deref())?,
    };
    // Title and prompts, or any message that matches in the full-text index.
    let chainlog::Listing {
        mut sessions,
        skipped,
    } = super::reading_store(cli)?.sessions(&opts)?;
    super::report_skipped(&skipped);
    if !a.include_empty {
        sessions.retain(|f| f.message_count > 0);
    }
    if cli.json {
        SessionFacts::write_listing_json_all(&sessions, out, super::JSON_SCHEMA)?;
    } else if sessions.is_empty() {
        eprintln!("chainlog: no sessions");
    } else {
        print_table(out, a, &sessions)?;
    }
    // The process ends after the listing: thousands of facts are not freed one by one (a
    // twentieth of a warm listing).
    std::mem::forget(sessions);
    Ok(ExitCode::SUCCESS)
}

/// The human table: one line per session, fitted to the terminal.
fn print_table(out: &mut impl Write, a: &LsArgs, sessions: &[SessionFacts]) -> std::io::Result<()> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let (when_name, created) = match a.sort {
        SortArg::Modified => ("modified", false),
        SortArg::Created => ("created", true),
    };
    // At 80 columns the title keeps its room: branch, tag and project shrink first, then
    // agents, tokens, tag and branch go, in that order. Tokens: the file's own (input, output
    // and cache), as `ls --json`'s `usage` counts them.
    let columns = [
        Column {
            flexible: true,
            ..Column::text("title")
        },
        Column {
            dim: true,
            ..Column::text("session")
        },
        Column {
            dim: true,
            ..Column::text(when_name)
        },
        Column::number("msgs"),
        Column {
            drop: 2,
            ..Column::number("tokens")
        },
        Column {
            drop: 1,
            ..Column::number("agents")
        },
        Column {
            min: 8,
            drop: 4,
            ..Column::text("branch")
        },
        Column {
            min: 6,
            drop: 3,
            ..Column::text("tag")
        },
        Column {
            dim: true,
            min: 12,
            cut_start: true,
            ..Column::text("project")
        },
    ];
    let home = std::env::var("HOME").ok().filter(|h| h.len() > 1);
    let rows: Vec<Vec<String>> = sessions
        .iter()
        .map(|f| {
            let when = if created { &f.created } else { &f.modified };
            vec![
                f.title.clone(),
                f.session_id.chars().take(8).collect(),
                when.as_deref()
                    .map_or_else(String::new, |t| relative(t, now)),
                f.message_count.to_string(),
                match f.usage.iter().map(|r| r.tokens.total()).sum::<u64>() {
                    0 => String::new(),
                    n => super::usage::human(n),
                },
                if f.agents == 0 {
                    String::new()
                } else {
                    f.agents.to_string()
                },
                f.git_branch.clone().unwrap_or_default(),
                f.tag.clone().unwrap_or_default(),
                if a.scope.all {
                    project_shown(f, home.as_deref())
                } else {
                    String::new()
                },
            ]
        })
        .collect();
    table::print(out, Style::stdout(), &columns, &rows)
}

/// The project as a person names it: the session's working directory (`~` for the home
/// folder), else the project key when no message recorded one.
fn project_shown(f: &SessionFacts, home: Option<&str>) -> String {
    match (f.cwd.as_deref(), home) {
        (Some(cwd), Some(h)) if cwd == h => "~".to_owned(),
        (Some(cwd), Some(h)) => cwd
            .strip_prefix(h)
            .filter(|rest| rest.starts_with('/'))
            .map_or_else(|| cwd.to_owned(), |rest| format!("~{rest}")),
        (Some(cwd), None) => cwd.to_owned(),
        (None, _) => f.project_key.clone(),
    }
}

/// An RFC 3339 time as "5m ago" (or its date when older than 30 days).
pub(super) fn relative(t: &str, now_ms: i64) -> String {
    let date = t.get(..10).unwrap_or(t);
    chrono::DateTime::parse_from_rfc3339(t).map_or_else(
        |_| date.to_owned(),
        |d| table::ago(d.timestamp_millis(), now_ms, date),
    )
}

/// `ls --remote`: one line per session of every machine, newest first.
fn remote_listing(cli: &Cli, a: &LsArgs, remote: &str, out: &mut impl Write) -> CliResult {
    let key = a
        .key_file
        .as_ref()
        .map(|f| std::fs::read(f).map_err(|e| chainlog::Error::io(f, e)))
        .transpose()?;
    let mut sessions = super::store(cli)?.remote_sessions(remote, key.as_deref())?;
    if let Some(n) = a.limit {
        sessions.truncate(n);
    }
    if cli.json {
        for s in &sessions {
            let row = serde_json::json!({
                "sessionId": s.session_id,
                "machine": s.machine,
                "thisMachine": s.mine,
                "projectKey": s.project_key,
                "cwd": s.cwd,
                "title": s.title,
                "modified": s.modified,
                "messages": s.messages,
                "bytes": s.bytes,
                "here": s.here,
            });
            super::write_json_row(out, row)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{:<50}  {:<8}  {:<10}  {:>5}  {:<8}  {:<4}  project",
        "title", "session", "modified", "msgs", "machine", "here"
    )?;
    for s in &sessions {
        let title: String = s.title.chars().take(50).collect();
        let day = s
            .modified
            .as_deref()
            .map_or("", |m| m.get(..10).unwrap_or(m));
        let machine = if s.mine {
            "this"
        } else {
            s.machine.get(..8).unwrap_or(&s.machine)
        };
        writeln!(
            out,
            "{title:<50}  {:<8}  {day:<10}  {:>5}  {machine:<8}  {:<4}  {}",
            s.session_id.get(..8).unwrap_or(&s.session_id),
            s.messages,
            if s.here { "yes" } else { "" },
            s.cwd.as_deref().unwrap_or(&s.project_key),
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
