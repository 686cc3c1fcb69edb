//! Reading the lines of a chain by offset, and projecting them for the model.
//!
//! Only the lines of the returned view are read (`pread` at the recorded offset, adjacent lines
//! with one `pread`, [`Lines`]). An entry whose parent or usage the projections changed, or
//! that an upgrade step rewrote into the current format ([`crate::transcript::upgrade`],
//! `migrate/`), is re-serialised with key order kept (`serde_json` `preserve_order`); every
//! other entry is returned byte-for-byte as written — and is not parsed when its line names the
//! expected uuid and parent as Claude Code writes them ([`as_written`]).

use std::collections::VecDeque;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::LazyLock;

use bytes::Bytes;
use memchr::memmem::{Finder, FinderRev};

use serde_json::Value;

use crate::chain::Link;
use crate::error::{Error, Position, Result};
use crate::id::{Id, IdNames};
use crate::transcript::frame::{content_of, read_error, read_line};

/// One entry of a view: its link and its line as handed to the model.
#[derive(Debug, Clone)]
pub struct ViewEntry {
    /// The chain link.
    pub link: Link,
    /// The JSON line (without newline): raw bytes, or the projected re-serialisation. A line
    /// handed over as written is a slice of the buffer its run of adjacent lines was read into
    /// (no copy per line); an entry kept long after the others keeps that buffer (up to
    /// 1 MiB) alive: copy its bytes to keep one line alone.
    pub json: Bytes,
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
    Lines::open(path, links, names)?.collect()
}

/// [`read_view`] of a file read whole into `bytes`: each entry a slice of them, no read.
pub fn view_in(
    bytes: &Bytes,
    path: &Path,
    links: &[Link],
    names: &IdNames,
) -> Result<Vec<ViewEntry>> {
    links
        .iter()
        .map(|link| {
            let raw = usize::try_from(link.pos.offset)
                .ok()
                .and_then(|s| Some(s..s.checked_add(usize::try_from(link.pos.len).ok()?)?))
                .filter(|r| r.end <= bytes.len())
                .ok_or_else(|| {
                    let eof = std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
                    read_error(&eof, path, link.pos)
                })?;
            let keep = content_of(&bytes[raw.clone()], path, link.pos)?;
            let line = bytes.slice(raw.start + keep.start..raw.start + keep.end);
            entry(line, link, names, path)
        })
        .collect()
}

/// Bytes of adjacent lines read with one `pread`.
pub const BATCH: u64 = 1 << 20;

/// The entries of `links` read in order ([`read_view`] one at a time): adjacent lines are read
/// with one `pread` of up to 1 MiB, so memory stays bounded by a batch and the
/// longest line, whatever the view's length.
pub struct Lines<'a> {
    file: File,
    path: &'a Path,
    links: &'a [Link],
    names: &'a IdNames,
    next: usize,
    ready: VecDeque<ViewEntry>,
    /// The last batch's bytes, read into again by the next batch when no entry of it is held
    /// any more (no fresh pages per batch).
    batch: Bytes,
}

impl<'a> Lines<'a> {
    /// Opens `path` to read the lines of `links`.
    pub fn open(path: &'a Path, links: &'a [Link], names: &'a IdNames) -> Result<Lines<'a>> {
        Ok(Lines {
            file: File::open(path).map_err(|e| Error::io(path, e))?,
            path,
            links,
            names,
            next: 0,
            ready: VecDeque::new(),
            batch: Bytes::new(),
        })
    }

    /// Reads the next run of adjacent lines.
    fn fill(&mut self) -> Result<()> {
        let start = self.next;
        let first = self.links[start].pos;
        let mut end = start + 1;
        let mut total = first.len;
        while let Some(l) = self.links.get(end) {
            let prev = self.links[end - 1].pos;
            if l.pos.offset != prev.offset + prev.len || total + l.pos.len > BATCH {
                break;
            }
            total += l.pos.len;
            end += 1;
        }
        self.next = end;
        if end == start + 1 {
            // One line (it can be 100 MB): read in place, not copied.
            let link = &self.links[start];
            let raw = read_line(&self.file, self.path, link.pos)?;
            self.ready
                .push_back(entry(raw.into(), link, self.names, self.path)?);
            return Ok(());
        }
        let len = usize::try_from(total).map_err(|_| Error::Changed {
            path: self.path.into(),
        })?;
        // The last batch's buffer when the caller let go of its entries (its bytes then stand,
        // so growing it zeroes only what is new), else a fresh one.
        let mut buf = std::mem::take(&mut self.batch)
            .try_into_mut()
            .map(Vec::from)
            .unwrap_or_default();
        if buf.capacity() < len {
            // Room for any batch at once: growing would copy the stale bytes.
            buf.clear();
            buf.reserve_exact(len.max(BATCH as usize));
        }
        buf.resize(len, 0);
        self.file
            .read_exact_at(&mut buf, first.offset)
            .map_err(|e| read_error(&e, self.path, first))?;
        let batch = Bytes::from(buf);
        let mut at = 0;
        for link in &self.links[start..end] {
            let n = usize::try_from(link.pos.len).unwrap_or(usize::MAX);
            let keep = content_of(&batch[at..at + n], self.path, link.pos)?;
            let raw = batch.slice(at + keep.start..at + keep.end);
            at += n;
            let e = entry(raw, link, self.names, self.path)?;
            self.ready.push_back(e);
        }
        self.batch = batch;
        Ok(())
    }
}

impl Iterator for Lines<'_> {
    type Item = Result<ViewEntry>;

    fn next(&mut self) -> Option<Result<ViewEntry>> {
        if self.ready.is_empty()
            && self.next < self.links.len()
            && let Err(e) = self.fill()
        {
            self.next = self.links.len();
            return Some(Err(e));
        }
        self.ready.pop_front().map(Ok)
    }
}

/// The entry of `link` from its line's content `raw`: checked to be the expected message and
/// projected.
pub fn entry(raw: Bytes, link: &Link, names: &IdNames, path: &Path) -> Result<ViewEntry> {
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
            Projected::Rewritten(json) => json.into(),
        },
    })
}

/// The keys [`as_written`] looks for, their searchers built once. Claude Code writes
/// `parentUuid` first and `uuid` after the message: each is looked for from its end of the line.
static UUID_KEY: LazyLock<FinderRev<'static>> = LazyLock::new(|| FinderRev::new(b"\"uuid\":\""));
static PARENT_KEY: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"parentUuid\":"));

/// Whether `raw` holds the key found at one of `found` followed right away by `value`.
fn names_at(raw: &[u8], found: impl IntoIterator<Item = usize>, key: &[u8], value: &[u8]) -> bool {
    found
        .into_iter()
        .any(|at| raw[at + key.len()..].starts_with(value))
}

/// Whether the line `raw` of `link` is handed over as written without a parse: the projections
/// change nothing in it (its parent is kept, its usage is not zeroed, no upgrade step rewrites
/// its type) and it names the expected uuid and parent in the compact form Claude Code writes.
/// Any other line is parsed, and the parse decides.
fn as_written(raw: &[u8], link: &Link, names: &IdNames) -> bool {
    if link.parent != link.written_parent
        || link.zero_usage
        || crate::transcript::upgrade::KINDS.contains(&link.kind)
    {
        return false;
    }
    let mut want = Vec::with_capacity(40);
    names.write_name(link.uuid, &mut want);
    want.push(b'"');
    if !names_at(raw, UUID_KEY.rfind_iter(raw), UUID_KEY.needle(), &want) {
        return false;
    }
    want.clear();
    match link.written_parent {
        Some(p) => {
            want.push(b'"');
            names.write_name(p, &mut want);
            want.push(b'"');
        }
        None => want.extend_from_slice(b"null"),
    }
    names_at(raw, PARENT_KEY.find_iter(raw), PARENT_KEY.needle(), &want)
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
    if as_written(raw, link, names) {
        return Some(Projected::AsWritten);
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::envelope::Kind;
    use crate::transcript::frame::LinePos;

    const A: &str = "00000000-0000-4000-8000-00000000000a";
    const B: &str = "00000000-0000-4000-8000-00000000000b";
    const P: &str = "00000000-0000-4000-8000-00000000000c";

    fn link(uuid: &str, parent: Option<&str>) -> Link {
        let parent = parent.map(Id::from_text);
        Link {
            uuid: Id::from_text(uuid),
            pos: LinePos {
                line: 1,
                offset: 0,
                len: 0,
            },
            kind: Kind::User,
            parent,
            written_parent: parent,
            spliced: false,
            zero_usage: false,
        }
    }

    fn accepted(raw: &str, l: &Link) -> bool {
        matches!(
            project(raw.as_bytes(), l, &IdNames::default()),
            Some(Projected::AsWritten)
        )
    }

    /// A line handed over without a parse must still be the expected message: another
    /// uuid or another parent at the recorded offset is refused (the caller reports the file
    /// changed, or the index damaged), whether the line names them compactly or not.
    #[test]
    fn a_line_that_is_not_the_expected_message_is_refused() {
        let line = format!(
            r#"{{"parentUuid":"{P}","type":"user","message":{{"role":"user","content":"hi"}},"uuid":"{A}"}}"#
        );
        assert!(as_written(
            line.as_bytes(),
            &link(A, Some(P)),
            &IdNames::default()
        ));
        assert!(accepted(&line, &link(A, Some(P))));
        assert!(!accepted(&line, &link(B, Some(P))), "another uuid");
        assert!(!accepted(&line, &link(A, Some(B))), "another parent");
        assert!(!accepted(&line, &link(A, None)), "a root instead");
        let root = format!(
            r#"{{"parentUuid":null,"type":"user","message":{{"role":"user","content":"hi"}},"uuid":"{A}"}}"#
        );
        assert!(as_written(
            root.as_bytes(),
            &link(A, None),
            &IdNames::default()
        ));
        assert!(
            !accepted(&root, &link(A, Some(P))),
            "a parent instead of a root"
        );
        // Not in the compact form: parsed, and the parse decides.
        let spaced = format!(r#"{{"parentUuid": "{P}", "type": "user", "uuid": "{A}"}}"#);
        assert!(!as_written(
            spaced.as_bytes(),
            &link(A, Some(P)),
            &IdNames::default()
        ));
        assert!(accepted(&spaced, &link(A, Some(P))));
        assert!(!accepted(&spaced, &link(B, Some(P))));
    }

    /// Adjacent lines handed over as written are slices of one read, not a copy each; once
    /// the caller lets go of a run's entries, the next run is read into the same buffer.
    #[test]
    fn adjacent_lines_share_one_read_and_its_buffer_is_read_into_again() {
        let ids = [A, B, P];
        let lines: Vec<String> = (0..3)
            .map(|i: usize| {
                let parent = i.checked_sub(1).map_or("null".into(), |p| format!("\"{}\"", ids[p]));
                format!(
                    r#"{{"parentUuid":{parent},"type":"user","message":{{"role":"user","content":"m{i}"}},"uuid":"{}"}}"#,
                    ids[i]
                ) + "\n"
            })
            .collect();
        // Run one: the three lines; a blank line; run two: the first two again.
        let mut text = String::new();
        let mut links = Vec::new();
        for (n, i) in [0, 1, 2, usize::MAX, 0, 1].into_iter().enumerate() {
            if i == usize::MAX {
                text.push('\n');
                continue;
            }
            let mut l = link(ids[i], i.checked_sub(1).map(|p| ids[p]));
            l.pos = LinePos {
                line: n as u64 + 1,
                offset: text.len() as u64,
                len: lines[i].len() as u64,
            };
            text += &lines[i];
            links.push(l);
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, &text).unwrap();
        let names = IdNames::default();
        let mut read = Lines::open(&path, &links, &names).unwrap();
        let first: Vec<ViewEntry> = read.by_ref().take(3).map(Result::unwrap).collect();
        for (e, line) in first.iter().zip(&lines) {
            assert_eq!(e.json, line.trim_end().as_bytes());
        }
        let at = |e: &ViewEntry| e.json.as_ptr() as usize;
        assert_eq!(at(&first[1]), at(&first[0]) + lines[0].len(), "one read");
        assert_eq!(at(&first[2]), at(&first[1]) + lines[1].len(), "one read");
        let base = at(&first[0]);
        drop(first);
        let rest: Vec<ViewEntry> = read.map(Result::unwrap).collect();
        assert_eq!(rest.len(), 2);
        assert_eq!(rest[1].json, lines[1].trim_end().as_bytes());
        assert_eq!(at(&rest[0]), base, "run two read into run one's buffer");
    }
}
