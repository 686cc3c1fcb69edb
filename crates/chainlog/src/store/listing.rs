//! Listings and lookups: the sessions a listing selects, listing rows and resume views
//! prepared ahead (`chainlog index`), and what a `resume` argument names.

use std::path::{Path, PathBuf};

use super::Store;
use crate::catalog::{self, ListOptions, SessionFacts, Target};
use crate::error::{Error, Result};

/// The largest transcript whose listing row `chainlog index` fills.
pub const LISTING_FILL_MAX: u64 = 1 << 20;

use crate::index::read::view::VIEW_LINE_MAX;

/// What [`Store::prepare_listing`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListingRows {
    /// Transcripts scanned (their row was missing or stale).
    pub scanned: u64,
    /// Rows that were current.
    pub current: u64,
}

/// The sessions a listing found, and the files it could not read (each error names its file).
#[derive(Debug, Default)]
pub struct Listing {
    /// The sessions, in the order asked for.
    pub sessions: Vec<SessionFacts>,
    /// Transcripts that could not be read; the listing goes on without them.
    pub skipped: Vec<Error>,
}

impl Store {
    /// The sessions `opts` selects, their facts read from the index (a transcript that did
    /// not change since it was last indexed is not read).
    pub fn sessions(&self, opts: &ListOptions) -> Result<Listing> {
        let claude = self.claude_dir()?;
        #[cfg(feature = "search")]
        let hits;
        #[cfg(feature = "search")]
        let opts = match (&opts.search, &opts.search_hits) {
            (Some(text), None) => {
                let scope = crate::search::SearchOptions {
                    project: opts.project.clone(),
                    all: opts.all,
                    limit: 0,
                    ..Default::default()
                };
                hits = ListOptions {
                    search_hits: Some(crate::search::matching_sessions(
                        self.sidecars(),
                        &claude,
                        text,
                        &scope,
                    )?),
                    ..opts.clone()
                };
                &hits
            }
            _ => opts,
        };
        let mut cache = self.facts_cache();
        let mut skipped = Vec::new();
        let sessions = catalog::list::list_sessions_from(&claude, opts, &mut cache, &mut skipped)?;
        cache.flush()?;
        Ok(Listing { sessions, skipped })
    }

    /// The token usage of every session of a scope (`project` as in
    /// [`ListOptions::project`], or every project with `all`), each with its sub-agents' files,
    /// from the facts in the index's listing table (a transcript that did not change since
    /// its facts were stored is not read). Group and cost it with [`crate::usage::report()`].
    pub fn usage(&self, project: Option<&Path>, all: bool) -> Result<crate::usage::Usage> {
        let claude = self.claude_dir()?;
        let scope = catalog::list::resolve_scope(&claude, project, all)?;
        let mut cache = self.facts_cache();
        let mut skipped = Vec::new();
        let sessions = crate::usage::gather::gather(&scope, &mut cache, &mut skipped);
        cache.flush()?;
        Ok(crate::usage::Usage { sessions, skipped })
    }

    /// Fills the listing rows of the session files among `paths` (`chainlog index` does
    /// after its catch-ups), so the next listing of them reads no transcript. Returns how
    /// many were scanned and how many rows were already current.
    ///
    /// Files larger than `LISTING_FILL_MAX` (1 MiB) are left to the first listing: their facts
    /// come from a full scan, which would make an `index` after a one-line append cost a
    /// read of the whole file.
    pub fn prepare_listing(&self, paths: &[PathBuf]) -> Result<ListingRows> {
        let sessions: Vec<PathBuf> = paths
            .iter()
            .filter(|p| catalog::discover::session_id_of(p).is_some())
            .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.len() <= LISTING_FILL_MAX))
            .cloned()
            .collect();
        let mut cache = self.facts_cache();
        cache.facts_all(&sessions);
        let rows = ListingRows {
            scanned: cache.scanned,
            current: cache.cached,
        };
        cache.flush()?;
        Ok(rows)
    }

    /// Materialises the default resume view of the session files among `paths` whose index
    /// holds none for the state it has indexed (`chainlog index` does after its catch-ups): the
    /// walk a first resume would make, and the read of the view's lines that tells how it
    /// ends, done once here, so the next resume of each is one range read and writes nothing
    /// (and a resume right after an append extends it in memory). Best effort: a session that
    /// fails, or whose view holds a line longer than `VIEW_LINE_MAX` (8 MiB), is left to its
    /// first resume. The lines are read a batch at a time.
    /// Returns how many sessions were walked to store theirs.
    pub fn prepare_views(&self, paths: &[PathBuf]) -> usize {
        let sessions: Vec<PathBuf> = paths
            .iter()
            .filter(|p| catalog::discover::session_id_of(p).is_some())
            .cloned()
            .collect();
        let mut stored = 0;
        for p in &self.sidecars().without_view(&sessions) {
            // A sidecar found busy meanwhile is left to the sessions' first resumes.
            if self.sidecars().is_busy(&self.db_path(p)) {
                continue;
            }
            // Walked from the index (an answer read from a view carries no state to store).
            let Ok(Some(ans)) = self.resolve_indexed(p, crate::index::read::view::OPTIONS) else {
                continue;
            };
            let longest = ans.resolution.chain.iter().map(|l| l.pos.len).max();
            if ans.state.is_none() || longest.unwrap_or(0) > VIEW_LINE_MAX {
                continue;
            }
            if self.materialise_answer(p, &ans).is_ok() {
                stored += 1;
            }
        }
        stored
    }

    /// What `arg` names: a session id (or a unique prefix of at least 4 characters), a
    /// transcript path, an agent id, or a session title (exact, then a unique substring).
    /// Ids and titles are looked up in `project` first (a working directory, a project
    /// directory or a project key; `None`: the current directory's), then everywhere.
    pub fn target(&self, project: Option<&Path>, arg: &str) -> Result<Target> {
        let claude = self.claude_dir()?;
        let mut cache = self.facts_cache();
        let target = catalog::target::resolve_target_with(
            &claude,
            project,
            arg,
            &mut |p| cache.facts(p),
            &mut |p| catalog::indexed::inline_targets(self.sidecars(), p),
        )?;
        cache.flush()?;
        Ok(target)
    }
}
