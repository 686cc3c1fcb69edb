//! What this machine knows of one remote: its own id there, what it pushed, what it folded of
//! the others' manifests, the forks it made, the path maps the user gave. One JSON file per
//! remote in the index folder (0600), replaced atomically after each sync; losing it costs a
//! re-upload under a new machine id, never a wrong answer (every pull checks the local bytes).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::format::{Entry, Project};
use crate::error::{Error, Result};

/// Hashes kept per file by [`State::compact`].
pub const KEPT_HASHES: usize = 256;

/// A local file's place in its chain.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileState {
    /// [`Entry::id`].
    pub id: String,
    /// The project it is in here.
    pub project: Project,
    /// Bytes covered by the chain.
    pub len: u64,
    /// Chain hash at `len`.
    pub head: String,
    /// Who wrote the object named by `head` (`None`: nothing yet).
    pub owner: Option<String>,
    /// Every segment boundary: offset and chain hash, ascending (the first is `0`).
    pub boundaries: Vec<(u64, String)>,
    /// Other machines' heads whose bytes the file holds at these offsets under another chain
    /// (the same bytes pushed twice, by a sync killed before it saved its state).
    #[serde(default)]
    pub contained: Vec<(u64, String)>,
    /// Where the last segment starts and the chain hash before it: its bytes are checked
    /// against `head` before the file's growth is pushed (a file rewritten since is not
    /// chained onto).
    #[serde(default)]
    pub tail: Option<(u64, String)>,
    /// A whole file's size and modification time when its hash was taken: unchanged, it is
    /// not read again.
    #[serde(default)]
    pub stamp: Option<(u64, i128)>,
    /// What the last published entry said of the session (kept for snapshots).
    #[serde(default)]
    pub facts: Option<super::format::Facts>,
    /// A whole file, not a transcript.
    pub blob: bool,
    /// The head last published in this machine's manifest.
    pub published: Option<String>,
    /// A fork sync wrote (another machine's continuation): not pushed while it holds only
    /// what sync wrote (this many bytes).
    pub sync_fork_len: Option<u64>,
}

impl FileState {
    /// A file nothing of which is synced yet: chain hash `start`, no boundary but `0`.
    pub fn empty(id: String, start: String, project: Project, blob: bool) -> FileState {
        FileState {
            id,
            project,
            len: 0,
            head: start.clone(),
            owner: None,
            boundaries: vec![(0, start)],
            contained: Vec::new(),
            tail: None,
            stamp: None,
            facts: None,
            blob,
            published: None,
            sync_fork_len: None,
        }
    }
}

/// Another machine's files, folded from its manifests.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MachineState {
    /// The last manifest folded.
    pub seq: Option<u64>,
    /// Its files by id.
    pub entries: BTreeMap<String, Entry>,
}

/// A continuation of another machine kept as a session of its own.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ForkState {
    /// The session written here.
    pub session: String,
    /// The session it continues (its `requestSessionId`).
    #[serde(default)]
    pub source: String,
    /// Its local path below the projects folder.
    pub local: String,
    /// Chain hashes of the other machine's file already copied into it.
    pub heads: Vec<String>,
}

/// Everything sync keeps for one remote.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct State {
    /// This machine's id on the remote.
    pub machine: String,
    /// The next manifest's sequence number.
    pub next_seq: u64,
    /// The last snapshot's sequence number.
    pub last_snapshot: Option<u64>,
    /// `--map FROM=TO` given so far (path prefixes), newest last.
    pub maps: Vec<(String, String)>,
    /// Local files by path below the projects folder (`<key>/<rel>`).
    pub files: BTreeMap<String, FileState>,
    /// Other machines by id.
    pub machines: BTreeMap<String, MachineState>,
    /// Forks by `<machine>/<file id>/<hash where the continuations part>`.
    pub forks: BTreeMap<String, ForkState>,
}

impl State {
    fn new() -> State {
        State {
            machine: uuid::Uuid::new_v4().simple().to_string(),
            next_seq: 0,
            last_snapshot: None,
            maps: Vec::new(),
            files: BTreeMap::new(),
            machines: BTreeMap::new(),
            forks: BTreeMap::new(),
        }
    }

    /// Bounds what grows with every sync: each file keeps its first and its last
    /// [`KEPT_HASHES`] boundaries (and as many contained heads, fork heads). An older hash is
    /// only a place where a walk back may stop sooner; without it the walk goes on to an older
    /// one (more segments read), never to another answer.
    pub fn compact(&mut self) {
        fn keep_last<T>(v: &mut Vec<T>, n: usize) {
            if v.len() > n {
                v.drain(..v.len() - n);
            }
        }
        for st in self.files.values_mut() {
            if st.boundaries.len() > KEPT_HASHES + 1 {
                let first = st.boundaries[0].clone();
                keep_last(&mut st.boundaries, KEPT_HASHES);
                st.boundaries.insert(0, first);
            }
            keep_last(&mut st.contained, KEPT_HASHES);
        }
        for f in self.forks.values_mut() {
            keep_last(&mut f.heads, KEPT_HASHES);
        }
    }

    /// The state file for `remote` in `index_dir`.
    pub fn path(index_dir: &Path, remote: &str) -> PathBuf {
        let name = blake3::hash(remote.as_bytes()).to_hex();
        index_dir.join("sync").join(format!("{}.json", &name[..32]))
    }

    /// The state at `path`, or a new one (a new machine id) when there is none.
    pub fn load(path: &Path) -> Result<State> {
        match std::fs::read(path) {
            Ok(b) => serde_json::from_slice(&b).map_err(|e| Error::BadEntry {
                position: crate::error::Position {
                    path: path.to_path_buf(),
                    line: 1,
                    byte_offset: 0,
                },
                reason: format!("sync state: {e}"),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(State::new()),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    /// Writes the state to `path` atomically (a new file renamed over the old), 0600 in a 0700
    /// folder; `durable`: synced to disk first (the end of a sync; the saves on the way only
    /// need to survive a killed process, which the page cache does).
    pub fn save(&self, path: &Path, durable: bool) -> Result<()> {
        use std::io::Write;
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        let dir = path.parent().expect("a state file has a folder");
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| Error::io(dir, e))?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| Error::io(&tmp, e))?;
        f.write_all(&serde_json::to_vec(self).expect("the state serialises"))
            .and_then(|()| if durable { f.sync_all() } else { Ok(()) })
            .map_err(|e| Error::io(&tmp, e))?;
        std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compaction_keeps_the_start_and_the_newest_boundaries() {
        let mut st = State::new();
        let mut f = FileState::empty("id".into(), "h0".into(), Project::default(), false);
        for i in 1..=1000u64 {
            f.boundaries.push((i, format!("h{i}")));
        }
        st.files.insert("k/s.jsonl".into(), f);
        st.compact();
        let b = &st.files["k/s.jsonl"].boundaries;
        assert_eq!(b.len(), KEPT_HASHES + 1);
        assert_eq!(b[0], (0, "h0".to_owned()));
        assert_eq!(b[1].0, 1001 - KEPT_HASHES as u64);
        assert_eq!(b.last(), Some(&(1000, "h1000".to_owned())));
    }
}
