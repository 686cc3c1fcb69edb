//! The parsing stage of a catch-up: new bytes framed on one thread, parsed by every thread that
//! has nothing better to do, handed to the storing stage in file order.
//!
//! # Context
//! Parsing is the build's critical path: a first index of a 10 MiB transcript spent ~100 M
//! instructions framing, fingerprinting and parsing against ~20 M storing. Lines parse
//! independently of each other, so the work splits by blocks of lines; only framing (line
//! numbers, offsets, the torn tail) and fingerprinting must see the bytes in order.
//!
//! # Design
//! The framing thread copies the framed lines into blocks of about [`BLOCK_BYTES`] or
//! [`BLOCK_LINES`], whichever comes first, and queues them. Three participants parse them, each
//! taking the oldest queued block: a helper thread (started with the second block: a short
//! catch-up starts none), the storing thread whenever the block it needs next is not parsed
//! yet, and the framing thread whenever the queue is full (and, at the end, until it is empty).
//! A line as long as a block is a block of its own, parsed by the framing thread where it lies
//! (a copy of a 100 MB line would double what it costs). A block parsed by the thread that
//! stores it crosses no thread; a storing or framing thread never sleeps while a block waits.
//! (Before, the framing thread parsed one block in three and the helper the others while the
//! storing thread waited on them: at 10 MiB it stored for ~2.7 ms and waited ~7.) At most
//! [`IN_FLIGHT`] blocks are queued, being parsed or parsed and not stored, which bounds memory.
//! Each block carries the names of the non-UUID ids it met, merged in file order by the caller:
//! an id's name is its first spelling in the file, as the full scan keeps it.

use std::collections::{BTreeMap, VecDeque};
use std::io::Read;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use crate::id::IdNames;
use crate::transcript::envelope::{Entry, LineProblem, parse_framed};
use crate::transcript::frame::{FrameSummary, Framer, Line, LinePos};

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
/// `tests/it/robustness.rs::a_first_index_does_not_hold_the_rows` (~270-byte lines) peaked at
/// 64–67 MiB (over its 64 MiB bound; 52 MiB with one parsing thread), with 128 KiB at 53 MiB.
const BLOCK_LINES: usize = 512;

/// Blocks queued, being parsed, or parsed and not yet stored, at most.
const IN_FLIGHT: usize = 8;

/// A block of parsed lines and the names of non-UUID ids first met in it.
type ParsedBlock = (Vec<Parsed>, IdNames);

/// Lines framed for parsing: their bytes back to back, and where each one lies in them.
/// Parsed blocks come back emptied, for the next one (no allocation, no page faults of fresh
/// memory per block).
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
            lines: Vec::with_capacity(BLOCK_LINES),
        }
    }
}

/// What the three participants share, under one lock.
#[derive(Default)]
struct State {
    /// Framed blocks nobody has taken, oldest first, with their numbers (from 0).
    queued: VecDeque<(usize, Block)>,
    /// Blocks being parsed.
    parsing: usize,
    /// Parsed blocks not yet stored, by number.
    parsed: BTreeMap<usize, ParsedBlock>,
    /// Emptied blocks, for the framing thread to fill again.
    free: Vec<Block>,
    /// How many blocks there are, once the framing thread has framed the last.
    total: Option<usize>,
    /// A participant panicked: the others stop waiting.
    stopped: bool,
}

impl State {
    fn in_flight(&self) -> usize {
        self.queued.len() + self.parsing + self.parsed.len()
    }
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    /// Signalled on every change of `state`.
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'a>(&self, state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.changed
            .wait(state)
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Parses the oldest queued block outside the lock or, with none queued, waits for a
    /// change. Returns the lock again.
    fn parse_or_wait<'a>(&'a self, mut state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        let Some((n, mut block)) = state.queued.pop_front() else {
            return self.wait(state);
        };
        state.parsing += 1;
        drop(state);
        let parsed = parse_block(&block);
        block.bytes.clear();
        block.lines.clear();
        let mut state = self.lock();
        state.parsing -= 1;
        state.parsed.insert(n, parsed);
        state.free.push(block);
        self.changed.notify_all();
        state
    }

    /// Parses queued blocks until stopped, or until the last block is framed and none is left
    /// queued (the helper throughout, the framing thread once it has framed the last).
    fn parse_rest(&self) {
        let mut state = self.lock();
        while !(state.stopped || state.queued.is_empty() && state.total.is_some()) {
            state = self.parse_or_wait(state);
        }
    }
}

/// Stops the others when the thread holding it unwinds, so none waits for it forever.
struct StopOnPanic<'a>(&'a Shared);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.lock().stopped = true;
            self.0.changed.notify_all();
        }
    }
}

/// Frames `reader` with `framer` and calls `consume` with the parsed lines in file order, in
/// blocks, on the calling thread. Returns the framing summary and the names of non-UUID ids.
/// A reader of fewer than [`BLOCK_BYTES`] (`len`: most catch-ups, a turn appended or a small
/// session) is one block, framed and parsed on the calling thread: no thread is started (a
/// project of 20,000 small sessions started one for each).
pub fn parse_in_order<R: Read + Send>(
    framer: &Framer,
    reader: &mut R,
    len: u64,
    mut consume: impl FnMut(Vec<Parsed>),
) -> std::io::Result<(FrameSummary, IdNames)> {
    if len < BLOCK_BYTES {
        return parse_here(framer, reader, consume);
    }
    let shared = Shared::default();
    let shared = &shared;
    std::thread::scope(|scope| {
        let framing = named("chainlog-frame")
            .spawn_scoped(scope, move || {
                let _stop = StopOnPanic(shared);
                let mut helper = None;
                let mut n = 0;
                let mut block = Block::new();
                let mut filled = 0u64;
                // Queues `block`, or `parsed` when the framing thread parsed the lines itself.
                let mut queue = |block: &mut Block, parsed: Option<ParsedBlock>, n: &mut usize| {
                    let mut state = shared.lock();
                    // A full queue: parse instead of waiting.
                    while state.in_flight() >= IN_FLIGHT && !state.stopped {
                        state = shared.parse_or_wait(state);
                    }
                    if state.stopped {
                        // Nobody takes blocks any more: frame to the end without keeping them.
                        block.bytes.clear();
                        block.lines.clear();
                        return;
                    }
                    if let Some(parsed) = parsed {
                        state.parsed.insert(*n, parsed);
                    } else {
                        let next = state.free.pop().unwrap_or_else(Block::new);
                        state.queued.push_back((*n, std::mem::replace(block, next)));
                    }
                    *n += 1;
                    drop(state);
                    shared.changed.notify_all();
                    if *n == 2 && helper.is_none() {
                        helper = Some(
                            named("chainlog-parse")
                                .spawn_scoped(scope, move || help(shared))
                                .expect("a thread starts"),
                        );
                    }
                };
                let summary = framer.frame_reader(reader, |line| {
                    if line.bytes.len() as u64 >= BLOCK_BYTES {
                        // A line as long as a block is a block of its own, parsed where it lies:
                        // a copy would double the memory a 100 MB line takes.
                        if !block.lines.is_empty() {
                            queue(&mut block, None, &mut n);
                        }
                        let mut names = IdNames::default();
                        let own = vec![parse(&line, &mut names)];
                        queue(&mut block, Some((own, names)), &mut n);
                        filled = 0;
                        return;
                    }
                    let start = block.bytes.len();
                    block.bytes.extend_from_slice(line.bytes);
                    block
                        .lines
                        .push((line.pos, start, block.bytes.len(), line.too_long));
                    filled += line.pos.len;
                    if filled >= BLOCK_BYTES || block.lines.len() >= BLOCK_LINES {
                        filled = 0;
                        queue(&mut block, None, &mut n);
                    }
                });
                if !block.lines.is_empty() {
                    queue(&mut block, None, &mut n);
                }
                shared.lock().total = Some(n);
                shared.changed.notify_all();
                // What is left queued, parsed here too.
                shared.parse_rest();
                if let Some(Err(panic)) = helper.map(std::thread::ScopedJoinHandle::join) {
                    std::panic::resume_unwind(panic);
                }
                summary
            })
            .expect("a thread starts");
        let stop = StopOnPanic(shared);
        let mut names = IdNames::default();
        for n in 0.. {
            let mut state = shared.lock();
            let block = loop {
                if let Some(block) = state.parsed.remove(&n) {
                    break Some(block);
                }
                if state.stopped || state.total.is_some_and(|total| n >= total) {
                    break None;
                }
                state = shared.parse_or_wait(state);
            };
            drop(state);
            let Some((lines, met)) = block else { break };
            // Room in flight for the framing thread.
            shared.changed.notify_all();
            names.merge(met);
            consume(lines);
        }
        drop(stop);
        match framing.join() {
            Ok(summary) => summary.map(|s| (s, names)),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// [`parse_in_order`] of a short reader: one block, framed and parsed on the calling thread.
fn parse_here<R: Read>(
    framer: &Framer,
    reader: &mut R,
    mut consume: impl FnMut(Vec<Parsed>),
) -> std::io::Result<(FrameSummary, IdNames)> {
    let mut names = IdNames::default();
    let mut lines = Vec::new();
    let summary = framer.frame_reader(reader, |line| lines.push(parse(&line, &mut names)))?;
    consume(lines);
    Ok((summary, names))
}

/// The helper: parses queued blocks until the framing thread has framed the last and none is
/// left.
fn help(shared: &Shared) {
    let _stop = StopOnPanic(shared);
    shared.parse_rest();
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
        let (summary, names) = parse_in_order(
            &Framer::new(),
            &mut &bytes[..],
            bytes.len() as u64,
            |block| {
                blocks += 1;
                lines.extend(block.iter().map(|p| format!("{p:?}")));
            },
        )
        .unwrap();
        (lines, summary, sorted_names(&names), blocks)
    }

    #[test]
    fn blocks_parsed_on_three_threads_arrive_in_file_order() {
        let bytes = transcript(6_000, 400);
        let (want, want_summary, want_names) = sequential(&bytes);
        let (got, summary, names, blocks) = staged(&bytes);
        assert!(blocks >= 8, "the blocks were shared out: {blocks} blocks");
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
        // Around each block's end: one block, the second (which starts the helper), many;
        // blocks cut by line count (short lines) and by bytes (long ones).
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
    fn lines_longer_than_a_block_are_kept_in_order() {
        // Short lines around lines of more than a block, which the framing thread parses where
        // they lie, alone or back to back.
        let short = transcript(2_000, 400);
        let long = transcript(7, BLOCK_BYTES as usize + 200);
        let mut bytes = Vec::new();
        for part in [&short, &long, &long, &short] {
            let end = part.iter().rposition(|&b| b == b'\n').unwrap() + 1;
            bytes.extend_from_slice(&part[..end]);
        }
        let (want, want_summary, want_names) = sequential(&bytes);
        let (got, summary, names, blocks) = staged(&bytes);
        assert_eq!(got, want);
        assert_eq!((summary, names), (want_summary, want_names));
        assert!(blocks >= 12, "each long line a block: {blocks} blocks");
    }

    #[test]
    fn a_panic_while_storing_ends_the_parsers_instead_of_hanging() {
        let bytes = transcript(6_000, 400);
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let r = std::panic::catch_unwind(|| {
                parse_in_order(&Framer::new(), &mut &bytes[..], bytes.len() as u64, |_| {
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
