//! When the writer states a session's title and tag again.
//!
//! Claude Code's picker reads the title and tag of a session from the last
//! [`CLIENT_TAIL_WINDOW`] bytes of its file (format.md §A6), and re-appends them itself as the
//! session grows. The writer does the same, and only when needed: after a write, the title and
//! tag are stated again when the last statement of each no longer reaches into that window
//! (its line ends before the window begins). A statement's place is learnt by reading the
//! window once (and back to the start of the line it begins inside), then followed by the
//! file's length: a session of many one-message appends gets no new statement until 64 KiB
//! of messages have followed the last one.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// The bytes at the end of a transcript that Claude Code's picker reads for its title and tag.
pub const CLIENT_TAIL_WINDOW: u64 = 64 * 1024;

/// The title, agent name and tag a session carries, and where their last statements end.
#[derive(Debug, Default)]
pub struct Carried {
    pub title: Option<String>,
    /// The `agentName` (Claude Code states it again beside the title).
    pub agent_name: Option<String>,
    pub tag: Option<String>,
    /// A title or tag entry is queued (it goes out with the next main-file write).
    pub queued: bool,
    /// The end offset of the earlier of the last title and tag statements, once known.
    stated_end: Option<u64>,
    /// The last flush ended with them.
    pub just_stated: bool,
}

impl Carried {
    /// The entries that state them again.
    pub fn entries(&self) -> Vec<Value> {
        let mut out = Vec::new();
        if let Some(t) = &self.title {
            out.push(serde_json::json!({"type": "custom-title", "customTitle": t}));
        }
        if let Some(n) = &self.agent_name {
            out.push(serde_json::json!({"type": "agent-name", "agentName": n}));
        }
        if let Some(t) = &self.tag {
            out.push(serde_json::json!({"type": "tag", "tag": t}));
        }
        out
    }

    /// Notes a queued main-file entry of type `ty`.
    pub fn note(&mut self, ty: &str, o: &Map<String, Value>) {
        let text = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_owned);
        match ty {
            "custom-title" => self.title = text("customTitle").filter(|t| !t.is_empty()),
            "agent-name" => self.agent_name = text("agentName").filter(|t| !t.is_empty()),
            "tag" => self.tag = text("tag").filter(|t| !t.is_empty()),
            _ => return,
        }
        self.queued = true;
    }

    /// The queued statements were written: where they end is learnt on the next check.
    pub fn written(&mut self) {
        self.queued = false;
        self.stated_end = None;
    }

    /// Whether the title and tag must be stated again at the end of the transcript at `path`.
    pub fn due(&mut self, path: &Path) -> Result<bool> {
        if self.queued || (self.title.is_none() && self.agent_name.is_none() && self.tag.is_none())
        {
            return Ok(false);
        }
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(Error::io(path, e)),
        };
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        let window_start = len.saturating_sub(CLIENT_TAIL_WINDOW);
        if self.stated_end.is_some_and(|end| end > window_start) {
            return Ok(false);
        }
        self.stated_end = last_statements_end(&file, path, len, self)?;
        Ok(self.stated_end.is_none_or(|end| end <= window_start))
    }
}

/// The end offset of the earlier of the last title and tag statements in the window (the lines
/// ending inside it), when each of the carried values is stated there as it is now.
fn last_statements_end(file: &File, path: &Path, len: u64, c: &Carried) -> Result<Option<u64>> {
    let mut from = len.saturating_sub(CLIENT_TAIL_WINDOW);
    // Back to the start of the line the window begins inside.
    while from > 0 {
        let step = from.min(CLIENT_TAIL_WINDOW);
        let mut b = vec![0u8; step as usize];
        file.read_exact_at(&mut b, from - step)
            .map_err(|e| Error::io(path, e))?;
        match memchr::memrchr(b'\n', &b) {
            Some(i) => {
                from = from - step + i as u64 + 1;
                break;
            }
            None => from -= step,
        }
    }
    let mut bytes = vec![0u8; (len - from) as usize];
    file.read_exact_at(&mut bytes, from)
        .map_err(|e| Error::io(path, e))?;
    let (mut title, mut name, mut tag) = (None, None, None);
    let mut at = from;
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        at += line.len() as u64;
        if !line.ends_with(b"\n") {
            break;
        }
        let is_title = memchr::memmem::find(line, b"\"custom-title\"").is_some();
        let is_name = memchr::memmem::find(line, b"\"agent-name\"").is_some();
        let is_tag = memchr::memmem::find(line, b"\"tag\"").is_some();
        if !is_title && !is_name && !is_tag {
            continue;
        }
        let Some(v) = crate::resume::body::parse_value(line.trim_ascii_end()) else {
            continue;
        };
        match v.get("type").and_then(Value::as_str) {
            Some("custom-title") => {
                title = Some((
                    v.get("customTitle")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    at,
                ));
            }
            Some("agent-name") => {
                let n = v
                    .get("agentName")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                name = Some((n, at));
            }
            Some("tag") => {
                tag = Some((v.get("tag").and_then(Value::as_str).map(str::to_owned), at));
            }
            _ => {}
        }
    }
    let stated = |want: &Option<String>, got: Option<(Option<String>, u64)>| match want {
        None => Some(u64::MAX),
        Some(w) => got
            .filter(|(g, _)| g.as_deref() == Some(w.as_str()))
            .map(|(_, e)| e),
    };
    Ok(
        match (
            stated(&c.title, title),
            stated(&c.agent_name, name),
            stated(&c.tag, tag),
        ) {
            (Some(a), Some(b), Some(c)) => Some(a.min(b).min(c)),
            _ => None,
        },
    )
}
