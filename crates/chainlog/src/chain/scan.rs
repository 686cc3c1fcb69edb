//! The full scan: every line of one transcript, parsed into rows (format.md §A5 steps 1–2, 4).
//!
//! This is the plain reference reader. It reads the whole file once, keeps one compact
//! [`MessageRow`] per message (never the bodies), merges metadata as it goes, and records
//! every line it could not use with its position. It never fails on content; only I/O errors
//! end it.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::id::{Id, IdNames};
use crate::transcript::envelope::{Entry, Kind, LineProblem, MessageHead, parse_framed};
use crate::transcript::frame::{FrameSummary, Framer, Line, LinePos};
use crate::transcript::metadata::Metadata;
use crate::transcript::usage::UsageTally;

/// One message of the map `uuid → entry` (format.md §A5 step 2).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MessageRow {
    /// The parsed envelope (of the last line written with this uuid).
    pub head: MessageHead,
    /// Where that line is.
    pub pos: LinePos,
}

/// A line that could not be used, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BadLine {
    /// Where it is.
    pub pos: LinePos,
    /// What is wrong with it.
    pub problem: LineProblem,
}

/// Everything a full scan of one transcript knows.
#[derive(Debug, Clone, Default)]
pub struct Transcript {
    /// The file, when read from one.
    pub path: Option<PathBuf>,
    /// Messages in map order: a duplicate uuid replaces the value but keeps the first position.
    pub rows: Vec<MessageRow>,
    /// Legacy progress entries: uuid → their own `parentUuid`.
    pub progress: HashMap<Id, Option<Id>>,
    /// Merged metadata.
    pub metadata: Metadata,
    /// Lines skipped, with the reason, and kept lines with fields that could not be read
    /// ([`LineProblem::Fields`]).
    pub bad_lines: Vec<BadLine>,
    /// Lines that parsed only after a lossy repair (lone surrogate escapes, invalid UTF-8).
    pub repaired: Vec<LinePos>,
    /// Texts of ids that are not UUIDs.
    pub names: IdNames,
    /// Framing facts: complete length, line count, torn tail.
    pub frame: FrameSummary,
    /// uuids written more than once.
    pub duplicates: Vec<Id>,
    /// Token usage of the file's API responses (every branch; see [`UsageTally`]).
    pub usage: UsageTally,
    index: HashMap<Id, usize>,
}

impl Transcript {
    /// Scans a transcript file.
    pub fn open(path: &Path) -> io::Result<Transcript> {
        let file = File::open(path)?;
        let mut t = Transcript::scan_reader(file)?;
        t.path = Some(path.to_path_buf());
        Ok(t)
    }

    /// Scans transcript bytes from a reader.
    pub fn scan_reader<R: Read>(reader: R) -> io::Result<Transcript> {
        let mut t = Transcript::default();
        t.frame = Framer::new().frame_reader(reader, |line| t.push(&line))?;
        Ok(t)
    }

    /// Scans transcript bytes held in memory.
    pub fn scan_bytes(bytes: &[u8]) -> Transcript {
        let mut t = Transcript::default();
        t.frame = Framer::new().frame_slice(bytes, |line| t.push(&line));
        t
    }

    /// The row of a message by uuid.
    pub fn row(&self, id: Id) -> Option<&MessageRow> {
        self.index.get(&id).map(|&i| &self.rows[i])
    }

    /// Adds one framed line (in file order).
    fn push(&mut self, line: &Line<'_>) {
        let pos = line.pos;
        let mut parsed = parse_framed(line, &mut self.names);
        if parsed.repaired {
            self.repaired.push(pos);
        }
        if let Some(problem) = parsed.note_problem() {
            self.bad_lines.push(BadLine { pos, problem });
        }
        if let (Some(usage), Ok(Entry::Message(head))) = (&parsed.usage, &parsed.entry) {
            self.usage.add(response_key(head), head.timestamp, usage);
        }
        match parsed.entry {
            Err(problem) => self.bad_lines.push(BadLine { pos, problem }),
            Ok(Entry::Meta(meta)) => self.metadata.add(&meta, pos),
            Ok(Entry::Message(head)) if head.kind == Kind::Progress => {
                self.progress.insert(head.uuid, head.parent);
            }
            Ok(Entry::Message(head)) => {
                if head
                    .flags
                    .has(crate::transcript::envelope::Flags::COMPACT_BOUNDARY)
                {
                    self.metadata.on_compact_boundary();
                }
                let uuid = head.uuid;
                let row = MessageRow { head, pos };
                if let Some(&i) = self.index.get(&uuid) {
                    self.duplicates.push(uuid);
                    self.rows[i] = row;
                } else {
                    self.index.insert(uuid, self.rows.len());
                    self.rows.push(row);
                }
            }
        }
    }
}

/// What identifies a line's API response: the hash of its `message.id`, else (no id to
/// deduplicate by) a hash of its uuid, so a line written twice still counts once.
pub fn response_key(head: &MessageHead) -> u64 {
    head.message_id
        .unwrap_or_else(|| xxhash_rust::xxh3::xxh3_64(&head.uuid.0) ^ 0x9e37_79b9_7f4a_7c15)
}
