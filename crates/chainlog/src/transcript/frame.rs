//! Line framing: split transcript bytes into entries with their position.
//!
//! # Context
//! A transcript is appended to by Claude Code without locks, so the last line may be torn
//! (no `\n` yet). Readers must not treat a torn tail as data or as an error: it becomes a
//! line once its `\n` arrives. A leading UTF-8 BOM is skipped, `\r\n` is tolerated and blank
//! lines are skipped.
//!
//! # Design
//! [`Framer`] reads from any [`Read`] in large chunks, finds newlines with `memchr`, and hands
//! each complete line to a callback as a borrowed slice with its 1-based line number and byte
//! offset. A line longer than the chunk grows the buffer, up to [`MAX_LINE`]: memory follows
//! the longest line only that far. Past it the line is not held: its bytes stream through (an
//! index still hashes them) until its `\n`, and it is handed out as [`Line::too_long`] (a bad
//! line with its position), or until the end, where it is the torn tail as usual.

use std::fs::File;
use std::io::{self, Read};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::error::{Error, Position, Result};

/// Where an entry sits in its file.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct LinePos {
    /// 1-based line number (counting every `\n`-terminated line, blank ones included).
    pub line: u64,
    /// Byte offset of the first byte of the line.
    pub offset: u64,
    /// Length in bytes including the line terminator.
    pub len: u64,
}

/// One complete line handed out by the framer.
#[derive(Debug, Clone, Copy)]
pub struct Line<'a> {
    /// Position of the line in the file.
    pub pos: LinePos,
    /// The line content without `\n`/`\r\n` and without a leading BOM (empty when
    /// `too_long`).
    pub bytes: &'a [u8],
    /// The line was longer than [`MAX_LINE`]: its bytes were skipped, not held.
    pub too_long: bool,
}

/// What framing a byte stream found besides the lines themselves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameSummary {
    /// Bytes up to and including the last complete line: where the next catch-up starts.
    pub complete_len: u64,
    /// Number of lines framed (blank ones included).
    pub lines: u64,
    /// An unterminated last line, if any: `(offset, len)`. Not data yet, not an error.
    pub torn_tail: Option<(u64, u64)>,
}

pub(crate) const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";
const CHUNK: usize = 4 << 20;
/// The longest line [`Framer::frame_reader`] holds in memory (and so parses).
pub const MAX_LINE: usize = 128 << 20;

/// Splits a byte stream into lines, starting at a known offset and line number.
pub struct Framer {
    start_offset: u64,
    start_line: u64,
    /// Bytes the reader is expected to give (the first buffer is no larger).
    expected: Option<u64>,
}

impl Framer {
    /// A framer for a stream that starts at the beginning of a file.
    pub fn new() -> Self {
        Self::resume_at(0, 0)
    }

    /// A framer for a stream that starts at `offset`, after `lines_before` complete lines.
    pub fn resume_at(offset: u64, lines_before: u64) -> Self {
        Self {
            start_offset: offset,
            start_line: lines_before,
            expected: None,
        }
    }

    /// Expects the reader to give about `bytes`: [`Framer::frame_reader`] starts with a buffer
    /// that size (a catch-up of one line zeroes no 4 MiB buffer), growing it as usual.
    #[must_use]
    pub fn expecting(mut self, bytes: u64) -> Self {
        self.expected = Some(bytes);
        self
    }

    /// Frames everything in `bytes`.
    pub fn frame_slice(&self, bytes: &[u8], mut on_line: impl FnMut(Line<'_>)) -> FrameSummary {
        let mut summary = FrameSummary {
            complete_len: self.start_offset,
            lines: 0,
            torn_tail: None,
        };
        let mut pos = 0usize;
        for nl in memchr::memchr_iter(b'\n', bytes) {
            self.emit(&bytes[pos..=nl], pos, &mut summary, &mut on_line);
            pos = nl + 1;
        }
        if pos < bytes.len() {
            summary.torn_tail = Some((self.start_offset + pos as u64, (bytes.len() - pos) as u64));
        }
        summary
    }

    /// Frames a reader to its end, reading in large chunks.
    pub fn frame_reader<R: Read>(
        &self,
        mut reader: R,
        mut on_line: impl FnMut(Line<'_>),
    ) -> io::Result<FrameSummary> {
        let mut summary = FrameSummary {
            complete_len: self.start_offset,
            lines: 0,
            torn_tail: None,
        };
        let first = self
            .expected
            .map_or(CHUNK, |b| {
                usize::try_from(b.saturating_add(1)).unwrap_or(CHUNK)
            })
            .clamp(4096, CHUNK);
        let mut buf: Vec<u8> = vec![0; first];
        // `buf[..filled]` holds unconsumed bytes; `base` is their offset relative to the start.
        let mut filled = 0usize;
        let mut base = 0usize;
        loop {
            let mut scan_from = filled;
            if filled == buf.len() && buf.len() < MAX_LINE {
                // A line longer than the buffer: grow. A small file's buffer doubles up to
                // CHUNK; past it the buffer grows once, to the limit: a zeroed allocation whose
                // pages become resident only as reads (at most CHUNK each) fill them. Doubling
                // on freed steps (4 + 8 + ... + 64 MiB) let an allocator that purges late
                // (mimalloc) hold ~120 MiB beside the 128 MiB buffer.
                let grown = if buf.len() < CHUNK {
                    (buf.len() * 2).min(CHUNK)
                } else {
                    MAX_LINE
                };
                let mut bigger = vec![0u8; grown];
                bigger[..filled].copy_from_slice(&buf[..filled]);
                buf = bigger;
            } else if filled == buf.len() {
                // Longer than the limit: stream through it to its end.
                match skip_line(&mut reader, &mut buf)? {
                    Skipped::ToEnd(more) => {
                        let len = (filled as u64) + more;
                        summary.torn_tail = Some((self.start_offset + base as u64, len));
                        return Ok(summary);
                    }
                    Skipped::Line { more, rest } => {
                        let len = filled + usize::try_from(more).expect("fits");
                        self.emit_too_long(len, base, &mut summary, &mut on_line);
                        base += len;
                        filled = rest;
                        scan_from = 0;
                    }
                }
            }
            if scan_from == filled {
                let end = buf.len().min(filled + CHUNK);
                let n = match reader.read(&mut buf[filled..end]) {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
                if n == 0 {
                    break;
                }
                filled += n;
            }
            let mut pos = 0usize;
            for nl in memchr::memchr_iter(b'\n', &buf[scan_from..filled]) {
                let end = scan_from + nl;
                self.emit(&buf[pos..=end], base + pos, &mut summary, &mut on_line);
                pos = end + 1;
            }
            if pos > 0 {
                buf.copy_within(pos..filled, 0);
                filled -= pos;
                base += pos;
                if buf.len() > CHUNK && filled <= CHUNK / 2 {
                    // The long line is done: the rest of the file streams through CHUNK again.
                    let mut small = vec![0u8; CHUNK];
                    small[..filled].copy_from_slice(&buf[..filled]);
                    buf = small;
                }
            }
        }
        if filled > 0 {
            summary.torn_tail = Some((self.start_offset + base as u64, filled as u64));
        }
        Ok(summary)
    }

    fn emit_too_long(
        &self,
        len: usize,
        rel_offset: usize,
        summary: &mut FrameSummary,
        on_line: &mut impl FnMut(Line<'_>),
    ) {
        let offset = self.start_offset + rel_offset as u64;
        summary.lines += 1;
        summary.complete_len = offset + len as u64;
        on_line(Line {
            pos: LinePos {
                line: self.start_line + summary.lines,
                offset,
                len: len as u64,
            },
            bytes: &[],
            too_long: true,
        });
    }

    fn emit(
        &self,
        raw: &[u8],
        rel_offset: usize,
        summary: &mut FrameSummary,
        on_line: &mut impl FnMut(Line<'_>),
    ) {
        let offset = self.start_offset + rel_offset as u64;
        summary.lines += 1;
        summary.complete_len = offset + raw.len() as u64;
        let content = line_content(&raw[..raw.len() - 1], offset);
        if content.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        on_line(Line {
            pos: LinePos {
                line: self.start_line + summary.lines,
                offset,
                len: raw.len() as u64,
            },
            bytes: content,
            too_long: false,
        });
    }
}

/// How [`skip_line`] ended.
enum Skipped {
    /// At the end of the stream, after this many more bytes.
    ToEnd(u64),
    /// At a `\n`: the line had this many more bytes (newline included); `buf[..rest]` holds
    /// the bytes read after it.
    Line { more: u64, rest: usize },
}

/// Reads (into `buf`, overwriting it) until the next `\n` or the end.
fn skip_line<R: Read>(reader: &mut R, buf: &mut [u8]) -> io::Result<Skipped> {
    let mut more = 0u64;
    let chunk = buf.len().min(CHUNK);
    loop {
        let n = match reader.read(&mut buf[..chunk]) {
            Ok(0) => return Ok(Skipped::ToEnd(more)),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if let Some(nl) = memchr::memchr(b'\n', &buf[..n]) {
            buf.copy_within(nl + 1..n, 0);
            return Ok(Skipped::Line {
                more: more + nl as u64 + 1,
                rest: n - nl - 1,
            });
        }
        more += n as u64;
    }
}

impl Default for Framer {
    fn default() -> Self {
        Self::new()
    }
}

/// A line's content: without a trailing `\r` (before the `\n` already cut) and, for the line
/// at offset 0, without a UTF-8 BOM. The one rule of the scan and of reads by offset.
pub fn line_content(line: &[u8], offset: u64) -> &[u8] {
    &line[content_range(line, offset)]
}

/// Where [`line_content`] lies in `line`.
fn content_range(line: &[u8], offset: u64) -> Range<usize> {
    let end = line.len() - usize::from(line.ends_with(b"\r"));
    let start = if offset == 0 && line[..end].starts_with(UTF8_BOM) {
        UTF8_BOM.len()
    } else {
        0
    };
    start..end
}

/// Reads the line at `pos` (a position a scan recorded) with `pread`, and strips it by the
/// rule of [`line_content`]. A file shorter than `pos` says is reported as changed.
pub fn read_line(file: &File, path: &Path, pos: LinePos) -> Result<Vec<u8>> {
    let mut buf =
        vec![0; usize::try_from(pos.len).map_err(|_| Error::Changed { path: path.into() })?];
    file.read_exact_at(&mut buf, pos.offset)
        .map_err(|e| read_error(&e, path, pos))?;
    let keep = content_of(&buf, path, pos)?;
    buf.truncate(keep.end);
    buf.drain(..keep.start);
    Ok(buf)
}

/// The line at `pos` of `bytes`, the whole file read at once, as [`read_line`] reads it.
pub fn line_in(bytes: &[u8], path: &Path, pos: LinePos) -> Result<Vec<u8>> {
    let raw = usize::try_from(pos.offset)
        .ok()
        .and_then(|s| Some((s, s.checked_add(usize::try_from(pos.len).ok()?)?)))
        .and_then(|(s, e)| bytes.get(s..e))
        .ok_or_else(|| {
            read_error(
                &std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
                path,
                pos,
            )
        })?;
    let keep = content_of(raw, path, pos)?;
    Ok(raw[keep].to_vec())
}

/// The error of a failed `pread` of the line at `pos`: a file that ends before it changed.
pub fn read_error(e: &std::io::Error, path: &Path, pos: LinePos) -> Error {
    let position = Position {
        path: path.into(),
        line: pos.line,
        byte_offset: pos.offset,
    };
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        // The file is shorter than when it was resolved (a truncated tail).
        Error::BadEntry {
            position,
            reason: "the file ends before this line; the file changed".into(),
        }
    } else {
        Error::BadEntry {
            position,
            reason: format!("reading the line failed: {e}"),
        }
    }
}

/// Where the content of the whole line `raw` (read at `pos`, its `\n` included) lies; a line
/// that does not end where the index said changed.
pub fn content_of(raw: &[u8], path: &Path, pos: LinePos) -> Result<Range<usize>> {
    match raw.split_last() {
        Some((b'\n', body)) => Ok(content_range(body, pos.offset)),
        _ => Err(Error::Changed { path: path.into() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(bytes: &[u8]) -> (Vec<(u64, u64, Vec<u8>)>, FrameSummary) {
        let mut out = Vec::new();
        let s = Framer::new().frame_slice(bytes, |l| {
            out.push((l.pos.line, l.pos.offset, l.bytes.to_vec()));
        });
        (out, s)
    }

    #[test]
    fn bom_crlf_blank_and_torn_tail() {
        let data = b"\xEF\xBB\xBF{\"a\":1}\r\n\n  \n{\"b\":2}\n{\"c\"";
        let (lines, s) = collect(data);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0], (1, 0, b"{\"a\":1}".to_vec()));
        assert_eq!(lines[1].0, 4);
        assert_eq!(lines[1].2, b"{\"b\":2}".to_vec());
        assert_eq!(s.lines, 4);
        assert_eq!(s.complete_len, data.len() as u64 - 4);
        assert_eq!(s.torn_tail, Some((data.len() as u64 - 4, 4)));
    }

    #[test]
    fn reader_matches_slice_even_with_tiny_reads_and_long_lines() {
        /// Gives at most `.1` bytes per read.
        struct Dribble<'a>(&'a [u8], usize);
        impl Read for Dribble<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = buf.len().min(self.0.len()).min(self.1);
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut data = Vec::new();
        for i in 0..50 {
            data.extend(std::iter::repeat_n(b'x', i * 13));
            data.push(b'\n');
        }
        // A long line grows the buffer; short lines after it shrink it back; a second long
        // line grows it again.
        for long in [CHUNK + 10, 2 * CHUNK + 3] {
            data.extend(std::iter::repeat_n(b'y', long));
            data.push(b'\n');
            for i in 0..20 {
                data.extend(std::iter::repeat_n(b'z', i * 1000));
                data.push(b'\n');
            }
        }
        data.extend_from_slice(b"torn");
        let (a, sa) = collect(&data);
        for piece in [7, 3 << 20, usize::MAX] {
            let mut b = Vec::new();
            let sb = Framer::new()
                .frame_reader(Dribble(&data, piece), |l| {
                    b.push((l.pos.line, l.pos.offset, l.bytes.to_vec()));
                })
                .unwrap();
            assert_eq!(a, b, "reads of {piece}");
            assert_eq!(sa, sb, "reads of {piece}");
        }
        assert_eq!(sa.torn_tail, Some((data.len() as u64 - 4, 4)));
    }

    #[test]
    fn resume_at_offsets_lines() {
        let f = Framer::resume_at(100, 5);
        let mut got = Vec::new();
        let s = f.frame_slice(b"{}\n{}\n", |l| got.push(l.pos));
        assert_eq!(
            got[1],
            LinePos {
                line: 7,
                offset: 103,
                len: 3
            }
        );
        assert_eq!(s.complete_len, 106);
    }
}
