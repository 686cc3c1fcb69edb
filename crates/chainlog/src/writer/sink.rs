//! One transcript file being appended to: the lock, the tail another process wrote, the
//! parent cursor, dedup, and the single `write` of a batch.
//!
//! # Design
//! - **Lock**: an exclusive `flock` ([`File::lock`]) on the transcript among chainlog writers,
//!   held for one flush. After locking, the path is checked to still name the locked inode (a
//!   tombstone rewrite replaces the file by rename); if not, the file is opened again.
//! - **Foreign appends**: Claude Code appends without any lock. At each flush, bytes past the
//!   end this writer knows are read (only those), their last chain participant becomes the
//!   cursor, and the index catches up on them. A file whose last line is unterminated (another
//!   writer mid-line, or a crash) is waited for briefly; if it stays torn, the batch starts with
//!   a `\n` so no written line is glued onto the fragment (which stays a skipped bad line).
//! - **One write per batch**: the batch is serialised into one buffer and appended with one
//!   `write_all` on an `O_APPEND` descriptor, then `fsync`ed (unless disabled): a crash leaves
//!   at most a torn last line.
//! - **Index**: after the write, the index catches up, which reads exactly the appended bytes.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{Seek, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use super::shape::{Stamp, is_message_type, js_numbers, message_line, metadata_line};
use crate::error::{Error, Result};
use crate::index::Store;
use crate::index::lookup::IndexedFile;
use crate::transcript::id::Id;

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
}

/// One transcript file and what the writer knows about it.
#[derive(Debug)]
pub struct Sink {
    /// The transcript.
    pub path: PathBuf,
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

/// Creates `dir` and its missing parents with mode 0700.
pub fn create_dirs(dir: &Path) -> Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| Error::io(dir, e))
}

/// Opens `path` for appending (creating it 0600) and takes the writers' lock on it.
pub fn open_locked(path: &Path) -> Result<File> {
    loop {
        let f = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        f.lock().map_err(|e| Error::io(path, e))?;
        let held = f.metadata().map_err(|e| Error::io(path, e))?;
        match std::fs::metadata(path) {
            Ok(now) if now.dev() == held.dev() && now.ino() == held.ino() => return Ok(f),
            // Replaced (a rewrite renamed a new file in) or removed: lock the file there now.
            _ => {}
        }
    }
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
    /// A sink for `path` (nothing is opened until the first flush).
    pub fn new(path: PathBuf, main: bool) -> Sink {
        Sink {
            path,
            main,
            pending: Vec::new(),
            index: None,
            known_len: None,
            cursor: None,
            tool_uses: HashMap::new(),
        }
    }

    /// Forgets what is known about the file (after a rewrite): the next flush starts over from
    /// the index's resume view.
    pub fn reset(&mut self) {
        self.known_len = None;
        self.cursor = None;
    }

    /// The index of this file, opened on first use.
    pub fn index(&mut self, store: &Store) -> Result<&mut IndexedFile> {
        if self.index.is_none() {
            self.index = Some(IndexedFile::open(store, &self.path)?);
        }
        Ok(self.index.as_mut().expect("just set"))
    }

    /// Whether the file would be created by a flush now, and may not be yet: a main
    /// transcript appears only with its first user or assistant message (format.md §A4).
    pub fn waiting_to_materialise(&self) -> bool {
        self.main && !self.path.exists() && !self.pending.iter().any(|p| is_turn(&p.entry))
    }

    /// Writes the pending entries (one `write`), or nothing if the file may not exist yet.
    pub fn flush(&mut self, store: &Store, stamp: &Stamp<'_>, fsync: bool) -> Result<FileFlush> {
        if self.pending.is_empty() || self.waiting_to_materialise() {
            return Ok(FileFlush::default());
        }
        let created = !self.path.exists();
        if let Some(dir) = self.path.parent() {
            create_dirs(dir)?;
        }
        let mut file = open_locked(&self.path)?;
        let fence = self.sync_tail(store, &file)?;
        let mut pending = std::mem::take(&mut self.pending);
        if created {
            // Metadata set before the first message is written first (format.md §A4).
            pending.sort_by_key(|p| is_message_type(entry_type(&p.entry)));
        }
        let mut buf = Vec::new();
        if fence {
            buf.push(b'\n');
        }
        let out = match self.serialise(store, pending.clone(), stamp, &mut buf) {
            Ok(out) => out,
            Err(e) => {
                self.pending = pending;
                return Err(e);
            }
        };
        if buf.is_empty() {
            // Only duplicates (the prefix rule may have moved the cursor): nothing to write, and
            // `known_len` from `sync_tail` stays right. It must not be taken from the descriptor:
            // an `O_APPEND` file's offset moves only with a write, so it would read 0 here and
            // the next flush would take the whole file for a foreign append.
            return Ok(out);
        }
        if let Err(e) = file
            .write_all(&buf)
            .and_then(|()| if fsync { file.sync_data() } else { Ok(()) })
        {
            self.pending = pending;
            self.reset();
            return Err(Error::io(&self.path, e));
        }
        if created
            && fsync
            && let Some(dir) = self.path.parent()
        {
            // The new directory entry is durable too.
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| Error::io(dir, e))?;
        }
        let end = file
            .stream_position()
            .map_err(|e| Error::io(&self.path, e))?;
        self.known_len = Some(end);
        self.index(store)?.catch_up()?;
        Ok(FileFlush {
            bytes: buf.len() as u64,
            ..out
        })
    }

    /// Brings the cursor and index up to the file as it is now (under the lock). Returns
    /// whether the file ends in an unterminated line that the batch must fence off.
    fn sync_tail(&mut self, store: &Store, file: &File) -> Result<bool> {
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
    pub fn start(&mut self, store: &Store) -> Result<()> {
        let file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Error::io(&self.path, e)),
        };
        let len = file.metadata().map_err(|e| Error::io(&self.path, e))?.len();
        self.start_from(store, &file, len)
    }

    fn start_from(&mut self, store: &Store, file: &File, len: u64) -> Result<()> {
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
    fn read_foreign(&mut self, store: &Store, file: &File, from: u64, len: u64) -> Result<()> {
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

    /// Fills parents, drops duplicates (main thread only) and serialises into `buf`.
    fn serialise(
        &mut self,
        store: &Store,
        pending: Vec<Pending>,
        stamp: &Stamp<'_>,
        buf: &mut Vec<u8>,
    ) -> Result<FileFlush> {
        let mut out = FileFlush::default();
        let mut in_batch: HashSet<String> = HashSet::new();
        let mut prefix = true;
        for Pending {
            entry: mut e,
            batch_start,
        } in pending
        {
            prefix |= batch_start;
            if !is_message_type(entry_type(&e)) {
                let mut v = Value::Object(metadata_line(e, stamp.session_id));
                js_numbers(&mut v);
                push_line(buf, &v);
                continue;
            }
            let uuid = e
                .get("uuid")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let sidechain = e.get("isSidechain").and_then(Value::as_bool) == Some(true);
            if self.main && !sidechain {
                let known = in_batch.contains(&uuid)
                    || self.index(store)?.contains(Id::from_text(&uuid))?;
                if known {
                    if prefix {
                        self.cursor = Some(uuid.clone());
                    }
                    out.duplicates.push(uuid);
                    continue;
                }
                in_batch.insert(uuid.clone());
            }
            prefix = false;
            self.fill_parent(&mut e);
            self.note_tool_uses(&e, &uuid);
            self.cursor = Some(uuid.clone());
            let mut v = Value::Object(message_line(e, stamp));
            js_numbers(&mut v);
            push_line(buf, &v);
            out.written.push(uuid);
        }
        Ok(out)
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
