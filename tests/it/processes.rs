//! Real processes: a writer killed with SIGKILL mid-append or mid-commit, and several
//! processes writing, indexing and resuming one project at once.
//!
//! The test binary re-executes itself as the child (`CHAINLOG_CHILD_ROLE`), so the children
//! run the library exactly as a user's process would.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chainlog::Store;
use chainlog::reference::ResolveOptions;
use chainlog::reference::Transcript;
use chainlog::reference::resolve;
use chainlog::sidecar::verify;

const ROLE: &str = "CHAINLOG_CHILD_ROLE";

fn line(n: u64, parent: Option<u64>) -> String {
    let id = |n: u64| format!("00000000-0000-4000-8000-{n:012x}");
    let parent = parent.map_or("null".to_owned(), |p| format!("\"{}\"", id(p)));
    let (ty, content) = if n.is_multiple_of(2) {
        ("user", format!("\"prompt {n}\""))
    } else {
        (
            "assistant",
            format!(
                "[{{\"type\":\"text\",\"text\":\"reply {n} {}\"}}]",
                "x".repeat((n % 7) as usize * 300)
            ),
        )
    };
    format!(
        r#"{{"parentUuid":{parent},"isSidechain":false,"userType":"external","cwd":"/p","sessionId":"s","version":"2.1.88","type":"{ty}","message":{{"role":"{ty}","content":{content}}},"uuid":"{}","timestamp":"2026-01-01T00:00:{:02}.{:03}Z"}}"#,
        id(n),
        (n / 1000) % 60,
        n % 1000
    )
}

/// Child: append lines (each flushed, then acknowledged on stdout), catching the index up
/// every few lines, until killed.
fn writer(path: &Path, index: &Path, start: u64) {
    let store = Store::new(index);
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    let mut out = std::io::stdout();
    for n in start.. {
        let text = line(n, n.checked_sub(1).filter(|_| n > 0));
        // Write in two syscalls so a kill can leave a torn line.
        let (a, b) = text.as_bytes().split_at(text.len() / 2);
        f.write_all(a).unwrap();
        f.write_all(b).unwrap();
        f.write_all(b"\n").unwrap();
        f.sync_data().unwrap();
        writeln!(out, "acked {n}").unwrap();
        out.flush().unwrap();
        if n % 3 == 0 {
            store.catch_up(path).unwrap();
        }
    }
}

#[test]
fn child_role() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let path = PathBuf::from(std::env::var("CHAINLOG_CHILD_PATH").unwrap());
    let index = PathBuf::from(std::env::var("CHAINLOG_CHILD_INDEX").unwrap());
    let start: u64 = std::env::var("CHAINLOG_CHILD_START")
        .unwrap()
        .parse()
        .unwrap();
    match role.as_str() {
        "writer" => writer(&path, &index, start),
        other => panic!("unknown role {other}"),
    }
}

fn spawn_writer(path: &Path, index: &Path, start: u64) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &crate::util::test_name(module_path!(), "child_role"),
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, "writer")
        .env("CHAINLOG_CHILD_PATH", path)
        .env("CHAINLOG_CHILD_INDEX", index)
        .env("CHAINLOG_CHILD_START", start.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Reads "acked N" lines until `want` acks were seen or the deadline passes.
fn read_acks(child: &mut std::process::Child, want: u64) -> Vec<u64> {
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(n) = l.strip_prefix("acked ")
                && tx.send(n.parse::<u64>().unwrap()).is_err()
            {
                return;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_mins(1);
    let mut acks = Vec::new();
    while (acks.len() as u64) < want && Instant::now() < deadline {
        if let Ok(n) = rx.recv_timeout(Duration::from_millis(100)) {
            acks.push(n);
        }
    }
    acks
}

fn assert_index_matches(store: &Store, path: &Path) {
    let t = Transcript::open(path).unwrap();
    let want = resolve(&t, ResolveOptions::default()).unwrap();
    let got = store
        .resolve_indexed(path, ResolveOptions::default())
        .unwrap()
        .unwrap();
    assert_eq!(got.resolution, want);
    assert!(verify(store, path).unwrap().is_empty());
}

#[test]
fn kill_9_of_a_writer_loses_no_acknowledged_entry_and_the_index_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir
        .path()
        .join("projects/-p/11111111-1111-4111-8111-111111111111.jsonl");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let index = dir.path().join("index");
    let store = Store::new(&index);
    let mut next = 0u64;
    let mut acked_total: Vec<u64> = Vec::new();
    for round in 0..6u64 {
        let mut child = spawn_writer(&path, &index, next);
        // Kill at a different point each round: after 5..30 acknowledged lines.
        let acks = read_acks(&mut child, 5 + round * 5);
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        assert!(
            !acks.is_empty(),
            "round {round}: the writer acknowledged nothing"
        );
        acked_total.extend(&acks);
        // Every acknowledged entry is in the file.
        let t = Transcript::open(&path).unwrap();
        for n in &acks {
            let id = chainlog::Id::from_text(&format!("00000000-0000-4000-8000-{n:012x}"));
            assert!(
                t.row(id).is_some(),
                "round {round}: acknowledged entry {n} lost"
            );
        }
        // The index either catches up from where it was or rebuilds; same answers.
        assert_index_matches(&store, &path);
        // A torn last line (killed mid-write) is finished by the next writer: complete it
        // the way a restarted Claude Code would not — leave it, the next line follows on its
        // own line only after a newline. We terminate it so the file stays line-aligned.
        let bytes = std::fs::read(&path).unwrap();
        if bytes.last().is_some_and(|b| *b != b'\n') {
            std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap()
                .write_all(b"\n")
                .unwrap();
        }
        next = acks.iter().max().map_or(next, |m| m + 1);
    }
    assert!(acked_total.len() >= 30);
    assert_index_matches(&store, &path);
}

#[test]
fn writers_indexers_and_readers_in_separate_processes_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("claude/projects/-p");
    std::fs::create_dir_all(&project).unwrap();
    let index = dir.path().join("index");
    let a = project.join("22222222-2222-4222-8222-222222222222.jsonl");
    let b = project.join("33333333-3333-4333-8333-333333333333.jsonl");
    let mut writers = vec![spawn_writer(&a, &index, 0), spawn_writer(&b, &index, 0)];
    // An argument is a path only once the file exists: wait for the writers to create them.
    let created = Instant::now() + Duration::from_secs(30);
    while !(a.is_file() && b.is_file()) {
        assert!(Instant::now() < created, "the writers did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    let bin = env!("CARGO_BIN_EXE_chainlog");
    let deadline = Instant::now() + Duration::from_secs(8);
    let mut runs = 0;
    while Instant::now() < deadline {
        let mut readers = Vec::new();
        for args in [
            vec!["resume", a.to_str().unwrap(), "--format", "uuids"],
            vec!["resume", b.to_str().unwrap(), "--format", "uuids"],
            vec!["index", project.to_str().unwrap()],
        ] {
            readers.push(
                Command::new(bin)
                    .arg("--index-dir")
                    .arg(&index)
                    .args(&args)
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap(),
            );
        }
        for r in readers {
            let out = r.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "a concurrent chainlog failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            runs += 1;
        }
    }
    for w in &mut writers {
        w.kill().unwrap();
        w.wait().unwrap();
    }
    assert!(runs >= 6, "only {runs} concurrent runs finished");
    let store = Store::new(&index);
    for p in [&a, &b] {
        let bytes = std::fs::read(p).unwrap();
        if bytes.last().is_some_and(|b| *b != b'\n') {
            std::fs::OpenOptions::new()
                .append(true)
                .open(p)
                .unwrap()
                .write_all(b"\n")
                .unwrap();
        }
        assert_index_matches(&store, p);
    }
}
