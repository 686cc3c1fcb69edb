//! Listing benchmark (SPEC B4): `ls --json` over 10,000 sessions in one project, each case
//! against its baselines in the same run.
//!
//! - `ls/warm`: every file has a current listing row (a `stat` each, one range scan).
//! - `ls/touched_1pct`: 1% of the files appended to since the last listing.
//! - `ls/cold`: no sidecar (a fresh index folder each time): every transcript is scanned and
//!   its row written.
//! - `floor/readdir_stat`: `read_dir` and a `stat` of each file, nothing else.
//! - `baseline/window_lister`: a picker that reads the first and last 64 KiB of each file and
//!   pulls a title and the timestamps out crudely (what Claude Code's picker reads), in Rust
//!   with `memmem` and no JSON parse: a stricter baseline than #11's.
//! - `benches/window-lister.py` (run after criterion when `python3` is there): the same
//!   windows with every complete line parsed (`json.loads`), the lister #11 measured cold `ls`
//!   against; it times its own rounds, without the interpreter's start.
//!
//! At the end the medians and their ratios are printed. "Cold" is about the index, not the
//! page cache (the files are cached in memory for every case alike).
//!
//! `CHAINLOG_BENCH_SESSIONS` overrides the session count. The bench runs with the command's
//! allocator (mimalloc), as `chainlog ls` does.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chainlog::ListOptions;
use chainlog::Store;
use chainlog_gen::{GenOptions, generate, write_session};
use criterion::{Criterion, criterion_group, criterion_main};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn count() -> usize {
    std::env::var("CHAINLOG_BENCH_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

fn tree(dir: &Path, n: usize) -> Vec<PathBuf> {
    let projects = dir.join("projects");
    let hour_ago = std::time::SystemTime::now() - Duration::from_hours(1);
    (0..n)
        .map(|i| {
            let mut s = generate(&GenOptions::plain(i as u64, 3_000));
            s.cwd = "/bench/project".into();
            let p = write_session(&projects, &s).unwrap();
            // Settled (the racy-mtime rule re-reads files written just before a listing).
            std::fs::File::options()
                .write(true)
                .open(&p)
                .unwrap()
                .set_modified(hour_ago)
                .unwrap();
            p
        })
        .collect()
}

/// `chainlog ls --all --json` without the process: the listing, serialised.
fn ls(store: &Store) -> usize {
    let opts = ListOptions {
        all: true,
        ..ListOptions::default()
    };
    let mut sessions = store.sessions(&opts).unwrap().sessions;
    let listed = sessions.len();
    // As `ls --json` does: sessions without a message are left out, the rest written.
    sessions.retain(|f| f.message_count > 0);
    let mut out = Vec::with_capacity(sessions.len() * 1024);
    chainlog::SessionFacts::write_listing_json_all(&sessions, &mut out, 1).unwrap();
    black_box(out.len());
    listed
}

/// `read_dir` of every project and a `stat` of each entry.
fn floor(projects: &Path) -> usize {
    let mut n = 0;
    for p in std::fs::read_dir(projects).unwrap().flatten() {
        for e in std::fs::read_dir(p.path()).unwrap().flatten() {
            if std::fs::metadata(e.path()).is_ok() {
                n += 1;
            }
        }
    }
    n
}

const WINDOW: u64 = 64 * 1024;

/// The value of the last (or first) `"key":"…"` in `bytes`, crudely (no unescaping).
fn field<'a>(bytes: &'a [u8], key: &[u8], last: bool) -> Option<&'a [u8]> {
    let finder = |hay: &'a [u8]| {
        if last {
            memchr::memmem::rfind(hay, key)
        } else {
            memchr::memmem::find(hay, key)
        }
    };
    let at = finder(bytes)? + key.len();
    let rest = &bytes[at..];
    let end = memchr::memchr(b'"', rest)?;
    Some(&rest[..end])
}

/// A picker reading the first and last 64 KiB of each session file: a title (custom title,
/// summary, else the first prompt), the first and last timestamps, sorted newest first.
fn window_lister(projects: &Path) -> usize {
    let mut rows: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> = Vec::new();
    let mut head = vec![0; WINDOW as usize];
    let mut tail = vec![0; WINDOW as usize];
    for p in std::fs::read_dir(projects).unwrap().flatten() {
        for e in std::fs::read_dir(p.path()).unwrap().flatten() {
            let path = e.path();
            if path.extension().is_none_or(|x| x != "jsonl") {
                continue;
            }
            let Ok(mut f) = std::fs::File::open(&path) else {
                continue;
            };
            let len = f.metadata().map_or(0, |m| m.len());
            let h = read_up_to(&mut f, &mut head);
            let t = if len > WINDOW {
                f.seek(SeekFrom::Start(len - WINDOW)).unwrap();
                read_up_to(&mut f, &mut tail)
            } else {
                let n = f.read_at(&mut tail[..h], 0).unwrap_or(0);
                n.min(h)
            };
            let (head, tail) = (&head[..h], &tail[..t]);
            let title = field(tail, b"\"customTitle\":\"", true)
                .or_else(|| field(tail, b"\"summary\":\"", true))
                .or_else(|| field(head, b"\"content\":\"", false))
                .unwrap_or(b"(session)");
            let first = field(head, b"\"timestamp\":\"", false).unwrap_or_default();
            let last = field(tail, b"\"timestamp\":\"", true).unwrap_or_default();
            rows.push((last.to_vec(), first.to_vec(), title.to_vec()));
        }
    }
    rows.sort_unstable_by(|a, b| b.0.cmp(&a.0));
    black_box(&rows);
    rows.len()
}

fn read_up_to(f: &mut std::fs::File, buf: &mut [u8]) -> usize {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    n
}

thread_local! {
    /// Seconds per call of each case, for the ratios printed at the end.
    static TIMES: RefCell<BTreeMap<String, Vec<f64>>> = RefCell::default();
}

fn note(name: &str, per_call: Duration) {
    TIMES.with(|t| {
        t.borrow_mut()
            .entry(name.to_owned())
            .or_default()
            .push(per_call.as_secs_f64());
    });
}

fn median(name: &str) -> f64 {
    TIMES.with(|t| {
        let mut v = t.borrow().get(name).cloned().unwrap_or_default();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    })
}

/// Times `iters` calls of `f` (each with its own untimed preparation `prep`).
fn timed<P>(
    name: &str,
    iters: u64,
    mut prep: impl FnMut() -> P,
    mut f: impl FnMut(P) -> usize,
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let p = prep();
        let start = Instant::now();
        black_box(f(p));
        total += start.elapsed();
    }
    note(
        name,
        total / u32::try_from(iters.max(1)).unwrap_or(u32::MAX),
    );
    total
}

fn benches(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let n = count();
    let files = tree(tmp.path(), n);
    let projects = tmp.path().join("projects");
    let store = Store::open(tmp.path(), tmp.path().join("index")).unwrap();
    assert_eq!(ls(&store), n, "every session listed");

    let mut g = c.benchmark_group("ls");
    g.sample_size(10);
    g.bench_function(format!("warm/{n}"), |b| {
        b.iter_custom(|iters| timed("warm", iters, || (), |()| ls(&store)));
    });
    let mut round = 0u64;
    g.bench_function(format!("touched_1pct/{n}"), |b| {
        b.iter_custom(|iters| {
            timed(
                "touched_1pct",
                iters,
                || {
                    round += 1;
                    for f in files.iter().step_by(100) {
                        let mut h = std::fs::OpenOptions::new().append(true).open(f).unwrap();
                        writeln!(h, r#"{{"type":"tag","tag":"t{round}","sessionId":"x"}}"#)
                            .unwrap();
                    }
                },
                |()| ls(&store),
            )
        });
    });
    let mut cold_no = 0u64;
    g.bench_function(format!("cold/{n}"), |b| {
        b.iter_custom(|iters| {
            timed(
                "cold",
                iters,
                || {
                    cold_no += 1;
                    let dir = tmp.path().join(format!("cold-{cold_no}"));
                    let _ =
                        std::fs::remove_dir_all(tmp.path().join(format!("cold-{}", cold_no - 1)));
                    Store::open(tmp.path(), dir).unwrap()
                },
                |s| ls(&s),
            )
        });
    });
    g.finish();

    let mut g = c.benchmark_group("baseline");
    g.sample_size(10);
    g.bench_function(format!("readdir_stat/{n}"), |b| {
        b.iter_custom(|iters| timed("readdir_stat", iters, || (), |()| floor(&projects)));
    });
    g.bench_function(format!("window_lister/{n}"), |b| {
        b.iter_custom(|iters| timed("window_lister", iters, || (), |()| window_lister(&projects)));
    });
    g.finish();

    let python = python_window_lister(&projects, n);
    let ms = |name: &str| median(name) * 1e3;
    let (warm, touched, cold, floor, window) = (
        ms("warm"),
        ms("touched_1pct"),
        ms("cold"),
        ms("readdir_stat"),
        ms("window_lister"),
    );
    println!("\nls over {n} sessions (medians of this run, ms):");
    println!(
        "  warm           {warm:9.1}   {:5.2}x the read_dir+stat floor",
        warm / floor
    );
    println!(
        "  touched 1%     {touched:9.1}   {:5.2}x warm",
        touched / warm
    );
    println!(
        "  cold           {cold:9.1}   {:5.2}x the 64 KiB window lister",
        cold / window
    );
    match python {
        Some(py) => println!(
            "  cold           {cold:9.1}   {:5.2}x the Python window lister ({py:.1} ms)",
            cold / py
        ),
        None => println!("  (no python3: the Python window lister was not run)"),
    }
    println!("  read_dir+stat  {floor:9.1}");
    println!("  window lister  {window:9.1}");
}

/// The median milliseconds of `benches/window-lister.py` over `projects` (5 rounds), or `None`
/// without `python3`. It must find the `n` sessions.
fn python_window_lister(projects: &Path, n: usize) -> Option<f64> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/window-lister.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .arg(projects)
        .arg("5")
        .output()
        .ok()?;
    assert!(out.status.success(), "window-lister.py: {out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut fields = text.split_whitespace();
    let ms: f64 = fields.next()?.parse().ok()?;
    let found: usize = fields.next()?.parse().ok()?;
    assert_eq!(found, n, "the Python lister found every session");
    Some(ms)
}

criterion_group!(listing, benches);
criterion_main!(listing);
