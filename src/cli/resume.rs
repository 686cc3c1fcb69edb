//! `chainlog resume`: print the resume view (or the full chain) root-first.
//!
//! The argument is a session id, a transcript path, an agent id or an exact title
//! (`chainlog::discovery::resolve_target`); `continue` shares the output ([`emit`]).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use chainlog::Conversation;
use chainlog::Error;
use chainlog::ResumeOptions;
use chainlog::Target;
use serde_json::json;

use super::{Cli, CliResult, report_problems, write_json};

/// How to print the view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The resume view's entries, one JSON line each, byte-identical to the transcript except
    /// where the projections changed a line (re-pointed parent, zeroed usage, upgraded
    /// legacy shape). System entries, API errors and unanswered calls are still there.
    Jsonl,
    /// One JSON document `{"messages": [...]}`: what the client sends the model built from
    /// the view (format.md §A8): lines of one response regrouped, tool results grouped, system
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
    #[arg(add = super::complete::sessions())]
    pub target: String,
    /// Look ids and titles up in this project: a working directory, a project directory or a
    /// project key
    /// (default: the current directory's project, then every project).
    #[arg(long, value_name = "DIR", allow_hyphen_values = true)]
    pub project: Option<PathBuf>,
    /// First pull this session from a sync remote (`s3://…`, `file://…`; TARGET a session id):
    /// resumes a session another machine pushed that this one does not have yet.
    #[arg(long, value_name = "REMOTE")]
    pub remote: Option<String>,
    /// The key the remote is encrypted with (as given to `sync`).
    #[arg(long, value_name = "FILE", requires = "remote")]
    pub key_file: Option<PathBuf>,
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
    /// Output format (default: text on a terminal, through a pager when longer than the
    /// screen; jsonl when piped).
    #[arg(long, value_enum)]
    pub format: Option<Format>,
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
    /// With `--format api`: an MCP tool the resuming client has (`mcp__server__tool`, or
    /// `mcp__server__` for all of a server's; repeatable). `ToolSearch` references to other MCP
    /// tools are sent as removed, as Claude Code does without them.
    #[arg(long, value_name = "TOOL")]
    pub mcp_tool: Vec<String>,
}

impl ViewArgs {
    /// The library's options for these flags.
    pub fn options(&self) -> ResumeOptions {
        ResumeOptions {
            leaf: self.leaf.clone(),
            full: self.full,
            at: self.at.clone(),
            strict: self.no_bridge,
            no_index: self.no_index,
            project: None,
        }
    }
}

pub fn run(cli: &Cli, a: &ResumeArgs, out: &mut impl Write) -> CliResult {
    a.view.options().check()?;
    let store = super::store(cli)?;
    if let Some(remote) = &a.remote {
        let key = a
            .key_file
            .as_ref()
            .map(|f| std::fs::read(f).map_err(|e| chainlog::Error::io(f, e)))
            .transpose()?;
        let opts = chainlog::SyncOptions {
            key,
            only: Some(vec![a.target.clone()]),
            ..chainlog::SyncOptions::all()
        };
        let r = store.sync(remote, &opts)?;
        if r.pulled_files > 0 {
            eprintln!("chainlog: pulled {} ({} file(s))", a.target, r.pulled_files);
        }
    }
    let target = store.target(a.project.as_deref(), &a.target)?;
    if let Target::Agent {
        agent_id,
        layout,
        meta_path,
        ..
    } = &target
    {
        let meta = chainlog::discovery::read_agent_meta(meta_path.as_deref());
        eprintln!(
            "chainlog: agent {agent_id} ({}{})",
            layout.as_str(),
            meta.agent_type
                .map(|t| format!(", {t}"))
                .unwrap_or_default()
        );
    }
    if !matches!(target, Target::Agent { .. }) && streamable(&a.view) {
        return print_streamed(cli, &store, target.path(), &a.view, out);
    }
    let conv = store.resume_target(&target, &a.view.options())?;
    print(cli, &conv, &a.view, out)
}

/// Prints the chain of the transcript at `path` as `a` asks.
pub fn emit(cli: &Cli, path: &Path, a: &ViewArgs, out: &mut impl Write) -> CliResult {
    let store = super::store(cli)?;
    if streamable(a) {
        return print_streamed(cli, &store, path, a, out);
    }
    let conv = store.conversation(path, &a.options())?;
    print(cli, &conv, a, out)
}

/// The format `a` asks for, or the default: text on a terminal, else jsonl.
fn format_of(a: &ViewArgs) -> Format {
    a.format.unwrap_or(if std::io::stdout().is_terminal() {
        Format::Text
    } else {
        Format::Jsonl
    })
}

/// Whether the view may be printed line by line ([`print_streamed`]): lines (`jsonl`, `uuids`)
/// of the default view from the index, the answer the materialised view holds.
fn streamable(a: &ViewArgs) -> bool {
    matches!(format_of(a), Format::Jsonl | Format::Uuids)
        && a.leaf.is_none()
        && !a.full
        && a.at.is_none()
        && !a.no_bridge
        && !a.no_index
}

/// Prints the chain line by line: memory stays bounded by a batch of lines. When the
/// materialised view answered, it knows how the conversation ends and `uuids` reads no
/// transcript byte; a resume that walked first reads the lines a batch at a time to decide how
/// the conversation ends and stores the walk as the view for the next resume
/// ([`chainlog::Store::materialise`]).
fn print_streamed(
    cli: &Cli,
    store: &chainlog::Store,
    path: &Path,
    a: &ViewArgs,
    out: &mut impl Write,
) -> CliResult {
    let format = format_of(a);
    let mut p = store.pending(path, &a.options())?;
    // A resume that walked decides how the conversation ends and stores it as the view first,
    // reading the lines a batch at a time; when the file changed under that read, the lines
    // are read whole as `print` does (`read_pending` resolves again).
    let materialised = store.materialise(&mut p);
    let (Ok(()), Some(interrupt)) = (materialised, p.interrupt()) else {
        let conv = store.read_pending(p)?;
        return print(cli, &conv, a, out);
    };
    let ans = p.answer();
    notes(&p.answer().source, a, None, None, 0);
    report_problems(path, ans);
    let res = &ans.resolution;
    if res.leaf.is_none() {
        return Err(Error::NoMessage { path: path.into() }.into());
    }
    if format == Format::Uuids {
        for l in p.chain() {
            writeln!(out, "{}", ans.names.name(l.uuid))?;
        }
    } else {
        for e in p.lines()? {
            let e = e?;
            out.write_all(&e.json)?;
            out.write_all(b"\n")?;
        }
    }
    let shown = Shown {
        path,
        ans,
        leaf: p.leaf().map(|(id, _)| id),
        messages: p.chain().len(),
        interrupt,
    };
    finish(cli, &shown, format, out)
}

/// What the trailer and the end notes say about a printed view.
struct Shown<'a> {
    path: &'a Path,
    ans: &'a chainlog::Answer,
    leaf: Option<String>,
    messages: usize,
    interrupt: chainlog::Interrupt,
}

/// The notes printed before a view: a retry, an answer from the transcript, a fork's context.
fn notes(
    source: &chainlog::Source,
    a: &ViewArgs,
    retried: Option<&str>,
    fork: Option<&chainlog::view::ForkContext>,
    inherited: usize,
) {
    if let Some(e) = retried {
        eprintln!("chainlog: note: {e}; resolved again");
    }
    if let chainlog::Source::Transcript(why) = source
        && !a.no_index
    {
        eprintln!("chainlog: note: answered from the transcript (index not used: {why})");
    }
    if let Some(fork) = fork {
        eprintln!(
            "chainlog: fork agent: context from {} up to {} ({inherited} entries)",
            fork.parent_path.display(),
            fork.parent_last,
        );
    }
}

/// The end of a printed view: its chain breaks on stderr, then the `--json` trailer or the
/// interrupt note.
fn finish(cli: &Cli, s: &Shown<'_>, format: Format, out: &mut impl Write) -> CliResult {
    let ans = s.ans;
    let res = &ans.resolution;
    report_breaks(s.path, res, &ans.names);
    if cli.json {
        let trailer = json!({"chainlog": {
            "path": s.path,
            "leaf": s.leaf,
            "leafRule": res.leaf.map(|(_, r)| r),
            "messages": s.messages,
            "interrupt": s.interrupt,
            "chainBreak": res.chain_break.as_ref().map(|b| b.to_json(&ans.names)),
            "bridges": res.bridges.iter().map(|b| b.to_json(&ans.names)).collect::<Vec<_>>(),
            "badLines": ans.bad_line_count,
            "source": match ans.source {
                chainlog::Source::Index => "index",
                chainlog::Source::Transcript(_) => "transcript",
            },
            "materialised": ans.materialised(),
        }});
        // Text and uuid lines stay what they are (a uuid per line feeds `xargs`): their
        // trailer goes to stderr; JSON output ends with it.
        if matches!(format, Format::Text | Format::Uuids) {
            write_json(&mut std::io::stderr().lock(), &trailer)?;
        } else {
            write_json(out, &trailer)?;
        }
    } else if s.interrupt != chainlog::Interrupt::None {
        eprintln!(
            "chainlog: interrupt: {}",
            serde_json::to_value(s.interrupt)
                .unwrap_or_default()
                .as_str()
                .unwrap_or("?")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints `conv` in the format `a` asks for, and its notes on stderr.
fn print(cli: &Cli, conv: &Conversation, a: &ViewArgs, out: &mut impl Write) -> CliResult {
    notes(
        conv.source(),
        a,
        conv.retried(),
        conv.fork(),
        conv.inherited(),
    );
    let path = conv.path();
    let ans = conv.answer();
    report_problems(path, ans);
    let res = conv.resolution();
    if res.leaf.is_none() {
        return Err(Error::NoMessage { path: path.into() }.into());
    }
    let view = conv.entries();
    let format = format_of(a);
    if format == Format::Api {
        // The client's chain goes on below the leaf (local commands written after it).
        let mut entries: Vec<serde_json::Value> = view
            .iter()
            .filter_map(chainlog::view::ViewEntry::value)
            .collect();
        entries.extend(conv.below_leaf()?);
        let messages = chainlog::view::api_messages_of(
            &entries,
            &chainlog::view::ApiOptions {
                model: a.model.clone(),
                cut: a.at.is_some(),
                cut_inside_response: conv.cut_inside_response()?,
                mcp_tools: a.mcp_tool.clone(),
            },
        );
        write_json(out, &json!({ "messages": messages }))?;
    }
    if format == Format::Text {
        let text: String = view.iter().map(chainlog::view::render_text).collect();
        super::pager::show(text.as_bytes(), out)?;
    }
    for e in view {
        match format {
            Format::Uuids => writeln!(out, "{}", ans.names.name(e.link.uuid))?,
            Format::Jsonl => {
                out.write_all(&e.json)?;
                out.write_all(b"\n")?;
            }
            Format::Text | Format::Api => {}
        }
    }
    let shown = Shown {
        path,
        ans,
        leaf: conv.leaf().map(|(id, _)| id),
        messages: view.len(),
        interrupt: conv.interrupt(),
    };
    finish(cli, &shown, format, out)
}

/// Prints every bridged chain break, the unbridged one and a cycle on stderr (format.md §A8).
fn report_breaks(path: &Path, res: &chainlog::Resolution, names: &chainlog::format::IdNames) {
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
    if let Some(chainlog::reference::Stop::Cycle { at }) = res.stop {
        eprintln!(
            "chainlog: warning: {}: parent cycle at {}; chain cut there",
            path.display(),
            names.name(at)
        );
    }
}
