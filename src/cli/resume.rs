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
    /// The resume view's entries, one JSON line each, byte-identical to the transcript except
    /// where the projections changed a line (re-pointed parent, zeroed usage, upgraded
    /// legacy shape). System entries, API errors and unanswered calls are still there.
    Jsonl,
    /// One JSON document `{"messages": [...]}`: what the client sends the model built from
    /// the view (SPEC A8): lines of one response regrouped, tool results grouped, system
    /// entries dropped (local commands sent as user text), API errors dropped, pairing
    /// repaired, "No response requested." added. Without the new prompt and request-time
    /// `<system-reminder>` injections.
    Api,
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
    /// The strict walk: stop at a missing parent instead of bridging it to the nearest earlier
    /// message at most 5 s older (what Claude Code does, and chainlog's default).
    #[arg(long)]
    pub no_bridge: bool,
    /// With `--format api`: the request's model; signed thinking of other models is left out.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
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
    let mut prefix = Vec::new();
    if let Target::Agent { path, .. } = &target
        && let Some(fork) = chainlog::fork_context(path)?
    {
        // A fork agent: the parent's chain up to the spawning tool_use comes first (SPEC A8).
        let opts = ResolveOptions {
            leaf: Some(Id::from_text(&fork.parent_last)),
            view: View::Resume,
            list_leaves: false,
        };
        let ans = answer(cli, &fork.parent_path, opts, a.view.no_index)
            .map_err(|e| e.name_requested(&fork.parent_last))?;
        report_problems(&fork.parent_path, &ans);
        // Up to the spawning line: its own results (spliced) came after the fork started.
        let mut chain = ans.resolution.chain.clone();
        let last = Id::from_text(&fork.parent_last);
        if let Some(cut) = chain.iter().position(|l| l.uuid == last) {
            chain.truncate(cut + 1);
        }
        prefix = read_view(&fork.parent_path, &chain, &ans.names)?;
        eprintln!(
            "chainlog: fork agent: context from {} up to {} ({} entries)",
            fork.parent_path.display(),
            fork.parent_last,
            prefix.len()
        );
    }
    emit_with(cli, target.path(), &a.view, prefix, out)
}

/// How often `resume` resolves again when the file changed while it was read. Each try
/// waits a little longer (up to [`RACE_BACKOFF_MAX`]), so a writer that keeps rewriting
/// the tail is out of phase with some try; the whole wait stays under about half a second.
const RACE_RETRIES: u32 = 30;

/// The longest wait between two tries.
const RACE_BACKOFF_MAX: std::time::Duration = std::time::Duration::from_millis(20);

/// An error that means the transcript changed under the read (worth resolving again).
fn changed_under_us(e: &Error) -> bool {
    match e {
        Error::Changed { .. } | Error::BadEntry { .. } => true,
        Error::Io { source, .. } => source.kind() == std::io::ErrorKind::UnexpectedEof,
        _ => false,
    }
}

/// Resolves the chain and reads its lines (cut at `--at`).
fn resolve_and_read(
    cli: &Cli,
    path: &Path,
    opts: &ResolveOptions,
    a: &ViewArgs,
) -> Result<
    (
        chainlog::Answer,
        chainlog::Resolution,
        Vec<chainlog::ViewEntry>,
    ),
    Error,
> {
    let ans = answer(cli, path, *opts, a.no_index).map_err(|e| match &a.leaf {
        Some(text) => e.name_requested(text),
        None => e,
    })?;
    let resolution = if a.no_bridge {
        ans.resolution.clone().strict()
    } else {
        ans.resolution.clone()
    };
    let mut chain = resolution.chain.clone();
    if let Some(at) = &a.at {
        let id = Id::from_text(at);
        let Some(cut) = chain.iter().position(|l| l.uuid == id) else {
            return Err(Error::NotFound(format!(
                "{}: message {at} is not on the chosen chain",
                path.display()
            )));
        };
        chain.truncate(cut + 1);
    }
    let view = read_view(path, &chain, &ans.names)?;
    Ok((ans, resolution, view))
}

/// Prints the chain of the transcript at `path` as `a` asks.
pub fn emit(cli: &Cli, path: &Path, a: &ViewArgs, out: &mut impl Write) -> CliResult {
    emit_with(cli, path, a, Vec::new(), out)
}

/// [`emit`] with `prefix` (a fork agent's inherited context) before the chain.
fn emit_with(
    cli: &Cli,
    path: &Path,
    a: &ViewArgs,
    prefix: Vec<chainlog::ViewEntry>,
    out: &mut impl Write,
) -> CliResult {
    a.check()?;
    let opts = ResolveOptions {
        leaf: a.leaf.as_deref().map(Id::from_text),
        view: if a.full { View::Full } else { View::Resume },
        list_leaves: false,
    };
    // The file can change between resolving and reading (a tombstone truncates the tail):
    // resolve again from the new state, a few times.
    let mut tries = 0;
    let (ans, resolution, body) = loop {
        match resolve_and_read(cli, path, &opts, a) {
            Err(e) if tries < RACE_RETRIES && changed_under_us(&e) => {
                if tries == 0 {
                    eprintln!("chainlog: note: {e}; resolving again");
                }
                tries += 1;
                std::thread::sleep(RACE_BACKOFF_MAX.min(std::time::Duration::from_micros(
                    u64::from(tries) * u64::from(tries) * 100,
                )));
            }
            r => break r?,
        }
    };
    report_problems(path, &ans);
    let res = &resolution;
    if res.leaf.is_none() {
        return Err(Error::NotFound(format!("{}: no message to resume", path.display())).into());
    }
    let mut view = prefix;
    view.extend(body);
    if a.format == Format::Api {
        let messages = chainlog::api_messages(
            &view,
            &chainlog::ApiOptions {
                model: a.model.clone(),
            },
        );
        write_json(out, &json!({ "messages": messages }))?;
    }
    for e in &view {
        match a.format {
            Format::Uuids => writeln!(out, "{}", ans.names.name(e.link.uuid))?,
            Format::Jsonl => {
                out.write_all(&e.json)?;
                out.write_all(b"\n")?;
            }
            Format::Text => write!(out, "{}", chainlog::render_text(e))?,
            Format::Api => {}
        }
    }
    let interrupt = detect_interrupt(&view);
    report_breaks(path, res, &ans.names);
    if cli.json {
        write_json(
            out,
            &json!({"chainlog": {
                "path": path,
                "leaf": res.leaf.map(|(id, _)| ans.names.name(id)),
                "leafRule": res.leaf.map(|(_, r)| r),
                "messages": view.len(),
                "interrupt": interrupt,
                "chainBreak": res.chain_break.as_ref().map(|b| b.to_json(&ans.names)),
                "bridges": res.bridges.iter().map(|b| b.to_json(&ans.names)).collect::<Vec<_>>(),
                "badLines": ans.bad_lines.len(),
                "source": match &ans.source {
                    chainlog::Source::Index => "index",
                    chainlog::Source::Transcript(_) => "transcript",
                },
            }}),
        )?;
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

/// Prints every bridged chain break, the unbridged one and a cycle on stderr (SPEC A8).
fn report_breaks(path: &Path, res: &chainlog::Resolution, names: &chainlog::IdNames) {
    for b in &res.bridges {
        eprintln!(
            "chainlog: note: {}:{} (byte {}): chain break bridged: parent {} of {} is missing; continued from {}, {} ms older (--no-bridge: stop there)",
            path.display(),
            b.pos.line,
            b.pos.offset,
            names.name(b.missing),
            names.name(b.child),
            names.name(b.to),
            b.gap_ms
        );
    }
    if let Some(b) = &res.chain_break {
        eprintln!(
            "chainlog: warning: {}:{} (byte {}): chain break: parent {} of {} is missing; {:.0}% of messages reachable",
            path.display(),
            b.pos.line,
            b.pos.offset,
            names.name(b.parent),
            names.name(b.child),
            b.reachable_fraction * 100.0
        );
    }
    if let Some(chainlog::Stop::Cycle { at }) = res.stop {
        eprintln!(
            "chainlog: warning: {}: parent cycle at {}; chain cut there",
            path.display(),
            names.name(at)
        );
    }
}
