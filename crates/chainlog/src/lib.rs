//! chainlog — an embedded event store for AI coding-agent session transcripts.
//!
//! Claude Code keeps each session as an append-only JSONL file under
//! `~/.claude/projects/<project-key>/<sessionId>.jsonl` whose entries form a tree through
//! `uuid`/`parentUuid`. chainlog reads those files in place (the JSONL stays the truth) and
//! keeps a disposable index sidecar beside them, caught up by tailing, so a listing reads no
//! unchanged transcript and a resume reads the lines of the chain it returns.
//!
//! A [`Store`] is the entry point: it lists sessions ([`Store::sessions`]), resumes one
//! ([`Store::resume`] → [`Conversation`] of typed [`Message`]s) and writes
//! ([`Store::writer`]).
//!
//! ```
//! use chainlog::{ListOptions, ResumeOptions, Store};
//! # let tmp = tempfile::tempdir()?;
//! # let project = tmp.path().join("claude/projects/-work");
//! # std::fs::create_dir_all(&project)?;
//! # std::fs::write(project.join("0b0e3a4c-5f0e-4c4e-9d2a-7a1f6f2b9c01.jsonl"), concat!(
//! #   r#"{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"hi"},"uuid":"00000000-0000-4000-8000-000000000001","timestamp":"2025-01-01T00:00:00.000Z","sessionId":"0b0e3a4c-5f0e-4c4e-9d2a-7a1f6f2b9c01","cwd":"/work"}"#, "\n",
//! #   r#"{"parentUuid":"00000000-0000-4000-8000-000000000001","isSidechain":false,"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"hello"}]},"uuid":"00000000-0000-4000-8000-000000000002","timestamp":"2025-01-01T00:00:01.000Z","sessionId":"0b0e3a4c-5f0e-4c4e-9d2a-7a1f6f2b9c01","cwd":"/work"}"#, "\n",
//! # ))?;
//! # let (claude_dir, index_dir) = (tmp.path().join("claude"), tmp.path().join("index"));
//! let store = Store::open(claude_dir, index_dir)?; // e.g. Store::open_default()
//! let listing = store.sessions(&ListOptions::all())?; // newest first, facts from the index
//! let newest = &listing.sessions[0];
//! let conversation = store.resume(&newest.session_id, &ResumeOptions::default())?;
//! for m in conversation.messages() {
//!     println!("{}: {}", m.role.as_str(), m.text());
//! }
//! assert_eq!(conversation.messages().last().unwrap().text(), "hello");
//! assert_eq!(conversation.source(), &chainlog::Source::Index);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Beside the concepts at the crate root, modules hold the parts for programs that need
//! them: [`reference`](mod@reference) (the full scan every indexed answer must equal), [`discovery`]
//! (listing without a store), [`format`](mod@format) (the line format), [`view`] (chains as lines and as
//! the client's request), [`sidecar`] (index facts and verification), [`export`],
//! [`writer`] and, with the `search` feature, `search`.
//!
//! References such as "format.md §A5 step 8" name a section of `docs/format.md` in the
//! repository: the transcript format and the resume algorithm chainlog implements.

/// The README's examples, compiled by `cargo test` (`no_run`: they name a user's claude dir).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeExamples;

mod catalog;
mod chain;
mod error;
pub mod export;
mod id;
mod index;
mod resume;
#[cfg(feature = "search")]
pub mod search;
mod store;
#[cfg(feature = "sync")]
mod sync;
#[cfg(test)]
mod testing;
mod transcript;
pub mod usage;
pub mod writer;

// The concepts: a store, its listings and conversations, and what they are made of.
pub use catalog::indexed::Agents;
pub use catalog::paths::claude_dir;
pub use catalog::{AgentInfo, ListOptions, SessionFacts, SortBy, Target};
pub use chain::{ChainBreak, LeafRule, Resolution};
pub use error::{Error, Position, RemoteFault, Result};
pub use id::Id;
pub use index::write::ingest::CatchUp;
pub use index::{Answer, BAD_LINES_KEPT, Source};
pub use resume::interrupt::Interrupt;
pub use resume::message::{Block, Message, Role};
pub use store::Store;
pub use store::conversation::{Conversation, Pending, ResumeOptions};
pub use store::listing::{Listing, ListingRows};
#[cfg(feature = "sync")]
pub use sync::{ForkNote, RemoteSession, SyncOptions, SyncProgress, SyncReport, SyncScope};
pub use writer::{SessionWriter, WriterOptions};

/// Finding sessions without a [`Store`]: claude dirs, project keys, discovery of project
/// folders and agent files, per-file facts, listings over a facts callback, and `resume`
/// targets.
pub mod discovery {
    pub use crate::catalog::agents::{AgentMeta, read_meta as read_agent_meta};
    pub use crate::catalog::discover::{
        AgentFile, AgentLayout, ProjectDir, ProjectListing, is_uuid, list_project, project_dirs,
        session_agent_files,
    };
    pub use crate::catalog::facts::{ForeignSummary, ForkedFrom, PrLink, UNTITLED};
    pub use crate::catalog::list::{
        FactsFn, FactsSource, Scope, list_dir_from, list_scope, list_scope_skipping,
        list_sessions_from, resolve_scope,
    };
    pub use crate::catalog::paths::{key_matches, normalize_cwd, project_key, projects_root};
    pub use crate::catalog::{
        list_sessions, list_sessions_skipping, resolve_target, scan_session_facts, session_agents,
        session_facts,
    };
}

/// The reference loader: a full scan of one transcript and the chain resolution every
/// faster path must equal.
pub mod reference {
    pub use crate::chain::{
        BadLine, ChainBridge, LeafInfo, Link, MessageRow, ResolveOptions, Stop, Transcript, View,
        leaf_report, leaf_report_full, resolve,
    };
    pub use crate::error::UnknownLeaf;
}

/// The transcript format: ids, line kinds and flags, line problems, metadata, upgrades of
/// legacy shapes.
pub mod format {
    pub use crate::error::check_id;
    pub use crate::id::IdNames;
    pub use crate::transcript::envelope::{
        Flags, Kind, LineProblem, MessageHead, MetaEntry, Segment, hash64,
    };
    pub use crate::transcript::frame::{FrameSummary, LinePos};
    pub use crate::transcript::loose::FieldNote;
    pub use crate::transcript::metadata::{MetaRef, Metadata};
    pub use crate::transcript::time::format_millis;
    pub use crate::transcript::upgrade::{STEPS as UPGRADE_STEPS, upgrade};
    pub use crate::transcript::usage::{
        LineUsage, SYNTHETIC_MODEL, Tokens, UsageRow, UsageTally, day_of,
    };
}

/// The index sidecar below a [`Store`]: cached per-file facts, verification against the
/// reference loader, faults.
pub mod sidecar {
    pub use crate::catalog::cache::FactsCache;
    pub use crate::error::IndexFault;
    pub use crate::index::db::guard::isolating;
    pub use crate::index::db::progress::{ProgressFn, REPORT_ABOVE, set_progress};
    pub use crate::index::format::schema::INDEX_SCHEMA_VERSION;
    pub use crate::index::read::sidechains::SidechainRows;
    pub use crate::index::write::ingest::ViewUpdate;
    pub use crate::store::verify::{Difference, verify};
}

/// A resolved chain as lines: reading it by offset, the client's request built from it,
/// readable text, interrupts, fork agents' inherited context.
pub mod view {
    pub use crate::resume::interrupt::detect as detect_interrupt;
    pub use crate::resume::text::render as render_text;
    pub use crate::resume::{
        ApiOptions, ForkContext, INTERRUPTED_TOOL_CALL, Lines, NO_CONTENT, NO_RESPONSE_REQUESTED,
        TOOL_LOADED, TOOL_REFERENCES_REMOVED, TOOL_RESULT_MISSING, ViewEntry, api_messages,
        api_messages_of, fork_context, read_view,
    };
}
