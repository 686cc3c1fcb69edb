//! One transcript file being appended to: the lock, the tail another process wrote, the
//! parent cursor, dedup, and the single `write` of a batch.
//!
//! # Design
//! - **Files**: opened beneath the project folder without following links
//!   ([`Folder`], `transcript/folder.rs`): a link or a special file where a transcript or its
//!   folders should be is refused, and nothing is created outside the claude dir.
//! - **Lock**: an exclusive `flock` ([`File::lock`]) on the transcript among chainlog writers,
//!   held from the start of a batch to its commit ([`Folder::open_locked`]).
//! - **Foreign appends**: Claude Code appends without any lock. At each flush, bytes past the
//!   end this writer knows are read (only those), their last chain participant becomes the
//!   cursor, and the index catches up on them. A file whose last line is unterminated (another
//!   writer mid-line, or a crash) is waited for briefly; if it stays torn, the batch starts with
//!   a `\n` so no written line is glued onto the fragment (which stays a skipped bad line).
//! - **All or nothing per batch**: the batch is serialised into a [`Batch`] (memory, spilled to
//!   its journal beyond 8 MiB), journalled, then appended on an `O_APPEND` descriptor in writes
//!   that end on line boundaries, then `fsync`ed (unless disabled). A writer killed meanwhile
//!   leaves a journal the next writer or reader settles: see `transcript/batch.rs`. A batch
//!   may span several flushes ([`Sink::flush`] with `commit: false`): memory stays bounded by
//!   the entries queued since the last one.
//! - **Index**: after the write, the index catches up, which reads exactly the appended bytes.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::Seek;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use super::shape::{Stamp, is_message_type, js_numbers, message_line, metadata_line};
use crate::error::{Error, Result};
use crate::id::Id;
use crate::index::Sidecars;
use crate::index::read::lookup::IndexedFile;
use crate::transcript::batch::{Batch, journal_name, settle};
use crate::transcript::folder::Folder;

/// How long a torn last line written by someone else is waited for before it is fenced off.
const TORN_WAIT: Duration = Duration::from_millis(200);

/// An entry waiting for the next flush.
#[derive(Debug, Clone)]
pub struct Pending {
    /// The entry as given, with `uuid`/`timestamp` assigned.
    pub entry: Map<String, Value>,
    /// First entry of an `append_all` batch: the prefix rule restarts here.
    pub batch_start: bool,
}

/// What a flush of one file did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileFlush {
    /// uuids of the messages written, in order.
    pub written: Vec<String>,
    /// uuids skipped because the session already held them.
    pub duplicates: Vec<String>,
    /// Bytes appended.
    pub bytes: u64,
    /// The file was created by this flush.
    pub created: bool,
}

/// One transcript file and what the writer knows about it.
#[derive(Debug)]
pub struct Sink {
    /// The transcript.
    pub path: PathBuf,
    /// The project folder, the folders below it and the file's name: how it is opened.
    base: PathBuf,
    dirs: Vec<String>,
    name: String,
    /// The batch being made, with the file it goes to (locked) while it is open.
    open: Option<Open>,
    /// Main-thread file (dedup applies) or an agent file (never deduped).
    pub main: bool,
    /// Entries waiting for the next flush.
    pub pending: Vec<Pending>,
    index: Option<IndexedFile>,
    /// End of the bytes the cursor and index account for (a line boundary).
    known_len: Option<u64>,
    /// The last chain participant written (the next message's parent).
    pub cursor: Option<String>,
    /// `tool_use` id → uuid of the assistant line holding it.
    tool_uses: HashMap<String, String>,
}

/// A batch in the making: the transcript's folder, the transcript (locked), the bytes.
#[derive(Debug)]
struct Open {
    folder: Folder,
    file: File,
    batch: Batch,
    /// Main-thread uuids in the batch (dedup within it: the index has not seen them).
    uuids: HashSet<String>,
    /// What the batch holds so far.
    out: FileFlush,
    /// The transcript was created by this batch.
    created: bool,
}

fn is_turn(e: &Map<String, Value>) -> bool {
    matches!(
        e.get("type").and_then(Value::as_str),
        Some("user" | "assistant")
    )
}

fn entry_type(e: &Map<String, Value>) -> &str {
    e.get("type").and_then(Value::as_str).unwrap_or("")
}

impl Sink {
    /// A sink for `<base>/<dirs...>/<name>` (nothing is opened until the first flush).
    pub fn new(base: &Path, dirs: &[&str], name: String, main: bool) -> Sink {
        let mut path = base.to_path_buf();
        path.extend(dirs);
        path.push(&name);
        Sink {
            path,
            base: base.to_path_buf(),
            dirs: dirs.iter().map(|d| (*d).to_owned()).collect(),
            name,
            open: None,
            main,
            pending: Vec::new(),
            index: None,
            known_len: None,
            cursor: None,
            tool_uses: HashMap::new(),
        }
    }

    /// The file's name in its folder.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The file's folder, opened beneath the project folder without following links;
    /// `Ok(None)` when it does not exist and `create` is false.
    pub fn folder(&self, create: bool) -> Result<Option<Folder>> {
        let base = match Folder::open(&self.base, create) {
            Ok(f) => f,
            Err(Error::Io { source, .. })
                if !create && source.kind() == std::io::ErrorKind::NotFound =>
            {
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let dirs: Vec<&str> = self.dirs.iter().map(String::as_str).collect();
        base.descend(&dirs, create)
    }

    /// Forgets what is known about the file (after a rewrite): the next flush starts over from
    /// the index's resume view.
    pub fn reset(&mut self) {
        self.known_len = None;
        self.cursor = None;
    }

    /// The index of this file, opened on first use.
    pub fn index(&mut self, store: &Sidecars) -> Result<&mut IndexedFile> {
        if self.index.is_none() {
            self.index = Some(IndexedFile::open(store, &self.path)?);
        }
        Ok(self.index.as_mut().expect("just set"))
    }

    /// Whether the file would be created by a flush now, and may not be yet: a main
    /// transcript appears only with its first user or assistant message (format.md §A4).
    pub fn waiting_to_materialise(&self) -> bool {
        self.main
            && self.open.is_none()
            && !self.path.exists()
            && !self.pending.iter().any(|p| is_turn(&p.entry))
    }

    /// Serialises the pending entries into the file's batch (starting one: lock, settle,
    /// catch up with the file's tail), and with `commit` writes the batch (see the module docs).
    /// Nothing happens while the file may not exist yet. Returns what a commit wrote.
    pub fn flush(
        &mut self,
        store: &Sidecars,
        stamp: &Stamp<'_>,
        fsync: bool,
        commit: bool,
    ) -> Result<FileFlush> {
        if !self.pending.is_empty() && !self.waiting_to_materialise() {
            if self.open.is_none() {
                self.begin(store)?;
            }
            let mut pending = std::mem::take(&mut self.pending);
            if self.open.as_ref().is_some_and(|o| o.created) {
                // Metadata set before the first message is written first (format.md §A4).
                pending.sort_by_key(|p| is_message_type(entry_type(&p.entry)));
            }
            if let Err(e) = self.serialise(store, pending.clone(), stamp) {
                self.pending = pending;
                self.abort();
                return Err(e);
            }
        }
        if !commit {
            return Ok(FileFlush::default());
        }
        let Some(open) = self.open.take() else {
            return Ok(FileFlush::default());
        };
        let Open {
            folder,
            mut file,
            batch,
            out,
            created,
            ..
        } = open;
        if batch.is_empty() {
            // Only duplicates (the prefix rule may have moved the cursor): nothing to write, and
            // `known_len` from `sync_tail` stays right. It must not be taken from the descriptor:
            // an `O_APPEND` file's offset moves only with a write, so it would read 0 here and
            // the next flush would take the whole file for a foreign append.
            return Ok(out);
        }
        let bytes = match batch.commit(&folder, &mut file, fsync) {
            Ok(n) => n,
            Err(e) => {
                self.reset();
                return Err(e);
            }
        };
        if created && fsync {
            // The new directory entry is durable too.
            folder.sync()?;
        }
        let end = file
            .stream_position()
            .map_err(|e| Error::io(&self.path, e))?;
        drop(file);
        self.known_len = Some(end);
        self.index(store)?.catch_up()?;
        Ok(FileFlush {
            bytes,
            created,
            ..out
        })
    }

    /// Drops the batch being made: nothing of it reaches the file.
    pub fn abort(&mut self) {
        if let Some(open) = self.open.take() {
            if open.created && open.file.metadata().is_ok_and(|m| m.len() == 0) {
                // The file this batch created holds nothing: it goes too.
                let _ = open.folder.remove(&self.name);
            }
            open.batch.abort(&open.folder);
            // The cursor moved with the dropped entries.
            self.reset();
        }
        self.pending.clear();
    }

    /// Opens and locks the file, settles a batch a killed writer left, catches up with its
    /// tail and starts a batch.
    fn begin(&mut self, store: &Sidecars) -> Result<()> {
        let folder = self
            .folder(true)?
            .expect("a folder opened with create exists");
        let created = folder.stat(&self.name)?.is_none();
        let mut file = folder
            .open_locked(&self.name, true)?
            .expect("a file opened with create exists");
        settle(&folder, &self.name, &mut file, true)?;
        let fence = self.sync_tail(store, &file)?;
        let len = file.metadata().map_err(|e| Error::io(&self.path, e))?.len();
        let mut batch = Batch::new(&self.name, len);
        if fence {
            batch.push(&folder, b"\n")?;
        }
        self.open = Some(Open {
            folder,
            file,
            batch,
            uuids: HashSet::new(),
            out: FileFlush::default(),
            created,
        });
        Ok(())
    }

    /// Brings the cursor and index up to the file as it is now (under the lock). Returns
    /// whether the file ends in an unterminated line that the batch must fence off.
    fn sync_tail(&mut self, store: &Sidecars, file: &File) -> Result<bool> {
        let waited = std::time::Instant::now();
        loop {
            let len = file.metadata().map_err(|e| Error::io(&self.path, e))?.len();
            match self.known_len {
                Some(k) if k == len => return Ok(false),
                Some(k) if k < len => self.read_foreign(store, file, k, len)?,
                _ => self.start_from(store, file, len)?,
            }
            if self.known_len == Some(len) {
                return Ok(false);
            }
            if waited.elapsed() >= TORN_WAIT {
                // Still torn: fence it off and account for it.
                self.known_len = Some(len + 1);
                return Ok(true);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Takes the session as it is now as the starting point: the cursor is the last message of
    /// its resume view (where a resumed Claude Code continues); later bytes are foreign.
    pub fn start(&mut self, store: &Sidecars) -> Result<()> {
        let Some(folder) = self.folder(false)? else {
            return Ok(());
        };
        // A batch a killed writer left is settled first, so that the cursor starts after it
        // (settled at the first flush instead, it would land after whatever was appended
        // meanwhile, behind this writer's back).
        if folder.stat(&journal_name(&self.name))?.is_some()
            && let Some(mut file) = folder.open_locked(&self.name, false)?
        {
            settle(&folder, &self.name, &mut file, true)?;
        }
        let Some(file) = folder.open_read(&self.name)? else {
            return Ok(());
        };
        let len = file.metadata().map_err(|e| Error::io(&self.path, e))?.len();
        self.start_from(store, &file, len)
    }

    fn start_from(&mut self, store: &Sidecars, file: &File, len: u64) -> Result<()> {
        let idx = self.index(store)?;
        idx.catch_up()?;
        let tip = idx.resume_tip()?;
        self.cursor = tip;
        self.tool_uses.clear();
        self.known_len = Some(complete_len(file, &self.path, 0, len)?);
        Ok(())
    }

    /// Reads the complete lines in `[from, len)` another process appended: the last chain
    /// participant among them becomes the cursor; the index catches up.
    fn read_foreign(&mut self, store: &Sidecars, file: &File, from: u64, len: u64) -> Result<()> {
        let mut bytes = vec![0; (len - from) as usize];
        file.read_exact_at(&mut bytes, from)
            .map_err(|e| Error::io(&self.path, e))?;
        let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        for line in bytes[..complete].split(|&b| b == b'\n') {
            let Some(v) = crate::resume::body::parse_value(line) else {
                continue;
            };
            let Some(o) = v.as_object() else { continue };
            if let (true, Some(u)) = (
                is_message_type(entry_type(o)),
                o.get("uuid").and_then(Value::as_str),
            ) {
                self.cursor = Some(u.to_owned());
                self.note_tool_uses(o, u);
            }
        }
        self.known_len = Some(from + complete as u64);
        self.index(store)?.catch_up()?;
        Ok(())
    }

    fn note_tool_uses(&mut self, e: &Map<String, Value>, uuid: &str) {
        if entry_type(e) != "assistant" {
            return;
        }
        let blocks = e
            .get("message")
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array);
        for b in blocks.into_iter().flatten() {
            if b.get("type").and_then(Value::as_str) == Some("tool_use")
                && let Some(id) = b.get("id").and_then(Value::as_str)
            {
                self.tool_uses.insert(id.to_owned(), uuid.to_owned());
            }
        }
    }

    /// Fills parents, drops duplicates (main thread only) and serialises into the open batch.
    fn serialise(
        &mut self,
        store: &Sidecars,
        pending: Vec<Pending>,
        stamp: &Stamp<'_>,
    ) -> Result<()> {
        let mut line = Vec::new();
        let mut prefix = true;
        for Pending {
            entry: mut e,
            batch_start,
        } in pending
        {
            prefix |= batch_start;
            line.clear();
            if !is_message_type(entry_type(&e)) {
                let mut v = Value::Object(metadata_line(e, stamp.session_id));
                js_numbers(&mut v);
                push_line(&mut line, &v);
                let open = self.open.as_mut().expect("a batch is open");
                open.batch.push(&open.folder, &line)?;
                continue;
            }
            let uuid = e
                .get("uuid")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let sidechain = e.get("isSidechain").and_then(Value::as_bool) == Some(true);
            if self.main && !sidechain {
                let known = self.open.as_ref().is_some_and(|o| o.uuids.contains(&uuid))
                    || self.index(store)?.contains(Id::from_text(&uuid))?;
                if known {
                    if prefix {
                        self.cursor = Some(uuid.clone());
                    }
                    let open = self.open.as_mut().expect("a batch is open");
                    open.out.duplicates.push(uuid);
                    continue;
                }
                let open = self.open.as_mut().expect("a batch is open");
                open.uuids.insert(uuid.clone());
            }
            prefix = false;
            self.fill_parent(&mut e);
            self.note_tool_uses(&e, &uuid);
            self.cursor = Some(uuid.clone());
            let mut v = Value::Object(message_line(e, stamp));
            js_numbers(&mut v);
            push_line(&mut line, &v);
            let open = self.open.as_mut().expect("a batch is open");
            open.batch.push(&open.folder, &line)?;
            open.out.written.push(uuid);
        }
        Ok(())
    }

    /// `parentUuid` (and `logicalParentUuid`, `sourceToolAssistantUUID`) when the caller left
    /// them out (format.md §A4).
    fn fill_parent(&self, e: &mut Map<String, Value>) {
        let cursor = self.cursor.clone().map_or(Value::Null, Value::from);
        let ty = entry_type(e).to_owned();
        if ty == "system" && e.get("subtype").and_then(Value::as_str) == Some("compact_boundary") {
            if !e.contains_key("parentUuid") {
                e.insert("parentUuid".into(), Value::Null);
            }
            if !e.contains_key("logicalParentUuid") {
                e.insert("logicalParentUuid".into(), cursor);
            }
            return;
        }
        if ty == "user" && !e.contains_key("sourceToolAssistantUUID") {
            let source = e
                .get("message")
                .and_then(|m| m.get("content"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
                .find_map(|b| b.get("tool_use_id").and_then(Value::as_str))
                .and_then(|id| self.tool_uses.get(id))
                .cloned();
            if let Some(s) = source {
                e.insert("sourceToolAssistantUUID".into(), s.into());
            }
        }
        if !e.contains_key("parentUuid") {
            let parent = e
                .get("sourceToolAssistantUUID")
                .filter(|_| ty == "user")
                .cloned()
                .unwrap_or(cursor);
            e.insert("parentUuid".into(), parent);
        }
    }
}

/// The end of the last complete line in `[from, len)` of `file`.
fn complete_len(file: &File, path: &Path, from: u64, len: u64) -> Result<u64> {
    if len == from {
        return Ok(len);
    }
    let mut back = 0u64;
    let mut chunk = vec![0u8; 4096];
    while back < len - from {
        let n = (len - from - back).min(chunk.len() as u64);
        let at = len - back - n;
        file.read_exact_at(&mut chunk[..n as usize], at)
            .map_err(|e| Error::io(path, e))?;
        if let Some(i) = chunk[..n as usize].iter().rposition(|&b| b == b'\n') {
            return Ok(at + i as u64 + 1);
        }
        back += n;
    }
    Ok(from)
}

fn push_line(buf: &mut Vec<u8>, v: &Value) {
    serde_json::to_writer(&mut *buf, v).expect("serialising a Value into a Vec cannot fail");
    buf.push(b'\n');
}
