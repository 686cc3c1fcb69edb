//! Property test: any interleaving of appends, torn lines, truncations, rewrites, index
//! damage, killed writers and rebuilds leaves the index answering — itself, never through the
//! fallback to a full scan — exactly what a full scan answers; and after damage to the search
//! index, `search` answers what a fresh search index answers.
//! Transcripts come from the generator with every feature on (branches, compactions with and
//! without preserved segments, snips, progress, sidechains, metadata mid-file, corruption);
//! extra ops write the shapes an incremental catch-up can get wrong: long runs of non-turn
//! entries across batches, and ids named (snip, preserved segment, checkpoint, parent) in one
//! batch that arrive only in a later one.
//!
//! `Reopen` is real: a child process (this test binary, role `catchup`) rebuilds the index in a
//! loop and is killed with SIGKILL after a random delay, mid-commit or mid-compaction; the next
//! store opens what it left behind. `Stopped` stops such a child with SIGSTOP instead, at a
//! random point: `chainlog resume` (both views) and `chainlog index` processes must each
//! answer within 5 s meanwhile (#8), the resumes exactly like a full scan.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chainlog::Source;
use chainlog::Store;
use chainlog::reference::ResolveOptions;
use chainlog::reference::Transcript;
use chainlog::reference::View;
use chainlog::reference::resolve;
use chainlog_gen::{GenOptions, generate};
use proptest::prelude::*;

const ROLE: &str = "CHAINLOG_PROPS_CHILD";

/// Something named before it is written.
#[derive(Debug, Clone, Copy)]
enum Forward {
    /// A snip whose `removedUuids` names the message.
    Snip,
    /// A message whose parent is the message (a chain break until it arrives).
    Parent,
    /// A `last-prompt` whose `leafUuid` names the message.
    Checkpoint,
    /// A compact boundary whose preserved segment's head, anchor and tail arrive later.
    Segment,
}

#[derive(Debug, Clone)]
enum Op {
    /// Append the next `n` lines of the source (after any line a forward reference waits for).
    Append(usize),
    /// Append half of the next line (a torn tail).
    AppendTorn,
    /// Cut the file back by `n` lines (a tombstone truncation).
    Truncate(usize),
    /// Replace the file with a different session (atomic rename).
    Rewrite,
    /// Flip bytes in the index files.
    CorruptIndex,
    /// Delete the index files.
    DeleteIndex,
    /// Search, flip bytes in the search index's file number `n` (of its files sorted), and
    /// search again: the answer is a fresh index's.
    DamageSearch(usize),
    /// Kill a child process rebuilding the index after this many ms, then open a new store.
    Reopen(u64),
    /// Stop (SIGSTOP) a child process rebuilding the index after this many ms; other
    /// operations answer within a bound meanwhile; then kill it and open a new store.
    Stopped(u64),
    /// `rebuild` the transcript.
    Rebuild,
    /// Append `n` chained `system` lines under the current tip, `batch` at a time, catching up
    /// after each batch.
    NonTurnRun(usize, usize),
    /// Write a line naming a new uuid, catch up; the named line comes with the next append.
    Forward(Forward),
    /// Compare answers.
    Query,
}

fn op() -> impl Strategy<Value = Op> {
    // Weights doubled so that `Stopped`, which may wait out a lock (2 s), stays rare.
    prop_oneof![
        12 => (1usize..40).prop_map(Op::Append),
        4 => Just(Op::AppendTorn),
        2 => (1usize..10).prop_map(Op::Truncate),
        2 => Just(Op::Rewrite),
        2 => Just(Op::CorruptIndex),
        2 => Just(Op::DeleteIndex),
        2 => (0usize..64).prop_map(Op::DamageSearch),
        2 => (0u64..40).prop_map(Op::Reopen),
        1 => (0u64..60).prop_map(Op::Stopped),
        2 => Just(Op::Rebuild),
        2 => (200usize..1300, 250usize..700).prop_map(|(n, b)| Op::NonTurnRun(n, b)),
        4 => prop_oneof![
            Just(Forward::Snip),
            Just(Forward::Parent),
            Just(Forward::Checkpoint),
            Just(Forward::Segment)
        ]
        .prop_map(Op::Forward),
        8 => Just(Op::Query),
    ]
}

fn lines_of(seed: u64) -> Vec<Vec<u8>> {
    let mut opts = GenOptions::everything(seed, 40_000);
    opts.compact_every_bytes = Some(12_000);
    let s = generate(&opts);
    s.main
        .split_inclusive(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

fn check(store: &Store, path: &Path, step: usize) -> Result<(), TestCaseError> {
    let t = Transcript::open(path).unwrap();
    for view in [View::Resume, View::Full] {
        let opts = ResolveOptions {
            view,
            ..ResolveOptions::default()
        };
        let want = resolve(&t, opts).unwrap();
        let got = store.resolve(path, opts).unwrap();
        prop_assert_eq!(&got.source, &Source::Index, "step {} {:?}", step, view);
        prop_assert_eq!(&got.resolution, &want, "step {} {:?}", step, view);
        let kept = &t.bad_lines[..t.bad_lines.len().min(chainlog::BAD_LINES_KEPT)];
        prop_assert_eq!(&got.bad_lines[..], kept, "bad lines at step {}", step);
        prop_assert_eq!(
            got.bad_line_count,
            t.bad_lines.len() as u64,
            "step {}",
            step
        );
    }
    Ok(())
}

fn damage(dir: &Path, delete: bool) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        // The search indexes' folder (`DamageSearch` damages it).
        if p.is_dir() {
            continue;
        }
        if delete {
            std::fs::remove_file(&p).unwrap();
            continue;
        }
        flip(&p);
    }
}

fn flip(p: &Path) {
    let mut bytes = std::fs::read(p).unwrap();
    let n = bytes.len();
    if n == 0 {
        return;
    }
    for k in 0..64 {
        let i = (k * 7919 + 4096) % n;
        bytes[i] ^= 0x5a;
    }
    std::fs::write(p, bytes).unwrap();
}

/// `search test` over the store's claude dir: the uuids found, sorted.
fn searched(store: &Store) -> Vec<String> {
    let opts = chainlog::search::SearchOptions {
        all: true,
        limit: 100_000,
        ..Default::default()
    };
    let mut out: Vec<String> = store
        .search("test", &opts)
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.uuid)
        .collect();
    out.sort();
    out
}

/// Searches, damages the search index's file number `n`, and compares the next search with a
/// fresh index's.
fn damage_search(
    store: &Store,
    claude: &Path,
    index: &Path,
    n: usize,
    step: usize,
) -> Result<(), TestCaseError> {
    searched(store);
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(index.join("search"))
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|project| {
            std::fs::read_dir(project.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|e| e.path())
        .collect();
    files.sort();
    if !files.is_empty() {
        flip(&files[n % files.len()]);
    }
    let fresh = tempfile::tempdir().unwrap();
    let want = searched(&Store::open(claude, fresh.path()).unwrap());
    prop_assert_eq!(searched(store), want, "step {}", step);
    Ok(())
}

/// A fresh uuid for injected lines (never produced by the generator).
fn fresh(counter: &mut u64) -> String {
    *counter += 1;
    format!("eeeeeeee-0000-4000-8000-{:012x}", *counter)
}

/// The uuid of the last message line written (`None` before the first).
fn tip(written: &[Vec<u8>]) -> Option<String> {
    written.iter().rev().find_map(|l| {
        let v: serde_json::Value = serde_json::from_slice(l).ok()?;
        let ty = v.get("type")?.as_str()?;
        if !matches!(ty, "user" | "assistant" | "system" | "attachment") {
            return None;
        }
        v.get("uuid")?.as_str().map(str::to_owned)
    })
}

fn json_id(id: Option<&str>) -> String {
    id.map_or("null".to_owned(), |p| format!("\"{p}\""))
}

/// An injected message line (`ty` user, assistant or system) with `extra` fields.
fn line(uuid: &str, parent: Option<&str>, ty: &str, extra: &str) -> Vec<u8> {
    let body = match ty {
        "user" => r#""message":{"role":"user","content":"injected prompt"}"#.to_owned(),
        "assistant" => format!(
            r#""message":{{"id":"msg_{uuid}","role":"assistant","content":[{{"type":"text","text":"injected"}}],"usage":{{"input_tokens":3,"output_tokens":5}}}}"#
        ),
        _ => r#""subtype":"informational","content":"note","level":"info""#.to_owned(),
    };
    format!(
        r#"{{"parentUuid":{},"isSidechain":false,"userType":"external","cwd":"/p","sessionId":"injected","version":"2.1.328","type":"{ty}",{body}{extra},"uuid":"{uuid}","timestamp":"2030-01-01T00:00:00.000Z"}}"#,
        json_id(parent)
    )
    .into_bytes()
    .into_iter()
    .chain(*b"\n")
    .collect()
}

/// The line(s) written now and the line(s) held back for the next append.
fn forward_lines(
    kind: Forward,
    tip: Option<&str>,
    counter: &mut u64,
) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let x = fresh(counter);
    match kind {
        Forward::Snip => {
            let s = fresh(counter);
            let extra = format!(r#","snipMetadata":{{"removedUuids":["{x}"]}}"#);
            let mut snip = line(&s, tip, "system", &extra);
            let text = String::from_utf8(snip)
                .unwrap()
                .replace("informational", "snip_boundary");
            snip = text.into_bytes();
            (
                vec![snip],
                vec![
                    line(&x, Some(&s), "user", ""),
                    line(&fresh(counter), Some(&x), "assistant", ""),
                ],
            )
        }
        Forward::Parent => {
            let y = fresh(counter);
            (
                vec![line(&y, Some(&x), "user", "")],
                vec![line(&x, tip, "system", "")],
            )
        }
        Forward::Checkpoint => {
            let cp = format!(
                "{{\"type\":\"last-prompt\",\"lastPrompt\":\"injected\",\"leafUuid\":\"{x}\",\"sessionId\":\"injected\"}}\n"
            );
            (vec![cp.into_bytes()], vec![line(&x, tip, "user", "")])
        }
        Forward::Segment => {
            let b = fresh(counter);
            let anchor = fresh(counter);
            let tail = fresh(counter);
            let extra = format!(
                r#","logicalParentUuid":{},"compactMetadata":{{"trigger":"manual","preTokens":1000,"preservedSegment":{{"headUuid":"{x}","anchorUuid":"{anchor}","tailUuid":"{tail}"}}}}"#,
                json_id(tip)
            );
            let text = String::from_utf8(line(&b, None, "system", &extra))
                .unwrap()
                .replace("informational", "compact_boundary");
            (
                vec![text.into_bytes()],
                vec![
                    line(&anchor, Some(&b), "user", r#","isCompactSummary":true"#),
                    line(&x, Some(&anchor), "user", ""),
                    line(&tail, Some(&x), "assistant", ""),
                ],
            )
        }
    }
}

/// Child role: rebuild the index of the transcript in a loop until killed.
#[test]
fn child_role() {
    if std::env::var(ROLE).is_err() {
        return;
    }
    let path = std::path::PathBuf::from(std::env::var("CHAINLOG_PROPS_PATH").unwrap());
    let store = Store::new(std::env::var("CHAINLOG_PROPS_INDEX").unwrap());
    println!("started");
    loop {
        let _ = store.rebuild(&path);
    }
}

/// A child process rebuilding the index in a loop; killed (SIGKILL, which also ends a stopped
/// process) when dropped.
struct Writer(std::process::Child);

impl Writer {
    fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([sig, &self.0.id().to_string()])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill {sig} failed");
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a child rebuilding the index and lets it work for `ms` ms.
fn start_a_writer(path: &Path, index: &Path, ms: u64) -> Writer {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &crate::util::test_name(module_path!(), "child_role"),
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, "catchup")
        .env("CHAINLOG_PROPS_PATH", path)
        .env("CHAINLOG_PROPS_INDEX", index)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the child runs the library, then let it work for `ms`. The guard kills the
    // child if the wait fails.
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let writer = Writer(child);
    // A child that ran no test (a wrong name) would leave every kill and stop a no-op: wait for
    // its role's first line (after the harness's `test … ` on the same line).
    let started = std::io::BufRead::lines(&mut out)
        .map_while(Result::ok)
        .any(|l| l.trim_end().ends_with("started"));
    assert!(started, "the child did not run child_role");
    std::thread::sleep(Duration::from_millis(ms));
    writer
}

/// Starts a child rebuilding the index, and kills it with SIGKILL after `ms` ms.
fn kill_a_writer(path: &Path, index: &Path, ms: u64) {
    drop(start_a_writer(path, index, ms));
}

/// The longest any operation may take while another process is stopped (#8: 5 s).
const STOPPED_BOUND: Duration = Duration::from_secs(5);

/// Runs `chainlog args`; how long it took, its exit code and its stdout lines. A command
/// still running after twice [`STOPPED_BOUND`] is killed and reported as taking that long.
fn timed_cli(args: &[&std::ffi::OsStr]) -> (Duration, Option<i32>, Vec<String>) {
    let start = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_chainlog"))
        .args(args)
        // The stopped child holds the lock on purpose: give up on it sooner than users do.
        .env("CHAINLOG_LOCK_WAIT_MS", "300")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut s);
        s
    });
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let out = reader.join().unwrap();
            return (
                start.elapsed(),
                status.code(),
                out.lines().map(str::to_owned).collect(),
            );
        }
        if start.elapsed() > STOPPED_BOUND * 2 {
            let _ = child.kill();
            let _ = child.wait();
            return (start.elapsed(), None, Vec::new());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Stops (SIGSTOP) a child rebuilding the index after `ms` ms, wherever it is (inside a write
/// transaction, a commit, a compaction, or between them). Meanwhile `chainlog resume` of both
/// views and `chainlog index` (real processes: a wait they abandon ends with them) each answer
/// within [`STOPPED_BOUND`], and the resumes answer what a full scan answers. Then the child is
/// killed.
fn stop_a_writer(path: &Path, index: &Path, ms: u64, step: usize) -> Result<(), TestCaseError> {
    let writer = start_a_writer(path, index, ms);
    writer.signal("-STOP");
    let t = Transcript::open(path).unwrap();
    let (p, idx) = (path.as_os_str(), index.as_os_str());
    let os = |s: &'static str| std::ffi::OsStr::new(s);
    for view in [View::Resume, View::Full] {
        let opts = ResolveOptions {
            view,
            ..ResolveOptions::default()
        };
        let want: Vec<String> = resolve(&t, opts)
            .unwrap()
            .chain
            .iter()
            .map(|l| t.names.name(l.uuid).clone())
            .collect();
        let mut args = vec![
            os("resume"),
            p,
            os("--format"),
            os("uuids"),
            os("--index-dir"),
            idx,
        ];
        if view == View::Full {
            args.push(os("--full"));
        }
        let (took, code, got) = timed_cli(&args);
        prop_assert!(
            took < STOPPED_BOUND,
            "resume took {:?} at step {}",
            took,
            step
        );
        // Exit 1: no message to resume.
        prop_assert!(
            code == Some(0) || (code == Some(1) && want.is_empty()),
            "exit {:?}",
            code
        );
        prop_assert_eq!(&got, &want, "step {} {:?}", step, view);
    }
    // Done, or refused as busy: either way, not stuck.
    let (took, _, _) = timed_cli(&[os("index"), p, os("--index-dir"), idx]);
    prop_assert!(
        took < STOPPED_BOUND,
        "index took {:?} at step {}",
        took,
        step
    );
    writer.signal("-CONT");
    drop(writer);
    Ok(())
}

/// Appends `lines` (injected, not from the source) to the file.
fn append_injected(path: &Path, written: &mut Vec<(Vec<u8>, bool)>, lines: Vec<Vec<u8>>) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    for l in lines {
        f.write_all(&l).unwrap();
        written.push((l, false));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn index_equals_full_scan_under_any_history(seed in 0u64..1000, ops in prop::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("projects/-p/44444444-4444-4444-8444-444444444444.jsonl");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let index = dir.path().join("index");
        let mut store = Store::open(dir.path(), &index).unwrap();
        let mut src = lines_of(seed);
        // Complete lines on disk, and whether each came from `src` (else injected).
        let mut written: Vec<(Vec<u8>, bool)> = Vec::new();
        let mut torn: Option<Vec<u8>> = None;       // a half line at the end
        let mut held: Vec<Vec<u8>> = Vec::new();    // lines a forward reference waits for
        let mut next = 0usize;
        let mut generation = 0u64;
        let mut counter = 0u64;
        let write_all = |written: &[(Vec<u8>, bool)]| {
            let tmp = path.with_extension("tmp");
            let mut f = std::fs::File::create(&tmp).unwrap();
            for (l, _) in written { f.write_all(l).unwrap(); }
            std::fs::rename(&tmp, &path).unwrap();
        };
        // Completes a torn line, so whole lines can follow.
        let complete_torn = |torn: &mut Option<Vec<u8>>, written: &mut Vec<(Vec<u8>, bool)>, src: &[Vec<u8>], next: usize| {
            if let Some(t) = torn.take() {
                let line = &src[next - 1];
                let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
                f.write_all(&line[t.len()..]).unwrap();
                written.push((line.clone(), true));
            }
        };
        std::fs::File::create(&path).unwrap();
        for (step, op) in ops.into_iter().enumerate() {
            match op {
                Op::Append(n) => {
                    complete_torn(&mut torn, &mut written, &src, next);
                    append_injected(&path, &mut written, std::mem::take(&mut held));
                    let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
                    for _ in 0..n {
                        if next >= src.len() { break; }
                        f.write_all(&src[next]).unwrap();
                        written.push((src[next].clone(), true));
                        next += 1;
                    }
                }
                Op::AppendTorn => {
                    if torn.is_none() && next < src.len() {
                        let line = &src[next];
                        let half = line[..line.len() / 2].to_vec();
                        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(&half).unwrap();
                        torn = Some(half);
                        next += 1;
                    }
                }
                Op::Truncate(n) => {
                    if torn.take().is_some() { next -= 1; }
                    for _ in 0..n.min(written.len()) {
                        if written.pop().is_some_and(|(_, from_src)| from_src) { next -= 1; }
                    }
                    let len: usize = written.iter().map(|(l, _)| l.len()).sum();
                    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(len as u64).unwrap();
                }
                Op::Rewrite => {
                    generation += 1;
                    src = lines_of(seed + 1000 * generation);
                    let keep = written.len().min(src.len()) / 2;
                    written = src[..keep].iter().map(|l| (l.clone(), true)).collect();
                    next = keep;
                    torn = None;
                    held.clear();
                    write_all(&written);
                }
                Op::CorruptIndex => damage(&index, false),
                Op::DeleteIndex => damage(&index, true),
                Op::DamageSearch(n) => damage_search(&store, dir.path(), &index, n, step)?,
                Op::Reopen(ms) => {
                    drop(store);
                    kill_a_writer(&path, &index, ms);
                    store = Store::open(dir.path(), &index).unwrap();
                }
                Op::Stopped(ms) => {
                    drop(store);
                    stop_a_writer(&path, &index, ms, step)?;
                    store = Store::open(dir.path(), &index).unwrap();
                }
                Op::Rebuild => { store.rebuild(&path).unwrap(); }
                Op::NonTurnRun(n, batch) => {
                    complete_torn(&mut torn, &mut written, &src, next);
                    let lines: Vec<Vec<u8>> = written.iter().map(|(l, _)| l.clone()).collect();
                    let mut parent = tip(&lines);
                    let mut left = n;
                    while left > 0 {
                        let mut run = Vec::new();
                        for _ in 0..batch.min(left) {
                            let id = fresh(&mut counter);
                            run.push(line(&id, parent.as_deref(), "system", ""));
                            parent = Some(id);
                        }
                        left -= run.len();
                        append_injected(&path, &mut written, run);
                        store.catch_up(&path).unwrap();
                    }
                }
                Op::Forward(kind) => {
                    complete_torn(&mut torn, &mut written, &src, next);
                    let lines: Vec<Vec<u8>> = written.iter().map(|(l, _)| l.clone()).collect();
                    let (now, later) = forward_lines(kind, tip(&lines).as_deref(), &mut counter);
                    append_injected(&path, &mut written, now);
                    store.catch_up(&path).unwrap();
                    held.extend(later);
                }
                Op::Query => check(&store, &path, step)?,
            }
        }
        check(&store, &path, usize::MAX)?;
    }
}
