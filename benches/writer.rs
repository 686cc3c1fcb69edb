//! The write path (SPEC B4, issue #12): appending 10,000 messages through the writer (shape,
//! dedup lookups in the index, lock, one `write` + `fsync` per flush of 100 messages, index
//! catch-up of the written bytes) vs writing the same bytes with plain `write` + `fsync` calls
//! in the same batches. Both run in the same process; the ratio and the amortised cost per
//! message are printed once before criterion's own measurements.

use std::hint::black_box;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use chainlog::Store;
use chainlog::WriterOptions;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

const MESSAGES: usize = 10_000;
const BATCH: usize = 100;

fn entry(n: usize) -> Value {
    let text = format!("message {n} {}", "lorem ipsum ".repeat(n % 40));
    if n.is_multiple_of(2) {
        json!({"type": "user", "message": {"role": "user", "content": text}})
    } else {
        json!({"type": "assistant", "message": {"id": format!("msg_{n}"), "type": "message",
            "role": "assistant", "model": "claude-x",
            "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": 3, "output_tokens": 12}}})
    }
}

/// Appends the messages through a fresh writer into `dir`; returns the file's bytes.
fn through_writer(dir: &Path) -> Duration {
    let project = dir.join("projects/-bench");
    let store = Store::new(dir.join("index"));
    let start = Instant::now();
    let mut w = store
        .writer(
            &project,
            "be7c4000-0000-4000-8000-000000000001",
            WriterOptions::new("/bench"),
        )
        .unwrap();
    for batch in (0..MESSAGES).collect::<Vec<_>>().chunks(BATCH) {
        for &n in batch {
            w.append(entry(n)).unwrap();
        }
        w.flush().unwrap();
    }
    start.elapsed()
}

/// The same bytes in the same batches, plain `write` + `fsync`.
fn plain(dir: &Path, batches: &[Vec<u8>]) -> Duration {
    std::fs::create_dir_all(dir).unwrap();
    let start = Instant::now();
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("plain.jsonl"))
        .unwrap();
    for b in batches {
        f.write_all(b).unwrap();
        f.sync_data().unwrap();
    }
    start.elapsed()
}

/// The writer's output split into its flush batches.
fn batches_of(file: &Path) -> Vec<Vec<u8>> {
    let bytes = std::fs::read(file).unwrap();
    let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
    assert_eq!(lines.len(), MESSAGES);
    lines.chunks(BATCH).map(<[&[u8]]>::concat).collect()
}

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let first = tmp.path().join("first");
    let t_writer = through_writer(&first);
    let batches =
        batches_of(&first.join("projects/-bench/be7c4000-0000-4000-8000-000000000001.jsonl"));
    let t_plain = plain(&tmp.path().join("plain0"), &batches);
    #[allow(clippy::cast_precision_loss, reason = "a printed ratio")]
    let per_msg_us = t_writer.as_secs_f64() * 1e6 / MESSAGES as f64;
    println!(
        "writer: {MESSAGES} messages in {BATCH}-message flushes: writer {:.1} ms, plain write {:.1} ms, ratio {:.2}, {per_msg_us:.1} µs per message",
        t_writer.as_secs_f64() * 1e3,
        t_plain.as_secs_f64() * 1e3,
        t_writer.as_secs_f64() / t_plain.as_secs_f64()
    );
    let mut g = c.benchmark_group("append_10k");
    g.sample_size(10);
    let mut n = 0;
    g.bench_function("writer", |b| {
        b.iter(|| {
            n += 1;
            black_box(through_writer(&tmp.path().join(format!("w{n}"))))
        });
    });
    g.bench_function("plain_write", |b| {
        b.iter(|| {
            n += 1;
            black_box(plain(&tmp.path().join(format!("p{n}")), &batches))
        });
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
