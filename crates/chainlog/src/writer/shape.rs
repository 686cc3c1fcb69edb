//! The shape of a written line: envelope key order, numbers as JavaScript writes them.
//!
//! A caller hands an entry with the fields it cares about (`type` and the body); the writer
//! fills the envelope in the order Claude Code 2.1.x writes it (format.md §A2, and
//! [`crate::generate`]'s `lines.rs`, which builds the same shape for the generator):
//!
//! `parentUuid, logicalParentUuid?, isSidechain, teamName?, agentName?, promptId?, agentId?`,
//! the body (caller keys in the caller's order, with `uuid`/`timestamp` inserted where Claude
//! Code puts them when missing), then `userType, entrypoint?, cwd, sessionId, version,
//! gitBranch?, slug?, forkedFrom?`.
//!
//! Metadata entries keep `type` first. Escaping is `serde_json`'s, which is ECMAScript
//! `JSON.stringify`'s for every string a `String` can hold (lowercase `\u00xx`, `/` and
//! non-ASCII raw).

use serde_json::{Map, Number, Value};

use crate::transcript::metadata::SESSION_LAST_WINS;

/// `type`s that take part in the `uuid`/`parentUuid` tree.
pub const MESSAGE_TYPES: [&str; 4] = ["user", "assistant", "attachment", "system"];

/// Envelope keys before the body, in order.
const HEAD: [&str; 7] = [
    "parentUuid",
    "logicalParentUuid",
    "isSidechain",
    "teamName",
    "agentName",
    "promptId",
    "agentId",
];
/// Envelope keys after the body, in order.
const TAIL: [&str; 8] = [
    "userType",
    "entrypoint",
    "cwd",
    "sessionId",
    "version",
    "gitBranch",
    "slug",
    "forkedFrom",
];

/// User keys that come before `uuid`/`timestamp` (the rest of the body follows them).
const USER_LEAD: [&str; 6] = [
    "type",
    "message",
    "isMeta",
    "isCompactSummary",
    "isVisibleInTranscriptOnly",
    "isVirtual",
];

/// The per-session envelope values the writer stamps.
#[derive(Debug, Clone)]
pub struct Stamp<'a> {
    /// `sessionId`.
    pub session_id: &'a str,
    /// `cwd`.
    pub cwd: &'a str,
    /// `version`.
    pub version: &'a str,
    /// `gitBranch`, when known.
    pub git_branch: Option<&'a str>,
    /// `entrypoint`, when set.
    pub entrypoint: Option<&'a str>,
}

/// Key/value pairs in order.
type Fields = Vec<(String, Value)>;

/// Whether `ty` is a message type.
pub fn is_message_type(ty: &str) -> bool {
    MESSAGE_TYPES.contains(&ty)
}

/// Reorders a message entry into the Claude Code envelope, filling what is missing from
/// `stamp`. `sessionId` is always the writer's (a line never claims another session); the
/// other envelope fields keep a value the caller gave.
pub fn message_line(mut e: Map<String, Value>, stamp: &Stamp<'_>) -> Map<String, Value> {
    let ty = e
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let mut out = Map::new();
    for k in HEAD {
        if let Some(v) = e.remove(k) {
            out.insert(k.into(), v);
        } else if k == "parentUuid" {
            out.insert(k.into(), Value::Null);
        } else if k == "isSidechain" {
            out.insert(k.into(), Value::Bool(false));
        }
    }
    let tail: Vec<(&str, Option<Value>)> = TAIL.iter().map(|k| (*k, e.remove(*k))).collect();
    let uuid = e.remove("uuid");
    let timestamp = e.remove("timestamp");
    let (lead, rest): (Fields, Fields) = match ty.as_str() {
        "user" => e
            .into_iter()
            .partition(|(k, _)| USER_LEAD.contains(&k.as_str())),
        "system" => {
            // `timestamp, uuid` come before `level` and the subtype's own fields.
            let mut lead = Vec::new();
            let mut rest = Vec::new();
            let mut seen_level = false;
            for (k, v) in e {
                seen_level |= k == "level";
                if seen_level {
                    rest.push((k, v));
                } else {
                    lead.push((k, v));
                }
            }
            (lead, rest)
        }
        _ => (e.into_iter().collect(), Vec::new()),
    };
    out.extend(lead);
    let (first, second) = if ty == "system" {
        (("timestamp", timestamp), ("uuid", uuid))
    } else {
        (("uuid", uuid), ("timestamp", timestamp))
    };
    for (k, v) in [first, second] {
        if let Some(v) = v {
            out.insert(k.into(), v);
        }
    }
    out.extend(rest);
    for (k, v) in tail {
        let v = match (k, v) {
            ("sessionId", _) => Some(stamp.session_id.into()),
            (_, Some(v)) => Some(v),
            ("userType", None) => Some("external".into()),
            ("cwd", None) => Some(stamp.cwd.into()),
            ("version", None) => Some(stamp.version.into()),
            ("gitBranch", None) => stamp.git_branch.map(Value::from),
            ("entrypoint", None) => stamp.entrypoint.map(Value::from),
            _ => None,
        };
        if let Some(v) = v {
            out.insert(k.into(), v);
        }
    }
    out
}

/// A metadata entry: `type` first, the caller's keys after, `sessionId` filled when the
/// entry type is merged per session (format.md §A2) and the caller left it out.
pub fn metadata_line(mut e: Map<String, Value>, session_id: &str) -> Map<String, Value> {
    let mut out = Map::new();
    if let Some(t) = e.remove("type") {
        out.insert("type".into(), t);
    }
    let ty = out.get("type").and_then(Value::as_str).unwrap_or("");
    let per_session = SESSION_LAST_WINS.contains(&ty)
        || matches!(ty, "content-replacement" | "marble-origami-commit");
    out.extend(e);
    if per_session && !out.contains_key("sessionId") {
        out.insert("sessionId".into(), session_id.into());
    }
    out
}

/// Rewrites every number the way JavaScript prints it: integers without `.0`, shortest
/// round-trip digits, exponents as `1e+21`. Integer literals are kept digit for digit.
pub fn js_numbers(v: &mut Value) {
    match v {
        Value::Number(n) => {
            let text = n.to_string();
            if text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'))
                && let Some(f) = n.as_f64()
                && f.is_finite()
            {
                let js = ryu_js::Buffer::new().format(f).to_owned();
                if js != text
                    && let Ok(Value::Number(m)) = serde_json::from_str::<Value>(&js)
                {
                    *n = m;
                }
            } else if text == "-0" {
                *n = Number::from(0);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(js_numbers),
        Value::Object(o) => o.values_mut().for_each(js_numbers),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(o) => o,
            _ => unreachable!(),
        }
    }

    const STAMP: Stamp<'static> = Stamp {
        session_id: "s",
        cwd: "/w",
        version: "2.1.328",
        git_branch: Some("main"),
        entrypoint: None,
    };

    fn keys(m: &Map<String, Value>) -> Vec<&str> {
        m.keys().map(String::as_str).collect()
    }

    #[test]
    fn user_envelope_order() {
        let m = message_line(
            obj(json!({"sourceToolAssistantUUID": "a", "type": "user",
                "message": {"role": "user", "content": "x"}, "isMeta": true,
                "uuid": "u", "timestamp": "t", "parentUuid": "p", "sessionId": "other"})),
            &STAMP,
        );
        assert_eq!(
            keys(&m),
            [
                "parentUuid",
                "isSidechain",
                "type",
                "message",
                "isMeta",
                "uuid",
                "timestamp",
                "sourceToolAssistantUUID",
                "userType",
                "cwd",
                "sessionId",
                "version",
                "gitBranch"
            ]
        );
        assert_eq!(m["sessionId"], "s");
    }

    #[test]
    fn system_puts_timestamp_before_uuid_and_level() {
        let m = message_line(
            obj(
                json!({"type": "system", "subtype": "compact_boundary", "content": "c",
                "level": "info", "compactMetadata": {}, "uuid": "u", "timestamp": "t"}),
            ),
            &STAMP,
        );
        assert_eq!(
            keys(&m)[..9],
            [
                "parentUuid",
                "isSidechain",
                "type",
                "subtype",
                "content",
                "timestamp",
                "uuid",
                "level",
                "compactMetadata"
            ]
        );
    }

    #[test]
    fn numbers_as_javascript_prints_them() {
        let mut v: Value =
            serde_json::from_str("[1.0, 1.5, 1e21, 0.0000001, -0, 12345678901234567890, 2.50]")
                .unwrap();
        js_numbers(&mut v);
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            "[1,1.5,1e+21,1e-7,0,12345678901234567890,2.5]"
        );
    }

    #[test]
    fn escaping_is_json_stringify() {
        let v = json!({"t": "a/b \u{1} \u{1f} \u{2028} é \" \\ \n"});
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            "{\"t\":\"a/b \\u0001 \\u001f \u{2028} é \\\" \\\\ \\n\"}"
        );
    }
}
