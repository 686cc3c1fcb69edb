//! What a search indexes of a transcript line: its searchable text and the fields a hit shows,
//! read in one pass over the line.
//!
//! # Design
//! The rule: a `user` or `assistant` entry, or a `system` entry of subtype `local_command`,
//! with a uuid and text that is not blank. Its text is one line per content block of
//! `message.content` (a string is one text block; with no string or array there, the entry's
//! own string `content`): a text block's `text`, a thinking block's `thinking`, a tool call's
//! name and the string values of its input ([`input_text`]), a tool result's text
//! ([`result_text`]); any other block adds an empty line.
//!
//! The line is read by serde visitors that keep only those fields: other fields are skipped
//! unparsed, strings are borrowed from the line when they hold no escape, and only a tool
//! call's input and a tool result's content are built as a `Value` (bounded in depth as
//! [`crate::resume::shallow`] bounds a whole line). As a `Value` would, a repeated key takes
//! its last value, a value of another type than expected reads as absent, and a line that is
//! not JSON is read again repaired ([`crate::transcript::lossy::repair`]).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::resume::message::{Role, result_text};
use crate::resume::shallow;

/// The searchable message of a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Searchable {
    pub uuid: String,
    pub role: Role,
    pub sidechain: bool,
    pub timestamp: Option<String>,
    pub text: String,
}

/// The searchable message of the JSON line `bytes`, if it has one (see the module's rule).
pub(crate) fn searchable(bytes: &[u8]) -> Option<Searchable> {
    match read(bytes) {
        Some(line) => line.searchable(),
        None => read(&crate::transcript::lossy::repair(bytes)?)?.searchable(),
    }
}

impl Line<'_> {
    fn searchable(self) -> Option<Searchable> {
        let keep = match self.role {
            Role::User | Role::Assistant => true,
            Role::System => self.subtype.as_deref() == Some("local_command"),
            _ => false,
        };
        let text = match self.content {
            Content::Text(t) => format!("{t}\n"),
            Content::Blocks(text) => text,
            Content::Other => self
                .own_content
                .map(|t| format!("{t}\n"))
                .unwrap_or_default(),
        };
        let uuid = self.uuid?;
        (keep && !text.trim().is_empty()).then(|| Searchable {
            uuid: uuid.into_owned(),
            role: self.role,
            sidechain: self.sidechain,
            timestamp: self.timestamp.map(Cow::into_owned),
            text,
        })
    }
}

/// The string values of a tool input, one per line (keys and JSON punctuation left out).
fn input_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(input_text).collect::<Vec<_>>().join("\n"),
        Value::Object(o) => o.values().map(input_text).collect::<Vec<_>>().join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The fields of a line the rule reads.
struct Line<'a> {
    role: Role,
    uuid: Option<Cow<'a, str>>,
    subtype: Option<Cow<'a, str>>,
    timestamp: Option<Cow<'a, str>>,
    sidechain: bool,
    /// `message.content`.
    content: Content<'a>,
    /// The entry's own `content`, read when `message.content` is neither a string nor an array.
    own_content: Option<Cow<'a, str>>,
}

/// `message.content`: a string, the text of an array of blocks, or anything else.
enum Content<'a> {
    Text(Cow<'a, str>),
    Blocks(String),
    Other,
}

/// `None` when `bytes` is not one JSON value (or is not an object: nothing to keep).
fn read(bytes: &[u8]) -> Option<Line<'_>> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let line = de.deserialize_any(LineVisitor).ok()?;
    de.end().ok()?;
    line
}

/// Skips the rest of a map or sequence a visitor was handed but does not read.
fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Implements the visits of the JSON scalars but strings as "not what was asked" (`$none`).
/// Numbers are visited as maps under `arbitrary_precision`.
macro_rules! scalars_are {
    ($value:ty, $none:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<$value, E> {
            Ok($none)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<$value, E> {
            Ok($none)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<$value, E> {
            Ok($none)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<$value, E> {
            Ok($none)
        }
        fn visit_unit<E: de::Error>(self) -> Result<$value, E> {
            Ok($none)
        }
    };
}

/// [`scalars_are`], and a sequence skipped as `$none` too.
macro_rules! other_types {
    ($value:ty, $none:expr) => {
        scalars_are!($value, $none);
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<$value, A::Error> {
            skip_seq(seq)?;
            Ok($none)
        }
    };
}

/// A visitor that is its own seed: the value is read by `deserialize_any`.
macro_rules! seed_of_any {
    ($seed:ty, $value:ty) => {
        impl<'de> DeserializeSeed<'de> for $seed {
            type Value = $value;
            fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<$value, D::Error> {
                d.deserialize_any(self)
            }
        }
    };
}

macro_rules! strings_are_other {
    ($value:ty, $none:expr) => {
        fn visit_str<E: de::Error>(self, _: &str) -> Result<$value, E> {
            Ok($none)
        }
    };
}

/// A string, or `None` for a value of any other type.
struct MaybeStr;

seed_of_any!(MaybeStr, Option<Cow<'de, str>>);

impl<'de> Visitor<'de> for MaybeStr {
    type Value = Option<Cow<'de, str>>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Borrowed(s)))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Owned(s.to_owned())))
    }
    fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
        Ok(Some(Cow::Owned(s)))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        skip_map(map)?;
        Ok(None)
    }
    other_types!(Self::Value, None);
}

/// `true` for the JSON value `true`, `false` for any other.
struct IsTrue;

seed_of_any!(IsTrue, bool);

impl<'de> Visitor<'de> for IsTrue {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, b: bool) -> Result<bool, E> {
        Ok(b)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<bool, A::Error> {
        skip_seq(seq)?;
        Ok(false)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<bool, A::Error> {
        skip_map(map)?;
        Ok(false)
    }
    strings_are_other!(bool, false);
}

/// A map key, compared without allocating.
struct Key<'k>(&'k [&'static str]);

impl<'de> DeserializeSeed<'de> for Key<'_> {
    /// The index of the key in the list, `None` for another key.
    type Value = Option<usize>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for Key<'_> {
    type Value = Option<usize>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Option<usize>, E> {
        Ok(self.0.iter().position(|k| *k == s))
    }
}

/// A value parsed as a `Value` the way the whole line would be, starting at `depth`.
fn value_at<'de, A: MapAccess<'de>>(map: &mut A, depth: usize) -> Result<Value, A::Error> {
    map.next_value_seed(shallow::Bounded { depth })
}

struct LineVisitor;

const LINE_KEYS: &[&str] = &[
    "type",
    "uuid",
    "subtype",
    "timestamp",
    "isSidechain",
    "message",
    "content",
];

impl<'de> Visitor<'de> for LineVisitor {
    type Value = Option<Line<'de>>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a transcript entry")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut kind = None;
        let mut line = Line {
            role: Role::Other,
            uuid: None,
            subtype: None,
            timestamp: None,
            sidechain: false,
            content: Content::Other,
            own_content: None,
        };
        while let Some(key) = map.next_key_seed(Key(LINE_KEYS))? {
            match key {
                Some(0) => kind = map.next_value_seed(MaybeStr)?,
                Some(1) => line.uuid = map.next_value_seed(MaybeStr)?,
                Some(2) => line.subtype = map.next_value_seed(MaybeStr)?,
                Some(3) => line.timestamp = map.next_value_seed(MaybeStr)?,
                Some(4) => line.sidechain = map.next_value_seed(IsTrue)?,
                Some(5) => line.content = map.next_value_seed(MessageSeed)?,
                Some(6) => line.own_content = map.next_value_seed(MaybeStr)?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        line.role = match kind.as_deref() {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            Some("system") => Role::System,
            Some("attachment") => Role::Attachment,
            _ => Role::Other,
        };
        Ok(Some(line))
    }
    other_types!(Self::Value, None);
    strings_are_other!(Self::Value, None);
}

/// `message`: its `content` (a later `content` key replaces an earlier one).
struct MessageSeed;

seed_of_any!(MessageSeed, Content<'de>);

impl<'de> Visitor<'de> for MessageSeed {
    type Value = Content<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a message")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Content<'de>, A::Error> {
        let mut content = Content::Other;
        while let Some(key) = map.next_key_seed(Key(&["content"]))? {
            if key.is_some() {
                content = map.next_value_seed(ContentSeed)?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(content)
    }
    other_types!(Content<'de>, Content::Other);
    strings_are_other!(Content<'de>, Content::Other);
}

/// `message.content`: a string, an array of blocks (their text, a line each), or other.
struct ContentSeed;

seed_of_any!(ContentSeed, Content<'de>);

impl<'de> Visitor<'de> for ContentSeed {
    type Value = Content<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("message content")
    }
    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Content<'de>, E> {
        Ok(Content::Text(Cow::Borrowed(s)))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Content<'de>, E> {
        Ok(Content::Text(Cow::Owned(s.to_owned())))
    }
    fn visit_string<E: de::Error>(self, s: String) -> Result<Content<'de>, E> {
        Ok(Content::Text(Cow::Owned(s)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content<'de>, A::Error> {
        let mut text = String::new();
        while let Some(()) = seq.next_element_seed(BlockSeed { out: &mut text })? {
            text.push('\n');
        }
        Ok(Content::Blocks(text))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Content<'de>, A::Error> {
        skip_map(map)?;
        Ok(Content::Other)
    }
    scalars_are!(Content<'de>, Content::Other);
}

/// One content block: appends its text to `out` (the caller ends the line).
struct BlockSeed<'o> {
    out: &'o mut String,
}

seed_of_any!(BlockSeed<'_>, ());

const BLOCK_KEYS: &[&str] = &["type", "text", "thinking", "name", "input", "content"];

/// Where a block's values sit in a line: line → `message` → `content` → block → value.
const BLOCK_VALUE_DEPTH: usize = 4;

impl<'de> Visitor<'de> for BlockSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a content block")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let (mut kind, mut text, mut thinking, mut name) = (None, None, None, None);
        let (mut input, mut content) = (None, None);
        while let Some(key) = map.next_key_seed(Key(BLOCK_KEYS))? {
            match key {
                Some(0) => kind = map.next_value_seed(MaybeStr)?,
                Some(1) => text = map.next_value_seed(MaybeStr)?,
                Some(2) => thinking = map.next_value_seed(MaybeStr)?,
                Some(3) => name = map.next_value_seed(MaybeStr)?,
                Some(4) => input = Some(value_at(&mut map, BLOCK_VALUE_DEPTH)?),
                Some(5) => content = Some(value_at(&mut map, BLOCK_VALUE_DEPTH)?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        match kind.as_deref() {
            Some("text") => self.out.push_str(text.as_deref().unwrap_or_default()),
            Some("thinking") => self.out.push_str(thinking.as_deref().unwrap_or_default()),
            Some("tool_use") => {
                self.out.push_str(name.as_deref().unwrap_or_default());
                self.out.push(' ');
                self.out
                    .push_str(&input_text(input.as_ref().unwrap_or(&Value::Null)));
            }
            Some("tool_result") => self.out.push_str(&result_text(content.as_ref())),
            _ => {}
        }
        Ok(())
    }
    other_types!((), ());
    strings_are_other!((), ());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resume::message::{Block, Message};
    use proptest::prelude::*;

    /// The rule read the other way: the line parsed whole as a `Value`, read as a typed
    /// [`Message`], its blocks' text joined.
    fn oracle(bytes: &[u8]) -> Option<Searchable> {
        let v = crate::resume::body::parse_value(bytes)?;
        let uuid = v.get("uuid")?.as_str()?.to_owned();
        let m = Message::from_value(&v, uuid, bytes::Bytes::new());
        let keep = match m.role {
            Role::User | Role::Assistant => true,
            Role::System => m.subtype.as_deref() == Some("local_command"),
            _ => false,
        };
        let mut text = String::new();
        for b in &m.blocks {
            match b {
                Block::Text(t) | Block::Thinking(t) | Block::ToolResult { text: t, .. } => {
                    text.push_str(t);
                }
                Block::ToolUse { name, input, .. } => {
                    text.push_str(name);
                    text.push(' ');
                    text.push_str(&input_text(input));
                }
                Block::Image { .. } | Block::Other { .. } => {}
            }
            text.push('\n');
        }
        (keep && !text.trim().is_empty()).then_some(Searchable {
            uuid: m.uuid,
            role: m.role,
            sidechain: m.sidechain,
            timestamp: m.timestamp,
            text,
        })
    }

    fn same(line: &[u8]) {
        assert_eq!(
            searchable(line),
            oracle(line),
            "{}",
            String::from_utf8_lossy(line)
        );
    }

    /// Every line of the fixtures (the vendored real transcripts and their agents' files included).
    #[test]
    fn fixture_lines_read_as_the_whole_value_reads_them() {
        let files = crate::testing::fixture_files();
        assert!(files.len() >= 18, "the fixtures: {files:?}");
        let (mut lines, mut kept) = (0, 0);
        for f in files {
            for line in std::fs::read(&f).unwrap().split(|&b| b == b'\n') {
                same(line);
                lines += 1;
                kept += usize::from(searchable(line).is_some());
            }
        }
        assert!(
            lines > 700 && kept > 500,
            "{lines} lines, {kept} searchable"
        );
    }

    /// The edges of the rule: repeated keys, values of other types, content shapes, depth,
    /// escapes, bytes that are not UTF-8.
    #[test]
    fn edge_lines_read_as_the_whole_value_reads_them() {
        let deep = format!("{}1{}", "[".repeat(300), "]".repeat(300));
        let lines = [
            r#"{"type":"user","uuid":"u","message":{"content":"hi"}}"#.to_owned(),
            r#"{"type":"user","uuid":"u","message":{"content":"hi"},"type":"attachment"}"#.into(),
            r#"{"type":"user","uuid":"u","message":{"content":"a"},"message":{"role":"user"},"content":"own"}"#.into(),
            r#"{"type":"user","uuid":"u","message":{"content":5},"content":"own"}"#.into(),
            r#"{"type":"user","uuid":"u","message":5,"content":"own"}"#.into(),
            r#"{"type":"user","uuid":"u","message":[{"content":"x"}],"content":7}"#.into(),
            r#"{"type":"user","uuid":7,"message":{"content":"x"}}"#.into(),
            r#"{"type":"system","subtype":"local_command","uuid":"u","content":"<command-name>/exit</command-name>"}"#.into(),
            r#"{"type":"system","subtype":"other","uuid":"u","content":"x"}"#.into(),
            r#"{"type":"assistant","uuid":"u","isSidechain":true,"timestamp":"2026-01-01T00:00:00Z","message":{"content":[{"type":"text","text":"a"},{"type":"thinking","thinking":"b"},5,"s",null,{"text":"no type"},{"type":"image"},{"type":"tool_use","name":"Bash","input":{"command":"ls -la","n":1.50,"deep":[true,null,{"k":"v"}]}},{"type":"tool_use","input":"plain"},{"type":"tool_result","content":[{"type":"text","text":"out"},{"text":7},"x",{"text":"two"}]},{"type":"tool_result","content":"str"},{"type":"tool_result"},{"text":"late","type":"text","text":"later"}]}}"#.into(),
            r#"{"type":"assistant","uuid":"u","isSidechain":"true","message":{"content":[{"type":7,"text":"x"},{"type":"text","text":null}]}}"#.into(),
            r#"{"type":"user","uuid":"u\u0041","message":{"content":"esc\"aped\n\u00e9 \ud83d\ude00"}}"#.into(),
            r#"{"type":"user","uuid":"u","message":{"content":"lone \ud800 surrogate"}}"#.into(),
            r#"{"ty\u0070e":"user","uuid":"u","message":{"con\u0074ent":[{"type":"text","text":"escaped keys"}]}}"#.into(),
            format!(r#"{{"type":"assistant","uuid":"u","message":{{"content":[{{"type":"tool_use","name":"n","input":{deep}}}]}}}}"#),
            format!(r#"{{"type":"user","uuid":"u","other":{deep},"message":{{"content":"deep elsewhere"}}}}"#),
            r#"{"type":"user","uuid":"u","message":{"content":"   "}}"#.into(),
            r#"{"type":"user","uuid":"u","message":{"content":"x"}} trailing"#.into(),
            r#"["type","user"]"#.into(),
            "7".into(),
            String::new(),
        ];
        for l in &lines {
            same(l.as_bytes());
        }
        let mut bad = br#"{"type":"user","uuid":"u","message":{"content":"bad "#.to_vec();
        bad.extend_from_slice(&[0xff, 0xfe]);
        bad.extend_from_slice(br#" bytes"}}"#);
        same(&bad);
        assert!(searchable(&bad).is_some(), "a repaired line is read");
    }

    /// A scalar of each type the rule tells apart, as text.
    fn leaf() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            Just("false".to_owned()),
            Just("-1.250e3".to_owned()),
            "[a-z \\\\\"é]{0,6}".prop_map(|s| serde_json::to_string(&s).unwrap()),
            Just(r#""\u0041\n""#.to_owned()),
        ]
    }

    /// Any JSON value, as text; mostly scalars.
    fn value() -> impl Strategy<Value = String> {
        let nested = leaf().prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4)
                    .prop_map(|v| format!("[{}]", v.join(","))),
                prop::collection::vec((key(&[]), inner), 0..4).prop_map(|kv| object(&kv)),
            ]
        });
        prop_oneof![3 => leaf(), 1 => nested]
    }

    /// One of `keys` (the keys the rule reads where the map is), or another.
    fn key(keys: &'static [&'static str]) -> impl Strategy<Value = String> {
        let mut all = keys.to_vec();
        all.extend(["other", "text"]);
        prop::sample::select(all).prop_map(str::to_owned)
    }

    fn object(kv: &[(String, String)]) -> String {
        let fields: Vec<String> = kv.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
        format!("{{{}}}", fields.join(","))
    }

    /// A content block: a type the rule knows or not, and fields of any type, repeated or not.
    fn block() -> impl Strategy<Value = String> {
        let kind = prop::sample::select(vec![
            "\"text\"",
            "\"thinking\"",
            "\"tool_use\"",
            "\"tool_result\"",
            "\"image\"",
            "7",
        ]);
        (
            kind,
            prop::collection::vec((key(BLOCK_KEYS), value()), 0..6),
            any::<bool>(),
        )
            .prop_map(|(kind, mut kv, first)| {
                let at = if first { 0 } else { kv.len() };
                kv.insert(at, ("type".into(), kind.to_owned()));
                object(&kv)
            })
    }

    /// An entry: the envelope fields of any type, `message.content` a string, blocks or other.
    fn entry() -> impl Strategy<Value = String> {
        let kind = prop::sample::select(vec![
            "\"user\"",
            "\"user\"",
            "\"assistant\"",
            "\"assistant\"",
            "\"system\"",
            "\"attachment\"",
            "null",
        ]);
        let content = prop_oneof![
            value(),
            prop::collection::vec(block(), 0..5).prop_map(|b| format!("[{}]", b.join(","))),
        ];
        let subtype = prop::sample::select(vec!["\"local_command\"", "\"x\"", "1"]);
        (
            kind,
            subtype,
            content,
            // `uuid` and `message` repeated: the edge lines (here they would hide the rest).
            prop::collection::vec(
                (
                    key(&["type", "subtype", "timestamp", "isSidechain", "content"]),
                    value(),
                ),
                0..4,
            ),
            any::<bool>(),
        )
            .prop_map(|(kind, subtype, content, extra, sidechain)| {
                let mut kv = vec![
                    ("type".to_owned(), kind.to_owned()),
                    ("uuid".into(), "\"u-1\"".into()),
                    ("subtype".into(), subtype.to_owned()),
                    ("isSidechain".into(), sidechain.to_string()),
                    (
                        "message".into(),
                        format!("{{\"role\":\"x\",\"content\":{content}}}"),
                    ),
                ];
                kv.extend(extra);
                object(&kv)
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]
        #[test]
        fn any_entry_reads_as_the_whole_value_reads_it(line in entry()) {
            prop_assert_eq!(searchable(line.as_bytes()), oracle(line.as_bytes()), "{}", line);
        }
    }
}
