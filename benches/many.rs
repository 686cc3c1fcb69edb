//! Many small sessions (issue 34): one project of `CHAINLOG_BENCH_SESSIONS` (20,000 by
//! default) generated two-turn sessions, as `claude -p` runs leave them, measured as the
//! `chainlog` command runs, each against its baseline in the same run:
//!
//! - `many/index`: `chainlog index` of the project into a new index folder, against
//!   `baseline/index_one`: the same bytes as one transcript (`cat` of every session), indexed
//!   the same way. Goal: at most 5×.
//! - `many/verify`: `chainlog verify` of the project (warm index), against `many/index`. Goal:
//!   at most 2×.
//! - `many/ls_warm`: `chainlog ls --all --json` (every listing row current), against
//!   `baseline/find`: `find -printf` of the same files (path, size, mtime). Goal: at most 3×.
//!
//! At the end the medians and their ratios are printed. The files are in the page cache for
//! every case alike; their modification times are an hour old (settled).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chainlog_gen::{GenOptions, generate, write_session};
use criterion::{Criterion, criterion_group, criterion_main};

fn count() -> usize {
    std::env::var("CHAINLOG_BENCH_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}

/// Writes `n` small sessions into one project of the claude dir `claude` and the same bytes
/// as one transcript into the claude dir `one`; returns the bytes written.
fn trees(claude: &Path, one: &Path, n: usize) -> u64 {
    let hour_ago = std::time::SystemTime::now() - Duration::from_hours(1);
    let settle = |p: &Path| {
        std::fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(hour_ago)
            .unwrap();
    };
    let whole = one.join("projects/-bench-one/00000000-0000-4000-8000-000000000000.jsonl");
    std::fs::create_dir_all(whole.parent().unwrap()).unwrap();
    let mut all = std::io::BufWriter::new(std::fs::File::create(&whole).unwrap());
    let mut bytes = 0;
    for i in 0..n {
        // The generator's smallest session: a prompt, a tool call and its result, a reply.
        let mut s = generate(&GenOptions::plain(i as u64, 300));
        s.cwd = "/bench/many".into();
        let p = write_session(&claude.join("projects"), &s).unwrap();
        settle(&p);
        all.write_all(&s.main).unwrap();
        bytes += s.main.len() as u64;
    }
    all.flush().unwrap();
    drop(all);
    settle(&whole);
    bytes
}

/// Runs `chainlog` with `args`; panics unless it succeeds.
fn chainlog(args: &[&str]) {
    let st = Command::new(env!("CARGO_BIN_EXE_chainlog"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "chainlog {args:?}: {st}");
}

fn find(projects: &Path) {
    let st = Command::new("find")
        .arg(projects)
        .args(["-name", "*.jsonl", "-printf", "%p %s %T@\\n"])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
}

thread_local! {
    /// Seconds per call of each case, for the ratios printed at the end.
    static TIMES: RefCell<BTreeMap<String, Vec<f64>>> = RefCell::default();
}

fn median(name: &str) -> f64 {
    TIMES.with(|t| {
        let mut v = t.borrow().get(name).cloned().unwrap_or_default();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    })
}

/// Times `iters` calls of `f` (each after its untimed preparation `prep`), noting each call.
fn timed(name: &str, iters: u64, mut prep: impl FnMut(), mut f: impl FnMut()) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        prep();
        let start = Instant::now();
        f();
        let took = start.elapsed();
        TIMES.with(|t| {
            t.borrow_mut()
                .entry(name.to_owned())
                .or_default()
                .push(took.as_secs_f64());
        });
        total += took;
    }
    total
}

fn benches(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let n = count();
    let (claude, one) = (tmp.path().join("many"), tmp.path().join("one"));
    let bytes = trees(&claude, &one, n);
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let (claude_s, one_s) = (s(&claude), s(&one));
    let fresh = tmp.path().join("fresh");
    let warm = s(&tmp.path().join("warm"));
    let fresh_s = s(&fresh);
    let clear = || {
        let _ = std::fs::remove_dir_all(&fresh);
    };
    chainlog(&["index", "--claude-dir", &claude_s, "--index-dir", &warm]);
    chainlog(&["verify", "--claude-dir", &claude_s, "--index-dir", &warm]);

    let mut g = c.benchmark_group("many");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(30));
    g.bench_function(format!("index/{n}"), |b| {
        b.iter_custom(|iters| {
            timed("index", iters, clear, || {
                chainlog(&["index", "--claude-dir", &claude_s, "--index-dir", &fresh_s]);
            })
        });
    });
    g.bench_function(format!("verify/{n}"), |b| {
        b.iter_custom(|iters| {
            timed(
                "verify",
                iters,
                || {},
                || chainlog(&["verify", "--claude-dir", &claude_s, "--index-dir", &warm]),
            )
        });
    });
    g.bench_function(format!("ls_warm/{n}"), |b| {
        b.iter_custom(|iters| {
            timed(
                "ls_warm",
                iters,
                || {},
                || {
                    chainlog(&[
                        "ls",
                        "--all",
                        "--json",
                        "--claude-dir",
                        &claude_s,
                        "--index-dir",
                        &warm,
                    ]);
                },
            )
        });
    });
    g.finish();

    let mut g = c.benchmark_group("baseline");
    g.sample_size(10);
    g.bench_function(format!("index_one/{n}"), |b| {
        b.iter_custom(|iters| {
            timed("index_one", iters, clear, || {
                chainlog(&["index", "--claude-dir", &one_s, "--index-dir", &fresh_s]);
            })
        });
    });
    let projects: PathBuf = claude.join("projects");
    g.bench_function(format!("find/{n}"), |b| {
        b.iter_custom(|iters| timed("find", iters, || {}, || find(&projects)));
    });
    g.finish();

    let ms = |name: &str| median(name) * 1e3;
    let (index, one, verify, ls, find) = (
        ms("index"),
        ms("index_one"),
        ms("verify"),
        ms("ls_warm"),
        ms("find"),
    );
    println!(
        "\n{n} sessions, {} MiB (medians of this run, ms):",
        bytes >> 20
    );
    println!(
        "  index          {index:9.1}   {:5.2}x indexing the same bytes as one transcript (goal 5)",
        index / one
    );
    println!(
        "  verify         {verify:9.1}   {:5.2}x index (goal 2)",
        verify / index
    );
    println!(
        "  ls --all warm  {ls:9.1}   {:5.2}x find -printf (goal 3)",
        ls / find
    );
    println!("  one transcript {one:9.1}");
    println!("  find -printf   {find:9.1}");
}

criterion_group!(many, benches);
criterion_main!(many);
