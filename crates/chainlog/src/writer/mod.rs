//! The write path (format.md §A4, §A7, §A8): appending entries Claude Code will resume,
//! tombstones, and new sessions made from old ones (fork, branch).
//!
//! # Context
//! A program that records an agent's conversation (another harness, a migration, a test rig, a
//! "branch this session" command) needs to append entries in the shape Claude Code writes,
//! with parents it would choose, without scanning the file, without corrupting it when a
//! Claude Code process appends to the same file (it takes no lock), and with the index kept
//! current so a resume after appending costs no catch-up.
//!
//! # Design
//! | module | job |
//! |---|---|
//! | `shape` | envelope key order, `sessionId`/`cwd`/`version` stamps, JS number formatting |
//! | `sink` | one file: lock, foreign tail, parent cursor, dedup, one `write` per batch |
//! | `tombstone` | `remove(uuid)`: atomic rewrite without one line |
//! | `copy` | `fork` (as `--fork-session` writes it) and `branch` |
//!
//! [`SessionWriter`] routes each entry to a `sink::Sink`: sidechain messages with an
//! `agentId` (and agent `content-replacement`s) go to `<sid>/subagents/agent-<id>.jsonl`, the
//! rest to `<sid>.jsonl`. Entries wait in memory until [`SessionWriter::flush`]; the main file
//! is created only with its first user or assistant message (format.md §A4 lazy materialisation),
//! metadata set before then is written first.
//!
//! Dedup (main thread only, never sidechains): a message whose uuid the session already holds
//! is skipped, looked up in the index (one point read per entry). Already-written messages at
//! the start of a batch ([`SessionWriter::append_all`]) move the parent cursor to themselves
//! (the prefix rule). A writer opened on an existing session continues from the last message
//! of its resume view (where Claude Code's own writer continues after `--resume`).

pub(crate) mod copy;
mod git;
mod restate;
mod shape;
mod sink;
mod tombstone;

pub use git::git_branch;
#[cfg(feature = "sync")]
pub(crate) use git::git_dir;
pub use restate::CLIENT_TAIL_WINDOW;
pub(crate) use shape::is_message_type;
pub use tombstone::TAIL_WINDOW;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::{Error, Result, check_id};
use crate::id::IdNames;
use crate::index::Sidecars;
use crate::transcript::envelope::parse_line;
use restate::Carried;
use shape::Stamp;
use sink::{Pending, Sink};

/// The Claude Code version whose shape the writer writes (format.md §A8), stamped as `version`
/// unless [`WriterOptions::version`] says otherwise.
pub const WRITTEN_VERSION: &str = "2.1.328";

/// What the writer stamps on entries, and how durable a flush is.
#[derive(Debug, Clone)]
pub struct WriterOptions {
    /// `cwd` of written messages (the project's working directory).
    pub cwd: String,
    /// `version` of written messages.
    pub version: String,
    /// `gitBranch`, when known ([`WriterOptions::new`] reads it from the repository holding
    /// `cwd`, see [`git_branch`]).
    pub git_branch: Option<String>,
    /// `entrypoint` (`cli`, `sdk-cli`, ...), when set.
    pub entrypoint: Option<String>,
    /// `fsync` each flushed file (default on).
    pub fsync: bool,
}

impl WriterOptions {
    /// Options for messages recorded in `cwd`, with the branch checked out there.
    pub fn new(cwd: impl Into<String>) -> WriterOptions {
        let cwd = cwd.into();
        WriterOptions {
            git_branch: git_branch(Path::new(&cwd)),
            cwd,
            version: WRITTEN_VERSION.into(),
            entrypoint: None,
            fsync: true,
        }
    }
}

/// What a [`SessionWriter::flush`] wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlushReport {
    /// uuids of the messages written, per file, in order.
    pub written: Vec<(PathBuf, String)>,
    /// uuids skipped because the session already held them.
    pub duplicates: Vec<String>,
    /// Bytes appended over all files.
    pub bytes: u64,
}

/// Appends entries to one session (and its sub-agent files). See the module docs.
#[derive(Debug)]
pub struct SessionWriter {
    store: Sidecars,
    project_dir: PathBuf,
    session_id: String,
    opts: WriterOptions,
    main: Sink,
    agents: BTreeMap<String, Sink>,
    agent_meta: BTreeMap<String, Value>,
    carried: Carried,
    /// A batch spans flushes until [`SessionWriter::commit_batch`].
    in_batch: bool,
}

impl SessionWriter {
    /// A writer for session `session_id` in the project folder `project_dir`
    /// (`<claude>/projects/<key>`). The session id must not be a path.
    pub(crate) fn open(
        sidecars: &Sidecars,
        project_dir: &Path,
        session_id: &str,
        opts: WriterOptions,
    ) -> Result<SessionWriter> {
        check_id(session_id)?;
        let mut main = Sink::new(project_dir, &[], format!("{session_id}.jsonl"), true);
        main.start(sidecars)?;
        // The title and tag the session already has (from the index's cached facts).
        let mut carried = Carried::default();
        if main.path.is_file() {
            let mut cache = crate::catalog::cache::FactsCache::new(sidecars);
            if let Ok(f) = cache.facts(&main.path) {
                carried.title = f.custom_title.filter(|t| !t.is_empty());
                carried.tag = f.tag.filter(|t| !t.is_empty());
            }
            let _ = cache.flush();
        }
        Ok(SessionWriter {
            store: sidecars.clone(),
            project_dir: project_dir.to_path_buf(),
            session_id: session_id.to_owned(),
            opts,
            main,
            agents: BTreeMap::new(),
            agent_meta: BTreeMap::new(),
            carried,
            in_batch: false,
        })
    }
}

/// Checks an entry a caller wants written; the reason names what is wrong.
pub fn check_entry(v: &Value) -> std::result::Result<(), String> {
    let Some(o) = v.as_object() else {
        return Err("an entry must be a JSON object".into());
    };
    let Some(ty) = o.get("type").and_then(Value::as_str) else {
        return Err("an entry needs a string `type`".into());
    };
    if ty == "progress" {
        return Err("`progress` entries are never written (format.md §A4)".into());
    }
    for k in ["uuid", "timestamp", "agentId", "sessionId"] {
        if o.get(k).is_some_and(|x| !x.is_string()) {
            return Err(format!("`{k}` must be a string"));
        }
    }
    for k in ["parentUuid", "logicalParentUuid"] {
        if o.get(k).is_some_and(|x| !x.is_string() && !x.is_null()) {
            return Err(format!("`{k}` must be a string or null"));
        }
    }
    if o.get("isSidechain").is_some_and(|x| !x.is_boolean()) {
        return Err("`isSidechain` must be a boolean".into());
    }
    // Ids name files (`agentId`) and are what resumes walk (`uuid`, parents): one rule for all.
    for k in [
        "uuid",
        "parentUuid",
        "logicalParentUuid",
        "agentId",
        "sessionId",
        "sourceToolAssistantUUID",
    ] {
        if let Some(id) = o.get(k).and_then(Value::as_str) {
            check_id(id).map_err(|e| format!("`{k}`: {e}"))?;
        }
    }
    if is_message_type(ty) && ty != "system" && o.get("message").is_none() && ty != "attachment" {
        return Err(format!("a `{ty}` entry needs a `message`"));
    }
    readable(o, ty)
}

/// Whether the reader takes the entry as written: refused when it would skip the line or
/// note a field it cannot read (`"content": 42`), so `append` writes nothing its own reader
/// then warns about. One rule, the reader's: the entry goes through `parse_line` with the
/// `uuid` and `timestamp` the writer adds to a message that has none.
fn readable(o: &Map<String, Value>, ty: &str) -> std::result::Result<(), String> {
    let mut probe = o.clone();
    if is_message_type(ty) {
        probe
            .entry("uuid")
            .or_insert_with(|| uuid::Uuid::nil().to_string().into());
        probe.entry("timestamp").or_insert_with(|| now_iso().into());
    }
    let bytes = serde_json::to_vec(&probe).map_err(|e| e.to_string())?;
    let mut parsed = parse_line(&bytes, &mut IdNames::default());
    if let Err(problem) = &parsed.entry {
        return Err(format!("the reader would skip it: {problem}"));
    }
    match parsed.note_problem() {
        Some(problem) => Err(format!("the reader could not use all of it: {problem}")),
        None => Ok(()),
    }
}

/// `new Date().toISOString()` of now.
fn now_iso() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    crate::transcript::time::format_millis(ms).unwrap_or_default()
}

impl SessionWriter {
    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The main transcript (it may not exist yet).
    pub fn path(&self) -> &Path {
        &self.main.path
    }

    /// The parent the next main-thread message gets (as of the last flush).
    pub fn cursor(&self) -> Option<&str> {
        self.main.cursor.as_deref()
    }

    /// Queues one entry (a batch of one, see [`SessionWriter::append_all`]). Returns its uuid
    /// for a message (assigned if missing), `None` for metadata.
    pub fn append(&mut self, entry: Value) -> Result<Option<String>> {
        Ok(self.append_all(vec![entry])?.pop().flatten())
    }

    /// Queues a batch: every entry is checked first and nothing is queued if one is invalid
    /// ([`Error::InvalidEntry`] names its 0-based index). Already-written messages at the start
    /// of the batch move the parent cursor (format.md §A4 prefix rule).
    pub fn append_all(&mut self, entries: Vec<Value>) -> Result<Vec<Option<String>>> {
        for (i, e) in entries.iter().enumerate() {
            check_entry(e).map_err(|reason| Error::InvalidEntry { index: i, reason })?;
        }
        let mut uuids = Vec::with_capacity(entries.len());
        let mut first = true;
        for e in entries {
            let Value::Object(mut o) = e else {
                unreachable!("checked above")
            };
            let ty = o
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let message = is_message_type(&ty);
            if message {
                if !o.contains_key("uuid") {
                    o.insert("uuid".into(), uuid::Uuid::new_v4().to_string().into());
                }
                if !o.contains_key("timestamp") {
                    o.insert("timestamp".into(), now_iso().into());
                }
            }
            uuids.push(
                o.get("uuid")
                    .and_then(Value::as_str)
                    .filter(|_| message)
                    .map(str::to_owned),
            );
            if !message {
                // Titles and tags always go to the main file.
                self.carried.note(&ty, &o);
            }
            let sink = self.route(&o, message)?;
            sink.pending.push(Pending {
                entry: o,
                batch_start: first,
            });
            first = false;
        }
        Ok(uuids)
    }

    /// Sets the `.meta.json` written beside agent `agent_id`'s file when the writer creates it
    /// (default `{"agentType":"general-purpose"}`).
    pub fn set_agent_meta(&mut self, agent_id: &str, meta: Value) -> Result<()> {
        check_id(agent_id)?;
        self.agent_meta.insert(agent_id.to_owned(), meta);
        Ok(())
    }

    /// Queues a `custom-title` entry.
    pub fn set_title(&mut self, title: &str) {
        let _ = self.append(serde_json::json!({"type": "custom-title", "customTitle": title}));
    }

    /// Queues a `tag` entry (`""` clears the tag).
    pub fn set_tag(&mut self, tag: &str) {
        let _ = self.append(serde_json::json!({"type": "tag", "tag": tag}));
    }

    fn route(&mut self, o: &Map<String, Value>, message: bool) -> Result<&mut Sink> {
        let agent = o.get("agentId").and_then(Value::as_str);
        let sidechain = o.get("isSidechain").and_then(Value::as_bool) == Some(true);
        let ty = o.get("type").and_then(Value::as_str);
        let to_agent = if message {
            sidechain
        } else {
            ty == Some("content-replacement")
        };
        match agent.filter(|_| to_agent) {
            Some(a) => {
                if !self.agents.contains_key(a) {
                    let dirs = [self.session_id.as_str(), "subagents"];
                    let name = format!("agent-{a}.jsonl");
                    let mut sink = Sink::new(&self.project_dir, &dirs, name, false);
                    sink.start(&self.store)?;
                    self.agents.insert(a.to_owned(), sink);
                }
                Ok(self.agents.get_mut(a).expect("just inserted"))
            }
            None => Ok(&mut self.main),
        }
    }

    /// Writes everything queued: one batch per file (journalled, then appended, `fsync`ed;
    /// all or nothing, see `transcript/batch.rs`), then the index catches up with the written
    /// bytes. Entries of a session that has not spoken yet stay queued. Inside
    /// [`SessionWriter::begin_batch`] the entries join the open batch instead and nothing is
    /// written before [`SessionWriter::commit_batch`].
    pub fn flush(&mut self) -> Result<FlushReport> {
        let stamp = Stamp {
            session_id: &self.session_id,
            cwd: &self.opts.cwd,
            version: &self.opts.version,
            git_branch: self.opts.git_branch.as_deref(),
            entrypoint: self.opts.entrypoint.as_deref(),
        };
        let commit = !self.in_batch;
        let mut report = FlushReport::default();
        let mut main_bytes = 0;
        let mut sinks: Vec<(&str, &mut Sink)> = vec![("", &mut self.main)];
        sinks.extend(self.agents.iter_mut().map(|(k, v)| (k.as_str(), v)));
        for (agent, sink) in sinks {
            let done = sink.flush(&self.store, &stamp, self.opts.fsync, commit)?;
            if !sink.main && done.created && done.bytes > 0 {
                let meta = self
                    .agent_meta
                    .get(agent)
                    .cloned()
                    .unwrap_or_else(|| serde_json::json!({"agentType": "general-purpose"}));
                let folder = sink.folder(false)?;
                if let Some(folder) = folder {
                    write_new_file(
                        &folder,
                        &format!("agent-{agent}.meta.json"),
                        &serde_json::to_vec(&meta).unwrap_or_default(),
                    )?;
                }
            }
            if sink.main {
                main_bytes = done.bytes;
            }
            report.bytes += done.bytes;
            report.duplicates.extend(done.duplicates);
            report
                .written
                .extend(done.written.into_iter().map(|u| (sink.path.clone(), u)));
        }
        if main_bytes > 0 {
            if self.carried.queued {
                // The title and tag went out with this write.
                self.carried.written();
            }
            let due = self.carried.due(&self.main.path)?;
            if due {
                self.restate(&mut report)?;
            }
            self.carried.just_stated = due;
        }
        Ok(report)
    }

    /// Starts a batch that spans flushes: each [`SessionWriter::flush`] moves the queued
    /// entries into it (the memory they took is freed; a batch over 8 MiB waits in its journal
    /// beside the transcript), and [`SessionWriter::commit_batch`] writes it whole. The files'
    /// writers' locks are held until then. This is how a batch larger than memory is written
    /// all or nothing (`chainlog append` uses it).
    pub fn begin_batch(&mut self) {
        self.in_batch = true;
    }

    /// Writes the batch begun with [`SessionWriter::begin_batch`] (and what is queued).
    pub fn commit_batch(&mut self) -> Result<FlushReport> {
        self.in_batch = false;
        self.flush()
    }

    /// Drops the batch begun with [`SessionWriter::begin_batch`] and everything queued:
    /// nothing of it is written.
    pub fn abort_batch(&mut self) {
        self.in_batch = false;
        self.main.abort();
        for sink in self.agents.values_mut() {
            sink.abort();
        }
    }

    /// Writes the session's title and tag again (when it has either).
    fn restate(&mut self, report: &mut FlushReport) -> Result<()> {
        let entries = self.carried.entries();
        if entries.is_empty() {
            return Ok(());
        }
        self.append_all(entries)?;
        let more = self.flush()?;
        report.bytes += more.bytes;
        Ok(())
    }

    /// Flushes, then states the title, agent name and tag again at the end of the main file
    /// unless that flush just did: a new session made from another ends as the client's
    /// `--fork-session` file does after its turn (issue 31).
    pub(crate) fn flush_stating_again(&mut self) -> Result<FlushReport> {
        let mut report = self.flush()?;
        if !self.carried.just_stated {
            self.restate(&mut report)?;
        }
        Ok(report)
    }

    /// Removes the message `uuid` from the main transcript (a discarded attempt), atomically
    /// (see `tombstone`). Flushes first. Returns whether a line was removed.
    pub fn remove(&mut self, uuid: &str) -> Result<bool> {
        self.flush()?;
        let store = self.store.clone();
        let removed = tombstone::remove(&store, &mut self.main, uuid)?;
        Ok(removed)
    }

    /// Flushes (committing an open batch) and closes; the session's title and tag are written
    /// again when their last statement has left the window Claude Code reads (see `restate`).
    pub fn close(mut self) -> Result<FlushReport> {
        self.in_batch = false;
        self.flush()
    }
}

impl Drop for SessionWriter {
    /// Best effort: entries still queued are flushed (errors are lost here; call
    /// [`SessionWriter::flush`] or [`SessionWriter::close`] to see them). A batch begun with
    /// [`SessionWriter::begin_batch`] and not committed is dropped.
    fn drop(&mut self) {
        if self.in_batch || std::thread::panicking() {
            self.abort_batch();
        } else {
            let _ = self.flush();
        }
    }
}

/// Creates `name` in `folder` (mode 0600, never through a link) holding `bytes`, unless it
/// exists.
fn write_new_file(
    folder: &crate::transcript::folder::Folder,
    name: &str,
    bytes: &[u8],
) -> Result<()> {
    use std::io::Write;
    match folder.create_new(name, 0o600)? {
        Some(mut f) => f
            .write_all(bytes)
            .map_err(|e| Error::io(folder.join(name), e)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn uuids_and_parents(path: &Path) -> Vec<(String, Option<String>)> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|v| v.get("uuid").is_some())
            .map(|v| {
                let s = |k: &str| v[k].as_str().map(str::to_owned);
                (s("uuid").unwrap(), s("parentUuid"))
            })
            .collect()
    }

    /// A batch a killed writer journalled but never appended is settled when the next writer
    /// opens the session, not at its first flush: a line Claude Code appends in between comes
    /// after the batch, and the writer's next message follows that line.
    #[test]
    fn a_writer_settles_a_killed_batch_when_it_opens() {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("claude/projects/-p");
        std::fs::create_dir_all(&project).unwrap();
        let sidecars = Sidecars::new(tmp.path().join("index"));
        let sid = "5e771ed0-0000-4000-8000-000000000001";
        let path = project.join(format!("{sid}.jsonl"));
        let mut opts = WriterOptions::new("/p");
        opts.fsync = false;
        let user =
            |text: &str| json!({"type": "user", "message": {"role": "user", "content": text}});
        let line = |uuid: &str, parent: &str| {
            format!(
                "{{\"parentUuid\":\"{parent}\",\"isSidechain\":false,\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"x\"}},\"uuid\":\"{uuid}\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"sessionId\":\"{sid}\"}}\n"
            )
        };

        let mut w = SessionWriter::open(&sidecars, &project, sid, opts.clone()).unwrap();
        let first = w.append(user("first")).unwrap().unwrap();
        w.close().unwrap();
        let killed = "6b1e0000-0000-4000-8000-00000000000a";
        let start = std::fs::metadata(&path).unwrap().len();
        crate::transcript::batch::leave_journal(&path, start, line(killed, &first).as_bytes());

        let mut w = SessionWriter::open(&sidecars, &project, sid, opts).unwrap();
        let foreign = "f0e10000-0000-4000-8000-00000000000b";
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut f, line(foreign, killed).as_bytes()).unwrap();
        let ours = w.append(user("ours")).unwrap().unwrap();
        w.close().unwrap();

        assert_eq!(
            uuids_and_parents(&path),
            [
                (first.clone(), None),
                (killed.to_owned(), Some(first)),
                (foreign.to_owned(), Some(killed.to_owned())),
                (ours, Some(foreign.to_owned())),
            ]
        );
    }
}
