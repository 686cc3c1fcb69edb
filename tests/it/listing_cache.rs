//! Listing from the index: cached facts equal scanned facts, and a listing reads no
//! transcript that did not change (it `stat`s each file only).

use crate::util;

use std::io::Write;
use std::path::PathBuf;

use chainlog::discovery::{list_sessions, scan_session_facts};
use chainlog::{ListOptions, Store};

fn real_dir() -> PathBuf {
    util::real_corpus()
}

#[test]
fn second_listing_reads_no_transcript_and_answers_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    // Copy the real sessions so one can be appended to.
    let copies = util::copy_real_sessions(tmp.path());
    let store = Store::new(tmp.path().join("index"));

    let mut cache = store.facts_cache();
    let first: Vec<_> = copies.iter().map(|p| cache.facts(p).unwrap()).collect();
    assert_eq!(cache.scanned, copies.len() as u64);
    cache.flush().unwrap();
    for (p, f) in copies.iter().zip(&first) {
        assert_eq!(f, &scan_session_facts(p).unwrap(), "{}", p.display());
    }

    let mut cache = store.facts_cache();
    let second: Vec<_> = copies.iter().map(|p| cache.facts(p).unwrap()).collect();
    assert_eq!(cache.scanned, 0, "an unchanged transcript was read");
    assert_eq!(cache.cached, copies.len() as u64);
    assert_eq!(first, second);
    cache.flush().unwrap();

    // Touch one file: only it is read again, and its new facts are right.
    let changed = copies
        .iter()
        .find(|p| std::fs::metadata(p).unwrap().len() > 1000)
        .unwrap();
    std::fs::OpenOptions::new()
        .append(true)
        .open(changed)
        .unwrap()
        .write_all(b"{\"type\":\"custom-title\",\"customTitle\":\"Renamed\",\"sessionId\":\"x\"}\n")
        .unwrap();
    let mut cache = store.facts_cache();
    for p in &copies {
        let f = cache.facts(p).unwrap();
        assert_eq!(f, scan_session_facts(p).unwrap());
    }
    assert_eq!(cache.scanned, 1);
    cache.flush().unwrap();
}

/// Runs `chainlog` on the claude dir `claude` with sidecars in `index`; returns its stdout.
fn run_in(claude: &std::path::Path, index: &std::path::Path, args: &[&str]) -> Vec<u8> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_chainlog"))
        .args(args)
        .arg("--claude-dir")
        .arg(claude)
        .arg("--index-dir")
        .arg(index)
        .current_dir(claude)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The sidecars `chainlog index` created are left as small as a compaction makes them: the
/// commits of the listing rows and the views after the catch-ups left no holes behind.
#[test]
fn sidecars_index_created_are_left_compacted() {
    let tmp = tempfile::tempdir().unwrap();
    util::copy_real_sessions(tmp.path());
    let index = tmp.path().join("index");
    run_in(tmp.path(), &index, &["index"]);
    let sidecars = util::files_ending(&index, ".redb");
    assert_eq!(sidecars.len(), 3, "{sidecars:?}");
    for sidecar in sidecars {
        let left = std::fs::metadata(&sidecar).unwrap().len();
        // A copy compacted by redb, opened as chainlog opens it, and closed.
        let copy = tmp.path().join("copy.redb");
        std::fs::copy(&sidecar, &copy).unwrap();
        let mut b = redb::Builder::new();
        b.set_concurrency_mode(redb::ConcurrencyMode::MultiWriter);
        let mut db = b.open(&copy).unwrap();
        db.compact().unwrap();
        drop(db);
        let compacted = std::fs::metadata(&copy).unwrap().len();
        assert!(
            left <= compacted,
            "{}: {left} bytes, {compacted} compacted",
            sidecar.display()
        );
    }
}

/// `chainlog index` fills the listing table: the first listing after it reads no transcript
/// (every row answers), and `ls --json` prints what a listing from full scans prints.
#[test]
fn listing_after_index_reads_no_transcript() {
    let tmp = tempfile::tempdir().unwrap();
    let copies = util::copy_real_sessions(tmp.path());
    let index = tmp.path().join("index");
    let run = |args: &[&str]| run_in(tmp.path(), &index, args);
    run(&["index"]);

    let store = Store::new(&index);
    // As `ls` reads it: each project's rows with one range scan (`facts_all`).
    let mut cache = store.facts_cache();
    let mut skipped = Vec::new();
    let listed = chainlog::discovery::list_sessions_from(
        tmp.path(),
        &ListOptions::all(),
        &mut cache,
        &mut skipped,
    )
    .unwrap();
    assert!(skipped.is_empty(), "{skipped:?}");
    assert_eq!(
        cache.scanned, 0,
        "a transcript was read after `chainlog index`"
    );
    let sessions = copies
        .iter()
        .filter(|p| chainlog::discovery::is_uuid(&p.file_stem().unwrap().to_string_lossy()))
        .count() as u64;
    assert!(sessions >= 10);
    assert_eq!(
        cache.cached, sessions,
        "every session answered from its row"
    );
    cache.flush().unwrap();

    // The same listing from full scans, printed as `ls --json` printed it with `Value`s.
    let scanned = list_sessions(tmp.path(), &ListOptions::all(), &mut scan_session_facts).unwrap();
    assert_eq!(listed, scanned);
    let mut want = Vec::new();
    for f in scanned.iter().filter(|f| f.message_count > 0) {
        let mut v = f.to_listing_json();
        v.as_object_mut().unwrap().insert("schema".into(), 1.into());
        serde_json::to_writer(&mut want, &v).unwrap();
        want.push(b'\n');
    }
    let got = run(&["--json", "ls", "--all"]);
    assert_eq!(
        String::from_utf8(got).unwrap(),
        String::from_utf8(want).unwrap()
    );
}

/// A cold listing reads a small transcript with one `read` and cuts its chain lines from
/// those bytes: the facts equal those computed from the reference scan with every line read
/// by offset (the real corpus and the fixtures: torn tails, NUL runs, bad lines, A5 cases).
#[test]
fn facts_from_whole_reads_equal_facts_from_reads_by_offset() {
    use chainlog::discovery::session_facts;
    use chainlog::reference::{ResolveOptions, Transcript, View, resolve};
    let mut files = util::files_ending(&real_dir(), ".jsonl");
    files.extend(util::files_ending(
        &util::manifest_dir().join("fixtures"),
        ".jsonl",
    ));
    let mut compared = 0;
    for p in &files {
        let t = Transcript::open(p).unwrap();
        let Ok(res) = resolve(
            &t,
            ResolveOptions {
                leaf: None,
                view: View::Full,
                list_leaves: false,
            },
        ) else {
            continue;
        };
        let by_offset = session_facts(p, &t, &res);
        let whole = scan_session_facts(p);
        match (by_offset, whole) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{}", p.display()),
            (a, b) => assert_eq!(a.is_ok(), b.is_ok(), "{}: {a:?} / {b:?}", p.display()),
        }
        compared += 1;
    }
    assert!(compared >= 40, "{compared} files compared");
}
