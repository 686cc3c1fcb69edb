//! The envelope of an entry: the fields that place it in the tree or in a metadata map,
//! parsed with borrowed strings and everything else skipped.
//!
//! # Design
//! A full `serde_json::Value` parse of a line costs ~2.5× a borrowed parse that skips the
//! body (`IgnoredAny`), and the body is only needed for the lines a caller actually returns.
//! [`parse_line`] turns one framed line into an [`Entry`]: either a [`MessageHead`] (a compact,
//! owned, fixed-size summary that both the reference loader and the index store) or a
//! [`MetaEntry`] (a metadata line, merged per format.md §A2). Lines that `serde_json` refuses are
//! retried once through [`super::lossy::repair`] before being reported as bad.

use std::borrow::Cow;

use serde::de::{self, IgnoredAny, SeqAccess};

pub use super::loose::FieldNote;
use super::loose::{Count, Fields, Loose, Shape};
use super::time::parse_millis;
use super::usage::{LineUsage, Tokens};
use crate::id::{Id, IdNames};

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
    /// Visible for the picker's message count (format.md §A6).
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

/// The preserved segment of a compact boundary (format.md §A5 step 5).
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
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// Longer than `super::frame::MAX_LINE`: streamed past, not held or parsed.
    TooLong,
    /// Not a problem that drops the line: the entry was kept, but some fields could not be
    /// read (treated as absent) or were given twice (the last one used).
    Fields(Vec<FieldNote>),
}

impl LineProblem {
    /// Whether the line was skipped (every problem but [`LineProblem::Fields`]).
    pub fn skipped(&self) -> bool {
        !matches!(self, LineProblem::Fields(_))
    }
}

impl std::fmt::Display for LineProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LineProblem::Json(e) => write!(f, "invalid json: {e}"),
            LineProblem::NotAnObject => f.write_str("not an object"),
            LineProblem::MissingType => f.write_str("missing type"),
            LineProblem::MissingUuid => f.write_str("missing uuid"),
            LineProblem::Nul => f.write_str("nul bytes"),
            LineProblem::TooLong => write!(
                f,
                "longer than {} MiB (not read, to bound memory)",
                super::frame::MAX_LINE >> 20
            ),
            LineProblem::Fields(notes) => {
                for (i, n) in notes.iter().enumerate() {
                    write!(f, "{}{n}", if i == 0 { "" } else { "; " })?;
                }
                Ok(())
            }
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
    /// Fields of the kept entry that could not be read or were duplicated.
    pub notes: Vec<FieldNote>,
    /// What an assistant line with `message.usage` says its response cost.
    pub usage: Option<LineUsage>,
}

impl ParsedLine {
    /// The notes as a [`LineProblem::Fields`] to record beside the kept entry, if any.
    pub fn note_problem(&mut self) -> Option<LineProblem> {
        (self.entry.is_ok() && !self.notes.is_empty())
            .then(|| LineProblem::Fields(std::mem::take(&mut self.notes)))
    }
}

/// Declares a struct of [`Loose`] fields read from a JSON object by key (the last of a
/// duplicate key wins; unreadable and duplicate fields are noted with `$prefix` + key).
macro_rules! loose_struct {
    ($(#[$m:meta])* $name:ident, $prefix:literal, { $($field:ident : $ty:ty = $key:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Default)]
        struct $name<'a> {
            $($field: Loose<$ty>,)*
            notes: Vec<FieldNote>,
        }

        impl<'a> Shape<'a> for $name<'a> {
            fn from_map<A: de::MapAccess<'a>>(map: A) -> Result<Option<Self>, A::Error> {
                #[allow(non_camel_case_types, clippy::upper_case_acronyms, dead_code)]
                enum Bit { $($field),* }
                let mut s = Self::default();
                let mut notes = Vec::new();
                let mut f = Fields::new(map, &mut notes);
                while let Some(k) = f.key()? {
                    match k.0.as_ref() {
                        $($key => f.read(&mut s.$field, Bit::$field as u32, concat!($prefix, $key))?,)*
                        _ => f.skip()?,
                    }
                }
                if f.number {
                    return Ok(None);
                }
                $(if let Loose::Set(v) = &mut s.$field {
                    notes.append(&mut Nested::take_notes(v));
                })*
                s.notes = notes;
                Ok(Some(s))
            }
        }

        impl Nested for $name<'_> {
            fn take_notes(&mut self) -> Vec<FieldNote> {
                std::mem::take(&mut self.notes)
            }
        }
    };
}

/// Values that may carry notes about their own fields.
trait Nested {
    fn take_notes(&mut self) -> Vec<FieldNote> {
        Vec::new()
    }
}
impl Nested for Cow<'_, str> {}
impl Nested for bool {}

loose_struct!(RawEnvelope, "", {
    ty: Cow<'a, str> = "type",
    subtype: Cow<'a, str> = "subtype",
    uuid: Cow<'a, str> = "uuid",
    parent_uuid: Cow<'a, str> = "parentUuid",
    logical_parent_uuid: Cow<'a, str> = "logicalParentUuid",
    is_sidechain: bool = "isSidechain",
    is_meta: bool = "isMeta",
    is_compact_summary: bool = "isCompactSummary",
    is_api_error: bool = "isApiErrorMessage",
    is_visible_only: bool = "isVisibleInTranscriptOnly",
    is_virtual: bool = "isVirtual",
    session_id: Cow<'a, str> = "sessionId",
    agent_id: Cow<'a, str> = "agentId",
    timestamp: Cow<'a, str> = "timestamp",
    source_tool_assistant: Cow<'a, str> = "sourceToolAssistantUUID",
    message: RawMessage<'a> = "message",
    compact_metadata: RawCompact<'a> = "compactMetadata",
    snip_metadata: RawSnip<'a> = "snipMetadata",
    leaf_uuid: Cow<'a, str> = "leafUuid",
    message_id: Cow<'a, str> = "messageId",
    custom_title: Cow<'a, str> = "customTitle",
    ai_title: Cow<'a, str> = "aiTitle",
    last_prompt: Cow<'a, str> = "lastPrompt",
    tag: Cow<'a, str> = "tag",
    summary: Cow<'a, str> = "summary",
    agent_name: Cow<'a, str> = "agentName",
    mode: Cow<'a, str> = "mode",
    permission_mode: Cow<'a, str> = "permissionMode",
    forked_from: Present = "forkedFrom",
    request_session_id: Cow<'a, str> = "requestSessionId",
});

loose_struct!(RawMessage, "message.", {
    id: Cow<'a, str> = "id",
    content: ContentProbe = "content",
    model: Cow<'a, str> = "model",
    usage: RawUsage = "usage",
});

/// A field that counts by being there (any value but `null`): `forkedFrom`.
#[derive(Default)]
struct Present;

impl<'a> Shape<'a> for Present {
    fn from_str(_: Cow<'a, str>) -> Option<Self> {
        Some(Present)
    }
    fn from_bool(_: bool) -> Option<Self> {
        Some(Present)
    }
    fn from_u64(_: u64) -> Option<Self> {
        Some(Present)
    }
    fn from_map<A: de::MapAccess<'a>>(mut map: A) -> Result<Option<Self>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Some(Present))
    }
    fn from_seq<A: SeqAccess<'a>>(mut seq: A) -> Result<Option<Self>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Some(Present))
    }
}

impl Nested for Present {}
impl Nested for Count {}

/// The keys of `message.usage` that are read, in [`Tokens`]' order.
const USAGE_KEYS: [&str; 4] = [
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
];
/// [`USAGE_KEYS`] as notes name them.
const USAGE_NAMES: [&str; 4] = [
    "message.usage.input_tokens",
    "message.usage.output_tokens",
    "message.usage.cache_creation_input_tokens",
    "message.usage.cache_read_input_tokens",
];

/// `message.usage`: the four token counts (other keys skipped).
#[derive(Default)]
struct RawUsage {
    tokens: Tokens,
    notes: Vec<FieldNote>,
}

impl<'a> Shape<'a> for RawUsage {
    fn from_map<A: de::MapAccess<'a>>(map: A) -> Result<Option<Self>, A::Error> {
        let mut counts: [Loose<Count>; 4] = Default::default();
        let mut notes = Vec::new();
        let mut f = Fields::new(map, &mut notes);
        while let Some(k) = f.key()? {
            match USAGE_KEYS.iter().position(|key| *key == k.0.as_ref()) {
                Some(i) => f.read(
                    &mut counts[i],
                    u32::try_from(i).unwrap_or(0),
                    USAGE_NAMES[i],
                )?,
                None => f.skip()?,
            }
        }
        if f.number {
            return Ok(None);
        }
        let n = |i: usize| counts[i].get().map_or(0, |c| c.0);
        Ok(Some(RawUsage {
            tokens: Tokens {
                input_tokens: n(0),
                output_tokens: n(1),
                cache_creation_input_tokens: n(2),
                cache_read_input_tokens: n(3),
            },
            notes,
        }))
    }
}

impl Nested for RawUsage {
    fn take_notes(&mut self) -> Vec<FieldNote> {
        std::mem::take(&mut self.notes)
    }
}

loose_struct!(RawCompact, "compactMetadata.", {
    preserved_segment: RawSegment<'a> = "preservedSegment",
});

loose_struct!(RawSegment, "compactMetadata.preservedSegment.", {
    head: Cow<'a, str> = "headUuid",
    anchor: Cow<'a, str> = "anchorUuid",
    tail: Cow<'a, str> = "tailUuid",
});

loose_struct!(RawSnip, "snipMetadata.", {
    removed_uuids: Ids<'a> = "removedUuids",
});

loose_struct!(RawBlock, "message.content[].", {
    ty: Cow<'a, str> = "type",
    text: Cow<'a, str> = "text",
});

/// A list of ids; an element that is not a string is skipped and noted.
#[derive(Default)]
struct Ids<'a> {
    ids: Vec<Cow<'a, str>>,
    notes: Vec<FieldNote>,
}

impl<'a> Shape<'a> for Ids<'a> {
    fn from_seq<A: SeqAccess<'a>>(mut seq: A) -> Result<Option<Self>, A::Error> {
        let mut out = Ids::default();
        while let Some(id) = seq.next_element::<Loose<Cow<'a, str>>>()? {
            match id {
                Loose::Set(id) => out.ids.push(id),
                Loose::Absent | Loose::Unreadable => out.notes.push(FieldNote::Unreadable(
                    "snipMetadata.removedUuids[]".to_owned(),
                )),
            }
        }
        Ok(Some(out))
    }
}

impl Nested for Ids<'_> {
    fn take_notes(&mut self) -> Vec<FieldNote> {
        std::mem::take(&mut self.notes)
    }
}

/// What the content of a message holds, without keeping it.
#[derive(Default)]
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
    notes: Vec<FieldNote>,
}

impl<'a> Shape<'a> for ContentProbe {
    fn from_str(s: Cow<'a, str>) -> Option<Self> {
        Some(ContentProbe {
            visible_user: !s.trim().is_empty(),
            ..ContentProbe::default()
        })
    }

    fn from_seq<A: SeqAccess<'a>>(mut seq: A) -> Result<Option<Self>, A::Error> {
        let mut p = ContentProbe::default();
        // Elements that are not objects are tolerated and ignored, as the client does.
        while let Some(block) = seq.next_element::<Loose<RawBlock<'a>>>()? {
            let Loose::Set(mut b) = block else {
                continue;
            };
            p.notes.append(&mut b.notes);
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
        Ok(Some(p))
    }

    fn from_map<A: de::MapAccess<'a>>(map: A) -> Result<Option<Self>, A::Error> {
        // An object as content carries nothing the tree needs (tolerated, as before).
        let mut notes = Vec::new();
        let mut f = Fields::new(map, &mut notes);
        while f.key()?.is_some() {
            f.skip()?;
        }
        Ok((!f.number).then(ContentProbe::default))
    }
}

impl Nested for ContentProbe {
    fn take_notes(&mut self) -> Vec<FieldNote> {
        std::mem::take(&mut self.notes)
    }
}

/// A stable 64-bit hash of a string (message ids, session ids): XXH3-64, computed twice per
/// line of a first index (stable within an index schema version: the index stores it).
pub fn hash64(text: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(text.as_bytes())
}

/// Parses one line handed out by the framer (a line too long to hold is a bad line).
pub fn parse_framed(line: &super::frame::Line<'_>, names: &mut IdNames) -> ParsedLine {
    if line.too_long {
        return ParsedLine {
            entry: Err(LineProblem::TooLong),
            repaired: false,
            notes: Vec::new(),
            usage: None,
        };
    }
    parse_line(line.bytes, names)
}

/// Parses one framed line. `names` collects the text of ids that are not canonical UUIDs.
pub fn parse_line(bytes: &[u8], names: &mut IdNames) -> ParsedLine {
    match parse_strict(bytes, names) {
        Ok((entry, notes, usage)) => ParsedLine {
            entry,
            repaired: false,
            notes,
            usage,
        },
        Err(err) => match super::lossy::repair(bytes) {
            Some(fixed) => match parse_strict(&fixed, names) {
                Ok((entry, notes, usage)) => ParsedLine {
                    entry,
                    repaired: true,
                    notes,
                    usage,
                },
                Err(_) => ParsedLine {
                    entry: Err(json_problem(bytes, err)),
                    repaired: false,
                    notes: Vec::new(),
                    usage: None,
                },
            },
            None => ParsedLine {
                entry: Err(json_problem(bytes, err)),
                repaired: false,
                notes: Vec::new(),
                usage: None,
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

type Strict = (
    Result<Entry, LineProblem>,
    Vec<FieldNote>,
    Option<LineUsage>,
);

fn parse_strict(bytes: &[u8], names: &mut IdNames) -> Result<Strict, String> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        // Valid JSON that is not an object, or not JSON at all.
        return match serde_json::from_slice::<IgnoredAny>(bytes) {
            Ok(_) => Ok((Err(LineProblem::NotAnObject), Vec::new(), None)),
            Err(e) => Err(e.to_string()),
        };
    }
    let raw: Loose<RawEnvelope<'_>> = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let Loose::Set(mut raw) = raw else {
        return Ok((Err(LineProblem::NotAnObject), Vec::new(), None));
    };
    let entry = classify(&raw, names);
    let usage = match &entry {
        Ok(Entry::Message(h)) if h.kind == Kind::Assistant => line_usage(&raw),
        _ => None,
    };
    Ok((entry, std::mem::take(&mut raw.notes), usage))
}

/// The usage an assistant line reports (`None` without `message.usage`).
fn line_usage(raw: &RawEnvelope<'_>) -> Option<LineUsage> {
    let message = raw.message.get()?;
    let usage = message.usage.get()?;
    let copied = raw.forked_from.get().is_some()
        || raw
            .request_session_id
            .as_deref()
            .is_some_and(|r| Some(r) != raw.session_id.as_deref());
    Some(LineUsage {
        model: message.model.as_deref().unwrap_or_default().to_owned(),
        tokens: usage.tokens,
        copied,
    })
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
    let mut intern = |s: &Loose<Cow<'_, str>>| s.as_deref().map(|t| names.intern(t));
    let parent = intern(&raw.parent_uuid);
    let logical_parent = intern(&raw.logical_parent_uuid);
    let source_tool_assistant = intern(&raw.source_tool_assistant);
    let no_content = ContentProbe::default();
    let probe = raw
        .message
        .get()
        .and_then(|m| m.content.get())
        .unwrap_or(&no_content);
    let yes = |b: &Loose<bool>| b.get() == Some(&true);
    let mut f = 0u16;
    let set = |f: &mut u16, cond: bool, bit: u16| {
        if cond {
            *f |= bit;
        }
    };
    set(&mut f, yes(&raw.is_sidechain), Flags::SIDECHAIN);
    set(&mut f, yes(&raw.is_meta), Flags::META);
    set(&mut f, yes(&raw.is_compact_summary), Flags::COMPACT_SUMMARY);
    set(&mut f, yes(&raw.is_api_error), Flags::API_ERROR);
    set(
        &mut f,
        yes(&raw.is_visible_only) || yes(&raw.is_virtual),
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
        Kind::User => !yes(&raw.is_meta) && probe.visible_user,
        Kind::Assistant => probe.visible_text_block,
        _ => false,
    };
    set(&mut f, visible, Flags::VISIBLE);
    let snip_removed: Vec<Id> = match (raw.snip_metadata.get(), kind) {
        (Some(s), Kind::System) => s
            .removed_uuids
            .get()
            .map(|r| r.ids.iter().map(|u| names.intern(u)).collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    set(
        &mut f,
        kind == Kind::System && raw.snip_metadata.get().is_some(),
        Flags::SNIP,
    );
    let preserved = if is_boundary {
        raw.compact_metadata
            .get()
            .and_then(|c| c.preserved_segment.get())
            .and_then(|s| Some((s.head.as_deref()?, s.anchor.as_deref()?, s.tail.as_deref()?)))
            .map(|(head, anchor, tail)| Segment {
                head: names.intern(head),
                anchor: names.intern(anchor),
                tail: names.intern(tail),
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
        message_id: raw.message.get().and_then(|m| m.id.as_deref()).map(hash64),
        session: raw.session_id.as_deref().map_or(0, hash64),
        source_tool_assistant,
        preserved,
        snip_removed,
    }))
}

fn meta_entry(ty: &str, raw: &RawEnvelope<'_>, names: &mut IdNames) -> MetaEntry {
    let own = |s: &Loose<Cow<'_, str>>| s.as_deref().map(str::to_owned);
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
            m.parent,
            Some(Id::from_text("00000000-0000-4000-8000-000000000001"))
        );
    }

    #[test]
    fn assistant_lines_carry_their_usage() {
        let line = |extra: &str, usage: &str| {
            format!(
                r#"{{"parentUuid":null,"type":"assistant","uuid":"00000000-0000-4000-8000-000000000002","sessionId":"s"{extra},"message":{{"id":"msg_1","model":"claude-sonnet-4-5-20250929","role":"assistant","content":[],"usage":{usage}}}}}"#
            )
        };
        let full = r#"{"input_tokens":3,"cache_creation_input_tokens":1331,"cache_read_input_tokens":14874,"cache_creation":{"ephemeral_5m_input_tokens":1331},"output_tokens":172,"service_tier":"standard"}"#;
        let p = parse(&line("", full));
        let u = p.usage.expect("usage");
        assert_eq!(u.model, "claude-sonnet-4-5-20250929");
        assert_eq!(
            u.tokens,
            Tokens {
                input_tokens: 3,
                output_tokens: 172,
                cache_creation_input_tokens: 1331,
                cache_read_input_tokens: 14874,
            }
        );
        assert!(!u.copied);
        assert!(p.notes.is_empty());
        // Copies from other sessions are marked.
        let forked = r#","forkedFrom":{"sessionId":"o","messageUuid":"x"}"#;
        assert!(parse(&line(forked, full)).usage.unwrap().copied);
        assert!(
            parse(&line(r#","requestSessionId":"o""#, full))
                .usage
                .unwrap()
                .copied
        );
        assert!(
            !parse(&line(r#","requestSessionId":"s""#, full))
                .usage
                .unwrap()
                .copied
        );
        // A count that is not a count is absent, and noted.
        let p = parse(&line("", r#"{"input_tokens":1.5,"output_tokens":-1}"#));
        assert_eq!(p.usage.unwrap().tokens, Tokens::default());
        assert_eq!(p.notes.len(), 2);
        // User lines and lines without usage carry none.
        assert!(parse(&line("", "null")).usage.is_none());
        let user = line("", full).replace(r#""type":"assistant""#, r#""type":"user""#);
        assert!(parse(&user).usage.is_none());
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
