//! When the index may trust a stat, a marker or a location, and what happens when it may not:
//! in-place edits with a restored mtime (#7 repro 3 and 7), the verified marker read before a
//! read-write open (repro 4: `tests/index_catch_up_reads.rs`), a torn tail that goes away (repro 8), hostile marker files,
//! permissions, unusable index locations and a stopped writer (#8 items 1, 4, 5, 9).

use crate::util;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chainlog::Source;
use chainlog::Store;
use chainlog::reference::ResolveOptions;
use chainlog::reference::Transcript;
use chainlog::reference::resolve;
use chainlog::sidecar::verify;

fn id(n: u64) -> String {
    format!("00000000-0000-4000-8000-{n:012x}")
}

/// One chained message line, about `pad` bytes longer than its minimum.
fn line(n: u64, parent: Option<u64>, pad: usize) -> String {
    let parent = parent.map_or("null".to_owned(), |p| format!("\"{}\"", id(p)));
    let ty = if n.is_multiple_of(2) {
        "user"
    } else {
        "assistant"
    };
    format!(
        r#"{{"parentUuid":{parent},"isSidechain":false,"type":"{ty}","message":{{"role":"{ty}","content":"m{n} {}"}},"uuid":"{}","timestamp":"2026-01-01T00:{:02}:{:02}.000Z","sessionId":"s","cwd":"/p","version":"2.1.88","userType":"external"}}"#,
        "x".repeat(pad),
        id(n),
        (n / 60) % 60,
        n % 60
    )
}

/// A chain of `n` messages of about 1 KiB each, written an hour ago.
fn write_chain(path: &Path, n: u64) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut f = std::fs::File::create(path).unwrap();
    for i in 0..n {
        writeln!(f, "{}", line(i, i.checked_sub(1), 900)).unwrap();
    }
    drop(f);
    util::age(path);
}

fn setup(n: u64) -> (tempfile::TempDir, PathBuf, Store) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir
        .path()
        .join("projects/-p/11111111-1111-4111-8111-111111111111.jsonl");
    write_chain(&path, n);
    let store = Store::new(dir.path().join("cache/chainlog"));
    (dir, path, store)
}

/// The index answered, and it equals a full scan.
fn assert_index_answers(store: &Store, path: &Path) {
    let want = resolve(&Transcript::open(path).unwrap(), ResolveOptions::default()).unwrap();
    let got = store.resolve(path, ResolveOptions::default()).unwrap();
    assert_eq!(got.source, Source::Index, "the index answered");
    assert_eq!(got.resolution, want, "index answer equals the full scan");
    assert!(verify(store, path).unwrap().is_empty());
}

/// Rewrites `parentUuid` of message `n` to a uuid of the same length that names no message
/// (the chain is cut there), keeping the file's length and restoring its modification time.
fn cut_chain_in_place(path: &Path, n: u64, restore_mtime: bool) {
    let before = std::fs::metadata(path).unwrap();
    let text = std::fs::read_to_string(path).unwrap();
    let old = format!(
        r#""parentUuid":"{}","isSidechain":false,"type":"{}""#,
        id(n - 1),
        {
            if n.is_multiple_of(2) {
                "user"
            } else {
                "assistant"
            }
        }
    );
    assert!(text.contains(&old));
    let new = old.replace(&id(n - 1), &id(0xdead_beef));
    let edited = text.replacen(&old, &new, 1);
    assert_eq!(edited.len(), text.len());
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .write_all_at(edited.as_bytes(), 0)
        .unwrap();
    if restore_mtime {
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(before.modified().unwrap())
            .unwrap();
    }
    let after = std::fs::metadata(path).unwrap();
    assert_eq!(after.len(), before.len());
    if restore_mtime {
        assert_eq!(after.modified().unwrap(), before.modified().unwrap());
    }
}

use std::os::unix::fs::FileExt;

#[test]
fn same_size_edit_with_restored_mtime_is_seen() {
    // #7 repro 3: a same-size edit in the middle, then `touch -r`: only ctime tells.
    let (_dir, path, store) = setup(300);
    assert_index_answers(&store, &path);
    cut_chain_in_place(&path, 150, true);
    assert_index_answers(&store, &path);
    let got = store.resolve(&path, ResolveOptions::default()).unwrap();
    // The strict walk stops at the edit (the default view bridges a ≤ 5 s break, SPEC A8).
    assert_eq!(
        got.resolution.strict().chain.len(),
        150,
        "the chain is cut at the edit"
    );
}

#[test]
fn same_length_edit_outside_the_last_chunk_is_seen() {
    // #7 repro 7: an in-place edit far from the end (the file spans several 64 KiB chunks).
    let (_dir, path, store) = setup(400);
    assert!(std::fs::metadata(&path).unwrap().len() > 4 * 64 * 1024);
    assert_index_answers(&store, &path);
    cut_chain_in_place(&path, 20, false);
    let done = store.catch_up(&path).unwrap();
    assert!(done.reindexed.is_some(), "the edit is found: {done:?}");
    assert_index_answers(&store, &path);
}

#[test]
fn an_empty_transcript_is_not_reindexed_at_every_catch_up() {
    // Found by `catching_up_a_tree_at_once_matches_the_scan` when its file was not settled
    // yet: an empty file's tail hash was never set, so every catch-up called it rewritten.
    let dir = tempfile::tempdir().unwrap();
    let path = dir
        .path()
        .join("projects/p/00000000-0000-4000-8000-000000000001.jsonl");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, b"").unwrap();
    let store = Store::new(dir.path().join("index"));
    let first = store.catch_up(&path).unwrap();
    assert_eq!(
        first.reindexed, None,
        "a new file is indexed, not re-indexed"
    );
    for _ in 0..3 {
        let again = store.catch_up(&path).unwrap();
        assert_eq!(again.reindexed, None, "nothing changed: {again:?}");
    }
    // It grows: caught up from where it was, not from the start.
    std::fs::write(&path, line(0, None, 10) + "\n").unwrap();
    let grown = store.catch_up(&path).unwrap();
    assert_eq!((grown.reindexed, grown.lines), (None, 1), "{grown:?}");
    assert_index_answers(&store, &path);
}

#[test]
fn a_torn_tail_that_goes_away_is_forgotten() {
    // #7 repro 8: the unterminated tail is cut off again; the index stops reporting it.
    let (_dir, path, store) = setup(10);
    let len = std::fs::metadata(&path).unwrap().len();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(b"{\"parentUuid\":").unwrap();
    drop(f);
    let got = store.resolve(&path, ResolveOptions::default()).unwrap();
    assert_eq!(got.torn_tail, Some((len, 14)));
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len)
        .unwrap();
    let got = store.resolve(&path, ResolveOptions::default()).unwrap();
    assert_eq!(got.source, Source::Index);
    assert_eq!(got.torn_tail, None, "the tail went away");
}

#[test]
fn verify_of_a_transcript_being_appended_to_finds_no_difference() {
    // #7 repro 8: a writer appends while `verify` runs; both paths are compared at one cursor.
    let (_dir, path, store) = setup(50);
    store.catch_up(&path).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (path, stop) = (path.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 50;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .unwrap();
                writeln!(f, "{}", line(n, Some(n - 1), 50)).unwrap();
                n += 1;
                std::thread::sleep(Duration::from_micros(200));
            }
            n
        })
    };
    let mut runs = 0;
    while runs < 10 {
        let diffs = verify(&store, &path).unwrap();
        assert!(diffs.is_empty(), "run {runs}: {diffs:?}");
        runs += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(writer.join().unwrap() > 50, "the writer appended meanwhile");
}

fn marker(store: &Store, path: &Path) -> PathBuf {
    let db = store.db_path(path);
    let mut name = db.file_name().unwrap().to_os_string();
    name.push(".verified");
    db.with_file_name(name)
}

/// Runs `f` on a thread; panics if it does not finish within `secs` (a hang fails the test
/// instead of hanging the suite).
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .expect("finished in time")
}

#[test]
fn a_fifo_in_place_of_the_marker_does_not_hang() {
    // #8 item 5.
    let (_dir, path, store) = setup(20);
    store.catch_up(&path).unwrap();
    let m = marker(&store, &path);
    std::fs::remove_file(&m).unwrap();
    let st = Command::new("mkfifo").arg(&m).status().unwrap();
    assert!(st.success());
    let (s, p) = (store.clone(), path.clone());
    within(60, move || assert_index_answers(&s, &p));
}

#[test]
fn a_link_to_dev_zero_in_place_of_the_marker_is_not_read() {
    // #8 item 5: reading it would grow memory without end.
    let (_dir, path, store) = setup(20);
    store.catch_up(&path).unwrap();
    let m = marker(&store, &path);
    std::fs::remove_file(&m).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &m).unwrap();
    let (s, p) = (store.clone(), path.clone());
    within(60, move || assert_index_answers(&s, &p));
}

#[test]
fn the_index_is_private_to_its_owner() {
    // #8 item 9: the cache folder 0700, sidecars and markers 0600, whatever the umask.
    let (dir, path, store) = setup(20);
    store.catch_up(&path).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let db = store.db_path(&path);
    assert_eq!(mode(&dir.path().join("cache")), 0o700);
    assert_eq!(mode(db.parent().unwrap()), 0o700);
    assert_eq!(mode(&db), 0o600);
    assert_eq!(mode(&marker(&store, &path)), 0o600);
}

fn cli(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_chainlog"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn resume_args<'a>(path: &'a Path, index: &'a Path) -> Vec<&'a str> {
    vec![
        "resume",
        path.to_str().unwrap(),
        "--format",
        "uuids",
        "--index-dir",
        index.to_str().unwrap(),
    ]
}

#[test]
fn an_unusable_index_location_answers_from_the_transcript() {
    // #8 item 4: the index dir is a file, the sidecar path a directory.
    let (dir, path, _) = setup(20);
    let reference = cli(&[
        "resume",
        path.to_str().unwrap(),
        "--format",
        "uuids",
        "--no-index",
    ]);
    assert!(reference.status.success());
    assert_eq!(
        String::from_utf8_lossy(&reference.stdout).lines().count(),
        20
    );

    let as_file = dir.path().join("index-is-a-file");
    std::fs::write(&as_file, b"x").unwrap();
    let out = cli(&resume_args(&path, &as_file));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, reference.stdout);
    assert!(String::from_utf8_lossy(&out.stderr).contains("answered from the transcript"));

    let index = dir.path().join("index-with-dir");
    let db = Store::new(&index).db_path(&path);
    std::fs::create_dir_all(&db).unwrap();
    let out = cli(&resume_args(&path, &index));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, reference.stdout);
    assert!(String::from_utf8_lossy(&out.stderr).contains("answered from the transcript"));
}

/// A tmpfs of `kib` KiB mounted on a fresh folder, unmounted when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    /// `None` (with the reason printed) only when not running as root; as root a mount that
    /// fails is a failure, never a silent skip.
    fn mount(kib: u64) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={kib}k,mode=0700"),
                "tmpfs",
            ])
            .arg(dir.path())
            .output();
        match out {
            Ok(o) if o.status.success() => Some(SmallDisk { dir }),
            other => {
                let root = Command::new("id")
                    .arg("-u")
                    .output()
                    .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
                assert!(
                    !root,
                    "running as root, yet mounting a tmpfs failed: {other:?}"
                );
                eprintln!(
                    "SKIPPED: a full disk needs a small tmpfs, and mounting one needs root: {other:?}"
                );
                None
            }
        }
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

#[test]
fn a_full_disk_leaves_no_temporary_file_and_resume_answers() {
    // #8 item 11: writes of the index failing with ENOSPC (the sidecar, its pages, the verified
    // marker) leave no `<db>.redb.tmp<PID>` behind, and resume answers from the transcript.
    let (_dir, path, _) = setup(3000);
    let want = reference(&path);
    let mut full = 0;
    // From a disk too small to create the sidecar to one that fills up during the catch-up.
    for kib in [16, 64, 256, 1024, 2048] {
        let Some(disk) = SmallDisk::mount(kib) else {
            return;
        };
        let index = disk.dir.path().join("idx");
        for round in 0..2 {
            let out = cli(&resume_args(&path, &index));
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{kib} KiB, round {round}: {err}");
            let got = stdout_lines(&out);
            assert!(
                got == want,
                "{kib} KiB, round {round}: {} uuids: {err}",
                got.len()
            );
            if err.contains("answered from the transcript") {
                full += 1;
            }
            let left: Vec<String> = std::fs::read_dir(&index)
                .map(|d| {
                    d.flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .filter(|n| n.contains(".tmp"))
                        .collect()
                })
                .unwrap_or_default();
            assert!(
                left.is_empty(),
                "{kib} KiB, round {round}: left behind {left:?}"
            );
        }
    }
    assert!(full > 0, "no size filled the disk: the test tests nothing");
}

/// Whether an OFD write lock is held on byte `offset` of the file with inode `ino`.
fn write_locked(ino: u64, offset: u64) -> bool {
    let locks = std::fs::read_to_string("/proc/locks").unwrap_or_default();
    locks.lines().any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        // "1: OFDLCK ADVISORY WRITE -1 08:01:1234 START END"
        f.len() >= 8
            && f[1] == "OFDLCK"
            && f[3] == "WRITE"
            && f[5].rsplit(':').next() == Some(&ino.to_string())
            && f[6] == offset.to_string()
    })
}

/// Runs the real binary with `args`; how long it took and its output (killed after 30 s).
fn timed(args: &[String]) -> (Duration, std::process::Output) {
    let start = Instant::now();
    let c = Command::new(env!("CARGO_BIN_EXE_chainlog"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = c.id().to_string();
    // Read the pipes while waiting (a full pipe would stall the child).
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(c.wait_with_output().unwrap());
    });
    let out = rx
        .recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| {
            let _ = Command::new("kill").args(["-9", &pid]).status();
            panic!("`chainlog {}` did not answer in 30 s", args.join(" "))
        });
    (start.elapsed(), out)
}

/// The uuids of the chain a full scan resumes.
fn reference(p: &Path) -> Vec<String> {
    let t = Transcript::open(p).unwrap();
    let r = resolve(&t, ResolveOptions::default()).unwrap();
    r.chain
        .iter()
        .map(|l| t.names.name(l.uuid).clone())
        .collect()
}

/// redb 4.6's writer byte in multi-writer mode (held for a whole write transaction).
const WRITER_BYTE: u64 = 1 << 62;

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one scenario: stop a writer, then five commands"
)]
fn a_stopped_writer_blocks_no_other_command_for_long() {
    // #8 item 1: SIGSTOP a `rebuild` while it holds the project's write transaction; other
    // sessions of that project still resume, list, continue and index within 5 s.
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let claude = dir.path().join("claude");
    let project = claude.join("projects/-p");
    let big = project.join("22222222-2222-4222-8222-222222222222.jsonl");
    let other = project.join("33333333-3333-4333-8333-333333333333.jsonl");
    let changed = project.join("44444444-4444-4444-8444-444444444444.jsonl");
    write_chain(&other, 30);
    write_chain(&changed, 30);
    {
        std::fs::create_dir_all(&project).unwrap();
        let mut f = std::io::BufWriter::new(std::fs::File::create(&big).unwrap());
        chainlog_gen::generate_to(&chainlog_gen::GenOptions::plain(7, 30 << 20), &mut f).unwrap();
        f.flush().unwrap();
        drop(f);
        // Older than the others: `continue` picks the newest (the changed session).
        util::age(&big);
    }
    let index = dir.path().join("index");
    let store = Store::new(&index);
    store.catch_up(&other).unwrap();
    store.catch_up(&changed).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&changed)
        .unwrap();
    writeln!(f, "{}", line(30, Some(29), 10)).unwrap();
    drop(f);
    let db = store.db_path(&other);
    let ino = std::fs::metadata(&db).unwrap().ino();

    let mut child = Command::new(env!("CARGO_BIN_EXE_chainlog"))
        .args(["rebuild", big.to_str().unwrap(), "--index-dir"])
        .arg(&index)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let signal = |sig: &str| {
        assert!(
            Command::new("kill")
                .args([sig, &pid])
                .status()
                .unwrap()
                .success()
        );
    };
    // Stop it while it holds the writer byte.
    let deadline = Instant::now() + Duration::from_mins(2);
    loop {
        assert!(
            Instant::now() < deadline,
            "the rebuild never held the write lock"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the rebuild ended too soon"
        );
        signal("-STOP");
        std::thread::sleep(Duration::from_millis(20));
        // Inside its write transaction, not inside a commit or a compaction (which hold redb's
        // header lock, and so every reader's `begin_read`, for their whole length).
        if write_locked(ino, WRITER_BYTE) && !write_locked(ino, 0) {
            break;
        }
        signal("-CONT");
        std::thread::sleep(Duration::from_millis(30));
    }

    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let common = vec![
        "--index-dir".to_owned(),
        s(&index),
        "--claude-dir".to_owned(),
        s(&claude),
    ];
    let with = |mut v: Vec<String>| {
        v.extend(common.clone());
        v
    };
    let mut report = Vec::new();
    for (what, args, expect) in [
        (
            "resume of an unchanged session",
            with(vec![
                "resume".into(),
                s(&other),
                "--format".into(),
                "uuids".into(),
            ]),
            Some(reference(&other)),
        ),
        (
            "resume of a changed session",
            with(vec![
                "resume".into(),
                s(&changed),
                "--format".into(),
                "uuids".into(),
            ]),
            Some(reference(&changed)),
        ),
        (
            "ls",
            with(vec!["ls".into(), "--project".into(), s(&project)]),
            None,
        ),
        (
            "continue --no-index",
            with(vec![
                "continue".into(),
                "--project".into(),
                s(&project),
                "--format".into(),
                "uuids".into(),
                "--no-index".into(),
            ]),
            // The generated session has the newest timestamps.
            Some(reference(&big)),
        ),
        ("index", with(vec!["index".into(), s(&changed)]), None),
        (
            "resume --json of an unchanged session",
            with(vec![
                "--json".into(),
                "resume".into(),
                s(&other),
                "--format".into(),
                "uuids".into(),
            ]),
            None,
        ),
    ] {
        let (took, out) = timed(&args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        report.push(format!("{what}: {took:?}"));
        assert!(
            took < Duration::from_secs(5),
            "{what} took {took:?} with a stopped writer: {stderr}"
        );
        if what == "index" {
            // `index` cannot write while the lock is held: it says so instead of waiting.
            assert!(stderr.contains("busy"), "{what}: {stderr}");
        } else {
            assert!(out.status.success(), "{what}: {:?} {stderr}", out.status);
        }
        if what == "resume --json of an unchanged session" {
            // Its index is current: answered from it, without waiting on the stopped writer
            // (the read-write path would have waited `LOCK_WAIT`, then used the transcript).
            let stdout = String::from_utf8_lossy(&out.stdout);
            let trailer = util::resume_trailer(&out);
            assert_eq!(
                trailer["chainlog"]["source"], "index",
                "{what} did not answer from the index: {trailer} {stderr}"
            );
            let got: Vec<&str> = stdout.lines().collect();
            assert_eq!(got, reference(&other), "{what}");
        }
        if let Some(want) = expect {
            let got = stdout_lines(&out);
            assert!(
                got == want,
                "{what}: {} lines, want {}",
                got.len(),
                want.len()
            );
        }
    }
    eprintln!("{}", report.join("\n"));
    signal("-CONT");
    let _ = child.kill();
    let _ = child.wait();
}

/// Damage that stat cannot see (#7 repro 6): bits of the sidecar flipped with its modification
/// time restored. Prints the rates of wrong answers, errors and panics; fails on a wrong answer.
/// `cargo test --release --test index_trust bit_rot -- --ignored --nocapture`
/// (`CHAINLOG_ROT_SEEDS`, default 200 per kind).
#[test]
#[ignore = "a measurement: a few hundred damaged sidecars per kind"]
fn bit_rot_rates() {
    use rand::{Rng, SeedableRng};
    let seeds: u64 = std::env::var("CHAINLOG_ROT_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let (_dir, path, store) = setup(300);
    store.catch_up(&path).unwrap();
    let db = store.db_path(&path);
    let clean = std::fs::read(&db).unwrap();
    let want = resolve(&Transcript::open(&path).unwrap(), ResolveOptions::default()).unwrap();
    let mut wrong_total = 0;
    // `forge`: the marker is rewritten to match the damaged file, as if the damage happened
    // under a stat that did not change (real bit rot changes no ctime; a test cannot do that).
    for (kind, forge) in [
        ("1 bit", false),
        ("8 bits", false),
        ("zeroed 4 KiB", false),
        ("1 bit", true),
        ("8 bits", true),
        ("zeroed 4 KiB", true),
    ] {
        let (mut wrong, mut errors, mut panics, mut from_index) = (0, 0, 0, 0);
        for seed in 0..seeds {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let mut bytes = clean.clone();
            match kind {
                "1 bit" => {
                    let i = rng.random_range(0..bytes.len() * 8);
                    bytes[i / 8] ^= 1 << (i % 8);
                }
                "8 bits" => {
                    for _ in 0..8 {
                        let i = rng.random_range(0..bytes.len() * 8);
                        bytes[i / 8] ^= 1 << (i % 8);
                    }
                }
                _ => {
                    let page = rng.random_range(0..bytes.len() / 4096);
                    bytes[page * 4096..(page + 1) * 4096].fill(0);
                }
            }
            let before = std::fs::metadata(&db).unwrap().modified().unwrap();
            std::fs::write(&db, &bytes).unwrap();
            std::fs::File::options()
                .write(true)
                .open(&db)
                .unwrap()
                .set_modified(before)
                .unwrap();
            if forge {
                use std::os::unix::fs::MetadataExt;
                let m = std::fs::metadata(&db).unwrap();
                let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
                let v = format!(
                    "{} {} {} {} {}",
                    m.dev(),
                    m.ino(),
                    m.len(),
                    ns(m.mtime(), m.mtime_nsec()),
                    ns(m.ctime(), m.ctime_nsec())
                );
                std::fs::write(marker(&store, &path), v).unwrap();
            }
            let got = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                store.resolve(&path, ResolveOptions::default())
            }));
            match got {
                Ok(Ok(a)) if a.resolution == want => {
                    from_index += u32::from(a.source == Source::Index);
                }
                Ok(Ok(_)) => wrong += 1,
                Ok(Err(_)) => errors += 1,
                Err(_) => panics += 1,
            }
            // Start each seed from the clean sidecar again.
            let _ = std::fs::remove_file(&db);
            std::fs::write(&db, &clean).unwrap();
            store.catch_up(&path).unwrap();
        }
        eprintln!(
            "{kind} (marker forged: {forge}): {seeds} seeds: {wrong} wrong answers with exit 0, {errors} errors, {panics} panics, {from_index} right answers from the index"
        );
        // Known gap: under a forged marker (real bit rot), keys carry no checksum and redb
        // panics on some damaged pages; only damage that changes the stat is asserted.
        if !forge {
            wrong_total += wrong + panics;
        }
    }
    assert_eq!(wrong_total, 0);
}

/// The lines a process printed on stdout.
fn stdout_lines(out: &std::process::Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Issue #33: `index` with an index folder it cannot write in says so once and stops, instead
/// of printing the same error for every transcript (run as an unprivileged user: root writes
/// in a folder of mode 0555).
#[test]
fn a_read_only_index_folder_is_one_error() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path, m: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    };
    let tmp = tempfile::tempdir().unwrap();
    mode(tmp.path(), 0o755);
    let claude = tmp.path().join("claude");
    let example =
        std::fs::read(crate::util::manifest_dir().join("fixtures/example.jsonl")).unwrap();
    for p in 0..3 {
        let dir = claude.join("projects").join(format!("-work-p{p}"));
        std::fs::create_dir_all(&dir).unwrap();
        for s in 0..4 {
            let f = dir.join(format!("{p}{s}000000-0000-4000-8000-000000000000.jsonl"));
            std::fs::write(&f, &example).unwrap();
            mode(&f, 0o644);
        }
        mode(&dir, 0o755);
    }
    mode(&claude, 0o755);
    mode(&claude.join("projects"), 0o755);
    let index = tmp.path().join("index");
    std::fs::create_dir(&index).unwrap();
    mode(&index, 0o555);
    let o = crate::util::run_unprivileged(
        tmp.path(),
        &[
            "--claude-dir",
            claude.to_str().unwrap(),
            "--index-dir",
            index.to_str().unwrap(),
            "index",
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert_eq!(
        err.lines().count(),
        1,
        "one error, not one per transcript:\n{err}"
    );
    assert!(
        err.contains("cannot be written") && err.contains(index.to_str().unwrap()),
        "{err}"
    );
    mode(&index, 0o755);
    // An index folder `index` creates is private (0700), its parents too.
    let fresh = tmp.path().join("fresh/index");
    let o = crate::util::chainlog(&[
        "--claude-dir",
        claude.to_str().unwrap(),
        "--index-dir",
        fresh.to_str().unwrap(),
        "index",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for d in [&fresh, fresh.parent().unwrap()] {
        let m = std::fs::metadata(d).unwrap().permissions().mode() & 0o777;
        assert_eq!(m, 0o700, "{}", d.display());
    }
}
