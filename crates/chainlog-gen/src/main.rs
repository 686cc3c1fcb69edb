//! `chainlog-gen OUT [--bytes N] [--seed N] [--everything] [--with F,..] [--without F,..]
//! [--claude-dir]`: writes one generated session (the same as `chainlog gen`, without the rest
//! of the command). `--with`/`--without` switch single features on top of the plain or the
//! `--everything` set; `--claude-dir` makes OUT a claude dir and writes the whole session into
//! `OUT/projects/<key>/` (sub-agent files included), as the real client would. `--sessions N`
//! (with `--claude-dir`) writes N sessions of `--bytes` each into one project instead, seeds
//! `--seed` on (a project of many small sessions, as `claude -p` runs leave).

use std::process::ExitCode;

use chainlog_gen::{Corruption, GenOptions, SidechainLayout};

const USAGE: &str = "usage: chainlog-gen OUT [--bytes N] [--seed N] [--everything] \
[--with F,..] [--without F,..] [--claude-dir [--sessions N]]
features: parallel, rewinds, retries, compactions, preserved, snips, progress, metadata,
  corruption, inline-agents, toplevel-agents, subagents, agents (all three layouts)";

fn main() -> ExitCode {
    match run(std::env::args().skip(1)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chainlog-gen: {e}");
            ExitCode::from(2)
        }
    }
}

/// Switches one feature of `o` on or off.
fn set(o: &mut GenOptions, feature: &str, on: bool) -> Result<(), String> {
    let layout = |l| if on { l } else { SidechainLayout::None };
    match feature {
        "parallel" => o.parallel_tools = on,
        "rewinds" => o.rewinds = on,
        "retries" => o.retries = on,
        "compactions" => o.compactions = on,
        "preserved" => {
            o.preserved_segments = on;
            o.compactions |= on;
        }
        "snips" => o.snips = on,
        "progress" => o.legacy_progress = on,
        "metadata" => o.metadata_midfile = on,
        "corruption" => {
            o.corruption = if on {
                Corruption::all()
            } else {
                Corruption::default()
            };
        }
        "inline-agents" => o.sidechains = layout(SidechainLayout::Inline),
        "toplevel-agents" => o.sidechains = layout(SidechainLayout::TopLevel),
        "subagents" => o.sidechains = layout(SidechainLayout::Subagents),
        "agents" => o.sidechains = layout(SidechainLayout::All),
        _ => return Err(format!("unknown feature {feature}\n{USAGE}")),
    }
    Ok(())
}

fn run(mut args: impl Iterator<Item = String>) -> Result<(), String> {
    let (mut out, mut bytes, mut seed, mut everything, mut claude_dir) =
        (None, 200_000, 1, false, false);
    let mut sessions: Option<u64> = None;
    let mut switches: Vec<(String, bool)> = Vec::new();
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value\n{USAGE}"));
        let number = |name: &str, v: String| -> Result<u64, String> {
            v.parse().map_err(|_| format!("{name}: not a number: {v}"))
        };
        match a.as_str() {
            "--bytes" => bytes = number("--bytes", value("--bytes")?)?,
            "--seed" => seed = number("--seed", value("--seed")?)?,
            "--everything" => everything = true,
            "--claude-dir" => claude_dir = true,
            "--sessions" => sessions = Some(number("--sessions", value("--sessions")?)?),
            "--with" | "--without" => {
                let on = a == "--with";
                for f in value(&a)?.split(',').filter(|f| !f.is_empty()) {
                    switches.push((f.to_owned(), on));
                }
            }
            "-h" | "--help" => return Err(USAGE.into()),
            _ if out.is_none() && !a.starts_with('-') => out = Some(std::path::PathBuf::from(a)),
            _ => return Err(format!("unexpected argument {a}\n{USAGE}")),
        }
    }
    let out = out.ok_or(USAGE)?;
    let mut opts = if everything {
        GenOptions::everything(seed, bytes)
    } else {
        GenOptions::plain(seed, bytes)
    };
    for (f, on) in &switches {
        set(&mut opts, f, *on)?;
    }
    if let Some(n) = sessions {
        if !claude_dir {
            return Err(format!("--sessions needs --claude-dir\n{USAGE}"));
        }
        return many(&out, &opts, n);
    }
    if claude_dir {
        let s = chainlog_gen::generate(&opts);
        let main = chainlog_gen::write_session(&out.join("projects"), &s)
            .map_err(|e| format!("{}: {e}", out.display()))?;
        eprintln!(
            "wrote {} ({} bytes, {} agent files, {} messages on the resume view)",
            main.display(),
            s.main.len(),
            s.agents.len(),
            s.expected.resume_uuids.len()
        );
        return Ok(());
    }
    let (len, expected) =
        chainlog_gen::write_file(&opts, &out).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!(
        "wrote {} ({len} bytes, {} messages on the resume view)",
        out.display(),
        expected.resume_uuids.len()
    );
    Ok(())
}

/// Writes `n` sessions like `opts` (seeds from `opts.seed` on) into one project of `out`.
fn many(out: &std::path::Path, opts: &GenOptions, n: u64) -> Result<(), String> {
    let (mut bytes, mut files) = (0u64, 0u64);
    let mut project = None;
    for i in 0..n {
        let mut o = opts.clone();
        o.seed = opts.seed.wrapping_add(i);
        let mut s = chainlog_gen::generate(&o);
        s.cwd = "/gen/many".into();
        let main = chainlog_gen::write_session(&out.join("projects"), &s)
            .map_err(|e| format!("{}: {e}", out.display()))?;
        bytes += s.main.len() as u64 + s.agents.iter().map(|a| a.jsonl.len() as u64).sum::<u64>();
        files += 1 + s.agents.len() as u64;
        project = main.parent().map(std::path::Path::to_path_buf);
    }
    eprintln!(
        "wrote {n} sessions ({files} files, {bytes} bytes) into {}",
        project.map_or_else(String::new, |p| p.display().to_string())
    );
    Ok(())
}
