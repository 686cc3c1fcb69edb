//! `chainlog export`: a session as Markdown, self-contained HTML, or JSONL.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use chainlog::export::ExportFormat;
use chainlog::export::ExportOptions;

use super::{Cli, CliResult};

/// The document format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// Markdown with collapsible tool calls.
    Markdown,
    /// One self-contained HTML file.
    Html,
    /// The view's JSONL lines.
    Jsonl,
}

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// A session id, unique id prefix, path, title or agent id.
    pub target: String,
    /// The format.
    #[arg(long, value_enum, default_value_t = FormatArg::Markdown)]
    pub format: FormatArg,
    /// The whole conversation across compactions instead of the resume view.
    #[arg(long)]
    pub full: bool,
    /// Also every other branch, from where it leaves the conversation.
    #[arg(long)]
    pub all_branches: bool,
    /// Write to FILE instead of standard output.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Look ids and titles up in this project: a working directory, a project directory or a
    /// project key.
    #[arg(long, value_name = "DIR", allow_hyphen_values = true)]
    pub project: Option<PathBuf>,
}

pub fn run(cli: &Cli, a: &ExportArgs, out: &mut impl Write) -> CliResult {
    let target = super::target(cli, a.project.as_deref(), &a.target)?;
    let opts = ExportOptions {
        format: match a.format {
            FormatArg::Markdown => ExportFormat::Markdown,
            FormatArg::Html => ExportFormat::Html,
            FormatArg::Jsonl => ExportFormat::Jsonl,
        },
        // An inline agent: its messages may be before a compaction (full view).
        full: a.full || target.leaf().is_some(),
        all_branches: a.all_branches,
        leaf: target.leaf().map(chainlog::Id::from_text),
    };
    let store = super::store(cli)?;
    match &a.output {
        Some(file) => {
            let mut f = std::io::BufWriter::new(
                std::fs::File::create(file).map_err(|e| chainlog::Error::io(file, e))?,
            );
            chainlog::export::export(&store, target.path(), &opts, &mut f)?;
            f.flush().map_err(|e| chainlog::Error::io(file, e))?;
            eprintln!("chainlog: wrote {}", file.display());
        }
        None => chainlog::export::export(&store, target.path(), &opts, out)?,
    }
    Ok(ExitCode::SUCCESS)
}
