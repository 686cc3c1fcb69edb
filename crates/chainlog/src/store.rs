//! The entry point: a [`Store`] opened on a claude dir and an index folder answers listing,
//! lookups and resumes from the index, catching it up first.

use std::path::{Path, PathBuf};

use crate::catalog::cache::FactsCache;
use crate::catalog::inline::{self, InlineTarget};
use crate::catalog::{self, AgentInfo, ListOptions, SessionFacts, Target};
use crate::chain::Transcript;
use crate::error::{Error, Result};
use crate::index::read::sidechains::SidechainRows;
use crate::index::{Source, Store};
use crate::resume::conversation::{Conversation, ResumeOptions};

/// The sub-agents of a session, and where its inline (1.0.x) agents were read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agents {
    /// Sorted by layout, then id.
    pub agents: Vec<AgentInfo>,
    /// [`Source::Index`], or a full scan of the session and why the index was not used.
    pub source: Source,
}

/// The largest transcript whose listing row `chainlog index` fills.
pub const LISTING_FILL_MAX: u64 = 1 << 20;

/// The longest line a resume view may hold for [`Store::prepare_views`] to store it: storing a
/// view parses each of its lines once (a parsed line takes up to ten times its bytes), and
/// `chainlog index` keeps its memory bounded whatever the sessions hold. A view with a longer
/// line is left to the session's first resume.
pub const VIEW_LINE_MAX: u64 = 8 << 20;

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
    /// A store over the sessions of `claude_dir` (the folder holding `projects/`, e.g.
    /// `~/.claude`) keeping its index sidecars in `index_dir` (created when first needed).
    /// Nothing is read yet; a `claude_dir` that is not a folder is an error.
    pub fn open(claude_dir: impl Into<PathBuf>, index_dir: impl Into<PathBuf>) -> Result<Store> {
        let claude_dir = claude_dir.into();
        if claude_dir.exists() && !claude_dir.is_dir() {
            return Err(Error::io(
                &claude_dir,
                std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a folder"),
            ));
        }
        let mut store = Store::new(index_dir);
        store.claude_dir = Some(claude_dir);
        Ok(store)
    }

    /// [`Store::open`] on `$CLAUDE_CONFIG_DIR` (else `~/.claude`) and
    /// [`Store::default_index_dir`].
    pub fn open_default() -> Result<Store> {
        Store::open(
            catalog::paths::claude_dir(None)?,
            Store::default_index_dir(),
        )
    }

    /// The claude dir this store lists: the one it was opened on, else the default one.
    pub fn claude_dir(&self) -> Result<PathBuf> {
        match &self.claude_dir {
            Some(d) => Ok(d.clone()),
            None => catalog::paths::claude_dir(None),
        }
    }

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
                };
                hits = ListOptions {
                    search_hits: Some(crate::search::matching_sessions(
                        self, &claude, text, &scope,
                    )?),
                    ..opts.clone()
                };
                &hits
            }
            _ => opts,
        };
        let mut cache = FactsCache::new(self);
        let mut skipped = Vec::new();
        let sessions = catalog::list::list_sessions_from(&claude, opts, &mut cache, &mut skipped)?;
        cache.flush()?;
        Ok(Listing { sessions, skipped })
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
        let mut cache = FactsCache::new(self);
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
        for p in &self.without_view(&sessions) {
            // A sidecar found busy meanwhile is left to the sessions' first resumes.
            if self.is_busy(&self.db_path(p)) {
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
        let mut cache = FactsCache::new(self);
        let target = catalog::target::resolve_target_with(
            &claude,
            project,
            arg,
            &mut |p| cache.facts(p),
            &mut |p| self.inline_targets(p),
        )?;
        cache.flush()?;
        Ok(target)
    }

    /// Resumes the session, agent or transcript `target` names (see [`Store::target`]): the
    /// conversation the model gets, answered from the index. A fork agent's conversation
    /// starts with the context it inherited from its parent session.
    pub fn resume(&self, target: &str, opts: &ResumeOptions) -> Result<Conversation> {
        opts.check()?;
        let target = self.target(opts.project.as_deref(), target)?;
        self.resume_target(&target, opts)
    }

    /// [`Store::resume`] of a target already looked up.
    pub fn resume_target(&self, target: &Target, opts: &ResumeOptions) -> Result<Conversation> {
        match target {
            // An inline agent lives in its session file: resume from its newest leaf, in the
            // full view (a compaction after it drops it from the resume view).
            Target::Agent { path, .. } if target.leaf().is_some() => {
                let opts = ResumeOptions {
                    leaf: opts
                        .leaf
                        .clone()
                        .or_else(|| target.leaf().map(str::to_owned)),
                    full: true,
                    ..opts.clone()
                };
                self.conversation(path, &opts)
            }
            Target::Agent { path, .. } => self.agent_conversation(path, opts),
            t => self.conversation(t.path(), opts),
        }
    }

    /// The sub-agents of the session at `session_path` (all three layouts), sorted by layout,
    /// then id. Inline agents are read from the index (its sidechain rows); when the index
    /// cannot be used, from a scan of the session ([`Agents::source`] says which).
    pub fn agents(&self, session_path: &Path) -> Result<Agents> {
        let (side, source) = self.sidechains(session_path)?;
        let agents = catalog::agents::agents_with(session_path, &side.rows, &side.names)?;
        Ok(Agents { agents, source })
    }

    /// The inline agents of a session file as targets, from the index (else a scan).
    fn inline_targets(&self, session_path: &Path) -> Result<Vec<InlineTarget>> {
        let (side, _) = self.sidechains(session_path)?;
        inline::targets(session_path, &side.rows, &side.names)
    }

    /// The sidechain rows of a session from the index, else from a full scan (and why).
    fn sidechains(&self, session_path: &Path) -> Result<(SidechainRows, Source)> {
        let why = match self.sidechain_rows(session_path) {
            Ok(Some(rows)) => return Ok((rows, Source::Index)),
            Ok(None) => "the index was damaged".to_owned(),
            Err(e @ (Error::Io { .. } | Error::NotFound(_))) => return Err(e),
            Err(e) => e.to_string(),
        };
        let t = Transcript::open(session_path).map_err(|e| Error::io(session_path, e))?;
        let rows = inline::sidechain_rows(&t);
        Ok((
            SidechainRows {
                rows,
                names: t.names,
            },
            Source::Transcript(why),
        ))
    }

    /// Compares the index's answers for `transcript` with a full scan of the same bytes; an
    /// empty list means they agree.
    pub fn verify(&self, transcript: &Path) -> Result<Vec<crate::index::verify::Difference>> {
        crate::index::verify::verify(self, transcript)
    }
}
