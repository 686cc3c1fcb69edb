//! The catalog: which sessions exist and what a picker shows about them
//! (format.md §A3, §A6, §A7).
//!
//! | module | job |
//! |---|---|
//! | [`paths`] | the config root, the projects root, project keys from a cwd |
//! | [`discover`] | project dirs, session files, sub-agents in every layout (directory listings) |
//! | [`prompt`] | the "first meaningful prompt" text rules |
//! | [`facts`] | [`SessionFacts`] of one file from its scan and chain |
//! | [`list`] | listing a project (or all): the facts callback seam, cross-file joins, filters, order |
//! | [`target`] | what `resume X` means: a path, a session id, an agent id or a title |
//! | [`agents`] | the sub-agents of one session |
//! | [`inline`] | inline (1.0.x) sub-agents: sidechain rows grouped, from a scan or the index |
//! | [`cache`] | the listing table: each session's facts in its project's sidecar, valid per file stat |
//!
//! # The seam
//! Listing takes the per-file facts as a callback (`&mut dyn FnMut(&Path) ->
//! Result<SessionFacts>`): [`scan_session_facts`] answers with the reference loader (a full
//! scan per file); an index answers from its tables ([`list::FactsSource`]: the listing table
//! answers a project's files at once, [`cache::FactsCache::facts_all`]). Everything else (discovery, joins across
//! files, filters, order, title lookups) is shared, so both give the same listing.

pub mod agents;
pub mod cache;
pub mod discover;
pub mod facts;
pub mod indexed;
pub mod inline;
pub mod list;
pub mod paths;
pub mod prompt;
pub(crate) mod shorten;
pub mod target;

pub use agents::{AgentInfo, session_agents};
pub use facts::{SessionFacts, scan_session_facts, session_facts};
pub use list::{ListOptions, SortBy, list_sessions, list_sessions_skipping};
pub use target::{Target, resolve_target};
