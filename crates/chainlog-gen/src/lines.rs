//! Builders for single transcript lines, with the key order Claude Code writes.
//!
//! Message lines start with `parentUuid` (format.md §A1). Two envelope styles exist:
//! - [`Style::Modern`] (2.1.88, format.md §A2): `parentUuid, logicalParentUuid?, isSidechain,
//!   promptId?, agentId?`, the body, then `userType, entrypoint, cwd, sessionId, version,
//!   gitBranch, slug?`;
//! - [`Style::Legacy`] (1.0.x – 2.1.14, as in the real files): `parentUuid, isSidechain,
//!   userType, cwd, sessionId, version, gitBranch, slug?, agentId?`, then the body.
//!
//! Metadata lines start with `type`.

use serde_json::{Map, Value, json};

use super::rng::Gen;

/// Envelope key order (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    Modern,
    Legacy,
}

/// The per-file envelope fields of message lines.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Env<'a> {
    pub session_id: &'a str,
    pub cwd: &'a str,
    pub version: &'a str,
    pub git_branch: &'a str,
    pub slug: Option<&'a str>,
    pub style: Style,
    pub sidechain: bool,
    pub agent_id: Option<&'a str>,
}

/// An ordered JSON object under construction.
#[derive(Default)]
pub(crate) struct Obj(Map<String, Value>);

impl Obj {
    pub(crate) fn new() -> Self {
        Self(Map::new())
    }

    pub(crate) fn set(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.0.insert(key.to_owned(), value.into());
        self
    }

    /// Set only when `value` is `Some` (absent optional fields are omitted, format.md §A1).
    pub(crate) fn opt(self, key: &str, value: Option<impl Into<Value>>) -> Self {
        match value {
            Some(v) => self.set(key, v),
            None => self,
        }
    }

    /// Boolean flags are written only when true.
    pub(crate) fn flag(self, key: &str, on: bool) -> Self {
        if on { self.set(key, true) } else { self }
    }

    fn append(mut self, other: Obj) -> Self {
        for (k, v) in other.0 {
            self.0.insert(k, v);
        }
        self
    }

    pub(crate) fn value(self) -> Value {
        Value::Object(self.0)
    }
}

fn nullable(v: Option<&str>) -> Value {
    v.map_or(Value::Null, Value::from)
}

/// Wrap a message body in the envelope.
pub(crate) fn message(
    env: &Env<'_>,
    parent: Option<&str>,
    logical_parent: Option<&str>,
    prompt_id: Option<&str>,
    body: Obj,
) -> Value {
    let head = Obj::new()
        .set("parentUuid", nullable(parent))
        .opt("logicalParentUuid", logical_parent)
        .set("isSidechain", env.sidechain);
    let obj = match env.style {
        Style::Modern => head
            .opt("promptId", prompt_id)
            .opt("agentId", env.agent_id)
            .append(body)
            .set("userType", "external")
            .set("entrypoint", "cli")
            .set("cwd", env.cwd)
            .set("sessionId", env.session_id)
            .set("version", env.version)
            .set("gitBranch", env.git_branch)
            .opt("slug", env.slug),
        Style::Legacy => head
            .set("userType", "external")
            .set("cwd", env.cwd)
            .set("sessionId", env.session_id)
            .set("version", env.version)
            .set("gitBranch", env.git_branch)
            .opt("slug", env.slug)
            .opt("agentId", env.agent_id)
            .opt("promptId", prompt_id)
            .append(body),
    };
    obj.value()
}

/// Optional user-line flags.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct UserFlags {
    pub is_meta: bool,
    pub compact_summary: bool,
    pub transcript_only: bool,
}

/// The body of a `user` line.
pub(crate) struct UserBody<'a> {
    pub content: Value,
    pub flags: UserFlags,
    pub uuid: &'a str,
    pub timestamp: &'a str,
    pub tool_use_result: Option<Value>,
    pub source_tool_assistant: Option<&'a str>,
    pub permission_mode: Option<&'a str>,
}

pub(crate) fn user_body(b: UserBody<'_>) -> Obj {
    Obj::new()
        .set("type", "user")
        .set("message", json!({"role": "user", "content": b.content}))
        .flag("isMeta", b.flags.is_meta)
        .flag("isCompactSummary", b.flags.compact_summary)
        .flag("isVisibleInTranscriptOnly", b.flags.transcript_only)
        .set("uuid", b.uuid)
        .set("timestamp", b.timestamp)
        .opt("toolUseResult", b.tool_use_result)
        .opt("sourceToolAssistantUUID", b.source_tool_assistant)
        .opt("permissionMode", b.permission_mode)
}

/// The `message` object of an assistant line: one content block (format.md §A2).
pub(crate) fn assistant_message(model: &str, id: &str, block: Value, usage: &Value) -> Value {
    Obj::new()
        .set("model", model)
        .set("id", id)
        .set("type", "message")
        .set("role", "assistant")
        .set("content", Value::Array(vec![block]))
        .set("stop_reason", Value::Null)
        .set("stop_sequence", Value::Null)
        .set("usage", usage.clone())
        .value()
}

pub(crate) fn assistant_body(message: Value, request_id: &str, uuid: &str, timestamp: &str) -> Obj {
    Obj::new()
        .set("message", message)
        .set("requestId", request_id)
        .set("type", "assistant")
        .set("uuid", uuid)
        .set("timestamp", timestamp)
}

/// A `usage` object shaped like the Messages API's.
pub(crate) fn usage(g: &mut Gen) -> Value {
    let creation = g.range(0, 8000);
    json!({
        "input_tokens": g.range(1, 12),
        "cache_creation_input_tokens": creation,
        "cache_read_input_tokens": g.range(10_000, 160_000),
        "cache_creation": {"ephemeral_5m_input_tokens": creation, "ephemeral_1h_input_tokens": 0},
        "output_tokens": g.range(1, 2000),
        "service_tier": "standard",
    })
}

/// The body of a `system` line: `type, subtype, content?, isMeta, timestamp, uuid, level`, then
/// the subtype's own fields.
pub(crate) fn system_body(
    subtype: &str,
    content: Option<&str>,
    is_meta: bool,
    uuid: &str,
    timestamp: &str,
    extra: Obj,
) -> Obj {
    Obj::new()
        .set("type", "system")
        .set("subtype", subtype)
        .opt("content", content)
        .set("isMeta", is_meta)
        .set("timestamp", timestamp)
        .set("uuid", uuid)
        .set("level", "info")
        .append(extra)
}

pub(crate) fn attachment_body(attachment: Value, uuid: &str, timestamp: &str) -> Obj {
    Obj::new()
        .set("attachment", attachment)
        .set("type", "attachment")
        .set("uuid", uuid)
        .set("timestamp", timestamp)
}

/// A legacy `progress` body (hook progress between a tool result and the next request).
pub(crate) fn progress_body(data: Value, tool_use_id: &str, uuid: &str, timestamp: &str) -> Obj {
    Obj::new()
        .set("type", "progress")
        .set("data", data)
        .set("toolUseID", tool_use_id)
        .set("parentToolUseID", tool_use_id)
        .set("uuid", uuid)
        .set("timestamp", timestamp)
}

/// A metadata line: `type` first, then the given fields.
pub(crate) fn metadata(kind: &str, fields: Obj) -> Value {
    Obj::new().set("type", kind).append(fields).value()
}

/// Append `v` as one compact JSON line.
pub(crate) fn push_line(out: &mut Vec<u8>, v: &Value) {
    serde_json::to_writer(&mut *out, v).expect("serialising a Value into a Vec cannot fail");
    out.push(b'\n');
}
