//! What this machine knows of one remote: its own id there, what it pushed, what it folded of
//! the others' manifests, which of their files are still to bring here, the forks it made, the
//! path maps the user gave. One redb file per remote in the index folder (0600 in a 0700
//! folder). A sync reads the rows it touches and writes the rows it changed in one transaction:
//! its cost follows what changed, not how many files were ever synced. Losing the file costs a
//! re-upload under a new machine id, never a wrong answer (every pull checks the local bytes).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde::de::DeserializeOwned;
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

/// The small part of the state, one row.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Meta {
    machine: String,
    next_seq: u64,
    last_snapshot: Option<u64>,
    maps: Vec<(String, String)>,
    /// The last manifest folded of each other machine.
    machines: BTreeMap<String, Option<u64>>,
    /// The key setting the remote's marker was read and agreed with (not read again with it).
    #[serde(default)]
    marker_checked: Option<String>,
}

const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
const FILES: TableDefinition<&str, &[u8]> = TableDefinition::new("files");
const ENTRIES: TableDefinition<&str, &[u8]> = TableDefinition::new("entries");
const FORKS: TableDefinition<&str, &[u8]> = TableDefinition::new("forks");
const TODO: TableDefinition<&str, ()> = TableDefinition::new("todo");
const UNPUBLISHED: TableDefinition<&str, ()> = TableDefinition::new("unpublished");
/// Beside each row of `files`, what tells at a glance that a file did not change.
const QUICK: TableDefinition<&str, &[u8]> = TableDefinition::new("quick");

/// What a push compares with a file's size (and time) to skip it without reading its row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quick {
    /// [`FileState::len`].
    pub len: u64,
    /// [`FileState::sync_fork_len`].
    pub sync_fork_len: Option<u64>,
    /// [`FileState::stamp`].
    pub stamp: Option<(u64, i128)>,
}

impl Quick {
    fn of(st: &FileState) -> Quick {
        Quick {
            len: st.len,
            sync_fork_len: st.sync_fork_len,
            stamp: st.stamp,
        }
    }

    /// Whether a transcript of `len` bytes, or a whole file of this `stamp`, needs no push.
    pub fn unchanged(&self, blob: bool, len: u64, stamp: (u64, i128)) -> bool {
        if blob {
            self.stamp == Some(stamp)
        } else {
            len == self.len || self.sync_fork_len.is_some_and(|l| len <= l)
        }
    }

    fn encode(&self) -> [u8; 42] {
        let mut b = [0u8; 42];
        b[..8].copy_from_slice(&self.len.to_le_bytes());
        if let Some(l) = self.sync_fork_len {
            b[8] = 1;
            b[9..17].copy_from_slice(&l.to_le_bytes());
        }
        if let Some((n, t)) = self.stamp {
            b[17] = 1;
            b[18..26].copy_from_slice(&n.to_le_bytes());
            b[26..42].copy_from_slice(&t.to_le_bytes());
        }
        b
    }

    fn decode(b: &[u8]) -> Option<Quick> {
        let b: &[u8; 42] = b.try_into().ok()?;
        let u = |r: std::ops::Range<usize>| u64::from_le_bytes(b[r].try_into().expect("8 bytes"));
        Some(Quick {
            len: u(0..8),
            sync_fork_len: (b[8] == 1).then(|| u(9..17)),
            stamp: (b[17] == 1).then(|| {
                (
                    u(18..26),
                    i128::from_le_bytes(b[26..42].try_into().expect("16 bytes")),
                )
            }),
        })
    }
}

/// A table read row by row as a sync needs them; what changed is written back by
/// [`State::save`].
pub struct Rows<V> {
    db: Arc<Database>,
    path: PathBuf,
    table: TableDefinition<'static, &'static str, &'static [u8]>,
    /// Rows read or written so far (`None`: not in the table).
    cache: BTreeMap<String, Option<V>>,
    dirty: BTreeSet<String>,
    /// Every row is in `cache`.
    complete: bool,
}

impl<V: Serialize + DeserializeOwned> Rows<V> {
    fn new(
        db: &Arc<Database>,
        path: &Path,
        table: TableDefinition<'static, &'static str, &'static [u8]>,
    ) -> Rows<V> {
        Rows {
            db: Arc::clone(db),
            path: path.to_path_buf(),
            table,
            cache: BTreeMap::new(),
            dirty: BTreeSet::new(),
            complete: false,
        }
    }

    fn load(&mut self, k: &str) -> Result<()> {
        if self.complete || self.cache.contains_key(k) {
            return Ok(());
        }
        let fault = |e: &dyn std::fmt::Display| fault(&self.path, e);
        let txn = self.db.begin_read().map_err(|e| fault(&e))?;
        let v = match txn.open_table(self.table) {
            Ok(t) => match t.get(k).map_err(|e| fault(&e))? {
                Some(v) => Some(serde_json::from_slice(v.value()).map_err(|e| fault(&e))?),
                None => None,
            },
            Err(redb::TableError::TableDoesNotExist(_)) => None,
            Err(e) => return Err(fault(&e)),
        };
        self.cache.insert(k.to_owned(), v);
        Ok(())
    }

    /// The row `k`.
    pub fn get(&mut self, k: &str) -> Result<Option<&V>> {
        self.load(k)?;
        Ok(self.cache.get(k).and_then(Option::as_ref))
    }

    /// The row `k`, to change (written back by the next save).
    pub fn get_mut(&mut self, k: &str) -> Result<Option<&mut V>> {
        self.load(k)?;
        let v = self.cache.get_mut(k).and_then(Option::as_mut);
        if v.is_some() {
            self.dirty.insert(k.to_owned());
        }
        Ok(v)
    }

    /// Sets the row `k`.
    pub fn insert(&mut self, k: String, v: V) {
        self.dirty.insert(k.clone());
        self.cache.insert(k, Some(v));
    }

    /// Whether there is a row `k`.
    pub fn contains_key(&mut self, k: &str) -> Result<bool> {
        Ok(self.get(k)?.is_some())
    }

    /// Every row, read once (a listing, a snapshot).
    pub fn all(&mut self) -> Result<impl Iterator<Item = (&String, &V)>> {
        if !self.complete {
            let fault = |e: &dyn std::fmt::Display| fault(&self.path, e);
            let txn = self.db.begin_read().map_err(|e| fault(&e))?;
            match txn.open_table(self.table) {
                Ok(t) => {
                    for row in t.iter().map_err(|e| fault(&e))? {
                        let (k, v) = row.map_err(|e| fault(&e))?;
                        let k = k.value().to_owned();
                        if let std::collections::btree_map::Entry::Vacant(slot) =
                            self.cache.entry(k)
                        {
                            let v: V = serde_json::from_slice(v.value()).map_err(|e| fault(&e))?;
                            slot.insert(Some(v));
                        }
                    }
                }
                Err(redb::TableError::TableDoesNotExist(_)) => {}
                Err(e) => return Err(fault(&e)),
            }
            self.complete = true;
        }
        Ok(self
            .cache
            .iter()
            .filter_map(|(k, v)| v.as_ref().map(|v| (k, v))))
    }

    /// The rows changed since the last save, to change again (compaction).
    fn changed_mut(&mut self) -> impl Iterator<Item = &mut V> {
        let dirty = &self.dirty;
        self.cache
            .iter_mut()
            .filter(|(k, _)| dirty.contains(*k))
            .filter_map(|(_, v)| v.as_mut())
    }

    /// Writes the changed rows; calls `also` with each.
    fn write(
        &mut self,
        txn: &redb::WriteTransaction,
        mut also: impl FnMut(&str, &V) -> Result<()>,
    ) -> Result<()> {
        let fault = |e: &dyn std::fmt::Display| fault(&self.path, e);
        let mut t = txn.open_table(self.table).map_err(|e| fault(&e))?;
        for k in std::mem::take(&mut self.dirty) {
            if let Some(Some(v)) = self.cache.get(&k) {
                let bytes = serde_json::to_vec(v).expect("a state row serialises");
                t.insert(k.as_str(), bytes.as_slice())
                    .map_err(|e| fault(&e))?;
                also(&k, v)?;
            }
        }
        Ok(())
    }
}

/// A set of keys, read whole (small: what is still to do).
fn read_set(
    db: &Database,
    path: &Path,
    table: TableDefinition<&str, ()>,
) -> Result<BTreeSet<String>> {
    let fault = |e: &dyn std::fmt::Display| fault(path, e);
    let txn = db.begin_read().map_err(|e| fault(&e))?;
    let t = match txn.open_table(table) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(BTreeSet::new()),
        Err(e) => return Err(fault(&e)),
    };
    let mut out = BTreeSet::new();
    for row in t.iter().map_err(|e| fault(&e))? {
        out.insert(row.map_err(|e| fault(&e))?.0.value().to_owned());
    }
    Ok(out)
}

/// Writes the difference between `was` and `now` into `table`.
fn write_set(
    txn: &redb::WriteTransaction,
    path: &Path,
    table: TableDefinition<&str, ()>,
    was: &BTreeSet<String>,
    now: &BTreeSet<String>,
) -> Result<()> {
    let fault = |e: &dyn std::fmt::Display| fault(path, e);
    let mut t = txn.open_table(table).map_err(|e| fault(&e))?;
    for k in was.difference(now) {
        t.remove(k.as_str()).map_err(|e| fault(&e))?;
    }
    for k in now.difference(was) {
        t.insert(k.as_str(), ()).map_err(|e| fault(&e))?;
    }
    Ok(())
}

/// The state database at `path`: created whole under another name and renamed into place (a
/// sync killed while creating it leaves no half file); one that is not a redb database any more
/// (damaged) is moved aside to `<name>.damaged` and a new one made: the state is a cache of what
/// the remote and the local files say, and a new one costs a re-upload, never a wrong file.
fn open_db(path: &Path) -> Result<Database> {
    use std::os::unix::fs::OpenOptionsExt;
    let open =
        |p: &Path, create: bool| -> Result<std::result::Result<Database, redb::DatabaseError>> {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(create)
                .truncate(create)
                .mode(0o600)
                .open(p)
                .map_err(|e| Error::io(p, e))?;
            let backend = redb::backends::FileBackend::new(file).map_err(|e| fault(p, &e))?;
            Ok(Database::builder().create_with_backend(backend))
        };
    if std::fs::symlink_metadata(path).is_ok() {
        match open(path, false)? {
            Ok(db) => return Ok(db),
            Err(redb::DatabaseError::DatabaseAlreadyOpen) => {
                return Err(fault(path, &redb::DatabaseError::DatabaseAlreadyOpen));
            }
            Err(_) => {
                let aside = path.with_extension("damaged");
                std::fs::rename(path, &aside).map_err(|e| Error::io(path, e))?;
            }
        }
    }
    let tmp = path.with_extension(format!("new{}", std::process::id()));
    let db = open(&tmp, true)?.map_err(|e| fault(&tmp, &e))?;
    drop(db);
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))?;
    open(path, false)?.map_err(|e| fault(path, &e))
}

/// A state file that cannot be read or written.
fn fault(path: &Path, e: &dyn std::fmt::Display) -> Error {
    Error::io(path, std::io::Error::other(format!("sync state: {e}")))
}

/// Everything sync keeps for one remote.
pub struct State {
    db: Arc<Database>,
    path: PathBuf,
    /// This machine's id on the remote.
    pub machine: String,
    /// The next manifest's sequence number.
    pub next_seq: u64,
    /// The last snapshot's sequence number.
    pub last_snapshot: Option<u64>,
    /// `--map FROM=TO` given so far (path prefixes), newest last.
    pub maps: Vec<(String, String)>,
    /// The last manifest folded of each other machine.
    pub machines: BTreeMap<String, Option<u64>>,
    /// The key setting (a keyed hash of a constant) the remote's marker was read and agreed
    /// with: another setting reads it again.
    pub marker_checked: Option<String>,
    /// Local files by path below the projects folder (`<key>/<rel>`).
    pub files: Rows<FileState>,
    /// Other machines' files as their manifests last said, by `<machine>/<file id>`.
    pub entries: Rows<Entry>,
    /// Forks by `<machine>/<file id>/<hash where the continuations part>`.
    pub forks: BTreeMap<String, ForkState>,
    /// Other machines' files not brought here yet (new in a manifest, out of the scopes synced
    /// so far, or not readable yet), by `<machine>/<file id>`.
    pub todo: BTreeSet<String>,
    /// Local files whose head this machine has not published yet.
    pub unpublished: BTreeSet<String>,
    /// The sets as last saved.
    saved_todo: BTreeSet<String>,
    saved_unpublished: BTreeSet<String>,
}

impl State {
    /// Bounds what grows with every sync: each file changed by this sync keeps its first and
    /// its last [`KEPT_HASHES`] boundaries (and as many contained heads, fork heads). An older
    /// hash is only a place where a walk back may stop sooner; without it the walk goes on to
    /// an older one (more segments read), never to another answer.
    pub fn compact(&mut self) {
        fn keep_last<T>(v: &mut Vec<T>, n: usize) {
            if v.len() > n {
                v.drain(..v.len() - n);
            }
        }
        for st in self.files.changed_mut() {
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
        index_dir.join("sync").join(format!("{}.redb", &name[..32]))
    }

    /// The state at `path` (created 0600 in a 0700 folder), with a new machine id when there
    /// was none.
    pub fn load(path: &Path) -> Result<State> {
        use std::os::unix::fs::DirBuilderExt;
        let dir = path.parent().expect("a state file has a folder");
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| Error::io(dir, e))?;
        let db = open_db(path)?;
        let db = Arc::new(db);
        let meta: Option<Meta> = {
            let txn = db.begin_read().map_err(|e| fault(path, &e))?;
            match txn.open_table(META) {
                Ok(t) => match t.get("meta").map_err(|e| fault(path, &e))? {
                    Some(v) => {
                        Some(serde_json::from_slice(v.value()).map_err(|e| fault(path, &e))?)
                    }
                    None => None,
                },
                Err(redb::TableError::TableDoesNotExist(_)) => None,
                Err(e) => return Err(fault(path, &e)),
            }
        };
        let fresh = meta.is_none();
        let meta = meta.unwrap_or_else(|| Meta {
            machine: uuid::Uuid::new_v4().simple().to_string(),
            next_seq: 0,
            last_snapshot: None,
            maps: Vec::new(),
            machines: BTreeMap::new(),
            marker_checked: None,
        });
        let mut forks = BTreeMap::new();
        {
            let mut rows: Rows<ForkState> = Rows::new(&db, path, FORKS);
            for (k, v) in rows.all()? {
                forks.insert(k.clone(), v.clone());
            }
        }
        let todo = read_set(&db, path, TODO)?;
        let unpublished = read_set(&db, path, UNPUBLISHED)?;
        let mut state = State {
            files: Rows::new(&db, path, FILES),
            entries: Rows::new(&db, path, ENTRIES),
            path: path.to_path_buf(),
            machine: meta.machine,
            next_seq: meta.next_seq,
            last_snapshot: meta.last_snapshot,
            maps: meta.maps,
            machines: meta.machines,
            marker_checked: meta.marker_checked,
            forks,
            saved_todo: todo.clone(),
            todo,
            saved_unpublished: unpublished.clone(),
            unpublished,
            db,
        };
        if fresh {
            // The machine id is kept from the start: a first sync killed midway is completed
            // under it, its objects recognised.
            state.save()?;
        }
        Ok(state)
    }

    /// What tells at a glance whether each local file changed since it was synced, read in one
    /// pass (a push that looks at every file reads no file's row unless its size changed).
    pub fn quick_all(&self) -> Result<std::collections::HashMap<String, Quick>> {
        let fault = |e: &dyn std::fmt::Display| fault(&self.path, e);
        let txn = self.db.begin_read().map_err(|e| fault(&e))?;
        let t = match txn.open_table(QUICK) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => {
                return Ok(std::collections::HashMap::default());
            }
            Err(e) => return Err(fault(&e)),
        };
        let mut out = std::collections::HashMap::new();
        for row in t.iter().map_err(|e| fault(&e))? {
            let (k, v) = row.map_err(|e| fault(&e))?;
            if let Some(q) = Quick::decode(v.value()) {
                out.insert(k.value().to_owned(), q);
            }
        }
        Ok(out)
    }

    /// Writes what changed in one transaction, durable (a sync's end, a fork recorded before
    /// it is written).
    pub fn save(&mut self) -> Result<()> {
        let path = self.path.clone();
        let fault = |e: &dyn std::fmt::Display| fault(&path, e);
        let txn = self.db.begin_write().map_err(|e| fault(&e))?;
        {
            let meta = Meta {
                machine: self.machine.clone(),
                next_seq: self.next_seq,
                last_snapshot: self.last_snapshot,
                maps: self.maps.clone(),
                machines: self.machines.clone(),
                marker_checked: self.marker_checked.clone(),
            };
            let mut t = txn.open_table(META).map_err(|e| fault(&e))?;
            let bytes = serde_json::to_vec(&meta).expect("the state serialises");
            t.insert("meta", bytes.as_slice()).map_err(|e| fault(&e))?;
            let mut t = txn.open_table(FORKS).map_err(|e| fault(&e))?;
            for (k, f) in &self.forks {
                let bytes = serde_json::to_vec(f).expect("a fork serialises");
                t.insert(k.as_str(), bytes.as_slice())
                    .map_err(|e| fault(&e))?;
            }
        }
        {
            let mut quick = txn.open_table(QUICK).map_err(|e| fault(&e))?;
            self.files.write(&txn, |k, st| {
                quick
                    .insert(k, Quick::of(st).encode().as_slice())
                    .map(drop)
                    .map_err(|e| fault(&e))
            })?;
        }
        self.entries.write(&txn, |_, _| Ok(()))?;
        write_set(&txn, &path, TODO, &self.saved_todo, &self.todo)?;
        write_set(
            &txn,
            &path,
            UNPUBLISHED,
            &self.saved_unpublished,
            &self.unpublished,
        )?;
        txn.commit().map_err(|e| fault(&e))?;
        self.saved_todo.clone_from(&self.todo);
        self.saved_unpublished.clone_from(&self.unpublished);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compaction_keeps_the_start_and_the_newest_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sync").join("s.redb");
        let mut st = State::load(&path).unwrap();
        let mut f = FileState::empty("id".into(), "h0".into(), Project::default(), false);
        for i in 1..=1000u64 {
            f.boundaries.push((i, format!("h{i}")));
        }
        st.files.insert("k/s.jsonl".into(), f);
        st.compact();
        st.save().unwrap();
        let machine = st.machine.clone();
        drop(st);
        let mut st = State::load(&path).unwrap();
        assert_eq!(st.machine, machine, "the machine id is kept");
        let b = &st.files.get("k/s.jsonl").unwrap().unwrap().boundaries;
        assert_eq!(b.len(), KEPT_HASHES + 1);
        assert_eq!(b[0], (0, "h0".to_owned()));
        assert_eq!(b[1].0, 1001 - KEPT_HASHES as u64);
        assert_eq!(b.last(), Some(&(1000, "h1000".to_owned())));
    }

    #[test]
    fn a_save_writes_only_what_changed_and_the_sets_survive() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.redb");
        let mut st = State::load(&path).unwrap();
        st.files.insert(
            "k/a.jsonl".into(),
            FileState::empty("a".into(), "h".into(), Project::default(), false),
        );
        st.todo.insert("m/x".into());
        st.unpublished.insert("k/a.jsonl".into());
        st.save().unwrap();
        st.todo.remove("m/x");
        st.todo.insert("m/y".into());
        st.files.get_mut("k/a.jsonl").unwrap().unwrap().len = 7;
        st.save().unwrap();
        drop(st);
        let mut st = State::load(&path).unwrap();
        assert_eq!(st.todo, BTreeSet::from(["m/y".to_owned()]));
        assert_eq!(st.unpublished, BTreeSet::from(["k/a.jsonl".to_owned()]));
        assert_eq!(st.files.get("k/a.jsonl").unwrap().unwrap().len, 7);
        assert!(st.files.get("k/b.jsonl").unwrap().is_none());
        assert_eq!(st.files.all().unwrap().count(), 1);
    }

    #[test]
    fn a_half_made_or_damaged_state_is_set_aside_and_made_anew() {
        let dir = tempfile::tempdir().unwrap();
        for junk in [&b""[..], b"not redb at all", &[0u8; 4096][..]] {
            let path = dir.path().join("s.redb");
            std::fs::write(&path, junk).unwrap();
            let st = State::load(&path).unwrap();
            assert_eq!(st.machine.len(), 32);
            // An empty file is a new database to redb; anything else is set aside.
            assert_eq!(path.with_extension("damaged").exists(), !junk.is_empty());
            let _ = std::fs::remove_file(path.with_extension("damaged"));
            drop(st);
            // The new machine id was kept from the start.
            let again = State::load(&path).unwrap().machine;
            let st = State::load(&path).unwrap();
            assert_eq!(st.machine, again);
            drop(st);
            std::fs::remove_file(&path).unwrap();
        }
    }
}
