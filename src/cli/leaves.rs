//! `chainlog leaves`: every leaf of a transcript, and why the active one was picked.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use chainlog::reference::ResolveOptions;
use chainlog::reference::resolve;
use chainlog::reference::{View, leaf_report, leaf_report_full};
use chainlog::{Store, Target};
use serde_json::json;

use super::{Cli, CliResult, report_problems, scan_path, write_json_row};

#[derive(Debug, clap::Args)]
pub struct LeavesArgs {
    /// A session id, unique id prefix, path, title or agent id (as for `resume`).
    #[arg(add = super::complete::sessions())]
    pub target: String,
    /// Look ids and titles up in this project: a working directory, a project directory or a
    /// project key.
    #[arg(long, value_name = "DIR", allow_hyphen_values = true)]
    pub project: Option<PathBuf>,
    /// Answer from a full scan of the transcript instead of the index.
    #[arg(long)]
    pub no_index: bool,
}

pub fn run(cli: &Cli, a: &LeavesArgs, out: &mut impl Write) -> CliResult {
    let target = super::target(cli, a.project.as_deref(), &a.target)?;
    let path = target.path();
    // An inline agent: its leaves in the session file, the newest active, in the full view
    // (a compaction after the agent drops it from the resume view), from a scan.
    let inline = target.leaf().is_some();
    let opts = ResolveOptions {
        leaf: target.leaf().map(chainlog::Id::from_text),
        view: if inline { View::Full } else { View::Resume },
        // The report lists the leaves itself: the answer only names the active one (read from
        // the materialised view when it is stored).
        list_leaves: false,
    };
    let indexed = if a.no_index || inline {
        None
    } else {
        super::store(cli)?
            .leaf_report_from(path, opts)
            .ok()
            .flatten()
    };
    let (ans, mut report) = if let Some(r) = indexed {
        r
    } else {
        let ans = Store::reference(path, opts, "--no-index".into())?;
        let t = scan_path(path)?;
        let res = resolve(&t, opts).map_err(|leaf| chainlog::Error::UnknownLeaf {
            path: path.to_path_buf(),
            leaf,
        })?;
        let report = if inline {
            leaf_report_full(&t, &res)
        } else {
            leaf_report(&t, &res)
        };
        (ans, report)
    };
    if let Target::Agent { leaves, .. } = &target
        && !leaves.is_empty()
    {
        report.retain(|l| leaves.contains(&ans.names.name(l.uuid)));
    }
    report_problems(path, &ans);
    let res = &ans.resolution;
    let t = &ans;
    let rule = res.leaf.map(|(_, r)| r);
    if cli.json {
        for l in &report {
            write_json_row(
                out,
                json!({
                    "uuid": t.names.name(l.uuid),
                    "type": l.kind.as_str(),
                    "timestamp": format_ms(l.timestamp),
                    "sidechain": l.sidechain,
                    "chainLength": l.chain_len,
                    "active": l.active,
                    "parallelDeadEnd": l.parallel,
                    "rule": if l.active { rule } else { None },
                }),
            )?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{:<38} {:<9} {:<24} {:>6} {:<9} {:<13} active",
        "leaf", "type", "tip time", "chain", "sidechain", "kind"
    )?;
    for l in &report {
        writeln!(
            out,
            "{:<38} {:<9} {:<24} {:>6} {:<9} {:<13} {}",
            t.names.name(l.uuid),
            l.kind.as_str(),
            format_ms(l.timestamp),
            l.chain_len,
            if l.sidechain { "yes" } else { "no" },
            if l.parallel { "parallel end" } else { "branch" },
            if l.active { "*" } else { "" }
        )?;
    }
    match res.leaf {
        Some((id, r)) if !report.iter().any(|l| l.active) => {
            writeln!(
                out,
                "\nactive: {} ({}; not a leaf)",
                t.names.name(id),
                r.explain()
            )?;
        }
        Some((id, _)) if inline => writeln!(
            out,
            "\nactive: {} (the agent's newest message)",
            t.names.name(id)
        )?,
        Some((id, r)) => writeln!(out, "\nactive: {} ({})", t.names.name(id), r.explain())?,
        None => writeln!(
            out,
            "\nno active leaf: the transcript has no user/assistant message"
        )?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Epoch milliseconds as RFC 3339, or `-`.
pub fn format_ms(ms: i64) -> String {
    chainlog::format::format_millis(ms).unwrap_or_else(|| "-".into())
}
