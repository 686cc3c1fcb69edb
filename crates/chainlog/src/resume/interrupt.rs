//! Interrupt detection on resumed messages (format.md §A7 step 3, as amended by §A8).
//!
//! Runs after the clean-up of §A7 step 2 (the same passes as the API view,
//! [`super::api`]): a trailing thinking-only reply or a reply whose every `tool_use` is
//! unanswered is not a finished reply. A chain ending in a `prompt_snapshot` or hook
//! attachment, a local command or an API-error reply is not interrupted (Claude Code
//! 2.1.328 adds no repair there).

use serde::Serialize;
use serde_json::Value;

use super::api::{Tail, cleaned_tail};
use super::body::ViewEntry;

/// How a resumed conversation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Interrupt {
    /// Ended on an assistant reply (or nothing to judge): nothing to continue.
    None,
    /// Ended on a user prompt with no reply: the prompt is re-sent.
    InterruptedPrompt,
    /// Ended on a tool result or a rendered attachment: the turn was cut.
    InterruptedTurn,
}

/// Classifies the end of a view.
pub fn detect(view: &[ViewEntry]) -> Interrupt {
    let values: Vec<Value> = view.iter().filter_map(ViewEntry::value).collect();
    match cleaned_tail(&values) {
        Tail::None | Tail::Reply | Tail::ApiError | Tail::LocalCommand | Tail::Meta => {
            Interrupt::None
        }
        Tail::ToolResult | Tail::Attachment => Interrupt::InterruptedTurn,
        Tail::Prompt => Interrupt::InterruptedPrompt,
    }
}
