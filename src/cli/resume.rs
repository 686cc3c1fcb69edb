//! `chainlog resume`: print the resume view (or the full chain) root-first.
//!
//! The argument is a session id, a transcript path, an agent id or an exact title
//! (`chainlog::resolve_target`); `continue` shares the output ([`emit`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use chainlog::{Error, Id, ResolveOptions, Target, View, check_id, detect_interrupt, read_view};
use serde_json::json;

use super::{Cli, CliResult, answer, report_problems, write_json};

/// How to print the view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The entries as they will be handed to the model, one JSON line each.
    Jsonl,
    /// One uuid per line.
    Uuids,
    /// A readable transcript.
    Text,
}

#[derive(Debug, clap::Args)]
pub struct ResumeArgs {
    /// A session id, a transcript file, an agent id (`a1b2…` or `agent-a1b2…`) or an exact
    /// session title.
    pub target: String,
    /// Look ids and titles up in this project: a working directory, a project directory or a
    /// project key
    /// (default: the current directory's project, then every project).
    #[arg(long, value_name = "DIR", allow_hyphen_values = true)]
    pub project: Option<PathBuf>,
    #[command(flatten)]
    pub view: ViewArgs,
}

/// How `resume` and `continue` print a chain.
#[derive(Debug, clap::Args)]
pub struct ViewArgs {
    /// Start from this message instead of the chosen leaf.
    #[arg(long, value_name = "UUID")]
    pub leaf: Option<String>,
    /// The whole conversation, across compact boundaries.
    #[arg(long)]
    pub full: bool,
    /// Cut the chain after this message (`--resume-at`).
    #[arg(long, value_name = "UUID")]
    pub at: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Jsonl)]
    pub format: Format,
    /// Answer from a full scan of the transcript instead of the index.
    #[arg(long)]
    pub no_index: bool,
}

impl ViewArgs {
    /// Refuses path-like message ids before any file is read.
    pub fn check(&self) -> Result<(), Error> {
        for id in [&self.leaf, &self.at].into_iter().flatten() {
            check_id(id)?;
        }
        Ok(())
    }
}

pub fn run(cli: &Cli, a: &ResumeArgs, out: &mut impl Write) -> CliResult {
    a.view.check()?;
    let target = super::target(cli, a.project.as_deref(), &a.target)?;
    if let Target::Agent {
        agent_id,
        layout,
        meta_path,
        ..
    } = &target
    {
        let meta = chainlog::read_agent_meta(meta_path.as_deref());
        eprintln!(
            "chainlog: agent {agent_id} ({}{})",
            layout.as_str(),
            meta.agent_type
                .map(|t| format!(", {t}"))
                .unwrap_or_default()
        );
    }
    emit(cli, target.path(), &a.view, out)
}

/// Prints the chain of the transcript at `path` as `a` asks.
pub fn emit(cli: &Cli, path: &Path, a: &ViewArgs, out: &mut impl Write) -> CliResult {
    a.check()?;
    let opts = ResolveOptions {
        leaf: a.leaf.as_deref().map(Id::from_text),
        view: if a.full { View::Full } else { View::Resume },
        list_leaves: false,
    };
    let ans = answer(cli, path, opts, a.no_index)?;
    report_problems(path, &ans);
    let res = &ans.resolution;
    let mut chain = res.chain.clone();
    if let Some(at) = &a.at {
        let id = Id::from_text(at);
        let Some(cut) = chain.iter().position(|l| l.uuid == id) else {
            return Err(Error::NotFound(format!(
                "{}: message {at} is not on the chosen chain",
                path.display()
            ))
            .into());
        };
        chain.truncate(cut + 1);
    }
    let view = read_view(path, &chain, &ans.names)?;
    for e in &view {
        match a.format {
            Format::Uuids => writeln!(out, "{}", ans.names.name(e.link.uuid))?,
            Format::Jsonl => {
                out.write_all(&e.json)?;
                out.write_all(b"\n")?;
            }
            Format::Text => write!(out, "{}", chainlog::render_text(e))?,
        }
    }
    let interrupt = detect_interrupt(&view);
    if let Some(b) = &res.chain_break {
        eprintln!(
            "chainlog: warning: {}:{} (byte {}): chain break: parent {} of {} is missing; {:.0}% of messages reachable",
            path.display(),
            b.pos.line,
            b.pos.offset,
            b.parent,
            b.child,
            b.reachable_fraction * 100.0
        );
    }
    if let Some(chainlog::Stop::Cycle { at }) = res.stop {
        eprintln!(
            "chainlog: warning: {}: parent cycle at {at}; chain cut there",
            path.display()
        );
    }
    if cli.json {
        write_json(
            out,
            &json!({"chainlog": {
                "path": path,
                "leaf": res.leaf.map(|(id, _)| id.to_string()),
                "leafRule": res.leaf.map(|(_, r)| r),
                "messages": view.len(),
                "interrupt": interrupt,
                "chainBreak": res.chain_break,
                "badLines": ans.bad_lines.len(),
                "source": match &ans.source {
                    chainlog::Source::Index => "index",
                    chainlog::Source::Transcript(_) => "transcript",
                },
            }}),
        )?;
    } else if res.leaf.is_none() {
        eprintln!("chainlog: {}: no message to resume", path.display());
    } else {
        eprintln!(
            "chainlog: interrupt: {}",
            serde_json::to_value(interrupt)
                .unwrap_or_default()
                .as_str()
                .unwrap_or("?")
        );
    }
    Ok(ExitCode::SUCCESS)
}
