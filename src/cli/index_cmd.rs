//! `chainlog index`, `rebuild`, `verify`: maintain and check the index sidecars.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use chainlog::Error;
use serde_json::json;

use super::{Cli, CliResult, write_json};

#[derive(Debug, clap::Args)]
pub struct PathsArgs {
    /// Transcript files, project directories or a claude directory (default: every project).
    pub paths: Vec<PathBuf>,
}

/// Every transcript under the given paths (files as given; directories walked).
fn transcripts(cli: &Cli, a: &PathsArgs) -> Result<Vec<PathBuf>, Error> {
    let roots: Vec<PathBuf> = if a.paths.is_empty() {
        vec![chainlog::claude_dir(cli.claude_dir.as_deref())?.join("projects")]
    } else {
        a.paths.clone()
    };
    let mut out = Vec::new();
    for root in roots {
        if root.is_file() {
            out.push(root);
        } else if root.is_dir() {
            walk(&root, &mut out);
        } else {
            return Err(Error::NoTranscript { path: root.clone() });
        }
    }
    out.sort();
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let Ok(ft) = e.file_type() else { continue };
        let p = e.path();
        if ft.is_dir() {
            walk(&p, out);
        } else if ft.is_file() && p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
}

/// What to do to each transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Index,
    Rebuild,
    Verify,
}

/// The transcripts that failed; each distinct error is printed once (a sidecar that cannot be
/// written fails every transcript of its project the same way).
#[derive(Default)]
struct Failures {
    count: usize,
    said: std::collections::HashSet<String>,
}

impl Failures {
    fn add(&mut self, e: &Error) {
        self.count += 1;
        let text = e.to_string();
        if !self.said.contains(&text) {
            eprintln!("chainlog: {text}");
            self.said.insert(text);
        }
    }

    /// How many failures repeated an error printed before.
    fn repeated(&self) -> usize {
        self.count - self.said.len()
    }
}

/// Refuses at once an index folder this process cannot write in (a read-only folder or file
/// system), instead of failing every transcript with the same error. A missing folder is
/// created private (0700), as the index creates it.
fn check_writable(dir: &Path) -> Result<(), Error> {
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
        .create(dir)
        .map_err(|e| Error::io(dir, e))?;
    tempfile::Builder::new()
        .prefix(".chainlog-write-check")
        .tempfile_in(dir)
        .map(drop)
        .map_err(|e| {
            let why = format!("the index folder cannot be written: {}", e.kind());
            Error::io(dir, std::io::Error::new(e.kind(), why))
        })
}

/// Reports one transcript caught up or rebuilt: a JSON line with `--json`, else a note when it
/// was indexed again from zero; a failure is counted in `failed` and printed.
fn report(
    cli: &Cli,
    out: &mut impl Write,
    path: &Path,
    r: &chainlog::Result<chainlog::CatchUp>,
    failed: &mut Failures,
) -> std::io::Result<()> {
    match r {
        Ok(c) if cli.json => write_json(
            out,
            &json!({"path": path, "bytes": c.bytes, "lines": c.lines, "reindexed": c.reindexed}),
        ),
        Ok(c) => {
            if let Some(why) = c.reindexed {
                eprintln!(
                    "chainlog: {}: indexed again from zero: {why}",
                    path.display()
                );
            }
            Ok(())
        }
        Err(e) => {
            failed.add(e);
            Ok(())
        }
    }
}

pub fn run(cli: &Cli, a: &PathsArgs, verb: Verb, out: &mut impl Write) -> CliResult {
    let store = super::store(cli)?;
    if verb != Verb::Verify {
        check_writable(&super::index_dir(cli))?;
    }
    let files = transcripts(cli, a)?;
    let bar = progress_bar(files.len());
    let mut failed = Failures::default();
    let mut differing = 0usize;
    // Transcripts whose resume view the catch-up stored or extended: no view to prepare.
    let mut viewed = std::collections::HashSet::new();
    if verb == Verb::Index {
        // Sidecar by sidecar: one open and one close per project, not per transcript.
        let mut written = Ok(());
        store.catch_up_all(&files, |path, r| {
            if let Ok(c) = r
                && matches!(
                    c.view,
                    chainlog::sidecar::ViewUpdate::Stored | chainlog::sidecar::ViewUpdate::Extended
                )
            {
                viewed.insert(path.to_path_buf());
            }
            if written.is_ok() {
                written = report(cli, out, path, r, &mut failed);
            }
            if let Some(b) = &bar {
                b.inc(1);
            }
        });
        written?;
    }
    if verb == Verb::Verify {
        // Caught up and compared together, answers in order.
        let mut written = Ok(());
        store.verify_all(&files, |path, r| {
            if written.is_ok() {
                written = verified(cli, out, path, r, &mut failed, &mut differing);
            }
            if let Some(b) = &bar {
                b.inc(1);
            }
        });
        written?;
    }
    if verb == Verb::Rebuild {
        for path in &files {
            if let Some(b) = &bar {
                b.set_message(
                    path.file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                );
            }
            report(cli, out, path, &store.rebuild(path), &mut failed)?;
            if let Some(b) = &bar {
                b.inc(1);
            }
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if verb == Verb::Rebuild
        && let Err(e) = rebuild_search(&store, &files)
    {
        failed.add(&e);
    }
    // The listing table too: the first `ls` after `index` reads no transcript. And the resume
    // views: the next resume of a session reads its view and writes nothing.
    if verb != Verb::Verify {
        if let Err(e) = store.prepare_listing(&files) {
            eprintln!("chainlog: listing: {e}");
        }
        let unviewed: Vec<PathBuf> = files
            .iter()
            .filter(|f| !viewed.contains(*f))
            .cloned()
            .collect();
        store.prepare_views(&unviewed);
        // Then the sidecars this run created give back the pages those commits replaced.
        store.compact_created();
    }
    if !cli.json {
        summarise(verb, files.len(), &failed, differing);
    }
    Ok(if failed.count > 0 || differing > 0 {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// Reports one transcript verified: a JSON line with `--json`, else each difference; one that
/// differs is counted in `differing`, a failure in `failed` and printed.
fn verified(
    cli: &Cli,
    out: &mut impl Write,
    path: &Path,
    r: chainlog::Result<Vec<chainlog::sidecar::Difference>>,
    failed: &mut Failures,
    differing: &mut usize,
) -> std::io::Result<()> {
    match r {
        Ok(diffs) => {
            if cli.json {
                write_json(
                    out,
                    &json!({"path": path, "ok": diffs.is_empty(),
                            "differences": diffs.iter().map(ToString::to_string).collect::<Vec<_>>()}),
                )?;
            } else {
                for d in &diffs {
                    writeln!(out, "{}: {d}", path.display())?;
                }
            }
            if !diffs.is_empty() {
                *differing += 1;
            }
        }
        Err(e) => failed.add(&e),
    }
    Ok(())
}

/// The last line of a run: how many transcripts, failed and differing.
fn summarise(verb: Verb, files: usize, failed: &Failures, differing: usize) {
    let what = match verb {
        Verb::Index => "indexed",
        Verb::Rebuild => "rebuilt",
        Verb::Verify => "verified",
    };
    if failed.repeated() > 0 {
        eprintln!(
            "chainlog: {} more failure(s) with an error printed above",
            failed.repeated()
        );
    }
    eprintln!(
        "chainlog: {what} {} transcript(s){}{}",
        files,
        if failed.count > 0 {
            format!(", {} failed", failed.count)
        } else {
            String::new()
        },
        if differing > 0 {
            format!(", {differing} differ from a full scan")
        } else {
            String::new()
        },
    );
}

/// Drops the search indexes of the projects holding `files` and builds them again (they are
/// caches too).
fn rebuild_search(store: &chainlog::Store, files: &[PathBuf]) -> Result<(), Error> {
    let projects: Vec<PathBuf> = files
        .iter()
        .filter_map(|f| f.parent().map(Path::to_path_buf))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    store.search_rebuild(&projects).map(drop)
}

fn progress_bar(n: usize) -> Option<indicatif::ProgressBar> {
    if n < 2 || !std::io::stderr().is_terminal() {
        return None;
    }
    let b = indicatif::ProgressBar::new(n as u64);
    b.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {wide_msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    Some(b)
}
