//! Errors, one enum per public boundary, joined in [`Error`].
//!
//! Every problem with a transcript's content carries a [`Position`] (file, line, byte
//! offset). Content problems inside a transcript (bad lines) are not errors: they are
//! recorded and reported beside the answer.

use std::fmt;
use std::path::PathBuf;

use crate::id::Id;

/// Where in a transcript something is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    /// The transcript file.
    pub path: PathBuf,
    /// 1-based line number.
    pub line: u64,
    /// Byte offset of the line start.
    pub byte_offset: u64,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{} (byte {})",
            self.path.display(),
            self.line,
            self.byte_offset
        )
    }
}

/// Anything chainlog can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// No claude dir was given and none can be found.
    #[error("no Claude config directory: pass --claude-dir, or set CLAUDE_CONFIG_DIR or HOME")]
    NoClaudeDir,
    /// A transcript path that is not a file.
    #[error("{}: no such transcript file", path.display())]
    NoTranscript {
        /// The path as given.
        path: PathBuf,
    },
    /// A path given as a transcript that is something else.
    #[error("{}: not a transcript file ({what})", path.display())]
    NotATranscript {
        /// The path as given.
        path: PathBuf,
        /// What it is.
        what: &'static str,
    },
    /// A `resume` argument that names no session, agent or title.
    #[error("no session, agent or title matches {arg:?}")]
    NoMatch {
        /// The argument as given.
        arg: String,
    },
    /// A transcript without a message to resume (empty, or metadata only).
    #[error("{}: no message to resume", path.display())]
    NoMessage {
        /// The transcript.
        path: PathBuf,
    },
    /// A message asked for by id (`--at`) that is not on the chosen chain.
    #[error("{}: message {id} is not on the chosen chain", path.display())]
    NotOnChain {
        /// The transcript.
        path: PathBuf,
        /// The id as given.
        id: String,
    },
    /// A message asked for by id (a requested leaf) that is not a live message of the
    /// transcript.
    #[error("{}: {leaf}", path.display())]
    UnknownLeaf {
        /// The transcript.
        path: PathBuf,
        /// The id and its name.
        leaf: UnknownLeaf,
    },
    /// A title or id that names several sessions or agents; the candidates are listed.
    #[error("{what} matches several sessions:\n  {}", candidates.join("\n  "))]
    Ambiguous {
        /// What was looked up.
        what: String,
        /// One line per match (id and path).
        candidates: Vec<String>,
    },
    /// An id given by a user or an entry that is not an id: empty, longer than 128 bytes,
    /// or holding anything but ASCII letters, digits, `-` and `_` (so never a path, a dot
    /// name or a control character).
    #[error("refusing id {id:?}: {reason}")]
    InvalidId {
        /// The id as given.
        id: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A transcript line the operation needed could not be used.
    #[error("{position}: {reason}")]
    BadEntry {
        /// Where.
        position: Position,
        /// What is wrong.
        reason: String,
    },
    /// The transcript changed under a read in a way that made the answer unsafe.
    #[error("{}: the file changed while it was read; retry", path.display())]
    Changed {
        /// The file.
        path: PathBuf,
    },
    /// An entry given to the writer that cannot be written (`index`: 0-based in its batch).
    #[error("entry {index}: {reason}")]
    InvalidEntry {
        /// Position of the entry in the batch given to the writer.
        index: usize,
        /// What is wrong.
        reason: String,
    },
    /// A write that would leave the claude dir or replace what it must not: a link where a
    /// writer opens a file or folder, a file that is not a regular file, an output path that is
    /// a transcript.
    #[error("refusing to write {}: {reason}", path.display())]
    Refused {
        /// The path as it would have been written.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The sync remote failed, or holds what this machine cannot use.
    #[error("remote {remote}: {fault}")]
    Remote {
        /// The remote as given (`s3://…`, `file://…`).
        remote: String,
        /// What went wrong.
        fault: RemoteFault,
    },
    /// The index sidecar failed; `source` says whether it is damage or a storage failure.
    #[error("index {}: {source}", path.display())]
    Index {
        /// The index file (or the transcript whose rows were read).
        path: PathBuf,
        /// What went wrong.
        source: IndexFault,
    },
}

/// Why a sync remote could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteFault {
    /// Not a remote chainlog can reach.
    #[error("{0}")]
    BadUrl(String),
    /// The object store answered with an error (after its retries).
    #[error(transparent)]
    Store(Box<dyn std::error::Error + Send + Sync>),
    /// The remote's objects are encrypted and no key was given.
    #[error("its objects are encrypted: give the key with --key-file")]
    NeedsKey,
    /// The key given does not open the remote's objects.
    #[error("the key does not open its objects (another key wrote them)")]
    WrongKey,
    /// A key was given but the remote holds plaintext.
    #[error("it holds plaintext objects; a key cannot be added to a remote already in use")]
    Plaintext,
    /// An object that is not what its name says.
    #[error("damaged object: {0}")]
    Damaged(&'static str),
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// This error with the id the caller asked for as `text` named `text`: a transcript cannot
    /// name an id it does not hold, and the bytes of a non-UUID id are a hash.
    #[must_use]
    pub fn name_requested(mut self, text: &str) -> Error {
        if let Error::UnknownLeaf { leaf, .. } = &mut self
            && leaf.id == Id::from_text(text)
        {
            text.clone_into(&mut leaf.name);
        }
        self
    }

    /// The process exit code for this error (format.md §B3: 1 not found, 2 usage or data).
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::NoClaudeDir
            | Error::NoTranscript { .. }
            | Error::NotATranscript { .. }
            | Error::NoMatch { .. }
            | Error::NoMessage { .. }
            | Error::NotOnChain { .. }
            | Error::UnknownLeaf { .. } => 1,
            Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => 1,
            _ => 2,
        }
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The longest id accepted (Claude Code's are 36-character UUIDs and agent ids of a few dozen).
pub const MAX_ID_LEN: usize = 128;

/// The one rule for ids that name files or enter a transcript (format.md §B5): 1 to
/// 128 ASCII letters, digits, `-` or `_`. Every id Claude Code writes (UUIDs, agent
/// ids such as `a4e3ca2` or `aprompt_suggestion-1a2b`) passes; a path, a dot name, a newline or
/// any other character does not.
pub fn check_id(id: &str) -> Result<()> {
    let reason = if id.is_empty() {
        "it is empty"
    } else if id.len() > MAX_ID_LEN {
        "it is longer than 128 characters"
    } else if id.contains("..") {
        "it contains `..`"
    } else if id.contains('/') || id.contains('\\') {
        "it contains a path separator"
    } else if id.contains('\0') {
        "it contains a NUL byte"
    } else if id.chars().any(char::is_control) {
        "it contains a control character"
    } else if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        "ids hold only ASCII letters, digits, `-` and `_`"
    } else {
        return Ok(());
    };
    Err(Error::InvalidId {
        id: id.to_owned(),
        reason,
    })
}

/// A requested leaf that is not a live message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("message {name} is not in the transcript (or was removed by a compaction or snip)")]
pub struct UnknownLeaf {
    /// The requested id.
    pub id: Id,
    /// Its text: the transcript's when it names the id, else the UUID form of the bytes (for a
    /// non-UUID id a hash: the caller that has the text it asked for names it instead, see
    /// [`crate::Error::name_requested`]).
    pub name: String,
}

/// Why the index could not answer: its storage failed, or a stored value is damaged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexFault {
    /// redb failed.
    #[error(transparent)]
    Storage(#[from] redb::Error),
    /// A stored value or key does not decode (or a row it names is missing).
    #[error("damaged {table} entry: {what}")]
    Damaged {
        /// The table.
        table: &'static str,
        /// Which entry, and what is wrong.
        what: String,
    },
    /// Another process has held the sidecar's lock for longer than chainlog waits (a stopped
    /// process holding a write transaction, or a database redb reports as open elsewhere).
    #[error("busy: another process has held its lock for more than {:.1} s (stopped?)", waited.as_secs_f64())]
    Busy {
        /// How long chainlog waited.
        waited: std::time::Duration,
    },
    /// The sidecar's folder or file could not be created or replaced.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The full-text search index (tantivy) failed.
    #[error("search index: {0}")]
    Search(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl From<redb::StorageError> for IndexFault {
    fn from(e: redb::StorageError) -> Self {
        IndexFault::Storage(e.into())
    }
}

impl From<redb::TableError> for IndexFault {
    fn from(e: redb::TableError) -> Self {
        IndexFault::Storage(e.into())
    }
}

impl From<redb::DatabaseError> for IndexFault {
    fn from(e: redb::DatabaseError) -> Self {
        IndexFault::Storage(e.into())
    }
}

impl From<redb::TransactionError> for IndexFault {
    fn from(e: redb::TransactionError) -> Self {
        IndexFault::Storage(e.into())
    }
}

impl From<redb::CommitError> for IndexFault {
    fn from(e: redb::CommitError) -> Self {
        IndexFault::Storage(e.into())
    }
}

impl From<redb::CompactionError> for IndexFault {
    fn from(e: redb::CompactionError) -> Self {
        IndexFault::Storage(e.into())
    }
}

impl From<std::convert::Infallible> for IndexFault {
    fn from(never: std::convert::Infallible) -> Self {
        match never {}
    }
}

impl IndexFault {
    /// A damaged entry of `table`.
    pub fn damaged(table: &'static str, what: impl Into<String>) -> IndexFault {
        IndexFault::Damaged {
            table,
            what: what.into(),
        }
    }

    /// Whether the fault is damage (rebuild and retry) rather than a storage failure.
    pub fn is_damage(&self) -> bool {
        matches!(self, IndexFault::Damaged { .. })
    }
}

/// `Result` with [`IndexFault`].
pub type Fault<T> = Result<T, IndexFault>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_like_ids_are_refused() {
        let long = "a".repeat(MAX_ID_LEN + 1);
        for bad in [
            "../x", "a/b", "a\\b", "a\0b", "", "..", ".", "a\nb", "a b", "a.b", "é", &long,
        ] {
            let e = check_id(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}");
            assert!(e.to_string().starts_with("refusing id"), "{e}");
        }
        assert!(check_id("4a1f0c2e-0000-4000-8000-000000000001").is_ok());
        assert!(check_id("aprompt_suggestion-1a2b").is_ok());
    }
}

/// A catch-up failure: the index (retry or rebuild) or the transcript (report).
#[derive(Debug)]
pub enum IngestError {
    /// Reading the transcript failed.
    Io(Error),
    /// The index failed.
    Db(redb::Error),
    /// A stored value does not decode: the index is damaged.
    Damaged,
}

impl IngestError {
    /// A fault while re-deriving: storage failures are retried, damage rebuilds the index.
    pub fn from_fault(e: IndexFault) -> Self {
        match e {
            IndexFault::Storage(e) => IngestError::Db(e),
            _ => IngestError::Damaged,
        }
    }
}

impl<E: Into<redb::Error>> From<E> for IngestError {
    fn from(e: E) -> Self {
        IngestError::Db(e.into())
    }
}
