//! Reading the lines of a chain by offset, and projecting them for the model.
//!
//! Only the lines of the returned view are read (`pread` at the recorded offset). An entry
//! whose parent or usage the projections changed, or that an upgrade step rewrote into the
//! current format ([`crate::transcript::upgrade`], `migrate/`), is re-serialised with key order
//! kept (`serde_json` `preserve_order`); every other entry is returned byte-for-byte as written.

use std::fs::File;
use std::path::Path;

use serde_json::Value;

use crate::chain::Link;
use crate::error::{Error, Position, Result};
use crate::transcript::frame::read_line;
use crate::transcript::id::{Id, IdNames};

/// One entry of a view: its link and its line as handed to the model.
#[derive(Debug, Clone)]
pub struct ViewEntry {
    /// The chain link.
    pub link: Link,
    /// The JSON line (without newline): raw bytes, or the projected re-serialisation.
    pub json: Vec<u8>,
}

impl ViewEntry {
    /// The entry parsed as JSON.
    pub fn value(&self) -> Option<Value> {
        parse_value(&self.json)
    }
}

/// Parses a line as JSON, repairing lone surrogates and invalid UTF-8 if needed. Parts nested
/// deeper than [`super::shallow::DEPTH`] levels read as `null` (bounded stack, any depth).
pub fn parse_value(bytes: &[u8]) -> Option<Value> {
    let value = |b: &[u8]| super::shallow::parse(b, false).map(|s| s.value);
    value(bytes).or_else(|| crate::transcript::lossy::repair(bytes).and_then(|b| value(&b)))
}

/// Reads the lines of `links` from `path` and applies the projections.
pub fn read_view(path: &Path, links: &[Link], names: &IdNames) -> Result<Vec<ViewEntry>> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    read_view_in(&file, path, links, names)
}

/// [`read_view`] from `file`, already open on `path` (several reads share one open).
pub fn read_view_in(
    file: &File,
    path: &Path,
    links: &[Link],
    names: &IdNames,
) -> Result<Vec<ViewEntry>> {
    links
        .iter()
        .map(|link| view_entry(read_line(file, path, link.pos)?, path, link, names))
        .collect()
}

/// The line `raw` read at `link`'s position, checked to be its message and projected.
pub fn view_entry(raw: Vec<u8>, path: &Path, link: &Link, names: &IdNames) -> Result<ViewEntry> {
    let projected = project(&raw, link, names).ok_or_else(|| Error::BadEntry {
        position: Position {
            path: path.into(),
            line: link.pos.line,
            byte_offset: link.pos.offset,
        },
        reason: format!(
            "expected message {} here; the file changed",
            names.name(link.uuid)
        ),
    })?;
    // An entry handed over as written is not copied (a line can be 100 MB).
    Ok(ViewEntry {
        link: link.clone(),
        json: match projected {
            Projected::AsWritten => raw,
            Projected::Rewritten(json) => json,
        },
    })
}

/// What the projections make of a line.
enum Projected {
    /// Handed over byte for byte.
    AsWritten,
    /// Re-serialised.
    Rewritten(Vec<u8>),
}

/// Checks the line is the expected message (`None` when it is not) and applies the
/// projections to it.
fn project(raw: &[u8], link: &Link, names: &IdNames) -> Option<Projected> {
    // Deep parts stay raw text (any depth, bounded stack): see `super::shallow`.
    if let Some(s) = super::shallow::parse(raw, true) {
        return project_entry(s, link, names);
    }
    let fixed = crate::transcript::lossy::repair(raw)?;
    project_entry(super::shallow::parse(&fixed, true)?, link, names)
}

fn project_entry(
    mut s: super::shallow::Shallow<'_>,
    link: &Link,
    names: &IdNames,
) -> Option<Projected> {
    let v = &mut s.value;
    let uuid = v.get("uuid")?.as_str()?;
    if Id::from_text(uuid) != link.uuid {
        return None;
    }
    let on_disk = v
        .get("parentUuid")
        .and_then(Value::as_str)
        .map(Id::from_text);
    // The parent the chain was resolved with (the index's row, or the scan): a line with
    // another one is not the line the answer describes.
    if on_disk != link.written_parent {
        return None;
    }
    // Old entry shapes are handed over in the current format (STYLE practice 7).
    let upgraded = crate::transcript::upgrade::upgrade(v);
    if on_disk == link.parent && !link.zero_usage && !upgraded {
        return Some(Projected::AsWritten);
    }
    let obj = v.as_object_mut()?;
    if on_disk != link.parent {
        let parent = link
            .parent
            .map_or(Value::Null, |p| Value::String(names.name(p)));
        obj.insert("parentUuid".into(), parent);
    }
    if link.zero_usage
        && let Some(usage) = obj
            .get_mut("message")
            .and_then(|m| m.get_mut("usage"))
            .and_then(Value::as_object_mut)
    {
        for k in [
            "input_tokens",
            "output_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
        ] {
            if usage.contains_key(k) {
                usage.insert(k.into(), Value::from(0));
            }
        }
    }
    s.to_vec().map(Projected::Rewritten)
}
