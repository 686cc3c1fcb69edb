//! Catching up many changed sessions of one project (what `chainlog index` does after a day of
//! work), in one run:
//! - `all/*`: [`Store::catch_up_all`]: one read-only open finds the changed sessions, one
//!   read-write open catches them up and closes once;
//! - `one_by_one/*`: [`Store::catch_up`] per session (an open and a close each), the baseline.
//!
//! Each iteration first appends one message to every session (not timed); the time per session
//! is printed at the end, with the ratio.

use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chainlog::Store;
use chainlog_gen::{GenOptions, generate_to};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

/// Sessions in the project.
const SESSIONS: usize = 100;

/// `SESSIONS` generated sessions of about 64 KiB in one project, indexed.
fn project(dir: &Path) -> (Vec<PathBuf>, Store) {
    let mut paths = Vec::new();
    for n in 0..SESSIONS {
        let path = dir.join(format!("projects/-many/s{n:03}.jsonl"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut opts = GenOptions::everything(500 + n as u64, 64 << 10);
        opts.corruption = chainlog_gen::Corruption::default();
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        generate_to(&opts, &mut f).unwrap();
        f.flush().unwrap();
        paths.push(path);
    }
    let store = Store::new(dir.join("index"));
    for r in store.catch_up_all(&paths, |_, _| {}) {
        r.unwrap();
    }
    (paths, store)
}

/// Appends message `n` (a new root: the catch-up's cost does not depend on where it hangs).
fn append(paths: &[PathBuf], n: u64) {
    for path in paths {
        let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
        writeln!(
            f,
            r#"{{"parentUuid":null,"isSidechain":false,"type":"user","message":{{"role":"user","content":"more {n}"}},"uuid":"00000000-0000-4000-8000-{n:012x}","sessionId":"bench","timestamp":"2031-01-01T00:00:00.000Z"}}"#
        )
        .unwrap();
    }
}

fn benches(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let (paths, store) = project(tmp.path());
    let mut n = 0u64;
    let mut per = [Duration::ZERO; 2];
    let mut runs = [0u64; 2];
    let mut g = c.benchmark_group("catch_up_many");
    g.sample_size(10);
    let label = format!("{SESSIONS}sessions");
    for (k, name) in ["all", "one_by_one"].into_iter().enumerate() {
        g.bench_function(BenchmarkId::new(name, &label), |b| {
            b.iter_custom(|iters| {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    n += 1;
                    append(&paths, n);
                    let began = Instant::now();
                    if k == 0 {
                        for r in store.catch_up_all(&paths, |_, _| {}) {
                            assert!(r.unwrap().bytes > 0);
                        }
                    } else {
                        for p in &paths {
                            assert!(store.catch_up(p).unwrap().bytes > 0);
                        }
                    }
                    spent += began.elapsed();
                }
                per[k] += spent;
                runs[k] += iters;
                black_box(spent)
            });
        });
    }
    g.finish();
    let each = |k: usize| per[k] / u32::try_from(runs[k].max(1) * SESSIONS as u64).unwrap_or(1);
    eprintln!(
        "catch_up_many/{label}: {:.2?} per session with catch_up_all vs {:.2?} one by one ({:.2}x), one appended message each",
        each(0),
        each(1),
        each(1).as_secs_f64() / each(0).as_secs_f64()
    );
}

criterion_group!(catch_up_many, benches);
criterion_main!(catch_up_many);
