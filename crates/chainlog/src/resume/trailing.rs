//! The entries the client's chain holds below the chosen leaf (issue 31, class 2).
//!
//! # Context
//! chainlog's view ends at the chosen leaf, a user or assistant message (format.md §A5 step 8;
//! the chain every other reader and the oracle agree on). The client's chain ends at the newest
//! entry below it: system entries written after the last message (`/exit`, `/agents` write
//! `local_command` lines after the last checkpoint) are part of it, and a local command is
//! sent as user text with the next turn.
//!
//! # Design
//! Only the request (`--format api`) needs them, so they are not part of the view or the
//! index: they are read from the lines after the leaf's, which is where they are written, at
//! most [`WINDOW`] bytes. From the leaf, each system or attachment line whose `parentUuid` is
//! the entry taken last is taken.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::Value;

use super::body::parse_value;
use crate::error::{Error, Result};
use crate::transcript::frame::{Framer, LinePos};

/// How many bytes after the leaf's line are looked at.
pub const WINDOW: u64 = 256 * 1024;

/// The system and attachment entries chained below the leaf `leaf_uuid` whose line is at
/// `leaf` in `path`, in file order (empty when the leaf has none within [`WINDOW`]).
pub fn below_leaf(path: &Path, leaf: LinePos, leaf_uuid: &str) -> Result<Vec<Value>> {
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut buf = Vec::new();
    file.seek(SeekFrom::Start(leaf.offset + leaf.len))
        .and_then(|_| file.take(WINDOW).read_to_end(&mut buf))
        .map_err(|e| Error::io(path, e))?;
    Ok(chained_below(&buf, leaf_uuid))
}

/// [`below_leaf`] over the bytes after the leaf's line: complete lines only, framed as the
/// reader frames them ([`Framer`]: `\r\n`, a BOM).
fn chained_below(bytes: &[u8], leaf_uuid: &str) -> Vec<Value> {
    let mut last = leaf_uuid.to_owned();
    let mut out = Vec::new();
    Framer::new().frame_slice(bytes, |line| {
        let Some(v) = parse_value(line.bytes) else {
            return;
        };
        let below = matches!(
            v.get("type").and_then(Value::as_str),
            Some("system" | "attachment")
        ) && v.get("parentUuid").and_then(Value::as_str) == Some(last.as_str());
        if let (true, Some(id)) = (below, v.get("uuid").and_then(Value::as_str)) {
            id.clone_into(&mut last);
            out.push(v);
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_system_lines_from_the_leaf_and_ignores_others() {
        let lines = [
            r#"{"type":"system","subtype":"local_command","parentUuid":"L","uuid":"s1","content":"/exit"}"#,
            r#"{"type":"user","parentUuid":"X","uuid":"u9"}"#,
            r#"{"type":"last-prompt","leafUuid":"L"}"#,
            r#"{"type":"system","subtype":"local_command","parentUuid":"OTHER","uuid":"s9"}"#,
            "{\"type\":\"system\",\"subtype\":\"local_command\",\"parentUuid\":\"s1\",\"uuid\":\"s2\",\"content\":\"out\"}\r",
            r#"{"type":"system","parentUuid":"s2","uuid":"torn""#,
        ];
        let bytes = lines.join("\n");
        let got: Vec<Value> = chained_below(bytes.as_bytes(), "L");
        let got: Vec<&str> = got.iter().map(|v| v["uuid"].as_str().unwrap()).collect();
        assert_eq!(got, ["s1", "s2"]);
        assert!(chained_below(b"", "L").is_empty());
    }
}
