//! `chainlog sync`: sessions on every machine through S3-compatible object storage or a
//! shared folder (SPEC C1).
//!
//! # Design
//! - **The remote is an append-only log of immutable objects** ([`format`]): what a transcript
//!   grew by goes up as a segment (zstd, optionally encrypted: [`seal`]) named by its chain
//!   hash, each naming the one before it; a small manifest delta per push says which files
//!   changed. Each machine writes only below its own id: no locks, no conditional writes, and
//!   a store that lists late only delays what a machine sees.
//! - **Push** ([`push`]) sends the bytes each file grew by since the last sync (complete lines
//!   only), after checking the last synced segment is still in the file.
//! - **Pull** ([`pull`]) appends another machine's segments to the local file when the local
//!   file ends where they continue; when both machines continued a session, the other's
//!   continuation becomes a session of its own (a fork), and the sync report says so. Nothing
//!   chainlog did not write is truncated or rewritten.
//! - **Places** ([`place`]): a project maps by its git origin, else by `--map FROM=TO`, else by
//!   its folder name.
//! - **State** ([`state`]): one file per remote in the index folder.
//! - The local index catches up by tailing, as after any append.

mod format;
mod place;
mod pull;
mod push;
mod remote;
mod seal;
mod state;

use std::path::{Path, PathBuf};

use crate::error::{Error, RemoteFault, Result};
use crate::index::Sidecars;

use format::{FORMAT, MARKER, Marker};
use place::Placer;
use remote::Remote;
use seal::Seal;
use state::State;

/// Which projects a sync covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncScope {
    /// Every project.
    All,
    /// One project: a working directory, a project folder or a project key (as `ls
    /// --project`); it need not exist here yet.
    Project(PathBuf),
}

/// A scope resolved to project folder names (`None`: all).
#[derive(Debug, Clone)]
struct Keys(Option<Vec<String>>);

impl Keys {
    fn resolve(claude_dir: &Path, scope: &SyncScope) -> Result<Keys> {
        let SyncScope::Project(given) = scope else {
            return Ok(Keys(None));
        };
        let found = crate::catalog::list::resolve_scope(claude_dir, Some(given), false)?;
        let mut keys: Vec<String> = found.dirs.iter().map(|d| d.key.clone()).collect();
        if let Some(cwd) = &found.cwd {
            keys.push(crate::catalog::paths::project_key(cwd));
        }
        Ok(Keys(Some(keys)))
    }

    fn includes(&self, key: &str) -> bool {
        self.0
            .as_ref()
            .is_none_or(|keys| keys.iter().any(|k| k == key))
    }
}

/// Called as a push goes: bytes sent so far and bytes to send.
pub type SyncProgress = std::sync::Arc<dyn Fn(u64, u64) + Send + std::marker::Sync>;

/// How to sync.
#[derive(Clone)]
pub struct SyncOptions {
    /// The projects.
    pub scope: SyncScope,
    /// Path maps to remember (`FROM`, `TO`): another machine's project under `FROM` goes to
    /// the same path under `TO` here.
    pub maps: Vec<(String, String)>,
    /// The secret that encrypts every object (the contents of the user's key file).
    pub key: Option<Vec<u8>>,
    /// Told how far the push is (a progress bar for a large first sync).
    pub progress: Option<SyncProgress>,
    /// Only pull these sessions (their transcripts and session folders), and push nothing:
    /// what resuming a session only the remote has needs.
    pub only: Option<Vec<String>>,
    /// The only local files that may have changed since the last sync, as a file watcher saw
    /// them (paths below the claude dir's `projects/`; others are ignored): the push looks at
    /// these alone instead of every file in scope. `None`: look at every file.
    pub changed: Option<Vec<PathBuf>>,
}

impl std::fmt::Debug for SyncOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyncOptions")
            .field("scope", &self.scope)
            .field("maps", &self.maps)
            .field("key", &self.key.as_ref().map(|_| "…"))
            .field("progress", &self.progress.is_some())
            .field("only", &self.only)
            .field("changed", &self.changed.as_ref().map(Vec::len))
            .finish()
    }
}

impl SyncOptions {
    /// Every project, no key.
    pub fn all() -> SyncOptions {
        SyncOptions {
            scope: SyncScope::All,
            maps: Vec::new(),
            key: None,
            progress: None,
            only: None,
            changed: None,
        }
    }
}

/// A session both machines continued: the other machine's continuation, kept as a session of
/// its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkNote {
    /// The session.
    pub session: String,
    /// The other machine.
    pub machine: String,
    /// The session written here with its continuation.
    pub fork: String,
}

/// What a sync did.
#[derive(Debug, Clone, Default)]
pub struct SyncReport {
    /// This machine's id on the remote.
    pub machine: String,
    /// Whether the remote holds plaintext (no key).
    pub plaintext: bool,
    /// Files whose growth went up.
    pub pushed_files: u64,
    /// Their bytes.
    pub pushed_bytes: u64,
    /// Bytes of objects written to the remote (compressed, encrypted).
    pub uploaded_bytes: u64,
    /// Files that came down (appended or created).
    pub pulled_files: u64,
    /// Their new bytes.
    pub pulled_bytes: u64,
    /// Local files the push looked at (a size read each): every file in scope, or only those
    /// [`SyncOptions::changed`] named.
    pub checked_files: u64,
    /// Other machines' files the pull looked at: those their manifests named since the last
    /// sync, and those left for later.
    pub checked_entries: u64,
    /// Sessions both machines continued.
    pub forks: Vec<ForkNote>,
    /// Files left as they were, and why.
    pub skipped: Vec<String>,
}

/// A session on the remote, as the machine that has it last published it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteSession {
    /// The machine's id on the remote.
    pub machine: String,
    /// Whether that machine is this one.
    pub mine: bool,
    /// The session id.
    pub session_id: String,
    /// Its project folder name on that machine.
    pub project_key: String,
    /// The working directory it was started in.
    pub cwd: Option<String>,
    /// The title `ls` shows.
    pub title: String,
    /// The time of the last message.
    pub modified: Option<String>,
    /// Messages on the resume view.
    pub messages: u64,
    /// Bytes of the transcript.
    pub bytes: u64,
    /// Whether this machine holds that transcript (all of it).
    pub here: bool,
}

impl RemoteSession {
    /// What a listing shows of it, as the facts of a session (with no path: it is not here).
    pub fn facts(&self) -> crate::catalog::facts::SessionFacts {
        crate::catalog::facts::SessionFacts {
            session_id: self.session_id.clone(),
            project_key: self.project_key.clone(),
            cwd: self.cwd.clone(),
            title: self.title.clone(),
            message_count: self.messages,
            modified: self.modified.clone(),
            bytes: self.bytes,
            ..Default::default()
        }
    }
}

/// One sync run.
struct Sync<'a> {
    sidecars: &'a Sidecars,
    projects: PathBuf,
    state_dir: PathBuf,
    state_path: PathBuf,
    scope: Keys,
    remote: Remote,
    seal: Seal,
    placer: Placer,
    state: State,
    report: SyncReport,
    /// The last sync was killed: an object may already be there (one request to ask first).
    careful: bool,
    /// The progress callback, and the bytes the push has to send.
    progress: Option<SyncProgress>,
    to_send: u64,
    /// Pull only these sessions.
    only: Option<Vec<String>>,
    /// Push only these files (`(project key, path below the project)`).
    changed: Option<Vec<(String, String)>>,
}

impl<'a> Sync<'a> {
    /// A run on `remote` with this machine's state for it, the remote's marker checked. The
    /// returned file holds the lock that keeps other syncs of this remote on this machine out
    /// until it is dropped.
    fn begin(
        sidecars: &'a Sidecars,
        claude_dir: &Path,
        remote: Remote,
        seal: Seal,
        maps: &[(String, String)],
        scope: Keys,
    ) -> Result<(Sync<'a>, std::fs::File)> {
        let path = State::path(sidecars.index_dir(), remote.url());
        let state_dir = path
            .parent()
            .expect("a state file has a folder")
            .to_path_buf();
        std::fs::create_dir_all(&state_dir).map_err(|e| Error::io(&state_dir, e))?;
        let lock_path = path.with_extension("lock");
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| Error::io(&lock_path, e))?;
        lock.lock().map_err(|e| Error::io(&lock_path, e))?;
        let mut state = State::load(&path)?;
        // Once per remote and key setting: a remote's marker does not change.
        let setting = seal.hash(&[b"chainlog-sync marker checked"]);
        if state.marker_checked.as_ref() != Some(&setting) {
            check_marker(&remote, &seal)?;
            state.marker_checked = Some(setting);
        }
        for m in maps {
            if !state.maps.contains(m) {
                state.maps.push(m.clone());
            }
        }
        let projects = crate::catalog::paths::projects_root(claude_dir);
        let placer = Placer::new(&projects, &state.maps);
        let report = SyncReport {
            machine: state.machine.clone(),
            plaintext: !seal.encrypted(),
            ..SyncReport::default()
        };
        let run = Sync {
            sidecars,
            projects,
            state_dir,
            state_path: path,
            scope,
            remote,
            seal,
            placer,
            report,
            state,
            careful: false,
            progress: None,
            to_send: 0,
            only: None,
            changed: None,
        };
        Ok((run, lock))
    }
}

/// Pushes this machine's sessions in scope to `remote` and pulls the other machines'.
pub(crate) fn sync(
    sidecars: &Sidecars,
    claude_dir: &Path,
    remote: &str,
    opts: &SyncOptions,
) -> Result<SyncReport> {
    let remote = Remote::open(remote)?;
    let seal = Seal::new(opts.key.as_deref());
    let scope = Keys::resolve(claude_dir, &opts.scope)?;
    let (mut run, _lock) = Sync::begin(sidecars, claude_dir, remote, seal, &opts.maps, scope)?;
    let path = run.state_path.clone();
    run.progress.clone_from(&opts.progress);
    run.changed = opts
        .changed
        .as_ref()
        .map(|paths| changed_files(&run.projects, &run.scope, paths));
    // Segments first, then what was pulled, then one delta naming both: a reader never sees a
    // head whose segments are not there.
    if let Some(only) = &opts.only {
        for id in only {
            crate::error::check_id(id)?;
        }
        run.only.clone_from(&opts.only);
        run.pull()?;
        run.state.save()?;
        return Ok(run.report);
    }
    // A sync that began and did not end leaves its marker: the next asks before each upload
    // whether the object is there (a clean one does not spend the request).
    let marker = path.with_extension("unfinished");
    run.careful = marker.exists();
    std::fs::write(&marker, b"").map_err(|e| Error::io(&marker, e))?;
    run.push()?;
    run.pull()?;
    run.publish()?;
    run.state.compact();
    run.state.save()?;
    std::fs::remove_file(&marker).map_err(|e| Error::io(&marker, e))?;
    Ok(run.report)
}

/// Every session on the remote, newest first, from the manifests alone (no segment is read);
/// a remote without chainlog's marker has none.
pub(crate) fn remote_sessions(
    sidecars: &Sidecars,
    claude_dir: &Path,
    remote: &str,
    key: Option<&[u8]>,
) -> Result<Vec<RemoteSession>> {
    let remote = Remote::open(remote)?;
    let seal = Seal::new(key);
    if remote.get(MARKER)?.is_none() {
        return Ok(Vec::new());
    }
    let (mut run, _lock) = Sync::begin(sidecars, claude_dir, remote, seal, &[], Keys(None))?;
    run.fold_all()?;
    run.state.save()?;
    let me = run.state.machine.clone();
    let mut out = Vec::new();
    let theirs: Vec<(String, format::Entry)> = run
        .state
        .entries
        .all()?
        .map(|(k, e)| {
            (
                k.split_once('/').map_or("", |(m, _)| m).to_owned(),
                e.clone(),
            )
        })
        .collect();
    let mine: Vec<(String, format::Entry)> = run
        .state
        .files
        .all()?
        .filter(|(_, st)| st.published.is_some())
        .map(|(local, st)| (me.clone(), push::entry_of(local, st)))
        .collect();
    for (m, e) in theirs.into_iter().chain(mine) {
        let Some(facts) = e.facts.clone() else {
            continue;
        };
        let Some(session_id) = e.rel.strip_suffix(".jsonl") else {
            continue;
        };
        let here = run.placer.place(&e.project).is_some_and(|key| {
            std::fs::metadata(run.projects.join(&key).join(&e.rel))
                .is_ok_and(|md| md.len() >= e.len)
        });
        out.push(RemoteSession {
            mine: m == me,
            machine: m,
            session_id: session_id.to_owned(),
            project_key: e.project.key.clone(),
            cwd: e.project.cwd.clone(),
            title: facts.title,
            modified: facts.modified,
            messages: facts.messages,
            bytes: e.len,
            here,
        });
    }
    out.sort_by(|a, b| {
        b.modified
            .cmp(&a.modified)
            .then_with(|| a.session_id.cmp(&b.session_id))
    });
    Ok(out)
}

/// Writes the remote's marker when there is none; refuses a remote in another format or with
/// another key setting.
fn check_marker(remote: &Remote, seal: &Seal) -> Result<()> {
    let fault = |fault| Error::Remote {
        remote: remote.url().to_owned(),
        fault,
    };
    match remote.get(MARKER)? {
        None => {
            let m = Marker {
                chainlog_sync: FORMAT,
                encrypted: seal.encrypted(),
                key_check: format::key_check(seal),
            };
            remote.put(MARKER, serde_json::to_vec(&m).expect("a marker serialises"))
        }
        Some(bytes) => {
            let m: Marker = serde_json::from_slice(&bytes)
                .map_err(|_| fault(RemoteFault::Damaged("a marker that does not parse")))?;
            if m.chainlog_sync != FORMAT {
                return Err(fault(RemoteFault::Damaged("a marker of another format")));
            }
            match (m.encrypted, seal.encrypted()) {
                (true, false) => Err(fault(RemoteFault::NeedsKey)),
                (false, true) => Err(fault(RemoteFault::Plaintext)),
                (true, true) if m.key_check.is_some() && m.key_check != format::key_check(seal) => {
                    Err(fault(RemoteFault::WrongKey))
                }
                _ => Ok(()),
            }
        }
    }
}

impl Sync<'_> {
    /// The state of a local file nothing of which is synced yet.
    fn empty_state(&self, rel: &str, project: format::Project, blob: bool) -> state::FileState {
        let id = format::file_id(&self.seal, rel);
        let start = format::chain_start(&self.seal, &id);
        state::FileState::empty(id, start, project, blob)
    }
}

/// Whether `e` is the remote failing (ends the sync) rather than one file's trouble.
fn unreachable(e: &Error) -> bool {
    matches!(
        e,
        Error::Remote {
            fault: RemoteFault::Store(_),
            ..
        }
    )
}

/// The files sync covers in the projects folder: each project's `<session>.jsonl` and the
/// files below its `<session>/` folder, as `(project key, path below the project)`, sorted.
/// Links and special files are not followed.
fn local_files(projects: &Path, scope: &Keys) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Ok(dirs) = std::fs::read_dir(projects) else {
        return out;
    };
    for d in dirs.flatten() {
        let Ok(key) = d.file_name().into_string() else {
            continue;
        };
        if !d.file_type().is_ok_and(|t| t.is_dir()) || !scope.includes(&key) {
            continue;
        }
        walk(&d.path(), "", &mut |rel| out.push((key.clone(), rel)));
    }
    out.sort();
    out
}

/// The files of `paths` that sync covers, as [`local_files`] names them, sorted.
fn changed_files(projects: &Path, scope: &Keys, paths: &[PathBuf]) -> Vec<(String, String)> {
    // A watcher may name files by the folder's canonical path.
    let canonical = projects.canonicalize().ok();
    let mut out: Vec<(String, String)> = paths
        .iter()
        .filter_map(|p| {
            let below = p
                .strip_prefix(projects)
                .ok()
                .or_else(|| p.strip_prefix(canonical.as_ref()?).ok())?
                .to_str()?;
            let (key, rel) = below.split_once('/')?;
            // As the walk: no folder on the way is a link.
            let real_dirs = p
                .ancestors()
                .skip(1)
                .take_while(|a| *a != projects && Some(*a) != canonical.as_deref())
                .all(|a| std::fs::symlink_metadata(a).is_ok_and(|m| m.is_dir()));
            (scope.includes(key) && format::valid_rel(rel) && real_dirs)
                .then(|| (key.to_owned(), rel.to_owned()))
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

fn walk(dir: &Path, rel: &str, found: &mut dyn FnMut(String)) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let Ok(name) = e.file_name().into_string() else {
            continue;
        };
        let Ok(t) = e.file_type() else { continue };
        let child = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        if t.is_dir() && (!rel.is_empty() || crate::error::check_id(&name).is_ok()) {
            walk(&e.path(), &child, found);
        } else if t.is_file() && format::valid_rel(&child) {
            found(child);
        }
    }
}
