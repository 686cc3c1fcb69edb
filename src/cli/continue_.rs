//! `chainlog continue`: resume the newest session of a project (format.md §A7).
//!
//! "Newest" is by the time of the last message (`chainlog ls` order); sessions without a
//! message to resume (empty or metadata-only files) are passed over.

use std::io::Write;
use std::path::PathBuf;

use chainlog::ListOptions;
use chainlog::SortBy;

use super::resume::{ViewArgs, emit};
use super::{Cli, CliResult};

#[derive(Debug, clap::Args)]
pub struct ContinueArgs {
    /// The project: a working directory, a project directory or a
    /// project key (default: the current
    /// directory).
    #[arg(long, value_name = "DIR", allow_hyphen_values = true)]
    pub project: Option<PathBuf>,
    #[command(flatten)]
    pub view: ViewArgs,
}

pub fn run(cli: &Cli, a: &ContinueArgs, out: &mut impl Write) -> CliResult {
    a.view.options().check()?;
    let opts = ListOptions {
        project: a.project.clone(),
        sort: SortBy::Modified,
        ..ListOptions::default()
    };
    let chainlog::Listing { sessions, skipped } = super::store(cli)?.sessions(&opts)?;
    super::report_skipped(&skipped);
    let Some(newest) = sessions.iter().find(|f| f.leaf_uuid.is_some()) else {
        let project = a
            .project
            .clone()
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default();
        return Err(super::CliError::not_found(format!(
            "no session to continue in {}",
            project.display()
        )));
    };
    eprintln!(
        "chainlog: continuing {} ({})",
        newest.session_id, newest.title
    );
    emit(cli, &newest.path, &a.view, out)
}
