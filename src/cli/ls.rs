//! `chainlog ls`: the sessions of a project (or all), newest first.

use std::io::Write;
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
    /// Also list sessions without a message (metadata-only or empty files).
    #[arg(long)]
    pub include_empty: bool,
}

pub fn run(cli: &Cli, a: &LsArgs, out: &mut impl Write) -> CliResult {
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
        return Ok(ExitCode::SUCCESS);
    }
    if sessions.is_empty() {
        eprintln!("chainlog: no sessions");
        return Ok(ExitCode::SUCCESS);
    }
    print_table(out, a, &sessions)?;
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
        Column::number("agents"),
        Column::text("branch"),
        Column::text("tag"),
        Column {
            dim: true,
            ..Column::text("project")
        },
    ];
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
                if f.agents == 0 {
                    String::new()
                } else {
                    f.agents.to_string()
                },
                table::cut(f.git_branch.as_deref().unwrap_or_default(), 20),
                table::cut(f.tag.as_deref().unwrap_or_default(), 12),
                if a.scope.all {
                    table::cut(&f.project_key, 24)
                } else {
                    String::new()
                },
            ]
        })
        .collect();
    table::print(out, Style::stdout(), &columns, &rows)
}

/// An RFC 3339 time as "5m ago" (or its date when older than 30 days).
pub(super) fn relative(t: &str, now_ms: i64) -> String {
    let date = t.get(..10).unwrap_or(t);
    chrono::DateTime::parse_from_rfc3339(t).map_or_else(
        |_| date.to_owned(),
        |d| table::ago(d.timestamp_millis(), now_ms, date),
    )
}
