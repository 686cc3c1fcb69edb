//! `chainlog resume`: print the resume view (or the full chain) root-first.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use chainlog::{Error, Id, ResolveOptions, View, check_id, detect_interrupt, read_view, resolve};
use serde_json::json;

use super::{Cli, CliResult, report_bad_lines, scan_path, write_json};

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
    /// A transcript file.
    pub target: PathBuf,
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
}

pub fn run(cli: &Cli, a: &ResumeArgs, out: &mut impl Write) -> CliResult {
    for id in [&a.leaf, &a.at].into_iter().flatten() {
        check_id(id)?;
    }
    let t = scan_path(&a.target)?;
    report_bad_lines(&t);
    let opts = ResolveOptions {
        leaf: a.leaf.as_deref().map(Id::from_text),
        view: if a.full { View::Full } else { View::Resume },
    };
    let res =
        resolve(&t, opts).map_err(|e| Error::NotFound(format!("{}: {e}", a.target.display())))?;
    let mut chain = res.chain.clone();
    if let Some(at) = &a.at {
        let id = Id::from_text(at);
        let Some(cut) = chain.iter().position(|l| l.uuid == id) else {
            return Err(Error::NotFound(format!(
                "{}: message {at} is not on the chosen chain",
                a.target.display()
            ))
            .into());
        };
        chain.truncate(cut + 1);
    }
    let view = read_view(&a.target, &chain, &names(&t))?;
    for e in &view {
        match a.format {
            Format::Uuids => writeln!(out, "{}", e.link.uuid)?,
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
            a.target.display(),
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
            a.target.display()
        );
    }
    if cli.json {
        write_json(
            out,
            &json!({"chainlog": {
                "leaf": res.leaf.map(|(id, _)| id.to_string()),
                "leafRule": res.leaf.map(|(_, r)| r),
                "messages": view.len(),
                "interrupt": interrupt,
                "chainBreak": res.chain_break,
                "badLines": t.bad_lines.len(),
            }}),
        )?;
    } else if res.leaf.is_none() {
        eprintln!("chainlog: {}: no message to resume", a.target.display());
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

fn names(t: &chainlog::Transcript) -> chainlog::IdNames {
    t.names.clone()
}
