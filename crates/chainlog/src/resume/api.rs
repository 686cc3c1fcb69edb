//! The API view: the `messages` the real client builds from a resume view (format.md §A8).
//!
//! # Context
//! A resume view is a list of transcript entries. What the model sees is different: one
//! API response written as N lines is one assistant message, its tool results one user
//! message; system entries are dropped except local commands (sent as user text); API-error
//! replies are dropped; unanswered tool calls are dropped mid-conversation and repaired at the
//! end; a conversation ending on a user message gets "No response requested." (not when the
//! chain was cut with `--at`: then the client writes nothing and pairs an unanswered trailing
//! call with [`TOOL_RESULT_MISSING`] at request time). Claude Code
//! 2.1.328 was observed doing exactly this (the conformance kit, see tests/it/conformance.rs).
//!
//! # Design
//! [`api_messages`] runs in passes over owned [`Unit`]s (one per entry), in the order the
//! client applies them: classify and render → strip thinking of another model → pairing
//! repair → regroup one `message.id` → drop thinking-only replies → trailing repair →
//! join consecutive user units. Request-time injections (`<system-reminder>` blocks, the
//! environment `role:"system"` entry, the new prompt, `cache_control`) are not part of the
//! view; rendered `renderedRole:"system"` attachments are returned as `role:"system"`
//! messages placed after the user message they follow.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::body::ViewEntry;

/// The text of the synthetic result the client writes for an unanswered trailing `tool_use`.
pub const INTERRUPTED_TOOL_CALL: &str = "[Tool call interrupted: the session ended before this call's result was recorded, so its outcome is unknown. Check whether it took effect before relying on it or running it again.]";

/// The text of the synthetic assistant reply the client adds after a trailing user message.
pub const NO_RESPONSE_REQUESTED: &str = "No response requested.";

/// The result the client puts, at request time only, for a call of the last reply that has
/// none when the chain was cut with `--resume-session-at` (chainlog's `--at`).
pub const TOOL_RESULT_MISSING: &str = "[Tool result missing due to internal error]";

/// Options of [`api_messages`].
#[derive(Debug, Clone, Default)]
pub struct ApiOptions {
    /// The model of the request. Signed thinking blocks written by another model are left out
    /// (the client does so). `None`: keep every thinking block.
    pub model: Option<String>,
    /// The view was cut after a chosen message (`--at`, the client's `--resume-session-at`).
    /// The client then writes no repair: a trailing user message gets no "No response
    /// requested.", and each unanswered call of the last reply gets [`TOOL_RESULT_MISSING`]
    /// (an `is_error` result first in the next user message) instead of the written
    /// [`INTERRUPTED_TOOL_CALL`] result.
    pub cut: bool,
    /// The cut fell inside a response whose next line holds more than thinking
    /// ([`Conversation::cut_inside_response`](crate::Conversation::cut_inside_response)): the
    /// client keeps the cut reply, and one left with nothing once another model's thinking is
    /// taken out is sent as [`NO_CONTENT`] (it drops a cut reply of thinking only otherwise).
    pub cut_inside_response: bool,
    /// MCP tools the resuming client has (`mcp__<server>__<tool>`, or a server's prefix
    /// `mcp__<server>__`). A `ToolSearch` result's references to tools the client does not
    /// have are left out, and a result left with none is sent as [`TOOL_REFERENCES_REMOVED`];
    /// the built-in tools are always there. Default: none (a client without MCP servers, as
    /// `claude -p` in a fresh environment).
    pub mcp_tools: Vec<String>,
}

/// The text the client sends for an assistant reply left with no content.
pub const NO_CONTENT: &str = "(no content)";

/// The text block the client adds after a `ToolSearch` result that loaded tools.
pub const TOOL_LOADED: &str = "Tool loaded.";

/// The content the client sends for a `ToolSearch` result whose tools are all gone.
pub const TOOL_REFERENCES_REMOVED: &str = "[Tool references removed - tools no longer available]";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    User,
    Assistant,
    System,
}

/// One entry of the view, as the request will carry it.
#[derive(Debug, Clone)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "independent facts about one entry"
)]
struct Unit {
    role: Role,
    /// Blocks (a string content is one text block; `plain` remembers it was a string).
    blocks: Vec<Value>,
    plain: bool,
    /// `message.id` of an assistant.
    mid: Option<String>,
    /// A `system/local_command` entry.
    local_command: bool,
    /// A user entry with `isMeta`.
    meta: bool,
    /// A rendered attachment (sent as user content, but not a user turn).
    attachment: bool,
    /// How many of its `ToolSearch` results loaded tools ([`load_tools`]).
    tool_loaded: usize,
}

impl Unit {
    fn user(blocks: Vec<Value>, plain: bool) -> Unit {
        Unit {
            role: Role::User,
            blocks,
            plain,
            mid: None,
            local_command: false,
            meta: false,
            attachment: false,
            tool_loaded: 0,
        }
    }

    fn only_tool_results(&self) -> bool {
        self.role == Role::User
            && !self.blocks.is_empty()
            && self.blocks.iter().all(|b| block_type(b) == "tool_result")
    }

    fn tool_uses(&self) -> impl Iterator<Item = &str> {
        self.blocks
            .iter()
            .filter(|b| block_type(b) == "tool_use")
            .filter_map(|b| b.get("id").and_then(Value::as_str))
    }
}

fn block_type(b: &Value) -> &str {
    b.get("type").and_then(Value::as_str).unwrap_or("")
}

fn text_block(s: &str) -> Value {
    json!({"type": "text", "text": s})
}

fn flag(v: &Value, k: &str) -> bool {
    v.get(k).and_then(Value::as_bool) == Some(true)
}

/// The content of a message as blocks, and whether it was a plain string.
fn content_blocks(content: Option<&Value>) -> (Vec<Value>, bool) {
    match content {
        Some(Value::String(s)) => (vec![text_block(s)], true),
        Some(Value::Array(a)) => (a.clone(), false),
        _ => (Vec::new(), false),
    }
}

/// Removes the `<system-reminder>\n` … `\n</system-reminder>` wrapper of a rendered text.
fn unwrap_reminder(s: &str) -> &str {
    s.strip_prefix("<system-reminder>\n")
        .and_then(|r| r.strip_suffix("\n</system-reminder>"))
        .unwrap_or(s)
}

/// Turns one entry into a unit, or `None` when the client does not send it.
fn classify(v: &Value) -> Option<Unit> {
    match v.get("type").and_then(Value::as_str)? {
        "user" => {
            let msg = v.get("message")?;
            let (mut blocks, mut plain) = content_blocks(msg.get("content"));
            if v.pointer("/origin/kind").and_then(Value::as_str) == Some("task-notification") {
                let text: String = blocks
                    .iter()
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .collect();
                blocks = vec![text_block(&format!(
                    "<system-reminder>\n{text}\n</system-reminder>"
                ))];
                plain = true;
            }
            let mut u = Unit::user(blocks, plain);
            u.meta = flag(v, "isMeta");
            Some(u)
        }
        "assistant" => {
            if flag(v, "isApiErrorMessage") {
                return None;
            }
            let msg = v.get("message")?;
            let (blocks, _) = content_blocks(msg.get("content"));
            Some(Unit {
                role: Role::Assistant,
                blocks,
                plain: false,
                mid: msg.get("id").and_then(Value::as_str).map(str::to_owned),
                local_command: false,
                meta: false,
                attachment: false,
                tool_loaded: 0,
            })
        }
        "system" => {
            if v.get("subtype").and_then(Value::as_str) != Some("local_command") {
                return None;
            }
            let text = v.get("content").and_then(Value::as_str)?;
            let mut u = Unit::user(vec![text_block(text)], true);
            u.local_command = true;
            Some(u)
        }
        "attachment" => {
            let rendered = v.get("rendered")?.as_array()?;
            let texts: Vec<&str> = rendered
                .iter()
                .filter_map(|r| r.get("content").and_then(Value::as_str))
                .collect();
            // A message the user queued while a turn ran, delivered within that turn (2.1.332
            // writes `hostsOwnTurn`): sent as plain user text beside the tool results, without
            // its reminder wrapper, whichever client resumes it (issue 31, class 6).
            if v.pointer("/attachment/type").and_then(Value::as_str) == Some("queued_command")
                && v.pointer("/attachment/hostsOwnTurn")
                    .and_then(Value::as_bool)
                    == Some(true)
            {
                let blocks = texts
                    .iter()
                    .map(|t| text_block(unwrap_reminder(t)))
                    .collect();
                let mut u = Unit::user(blocks, false);
                u.attachment = true;
                return Some(u);
            }
            match v.get("renderedRole").and_then(Value::as_str) {
                Some("system") => Some(Unit {
                    role: Role::System,
                    blocks: texts
                        .iter()
                        .map(|t| text_block(unwrap_reminder(t)))
                        .collect(),
                    plain: true,
                    mid: None,
                    local_command: false,
                    meta: false,
                    attachment: true,
                    tool_loaded: 0,
                }),
                Some("user") => {
                    let mut u = Unit::user(texts.iter().map(|t| text_block(t)).collect(), false);
                    u.attachment = true;
                    Some(u)
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// Thinking of another model is not sent (a signed block is bound to its model).
fn strip_foreign_thinking(units: &mut [Unit], model: &str, models: &[Option<String>]) {
    for (u, m) in units.iter_mut().zip(models) {
        if u.role != Role::Assistant || m.as_deref().is_none_or(|m| m == model) {
            continue;
        }
        u.blocks.retain(|b| {
            block_type(b) != "thinking"
                || b.get("signature")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
        });
    }
}

/// The cut response (the last assistant's lines, `was_empty` telling which were empty before
/// another model's thinking was taken out) left with nothing is sent as [`NO_CONTENT`].
fn no_content_at_cut(units: &mut [Unit], was_empty: &[bool]) {
    let Some(last) = units.iter().rposition(|u| u.role == Role::Assistant) else {
        return;
    };
    let mid = units[last].mid.clone();
    let lines: Vec<usize> = (0..=last)
        .filter(|&i| units[i].role == Role::Assistant && units[i].mid == mid)
        .collect();
    let emptied = lines.iter().any(|&i| !was_empty[i]);
    if emptied && lines.iter().all(|&i| units[i].blocks.is_empty()) {
        units[last].blocks = vec![json!({"type": "text", "text": NO_CONTENT, "citations": []})];
    }
}

/// Whether the resuming client has tool `name`: a built-in one, or an MCP tool it was told of.
fn has_tool(name: &str, mcp_tools: &[String]) -> bool {
    !name.starts_with("mcp__")
        || mcp_tools
            .iter()
            .any(|t| t == name || (t.ends_with("__") && name.starts_with(t.as_str())))
}

/// `ToolSearch` results (content of `tool_reference` items only): references to tools the
/// client lacks are left out, a result left with none becomes [`TOOL_REFERENCES_REMOVED`];
/// each result that still loads a tool gets a [`TOOL_LOADED`] text block after the last
/// result of its message (added at request time: it takes no joining newline).
fn load_tools(units: &mut [Unit], mcp_tools: &[String]) {
    for u in units.iter_mut().filter(|u| u.role == Role::User) {
        let mut loaded = 0;
        for b in &mut u.blocks {
            if block_type(b) != "tool_result" {
                continue;
            }
            let Some(items) = b.get_mut("content").and_then(Value::as_array_mut) else {
                continue;
            };
            if items.is_empty() || !items.iter().all(|i| block_type(i) == "tool_reference") {
                continue;
            }
            items.retain(|i| {
                i.get("tool_name")
                    .and_then(Value::as_str)
                    .is_none_or(|n| has_tool(n, mcp_tools))
            });
            if items.is_empty() {
                items.push(text_block(TOOL_REFERENCES_REMOVED));
            } else {
                loaded += 1;
            }
        }
        u.tool_loaded = loaded;
    }
}

/// Tool name `Task` (older versions) is sent as `Agent`.
fn rename_task(units: &mut [Unit]) {
    for b in units
        .iter_mut()
        .filter(|u| u.role == Role::Assistant)
        .flat_map(|u| u.blocks.iter_mut())
    {
        if block_type(b) == "tool_use" && b.get("name").and_then(Value::as_str) == Some("Task") {
            b["name"] = Value::from("Agent");
        }
    }
}

fn result_id(b: &Value) -> Option<&str> {
    (block_type(b) == "tool_result")
        .then(|| b.get("tool_use_id").and_then(Value::as_str))
        .flatten()
}

/// Pairing repair: unanswered `tool_use`s are dropped unless only tool calls and results
/// follow them; repeated ids are kept once; results of dropped calls are dropped.
fn repair_pairing(units: &mut [Unit]) {
    let answered: HashSet<String> = units
        .iter()
        .flat_map(|u| u.blocks.iter())
        .filter_map(|b| result_id(b).map(str::to_owned))
        .collect();
    // The first unit from which on only tool calls and results follow.
    let mut tail_from = units.len();
    for (i, u) in units.iter().enumerate().rev() {
        let calls_only = match u.role {
            Role::Assistant => u
                .blocks
                .iter()
                .all(|b| matches!(block_type(b), "tool_use" | "thinking" | "redacted_thinking")),
            Role::User => u.only_tool_results(),
            Role::System => true,
        };
        if !calls_only {
            break;
        }
        tail_from = i;
    }
    let mut kept_uses = HashSet::new();
    for (i, u) in units.iter_mut().enumerate() {
        if u.role != Role::Assistant {
            continue;
        }
        u.blocks.retain(|b| {
            if block_type(b) != "tool_use" {
                return true;
            }
            let Some(id) = b.get("id").and_then(Value::as_str) else {
                return true;
            };
            (answered.contains(id) || i >= tail_from) && kept_uses.insert(id.to_owned())
        });
    }
    let mut kept_results = HashSet::new();
    for u in units.iter_mut().filter(|u| u.role == Role::User) {
        u.blocks.retain(|b| match result_id(b) {
            Some(id) => kept_uses.contains(id) && kept_results.insert(id.to_owned()),
            None => true,
        });
    }
}

/// Regroups the lines of one response, with their results moved after the joined blocks;
/// then drops replies left with only thinking (or nothing).
fn regroup(units: Vec<Unit>) -> Vec<Unit> {
    let mut out: Vec<Unit> = Vec::with_capacity(units.len());
    for u in units {
        if u.role == Role::Assistant
            && u.mid.is_some()
            && let Some(j) = out.iter().rposition(|o| o.role == Role::Assistant)
            && out[j].mid == u.mid
            && out[j + 1..]
                .iter()
                .all(|o| o.only_tool_results() || o.role == Role::System)
        {
            let moved: Vec<Unit> = out.drain(j + 1..).collect();
            let blocks = &mut out[j].blocks;
            blocks.extend(u.blocks);
            // Merged lines put text before tool calls (format.md §A8).
            let (calls, other): (Vec<Value>, Vec<Value>) = std::mem::take(blocks)
                .into_iter()
                .partition(|b| block_type(b) == "tool_use");
            blocks.extend(other);
            blocks.extend(calls);
            out.extend(moved);
            continue;
        }
        out.push(u);
    }
    out.retain(|u| u.role != Role::Assistant || !only_thinking(u));
    out.retain(|u| u.role != Role::User || !u.blocks.is_empty());
    out
}

/// A reply with nothing but thinking (or nothing at all).
fn only_thinking(u: &Unit) -> bool {
    u.blocks
        .iter()
        .all(|b| matches!(block_type(b), "thinking" | "redacted_thinking"))
}

fn synthetic_assistant(text: &str) -> Unit {
    Unit {
        role: Role::Assistant,
        blocks: vec![text_block(text)],
        plain: false,
        mid: None,
        local_command: false,
        meta: false,
        attachment: false,
        tool_loaded: 0,
    }
}

/// The repair a resume writes when the chain ends mid-turn: results for the unanswered
/// calls of the last reply, then "No response requested." after a trailing user message.
/// Trailing local commands go after the synthetic reply. `reply_end`: the chain ended on
/// an API-error reply or a thinking-only reply (no synthetic turn then).
fn repair_tail(units: &mut Vec<Unit>, reply_end: bool) {
    let split = units
        .iter()
        .rposition(|u| u.role != Role::System && !u.local_command)
        .map_or(0, |i| i + 1);
    let trailing: Vec<Unit> = units.drain(split..).collect();
    let answered: HashSet<String> = units
        .iter()
        .flat_map(|u| u.blocks.iter())
        .filter_map(|b| result_id(b).map(str::to_owned))
        .collect();
    if let Some(last_a) = units.iter().rposition(|u| u.role == Role::Assistant) {
        let open: Vec<String> = units[last_a]
            .tool_uses()
            .filter(|id| !answered.contains(*id))
            .map(str::to_owned)
            .collect();
        if !open.is_empty() {
            let blocks = open
                .iter()
                .map(|id| {
                    json!({"type": "tool_result", "content": [text_block(INTERRUPTED_TOOL_CALL)], "is_error": true, "tool_use_id": id})
                })
                .collect();
            units.push(Unit::user(blocks, false));
        }
    }
    let ends_on_user = units
        .iter()
        .rev()
        .find(|u| u.role != Role::System && !u.attachment)
        .is_some_and(|u| u.role == Role::User);
    let caveat_group = caveat_group(units);
    if ends_on_user && !reply_end && !caveat_group {
        units.push(synthetic_assistant(NO_RESPONSE_REQUESTED));
    }
    units.extend(trailing);
}

/// The request-time pairing of a cut chain (nothing is written): each unanswered call of
/// the last reply gets a [`TOOL_RESULT_MISSING`] result, placed before the results that
/// follow the reply (the client prepends them to the next user message).
fn pair_cut_tail(units: &mut Vec<Unit>) {
    let Some(last_a) = units.iter().rposition(|u| u.role == Role::Assistant) else {
        return;
    };
    let answered: HashSet<&str> = units[last_a..]
        .iter()
        .flat_map(|u| u.blocks.iter())
        .filter_map(result_id)
        .collect();
    let missing: Vec<Value> = units[last_a]
        .tool_uses()
        .filter(|id| !answered.contains(id))
        .map(|id| {
            json!({"type": "tool_result", "tool_use_id": id, "content": TOOL_RESULT_MISSING, "is_error": true})
        })
        .collect();
    if !missing.is_empty() {
        units.insert(last_a + 1, Unit::user(missing, false));
    }
}

/// Whether the user messages after the last assistant reply include the
/// `<local-command-caveat>` meta message that opens a local-command group.
fn caveat_group(units: &[Unit]) -> bool {
    units
        .iter()
        .rev()
        .take_while(|u| u.role != Role::Assistant)
        .any(|u| {
            u.meta
                && u.blocks.iter().any(|b| {
                    b.get("text")
                        .and_then(Value::as_str)
                        .is_some_and(|t| t.starts_with("<local-command-caveat>"))
                })
        })
}

/// Joins consecutive user units into one message (a text block followed by another block
/// gets `"\n"` appended) and places system units after the user message they follow.
fn join(units: Vec<Unit>) -> Vec<Value> {
    let mut out = Vec::new();
    let mut user: Option<Unit> = None;
    let mut system: Vec<Value> = Vec::new();
    let flush = |out: &mut Vec<Value>, user: &mut Option<Unit>, system: &mut Vec<Value>| {
        if let Some(mut u) = user.take() {
            if u.tool_loaded > 0
                && let Some(at) = u
                    .blocks
                    .iter()
                    .rposition(|b| block_type(b) == "tool_result")
            {
                let rest = u.blocks.split_off(at + 1);
                u.blocks
                    .extend(std::iter::repeat_n(text_block(TOOL_LOADED), u.tool_loaded));
                u.blocks.extend(rest);
            }
            out.push(message("user", u.blocks, u.plain));
        }
        if !system.is_empty() {
            let text: Vec<&str> = system
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            out.push(json!({"role": "system", "content": text.join("\n\n")}));
            system.clear();
        }
    };
    for u in units {
        match u.role {
            Role::System => system.extend(u.blocks),
            Role::User => {
                if let Some(acc) = &mut user {
                    if let Some(Value::Object(last)) = acc.blocks.last_mut()
                        && last.get("type").and_then(Value::as_str) == Some("text")
                        && let Some(Value::String(t)) = last.get_mut("text")
                    {
                        t.push('\n');
                    }
                    acc.blocks.extend(u.blocks);
                    acc.tool_loaded += u.tool_loaded;
                    acc.plain = false;
                } else {
                    // Attachments before the first prompt are placed after it.
                    if system.is_empty() || !out.is_empty() {
                        flush(&mut out, &mut user, &mut system);
                    }
                    user = Some(u);
                }
            }
            Role::Assistant => {
                flush(&mut out, &mut user, &mut system);
                out.push(message("assistant", u.blocks, false));
            }
        }
    }
    flush(&mut out, &mut user, &mut system);
    out
}

fn message(role: &str, blocks: Vec<Value>, plain: bool) -> Value {
    let mut m = Map::new();
    m.insert("role".into(), Value::from(role));
    let content = match (plain, blocks.as_slice()) {
        (true, [b]) if block_type(b) == "text" => b["text"].clone(),
        _ => Value::Array(blocks),
    };
    m.insert("content".into(), content);
    Value::Object(m)
}

/// The `messages` the client builds from a resume view (format.md §A8 "The API view"), without
/// the request-time injections and without the new prompt.
pub fn api_messages(view: &[ViewEntry], opts: &ApiOptions) -> Vec<Value> {
    let values: Vec<Value> = view.iter().filter_map(ViewEntry::value).collect();
    api_messages_of(&values, opts)
}

/// [`api_messages`] over parsed entries.
pub fn api_messages_of(entries: &[Value], opts: &ApiOptions) -> Vec<Value> {
    let mut units = Vec::new();
    let mut models = Vec::new();
    let mut api_error_end = false;
    for v in entries {
        let is_turn = matches!(
            v.get("type").and_then(Value::as_str),
            Some("user" | "assistant")
        );
        if is_turn {
            api_error_end = flag(v, "isApiErrorMessage");
        }
        if let Some(u) = classify(v) {
            models.push(
                v.pointer("/message/model")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            );
            units.push(u);
        }
    }
    if let Some(model) = &opts.model {
        let before: Vec<bool> = units.iter().map(|u| u.blocks.is_empty()).collect();
        strip_foreign_thinking(&mut units, model, &models);
        if opts.cut && opts.cut_inside_response {
            no_content_at_cut(&mut units, &before);
        }
    }
    rename_task(&mut units);
    repair_pairing(&mut units);
    let mut units = regroup(units);
    if opts.cut {
        pair_cut_tail(&mut units);
    } else {
        // A reply of thinking only is dropped first: the prompt before it ends the chain and
        // gets "No response requested." (issue 31, class 1).
        repair_tail(&mut units, api_error_end);
    }
    load_tools(&mut units, &opts.mcp_tools);
    join(units)
}

/// How a view ends after the clean-up of format.md §A7 step 2 (interrupt detection).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tail {
    /// Nothing that is sent.
    None,
    /// A finished assistant reply.
    Reply,
    /// An API-error reply (after the last sent message).
    ApiError,
    /// A local command.
    LocalCommand,
    /// A meta or compact-summary user message.
    Meta,
    /// A user message with a tool result.
    ToolResult,
    /// A rendered attachment sent as user content.
    Attachment,
    /// A plain user prompt.
    Prompt,
}

/// Classifies the end of the view after the clean-up (unanswered and thinking-only replies
/// dropped). Entries that are not sent (system, unrendered attachments such as
/// `prompt_snapshot` and most hook results) do not count.
pub(crate) fn cleaned_tail(entries: &[Value]) -> Tail {
    tail_of(entries).0
}

/// The [`cleaned_tail`] of a view that ends with `entries`, when they decide it whatever came
/// before them, *provided* no tool id they name ([`tool_ids`]) occurs before them; `None` when
/// they cannot: they hold no assistant reply (the local-command check looks back to the last
/// one), or nothing in them counts (the answer is further back).
///
/// Why that suffices: every pass of the clean-up (pairing repair, the answered ids) relates
/// entries only through the tool ids they share, and the trailing-calls rule looks back from
/// the end, where the suffix is.
pub(crate) fn suffix_tail(entries: &[Value]) -> Option<Tail> {
    let (tail, assistant) = tail_of(entries);
    (assistant && tail != Tail::None).then_some(tail)
}

/// The tool ids an entry names: its `tool_use` ids and the ids its `tool_result`s answer, as
/// the clean-up sees them (an entry that is not sent names none).
pub(crate) fn tool_ids(v: &Value) -> Vec<String> {
    classify(v).map_or_else(Vec::new, |u| {
        u.tool_uses()
            .chain(u.blocks.iter().filter_map(result_id))
            .map(str::to_owned)
            .collect()
    })
}

/// [`cleaned_tail`], and whether the entries hold an assistant reply.
fn tail_of(entries: &[Value]) -> (Tail, bool) {
    let (tail, units) = tail_units(entries);
    (tail, units.iter().any(|u| u.role == Role::Assistant))
}

fn tail_units(entries: &[Value]) -> (Tail, Vec<Unit>) {
    let mut units = Vec::new();
    let mut kinds = Vec::new();
    let mut api_error_at = None;
    for v in entries {
        if v.get("type").and_then(Value::as_str) == Some("assistant")
            && flag(v, "isApiErrorMessage")
        {
            api_error_at = Some(units.len());
        }
        if let Some(u) = classify(v) {
            let tail = match u.role {
                Role::Assistant => Tail::Reply,
                Role::System => Tail::None,
                Role::User if u.local_command => Tail::LocalCommand,
                Role::User if u.meta || flag(v, "isCompactSummary") => Tail::Meta,
                Role::User if v.get("type").and_then(Value::as_str) == Some("attachment") => {
                    Tail::Attachment
                }
                Role::User if u.only_tool_results() => Tail::ToolResult,
                Role::User => Tail::Prompt,
            };
            kinds.push(tail);
            units.push(u);
        }
    }
    if api_error_at == Some(units.len()) {
        return (Tail::ApiError, units);
    }
    // A local-command group (opened by the caveat meta message) is not an interrupted turn.
    if caveat_group(&units) {
        return (Tail::LocalCommand, units);
    }
    // The clean-up only drops assistant units (and results of dropped calls, which only
    // exist with an unanswered call, never on a completed pair).
    repair_pairing(&mut units);
    // A reply whose every call is unanswered is not a finished reply (§A7 step 2, §A8), even
    // where the API view keeps the trailing calls to pair them with the written repair.
    let answered: HashSet<&str> = units
        .iter()
        .flat_map(|u| u.blocks.iter())
        .filter_map(result_id)
        .collect();
    let keep: Vec<bool> = units
        .iter()
        .map(|u| {
            u.role != Role::Assistant
                || u.blocks.iter().any(|b| match block_type(b) {
                    "thinking" | "redacted_thinking" => false,
                    "tool_use" => b
                        .get("id")
                        .and_then(Value::as_str)
                        .is_none_or(|id| answered.contains(id)),
                    _ => true,
                })
        })
        .collect();
    let tail = keep
        .iter()
        .zip(&kinds)
        .zip(&units)
        .rev()
        .find(|((k, t), u)| {
            **k && **t != Tail::None && !(u.role == Role::User && u.blocks.is_empty())
        })
        .map_or(Tail::None, |((_, t), _)| *t);
    (tail, units)
}
