//! Parsing an entry whose JSON may be nested arbitrarily deep, with bounded stack.
//!
//! # Context
//! JSON nested deeper than `serde_json`'s recursion limit (128) is valid, and Claude Code loads
//! it (a tool input can be anything). A plain `Value` parse refuses it, and raising the limit
//! would only move the problem: parsing, dropping and printing a `Value` all recurse once per
//! level, so an adversarial line (`[[[[…` for megabytes) would overflow the stack.
//!
//! # Design
//! [`parse`] builds a `Value` down to [`DEPTH`] levels. Anything below that is not parsed: it
//! is kept as the raw text `serde_json` skipped (its skipping is iterative) and stands in the
//! tree as a placeholder. The projections only touch the top levels of an entry
//! (`parentUuid`, `message.usage`, `attachment.type`), so they work on the bounded tree.
//! [`Shallow::to_vec`] prints the tree and writes each raw part in place of its placeholder,
//! re-printed by [`canonical`], a flat scan that prints exactly what a `Value` round trip would
//! (no whitespace, strings escaped as `serde_json` escapes them, numbers as written).

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// Levels parsed into a `Value`; deeper parts stay raw. Far below `serde_json`'s limit (128).
pub const DEPTH: usize = 48;

/// What stands for a raw part in the tree: a string no transcript line holds (checked).
const MARKER: &str = "\0chainlog:deep:";

/// An entry parsed to a bounded depth.
pub struct Shallow<'a> {
    /// The tree; parts deeper than [`DEPTH`] are placeholders (or `null`, see [`parse`]).
    pub value: Value,
    /// The raw text of each placeholder, by number.
    deep: Vec<&'a RawValue>,
}

/// Parses `bytes` (one JSON value) to [`DEPTH`] levels. With `keep_raw`, deeper parts are kept
/// for [`Shallow::to_vec`]; without it they become `null` (for readers that only look).
pub fn parse(bytes: &[u8], keep_raw: bool) -> Option<Shallow<'_>> {
    let mut deep = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = Seed {
        depth: 0,
        deep: &mut deep,
        keep_raw,
    }
    .deserialize(&mut de)
    .ok()?;
    de.end().ok()?;
    if !deep.is_empty() && memchr::memmem::find(bytes, b"chainlog:deep:").is_some() {
        // The line itself holds the placeholder text: refuse rather than risk a mix-up.
        return None;
    }
    Some(Shallow { value, deep })
}

impl Shallow<'_> {
    /// Prints the entry compactly, raw parts in place, as a `Value` round trip would.
    pub fn to_vec(&self) -> Option<Vec<u8>> {
        let printed = serde_json::to_vec(&self.value).ok()?;
        if self.deep.is_empty() {
            return Some(printed);
        }
        let marker = serde_json::to_vec(MARKER).ok()?;
        // `"\u0000chainlog:deep:` without its closing quote.
        let open = &marker[..marker.len() - 1];
        let mut out = Vec::with_capacity(printed.len());
        let mut rest = &printed[..];
        while let Some(at) = memchr::memmem::find(rest, open) {
            out.extend_from_slice(&rest[..at]);
            let after = &rest[at + open.len()..];
            let end = memchr::memchr(b'"', after)?;
            let n: usize = std::str::from_utf8(&after[..end]).ok()?.parse().ok()?;
            canonical(self.deep.get(n)?.get().as_bytes(), &mut out)?;
            rest = &after[end + 1..];
        }
        out.extend_from_slice(rest);
        Some(out)
    }
}

/// Parses one value of a line as [`parse`] (without raw parts) would parse it where it sits,
/// `depth` levels down.
#[cfg(feature = "search")]
pub(crate) struct Bounded {
    pub depth: usize,
}

#[cfg(feature = "search")]
impl<'de> DeserializeSeed<'de> for Bounded {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        let mut deep = Vec::new();
        Seed {
            depth: self.depth,
            deep: &mut deep,
            keep_raw: false,
        }
        .deserialize(d)
    }
}

struct Seed<'s, 'a> {
    depth: usize,
    deep: &'s mut Vec<&'a RawValue>,
    keep_raw: bool,
}

impl<'a> Seed<'_, 'a> {
    fn child(&mut self) -> Seed<'_, 'a> {
        Seed {
            depth: self.depth + 1,
            deep: self.deep,
            keep_raw: self.keep_raw,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Seed<'_, 'de> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        if self.depth < DEPTH {
            return d.deserialize_any(self);
        }
        let raw = <&'de RawValue>::deserialize(d)?;
        let text = raw.get();
        if !text.starts_with(['[', '{']) {
            // A scalar: no deeper than this.
            return serde_json::from_str(text).map_err(de::Error::custom);
        }
        if !self.keep_raw {
            return Ok(Value::Null);
        }
        self.deep.push(raw);
        Ok(Value::String(format!("{MARKER}{}", self.deep.len() - 1)))
    }
}

/// The key `serde_json` (`arbitrary_precision`) uses to hand a number over as a one-entry map.
const NUMBER_KEY: &str = "$serde_json::private::Number";

impl<'de> Visitor<'de> for Seed<'_, 'de> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Value, E> {
        Ok(Value::from(n))
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Value, E> {
        Ok(Value::from(n))
    }
    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Value, E> {
        Ok(Value::from(n))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }
    fn visit_string<E: de::Error>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(self.child())? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            if k == NUMBER_KEY {
                let n: String = map.next_value()?;
                return serde_json::from_str(&n).map_err(de::Error::custom);
            }
            let v = map.next_value_seed(self.child())?;
            // As `Value`: a duplicate key keeps its first place and takes the last value.
            out.insert(k, v);
        }
        Ok(Value::Object(out))
    }
}

/// Writes the JSON text `raw` as `serde_json` prints the same value: whitespace dropped,
/// strings re-escaped, everything else as written. A flat scan: no recursion.
fn canonical(raw: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'"' => {
                let start = i;
                let mut escaped = false;
                i += 1;
                loop {
                    match *raw.get(i)? {
                        b'\\' => {
                            escaped = true;
                            i += 2;
                        }
                        b'"' => break,
                        _ => i += 1,
                    }
                }
                i += 1;
                let token = &raw[start..i];
                if escaped {
                    let s: String = serde_json::from_slice(token).ok()?;
                    serde_json::to_writer(&mut *out, &s).ok()?;
                } else {
                    out.extend_from_slice(token);
                }
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize, inner: &str) -> String {
        let mut s = String::new();
        for i in 0..depth {
            if i % 2 == 0 {
                s.push_str("{ \"k\\u0041\" : ");
            } else {
                s.push('[');
            }
        }
        s.push_str(inner);
        for i in (0..depth).rev() {
            s.push(if i % 2 == 0 { '}' } else { ']' });
        }
        s
    }

    #[test]
    fn shallow_lines_print_as_a_value_round_trip() {
        for line in [
            r#"{"a" : [1, 2.50, -0, 1E5], "b":"\u00e9\/\"x\"", "c":{"d":null}, "a":true}"#,
            &nested(DEPTH - 2, r#""\u00e9 x""#),
        ] {
            let v: Value = serde_json::from_str(line).unwrap();
            let expected = serde_json::to_vec(&v).unwrap();
            assert_eq!(
                parse(line.as_bytes(), true).unwrap().to_vec().unwrap(),
                expected
            );
        }
    }

    #[test]
    fn deep_parts_print_as_a_value_round_trip_would() {
        // Below serde_json's limit, the round trip is the reference.
        let line = format!(
            r#"{{"x": {}, "y" : 1.0}}"#,
            nested(DEPTH + 20, r#""\u00e9 \t""#)
        );
        let v: Value = serde_json::from_str(&line).unwrap();
        let expected = serde_json::to_vec(&v).unwrap();
        let s = parse(line.as_bytes(), true).unwrap();
        assert!(!s.deep.is_empty());
        assert_eq!(s.to_vec().unwrap(), expected);
    }

    #[test]
    fn adversarial_depth_does_not_overflow_the_stack() {
        let depth = 2_000_000;
        let line = format!(
            r#"{{"uuid":"u","x":{}{}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let s = parse(line.as_bytes(), true).unwrap();
        assert_eq!(s.value["uuid"], "u");
        assert_eq!(s.to_vec().unwrap(), line.as_bytes());
        assert!(parse(line.as_bytes(), false).is_some());
    }
}
