//! Interrupt detection on resumed messages (SPEC A7, step 3).
//!
//! Looks at the last message that is not system, progress or an API error and says whether
//! the conversation was cut mid-turn.

use serde::Serialize;
use serde_json::Value;

use super::body::ViewEntry;
use crate::transcript::envelope::Kind;

/// How a resumed conversation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Interrupt {
    /// Ended on an assistant reply (or nothing to judge): nothing to continue.
    None,
    /// Ended on a user prompt with no reply: the prompt is re-sent.
    InterruptedPrompt,
    /// Ended on a tool result or attachment: the turn is continued
    /// ("Continue from where you left off.").
    InterruptedTurn,
}

/// Classifies the end of a view.
pub fn detect(view: &[ViewEntry]) -> Interrupt {
    let last = view.iter().rev().find(|e| {
        let k = e.link.kind;
        k != Kind::System && k != Kind::Progress && !is_api_error(e)
    });
    let Some(last) = last else {
        return Interrupt::None;
    };
    match last.link.kind {
        Kind::Assistant => Interrupt::None,
        Kind::Attachment => Interrupt::InterruptedTurn,
        _ => {
            let v = last.value().unwrap_or(Value::Null);
            let flag = |k: &str| v.get(k).and_then(Value::as_bool) == Some(true);
            if flag("isMeta") || flag("isCompactSummary") {
                Interrupt::None
            } else if has_tool_result(&v) {
                Interrupt::InterruptedTurn
            } else {
                Interrupt::InterruptedPrompt
            }
        }
    }
}

fn is_api_error(e: &ViewEntry) -> bool {
    e.link.kind == Kind::Assistant
        && e.value()
            .and_then(|v| v.get("isApiErrorMessage").and_then(Value::as_bool))
            == Some(true)
}

fn has_tool_result(v: &Value) -> bool {
    v.pointer("/message/content")
        .and_then(Value::as_array)
        .is_some_and(|blocks| {
            blocks
                .iter()
                .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
        })
}
