//! The remote's layout: object names and what the objects hold.
//!
//! ```text
//! <prefix>/chainlog-sync.json               the remote's marker: format, encrypted or not
//! <prefix>/m/<machine>/s/<file>/<head>      a segment: bytes a machine appended to a file
//! <prefix>/m/<machine>/b/<file>/<hash>      a whole small file (not a transcript)
//! <prefix>/m/<machine>/x/<seq>              what changed in one push (a manifest delta)
//! <prefix>/m/<machine>/f/<seq>              every file as of delta <seq> (a snapshot)
//! ```
//! `<machine>` is a random id; `<file>` a hash of the file's path below its project folder
//! (`<session>.jsonl`, `<session>/subagents/agent-<id>.jsonl`); `<head>` the chain hash after
//! the segment: `head = H(prev_head, bytes)`, starting from `H("start", file)`. A segment
//! names the segment before it (`prev`, and the machine that wrote it): a reader walks back
//! from a head to a hash it has. Each machine writes only below `m/<its id>/`, and never the
//! same name twice with other bytes: no locks, no conditional writes.

use serde::{Deserialize, Serialize};

use super::seal::Seal;

/// The remote's format version.
pub const FORMAT: u32 = 1;

/// The marker object's name.
pub const MARKER: &str = "chainlog-sync.json";

/// The largest segment: a longer growth is pushed as several (memory stays bounded by one).
pub const SEGMENT_MAX: u64 = 8 << 20;

/// A segment or whole file decompressed is at most this large (a line longer than
/// [`SEGMENT_MAX`] makes a segment of its own).
pub const OBJECT_MAX: usize = 1 << 30;

/// The marker: a remote in one format, with or without a key.
#[derive(Debug, Serialize, Deserialize)]
pub struct Marker {
    /// [`FORMAT`].
    pub chainlog_sync: u32,
    /// Whether objects are encrypted.
    pub encrypted: bool,
    /// With a key: a keyed hash of a constant, so that another key is refused before anything
    /// is written (a marker without it, of an older chainlog, is checked by the first object
    /// read instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_check: Option<String>,
}

/// What [`Marker::key_check`] holds for `seal`.
pub fn key_check(seal: &super::seal::Seal) -> Option<String> {
    seal.encrypted()
        .then(|| seal.hash(&[b"chainlog-sync key check"]))
}

/// Where a project came from, so that a machine can place it among its own.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Project {
    /// The project folder's name (the key Claude Code derives from the working directory).
    pub key: String,
    /// The working directory its sessions were started in.
    pub cwd: Option<String>,
    /// The URL of that directory's git `origin`, when it is a repository.
    pub git: Option<String>,
}

/// One file as a machine has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The file's id (a hash of `rel`).
    pub id: String,
    /// The path below the project folder.
    pub rel: String,
    /// The project.
    pub project: Project,
    /// Bytes.
    pub len: u64,
    /// Chain hash after the last segment (a whole file: its hash).
    pub head: String,
    /// The machine that wrote the object named by `head`.
    pub owner: String,
    /// A whole file (`b/`), not a transcript (`s/`).
    pub blob: bool,
    /// What a listing shows of a session's transcript (`ls --remote` reads no segment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facts: Option<Facts>,
}

/// A session as a listing shows it, carried in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Facts {
    /// The title `ls` shows.
    pub title: String,
    /// The time of the last message.
    pub modified: Option<String>,
    /// Messages on the resume view.
    pub messages: u64,
}

/// A manifest delta or snapshot.
#[derive(Debug, Serialize, Deserialize)]
pub struct Manifest {
    /// The machine.
    pub machine: String,
    /// Its sequence number.
    pub seq: u64,
    /// The files that changed (a snapshot: all of them).
    pub entries: Vec<Entry>,
}

/// What a segment says of itself (before its bytes).
#[derive(Debug, Serialize, Deserialize)]
pub struct SegmentHeader {
    /// The file's path below its project folder.
    pub rel: String,
    /// Where in the file the segment starts.
    pub start: u64,
    /// The chain hash before it.
    pub prev: String,
    /// The machine that wrote the segment before it (`None`: it is the first).
    pub prev_owner: Option<String>,
}

/// The name of a sequence number (sorts as the number).
pub fn seq_name(seq: u64) -> String {
    format!("{seq:016x}")
}

/// The file id of `rel`.
pub fn file_id(seal: &Seal, rel: &str) -> String {
    seal.hash(&[b"file", rel.as_bytes()])[..32].to_owned()
}

/// The chain hash of an empty file `id`.
pub fn chain_start(seal: &Seal, id: &str) -> String {
    seal.hash(&[b"start", id.as_bytes()])
}

/// The chain hash after appending `bytes` to a file whose hash was `prev`.
pub fn chain_next(seal: &Seal, prev: &str, bytes: &[u8]) -> String {
    seal.hash(&[prev.as_bytes(), bytes])
}

/// The name of a segment.
pub fn segment_name(machine: &str, id: &str, head: &str) -> String {
    format!("m/{machine}/s/{id}/{head}")
}

/// The name of a whole file.
pub fn blob_name(machine: &str, id: &str, hash: &str) -> String {
    format!("m/{machine}/b/{id}/{hash}")
}

/// A segment's plaintext: the header's length (4 bytes, little-endian), the header, the bytes.
pub fn segment_bytes(header: &SegmentHeader, bytes: &[u8]) -> Vec<u8> {
    let h = serde_json::to_vec(header).expect("a header serialises");
    let len = u32::try_from(h.len()).expect("a header is short");
    [&len.to_le_bytes()[..], &h, bytes].concat()
}

/// Splits a segment's plaintext into its header and bytes.
pub fn parse_segment(plain: &[u8]) -> Option<(SegmentHeader, &[u8])> {
    let len = u32::from_le_bytes(plain.get(..4)?.try_into().ok()?) as usize;
    let header = serde_json::from_slice(plain.get(4..4 + len)?).ok()?;
    Some((header, &plain[4 + len..]))
}

/// Whether `rel` is a path chainlog syncs: a session's transcript `<id>.jsonl` or a file below
/// its folder `<id>/…`, every component a plain name (never `..`, a dot name or a separator),
/// so a path from the remote never leaves the project folder.
pub fn valid_rel(rel: &str) -> bool {
    let parts: Vec<&str> = rel.split('/').collect();
    let plain = |p: &str| {
        !p.is_empty()
            && !p.starts_with('.')
            && p.len() <= 255
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    };
    parts.iter().all(|p| plain(p))
        && match parts.as_slice() {
            [one] => one
                .strip_suffix(".jsonl")
                .is_some_and(|id| crate::error::check_id(id).is_ok()),
            [session, ..] => crate::error::check_id(session).is_ok(),
            [] => false,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_session_files_are_synced_paths() {
        for ok in [
            "0b0e3a4c-5f0e-4c4e-9d2a-7a1f6f2b9c01.jsonl",
            "0b0e3a4c-5f0e-4c4e-9d2a-7a1f6f2b9c01/subagents/agent-a1.jsonl",
            "0b0e3a4c-5f0e-4c4e-9d2a-7a1f6f2b9c01/subagents/agent-a1.meta.json",
        ] {
            assert!(valid_rel(ok), "{ok}");
        }
        for bad in [
            "",
            "../x.jsonl",
            "a/../../etc/passwd",
            "/etc/passwd",
            "s/.hidden",
            "s//x",
            "notes.txt",
            "s/sub\\x",
        ] {
            assert!(!valid_rel(bad), "{bad}");
        }
    }

    #[test]
    fn a_segment_reads_back() {
        let h = SegmentHeader {
            rel: "s.jsonl".into(),
            start: 7,
            prev: "p".into(),
            prev_owner: None,
        };
        let b = segment_bytes(&h, b"{}\n");
        let (h2, bytes) = parse_segment(&b).unwrap();
        assert_eq!(
            (h2.start, h2.rel.as_str(), bytes),
            (7, "s.jsonl", &b"{}\n"[..])
        );
        assert!(parse_segment(&b[..5]).is_none());
    }
}
