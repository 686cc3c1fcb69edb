//! Listing benchmark (SPEC B4): `ls` over 10,000 sessions in one project.
//!
//! - `ls/warm`: every file indexed and unchanged (a `stat` and a cache lookup each).
//! - `ls/touched_1pct`: 1% of the files appended to since the last listing.
//! - `ls/full_scan`: the baseline, every transcript scanned (what a picker without an index does).
//!
//! `CHAINLOG_BENCH_SESSIONS` overrides the session count.

use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};

use chainlog::ListOptions;
use chainlog::Store;
use chainlog::discovery::list_sessions;
use chainlog::discovery::scan_session_facts;
use chainlog::sidecar::FactsCache;
use chainlog_gen::{GenOptions, generate, write_session};
use criterion::{Criterion, criterion_group, criterion_main};

fn count() -> usize {
    std::env::var("CHAINLOG_BENCH_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

fn tree(dir: &Path, n: usize) -> Vec<PathBuf> {
    let projects = dir.join("projects");
    (0..n)
        .map(|i| {
            let mut s = generate(&GenOptions::plain(i as u64, 3_000));
            s.cwd = "/bench/project".into();
            write_session(&projects, &s).unwrap()
        })
        .collect()
}

fn list(claude: &Path, store: &Store) -> usize {
    let opts = ListOptions {
        all: true,
        ..ListOptions::default()
    };
    let mut cache = FactsCache::new(store);
    let n = list_sessions(claude, &opts, &mut |p| cache.facts(p))
        .unwrap()
        .len();
    cache.flush().unwrap();
    n
}

fn benches(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let n = count();
    let files = tree(tmp.path(), n);
    let store = Store::new(tmp.path().join("index"));
    assert_eq!(list(tmp.path(), &store), n, "every session listed");

    let mut g = c.benchmark_group("ls");
    g.sample_size(10);
    g.bench_function(format!("warm/{n}"), |b| {
        b.iter(|| black_box(list(tmp.path(), &store)));
    });
    let mut round = 0u64;
    g.bench_function(format!("touched_1pct/{n}"), |b| {
        b.iter(|| {
            round += 1;
            for f in files.iter().step_by(100) {
                let mut h = std::fs::OpenOptions::new().append(true).open(f).unwrap();
                writeln!(h, r#"{{"type":"tag","tag":"t{round}","sessionId":"x"}}"#).unwrap();
            }
            black_box(list(tmp.path(), &store))
        });
    });
    g.bench_function(format!("full_scan/{n}"), |b| {
        let opts = ListOptions {
            all: true,
            ..ListOptions::default()
        };
        b.iter(|| {
            black_box(
                list_sessions(tmp.path(), &opts, &mut scan_session_facts)
                    .unwrap()
                    .len(),
            )
        });
    });
    g.finish();
}

criterion_group!(listing, benches);
criterion_main!(listing);
