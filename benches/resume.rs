//! Resume at growing view lengths (SPEC B4, issue #11): the materialised view against its
//! baselines, in one run.
//!
//! For each file size (10 MiB; `CHAINLOG_BENCH_GIB=1` adds 1 GiB) and each view length (a
//! generated session whose own view is short — compactions every 2 MiB — then 0, 1,000 or
//! 10,000 messages chained after its leaf), the session is indexed and resumed once (the
//! resume that walks stores the view), then measured:
//! - `lib/*`: [`Store::pending`] from the warm index, every line of the view read and
//!   projected (what `chainlog resume --format jsonl` does, without the process);
//! - `no_index/*`: the same answer from a full scan of the transcript (`--no-index`);
//! - `after_append/*` (printed): `lib/*` right after a one-message append (the stored view
//!   extended in memory by the new line, nothing written) against `lib/*` with the file
//!   unchanged since its catch-up, in interleaved pairs on the same growing view, and their
//!   ratio;
//! - `cmd/*`: `chainlog resume --format jsonl FILE > /dev/null`, a process per call;
//! - `node/*`: `node benches/node-loader.mjs FILE` (a Claude-Code-style whole-file loader), when
//!   `node` is installed.
//!
//! Printed once per case: the view's length, and the peak RSS of `chainlog resume` and of
//! `chainlog resume --no-index` (`/usr/bin/time -f %M`). Every case first checks that the
//! index's answer came from the materialised view and equals the full scan's. The bench runs
//! with the command's allocator (mimalloc), as `chainlog` does.

use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chainlog::{ResumeOptions, Store};
use chainlog_gen::{GenOptions, generate_to};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const MIB: u64 = 1 << 20;

/// Past the racy window of a fine modification time: a stat then proves the file unchanged.
const RACY: Duration = Duration::from_millis(110);

/// Interleaved pairs of the after-append measurement.
const PAIRS: usize = 31;

fn median(v: &mut [Duration]) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn sizes() -> Vec<u64> {
    let mut s = vec![10 * MIB];
    if std::env::var_os("CHAINLOG_BENCH_GIB").is_some() {
        s.push(1024 * MIB);
    }
    s
}

/// A generated session of about `bytes` (compactions every 2 MiB, so its own resume view is
/// short), then `tail` messages of ~1 KiB chained after its leaf: the view is about `tail`
/// messages longer.
fn transcript(dir: &Path, bytes: u64, tail: u64) -> PathBuf {
    let path = dir.join(format!("projects/-bench/s{}-{tail}.jsonl", bytes / MIB));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut opts = GenOptions::everything(11, bytes.saturating_sub(tail * 1100).max(MIB));
    opts.corruption = chainlog_gen::Corruption::default();
    opts.compact_every_bytes = Some(2 * MIB);
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    generate_to(&opts, &mut f).unwrap();
    f.flush().unwrap();
    drop(f);
    let t = chainlog::reference::Transcript::open(&path).unwrap();
    let res =
        chainlog::reference::resolve(&t, chainlog::reference::ResolveOptions::default()).unwrap();
    let mut parent = t.names.name(res.leaf.unwrap().0);
    let mut f = std::io::BufWriter::new(
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap(),
    );
    for n in 0..tail {
        parent = write_turn(&mut f, &parent, n);
    }
    f.flush().unwrap();
    path
}

/// Writes message `n` (~1 KiB; even: a user prompt, odd: an assistant reply; `n` seconds
/// after 2031-01-01, below 2.6 million) after `parent`; returns its uuid.
fn write_turn(f: &mut impl Write, parent: &str, n: u64) -> String {
    let text = "x".repeat(900);
    let uuid = format!("00000000-0000-4000-8000-{n:012x}");
    let (ty, content) = if n.is_multiple_of(2) {
        ("user", format!(r#""{text}""#))
    } else {
        (
            "assistant",
            format!(r#"[{{"type":"text","text":"{text}"}}]"#),
        )
    };
    writeln!(
        f,
        r#"{{"parentUuid":"{parent}","isSidechain":false,"userType":"external","cwd":"/bench","sessionId":"bench","version":"2.1.88","type":"{ty}","message":{{"role":"{ty}","content":{content}}},"uuid":"{uuid}","timestamp":"2031-01-{:02}T{:02}:{:02}:{:02}.000Z"}}"#,
        1 + n / 86_400,
        n / 3600 % 24,
        n / 60 % 60,
        n % 60
    )
    .unwrap();
    uuid
}

/// Appends message `n` after `parent` to `path`; returns its uuid.
fn append_turn(path: &Path, parent: &str, n: u64) -> String {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    write_turn(&mut f, parent, n)
}

/// Reads the resume view of `path` line by line; returns the bytes handed over.
fn resume(store: &Store, path: &Path, no_index: bool) -> u64 {
    let opts = ResumeOptions {
        no_index,
        ..ResumeOptions::default()
    };
    let p = store.pending(path, &opts).unwrap();
    let mut bytes = 0;
    for e in p.lines().unwrap() {
        bytes += e.unwrap().json.len() as u64;
    }
    bytes
}

fn chainlog(idx: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_chainlog"));
    c.arg("--index-dir").arg(idx);
    c
}

/// Peak RSS (KiB) of `cmd`, if `/usr/bin/time` is there.
fn peak_rss(cmd: &Command) -> String {
    let mut t = Command::new("/usr/bin/time");
    t.args(["-f", "%M"])
        .arg(cmd.get_program())
        .args(cmd.get_args());
    match t.stdout(Stdio::null()).output() {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stderr)
            .lines()
            .last()
            .unwrap_or("?")
            .to_owned(),
        _ => "?".into(),
    }
}

fn node_available() -> bool {
    Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn run(cmd: &mut Command) {
    let st = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
}

/// Prints the medians of [`PAIRS`] interleaved pairs on the same growing view of `path` (leaf
/// `leaf`): a resume right after a one-message append (the stored view extended in memory by
/// the new line, nothing written), and one when the file is unchanged since its catch-up
/// (which extended the stored view; the racy window past, checked once), and their ratio.
fn after_append(store: &Store, path: &Path, mut leaf: String, label: &str) {
    // Past the tails' numbers: new uuids, newer timestamps.
    let mut next = 20_000;
    let mut append_one = |path: &Path| {
        leaf = append_turn(path, &leaf, next);
        next += 1;
    };
    append_one(path);
    let after = store.pending(path, &ResumeOptions::default()).unwrap();
    assert!(
        after.answer().materialised() && after.answer().tail_lines == 1,
        "the resume after an append did not read the view and the new line in memory"
    );
    store.catch_up(path).unwrap();
    let (mut after, mut unchanged) = (Vec::new(), Vec::new());
    for _ in 0..PAIRS {
        append_one(path);
        let began = Instant::now();
        black_box(resume(store, path, false));
        after.push(began.elapsed());
        store.catch_up(path).unwrap();
        std::thread::sleep(RACY);
        resume(store, path, false);
        let began = Instant::now();
        black_box(resume(store, path, false));
        unchanged.push(began.elapsed());
    }
    let (after, unchanged) = (median(&mut after), median(&mut unchanged));
    eprintln!(
        "resume_view/after_append/{label}: {after:.2?} right after a one-message append vs {unchanged:.2?} unchanged (medians of {PAIRS} interleaved pairs): {:.2}x",
        after.as_secs_f64() / unchanged.as_secs_f64()
    );
}

fn benches(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let node = node_available();
    let loader = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/node-loader.mjs");
    let mut g = c.benchmark_group("resume_view");
    g.sample_size(10);
    for size in sizes() {
        for tail in [0, 1_000, 10_000] {
            let path = transcript(tmp.path(), size, tail);
            let idx = tmp.path().join(format!("index-{}-{tail}", size / MIB));
            let store = Store::new(&idx);
            // The first resume walks and stores the view; the next ones read it.
            store
                .conversation(&path, &ResumeOptions::default())
                .unwrap();
            let p = store.pending(&path, &ResumeOptions::default()).unwrap();
            assert!(
                p.answer().materialised(),
                "the warm resume was walked, not read from the materialised view"
            );
            let reference = store
                .pending(
                    &path,
                    &ResumeOptions {
                        no_index: true,
                        ..ResumeOptions::default()
                    },
                )
                .unwrap();
            assert_eq!(
                p.answer().resolution,
                reference.answer().resolution,
                "index and full scan disagree on {}",
                path.display()
            );
            let len = p.chain().len();
            let label = format!("{}MiB/{len}msgs", size / MIB);
            let mut cmd = chainlog(&idx);
            cmd.args(["resume", "--format", "jsonl"]).arg(&path);
            let mut cold_cmd = chainlog(&idx);
            cold_cmd
                .args(["resume", "--no-index", "--format", "jsonl"])
                .arg(&path);
            eprintln!(
                "resume_view/{label}: view of {len} messages, {} bytes; peak RSS chainlog resume {} KiB, --no-index {} KiB",
                resume(&store, &path, false),
                peak_rss(&cmd),
                peak_rss(&cold_cmd)
            );
            g.bench_with_input(BenchmarkId::new("lib", &label), &path, |b, path| {
                b.iter(|| black_box(resume(&store, path, false)));
            });
            g.bench_with_input(BenchmarkId::new("no_index", &label), &path, |b, path| {
                b.iter(|| black_box(resume(&store, path, true)));
            });
            let leaf = p
                .answer()
                .resolution
                .leaf
                .map(|(id, _)| p.answer().names.name(id))
                .unwrap();
            after_append(&store, &path, leaf, &label);
            g.bench_function(BenchmarkId::new("cmd", &label), |b| {
                b.iter(|| run(&mut cmd));
            });
            if node {
                g.bench_with_input(BenchmarkId::new("node", &label), &path, |b, path| {
                    b.iter(|| run(Command::new("node").arg(&loader).arg(path)));
                });
            }
        }
    }
    g.finish();
    if !node {
        eprintln!("resume_view/node: node is not installed, not measured");
    }
}

criterion_group!(resume_views, benches);
criterion_main!(resume_views);
