//! The parsing stage of a catch-up: new bytes framed on one thread, parsed on two, handed to
//! the storing stage in file order.
//!
//! # Context
//! Parsing is the build's critical path: the storing thread waits on it (a first index of a
//! 10 MiB transcript spent ~100 M instructions framing, fingerprinting and parsing against
//! ~20 M storing). Lines parse independently of each other, so the work splits by blocks of
//! lines; only framing (line numbers, offsets, the torn tail) and fingerprinting must see the
//! bytes in order.
//!
//! # Design
//! The framing thread cuts the framed lines into blocks of about [`BLOCK_BYTES`] or
//! [`BLOCK_LINES`], whichever comes first. It parses one block in [`CYCLE`] itself, straight
//! from the framer's buffer, and copies the others for a helper thread, started with the
//! second block (a short catch-up starts no helper): reading and fingerprinting keep the
//! framing thread as busy as the helper that way. Each parser
//! sends its parsed blocks through its own bounded channel; the caller takes each block from
//! the channel of the parser that owns it, so the order is the file's and memory stays bounded
//! by the channels' depth.
//! Each block carries the names of the non-UUID ids it met, merged in file order by the caller:
//! an id's name is its first spelling in the file, as the full scan keeps it.

use std::io::Read;
use std::sync::mpsc::{Receiver, Sender, SyncSender, sync_channel};

use crate::transcript::envelope::{Entry, LineProblem, parse_framed};
use crate::transcript::frame::{FrameSummary, Framer, Line, LinePos};
use crate::transcript::id::IdNames;

/// A parsed line on its way to storage: its position, the entry or why it is bad, and the
/// fields of a kept entry that could not be read (`LineProblem::Fields`).
pub type Parsed = (LinePos, Result<Entry, LineProblem>, Option<LineProblem>);

/// Bytes of lines per block, at most (see also [`BLOCK_LINES`]). Large enough that hand-overs
/// are few: each one may wait for a sleeping thread to wake, which on a 2-vCPU VM took up to
/// ~1 ms. A 10 MiB first index by hand, 8 interleaved rounds of 61: medians 15.3 ms with
/// 128 KiB blocks, 14.7–14.8 with 512 KiB, 14.95 with 1 MiB.
const BLOCK_BYTES: u64 = 512 << 10;

/// Lines per block, at most: the parsed lines of a block take ~230 bytes each whatever the
/// line's length, so blocks of short lines are cut by count. With 256 KiB blocks and no count
/// `tests/robustness.rs::a_first_index_does_not_hold_the_rows` (~270-byte lines) peaked at
/// 64–67 MiB (over its 64 MiB bound; 52 MiB with one parsing thread), with 128 KiB at 53 MiB.
const BLOCK_LINES: usize = 512;

/// Parsed blocks in flight per parser.
const DEPTH: usize = 4;

/// Of every `CYCLE` blocks the framing thread parses the first, the helper the others (by
/// hand on a 10 MiB first index, halves kept the framing thread busy 88 % of the parse and
/// the helper 44 %).
const CYCLE: usize = 3;

/// Whether block `n` (from 0) is the helper's to parse.
fn helpers(n: usize) -> bool {
    !n.is_multiple_of(CYCLE)
}

/// A block of parsed lines and the names of non-UUID ids first met in it.
type ParsedBlock = (Vec<Parsed>, IdNames);

/// Lines framed for the helper: their bytes back to back, and where each one lies in them.
/// The helper hands each block back emptied, for the next one (no allocation, no page faults
/// of fresh memory per block).
#[derive(Default)]
struct Block {
    bytes: Vec<u8>,
    lines: Vec<(LinePos, usize, usize, bool)>,
}

impl Block {
    fn new() -> Self {
        Block {
            // A block ends with the line that crosses `BLOCK_BYTES`: most fit with this room.
            bytes: Vec::with_capacity(BLOCK_BYTES as usize + (64 << 10)),
            lines: Vec::new(),
        }
    }
}

/// Frames `reader` with `framer` and calls `consume` with the parsed lines in file order, in
/// blocks, on the calling thread. Returns the framing summary and the names of non-UUID ids.
pub fn parse_in_order<R: Read + Send>(
    framer: &Framer,
    reader: &mut R,
    mut consume: impl FnMut(Vec<Parsed>),
) -> std::io::Result<(FrameSummary, IdNames)> {
    std::thread::scope(|scope| {
        // Made inside the scope: if `consume` panics, the receivers are dropped before the
        // scope waits for its threads, so a parser blocked on a full channel wakes and ends.
        let (own_tx, own_rx) = sync_channel::<ParsedBlock>(DEPTH);
        let (helper_tx, helper_rx) = sync_channel::<ParsedBlock>(DEPTH);
        let framing = named("chainlog-frame")
            .spawn_scoped(scope, move || {
                let mut helper_tx = Some(helper_tx);
                let mut helper: Option<(SyncSender<Block>, _)> = None;
                let (recycle_tx, recycle_rx) = std::sync::mpsc::channel::<Block>();
                let mut recycle_tx = Some(recycle_tx);
                let mut n = 0;
                let mut parsed: ParsedBlock = Default::default();
                // Lines in the framing thread's last block: the next one's capacity.
                let mut own_lines = 0;
                let mut block = Block::default();
                let mut filled = 0u64;
                let mut count = 0;
                let summary = framer.frame_reader(reader, |line| {
                    if helpers(n) {
                        if block.bytes.capacity() == 0 {
                            block = recycle_rx.try_recv().unwrap_or_else(|_| Block::new());
                        }
                        let start = block.bytes.len();
                        block.bytes.extend_from_slice(line.bytes);
                        block
                            .lines
                            .push((line.pos, start, block.bytes.len(), line.too_long));
                    } else {
                        if parsed.0.capacity() == 0 {
                            parsed.0.reserve_exact(own_lines + own_lines / 4 + 16);
                        }
                        parsed.0.push(parse(&line, &mut parsed.1));
                    }
                    filled += line.pos.len;
                    count += 1;
                    if filled >= BLOCK_BYTES || count >= BLOCK_LINES {
                        filled = 0;
                        count = 0;
                        if helpers(n) {
                            let (tx, _) = helper.get_or_insert_with(|| {
                                let out = helper_tx.take().expect("the helper starts once");
                                let back = recycle_tx.take().expect("the helper starts once");
                                let (tx, rx) = sync_channel::<Block>(DEPTH);
                                let helper = named("chainlog-parse")
                                    .spawn_scoped(scope, move || parse_blocks(&rx, &out, &back));
                                (tx, helper.expect("a thread starts"))
                            });
                            let _ = tx.send(std::mem::take(&mut block));
                        } else {
                            own_lines = parsed.0.len();
                            let _ = own_tx.send(std::mem::take(&mut parsed));
                        }
                        n += 1;
                    }
                });
                // The last block, partly filled (the helper's with no helper yet is parsed here).
                if !parsed.0.is_empty() {
                    let _ = own_tx.send(parsed);
                }
                if !block.lines.is_empty() {
                    if let Some((tx, _)) = &helper {
                        let _ = tx.send(block);
                    } else {
                        let out = helper_tx.take().expect("no helper was started");
                        let _ = out.send(parse_block(&block));
                    }
                }
                drop(own_tx);
                drop(helper_tx);
                if let Some((tx, handle)) = helper {
                    drop(tx);
                    if let Err(panic) = handle.join() {
                        std::panic::resume_unwind(panic);
                    }
                }
                summary
            })
            .expect("a thread starts");
        // Each block from its parser's channel; a parser that has ended has sent its last.
        let mut names = IdNames::default();
        for n in 0.. {
            let rx: &Receiver<ParsedBlock> = if helpers(n) { &helper_rx } else { &own_rx };
            let Ok((lines, met)) = rx.recv() else { break };
            names.merge(met);
            consume(lines);
        }
        match framing.join() {
            Ok(summary) => summary.map(|s| (s, names)),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

fn named(name: &str) -> std::thread::Builder {
    std::thread::Builder::new().name(name.into())
}

fn parse(line: &Line<'_>, names: &mut IdNames) -> Parsed {
    let mut parsed = parse_framed(line, names);
    let note = parsed.note_problem();
    (line.pos, parsed.entry, note)
}

fn parse_block(block: &Block) -> ParsedBlock {
    let mut names = IdNames::default();
    let lines = block
        .lines
        .iter()
        .map(|&(pos, start, end, too_long)| {
            let line = Line {
                pos,
                bytes: &block.bytes[start..end],
                too_long,
            };
            parse(&line, &mut names)
        })
        .collect();
    (lines, names)
}

/// The helper: parses the blocks it receives, in order, until the framing thread is done, and
/// hands each one back emptied.
fn parse_blocks(blocks: &Receiver<Block>, out: &SyncSender<ParsedBlock>, back: &Sender<Block>) {
    for mut block in blocks {
        let _ = out.send(parse_block(&block));
        block.bytes.clear();
        block.lines.clear();
        let _ = back.send(block);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of every kind: messages (one with a non-UUID id), a bad line, a blank line, a
    /// CRLF line, a kept entry with an unreadable field; then a torn tail. Lines are about
    /// `pad` bytes long, give or take 100.
    fn transcript(lines: usize, pad: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for i in 0..lines {
            let pad = "x".repeat(pad - 100 + i % 200);
            let line = match i % 7 {
                0 => format!(
                    r#"{{"type":"user","uuid":"msg-{i}","parentUuid":null,"message":{{"role":"user","content":"{pad}"}}}}"#
                ),
                1 => "{not json".to_string(),
                2 => String::new(),
                3 => format!("{{\"type\":\"summary\",\"summary\":\"{pad}\",\"leafUuid\":\"x\"}}\r"),
                4 => format!(
                    r#"{{"type":"assistant","uuid":"00000000-0000-4000-8000-{i:012}","timestamp":7,"message":{{"role":"assistant","content":"{pad}"}}}}"#
                ),
                _ => format!(
                    r#"{{"type":"user","uuid":"00000000-0000-4000-8000-{i:012}","parentUuid":"00000000-0000-4000-8000-{:012}","message":{{"role":"user","content":"{pad}"}}}}"#,
                    i - 1
                ),
            };
            out.extend_from_slice(line.as_bytes());
            out.push(b'\n');
        }
        out.extend_from_slice(br#"{"type":"user","uuid":"torn"#);
        out
    }

    /// The same bytes framed and parsed on one thread, as the full scan does.
    fn sequential(bytes: &[u8]) -> (Vec<String>, FrameSummary, Vec<String>) {
        let mut names = IdNames::default();
        let mut lines = Vec::new();
        let summary = Framer::new().frame_slice(bytes, |line| {
            lines.push(format!("{:?}", parse(&line, &mut names)));
        });
        (lines, summary, sorted_names(&names))
    }

    fn sorted_names(names: &IdNames) -> Vec<String> {
        let mut v: Vec<String> = names.iter().map(|(id, t)| format!("{id:?}={t}")).collect();
        v.sort();
        v
    }

    /// Parses `bytes` through the stage; returns the lines, the summary, the names and how
    /// many blocks arrived.
    fn staged(bytes: &[u8]) -> (Vec<String>, FrameSummary, Vec<String>, usize) {
        let mut lines = Vec::new();
        let mut blocks = 0;
        let (summary, names) = parse_in_order(&Framer::new(), &mut &bytes[..], |block| {
            blocks += 1;
            lines.extend(block.iter().map(|p| format!("{p:?}")));
        })
        .unwrap();
        (lines, summary, sorted_names(&names), blocks)
    }

    #[test]
    fn blocks_parsed_on_two_threads_arrive_in_file_order() {
        let bytes = transcript(6_000, 400);
        let (want, want_summary, want_names) = sequential(&bytes);
        let (got, summary, names, blocks) = staged(&bytes);
        assert!(
            blocks >= 8,
            "the helper parsed every other block: {blocks} blocks"
        );
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "line {i}");
        }
        assert_eq!(summary, want_summary);
        assert!(summary.torn_tail.is_some());
        assert_eq!(names, want_names);
        assert!(!names.is_empty(), "non-UUID ids are named");
    }

    #[test]
    fn every_cut_between_blocks_keeps_every_line() {
        // Around each block's end: the last block the framing thread's, the helper's with no
        // helper yet, the helper's with one; blocks cut by line count (short lines) and by
        // bytes (long ones).
        for pad in [400, 4_000] {
            let line_len = transcript(7, pad).len() / 7;
            let around = (BLOCK_BYTES as usize / line_len).min(BLOCK_LINES);
            for n in [
                1,
                2,
                around - 1,
                around,
                around + 1,
                2 * around,
                2 * around + 3,
                3 * around,
            ] {
                let bytes = transcript(n, pad);
                let (want, want_summary, want_names) = sequential(&bytes);
                let (got, summary, names, blocks) = staged(&bytes);
                assert_eq!(got, want, "{n} lines of {pad}");
                assert_eq!((summary, names), (want_summary, want_names), "{n} lines");
                if n == 3 * around {
                    assert!(blocks >= 3, "{n} lines of {pad} in {blocks} blocks");
                }
            }
        }
    }

    #[test]
    fn a_panic_while_storing_ends_the_parsers_instead_of_hanging() {
        let bytes = transcript(6_000, 400);
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let r = std::panic::catch_unwind(|| {
                parse_in_order(&Framer::new(), &mut &bytes[..], |_| {
                    panic!("storing failed")
                })
            });
            let _ = done_tx.send(r.is_err());
        });
        let panicked = done_rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the parse ended");
        assert!(panicked, "the panic reached the caller");
    }
}
