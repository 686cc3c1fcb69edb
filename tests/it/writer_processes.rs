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
        .args([
            "--exact",
            &crate::util::test_name(module_path!(), "child_role"),
            "--nocapture",
            "--test-threads=1",
        ])
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

/// One session of `tmp`'s claude dir holding one user message; returns its path.
fn one_message_session(claude: &Path, sid: &str, first: &str) -> PathBuf {
    let project = claude.join("projects/-w");
    std::fs::create_dir_all(&project).unwrap();
    let path = project.join(format!("{sid}.jsonl"));
    let line = json!({"parentUuid": null, "isSidechain": false, "type": "user",
        "message": {"role": "user", "content": "start"}, "uuid": first,
        "timestamp": "2026-01-01T00:00:00.000Z", "sessionId": sid, "cwd": "/w"});
    std::fs::write(&path, format!("{line}\n")).unwrap();
    path
}

/// A batch of `n` alternating user/assistant messages with known uuids, each `text` bytes.
fn batch_input(round: usize, n: usize, text: usize) -> (String, Vec<String>) {
    let mut input = String::new();
    let mut uuids = Vec::new();
    for k in 0..n {
        let uuid = format!("{round:08x}-0000-4000-8000-{k:012x}");
        let body = format!("r{round} m{k} {}", "z".repeat(text));
        let e = if k % 2 == 0 {
            json!({"type": "user", "uuid": uuid, "message": {"role": "user", "content": body}})
        } else {
            json!({"type": "assistant", "uuid": uuid, "message": {"id": format!("m{round}.{k}"),
                "role": "assistant", "content": [{"type": "text", "text": body}]}})
        };
        input.push_str(&e.to_string());
        input.push('\n');
        uuids.push(uuid);
    }
    (input, uuids)
}

fn cli(claude: &Path, index: &Path, args: &[&str], stdin: &str) -> std::process::Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_chainlog"))
        .args(args)
        .arg("--claude-dir")
        .arg(claude)
        .arg("--index-dir")
        .arg(index)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    c.wait_with_output().unwrap()
}

fn resumed(claude: &Path, index: &Path, sid: &str) -> Vec<String> {
    let out = cli(claude, index, &["resume", sid, "--format", "uuids"], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// `chainlog append` killed with SIGKILL at a random point of a batch (before, while and
/// after it writes the journal and the transcript): `resume` and the next `append` see none of
/// the batch or all of it, never a part, and the next append chains after what they see.
/// Half the rounds kill when the transcript starts growing (mid-write), half at a random time.
#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one round: kill, classify, check the reader and the next writer"
)]
fn a_batch_killed_anywhere_is_seen_whole_or_not_at_all() {
    use rand::{Rng, SeedableRng};
    let tmp = tempfile::tempdir().unwrap();
    let (claude, index) = (tmp.path().join("claude"), tmp.path().join("index"));
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(29);
    let (mut torn, mut whole, mut none) = (0, 0, 0);
    let rounds = 100;
    for round in 0..rounds {
        let sid = format!("{round:08x}-0000-4000-8000-00000000cafe");
        let first = format!("{round:08x}-0000-4000-8000-0000000f1257");
        let path = one_message_session(&claude, &sid, &first);
        // Mostly in-memory batches (one write), every tenth one past 8 MiB (journalled as made).
        let (n, text) = if round % 10 == 9 {
            (3000, 3000)
        } else {
            (1500, 1000)
        };
        let (input, uuids) = batch_input(round, n, text);
        let pre = std::fs::metadata(&path).unwrap().len();
        let mut child = Command::new(env!("CARGO_BIN_EXE_chainlog"))
            .args(["append", &sid, "--claude-dir"])
            .arg(&claude)
            .arg("--index-dir")
            .arg(&index)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        if round % 2 == 0 {
            // Once the transcript starts growing, after 0–300 µs.
            let t0 = std::time::Instant::now();
            while std::fs::metadata(&path).unwrap().len() == pre
                && t0.elapsed() < std::time::Duration::from_secs(20)
                && child.try_wait().unwrap().is_none()
            {
                std::hint::spin_loop();
            }
            std::thread::sleep(std::time::Duration::from_micros(rng.random_range(0..300)));
        } else {
            std::thread::sleep(std::time::Duration::from_micros(
                rng.random_range(0..150_000),
            ));
        }
        let _ = child.kill();
        child.wait().unwrap();
        let post = std::fs::metadata(&path).unwrap().len();
        let batch_len = post - pre;
        // What the kill left, before anything settles it.
        let full = input.len() as u64 + (n as u64) * 250;
        match batch_len {
            0 => none += 1,
            b if b < full / 2 => torn += 1,
            _ => whole += 1,
        }
        // A reader first in odd rounds, the next writer first in even ones.
        let next = format!("{round:08x}-0000-4000-8000-00000000ed17");
        let next_line =
            json!({"type": "user", "uuid": next, "message": {"role": "user", "content": "next"}});
        if round % 4 < 2 {
            let seen = resumed(&claude, &index, &sid);
            let batch_seen = uuids.iter().filter(|u| seen.contains(u)).count();
            assert!(
                batch_seen == 0 || batch_seen == n,
                "round {round}: resume sees {batch_seen} of {n} after a kill that left {batch_len} bytes"
            );
        }
        let out = cli(
            &claude,
            &index,
            &["append", &sid],
            &format!("{next_line}\n"),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let seen = resumed(&claude, &index, &sid);
        let batch_seen = uuids.iter().filter(|u| seen.contains(u)).count();
        assert!(
            batch_seen == 0 || batch_seen == n,
            "round {round}: {batch_seen} of {n} after the next append ({batch_len} bytes left by the kill)"
        );
        // The next message continues what is seen: the batch's last message, or the start.
        let before_next = &seen[seen.len() - 2];
        let want = if batch_seen == n {
            &uuids[n - 1]
        } else {
            &first
        };
        assert_eq!(seen.last(), Some(&next), "round {round}");
        assert_eq!(before_next, want, "round {round}");
        // No journal is left, and no message line of the batch is in the file twice.
        let journal = path.with_file_name(format!(".{sid}.jsonl.chainlog-batch"));
        assert!(!journal.exists(), "round {round}: journal left");
        let text = std::fs::read_to_string(&path).unwrap();
        for u in [&uuids[0], &uuids[n - 1]] {
            let count = text.matches(&format!("\"uuid\":\"{u}\"")).count();
            assert!(count <= 1, "round {round}: {u} written {count} times");
        }
        std::fs::remove_file(&path).unwrap();
    }
    eprintln!(
        "{rounds} kill rounds: {none} before the transcript grew, {torn} torn mid-write, {whole} whole"
    );
    assert!(
        torn > 0,
        "no kill landed in the middle of a write: the test proved nothing"
    );
}

/// A 100 MB `append` holds a bounded amount in memory: its input streams into the batch's
/// journal (was 640 MB, the entries of the whole batch parsed at once).
#[test]
fn a_large_append_streams_its_batch() {
    let tmp = tempfile::tempdir().unwrap();
    let (claude, index) = (tmp.path().join("claude"), tmp.path().join("index"));
    let sid = "00000100-0000-4000-8000-00000000cafe";
    let path = one_message_session(&claude, sid, "00000100-0000-4000-8000-0000000f1257");
    let (input, uuids) = batch_input(100, 50_000, 2000);
    assert!(input.len() > 100_000_000);
    let input_path = tmp.path().join("batch.jsonl");
    std::fs::write(&input_path, &input).unwrap();
    drop(input);
    let out = Command::new("/usr/bin/time")
        .args(["-f", "peak-rss-kib=%M", env!("CARGO_BIN_EXE_chainlog")])
        .args(["append", sid, "--claude-dir"])
        .arg(&claude)
        .arg("--index-dir")
        .arg(&index)
        .stdin(std::fs::File::open(&input_path).unwrap())
        .output()
        .expect("/usr/bin/time (GNU time) measures peak memory");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let kib: u64 = err
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("peak-rss-kib="))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS in: {err}"));
    eprintln!("append of a 100 MB batch: peak RSS {} MiB", kib >> 10);
    let printed = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        printed.lines().count(),
        uuids.len(),
        "every uuid acknowledged"
    );
    assert_eq!(resumed(&claude, &index, sid).len(), uuids.len() + 1);
    assert!(std::fs::metadata(&path).unwrap().len() > 100_000_000);
    assert!(kib < 96 << 10, "peak RSS {kib} KiB");
}
