//! The writer in real processes: killed with SIGKILL while appending (nothing `flush()`
//! acknowledged is lost), and two writers plus an unlocked "Claude Code" appender on one
//! session at once (no interleaved lines, every parent present).
//!
//! The test binary re-executes itself as the child (`CHAINLOG_WRITER_CHILD`).

#![allow(
    clippy::many_single_char_names,
    reason = "writers `a`/`b`, their readers and the file"
)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use chainlog::Source;
use chainlog::Store;
use chainlog::WriterOptions;
use chainlog::reference::ResolveOptions;
use chainlog::reference::Transcript;
use serde_json::json;

const ROLE: &str = "CHAINLOG_WRITER_CHILD";
const SID: &str = "c0ffee00-0000-4000-8000-000000000001";

/// Child: append batches of messages, flush, acknowledge each written uuid on stdout; forever.
#[test]
fn child_role() {
    let Ok(tag) = std::env::var(ROLE) else {
        return;
    };
    let project = PathBuf::from(std::env::var("CHAINLOG_CHILD_PROJECT").unwrap());
    let index = PathBuf::from(std::env::var("CHAINLOG_CHILD_INDEX").unwrap());
    let store = Store::new(index);
    let mut w = store
        .writer(&project, SID, WriterOptions::new("/w"))
        .unwrap();
    let mut out = std::io::stdout();
    for n in 0u64.. {
        for k in 0..=(n % 4) {
            let text = format!("{tag} {n}.{k} {}", "x".repeat((n % 9) as usize * 200));
            let entry = if k % 2 == 0 {
                json!({"type": "user", "message": {"role": "user", "content": text}})
            } else {
                json!({"type": "assistant", "message": {"id": format!("m{n}"), "role": "assistant",
                    "content": [{"type": "text", "text": text}]}})
            };
            w.append(entry).unwrap();
        }
        let report = w.flush().unwrap();
        for (_, uuid) in report.written {
            writeln!(out, "acked {uuid}").unwrap();
        }
        out.flush().unwrap();
    }
}

fn spawn(project: &Path, index: &Path, tag: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_role", "--nocapture", "--test-threads=1"])
        .env(ROLE, tag)
        .env("CHAINLOG_CHILD_PROJECT", project)
        .env("CHAINLOG_CHILD_INDEX", index)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Reads acknowledgements until `n` arrived; returns them.
fn acks(child: &mut Child, n: usize) -> (Vec<String>, BufReader<std::process::ChildStdout>) {
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut got = Vec::new();
    let mut line = String::new();
    while got.len() < n {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0, "the child died");
        if let Some(u) = line.trim().strip_prefix("acked ") {
            got.push(u.to_owned());
        }
    }
    (got, reader)
}

fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("projects/-w");
    std::fs::create_dir_all(&project).unwrap();
    let index = tmp.path().join("index");
    (tmp, project, index)
}

/// Every complete line parses, except fragments that a `kill -9` cut short in the middle of a
/// writer's `write` (the kernel stops a write between pages on a fatal signal) and the next
/// writer fenced off with a newline, as designed: each of those is a truncated object (the
/// parser meets the end of the line), never a line glued onto another, and there are at most
/// `kills` of them. At most the last line is torn.
fn check_lines(path: &Path, kills: usize) -> Transcript {
    let t = Transcript::open(path).unwrap();
    assert!(t.bad_lines.len() <= kills, "{:?}", t.bad_lines);
    for b in &t.bad_lines {
        assert!(
            format!("{:?}", b.problem).contains("EOF while parsing"),
            "not a fragment cut short: {b:?}"
        );
    }
    t
}

#[test]
fn kill_9_loses_nothing_flush_acknowledged() {
    let (_tmp, project, index) = setup();
    let path = project.join(format!("{SID}.jsonl"));
    let mut total = Vec::new();
    for round in 0..4 {
        let mut child = spawn(&project, &index, &format!("round{round}"));
        let (acked, reader) = acks(&mut child, 40 + round * 17);
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        drop(reader);
        total.extend(acked);
        let t = check_lines(&path, round);
        for u in &total {
            assert!(
                t.row(chainlog::Id::from_text(u)).is_some(),
                "acknowledged {u} lost"
            );
        }
        // The index the killed writer kept current answers, and equals the scan.
        let store = Store::new(&index);
        let idx = store.resolve(&path, ResolveOptions::default()).unwrap();
        assert_eq!(idx.source, Source::Index);
        let scan = Store::reference(&path, ResolveOptions::default(), "oracle".into()).unwrap();
        assert_eq!(idx.resolution, scan.resolution);
    }
    // The next writer continued the chain each time: one conversation, no break.
    let store = Store::new(&index);
    let ans = store.resolve(&path, ResolveOptions::default()).unwrap();
    assert!(ans.resolution.chain_break.is_none());
    assert!(ans.resolution.chain.len() >= total.len());
}

#[test]
fn two_writers_and_an_unlocked_appender_never_interleave() {
    let (_tmp, project, index) = setup();
    let path = project.join(format!("{SID}.jsonl"));
    // Start the session so the foreign appender has a file.
    let store = Store::new(&index);
    let mut w = store
        .writer(&project, SID, WriterOptions::new("/w"))
        .unwrap();
    w.append(json!({"type": "user", "message": {"role": "user", "content": "start"}}))
        .unwrap();
    w.close().unwrap();
    let mut a = spawn(&project, &index, "A");
    let mut b = spawn(&project, &index, "B");
    // "Claude Code": appends whole lines with one write each, no lock, while the writers run.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let foreign = {
        let (path, stop) = (path.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap();
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let line = format!(
                    "{{\"parentUuid\":null,\"isSidechain\":false,\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"cc {n} {}\"}},\"uuid\":\"{}\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"sessionId\":\"{SID}\"}}\n",
                    "y".repeat(n % 13 * 100),
                    uuid::Uuid::new_v4()
                );
                f.write_all(line.as_bytes()).unwrap();
                n += 1;
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            n
        })
    };
    let (got_a, ra) = acks(&mut a, 150);
    let (got_b, rb) = acks(&mut b, 150);
    // The appender stops first: a line it wrote after a kill would be glued onto the killed
    // writer's fragment (it takes no lock and fences nothing, like Claude Code).
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(foreign.join().unwrap() > 10, "the appender ran alongside");
    for c in [&mut a, &mut b] {
        c.kill().unwrap();
        c.wait().unwrap();
    }
    drop((ra, rb));
    let t = check_lines(&path, 2);
    for u in got_a.iter().chain(&got_b) {
        let row = t.row(chainlog::Id::from_text(u)).expect("acknowledged");
        let parent = row.head.parent.expect("written messages have a parent");
        assert!(t.row(parent).is_some(), "the parent of {u} is in the file");
    }
}
