//! Index benchmarks on generated transcripts (SPEC B4).
//!
//! Each group measures the indexed path and its baseline in the same run, so the ratio holds
//! on a noisy machine:
//! - `resume/*`: resume of a bounded view (compactions every ~2 MiB) inside files of growing
//!   size, from the warm index vs a full scan (`--no-index`).
//! - `rebuild/*`: indexing a file from zero vs the reference full scan (the parse floor) and
//!   vs reading its bytes (`cat`: a `cat FILE` process writing into a pipe this bench drains):
//!   `index` is `Store::rebuild` (the sidecar's only transcript: a new file), `first_index` a
//!   catch-up into a new sidecar (what `chainlog index` does for a transcript it has not seen).
//! - `catch_up/*`: appending one message and catching the index up, vs an unchanged call (in
//!   the library and as `chainlog index` processes), and the command's peak RSS per size.
//!
//! - `rebuild/peak_rss/*` (printed): peak RSS of `chainlog rebuild` as a process, per size.
//!
//! - `first_index_vs_scan/*` (printed): `chainlog index` of a transcript no index knows
//!   against `chainlog resume --no-index` of it, both processes (goal: ≤ 1.0×).
//!
//! Sizes: 10 MiB and 100 MiB by default; `CHAINLOG_BENCH_GIB=N` adds 1 GiB up to N GiB;
//! `CHAINLOG_BENCH_MIB=N` measures N MiB alone.
//! Every benchmark first checks that the index answers exactly what the full scan answers.
//! Index size (disk usage, as `du` counts it; the apparent length beside it) / transcript size
//! is printed once per file, and for the real transcripts and a
//! generated tree of varied sessions (`index size/*`). The bench runs with the command's
//! allocator (mimalloc), as `chainlog` does.

use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};

use chainlog::Store;
use chainlog::reference::ResolveOptions;
use chainlog::reference::Transcript;
use chainlog::reference::resolve;
use chainlog::view::read_view;
use chainlog_gen::{GenOptions, generate_to};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const MIB: u64 = 1 << 20;

fn sizes() -> Vec<u64> {
    if let Some(mib) = std::env::var("CHAINLOG_BENCH_MIB")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        return vec![mib * MIB];
    }
    let mut s = vec![10 * MIB, 100 * MIB];
    let gib = std::env::var("CHAINLOG_BENCH_GIB").map_or(0, |v| v.parse().unwrap_or(1));
    s.extend((1..=gib).map(|g| g * 1024 * MIB));
    s
}

/// A generated session of about `bytes`, written once into `dir`.
fn transcript(dir: &Path, bytes: u64) -> PathBuf {
    let path = dir.join(format!("projects/-bench/s{}.jsonl", bytes / MIB));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut opts = GenOptions::everything(7, bytes);
    opts.corruption = chainlog_gen::Corruption::default();
    opts.compact_every_bytes = Some(2 * MIB);
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    generate_to(&opts, &mut f).unwrap();
    f.flush().unwrap();
    path
}

/// The disk space of the sidecars in `dir`, as `du` counts it: redb extends its file by
/// doubling it (sparse) when a write after a compaction needs a page, so the apparent length
/// can be twice what is stored.
fn index_bytes(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::read_dir(dir).map_or(0, |rd| {
        rd.flatten()
            .filter_map(|e| e.metadata().ok())
            .map(|m| m.blocks() * 512)
            .sum()
    })
}

/// The apparent length of the sidecars in `dir` (`ls -l`).
fn index_len(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |rd| {
        rd.flatten()
            .filter_map(|e| e.metadata().ok())
            .map(|m| m.len())
            .sum()
    })
}

/// What the tables of the sidecars in `dir` hold, as redb counts it (stored and B-tree
/// metadata bytes): the index's data, without the free or partly filled pages and redb's own
/// pages that make up the rest of the disk usage (a floor per file).
fn index_data(dir: &Path) -> u64 {
    use redb::{ReadableDatabase, ReadableTableMetadata};
    let mut total = 0;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.path().extension().is_none_or(|x| x != "redb") {
            continue;
        }
        let db = redb::Database::open(e.path()).unwrap();
        let txn = db.begin_read().unwrap();
        for t in txn.list_tables().unwrap() {
            let s = txn.open_untyped_table(t).unwrap().stats().unwrap();
            total += s.stored_bytes() + s.metadata_bytes();
        }
    }
    total
}

fn check_same(store: &Store, path: &Path) {
    let t = Transcript::open(path).unwrap();
    let want = resolve(&t, ResolveOptions::default()).unwrap();
    let got = store
        .resolve_indexed(path, ResolveOptions::default())
        .unwrap()
        .unwrap();
    assert_eq!(
        got.resolution,
        want,
        "index and full scan disagree on {}",
        path.display()
    );
}

/// Every `.jsonl` under `dir`.
fn jsonl_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            jsonl_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
}

/// Indexes every transcript under `tree` into a fresh folder and prints the sidecars' size
/// against the transcripts'.
fn size_of_tree(label: &str, tree: &Path, tmp: &Path) {
    let mut files = Vec::new();
    jsonl_files(tree, &mut files);
    let idx = tmp.join(format!("size-{label}"));
    let store = Store::new(&idx);
    let mut bytes = 0;
    for f in &files {
        store.catch_up(f).unwrap();
        bytes += std::fs::metadata(f).unwrap().len();
    }
    drop(store);
    let index = index_bytes(&idx);
    let data = index_data(&idx);
    #[expect(clippy::cast_precision_loss, reason = "ratios for people")]
    let (ratio, data_ratio) = (
        index as f64 / bytes.max(1) as f64,
        data as f64 / bytes.max(1) as f64,
    );
    eprintln!(
        "index size/{label}: {index} bytes of sidecars on disk ({} apparent) for {bytes} bytes in {} transcripts = {:.1}%; data in their tables {data} bytes = {:.2}%",
        index_len(&idx),
        files.len(),
        ratio * 100.0,
        data_ratio * 100.0
    );
}

/// Index size on the real transcripts (`../shared/transcripts`, or
/// `$CHAINLOG_REAL_TRANSCRIPTS`) and on a generated tree of 24 sessions of 64 KiB to 8 MiB in
/// four projects, every feature on.
fn sizes_report(tmp: &Path) {
    let real = std::env::var_os("CHAINLOG_REAL_TRANSCRIPTS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/transcripts"),
        PathBuf::from,
    );
    if real.is_dir() {
        size_of_tree("real", &real, tmp);
    } else {
        eprintln!(
            "index size/real: {} is missing, not measured",
            real.display()
        );
    }
    let tree = tmp.join("generated-tree");
    for n in 0..24u64 {
        let path = tree.join(format!("projects/-p{}/s{n}.jsonl", n % 4));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let bytes = (64 << 10) << (n % 8);
        let mut opts = GenOptions::everything(100 + n, bytes);
        opts.corruption = chainlog_gen::Corruption::default();
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        generate_to(&opts, &mut f).unwrap();
        f.flush().unwrap();
    }
    size_of_tree("generated-tree", &tree, tmp);
}

fn benches(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    sizes_report(tmp.path());
    let mut files = Vec::new();
    for &size in &sizes() {
        let path = transcript(tmp.path(), size);
        let idx = tmp.path().join(format!("index-{}", size / MIB));
        let store = Store::new(&idx);
        store.catch_up(&path).unwrap();
        check_same(&store, &path);
        let len = std::fs::metadata(&path).unwrap().len();
        #[expect(clippy::cast_precision_loss, reason = "a ratio for people")]
        let ratio = index_bytes(&idx) as f64 / len as f64;
        eprintln!(
            "index size: {} bytes on disk ({} apparent) for a {len}-byte transcript = {:.2}% ({})",
            index_bytes(&idx),
            index_len(&idx),
            ratio * 100.0,
            path.display()
        );
        files.push((size, path, store, idx));
    }

    let mut g = c.benchmark_group("resume");
    g.sample_size(10);
    for (size, path, store, _) in &files {
        let label = format!("{}MiB", size / MIB);
        g.bench_with_input(BenchmarkId::new("index", &label), path, |b, path| {
            b.iter(|| {
                let a = store.resolve(path, ResolveOptions::default()).unwrap();
                let view = read_view(path, &a.resolution.chain, &a.names).unwrap();
                black_box(view.len())
            });
        });
        g.bench_with_input(BenchmarkId::new("full_scan", &label), path, |b, path| {
            b.iter(|| {
                let t = Transcript::open(path).unwrap();
                let r = resolve(&t, ResolveOptions::default()).unwrap();
                let view = read_view(path, &r.chain, &t.names).unwrap();
                black_box(view.len())
            });
        });
    }
    g.finish();

    // A first `chainlog index` against a `resume --no-index`, both as users run them.
    for (size, path, _, _) in &files {
        first_index_vs_scan(*size, path);
    }

    // Peak RSS of a rebuild as users run it (the sidecar's only transcript: a new file).
    for (size, path, _, idx) in &files {
        match timed_cmd(idx, "rebuild", path) {
            Some(t) => eprintln!("rebuild/peak_rss/{}MiB: {t} KiB", size / MIB),
            None => eprintln!("rebuild/peak_rss: /usr/bin/time is not available, not measured"),
        }
    }

    let mut g = c.benchmark_group("rebuild");
    g.sample_size(10);
    for (size, path, store, _) in &files {
        let label = format!("{}MiB", size / MIB);
        g.throughput(Throughput::Bytes(std::fs::metadata(path).unwrap().len()));
        g.bench_with_input(BenchmarkId::new("index", &label), path, |b, path| {
            b.iter(|| black_box(store.rebuild(path).unwrap().bytes));
        });
        g.bench_with_input(BenchmarkId::new("scan_floor", &label), path, |b, path| {
            b.iter(|| black_box(Transcript::open(path).unwrap().rows.len()));
        });
        g.bench_with_input(BenchmarkId::new("cat", &label), path, |b, path| {
            b.iter(|| black_box(cat(path)));
        });
        // `chainlog index` of a transcript no sidecar knows yet: a fresh index folder each time.
        g.bench_with_input(BenchmarkId::new("first_index", &label), path, |b, path| {
            let fresh = tempfile::tempdir().unwrap();
            let mut n = 0u64;
            b.iter_batched(
                || {
                    let _ = std::fs::remove_dir_all(fresh.path().join(n.to_string()));
                    n += 1;
                    Store::new(fresh.path().join(n.to_string()))
                },
                |store| black_box(store.catch_up(path).unwrap().bytes),
                criterion::BatchSize::PerIteration,
            );
        });
    }
    g.finish();

    catch_up(c, &files);
}

/// Runs `cat FILE` and drains its output: the cost of reading the bytes, the floor below the
/// parse. Returns the bytes read.
fn cat(path: &Path) -> u64 {
    use std::io::Read;
    let mut child = std::process::Command::new("cat")
        .arg(path)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("cat");
    let mut out = child.stdout.take().expect("piped");
    let mut buf = vec![0u8; 1 << 17];
    let mut n = 0u64;
    loop {
        match out.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => n += k as u64,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => panic!("cat: {e}"),
        }
    }
    assert!(child.wait().expect("cat").success());
    n
}

/// The sessions benchmarked: size, transcript, its store and the store's index folder.
type Files = [(u64, PathBuf, Store, PathBuf)];

/// `catch_up/*`: one appended message vs an unchanged call, in the library and as processes.
fn catch_up(c: &mut Criterion, files: &Files) {
    let mut g = c.benchmark_group("catch_up");
    g.sample_size(20);
    let mut n = 0u64;
    for (size, path, store, idx) in files {
        let label = format!("{}MiB", size / MIB);
        g.bench_with_input(BenchmarkId::new("unchanged", &label), path, |b, path| {
            b.iter(|| black_box(store.catch_up(path).unwrap().lines));
        });
        g.bench_with_input(BenchmarkId::new("one_message", &label), path, |b, path| {
            b.iter(|| {
                n += 1;
                append_message(path, n);
                black_box(store.catch_up(path).unwrap().lines)
            });
        });
        // The command as users run it: a process per call, the baseline an unchanged call.
        g.bench_with_input(
            BenchmarkId::new("cmd_unchanged", &label),
            path,
            |b, path| {
                b.iter(|| index_cmd(idx, path));
            },
        );
        g.bench_with_input(
            BenchmarkId::new("cmd_one_message", &label),
            path,
            |b, path| {
                b.iter(|| {
                    n += 1;
                    append_message(path, n);
                    index_cmd(idx, path);
                });
            },
        );
        check_same(store, path);
    }
    g.finish();

    // Peak RSS of `chainlog index` catching up one message, per file size: independent of the
    // sidecar's size (the catch-up reads the pages it needs, not the sidecar).
    for (size, path, _, idx) in files {
        n += 1;
        append_message(path, n);
        match timed_cmd(idx, "index", path) {
            Some(t) => eprintln!(
                "catch_up/peak_rss/{}MiB: {t} KiB for one appended message (sidecar {} bytes on disk)",
                size / MIB,
                index_bytes(idx)
            ),
            None => eprintln!("catch_up/peak_rss: /usr/bin/time is not available, not measured"),
        }
    }
}

/// `chainlog --index-dir <idx> <command> <path>` under `/usr/bin/time`: its wall time and peak
/// RSS (`"<s> s <KiB>"`), or `None` when it cannot be measured.
fn timed_cmd(idx: &Path, command: &str, path: &Path) -> Option<String> {
    let o = std::process::Command::new("/usr/bin/time")
        .args(["-f", "%e s %M"])
        .arg(env!("CARGO_BIN_EXE_chainlog"))
        .arg("--index-dir")
        .arg(idx)
        .arg(command)
        .arg(path)
        .output()
        .ok()?;
    let err = String::from_utf8_lossy(&o.stderr);
    o.status
        .success()
        .then(|| err.lines().last().unwrap_or("?").to_owned())
}

/// `first_index_vs_scan/<size>` (printed): `chainlog index` of the transcript into a new index
/// folder against `chainlog resume --no-index --format uuids` of it (the full scan a resume
/// without the index makes), both processes, alternated, medians of 7. Goal (#34): building
/// costs no more than reading once (≤ 1.0×).
fn first_index_vs_scan(size: u64, path: &Path) {
    let fresh = tempfile::tempdir().unwrap();
    let (mut index, mut scan) = (Vec::new(), Vec::new());
    for n in 0..7 {
        let idx = fresh.path().join(n.to_string());
        let start = std::time::Instant::now();
        index_cmd(&idx, path);
        index.push(start.elapsed());
        let _ = std::fs::remove_dir_all(&idx);
        let start = std::time::Instant::now();
        let st = std::process::Command::new(env!("CARGO_BIN_EXE_chainlog"))
            .args(["--index-dir"])
            .arg(&idx)
            .args(["resume", "--no-index", "--format", "uuids"])
            .arg(path)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        scan.push(start.elapsed());
        assert!(st.success());
    }
    index.sort();
    scan.sort();
    let (index, scan) = (index[3], scan[3]);
    eprintln!(
        "first_index_vs_scan/{}MiB: chainlog index {:.1} ms, resume --no-index {:.1} ms: {:.2}x",
        size / MIB,
        index.as_secs_f64() * 1e3,
        scan.as_secs_f64() * 1e3,
        index.as_secs_f64() / scan.as_secs_f64()
    );
}

/// `chainlog --index-dir <idx> index <path>`, as a process.
fn index_cmd(idx: &Path, path: &Path) {
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_chainlog"))
        .arg("--index-dir")
        .arg(idx)
        .arg("index")
        .arg(path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
}

/// Appends one user message continuing from nothing in particular (a new root is fine for
/// the cost being measured).
fn append_message(path: &Path, n: u64) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    writeln!(
        f,
        r#"{{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/bench","sessionId":"bench","version":"2.1.88","type":"user","message":{{"role":"user","content":"appended {n}"}},"uuid":"{}","timestamp":"2030-01-01T00:00:00.000Z"}}"#,
        uuid_of(n)
    )
    .unwrap();
}

fn uuid_of(n: u64) -> String {
    format!("00000000-0000-4000-8000-{n:012x}")
}

criterion_group!(index, benches);
criterion_main!(index);
