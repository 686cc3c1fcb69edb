//! Sync (SPEC C1, issue #32), against a plain upload of the same bytes to the same remote in the
//! same run:
//! - **first sync** of a claude dir (`CHAINLOG_BENCH_SYNC_MIB`, default 256; 1024 for the 1 GiB
//!   figure) into an empty remote, against uploading every file as one object;
//! - **incremental sync** after one message is appended to one session, against uploading that
//!   message alone as one object; the bytes sent are printed beside the message's size; once
//!   looking at every file (a sync from cron or a shell), once with the file named as
//!   `sync --watch` names it.
//!
//! The remote is `CHAINLOG_BENCH_REMOTE` (an `s3://bucket/prefix`, with the AWS variables set,
//! e.g. a Garage node as `tests/it/sync_garage.rs` starts one), else a `file://` folder in a
//! scratch directory. The index is built before the clock starts (a user's machine has one).
//! Each figure is the median of three runs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chainlog::{ListOptions, Store, SyncOptions, WriterOptions};
use chainlog_gen::{Corruption, GenOptions, SidechainLayout, generate, write_session};
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use serde_json::json;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A claude dir of about `mib` MiB: sessions of 4 MiB with sub-agents.
fn claude_dir(root: &Path, mib: u64) -> Vec<PathBuf> {
    let projects = root.join("projects");
    let mut made = Vec::new();
    let mut total = 0;
    let mut seed = 0;
    while total < mib << 20 {
        let mut g = GenOptions::everything(seed, 4 << 20);
        g.corruption = Corruption::default();
        g.sidechains = SidechainLayout::Subagents;
        let s = generate(&g);
        total += s.main.len() as u64 + s.agents.iter().map(|a| a.jsonl.len() as u64).sum::<u64>();
        made.push(write_session(&projects, &s).unwrap());
        seed += 1;
    }
    made
}

/// Appends one typical prompt to the session at `path`: its length before, and the bytes added.
fn append_one(store: &Store, path: &Path) -> (u64, u64) {
    let before = std::fs::metadata(path).unwrap().len();
    let mut w = store
        .writer(
            path.parent().unwrap(),
            path.file_stem().unwrap().to_str().unwrap(),
            WriterOptions::new("/bench"),
        )
        .unwrap();
    w.append(json!({"type": "user", "message": {"role": "user",
        "content": "one more question about the code, a typical prompt of a few words"}}))
        .unwrap();
    w.close().unwrap();
    (before, std::fs::metadata(path).unwrap().len() - before)
}

fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_below(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The baseline: every file uploaded as one object, the way a plain copy would.
struct Plain {
    store: Arc<dyn ObjectStore>,
    prefix: String,
    rt: tokio::runtime::Runtime,
}

impl Plain {
    fn new(remote: &str, prefix: &str) -> Plain {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (store, base): (Arc<dyn ObjectStore>, String) =
            if let Some(path) = remote.strip_prefix("file://") {
                std::fs::create_dir_all(path).unwrap();
                let fs = object_store::local::LocalFileSystem::new_with_prefix(path).unwrap();
                (Arc::new(fs), String::new())
            } else {
                let rest = remote.strip_prefix("s3://").expect("s3:// or file://");
                let (bucket, p) = rest.split_once('/').unwrap_or((rest, ""));
                let endpoint = std::env::var("AWS_ENDPOINT_URL").ok();
                let mut b = object_store::aws::AmazonS3Builder::from_env().with_bucket_name(bucket);
                if let Some(e) = endpoint {
                    b = b.with_allow_http(e.starts_with("http://")).with_endpoint(e);
                }
                (Arc::new(b.build().unwrap()), p.to_owned())
            };
        Plain {
            store,
            prefix: format!("{base}/{prefix}"),
            rt,
        }
    }

    fn put(&self, name: &str, bytes: Vec<u8>) {
        let key = Key::from(format!("{}/{name}", self.prefix));
        self.rt
            .block_on(self.store.put(&key, PutPayload::from(bytes)))
            .unwrap();
    }
}

fn main() {
    let mib: u64 = std::env::var("CHAINLOG_BENCH_SYNC_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let tmp = tempfile::tempdir().unwrap();
    let remote_base = std::env::var("CHAINLOG_BENCH_REMOTE")
        .unwrap_or_else(|_| format!("file://{}", tmp.path().join("remote").display()));
    let claude = tmp.path().join("claude");
    let sessions = claude_dir(&claude, mib);
    let files = files_below(&claude.join("projects"));
    let bytes: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().len())
        .sum();
    eprintln!(
        "sync bench: {} files, {} MiB, remote {remote_base}",
        files.len(),
        bytes >> 20
    );

    let (mut first, mut plain, mut incr, mut one) = (vec![], vec![], vec![], vec![]);
    let mut watched = vec![];
    let mut watched_sent = 0;
    let mut sent = 0;
    let mut message = 0;
    for run in 0..3 {
        // A fresh remote and sync state per run; the index already built.
        let remote = format!("{remote_base}/run{run}");
        let index = tmp.path().join(format!("index{run}"));
        let store = Store::open(&claude, &index).unwrap();
        store.sessions(&ListOptions::all()).unwrap();
        // Each run's incremental sync left one more message: the bytes as they are now.
        let now: u64 = files
            .iter()
            .map(|f| std::fs::metadata(f).unwrap().len())
            .sum();
        let start = Instant::now();
        let r = store.sync(&remote, &SyncOptions::all()).unwrap();
        first.push(start.elapsed());
        assert_eq!(r.pushed_bytes, now, "{:?}", r.skipped);

        let base = Plain::new(&remote_base, &format!("plain{run}"));
        let start = Instant::now();
        for f in &files {
            let name = f.strip_prefix(&claude).unwrap().to_str().unwrap();
            base.put(name, std::fs::read(f).unwrap());
        }
        plain.push(start.elapsed());

        // One message appended to one session, then synced.
        let path = &sessions[run % sessions.len()];
        let (before, grown) = append_one(&store, path);
        let start = Instant::now();
        let r = store.sync(&remote, &SyncOptions::all()).unwrap();
        incr.push(start.elapsed());
        assert_eq!(r.pushed_bytes, grown);
        sent = r.uploaded_bytes;
        message = grown;
        let bytes_of_message = std::fs::read(path).unwrap()[before as usize..].to_vec();
        let start = Instant::now();
        base.put("one-message", bytes_of_message);
        one.push(start.elapsed());

        // The same, the file named by a watcher (`sync --watch`): the push looks at it alone.
        let (_, grown) = append_one(&store, path);
        let opts = SyncOptions {
            changed: Some(vec![path.clone()]),
            ..SyncOptions::all()
        };
        let start = Instant::now();
        let r = store.sync(&remote, &opts).unwrap();
        watched.push(start.elapsed());
        assert_eq!((r.pushed_bytes, r.checked_files), (grown, 1));
        watched_sent = r.uploaded_bytes;
    }
    let (first, plain, incr, one) = (median(first), median(plain), median(incr), median(one));
    let watched = median(watched);
    println!(
        "first sync of {} MiB: {:.2} s, plain upload {:.2} s, ratio {:.2}",
        bytes >> 20,
        first.as_secs_f64(),
        plain.as_secs_f64(),
        first.as_secs_f64() / plain.as_secs_f64()
    );
    println!(
        "incremental sync of one message ({message} bytes): {:.1} ms, {sent} bytes uploaded; one plain upload of it {:.1} ms",
        incr.as_secs_f64() * 1e3,
        one.as_secs_f64() * 1e3
    );
    println!(
        "the same with the file named by a watcher (sync --watch): {:.1} ms, {watched_sent} bytes uploaded ({} files in the claude dir)",
        watched.as_secs_f64() * 1e3,
        files.len()
    );
}
