//! chainlog — an embedded event store for AI coding-agent session transcripts.
//!
//! Claude Code keeps each session as an append-only JSONL file whose entries form a tree
//! through `uuid`/`parentUuid`. chainlog reads those files in place (the JSONL stays the
//! truth), resolves the chain a resume hands to the model (SPEC A5), and lists sessions.
//!
//! ```
//! use chainlog::{Transcript, ResolveOptions, resolve};
//!
//! let jsonl = concat!(
//!     r#"{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"hi"},"uuid":"00000000-0000-4000-8000-000000000001","timestamp":"2025-01-01T00:00:00.000Z","sessionId":"s"}"#, "\n",
//!     r#"{"parentUuid":"00000000-0000-4000-8000-000000000001","isSidechain":false,"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"hello"}]},"uuid":"00000000-0000-4000-8000-000000000002","timestamp":"2025-01-01T00:00:01.000Z","sessionId":"s"}"#, "\n",
//! );
//! let t = Transcript::scan_bytes(jsonl.as_bytes());
//! let r = resolve(&t, ResolveOptions::default()).unwrap();
//! let uuids: Vec<String> = r.chain.iter().map(|l| l.uuid.to_string()).collect();
//! assert_eq!(uuids, ["00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002"]);
//! ```
//!
//! Listing sessions (the catalog, SPEC A3/A6): discovery is a directory listing; the facts of
//! each file come from a callback, here the reference full scan ([`scan_session_facts`]); an
//! index can answer the same callback from its tables.
//!
//! ```no_run
//! use chainlog::{ListOptions, claude_dir, list_sessions, resolve_target, scan_session_facts};
//!
//! let claude = claude_dir(None)?; // $CLAUDE_CONFIG_DIR, else ~/.claude
//! let all = ListOptions { all: true, ..ListOptions::default() };
//! for s in list_sessions(&claude, &all, &mut scan_session_facts)? {
//!     println!("{}  {:>4}  {}", s.session_id, s.message_count, s.title);
//! }
//! // A session id, a transcript path, an agent id or an exact title.
//! let target = resolve_target(&claude, None, "Fix the login bug", &mut scan_session_facts)?;
//! println!("{}", target.path().display());
//! # Ok::<(), chainlog::Error>(())
//! ```

mod catalog;
mod chain;
mod error;
mod export;
mod index;
mod resume;
#[cfg(feature = "search")]
mod search;
mod store;
mod transcript;
mod writer;

pub use catalog::paths::normalize_cwd;
pub use catalog::{
    AgentInfo, AgentLayout, ListOptions, SessionFacts, SortBy, Target,
    agents::{AgentMeta, read_meta as read_agent_meta},
    discover::{
        AgentFile, ProjectDir, ProjectListing, is_uuid, list_project, project_dirs,
        session_agent_files,
    },
    facts::{ForeignSummary, ForkedFrom, PrLink, UNTITLED},
    list::{FactsFn, Scope, list_scope, list_scope_skipping, resolve_scope},
    list_sessions, list_sessions_skipping,
    paths::{claude_dir, key_matches, project_key, projects_root},
    resolve_target, scan_session_facts, session_agents, session_facts,
};
pub use chain::{
    BadLine, ChainBreak, ChainBridge, LeafInfo, LeafRule, Link, MessageRow, Resolution,
    ResolveOptions, Stop, Transcript, UnknownLeaf, View, leaf_report, resolve,
};
pub use error::{Error, Position, Result, check_id};
pub use export::{
    AgentDoc, Branch, Document, ExportFormat, ExportOptions, build as export_document, export,
};
pub use index::facts::FactsCache;
pub use index::ingest::CatchUp;
pub use index::schema::INDEX_SCHEMA_VERSION;
pub use index::state::IndexFault;
pub use index::verify::{Difference, verify};
pub use index::{Answer, Source, Store};
pub use resume::conversation::{Conversation, ResumeOptions};
pub use resume::{
    ApiOptions, ForkContext, Interrupt, ViewEntry, api_messages, api_messages_of,
    detect as detect_interrupt, fork_context,
    message::{Block, Message, Role},
    read_view,
    text::render as render_text,
};
#[cfg(feature = "search")]
pub use search::{
    SearchCatchUp, SearchHit, SearchOptions, matching_sessions, search, search_catch_up,
};
pub use store::Listing;
pub use transcript::envelope::{Flags, Kind, LineProblem, hash64};
pub use transcript::frame::LinePos;
pub use transcript::id::{Id, IdNames};
pub use transcript::time::format_millis;
pub use transcript::upgrade::{STEPS as UPGRADE_STEPS, upgrade};
pub use writer::{
    FlushReport, SessionWriter, WRITTEN_VERSION, WriterOptions, check_entry,
    copy::{branch, fork},
    tombstone::TAIL_WINDOW,
};
