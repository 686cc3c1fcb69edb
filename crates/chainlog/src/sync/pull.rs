//! Pull: fold the other machines' new manifest deltas, then bring each of their files here.
//!
//! For a transcript, walk back from the other machine's head, segment by segment, to a chain
//! hash this machine has: when that is where the local file ends, the segments are appended
//! (under the writers' lock, after checking the file still ends there). When the local file
//! went on from there too (both machines continued the session), nothing is merged: the other
//! side's continuation becomes a session of its own, written as `--fork-session` writes one,
//! and later growth of that continuation is appended to it.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::format::{
    Entry, Manifest, OBJECT_MAX, blob_name, chain_next, chain_start, file_id, parse_segment,
    segment_name, seq_name, valid_rel,
};
use super::state::{FileState, ForkState};
use super::{ForkNote, Sync};
use crate::error::{Error, RemoteFault, Result};
use crate::index::Sidecars;
use crate::transcript::folder::Folder;

/// A segment fetched on the walk back, its bytes in a scratch file.
struct Fetched {
    start: u64,
    /// The chain hash before it.
    prev: String,
    head: String,
    owner: String,
    file: PathBuf,
}

/// Where a walk back stopped.
enum Base {
    /// A boundary of the local file, at this offset.
    Local(u64),
    /// A head already copied into this fork.
    Fork(String),
}

impl Sync<'_> {
    /// Pulls every other machine's files in scope.
    /// Only the files the folded manifests named since they were last brought here (and
    /// those left for later: out of the scopes synced so far, not readable yet) are looked at.
    pub(super) fn pull(&mut self) -> Result<()> {
        self.fold_all()?;
        let work: Vec<String> = self.state.todo.iter().cloned().collect();
        for k in work {
            let Some(e) = self.state.entries.get(&k)?.cloned() else {
                self.state.todo.remove(&k);
                continue;
            };
            let m = k.split_once('/').map_or("", |(m, _)| m).to_owned();
            if let Some(only) = &self.only {
                let session = e.rel.split(['/', '.']).next().unwrap_or_default();
                if !only.iter().any(|s| s == session) {
                    continue;
                }
            }
            self.report.checked_entries += 1;
            match self.apply(&m, &e) {
                Err(err) if super::unreachable(&err) => return Err(err),
                Err(err) => self
                    .report
                    .skipped
                    .push(format!("{} of machine {m}: {err}", e.rel)),
                Ok(true) => {
                    self.state.todo.remove(&k);
                }
                Ok(false) => {}
            }
        }
        Ok(())
    }

    /// Reads every other machine's manifests published since the last sync.
    pub(super) fn fold_all(&mut self) -> Result<()> {
        let me = self.state.machine.clone();
        for m in self.remote.folders("m")? {
            if m != me && valid_machine(&m) {
                self.fold(&m)?;
            }
        }
        Ok(())
    }

    /// Reads machine `m`'s manifests published since the last sync.
    fn fold(&mut self, m: &str) -> Result<()> {
        let dir = format!("m/{m}");
        let mut seq = self.state.machines.get(m).copied().flatten();
        if seq.is_none()
            && let Some(last) = self.remote.names_after(&format!("{dir}/f"), None)?.last()
            && let Some(snap) = self.manifest(&format!("{dir}/f/{last}"))?
        {
            for e in snap.entries {
                self.note_entry(m, e);
            }
            seq = Some(snap.seq);
        }
        let listed = self
            .remote
            .names_after(&format!("{dir}/x"), seq.map(seq_name).as_deref())?;
        let max = listed
            .iter()
            .filter_map(|n| u64::from_str_radix(n, 16).ok())
            .max();
        if let Some(max) = max {
            // Every number up to the largest listed, by name: a listing that lags shows a later
            // delta before an earlier one; a number missing stops the fold until it appears.
            let first = seq.map_or(0, |s| s + 1);
            for n in first..=max {
                let Some(delta) = self.manifest(&format!("{dir}/x/{}", seq_name(n)))? else {
                    break;
                };
                for e in delta.entries {
                    self.note_entry(m, e);
                }
                seq = Some(n);
            }
        }
        self.state.machines.insert(m.to_owned(), seq);
        Ok(())
    }

    /// Machine `m`'s file as its manifest says now, to be brought here.
    fn note_entry(&mut self, m: &str, e: Entry) {
        let k = format!("{m}/{}", e.id);
        self.state.todo.insert(k.clone());
        self.state.entries.insert(k, e);
    }

    fn manifest(&self, name: &str) -> Result<Option<Manifest>> {
        let Some(obj) = self.remote.get(name)? else {
            return Ok(None);
        };
        let plain = self.open(&obj)?;
        serde_json::from_slice(&plain)
            .map(Some)
            .map_err(|_| self.damaged("a manifest that does not parse"))
    }

    fn open(&self, obj: &[u8]) -> Result<Vec<u8>> {
        self.seal
            .open(obj, OBJECT_MAX)
            .map_err(|fault| Error::Remote {
                remote: self.remote.url().to_owned(),
                fault,
            })
    }

    fn damaged(&self, what: &'static str) -> Error {
        Error::Remote {
            remote: self.remote.url().to_owned(),
            fault: RemoteFault::Damaged(what),
        }
    }

    /// Brings machine `m`'s file `e` here; whether that is settled (`false`: out of scope or
    /// not readable yet, to be tried again by a later sync).
    fn apply(&mut self, m: &str, e: &Entry) -> Result<bool> {
        if !valid_rel(&e.rel) || e.id != file_id(&self.seal, &e.rel) {
            return Err(self.damaged("an entry whose path is not a session file's"));
        }
        // Names built from what another machine wrote hold only what this crate makes.
        if !valid_machine(&e.owner) || !valid_hash(&e.head) {
            return Err(self.damaged("an entry naming no object"));
        }
        let Some(key) = self.placer.place(&e.project) else {
            return Err(self.damaged("an entry whose project is not a folder name"));
        };
        if !self.scope.includes(&key) {
            return Ok(false);
        }
        let local = format!("{key}/{}", e.rel);
        if e.blob {
            return self.apply_blob(m, e, &key, &local);
        }
        let st = self.state.files.get(&local)?;
        let start = chain_start(&self.seal, &e.id);
        let mut known: HashMap<String, u64> = HashMap::new();
        known.insert(start, 0);
        if let Some(st) = st {
            known.extend(st.boundaries.iter().map(|(o, h)| (h.clone(), *o)));
            known.extend(st.contained.iter().map(|(o, h)| (h.clone(), *o)));
        }
        if known.contains_key(&e.head) {
            return Ok(true); // this machine has it (or more)
        }
        let fork_prefix = format!("{m}/{}/", e.id);
        let fork_heads: HashMap<String, String> = self
            .state
            .forks
            .iter()
            .filter(|(k, _)| k.starts_with(&fork_prefix))
            .flat_map(|(k, f)| f.heads.iter().map(move |h| (h.clone(), k.clone())))
            .collect();
        if fork_heads.contains_key(&e.head) {
            return Ok(true);
        }
        // Walk back to a hash this machine has.
        let scratch = self.scratch()?;
        let mut fetched: Vec<Fetched> = Vec::new();
        let (mut owner, mut head) = (e.owner.clone(), e.head.clone());
        let base = loop {
            if let Some(&off) = known.get(&head) {
                break Base::Local(off);
            }
            if let Some(k) = fork_heads.get(&head) {
                break Base::Fork(k.clone());
            }
            if !valid_machine(&owner) || !valid_hash(&head) {
                return Err(self.damaged("a segment naming no machine before it"));
            }
            let Some(obj) = self.remote.get(&segment_name(&owner, &e.id, &head))? else {
                // Not visible yet (a store that lists before it serves): the next sync.
                self.report.skipped.push(format!(
                    "{local}: a segment of machine {owner} is not readable yet"
                ));
                return Ok(false);
            };
            let plain = self.open(&obj)?;
            let Some((h, bytes)) = parse_segment(&plain) else {
                return Err(self.damaged("a segment that does not parse"));
            };
            if h.rel != e.rel || chain_next(&self.seal, &h.prev, bytes) != head {
                return Err(self.damaged("a segment whose bytes are not its name's"));
            }
            let file = scratch.join(format!("{}.seg", fetched.len()));
            std::fs::write(&file, bytes).map_err(|err| Error::io(&file, err))?;
            fetched.push(Fetched {
                start: h.start,
                prev: h.prev.clone(),
                head: head.clone(),
                owner: owner.clone(),
                file,
            });
            head = h.prev;
            match h.prev_owner {
                Some(o) => owner = o,
                None if known.contains_key(&head) => {}
                None => return Err(self.damaged("a first segment that does not start a file")),
            }
        };
        fetched.reverse();
        let done = match base {
            Base::Local(off) => self.extend_or_fork(m, e, &key, off, &fetched, &scratch),
            Base::Fork(k) => self.extend_fork(&k, &fetched),
        };
        let _ = std::fs::remove_dir_all(&scratch);
        done.map(|()| true)
    }

    fn extend_or_fork(
        &mut self,
        m: &str,
        e: &Entry,
        key: &str,
        off: u64,
        fetched: &[Fetched],
        scratch: &Path,
    ) -> Result<()> {
        let local = format!("{key}/{}", e.rel);
        let local = local.as_str();
        let st_len = self.state.files.get(local)?.map_or(0, |s| s.len);
        let folder = self.folder_of(key, &e.rel, true)?;
        let name = file_name(&e.rel);
        let mut file = folder
            .open_locked(name, true)?
            .expect("a file opened with create exists");
        // A batch a killed sync or writer left is completed first (under the lock).
        crate::transcript::batch::settle(&folder, name, &mut file, true)?;
        let path = folder.join(name);
        let len = file.metadata().map_err(|err| Error::io(&path, err))?.len();
        // How much of the other continuation the local file already holds after `off`
        // (`None`: they differ). Equal bytes are not a divergence: a sync killed after it
        // appended and before it saved its state pushes them again under its own chain.
        let held = held_after(&file, &path, off, len, fetched)?;
        let theirs = fetched_len(fetched);
        match held {
            // The local file ends inside (or where) the other's continuation ends: append the
            // rest (a machine whose state was lost with a killed sync pushes the same bytes
            // again under other segments; they are not a divergence). Or it holds all of it
            // and nothing past `off` was synced from here: take their chain, the rest of the
            // local file is pushed after it.
            Some(n) if n == len - off || (st_len == off && n == theirs) => {
                // Through a journal, as the writers append: a sync killed meanwhile leaves
                // the whole of it or none for the next reader or writer (never a torn line
                // Claude Code would append after).
                let mut batch = crate::transcript::batch::Batch::new(name, len);
                let mut at = off;
                for f in fetched {
                    if f.start != at {
                        batch.abort(&folder);
                        return Err(self.damaged("segments that do not follow each other"));
                    }
                    let bytes = std::fs::read(&f.file).map_err(|err| Error::io(&f.file, err))?;
                    let skip = usize::try_from(len.saturating_sub(at)).unwrap_or(usize::MAX);
                    if skip < bytes.len() {
                        batch.push(&folder, &bytes[skip..])?;
                    }
                    at += bytes.len() as u64;
                }
                batch.commit(&folder, &mut file, true)?;
                if !self.state.files.contains_key(local)? {
                    let st = self.empty_state(&e.rel, e.project.clone(), false);
                    self.state.files.insert(local.to_owned(), st);
                }
                self.state.unpublished.insert(local.to_owned());
                let st = self.state.files.get_mut(local)?.expect("the file's state");
                for f in fetched {
                    let end = f.start + std::fs::metadata(&f.file).map_or(0, |md| md.len());
                    st.boundaries.push((end, f.head.clone()));
                    st.tail = Some((f.start, f.prev.clone()));
                    st.len = end;
                    st.head.clone_from(&f.head);
                    st.owner = Some(f.owner.clone());
                }
                if at > len {
                    self.report.pulled_files += 1;
                    self.report.pulled_bytes += at - len;
                }
                return Ok(());
            }
            Some(n) if n == theirs => {
                // The local file holds all of it already: remember their heads.
                if let Some(st) = self.state.files.get_mut(local)? {
                    for f in fetched {
                        let end = f.start + std::fs::metadata(&f.file).map_or(0, |md| md.len());
                        st.contained.push((end, f.head.clone()));
                    }
                }
                return Ok(());
            }
            _ => {}
        }
        drop(file);
        if e.rel.contains('/') {
            self.report.skipped.push(format!(
                "{}: continued here and on machine {m}; this machine's copy is kept",
                path.display()
            ));
            return Ok(());
        }
        self.keep_as_fork(m, e, key, off, fetched, &source_of(scratch, name))
    }

    /// Both machines continued from `off`: the other's continuation (the local file's first
    /// `off` bytes, then `fetched`) becomes a session of its own in project `key`.
    fn keep_as_fork(
        &mut self,
        m: &str,
        e: &Entry,
        key: &str,
        off: u64,
        fetched: &[Fetched],
        source: &Path,
    ) -> Result<()> {
        let name = file_name(&e.rel);
        let local = format!("{key}/{}", e.rel);
        let folder = self.folder_of(key, &e.rel, true)?;
        let path = folder.join(name);
        let path = path.as_path();
        std::fs::create_dir_all(source.parent().expect("a parent"))
            .map_err(|err| Error::io(source, err))?;
        let mut out = std::fs::File::create(source).map_err(|err| Error::io(source, err))?;
        {
            use std::io::Read;
            let mut prefix = std::fs::File::open(path)
                .map_err(|err| Error::io(path, err))?
                .take(off);
            std::io::copy(&mut prefix, &mut out).map_err(|err| Error::io(source, err))?;
        }
        for f in fetched {
            let bytes = std::fs::read(&f.file).map_err(|err| Error::io(&f.file, err))?;
            out.write_all(&bytes)
                .map_err(|err| Error::io(source, err))?;
        }
        drop(out);
        let parted = self
            .state
            .files
            .get(&local)?
            .and_then(|s| s.boundaries.iter().find(|(o, _)| *o == off))
            .map_or_else(|| chain_start(&self.seal, &e.id), |(_, h)| h.clone());
        let fork_key = format!("{m}/{}/{parted}", e.id);
        // One id for this fork whatever happens: a sync killed while writing it writes the
        // same session again (the writer skips the messages it holds), and the fork is
        // recorded, not to be pushed, before its file exists.
        let digest = blake3::hash(format!("{}/{fork_key}", self.state.machine).as_bytes());
        let mut id = [0u8; 16];
        id.copy_from_slice(&digest.as_bytes()[..16]);
        let session = uuid::Builder::from_random_bytes(id).into_uuid().to_string();
        let made = format!("{key}/{session}.jsonl");
        // Recorded with no head copied yet: a sync killed before the copy makes it again.
        self.state.forks.insert(
            fork_key.clone(),
            ForkState {
                session: session.clone(),
                source: name.trim_end_matches(".jsonl").to_owned(),
                local: made.clone(),
                heads: Vec::new(),
            },
        );
        self.note_sync_fork(&made, u64::MAX)?;
        self.state.save()?;
        let scratch_index = Sidecars::new(source.parent().expect("a parent").join("index"));
        crate::writer::copy::fork_into(&scratch_index, source, folder.path(), &session)?;
        let made_len =
            std::fs::metadata(folder.join(&format!("{session}.jsonl"))).map_or(0, |md| md.len());
        if let Some(f) = self.state.forks.get_mut(&fork_key) {
            f.heads = fetched.iter().map(|f| f.head.clone()).collect();
        }
        self.note_sync_fork(&made, made_len)?;
        self.report.forks.push(ForkNote {
            session: name.trim_end_matches(".jsonl").to_owned(),
            machine: m.to_owned(),
            fork: session,
        });
        Ok(())
    }

    /// Appends the lines of a continuation already kept as fork `k` that arrived since.
    fn extend_fork(&mut self, k: &str, fetched: &[Fetched]) -> Result<()> {
        let f = self.state.forks[k].clone();
        let (key, _) = f
            .local
            .split_once('/')
            .expect("a fork's local path has a project");
        let dir = self.projects.join(key);
        let source_session = f.source.clone();
        let mut entries = Vec::new();
        for s in fetched {
            let bytes = std::fs::read(&s.file).map_err(|err| Error::io(&s.file, err))?;
            for line in bytes.split(|&b| b == b'\n') {
                let Some(Value::Object(mut o)) = crate::resume::body::parse_value(line) else {
                    continue;
                };
                if !o
                    .get("type")
                    .and_then(Value::as_str)
                    .is_some_and(crate::writer::is_message_type)
                {
                    continue;
                }
                o.insert("sessionId".into(), f.session.clone().into());
                o.insert("requestSessionId".into(), source_session.clone().into());
                entries.push(Value::Object(o));
            }
        }
        let cwd = entries
            .iter()
            .find_map(|v| v.get("cwd").and_then(Value::as_str))
            .unwrap_or_default()
            .to_owned();
        let mut w = crate::writer::SessionWriter::open(
            self.sidecars,
            &dir,
            &f.session,
            crate::writer::WriterOptions::new(cwd),
        )?;
        w.append_all(entries)?;
        w.close()?;
        let made_len = std::fs::metadata(self.projects.join(&f.local)).map_or(0, |md| md.len());
        let fork = self.state.forks.get_mut(k).expect("the fork");
        fork.heads.extend(fetched.iter().map(|s| s.head.clone()));
        self.note_sync_fork(&f.local, made_len)?;
        self.report.pulled_files += 1;
        Ok(())
    }

    /// Records a file sync wrote as a fork: not pushed while it holds only that.
    fn note_sync_fork(&mut self, local: &str, len: u64) -> Result<()> {
        let rel = local.split_once('/').map_or(local, |(_, r)| r).to_owned();
        let key = local.split_once('/').map_or("", |(k, _)| k).to_owned();
        if !self.state.files.contains_key(local)? {
            let st = self.empty_state(&rel, self.placer.describe(&key), false);
            self.state.files.insert(local.to_owned(), st);
        }
        let st = self.state.files.get_mut(local)?.expect("the file's state");
        st.sync_fork_len = Some(len);
        Ok(())
    }

    fn apply_blob(&mut self, m: &str, e: &Entry, key: &str, local: &str) -> Result<bool> {
        if self
            .state
            .files
            .get(local)?
            .is_some_and(|s| s.head == e.head)
        {
            return Ok(true);
        }
        let folder = self.folder_of(key, &e.rel, true)?;
        let name = file_name(&e.rel);
        let path = folder.join(name);
        if folder.stat(name)?.is_some() {
            let mine = std::fs::read(&path).map_err(|err| Error::io(&path, err))?;
            if self.seal.hash(&[b"blob", &mine]) != e.head {
                self.report.skipped.push(format!(
                    "{}: differs from machine {m}'s; this machine's copy is kept",
                    path.display()
                ));
            }
            return Ok(true);
        }
        let Some(obj) = self.remote.get(&blob_name(&e.owner, &e.id, &e.head))? else {
            return Ok(false); // not readable yet: the next sync
        };
        let bytes = self.open(&obj)?;
        if self.seal.hash(&[b"blob", &bytes]) != e.head {
            return Err(self.damaged("a file whose bytes are not its name's"));
        }
        // Written whole under a dot name (never synced, never listed), then renamed into place:
        // a sync killed meanwhile leaves no half file where the client reads one.
        let tmp = format!(".{name}.chainlog-sync");
        folder.remove(&tmp)?;
        let Some(mut f) = folder.create_new(&tmp, 0o600)? else {
            return Ok(false);
        };
        f.write_all(&bytes)
            .and_then(|()| f.sync_data())
            .map_err(|err| Error::io(folder.join(&tmp), err))?;
        drop(f);
        if folder.stat(name)?.is_some() {
            folder.remove(&tmp)?;
            return Ok(true); // written here meanwhile: this machine's copy stays
        }
        folder.rename(&tmp, name)?;
        self.state.files.insert(
            local.to_owned(),
            FileState {
                id: e.id.clone(),
                project: e.project.clone(),
                len: bytes.len() as u64,
                head: e.head.clone(),
                owner: Some(e.owner.clone()),
                boundaries: Vec::new(),
                contained: Vec::new(),
                tail: None,
                stamp: None,
                facts: None,
                blob: true,
                published: None,
                sync_fork_len: None,
            },
        );
        self.state.unpublished.insert(local.to_owned());
        self.report.pulled_files += 1;
        self.report.pulled_bytes += bytes.len() as u64;
        Ok(true)
    }

    /// The folder holding `rel` in project `key`, opened beneath the projects folder without
    /// following links (created 0700 when `create`).
    fn folder_of(&self, key: &str, rel: &str, create: bool) -> Result<Folder> {
        let root = Folder::open(&self.projects, create)?;
        let mut dirs: Vec<&str> = vec![key];
        dirs.extend(
            rel.split('/')
                .rev()
                .skip(1)
                .collect::<Vec<_>>()
                .into_iter()
                .rev(),
        );
        root.descend(&dirs, create)?
            .ok_or_else(|| Error::io(self.projects.join(key), std::io::ErrorKind::NotFound.into()))
    }

    /// A fresh scratch folder for one file's pull (0700, in the index folder).
    fn scratch(&self) -> Result<PathBuf> {
        use std::os::unix::fs::DirBuilderExt;
        let dir = self
            .state_dir
            .join(format!("scratch-{}", uuid::Uuid::new_v4().simple()));
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|err| Error::io(&dir, err))?;
        Ok(dir)
    }
}

/// The bytes of the segments fetched.
fn fetched_len(fetched: &[Fetched]) -> u64 {
    fetched
        .iter()
        .map(|f| std::fs::metadata(&f.file).map_or(0, |md| md.len()))
        .sum()
}

/// How many bytes after `off` the local file (`len` long) shares with the continuation
/// `fetched`: `Some(n)` when one is a prefix of the other (`n` the shorter's length), `None` when
/// they differ.
fn held_after(
    file: &std::fs::File,
    path: &Path,
    off: u64,
    len: u64,
    fetched: &[Fetched],
) -> Result<Option<u64>> {
    use std::os::unix::fs::FileExt;
    let mut at = off;
    for f in fetched {
        if at >= len {
            break;
        }
        let theirs = std::fs::read(&f.file).map_err(|err| Error::io(&f.file, err))?;
        let n = usize::try_from((len - at).min(theirs.len() as u64)).expect("fits");
        let mut mine = vec![0; n];
        file.read_exact_at(&mut mine, at)
            .map_err(|err| Error::io(path, err))?;
        if mine != theirs[..n] {
            return Ok(None);
        }
        at += n as u64;
    }
    Ok(Some(at - off))
}

/// Where the other machine's version of a transcript is put together before it is forked.
fn source_of(scratch: &Path, name: &str) -> PathBuf {
    scratch.join("copy").join(name)
}

fn file_name(rel: &str) -> &str {
    rel.rsplit('/').next().unwrap_or(rel)
}

/// A hash as this crate writes them (64 hex digits): never a path.
fn valid_hash(h: &str) -> bool {
    h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A machine id as this crate makes them (32 hex digits): never a path.
fn valid_machine(m: &str) -> bool {
    m.len() == 32 && m.bytes().all(|b| b.is_ascii_hexdigit())
}
