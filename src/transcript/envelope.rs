//! The envelope of an entry: the fields that place it in the tree or in a metadata map,
//! parsed with borrowed strings and everything else skipped.
//!
//! # Design
//! A full `serde_json::Value` parse of a line costs ~2.5× a borrowed parse that skips the
//! body (`IgnoredAny`), and the body is only needed for the lines a caller actually returns.
//! [`parse_line`] turns one framed line into an [`Entry`]: either a [`MessageHead`] (a compact,
//! owned, fixed-size summary that both the reference loader and the index store) or a
//! [`MetaEntry`] (a metadata line, merged per SPEC A2). Lines that `serde_json` refuses are
//! retried once through [`super::lossy::repair`] before being reported as bad.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::{self, IgnoredAny, SeqAccess, Visitor};

use super::id::{Id, IdNames};
use super::time::parse_millis;

/// What kind of message a line is (the tree participants plus legacy progress).
/// Stored in the index as one byte (`serde(into/try_from = "u8")`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(into = "u8", try_from = "u8")]
pub enum Kind {
    /// `type: "user"`.
    User,
    /// `type: "assistant"`.
    Assistant,
    /// `type: "attachment"`.
    Attachment,
    /// `type: "system"`.
    System,
    /// `type: "progress"` (legacy, bridged over by the loader).
    Progress,
}

impl From<Kind> for u8 {
    fn from(k: Kind) -> u8 {
        k as u8
    }
}

impl TryFrom<u8> for Kind {
    type Error = String;
    fn try_from(v: u8) -> Result<Kind, String> {
        [
            Kind::User,
            Kind::Assistant,
            Kind::Attachment,
            Kind::System,
            Kind::Progress,
        ]
        .get(usize::from(v))
        .copied()
        .ok_or_else(|| format!("no message kind {v}"))
    }
}

impl Kind {
    fn of(ty: &str) -> Option<Kind> {
        Some(match ty {
            "user" => Kind::User,
            "assistant" => Kind::Assistant,
            "attachment" => Kind::Attachment,
            "system" => Kind::System,
            "progress" => Kind::Progress,
            _ => return None,
        })
    }

    /// `user` or `assistant`: the messages a leaf can be.
    pub fn is_turn(self) -> bool {
        matches!(self, Kind::User | Kind::Assistant)
    }

    /// The `type` string as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::User => "user",
            Kind::Assistant => "assistant",
            Kind::Attachment => "attachment",
            Kind::System => "system",
            Kind::Progress => "progress",
        }
    }
}

/// Boolean facts about a message, packed.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
pub struct Flags(pub u16);

impl Flags {
    /// `isSidechain: true`.
    pub const SIDECHAIN: u16 = 1;
    /// `isMeta: true`.
    pub const META: u16 = 1 << 1;
    /// `isCompactSummary: true`.
    pub const COMPACT_SUMMARY: u16 = 1 << 2;
    /// `isApiErrorMessage: true`.
    pub const API_ERROR: u16 = 1 << 3;
    /// A user message whose content has a `tool_result` block.
    pub const TOOL_RESULT: u16 = 1 << 4;
    /// A system `compact_boundary`.
    pub const COMPACT_BOUNDARY: u16 = 1 << 5;
    /// A system entry carrying `snipMetadata.removedUuids`.
    pub const SNIP: u16 = 1 << 6;
    /// Visible for the picker's message count (SPEC A6).
    pub const VISIBLE: u16 = 1 << 7;
    /// `isVisibleInTranscriptOnly` or `isVirtual`.
    pub const UI_ONLY: u16 = 1 << 8;
    /// An assistant line with a `tool_use` block.
    pub const TOOL_USE: u16 = 1 << 9;

    /// Whether every bit of `mask` is set.
    pub fn has(self, mask: u16) -> bool {
        self.0 & mask == mask
    }
}

/// The preserved segment of a compact boundary (SPEC A5 step 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Segment {
    /// First preserved message.
    pub head: Id,
    /// The message the head is re-attached to.
    pub anchor: Id,
    /// Last preserved message.
    pub tail: Id,
}

/// The compact, owned summary of one message line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MessageHead {
    /// `uuid`.
    pub uuid: Id,
    /// `parentUuid` (null and absent are both `None`).
    pub parent: Option<Id>,
    /// `logicalParentUuid`.
    pub logical_parent: Option<Id>,
    /// `type`.
    pub kind: Kind,
    /// Packed booleans.
    pub flags: Flags,
    /// `timestamp` in epoch milliseconds ([`i64::MIN`] when missing).
    pub timestamp: i64,
    /// A hash of `message.id` (assistant lines of one API response share it).
    pub message_id: Option<u64>,
    /// A hash of `sessionId` (0 when absent); metadata is looked up by the leaf's session.
    pub session: u64,
    /// `sourceToolAssistantUUID`.
    pub source_tool_assistant: Option<Id>,
    /// `compactMetadata.preservedSegment` on a compact boundary.
    pub preserved: Option<Segment>,
    /// `snipMetadata.removedUuids` on a snip boundary.
    pub snip_removed: Vec<Id>,
}

/// A metadata line: an entry without a place in the tree.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MetaEntry {
    /// `type`, as written (unknown types are kept).
    pub ty: String,
    /// `sessionId`, if present.
    pub session_id: Option<String>,
    /// `agentId`, if present.
    pub agent_id: Option<String>,
    /// `leafUuid` (summary, last-prompt).
    pub leaf: Option<Id>,
    /// `messageId` (file-history-snapshot, attribution-snapshot).
    pub message_id: Option<String>,
    /// The string value the picker shows: `customTitle`, `aiTitle`, `lastPrompt`, `tag`,
    /// `summary`, `agentName`, `mode`, ... (first one present).
    pub text: Option<String>,
}

/// One parsed line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A tree participant (or legacy progress).
    Message(MessageHead),
    /// Anything else.
    Meta(MetaEntry),
}

/// Why a line was not usable.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum LineProblem {
    /// Not JSON (torn write, NUL run, glued records...). Carries `serde_json`'s message.
    Json(String),
    /// Valid JSON but not an object.
    NotAnObject,
    /// An object without a string `type`.
    MissingType,
    /// A message line without a `uuid`.
    MissingUuid,
    /// NUL bytes (a preallocated or zero-filled region, typically after a crash).
    Nul,
}

impl std::fmt::Display for LineProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LineProblem::Json(e) => write!(f, "invalid json: {e}"),
            LineProblem::NotAnObject => f.write_str("not an object"),
            LineProblem::MissingType => f.write_str("missing type"),
            LineProblem::MissingUuid => f.write_str("missing uuid"),
            LineProblem::Nul => f.write_str("nul bytes"),
        }
    }
}

/// The outcome of parsing one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedLine {
    /// The entry, or why there is none.
    pub entry: Result<Entry, LineProblem>,
    /// True when the line only parsed after a lossy repair (lone surrogate, invalid UTF-8).
    pub repaired: bool,
}

#[derive(Deserialize)]
struct RawEnvelope<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<Cow<'a, str>>,
    #[serde(borrow)]
    subtype: Option<Cow<'a, str>>,
    #[serde(borrow)]
    uuid: Option<Cow<'a, str>>,
    #[serde(rename = "parentUuid", borrow)]
    parent_uuid: Option<Cow<'a, str>>,
    #[serde(rename = "logicalParentUuid", borrow)]
    logical_parent_uuid: Option<Cow<'a, str>>,
    #[serde(rename = "isSidechain")]
    is_sidechain: Option<bool>,
    #[serde(rename = "isMeta")]
    is_meta: Option<bool>,
    #[serde(rename = "isCompactSummary")]
    is_compact_summary: Option<bool>,
    #[serde(rename = "isApiErrorMessage")]
    is_api_error: Option<bool>,
    #[serde(rename = "isVisibleInTranscriptOnly")]
    is_visible_only: Option<bool>,
    #[serde(rename = "isVirtual")]
    is_virtual: Option<bool>,
    #[serde(rename = "sessionId", borrow)]
    session_id: Option<Cow<'a, str>>,
    #[serde(rename = "agentId", borrow)]
    agent_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(rename = "sourceToolAssistantUUID", borrow)]
    source_tool_assistant: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<RawMessage<'a>>,
    #[serde(rename = "compactMetadata", borrow)]
    compact_metadata: Option<RawCompact<'a>>,
    #[serde(rename = "snipMetadata", borrow)]
    snip_metadata: Option<RawSnip<'a>>,
    #[serde(rename = "leafUuid", borrow)]
    leaf_uuid: Option<Cow<'a, str>>,
    #[serde(rename = "messageId", borrow)]
    message_id: Option<Cow<'a, str>>,
    #[serde(rename = "customTitle", borrow)]
    custom_title: Option<Cow<'a, str>>,
    #[serde(rename = "aiTitle", borrow)]
    ai_title: Option<Cow<'a, str>>,
    #[serde(rename = "lastPrompt", borrow)]
    last_prompt: Option<Cow<'a, str>>,
    #[serde(borrow)]
    tag: Option<Cow<'a, str>>,
    #[serde(borrow)]
    summary: Option<Cow<'a, str>>,
    #[serde(rename = "agentName", borrow)]
    agent_name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    mode: Option<Cow<'a, str>>,
    #[serde(rename = "permissionMode", borrow)]
    permission_mode: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct RawMessage<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    content: Option<ContentProbe>,
}

#[derive(Deserialize)]
struct RawCompact<'a> {
    #[serde(rename = "preservedSegment", borrow)]
    preserved_segment: Option<RawSegment<'a>>,
}

#[derive(Deserialize)]
struct RawSegment<'a> {
    #[serde(rename = "headUuid", borrow)]
    head: Cow<'a, str>,
    #[serde(rename = "anchorUuid", borrow)]
    anchor: Cow<'a, str>,
    #[serde(rename = "tailUuid", borrow)]
    tail: Cow<'a, str>,
}

#[derive(Deserialize)]
struct RawSnip<'a> {
    #[serde(rename = "removedUuids", borrow, default)]
    removed_uuids: Vec<Cow<'a, str>>,
}

/// What the content of a message holds, without keeping it.
#[derive(Default, Clone, Copy)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "independent facts about one content"
)]
struct ContentProbe {
    tool_result: bool,
    tool_use: bool,
    /// Non-blank text, an image or a document.
    visible_user: bool,
    /// A non-blank text block.
    visible_text_block: bool,
}

#[derive(Deserialize)]
struct RawBlock<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
}

impl<'de> Deserialize<'de> for ContentProbe {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ContentProbe;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<ContentProbe, E> {
                let visible = !s.trim().is_empty();
                Ok(ContentProbe {
                    visible_user: visible,
                    ..ContentProbe::default()
                })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ContentProbe, A::Error> {
                let mut p = ContentProbe::default();
                while let Some(block) = seq.next_element::<BlockOrOther<'de>>()? {
                    let BlockOrOther::Block(b) = block else {
                        continue;
                    };
                    match b.ty.as_deref() {
                        Some("tool_result") => p.tool_result = true,
                        Some("tool_use") => p.tool_use = true,
                        Some("text") if b.text.as_deref().is_some_and(|t| !t.trim().is_empty()) => {
                            p.visible_user = true;
                            p.visible_text_block = true;
                        }
                        Some("image" | "document") => p.visible_user = true,
                        _ => {}
                    }
                }
                Ok(p)
            }
            fn visit_unit<E: de::Error>(self) -> Result<ContentProbe, E> {
                Ok(ContentProbe::default())
            }
            fn visit_map<A: de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<ContentProbe, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(ContentProbe::default())
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<ContentProbe, E> {
                Ok(ContentProbe::default())
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<ContentProbe, E> {
                Ok(ContentProbe::default())
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<ContentProbe, E> {
                Ok(ContentProbe::default())
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<ContentProbe, E> {
                Ok(ContentProbe::default())
            }
        }
        d.deserialize_any(V)
    }
}

/// A content block, or anything else found in the array (tolerated, ignored).
enum BlockOrOther<'a> {
    Block(RawBlock<'a>),
    Other,
}

impl<'de> Deserialize<'de> for BlockOrOther<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = BlockOrOther<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a content block")
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                RawBlock::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(BlockOrOther::Block)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(BlockOrOther::Other)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(BlockOrOther::Other)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(BlockOrOther::Other)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(BlockOrOther::Other)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(BlockOrOther::Other)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(BlockOrOther::Other)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(BlockOrOther::Other)
            }
        }
        d.deserialize_any(V)
    }
}

/// A stable 64-bit hash of a string (message ids, session ids).
pub fn hash64(text: &str) -> u64 {
    let h = blake3::hash(text.as_bytes());
    u64::from_le_bytes(h.as_bytes()[..8].try_into().expect("8 bytes"))
}

/// Parses one framed line. `names` collects the text of ids that are not canonical UUIDs.
pub fn parse_line(bytes: &[u8], names: &mut IdNames) -> ParsedLine {
    match parse_strict(bytes, names) {
        Ok(entry) => ParsedLine {
            entry,
            repaired: false,
        },
        Err(err) => match super::lossy::repair(bytes) {
            Some(fixed) => match parse_strict(&fixed, names) {
                Ok(entry) => ParsedLine {
                    entry,
                    repaired: true,
                },
                Err(_) => ParsedLine {
                    entry: Err(json_problem(bytes, err)),
                    repaired: false,
                },
            },
            None => ParsedLine {
                entry: Err(json_problem(bytes, err)),
                repaired: false,
            },
        },
    }
}

fn json_problem(bytes: &[u8], err: String) -> LineProblem {
    if memchr::memchr(0, bytes).is_some() {
        LineProblem::Nul
    } else {
        LineProblem::Json(err)
    }
}

fn parse_strict(bytes: &[u8], names: &mut IdNames) -> Result<Result<Entry, LineProblem>, String> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        // Valid JSON that is not an object, or not JSON at all.
        return match serde_json::from_slice::<IgnoredAny>(bytes) {
            Ok(_) => Ok(Err(LineProblem::NotAnObject)),
            Err(e) => Err(e.to_string()),
        };
    }
    let raw: RawEnvelope<'_> = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    Ok(classify(&raw, names))
}

fn classify(raw: &RawEnvelope<'_>, names: &mut IdNames) -> Result<Entry, LineProblem> {
    let Some(ty) = raw.ty.as_deref() else {
        return Err(LineProblem::MissingType);
    };
    let Some(kind) = Kind::of(ty) else {
        return Ok(Entry::Meta(meta_entry(ty, raw, names)));
    };
    let Some(uuid) = raw.uuid.as_deref() else {
        return Err(LineProblem::MissingUuid);
    };
    let uuid = names.intern(uuid);
    let mut intern = |s: &Option<Cow<'_, str>>| s.as_deref().map(|t| names.intern(t));
    let parent = intern(&raw.parent_uuid);
    let logical_parent = intern(&raw.logical_parent_uuid);
    let source_tool_assistant = intern(&raw.source_tool_assistant);
    let probe = raw
        .message
        .as_ref()
        .and_then(|m| m.content)
        .unwrap_or_default();
    let yes = |b: Option<bool>| b == Some(true);
    let mut f = 0u16;
    let set = |f: &mut u16, cond: bool, bit: u16| {
        if cond {
            *f |= bit;
        }
    };
    set(&mut f, yes(raw.is_sidechain), Flags::SIDECHAIN);
    set(&mut f, yes(raw.is_meta), Flags::META);
    set(&mut f, yes(raw.is_compact_summary), Flags::COMPACT_SUMMARY);
    set(&mut f, yes(raw.is_api_error), Flags::API_ERROR);
    set(
        &mut f,
        yes(raw.is_visible_only) || yes(raw.is_virtual),
        Flags::UI_ONLY,
    );
    set(
        &mut f,
        kind == Kind::User && probe.tool_result,
        Flags::TOOL_RESULT,
    );
    set(
        &mut f,
        kind == Kind::Assistant && probe.tool_use,
        Flags::TOOL_USE,
    );
    let is_boundary = kind == Kind::System && raw.subtype.as_deref() == Some("compact_boundary");
    set(&mut f, is_boundary, Flags::COMPACT_BOUNDARY);
    let visible = match kind {
        Kind::User => !yes(raw.is_meta) && probe.visible_user,
        Kind::Assistant => probe.visible_text_block,
        _ => false,
    };
    set(&mut f, visible, Flags::VISIBLE);
    let snip_removed: Vec<Id> = match (&raw.snip_metadata, kind) {
        (Some(s), Kind::System) => s.removed_uuids.iter().map(|u| names.intern(u)).collect(),
        _ => Vec::new(),
    };
    set(
        &mut f,
        kind == Kind::System && raw.snip_metadata.is_some(),
        Flags::SNIP,
    );
    let preserved = if is_boundary {
        raw.compact_metadata
            .as_ref()
            .and_then(|c| c.preserved_segment.as_ref())
            .map(|s| Segment {
                head: names.intern(&s.head),
                anchor: names.intern(&s.anchor),
                tail: names.intern(&s.tail),
            })
    } else {
        None
    };
    Ok(Entry::Message(MessageHead {
        uuid,
        parent,
        logical_parent,
        kind,
        flags: Flags(f),
        timestamp: parse_millis(raw.timestamp.as_deref()),
        message_id: raw
            .message
            .as_ref()
            .and_then(|m| m.id.as_deref())
            .map(hash64),
        session: raw.session_id.as_deref().map_or(0, hash64),
        source_tool_assistant,
        preserved,
        snip_removed,
    }))
}

fn meta_entry(ty: &str, raw: &RawEnvelope<'_>, names: &mut IdNames) -> MetaEntry {
    let own = |s: &Option<Cow<'_, str>>| s.as_deref().map(str::to_owned);
    let text = match ty {
        "custom-title" => own(&raw.custom_title),
        "ai-title" => own(&raw.ai_title),
        "last-prompt" => own(&raw.last_prompt),
        "tag" => own(&raw.tag),
        "summary" => own(&raw.summary),
        "agent-name" => own(&raw.agent_name),
        "mode" => own(&raw.mode),
        "permission-mode" => own(&raw.permission_mode),
        _ => None,
    };
    MetaEntry {
        ty: ty.to_owned(),
        session_id: own(&raw.session_id),
        agent_id: own(&raw.agent_id),
        leaf: raw.leaf_uuid.as_deref().map(|u| names.intern(u)),
        message_id: own(&raw.message_id),
        text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> ParsedLine {
        parse_line(s.as_bytes(), &mut IdNames::default())
    }

    #[test]
    fn assistant_tool_use_line() {
        let p = parse(
            r#"{"parentUuid":"00000000-0000-4000-8000-000000000001","isSidechain":false,"message":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},"type":"assistant","uuid":"00000000-0000-4000-8000-000000000002","timestamp":"2025-01-01T00:00:00.000Z","sessionId":"s"}"#,
        );
        let Ok(Entry::Message(m)) = p.entry else {
            panic!("not a message: {p:?}")
        };
        assert_eq!(m.kind, Kind::Assistant);
        assert!(m.flags.has(Flags::TOOL_USE));
        assert!(!m.flags.has(Flags::VISIBLE));
        assert_eq!(m.message_id, Some(hash64("msg_1")));
        assert_eq!(
            m.parent.unwrap().to_string(),
            "00000000-0000-4000-8000-000000000001"
        );
    }

    #[test]
    fn problems_are_named() {
        assert_eq!(parse("[1,2]").entry, Err(LineProblem::NotAnObject));
        assert_eq!(parse(r#"{"a":1}"#).entry, Err(LineProblem::MissingType));
        assert_eq!(
            parse(r#"{"type":"user"}"#).entry,
            Err(LineProblem::MissingUuid)
        );
        assert!(matches!(
            parse("{\"type\":").entry,
            Err(LineProblem::Json(_))
        ));
        assert_eq!(parse("\0\0\0").entry, Err(LineProblem::Nul));
        let glued = r#"{"type":"tag","tag":"a"}{"type":"tag","tag":"b"}"#;
        assert!(matches!(parse(glued).entry, Err(LineProblem::Json(_))));
    }

    #[test]
    fn unknown_types_are_metadata_and_lone_surrogates_are_repaired() {
        let p = parse(r#"{"type":"frobnicate","sessionId":"s","x":[1]}"#);
        let Ok(Entry::Meta(m)) = p.entry else {
            panic!("{p:?}")
        };
        assert_eq!(m.ty, "frobnicate");
        let p = parse(
            r#"{"parentUuid":null,"type":"user","message":{"role":"user","content":"hi \ud83d"},"uuid":"u1","timestamp":"2025-01-01T00:00:00Z"}"#,
        );
        assert!(p.repaired);
        let Ok(Entry::Message(m)) = p.entry else {
            panic!("{p:?}")
        };
        assert!(m.flags.has(Flags::VISIBLE));
    }
}
