//! Point lookups for the writer: is a uuid already in a transcript, and where does its resume
//! view end.
//!
//! The writer holds one [`IndexedFile`] per transcript it appends to. Each lookup is one redb
//! point read (`ids` table); nothing reads the transcript. After the writer appended, it calls
//! [`IndexedFile::catch_up`], which indexes exactly the bytes appended since the last catch-up
//! (the writer's own batch, plus anything another process appended meanwhile).

use std::path::{Path, PathBuf};

use redb::ReadableDatabase;

use crate::error::{IndexFault, Result};
use crate::id::Id;
use crate::index::db::open::IndexDb;
use crate::index::format::schema::{FileState, IDS, ROWS};
use crate::index::{Sidecars, query};
use crate::transcript::frame::LinePos;

/// One transcript's index rows, opened for the writer.
pub struct IndexedFile {
    db: IndexDb,
    path: PathBuf,
    state: Option<FileState>,
    ids: Option<crate::index::format::ids::ReadIds>,
}

impl IndexedFile {
    /// Opens the project index of `transcript` (the file may not exist yet).
    pub fn open(store: &Sidecars, transcript: &Path) -> Result<IndexedFile> {
        let db = IndexDb::open(&store.db_path(transcript))?;
        let mut f = IndexedFile {
            db,
            path: transcript.to_path_buf(),
            state: None,
            ids: None,
        };
        if transcript.exists() {
            f.catch_up()?;
        }
        Ok(f)
    }

    /// Indexes what was appended since the last catch-up; returns the indexed length.
    pub fn catch_up(&mut self) -> Result<u64> {
        self.ids = None;
        let (_, st) = Sidecars::catch_up_in(&mut self.db, &self.path)?;
        let txn = self.db.db().begin_read().map_err(|e| self.db.err(e))?;
        self.ids = Some(txn.open_table(IDS).map_err(|e| self.db.err(e))?);
        let len = st.indexed_len;
        self.state = Some(st);
        Ok(len)
    }

    /// Whether a message with uuid `id` is in the transcript (as of the last catch-up).
    pub fn contains(&self, id: Id) -> Result<bool> {
        Ok(self.seq_of(id)?.is_some())
    }

    /// The row of message `id` (`ids`); a damaged entry is an error, never an absent id.
    fn seq_of(&self, id: Id) -> Result<Option<u32>> {
        let (Some(st), Some(t)) = (&self.state, &self.ids) else {
            return Ok(None);
        };
        let Some(v) = t.get((st.file, id.0)).map_err(|e| self.db.err(e))? else {
            return Ok(None);
        };
        let e = crate::index::format::ids::decode(st.file, id.0, v.value()).ok_or_else(|| {
            self.db
                .err(IndexFault::damaged("ids", "an entry fails its checksum"))
        })?;
        Ok(e.seq)
    }

    /// Where the line of message `id` is (the last line written with that uuid).
    pub fn position(&self, id: Id) -> Result<Option<LinePos>> {
        let Some(st) = &self.state else {
            return Ok(None);
        };
        let Some(seq) = self.seq_of(id)? else {
            return Ok(None);
        };
        let txn = self.db.db().begin_read().map_err(|e| self.db.err(e))?;
        let rows = txn.open_table(ROWS).map_err(|e| self.db.err(e))?;
        let row = crate::index::format::row::get(&rows, st, seq)
            .map_err(|e| self.db.err(e))?
            .filter(|r| r.head.uuid == id);
        Ok(row.map(|r| r.pos))
    }

    /// The last message of the resume view (the chain a resume hands to the model): where a
    /// writer continues a session it did not start.
    pub fn resume_tip(&self) -> Result<Option<String>> {
        let Some(st) = self.state.clone() else {
            return Ok(None);
        };
        let ans = query(
            self.db.db(),
            st,
            &self.path,
            crate::index::read::view::OPTIONS,
            true,
        )?;
        Ok(ans.and_then(|a| a.resolution.chain.last().map(|l| a.names.name(l.uuid))))
    }
}

impl std::fmt::Debug for IndexedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexedFile")
            .field("path", &self.path)
            .field("indexed", &self.state.as_ref().map(|s| s.indexed_len))
            .finish_non_exhaustive()
    }
}
