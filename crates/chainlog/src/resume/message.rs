//! Entries of a view as typed messages: role, kind, time and content blocks, with the raw JSON
//! line kept byte for byte.

use serde_json::Value;

use super::body::ViewEntry;
use crate::id::IdNames;

/// Who speaks in a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A `user` entry (prompts and tool results).
    User,
    /// An `assistant` entry.
    Assistant,
    /// A `system` entry (`subtype` says which: compact boundary, local command, …).
    System,
    /// An `attachment` entry (hook output, file contents, reminders, …).
    Attachment,
    /// Any other entry type.
    Other,
}

impl Role {
    /// The lower-case name (`user`, `assistant`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::System => "system",
            Role::Attachment => "attachment",
            Role::Other => "other",
        }
    }
}

/// One block of a message's content.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// Plain text.
    Text(String),
    /// The model's reasoning.
    Thinking(String),
    /// A tool call.
    ToolUse {
        /// The call id.
        id: String,
        /// The tool.
        name: String,
        /// The arguments.
        input: Value,
    },
    /// A tool's answer.
    ToolResult {
        /// The call it answers.
        tool_use_id: String,
        /// Its text (text parts joined by newlines).
        text: String,
        /// Whether the tool failed.
        is_error: bool,
    },
    /// An image (not shown inline).
    Image {
        /// `source.media_type`, when given.
        media_type: Option<String>,
    },
    /// A block of another type, kept as written.
    Other {
        /// Its `type`.
        kind: String,
        /// The block.
        raw: Value,
    },
}

/// A message of a view.
#[derive(Debug, Clone)]
pub struct Message {
    /// The uuid as the file wrote it.
    pub uuid: String,
    /// Who speaks.
    pub role: Role,
    /// `subtype` of a system entry or `attachment.type` of an attachment.
    pub subtype: Option<String>,
    /// `timestamp` as written.
    pub timestamp: Option<String>,
    /// A sub-agent's message.
    pub sidechain: bool,
    /// A compaction summary or other meta message the client does not show as a prompt.
    pub meta: bool,
    /// The content.
    pub blocks: Vec<Block>,
    /// The line as handed over (byte-identical to the file unless a projection changed it).
    pub raw: bytes::Bytes,
}

impl Message {
    /// Reads a view entry.
    pub fn from_entry(entry: &ViewEntry, names: &IdNames) -> Message {
        let v = entry.value().unwrap_or(Value::Null);
        Message::from_value(&v, names.name(entry.link.uuid), entry.json.clone())
    }

    /// Reads a parsed line whose uuid is `uuid`; `raw` is the line.
    pub fn from_value(v: &Value, uuid: String, raw: bytes::Bytes) -> Message {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let role = match v.get("type").and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            Some("system") => Role::System,
            Some("attachment") => Role::Attachment,
            _ => Role::Other,
        };
        let subtype = match role {
            Role::Attachment => v
                .pointer("/attachment/type")
                .and_then(Value::as_str)
                .map(str::to_owned),
            _ => s("subtype"),
        };
        let blocks = match v.pointer("/message/content") {
            Some(Value::String(t)) => vec![Block::Text(t.clone())],
            Some(Value::Array(items)) => items.iter().map(block).collect(),
            _ => s("content").map(Block::Text).into_iter().collect(),
        };
        Message {
            uuid,
            role,
            subtype,
            timestamp: s("timestamp"),
            sidechain: v.get("isSidechain").and_then(Value::as_bool) == Some(true),
            meta: v.get("isMeta").and_then(Value::as_bool) == Some(true)
                || v.get("isCompactSummary").and_then(Value::as_bool) == Some(true),
            blocks,
            raw,
        }
    }

    /// The text blocks joined by blank lines.
    pub fn text(&self) -> String {
        self.blocks
            .iter()
            .filter_map(|b| match b {
                Block::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// Whether this is a compact boundary (`system`/`compact_boundary`).
    pub fn is_compact_boundary(&self) -> bool {
        self.role == Role::System && self.subtype.as_deref() == Some("compact_boundary")
    }
}

fn block(b: &Value) -> Block {
    let s = |k: &str| {
        b.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    match b.get("type").and_then(Value::as_str).unwrap_or_default() {
        "text" => Block::Text(s("text")),
        "thinking" => Block::Thinking(s("thinking")),
        "tool_use" => Block::ToolUse {
            id: s("id"),
            name: s("name"),
            input: b.get("input").cloned().unwrap_or(Value::Null),
        },
        "tool_result" => Block::ToolResult {
            tool_use_id: s("tool_use_id"),
            text: result_text(b.get("content")),
            is_error: b.get("is_error").and_then(Value::as_bool) == Some(true),
        },
        "image" => Block::Image {
            media_type: b
                .pointer("/source/media_type")
                .and_then(Value::as_str)
                .map(str::to_owned),
        },
        other => Block::Other {
            kind: other.to_owned(),
            raw: b.clone(),
        },
    }
}

/// A tool result's text: its string content, or its text parts joined by newlines.
pub(crate) fn result_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}
