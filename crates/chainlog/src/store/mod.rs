//! The entry point: a [`Store`] opened on a claude dir and an index folder. Every question a
//! program asks goes through it: listings and lookups ([`listing`]), conversations
//! ([`conversation`]), sub-agents, the index's own answers (catch-up, leaves, resolve),
//! verification ([`verify`]), and the commands that read or write sessions whole (export,
//! search, the writer: [`verbs`]). The floors below it answer for one sidecar or one file.

pub mod conversation;
pub mod listing;
pub mod verbs;
pub mod verify;

use std::path::{Path, PathBuf};

use crate::catalog;
use crate::catalog::cache::FactsCache;
use crate::catalog::indexed::Agents;
use crate::chain::{LeafInfo, ResolveOptions};
use crate::error::{Error, Result};
use crate::index::read::sidechains::SidechainRows;
use crate::index::write::ingest::CatchUp;
use crate::index::{Answer, Sidecars};

/// Sessions of a claude dir and the index sidecars that answer for them.
#[derive(Debug, Clone)]
pub struct Store {
    sidecars: Sidecars,
    /// The claude dir sessions are listed and looked up in (`None`: the default one).
    claude_dir: Option<PathBuf>,
}

impl Store {
    /// A store keeping its sidecars in `index_dir`, listing the default claude dir.
    pub fn new(index_dir: impl Into<PathBuf>) -> Store {
        Store {
            sidecars: Sidecars::new(index_dir),
            claude_dir: None,
        }
    }

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
        Ok(Store {
            sidecars: Sidecars::new(index_dir),
            claude_dir: Some(claude_dir),
        })
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

    /// The sidecars below this store, for the floors that answer for one of them.
    pub(crate) fn sidecars(&self) -> &Sidecars {
        &self.sidecars
    }

    /// A cache of per-file listing facts over this store's sidecars: a fact is read from the
    /// index when the file did not change since it was stored, else scanned and stored on
    /// [`FactsCache::flush`].
    pub fn facts_cache(&self) -> FactsCache<'_> {
        FactsCache::new(&self.sidecars)
    }

    /// Catches the index of `transcript` up with its new bytes.
    pub fn catch_up(&self, transcript: &Path) -> Result<CatchUp> {
        self.sidecars.catch_up(transcript)
    }

    /// Catches up every transcript of `transcripts`, sidecar by sidecar: one read-only open
    /// finds those that changed, one read-write open catches them up (a transaction each) and
    /// is closed once, so the open and close that a catch-up costs are paid once per project
    /// (`chainlog index`). The results come in the order given; `done` is called after each
    /// transcript, sidecar by sidecar (in the order given when each project's transcripts are
    /// given together, as sorted paths are). A sidecar it creates is not compacted after each
    /// transcript: call [`Store::compact_created`] once everything meant for it is written.
    pub fn catch_up_all(
        &self,
        transcripts: &[PathBuf],
        done: impl FnMut(&Path, &Result<CatchUp>),
    ) -> Vec<Result<CatchUp>> {
        fn session(p: &Path) -> bool {
            crate::catalog::discover::session_id_of(p).is_some()
        }
        let sessions = crate::index::write::views::Sessions {
            is_session: session,
            listing_row: crate::catalog::cache::row_of_whole_read,
        };
        self.sidecars.catch_up_all(transcripts, sessions, done)
    }

    /// Compacts the sidecars that [`Store::catch_up_all`] created and that are still smaller than
    /// 1 MiB (a catch-up's limit for a sidecar holding more than one commit), once everything
    /// meant for them is written: `chainlog index` calls it after the catch-ups, the listing
    /// rows and the resume views, each of which committed and left the pages it replaced as
    /// holes (the real transcripts' one-session projects: 100 KiB each, 84 KiB compacted). One
    /// compaction per sidecar instead of one after each of its transcripts and one at the end
    /// (a fresh `chainlog index` of the real three-session project, by hand: 0.6–1.5 ms less of
    /// ~17 ms). Best effort: a sidecar another process holds is left as it is.
    /// Returns how many were compacted.
    pub fn compact_created(&self) -> usize {
        self.sidecars.compact_created()
    }

    /// Drops what the index knows about `transcript` and indexes it again from zero.
    pub fn rebuild(&self, transcript: &Path) -> Result<CatchUp> {
        self.sidecars.rebuild(transcript)
    }

    /// Every leaf of `transcript` with its chain length (`chainlog leaves`), from the index;
    /// `None` when the index turned out damaged.
    pub fn leaf_report(&self, transcript: &Path) -> Result<Option<(Answer, Vec<LeafInfo>)>> {
        self.sidecars.leaf_report(transcript)
    }

    /// [`Store::leaf_report`] with the active leaf chosen by `opts` (a requested leaf).
    pub fn leaf_report_from(
        &self,
        transcript: &Path,
        opts: ResolveOptions,
    ) -> Result<Option<(Answer, Vec<LeafInfo>)>> {
        self.sidecars.leaf_report_from(transcript, opts)
    }

    /// The materialised resume view of `transcript` as stored, for the state the index holds
    /// (neither caught up first nor checked against the file): `None` when none is stored for
    /// that state or the index cannot be read. `verify` compares it with a full scan.
    pub fn materialised(&self, transcript: &Path) -> Result<Option<Answer>> {
        self.sidecars.materialised(transcript)
    }

    /// Resolves the chain of `transcript`, from the index when it can be used.
    pub fn resolve(&self, transcript: &Path, opts: ResolveOptions) -> Result<Answer> {
        self.sidecars.resolve(transcript, opts)
    }

    /// The index answer, or `None` when the index turned out damaged (after one rebuild).
    ///
    /// When the transcript did not change since it was indexed, the database is opened
    /// read-only (no write, no fsync); otherwise it is caught up first.
    pub fn resolve_indexed(
        &self,
        transcript: &Path,
        opts: ResolveOptions,
    ) -> Result<Option<Answer>> {
        self.sidecars.resolve_indexed(transcript, opts)
    }

    /// The sidecar that indexes `transcript`: one per project directory (the folder under
    /// `projects/`, or the transcript's folder).
    pub fn db_path(&self, transcript: &Path) -> PathBuf {
        self.sidecars.db_path(transcript)
    }

    /// The sidechain rows of `transcript` from its index, caught up first; `None` when the
    /// index turned out damaged (after one rebuild).
    pub fn sidechain_rows(&self, transcript: &Path) -> Result<Option<SidechainRows>> {
        self.sidecars.sidechain_rows(transcript)
    }

    /// The default sidecar folder: `$XDG_CACHE_HOME/chainlog`, else `~/.cache/chainlog`.
    pub fn default_index_dir() -> PathBuf {
        Sidecars::default_index_dir()
    }

    /// The reference answer: a full scan of the transcript (`why` says why it was used).
    pub fn reference(transcript: &Path, opts: ResolveOptions, why: String) -> Result<Answer> {
        Sidecars::reference(transcript, opts, why)
    }

    /// The sub-agents of the session at `session_path` (all three layouts), sorted by layout,
    /// then id. Inline agents are read from the index (its sidechain rows); when the index
    /// cannot be used, from a scan of the session ([`Agents::source`] says which).
    pub fn agents(&self, session_path: &Path) -> Result<Agents> {
        catalog::indexed::agents(&self.sidecars, session_path)
    }

    /// Compares the index's answers for `transcript` with a full scan of the same bytes; an
    /// empty list means they agree.
    pub fn verify(&self, transcript: &Path) -> Result<Vec<verify::Difference>> {
        verify::verify(self, transcript)
    }

    /// [`Store::verify`] of each of `transcripts`, `done` called with each answer in the order
    /// given: caught up together, the index's answers read under one open of each sidecar and
    /// compared on every core (`chainlog verify`). Returns how many were verified on their
    /// own instead (the index held no answer or stored view for them, or failed).
    pub fn verify_all(
        &self,
        transcripts: &[PathBuf],
        done: impl FnMut(&Path, Result<Vec<verify::Difference>>),
    ) -> usize {
        verify::verify_all(self, transcripts, done)
    }
}
