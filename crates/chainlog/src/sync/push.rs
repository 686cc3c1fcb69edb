//! Push: what this machine's files grew by goes up as new segments (a whole small file as a new
//! version), then one manifest delta says what changed. A push killed anywhere is completed by
//! the next: a segment already there (same name, same bytes) is not sent again, and a delta
//! number a killed push used is not reused. (Only after a killed sync is each object asked
//! for first: otherwise a segment's name is new by construction.)

use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::format::{
    Entry, Facts, Manifest, OBJECT_MAX, SEGMENT_MAX, SegmentHeader, blob_name, chain_next,
    segment_bytes, segment_name, seq_name,
};
use super::state::FileState;
use super::{Sync, local_files};
use crate::error::{Error, Result};

/// Deltas between two snapshots.
const SNAPSHOT_EVERY: u64 = 32;

/// A whole file larger than this is not synced (transcripts are synced by segments).
const BLOB_MAX: u64 = 64 << 20;

impl Sync<'_> {
    /// Pushes the growth of every local file in scope (published by [`Sync::publish`]).
    pub(super) fn push(&mut self) -> Result<()> {
        let (files, quick) = match self.changed.take() {
            Some(files) => (files, None),
            None => (
                local_files(&self.projects, &self.scope),
                Some(self.state.quick_all()?),
            ),
        };
        if self.progress.is_some() {
            // What is there to send, for a progress bar: each file's growth since it was synced.
            self.to_send = files
                .iter()
                .map(|(key, rel)| {
                    let len = std::fs::symlink_metadata(self.projects.join(key).join(rel))
                        .map_or(0, |m| m.len());
                    let local = format!("{key}/{rel}");
                    let synced = match &quick {
                        Some(q) => q.get(&local).map_or(0, |q| q.len),
                        None => self
                            .state
                            .files
                            .get(&local)
                            .ok()
                            .flatten()
                            .map_or(0, |s| s.len),
                    };
                    len.saturating_sub(synced)
                })
                .sum();
        }
        self.report.checked_files = files.len() as u64;
        for (key, rel) in files {
            let path = self.projects.join(&key).join(&rel);
            let blob = Path::new(&rel).extension().is_none_or(|x| x != "jsonl");
            let local = format!("{key}/{rel}");
            // Unchanged at a glance (its size, a whole file's time): its row is not read.
            if let Some(q) = quick.as_ref().and_then(|q| q.get(&local))
                && let Ok(meta) = std::fs::symlink_metadata(&path)
                && q.unchanged(blob, meta.len(), (meta.len(), mtime_ns(&meta)))
            {
                continue;
            }
            if !self.state.files.contains_key(&local)? {
                let st = self.empty_state(&rel, self.placer.describe(&key), blob);
                self.state.files.insert(local.clone(), st);
            }
            let done = if blob {
                self.push_blob(&local, &path)
            } else {
                self.push_transcript(&local, &rel, &path)
            };
            match done {
                // The remote failing (after the store's retries) ends the sync: the next
                // completes it.
                Err(e) if super::unreachable(&e) => return Err(e),
                Err(e) => self.report.skipped.push(format!("{}: {e}", path.display())),
                Ok(()) => {}
            }
        }
        Ok(())
    }

    /// Tells the progress callback how far the push is.
    fn tick(&self) {
        if let Some(p) = &self.progress {
            let done = self.report.pushed_bytes;
            p(done.min(self.to_send), self.to_send.max(done));
        }
    }

    fn push_transcript(&mut self, local: &str, rel: &str, path: &Path) -> Result<()> {
        let meta = std::fs::symlink_metadata(path).map_err(|e| Error::io(path, e))?;
        if !meta.is_file() {
            return Ok(());
        }
        let st = self.state.files.get(local)?.expect("the file's state");
        let n = meta.len();
        // A fork sync wrote is pushed once it holds more than sync wrote.
        if n == st.len || st.sync_fork_len.is_some_and(|l| n <= l) {
            return Ok(());
        }
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        if n < st.len || !prefix_unchanged(&self.seal, st, &file, path)? {
            self.report.skipped.push(format!(
                "{}: rewritten since it was last synced (not pushed; its synced part stays as it was)",
                path.display()
            ));
            return Ok(());
        }
        let (mut at, mut head, mut owner) = (st.len, st.head.clone(), st.owner.clone());
        let id = st.id.clone();
        let mut buf = Vec::new();
        while at < n {
            // The next segment: up to SEGMENT_MAX bytes ending on a line end (a longer line
            // whole); a torn last line waits for the next push.
            buf.clear();
            let want = (n - at).min(SEGMENT_MAX);
            buf.resize(usize::try_from(want).expect("a segment fits memory"), 0);
            file.read_exact_at(&mut buf, at)
                .map_err(|e| Error::io(path, e))?;
            let mut end = memchr::memrchr(b'\n', &buf).map(|i| i + 1);
            if end.is_none() && at + want < n {
                let mut rest = Vec::new();
                let mut r = &file;
                std::io::Seek::seek(&mut r, std::io::SeekFrom::Start(at + want))
                    .map_err(|e| Error::io(path, e))?;
                r.take(n - at - want)
                    .read_to_end(&mut rest)
                    .map_err(|e| Error::io(path, e))?;
                if let Some(i) = memchr::memchr(b'\n', &rest) {
                    buf.extend_from_slice(&rest[..=i]);
                    end = Some(buf.len());
                }
            }
            let Some(end) = end else { break };
            let bytes = &buf[..end];
            let next = chain_next(&self.seal, &head, bytes);
            let name = segment_name(&self.state.machine, &id, &next);
            if !(self.careful && self.remote.exists(&name)?) {
                let header = SegmentHeader {
                    rel: rel.to_owned(),
                    start: at,
                    prev: head.clone(),
                    prev_owner: owner.clone(),
                };
                let obj = self.seal.seal(&segment_bytes(&header, bytes));
                self.report.uploaded_bytes += obj.len() as u64;
                self.remote.put(&name, obj)?;
            }
            self.report.pushed_bytes += end as u64;
            self.tick();
            at += end as u64;
            head = next;
            owner = Some(self.state.machine.clone());
            self.state.unpublished.insert(local.to_owned());
            let st = self.state.files.get_mut(local)?.expect("the file's state");
            st.tail = Some((at - end as u64, st.head.clone()));
            st.len = at;
            st.head.clone_from(&head);
            st.owner.clone_from(&owner);
            st.boundaries.push((at, head.clone()));
        }
        let st = self.state.files.get(local)?.expect("the file's state");
        if st.published.as_deref() != Some(head.as_str()) {
            self.report.pushed_files += 1;
        }
        Ok(())
    }

    fn push_blob(&mut self, local: &str, path: &Path) -> Result<()> {
        let meta = std::fs::symlink_metadata(path).map_err(|e| Error::io(path, e))?;
        if !meta.is_file() || meta.len() > BLOB_MAX {
            return Ok(());
        }
        let stamp = Some((meta.len(), mtime_ns(&meta)));
        if self
            .state
            .files
            .get(local)?
            .expect("the file's state")
            .stamp
            == stamp
        {
            return Ok(());
        }
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let hash = self.seal.hash(&[b"blob", &bytes]);
        let st = self.state.files.get_mut(local)?.expect("the file's state");
        if st.head == hash {
            st.stamp = stamp;
            return Ok(());
        }
        let name = blob_name(&self.state.machine, &st.id, &hash);
        if !(self.careful && self.remote.exists(&name)?) {
            let obj = self.seal.seal(&bytes);
            self.report.uploaded_bytes += obj.len() as u64;
            self.remote.put(&name, obj)?;
        }
        self.report.pushed_bytes += bytes.len() as u64;
        self.report.pushed_files += 1;
        self.tick();
        self.state.unpublished.insert(local.to_owned());
        let st = self.state.files.get_mut(local)?.expect("the file's state");
        st.len = bytes.len() as u64;
        st.head = hash;
        st.owner = Some(self.state.machine.clone());
        st.stamp = stamp;
        Ok(())
    }

    /// One manifest delta for the files whose head this machine has not published yet (and a
    /// snapshot of all of them every [`SNAPSHOT_EVERY`] deltas).
    pub(super) fn publish(&mut self) -> Result<()> {
        // The files whose head changed since the last publish (pushed, pulled): what the delta
        // names, read row by row.
        let mut changed_files = Vec::new();
        for local in std::mem::take(&mut self.state.unpublished) {
            if let Some(st) = self.state.files.get(&local)?
                && st.owner.is_some()
                && st.published.as_ref() != Some(&st.head)
            {
                let e = entry_of(&local, st);
                changed_files.push((local, e));
            }
        }
        if changed_files.is_empty() {
            return Ok(()); // nothing changed: not even the facts cache is opened
        }
        let mut cache = crate::catalog::cache::FactsCache::new(self.sidecars);
        let mut entries = Vec::with_capacity(changed_files.len());
        let mut published = Vec::with_capacity(changed_files.len());
        for (local, mut e) in changed_files {
            // A session's own transcript (not an agent's file beside it).
            if !e.blob
                && !e.rel.contains('/')
                && crate::catalog::discover::agent_id_of_file(&e.rel).is_none()
            {
                e.facts = cache
                    .facts(&self.projects.join(&local))
                    .ok()
                    .map(|f| Facts {
                        title: f.title,
                        modified: f.modified,
                        messages: f.message_count,
                    });
            }
            if let Some(st) = self.state.files.get_mut(&local)? {
                st.facts.clone_from(&e.facts);
            }
            published.push(local);
            entries.push(e);
        }
        let _ = cache.flush();
        let dir = format!("m/{}", self.state.machine);
        let mut seq = self.state.next_seq;
        // A push killed after its delta and before its state was saved used this number (only
        // after a killed sync is that asked).
        while self.careful && self.remote.exists(&format!("{dir}/x/{}", seq_name(seq)))? {
            seq += 1;
        }
        let delta = Manifest {
            machine: self.state.machine.clone(),
            seq,
            entries,
        };
        let obj = self
            .seal
            .seal(&serde_json::to_vec(&delta).expect("a manifest serialises"));
        self.report.uploaded_bytes += obj.len() as u64;
        self.remote
            .put(&format!("{dir}/x/{}", seq_name(seq)), obj)?;
        self.state.next_seq = seq + 1;
        for local in published {
            if let Some(st) = self.state.files.get_mut(&local)? {
                st.published = Some(st.head.clone());
            }
        }
        if seq - self.state.last_snapshot.unwrap_or(0) >= SNAPSHOT_EVERY {
            let all = Manifest {
                machine: self.state.machine.clone(),
                seq,
                entries: self
                    .state
                    .files
                    .all()?
                    .filter(|(_, st)| st.owner.is_some())
                    .map(|(local, st)| entry_of(local, st))
                    .collect(),
            };
            let obj = self
                .seal
                .seal(&serde_json::to_vec(&all).expect("a manifest serialises"));
            self.report.uploaded_bytes += obj.len() as u64;
            self.remote
                .put(&format!("{dir}/f/{}", seq_name(seq)), obj)?;
            self.state.last_snapshot = Some(seq);
        }
        debug_assert!(OBJECT_MAX as u64 > SEGMENT_MAX);
        Ok(())
    }
}

pub(super) fn entry_of(local: &str, st: &FileState) -> Entry {
    let rel = local.split_once('/').map_or(local, |(_, r)| r);
    Entry {
        id: st.id.clone(),
        rel: rel.to_owned(),
        project: st.project.clone(),
        len: st.len,
        head: st.head.clone(),
        owner: st.owner.clone().expect("a published file has an owner"),
        blob: st.blob,
        facts: st.facts.clone(),
    }
}

/// A file's modification time in nanoseconds since the epoch (0 when unknown).
fn mtime_ns(meta: &std::fs::Metadata) -> i128 {
    use std::os::unix::fs::MetadataExt;
    i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec())
}

/// Whether the file still holds the bytes of its last synced segment (read: that segment
/// only, its chain hash computed from the one before it), so that what follows can be chained
/// after it.
fn prefix_unchanged(
    seal: &super::seal::Seal,
    st: &FileState,
    file: &std::fs::File,
    path: &Path,
) -> Result<bool> {
    let Some((from, before)) = &st.tail else {
        return Ok(st.len == 0);
    };
    let mut bytes = vec![0; usize::try_from(st.len - from).expect("a segment fits memory")];
    file.read_exact_at(&mut bytes, *from)
        .map_err(|e| Error::io(path, e))?;
    Ok(chain_next(seal, before, &bytes) == st.head)
}
