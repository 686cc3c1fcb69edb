//! The commands that read or write sessions whole, asked of the store: a writer, fork and
//! branch (the [`writer`](crate::writer) module), export ([`export`](crate::export)), and full-text
//! search ([`search`](crate::search), with the `search` feature).

use std::io::Write;
use std::path::Path;
#[cfg(feature = "search")]
use std::{collections::HashSet, path::PathBuf};

use super::Store;
use crate::error::Result;
use crate::export::{Document, ExportOptions};
use crate::writer::{SessionWriter, WriterOptions};

impl Store {
    /// Pushes this machine's sessions in `opts.scope` to `remote` (`s3://bucket/prefix` or
    /// `file:///path`) and pulls every other machine's (SPEC C1). Idempotent: a second sync
    /// with nothing new sends nothing.
    #[cfg(feature = "sync")]
    pub fn sync(&self, remote: &str, opts: &crate::SyncOptions) -> Result<crate::SyncReport> {
        crate::sync::sync(self.sidecars(), &self.claude_dir()?, remote, opts)
    }

    /// Every session on `remote`, newest first, from its manifests alone (no transcript is
    /// downloaded): what `chainlog ls --remote` prints. `key`: the contents of the key file.
    #[cfg(feature = "sync")]
    pub fn remote_sessions(
        &self,
        remote: &str,
        key: Option<&[u8]>,
    ) -> Result<Vec<crate::RemoteSession>> {
        crate::sync::remote_sessions(self.sidecars(), &self.claude_dir()?, remote, key)
    }

    /// A writer for session `session_id` in the project folder `project_dir`
    /// (`<claude>/projects/<key>`). The session id must not be a path.
    pub fn writer(
        &self,
        project_dir: &Path,
        session_id: &str,
        opts: WriterOptions,
    ) -> Result<SessionWriter> {
        SessionWriter::open(self.sidecars(), project_dir, session_id, opts)
    }

    /// Writes a new session holding `source`'s resume view (cut after `at`) the way
    /// `--fork-session` does (format.md §A8). Returns the new session id.
    pub fn fork(&self, source: &Path, at: Option<&str>) -> Result<String> {
        crate::writer::copy::fork(self.sidecars(), source, at)
    }

    /// Writes a new session holding `source`'s active chain with `forkedFrom`, one combined
    /// `content-replacement` and a `(Branch)` title (format.md §A7). Returns the new session id.
    pub fn branch(&self, source: &Path, name: Option<&str>) -> Result<String> {
        crate::writer::copy::branch(self.sidecars(), source, name)
    }

    /// The document of the transcript at `path` as `opts` asks: its messages, branches and
    /// sub-agents, ready to render.
    pub fn export_document(&self, path: &Path, opts: &ExportOptions) -> Result<Document> {
        crate::export::build(self.sidecars(), path, opts)
    }

    /// Writes the transcript at `path` to `out` as `opts` asks (Markdown, HTML or JSONL).
    pub fn export(&self, path: &Path, opts: &ExportOptions, out: &mut dyn Write) -> Result<()> {
        crate::export::export(self.sidecars(), path, opts, out)
    }
}

#[cfg(feature = "search")]
use crate::search::{Found, SearchCatchUp, SearchOptions};

#[cfg(feature = "search")]
impl Store {
    /// Searches the messages of the sessions in scope for `query` (tantivy query syntax: words,
    /// `"phrases"`, `AND`/`OR`, `-excluded`), catching the search index up first.
    pub fn search(&self, query: &str, opts: &SearchOptions) -> Result<Found> {
        crate::search::search(self.sidecars(), &self.claude_dir()?, query, opts)
    }

    /// The sessions with at least one message matching `query` (for `ls --search`).
    pub fn matching_sessions(&self, query: &str, opts: &SearchOptions) -> Result<HashSet<PathBuf>> {
        crate::search::matching_sessions(self.sidecars(), &self.claude_dir()?, query, opts)
    }

    /// Brings the search index of every project in scope up to date with its transcripts
    /// (`search` does this first).
    pub fn search_catch_up(&self, opts: &SearchOptions) -> Result<SearchCatchUp> {
        crate::search::search_catch_up(self.sidecars(), &self.claude_dir()?, opts)
    }

    /// Drops the search index of each of `project_dirs` that has one and builds it again from
    /// the project's transcripts (`chainlog rebuild`); a project never searched gets none.
    pub fn search_rebuild(&self, project_dirs: &[PathBuf]) -> Result<SearchCatchUp> {
        crate::search::rebuild(self.sidecars(), project_dirs)
    }
}
