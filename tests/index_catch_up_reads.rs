//! #7 repro 4: the verified marker is read before redb's read-write open rewrites the header, so
//! a one-message catch-up does not check (read) every page of the sidecar. Bytes read are
//! counted with `/proc/self/io` (`rchar`: every `read`/`pread` of the process), which is why
//! this file holds a single test: no other test thread reads meanwhile.
//!
//! A test build must not turn on redb's debug assertions: at each open they walk every page of
//! the database (`Database::mark_allocated_page_for_debug`), which made this test read the whole
//! sidecar although a release build does not (`[profile.dev.package.redb]` in Cargo.toml).

use std::io::Write;
use std::path::Path;

use chainlog::Store;

fn rchar() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").expect("/proc/self/io (Linux)");
    io.lines()
        .find_map(|l| l.strip_prefix("rchar: "))
        .and_then(|v| v.trim().parse().ok())
        .expect("rchar line")
}

fn line(n: u64) -> String {
    let id = |n: u64| format!("00000000-0000-4000-8000-{n:012x}");
    let parent = n
        .checked_sub(1)
        .map_or("null".to_owned(), |p| format!("\"{}\"", id(p)));
    format!(
        r#"{{"parentUuid":{parent},"isSidechain":false,"type":"user","message":{{"role":"user","content":"m{n} {}"}},"uuid":"{}","timestamp":"2026-01-01T00:00:00.000Z","sessionId":"s","cwd":"/p","version":"2.1.88","userType":"external"}}"#,
        "x".repeat(900),
        id(n)
    )
}

/// Bytes read by a catch-up of one appended message after `n` indexed ones, and the
/// sidecar's size.
fn catch_up_reads(dir: &Path, n: u64) -> (u64, u64) {
    let path = dir.join(format!(
        "projects/-p{n}/11111111-1111-4111-8111-111111111111.jsonl"
    ));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for i in 0..n {
        writeln!(f, "{}", line(i)).unwrap();
    }
    drop(f);
    let store = Store::new(dir.join("index"));
    store.catch_up(&path).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(f, "{}", line(n)).unwrap();
    drop(f);
    let before = rchar();
    let done = store.catch_up(&path).unwrap();
    let read = rchar() - before;
    assert_eq!(done.lines, 1);
    (read, std::fs::metadata(store.db_path(&path)).unwrap().len())
}

#[test]
fn a_one_message_catch_up_reads_bytes_independent_of_the_sidecar_size() {
    let dir = tempfile::tempdir().unwrap();
    let (small, small_size) = catch_up_reads(dir.path(), 50);
    let (large, large_size) = catch_up_reads(dir.path(), 10_000);
    assert!(large_size > 5 * small_size, "{small_size} vs {large_size}");
    assert!(
        large < small + large_size / 4,
        "a catch-up read {small} bytes beside a {small_size}-byte sidecar, \
         {large} bytes beside a {large_size}-byte one"
    );
}

/// A small project's sidecar is compacted after each first index of a session: each commit
/// copies the pages of the last one that it changes, and without the compaction the copies'
/// old places stay as holes (86,016 bytes for one session of 20 messages, 110,592 for two;
/// 73,728 for both compacted).
#[test]
fn a_small_sidecar_is_compacted_after_its_first_index() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("projects/-small");
    std::fs::create_dir_all(&project).unwrap();
    let text: String = (0..20).map(|i| line(i) + "\n").collect();
    let store = Store::new(dir.path().join("index"));
    for sid in [
        "11111111-1111-4111-8111-111111111111",
        "22222222-1111-4111-8111-111111111111",
    ] {
        let path = project.join(format!("{sid}.jsonl"));
        std::fs::write(&path, &text).unwrap();
        store.catch_up(&path).unwrap();
        let len = std::fs::metadata(store.db_path(&path)).unwrap().len();
        assert!(len <= 80 * 1024, "a {len}-byte sidecar after {sid}");
    }
}
