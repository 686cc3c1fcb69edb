//! Property tests of tolerant reading (issue #8): on generated sessions, valid JSON with
//! unexpected field types, duplicate keys and arbitrary nesting depth keeps every message and
//! leaves the chain unchanged, on both read paths; and the line reader and chain builder take
//! any bytes without panicking, however they arrive (a stable-toolchain stand-in for a
//! cargo-fuzz target, which needs a nightly compiler).

use std::io::Read;

use chainlog::Store;
use chainlog::format::LineProblem;
use chainlog::reference::ResolveOptions;
use chainlog::reference::Transcript;
use chainlog::reference::View;
use chainlog::reference::resolve;
use chainlog::view::read_view;
use chainlog_gen::{GenOptions, generate};
use proptest::prelude::*;

fn opts(view: View) -> ResolveOptions {
    ResolveOptions {
        leaf: None,
        view,
        list_leaves: false,
    }
}

/// What a line of the session is given (appended as its last keys: the last value wins).
#[derive(Debug, Clone)]
enum Change {
    /// `"agentId":7`: an unexpected type, noted.
    AgentIdNumber,
    /// `"isSidechain":0` on a line that says `false`: an unexpected type, noted.
    SidechainZero,
    /// `"uuid"` given twice (same value): a duplicate, noted.
    DuplicateUuid,
    /// An unread field of another type: nothing to note.
    CwdArray,
    /// A new key holding arrays nested this deep: nothing to note.
    Deep(usize),
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        Just(Change::AgentIdNumber),
        Just(Change::SidechainZero),
        Just(Change::DuplicateUuid),
        Just(Change::CwdArray),
        (1usize..4000).prop_map(Change::Deep),
    ]
}

/// Applies `changes` (cycled) to every `every`-th message line; returns the new bytes and the
/// number of lines that must carry a note.
fn mutate(t: &Transcript, bytes: &[u8], changes: &[Change], every: usize) -> (Vec<u8>, usize) {
    let mut edits: Vec<(usize, String, bool)> = Vec::new();
    for (i, row) in t.rows.iter().enumerate().filter(|(i, _)| i % every == 0) {
        let change = &changes[i / every % changes.len()];
        let end = usize::try_from(row.pos.offset + row.pos.len).unwrap();
        let line = &bytes[usize::try_from(row.pos.offset).unwrap()..end];
        // Before `}` (and `\n`).
        let close = line.iter().rposition(|&b| b == b'}').unwrap();
        let at = usize::try_from(row.pos.offset).unwrap() + close;
        let (text, noted) = match change {
            Change::AgentIdNumber => (r#","agentId":7"#.to_owned(), true),
            Change::SidechainZero => {
                if memchr::memmem::find(line, br#""isSidechain":false"#).is_none() {
                    continue;
                }
                (r#","isSidechain":0"#.to_owned(), true)
            }
            Change::DuplicateUuid => (
                format!(r#","uuid":"{}""#, t.names.name(row.head.uuid)),
                true,
            ),
            Change::CwdArray => (r#","cwd":[1,{"a":null}]"#.to_owned(), false),
            Change::Deep(d) => (
                format!(r#","chainlogDeep":{}{}"#, "[".repeat(*d), "]".repeat(*d)),
                false,
            ),
        };
        edits.push((at, text, noted));
    }
    let noted = edits.iter().filter(|e| e.2).count();
    let mut out = bytes.to_vec();
    for (at, text, _) in edits.into_iter().rev() {
        out.splice(at..at, text.into_bytes());
    }
    (out, noted)
}

fn chain_names(t: &Transcript, view: View) -> Vec<String> {
    resolve(t, opts(view))
        .unwrap()
        .chain
        .iter()
        .map(|l| t.names.name(l.uuid))
        .collect()
}

fn check(seed: u64, changes: &[Change], every: usize) -> Result<(), TestCaseError> {
    let s = generate(&GenOptions::plain(seed, 15_000));
    let before = Transcript::scan_bytes(&s.main);
    let (bytes, noted) = mutate(&before, &s.main, changes, every);
    let after = Transcript::scan_bytes(&bytes);
    prop_assert_eq!(after.rows.len(), before.rows.len(), "a message was dropped");
    let skipped = |t: &Transcript| t.bad_lines.iter().filter(|b| b.problem.skipped()).count();
    prop_assert_eq!(skipped(&after), skipped(&before));
    let notes = after
        .bad_lines
        .iter()
        .filter(|b| matches!(b.problem, LineProblem::Fields(_)))
        .count();
    prop_assert_eq!(notes, noted, "every unreadable field is reported");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{}.jsonl", s.session_id));
    std::fs::write(&path, &bytes).unwrap();
    let store = Store::new(dir.path().join("idx"));
    for view in [View::Resume, View::Full] {
        let chain = chain_names(&before, view);
        prop_assert_eq!(&chain_names(&after, view), &chain, "the chain changed");
        let ans = store.resolve(&path, opts(view)).unwrap();
        prop_assert!(
            matches!(ans.source, chainlog::Source::Index),
            "the index answered"
        );
        let indexed: Vec<String> = ans
            .resolution
            .chain
            .iter()
            .map(|l| ans.names.name(l.uuid))
            .collect();
        prop_assert_eq!(&indexed, &chain, "the index disagrees");
        let kept = &after.bad_lines[..after.bad_lines.len().min(chainlog::BAD_LINES_KEPT)];
        prop_assert_eq!(&ans.bad_lines[..], kept);
        prop_assert_eq!(ans.bad_line_count, after.bad_lines.len() as u64);
        // Every line of the view can be read, deep ones included.
        let view_entries = read_view(&path, &ans.resolution.chain, &ans.names).unwrap();
        prop_assert_eq!(view_entries.len(), chain.len());
    }
    Ok(())
}

/// Hands out bytes in small pieces of varying size.
struct Dribble<'a> {
    data: &'a [u8],
    sizes: &'a [usize],
    n: usize,
}

impl Read for Dribble<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let want = self.sizes[self.n % self.sizes.len()];
        self.n += 1;
        let k = want.min(buf.len()).min(self.data.len());
        buf[..k].copy_from_slice(&self.data[..k]);
        self.data = &self.data[k..];
        Ok(k)
    }
}

/// Bytes that are mostly transcript-like: fragments of real lines, braces, quotes, NULs,
/// newlines and invalid UTF-8.
fn fuzz_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(br#"{"type":"user","uuid":"a","parentUuid":null,"message":{"content":"x"}}"#.to_vec()),
        Just(br#"{"type":"assistant","uuid":"b","parentUuid":"a","message":{"id":1,"content":[{"type":"text","text":2}]}}"#.to_vec()),
        Just(br#"{"type":"system","subtype":"compact_boundary","uuid":"c","parentUuid":null,"logicalParentUuid":"b","compactMetadata":{"preservedSegment":{"headUuid":"a","anchorUuid":"c","tailUuid":7}}}"#.to_vec()),
        Just(br#"{"type":"last-prompt","leafUuid":"b"}"#.to_vec()),
        Just(b"\n".to_vec()),
        Just(b"[[[[[[[[".to_vec()),
        Just(b"\0\0\0".to_vec()),
        Just(b"\xff\xfe\"\\ud83d".to_vec()),
        prop::collection::vec(any::<u8>(), 0..24),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Field-type substitutions, duplicate keys and nesting depths keep every message and the
    /// chain, and are reported, on the full scan and the index alike.
    #[test]
    fn unexpected_types_and_depths_keep_the_chain(
        seed in any::<u64>(),
        changes in prop::collection::vec(change(), 1..6),
        every in 1usize..4,
    ) {
        check(seed, &changes, every)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// The line reader gives the same lines however the bytes arrive, and the chain builder
    /// resolves whatever they hold, without panicking.
    #[test]
    fn line_reader_and_chain_builder_take_any_bytes(
        data in fuzz_bytes(),
        sizes in prop::collection::vec(1usize..64, 1..8),
    ) {
        let whole = Transcript::scan_bytes(&data);
        let dribbled = Transcript::scan_reader(Dribble { data: &data, sizes: &sizes, n: 0 }).unwrap();
        prop_assert_eq!(&whole.rows, &dribbled.rows);
        prop_assert_eq!(&whole.bad_lines, &dribbled.bad_lines);
        prop_assert_eq!(whole.frame, dribbled.frame);
        for view in [View::Resume, View::Full] {
            let _ = resolve(&whole, opts(view));
        }
    }
}

/// The fuzz targets' checks (`fuzz/checks.rs`), shared with the cargo-fuzz targets.
#[path = "../../fuzz/checks.rs"]
mod fuzz_checks;

/// The fuzz targets' seed corpus (every fixture, bad ones included) through both fuzz checks,
/// whole and cut at each tenth: what CI ran under libFuzzer, replayed without a nightly
/// sanitizer build (libFuzzer itself is run by hand, see `fuzz/Cargo.toml`).
#[test]
fn fuzz_checks_hold_on_the_seed_corpus() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut seeds = 0;
    for dir in ["a5", "bad"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_none_or(|x| x != "jsonl") {
                continue;
            }
            let data = std::fs::read(&path).unwrap();
            for tenth in [10, 3, 7] {
                let cut = &data[..data.len() * tenth / 10];
                fuzz_checks::transcript(cut);
                fuzz_checks::index(cut);
            }
            seeds += 1;
        }
    }
    assert!(seeds > 30, "{seeds} seeds");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Both fuzz checks on transcript-like bytes.
    #[test]
    fn fuzz_checks_hold_on_any_bytes(data in fuzz_bytes()) {
        fuzz_checks::transcript(&data);
        fuzz_checks::index(&data);
    }
}
