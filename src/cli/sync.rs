//! `chainlog sync REMOTE`: push this machine's sessions and pull the others' (SPEC C1).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use chainlog::{SyncOptions, SyncScope};

use super::{Cli, CliResult};

#[derive(Debug, clap::Args)]
pub struct SyncArgs {
    #[arg(
        value_name = "REMOTE",
        help = "s3://bucket/prefix (S3, R2, B2, MinIO, Garage: endpoint and credentials from \
                AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) or \
                file:///path (a shared or mounted folder)"
    )]
    pub remote: String,
    #[command(flatten)]
    pub scope: super::Scope,
    /// Another machine's project under FROM goes under TO here (remembered for this remote).
    #[arg(long = "map", value_name = "FROM=TO", value_parser = parse_map)]
    pub maps: Vec<(String, String)>,
    /// Only pull this session (its transcript and session folder) and push nothing
    /// (repeatable): a session `ls --remote` lists that this machine does not have.
    #[arg(long = "session", value_name = "ID", conflicts_with = "watch")]
    pub sessions: Vec<String>,
    /// Keep syncing: every INTERVAL seconds, and within a second when a transcript grows.
    #[arg(long)]
    pub watch: bool,
    /// Seconds between two syncs under --watch.
    #[arg(long, value_name = "SECS", default_value_t = 10, requires = "watch")]
    pub interval: u64,
    /// Encrypt every object with the secret in FILE (keep it safe: without it the remote
    /// cannot be read). Without a key the remote holds plaintext.
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<PathBuf>,
}

fn parse_map(s: &str) -> Result<(String, String), String> {
    let (from, to) = s
        .split_once('=')
        .ok_or_else(|| "expected FROM=TO".to_owned())?;
    if !from.starts_with('/') || !to.starts_with('/') {
        return Err("FROM and TO are absolute paths".into());
    }
    Ok((from.to_owned(), to.to_owned()))
}

pub fn run(cli: &Cli, a: &SyncArgs, out: &mut impl Write) -> CliResult {
    let key = match &a.key_file {
        Some(f) => Some(std::fs::read(f).map_err(|e| chainlog::Error::io(f, e))?),
        None => None,
    };
    if key.as_ref().is_some_and(|k| k.len() < 16) {
        return Err(super::CliError::usage(
            "the key file holds fewer than 16 bytes: use a long random secret",
        ));
    }
    let scope = match (&a.scope.project, a.scope.all) {
        (_, true) => SyncScope::All,
        (Some(p), false) => SyncScope::Project(p.clone()),
        (None, false) => SyncScope::Project(std::env::current_dir()?),
    };
    let opts = SyncOptions {
        scope,
        maps: a.maps.clone(),
        key,
        progress: super::progress::sync_bar(),
        only: (!a.sessions.is_empty()).then(|| a.sessions.clone()),
        changed: None,
    };
    let store = super::store(cli)?;
    if !a.watch {
        let r = store.sync(&a.remote, &opts)?;
        report(cli, a, &r, out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let projects = store.claude_dir()?.join("projects");
    let projects = projects.canonicalize().unwrap_or(projects);
    let watch = Watch::start(&projects);
    // The first sync looks at every file; the next ones at what the watcher saw change (all
    // again when it lost track).
    let mut changed = None;
    loop {
        let mut opts = opts.clone();
        opts.changed = changed.take();
        // A failed sync (the network down) is said and tried again at the next turn.
        match store.sync(&a.remote, &opts) {
            Ok(r) => {
                if cli.json || r.pushed_files + r.pulled_files > 0 || !r.forks.is_empty() {
                    report(cli, a, &r, out)?;
                    out.flush()?;
                }
            }
            Err(e) => {
                eprintln!("chainlog: {e}");
                // What it would have sent is looked for again.
                changed = None;
                std::thread::sleep(std::time::Duration::from_secs(a.interval));
                continue;
            }
        }
        changed = watch
            .as_ref()
            .and_then(|w| w.wait(std::time::Duration::from_secs(a.interval)));
        if watch.is_none() {
            std::thread::sleep(std::time::Duration::from_secs(a.interval));
        }
    }
}

/// The files below the projects folder that changed, as the kernel reports them.
struct Watch {
    _watcher: notify::RecommendedWatcher,
    events: std::sync::mpsc::Receiver<notify::Result<notify::Event>>,
}

impl Watch {
    /// A watcher of `projects` and everything below it (`None`: it cannot be watched, e.g. it
    /// does not exist yet; every turn then looks at every file).
    fn start(projects: &std::path::Path) -> Option<Watch> {
        use notify::Watcher;
        let (tx, events) = std::sync::mpsc::channel();
        let mut watcher = notify::recommended_watcher(move |ev| {
            let _ = tx.send(ev);
        })
        .ok()?;
        watcher
            .watch(projects, notify::RecursiveMode::Recursive)
            .ok()?;
        Some(Watch {
            _watcher: watcher,
            events,
        })
    }

    /// Waits up to `interval` for a change, then a moment for the rest of its burst; the files
    /// changed (`None`: look at every file: a folder appeared, whose files may predate its
    /// watch, or the watcher lost events).
    fn wait(&self, interval: std::time::Duration) -> Option<Vec<std::path::PathBuf>> {
        use std::sync::mpsc::RecvTimeoutError;
        let settle = std::time::Duration::from_millis(200);
        let mut paths = std::collections::BTreeSet::new();
        let mut timeout = interval;
        // A transcript written to without pause is still synced every few seconds.
        let mut burst_ends = None;
        loop {
            if let Some(end) = burst_ends {
                timeout = timeout.min(end - std::time::Instant::now().min(end));
            }
            match self.events.recv_timeout(timeout) {
                Ok(Ok(ev)) => {
                    let new_dir = matches!(ev.kind, notify::EventKind::Create(_))
                        && ev.paths.iter().any(|p| p.is_dir());
                    if ev.need_rescan() || new_dir {
                        return None;
                    }
                    if !matches!(ev.kind, notify::EventKind::Access(_)) {
                        paths.extend(ev.paths);
                    }
                    timeout = settle;
                    burst_ends.get_or_insert(std::time::Instant::now() + 5 * settle);
                }
                Ok(Err(_)) | Err(RecvTimeoutError::Disconnected) => return None,
                Err(RecvTimeoutError::Timeout) => return Some(paths.into_iter().collect()),
            }
        }
    }
}

fn report(
    cli: &Cli,
    a: &SyncArgs,
    r: &chainlog::SyncReport,
    out: &mut impl Write,
) -> std::io::Result<()> {
    if cli.json {
        let forks: Vec<serde_json::Value> = r
            .forks
            .iter()
            .map(
                |f| serde_json::json!({"session": f.session, "machine": f.machine, "fork": f.fork}),
            )
            .collect();
        let v = serde_json::json!({
            "schema": super::JSON_SCHEMA,
            "machine": r.machine,
            "plaintext": r.plaintext,
            "pushedFiles": r.pushed_files,
            "pushedBytes": r.pushed_bytes,
            "uploadedBytes": r.uploaded_bytes,
            "pulledFiles": r.pulled_files,
            "pulledBytes": r.pulled_bytes,
            "checkedFiles": r.checked_files,
            "checkedEntries": r.checked_entries,
            "forks": forks,
            "skipped": r.skipped,
        });
        writeln!(out, "{v}")?;
    } else {
        if r.plaintext {
            eprintln!(
                "chainlog: warning: {} holds your transcripts in plaintext (give --key-file to encrypt)",
                a.remote
            );
        }
        writeln!(
            out,
            "pushed {} file(s), {} bytes ({} uploaded); pulled {} file(s), {} bytes",
            r.pushed_files, r.pushed_bytes, r.uploaded_bytes, r.pulled_files, r.pulled_bytes
        )?;
        for f in &r.forks {
            writeln!(
                out,
                "session {} was continued here and on machine {}: their continuation is session {}",
                f.session, f.machine, f.fork
            )?;
        }
        for s in &r.skipped {
            eprintln!("chainlog: {s}");
        }
    }
    Ok(())
}
