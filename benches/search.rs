//! Full-text search benchmark (issue 13): build cost, index size and query latency of
//! `chainlog search` over ≥ 1 GiB of transcripts, against `rg -l` (else `grep -rlF`) over the
//! same files, measured in the same run. Not criterion: each step is long and measured once
//! (queries: median of several runs).
//!
//! `cargo bench --bench search` (`CHAINLOG_BENCH_SEARCH_BYTES` sets the total, default 1 GiB).

#![allow(
    clippy::cast_precision_loss,
    reason = "figures printed for people; sizes are far below 2^52"
)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use chainlog::search::SearchOptions;
use chainlog::{Store, WriterOptions};
use chainlog_gen::{GenOptions, generate, write_session};

/// One session's size.
const SESSION_BYTES: u64 = 16 << 20;

fn total_bytes() -> u64 {
    std::env::var("CHAINLOG_BENCH_SEARCH_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1 << 30)
}

fn dir_size(p: &Path) -> u64 {
    std::fs::read_dir(p).map_or(0, |rd| {
        rd.flatten()
            .map(|e| {
                let m = e.metadata().unwrap();
                if m.is_dir() {
                    dir_size(&e.path())
                } else {
                    m.len()
                }
            })
            .sum()
    })
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// `rg -l -F WORD DIR` if ripgrep is installed, else `grep -rlF`: (tool, time, files found).
fn baseline(word: &str, dir: &Path) -> (&'static str, Duration, usize) {
    let rg = Command::new("rg").arg("--version").output().is_ok();
    let mut times = Vec::new();
    let mut found = 0;
    for _ in 0..5 {
        let start = Instant::now();
        let out = if rg {
            Command::new("rg")
                .args(["-l", "-F", word])
                .arg(dir)
                .output()
        } else {
            Command::new("grep").args(["-rlF", word]).arg(dir).output()
        }
        .unwrap();
        times.push(start.elapsed());
        found = String::from_utf8_lossy(&out.stdout).lines().count();
    }
    (if rg { "rg -l" } else { "grep -rlF" }, median(times), found)
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    // `CHAINLOG_BENCH_KEEP=DIR` writes the tree there and keeps it (for profiling by hand).
    let root = std::env::var_os("CHAINLOG_BENCH_KEEP")
        .map_or_else(|| tmp.path().to_path_buf(), std::path::PathBuf::from);
    let claude = root.join("claude");
    let projects = claude.join("projects");
    let sessions = total_bytes().div_ceil(SESSION_BYTES);
    let mut written = 0u64;
    let mut paths = Vec::new();
    for i in 0..sessions {
        let mut s = generate(&GenOptions::plain(i, SESSION_BYTES));
        s.cwd = "/bench/search".into();
        written += s.main.len() as u64;
        paths.push(write_session(&projects, &s).unwrap());
    }
    // A rare command, in 3 sessions: what `search rsync` must find.
    let store = Store::open(&claude, root.join("index")).unwrap();
    for p in paths.iter().take(3) {
        let sid = p.file_stem().unwrap().to_str().unwrap();
        let mut w = store
            .writer(
                p.parent().unwrap(),
                sid,
                WriterOptions::new("/bench/search"),
            )
            .unwrap();
        w.append(
            serde_json::json!({"type": "user", "message": {"role": "user",
            "content": "please rsync -av build/ staging:/srv/app"}}),
        )
        .unwrap();
        w.close().unwrap();
    }
    let opts = SearchOptions {
        project: None,
        all: true,
        limit: 20,
        ..SearchOptions::default()
    };
    // The baseline of the build: the redb index of the same files, from zero, in another
    // folder (what `chainlog index` builds before its listing rows and views). Each build is
    // made three times, one after the other, each from zero in a folder of its own (the last
    // search index is the one queried); the medians are compared.
    let (mut redb_builds, mut builds) = (Vec::new(), Vec::new());
    let mut built = None;
    for round in 0..3 {
        let redb = Store::open(&claude, root.join(format!("redb-only-{round}"))).unwrap();
        let start = Instant::now();
        for r in redb.catch_up_all(&paths, |_, _| {}) {
            r.unwrap();
        }
        redb_builds.push(start.elapsed());
        let _ = std::fs::remove_dir_all(root.join("index/search"));
        let start = Instant::now();
        built = Some(store.search_catch_up(&opts).unwrap());
        builds.push(start.elapsed());
    }
    let built = built.expect("three rounds");
    let (redb_build, build) = (median(redb_builds), median(builds));
    let index_bytes = dir_size(&root.join("index/search"));
    let mut q = Vec::new();
    let mut hits = Vec::new();
    for _ in 0..9 {
        let start = Instant::now();
        hits = store.search("rsync", &opts).unwrap().hits;
        q.push(start.elapsed());
    }
    let query = median(q);
    let found: std::collections::HashSet<_> = hits.iter().map(|h| h.path.clone()).collect();
    let (tool, base, base_found) = baseline("rsync", &projects);
    assert_eq!(found.len(), 3, "search rsync finds the 3 sessions");
    assert_eq!(base_found, 3, "{tool} finds the same 3 files");
    let gib = written as f64 / f64::from(1 << 30);
    println!(
        "search over {gib:.2} GiB in {} sessions ({} indexed)",
        sessions, built.files
    );
    println!(
        "build: {:.2} s ({:.0} MB/s), {:.2}x the redb index's build of the same files ({:.2} s); index: {:.1} MiB ({:.1}% of the transcripts)",
        build.as_secs_f64(),
        written as f64 / 1e6 / build.as_secs_f64(),
        build.as_secs_f64() / redb_build.as_secs_f64(),
        redb_build.as_secs_f64(),
        index_bytes as f64 / f64::from(1 << 20),
        index_bytes as f64 * 100.0 / written as f64
    );
    println!(
        "query `rsync` (warm, median of 9): {:.1} ms; {tool} over the same files (median of 5): {:.1} ms; rg/chainlog {:.2}×",
        query.as_secs_f64() * 1e3,
        base.as_secs_f64() * 1e3,
        base.as_secs_f64() / query.as_secs_f64()
    );
}
