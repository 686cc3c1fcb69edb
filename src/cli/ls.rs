//! `chainlog ls`: the sessions of a project (or all), newest first.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use chainlog::{ListOptions, SessionFacts, SortBy};

use super::{Cli, CliResult, write_json};

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
    /// The project: a working directory or a project directory (default: the current
    /// directory).
    #[arg(long, value_name = "DIR", conflicts_with = "all")]
    pub project: Option<PathBuf>,
    /// Every project.
    #[arg(long)]
    pub all: bool,
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
}

pub fn run(cli: &Cli, a: &LsArgs, out: &mut impl Write) -> CliResult {
    let claude = chainlog::claude_dir(cli.claude_dir.as_deref())?;
    let opts = ListOptions {
        project: a.project.clone(),
        all: a.all,
        search: a.search.clone(),
        tag: a.tag.clone(),
        branch: a.branch.clone(),
        limit: a.limit,
        sort: match a.sort {
            SortArg::Modified => SortBy::Modified,
            SortArg::Created => SortBy::Created,
        },
    };
    let store = super::store(cli);
    let mut cache = chainlog::FactsCache::new(&store);
    let mut skipped = Vec::new();
    let sessions =
        chainlog::list_sessions_skipping(&claude, &opts, &mut |p| cache.facts(p), &mut skipped)?;
    cache.flush()?;
    super::report_skipped(&skipped);
    if cli.json {
        for f in &sessions {
            write_json(out, &f.to_listing_json())?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if sessions.is_empty() {
        eprintln!("chainlog: no sessions");
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{:<16}  {:<36}  {:>5}  {:>6}  {:<16}  {:<10}  title",
        "modified", "session", "msgs", "agents", "branch", "tag"
    )?;
    for f in &sessions {
        writeln!(out, "{}", row(f, a.all))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn row(f: &SessionFacts, all: bool) -> String {
    let when = f.modified.as_deref().map_or_else(
        || "-".to_owned(),
        |t| t.get(..16).unwrap_or(t).replace('T', " "),
    );
    let mut title = cut(&f.title, 70);
    if all {
        title = format!("{title}  [{}]", f.project_key);
    }
    format!(
        "{:<16}  {:<36}  {:>5}  {:>6}  {:<16}  {:<10}  {title}",
        when,
        f.session_id,
        f.message_count,
        f.agents,
        cut(f.git_branch.as_deref().unwrap_or("-"), 16),
        cut(f.tag.as_deref().unwrap_or("-"), 10),
    )
}

/// At most `max` chars on one line, with `…` when cut.
fn cut(s: &str, max: usize) -> String {
    let one: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    match one.char_indices().nth(max.saturating_sub(1)) {
        Some((i, _)) if one.chars().count() > max => format!("{}…", &one[..i]),
        _ => one,
    }
}
