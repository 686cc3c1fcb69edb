//! Token usage and its estimated cost (`chainlog usage`).
//!
//! | module | job |
//! |---|---|
//! | [`gather`] | each session's usage: its file's and its sub-agents' ([`SessionUsage`]) |
//! | [`prices`] | the price table shipped with chainlog (`prices.json`) or read from a file |
//! | [`report`](mod@report) | rows by day, project, model or session, with tokens and estimated cost |
//!
//! What a file's usage counts (every API response once, all branches, copies from other
//! sessions left out) is [`crate::format::UsageTally`]'s; each file's rows are part of its
//! [`crate::SessionFacts`], so a report reads them from the index's listing table and reads
//! no transcript that did not change.

pub mod gather;
pub mod prices;
pub mod report;

pub use crate::transcript::usage::{DayRange, Tokens, UsageRow, parse_day};
pub use gather::SessionUsage;
pub use prices::{ModelPrice, PriceTable};
pub use report::{GroupBy, ModelUsage, UsageLine, UsageReport, report};

/// The sessions of a scope with their usage, and the files that could not be read.
#[derive(Debug, Default)]
pub struct Usage {
    /// Every session of the scope (with its sub-agents), by project then session id.
    pub sessions: Vec<SessionUsage>,
    /// Transcripts or folders that could not be read; the rest are counted.
    pub skipped: Vec<crate::error::Error>,
}
