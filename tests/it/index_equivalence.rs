//! The index answers exactly what the reference loader answers: on every fixture and real
//! transcript, after a cold build, and after catching up line by line (torn tails included).

use crate::util;

use std::io::Write;
use std::path::{Path, PathBuf};

use chainlog::Source;
use chainlog::Store;
use chainlog::reference::ResolveOptions;
use chainlog::reference::Transcript;
use chainlog::reference::View;
use chainlog::reference::resolve;
use chainlog::sidecar::{ViewUpdate, verify};
use chainlog::view::{detect_interrupt, read_view};

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn real_dir() -> PathBuf {
    util::real_corpus()
}

fn jsonl_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            jsonl_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
}

fn corpus() -> Vec<PathBuf> {
    let mut files = Vec::new();
    jsonl_files(&manifest().join("fixtures"), &mut files);
    let real_before = files.len();
    jsonl_files(&real_dir(), &mut files);
    assert!(
        files.len() > real_before,
        "no real transcripts under {}",
        real_dir().display()
    );
    assert!(real_before > 10, "fixtures missing");
    files.sort();
    files
}

/// Asserts that every answer of the index is the full scan's; returns what the catch-up (the
/// first call) did to the materialised view.
fn assert_same(store: &Store, path: &Path, context: &str, every_leaf: bool) -> ViewUpdate {
    let t = Transcript::open(path).unwrap();
    let caught_up = store.catch_up(path).unwrap().view;
    for view in [View::Resume, View::Full] {
        let opts = ResolveOptions {
            leaf: None,
            view,
            ..Default::default()
        };
        let want = resolve(&t, opts).unwrap();
        let got = store
            .resolve_indexed(path, opts)
            .unwrap()
            .unwrap_or_else(|| panic!("{context}: index damaged"));
        assert_eq!(
            got.resolution,
            want,
            "{context}: {view:?} of {}",
            path.display()
        );
        assert_eq!(
            got.bad_lines[..],
            t.bad_lines[..t.bad_lines.len().min(chainlog::BAD_LINES_KEPT)],
            "{context}: bad lines of {}",
            path.display()
        );
        assert_eq!(got.bad_line_count, t.bad_lines.len() as u64, "{context}");
        assert_eq!(
            got.torn_tail,
            t.frame.torn_tail,
            "{context}: torn tail of {}",
            path.display()
        );
        assert_eq!(got.source, Source::Index);
    }
    // After a resume (which stores it), the default resume is read from the materialised
    // view, and it is the same answer.
    store
        .conversation(path, &chainlog::ResumeOptions::default())
        .unwrap();
    let opts = ResolveOptions {
        leaf: None,
        view: View::Resume,
        list_leaves: false,
    };
    let got = store
        .resolve_indexed(path, opts)
        .unwrap()
        .unwrap_or_else(|| panic!("{context}: index damaged"));
    assert!(
        got.materialised(),
        "{context}: the resume of {} was walked, not read from the materialised view",
        path.display()
    );
    let want = resolve(&t, opts).unwrap();
    assert_eq!(
        got.resolution,
        want,
        "{context}: materialised view of {}",
        path.display()
    );
    // How the conversation ends, as stored (or extended), is what its lines say.
    let lines = read_view(path, &want.chain, &t.names).unwrap();
    assert_eq!(
        got.interrupt,
        Some(detect_interrupt(&lines)),
        "{context}: interrupt of the materialised view of {}",
        path.display()
    );
    if !every_leaf {
        return caught_up;
    }
    // Messages as requested starts.
    for leaf in &t
        .rows
        .iter()
        .map(|r| r.head.uuid)
        .take(50)
        .collect::<Vec<_>>()
    {
        let opts = ResolveOptions {
            leaf: Some(*leaf),
            view: View::Resume,
            ..Default::default()
        };
        let want = resolve(&t, opts).ok();
        let got = store
            .resolve_indexed(path, opts)
            .ok()
            .flatten()
            .map(|a| a.resolution);
        assert_eq!(
            got,
            want,
            "{context}: --leaf {} of {}",
            t.names.name(*leaf),
            path.display()
        );
    }
    caught_up
}

#[test]
fn cold_index_matches_reference_on_every_fixture_and_real_transcript() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path());
    for path in corpus() {
        assert_same(&store, &path, "cold", true);
        assert!(
            verify(&store, &path).unwrap().is_empty(),
            "verify {}",
            path.display()
        );
    }
}

#[test]
fn catching_up_line_by_line_matches_reference() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("index"));
    let mut updates = std::collections::HashMap::<ViewUpdate, usize>::new();
    for (n, src) in corpus().into_iter().enumerate() {
        let bytes = std::fs::read(&src).unwrap();
        if bytes.len() > 60_000 {
            continue;
        }
        let path = dir.path().join(format!("project/s{n}.jsonl"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut f = std::fs::File::create(&path).unwrap();
        let mut written = 0;
        for (i, chunk) in bytes.split_inclusive(|b| *b == b'\n').enumerate() {
            // Write each line in two halves: the first half is a torn tail for a moment.
            let half = chunk.len() / 2;
            f.write_all(&chunk[..half]).unwrap();
            f.flush().unwrap();
            if i % 3 == 0 {
                let ctx = format!("torn after line {i} of {}", src.display());
                assert_same(&store, &path, &ctx, false);
            }
            f.write_all(&chunk[half..]).unwrap();
            f.flush().unwrap();
            written += chunk.len();
            let ctx = format!("after line {i} of {}", src.display());
            *updates
                .entry(assert_same(&store, &path, &ctx, false))
                .or_default() += 1;
        }
        assert_eq!(written, bytes.len());
    }
    // The fast path answered: most appended lines continue the chain, and then the catch-up
    // extended the view the last resume stored (each resume above is then read from it).
    let extended = updates.get(&ViewUpdate::Extended).copied().unwrap_or(0);
    let dropped = updates.get(&ViewUpdate::Dropped).copied().unwrap_or(0);
    eprintln!("view updates after an appended line: {updates:?}");
    assert!(
        extended > 5 * dropped && extended > 300,
        "too few views extended: {updates:?}"
    );
}

/// A resume right after lines were appended answers from the index as it was plus those
/// lines read in memory, without writing the sidecar, and that answer is the full scan's: every
/// fixture and real transcript appended line by line (torn halves included) and resumed after
/// each half, the index caught up every fourth line only.
#[test]
fn resuming_after_an_append_without_writing_matches_reference() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("index"));
    let opts = ResolveOptions {
        leaf: None,
        view: View::Resume,
        list_leaves: false,
    };
    let (mut in_memory, mut caught_up) = (0, 0);
    for (n, src) in corpus().into_iter().enumerate() {
        let bytes = std::fs::read(&src).unwrap();
        if bytes.len() > 60_000 {
            continue;
        }
        let path = dir.path().join(format!("project/s{n}.jsonl"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut f = std::fs::File::create(&path).unwrap();
        let sidecar = store.db_path(&path);
        for (i, chunk) in bytes.split_inclusive(|b| *b == b'\n').enumerate() {
            if i % 4 == 0 {
                store.catch_up(&path).unwrap();
            }
            let half = chunk.len() / 2;
            for part in [&chunk[..half], &chunk[half..]] {
                f.write_all(part).unwrap();
                f.flush().unwrap();
                let ctx = format!("line {i} of {}", src.display());
                let before = std::fs::read(&sidecar).ok();
                let resumed = store
                    .conversation(&path, &chainlog::ResumeOptions::default())
                    .unwrap();
                let got = resumed.answer();
                let t = Transcript::open(&path).unwrap();
                let want = resolve(&t, opts).unwrap();
                assert_eq!(got.resolution, want, "{ctx}");
                assert_eq!(got.torn_tail, t.frame.torn_tail, "{ctx}");
                assert_eq!(got.cursor, t.frame.complete_len, "{ctx}");
                assert_eq!(got.bad_line_count, t.bad_lines.len() as u64, "{ctx}");
                assert_eq!(got.source, Source::Index, "{ctx}");
                if got.tail_lines > 0 {
                    in_memory += 1;
                    assert!(got.materialised(), "{ctx}");
                    let lines = read_view(&path, &want.chain, &t.names).unwrap();
                    assert_eq!(got.interrupt, Some(detect_interrupt(&lines)), "{ctx}");
                    assert!(
                        before == std::fs::read(&sidecar).ok(),
                        "{ctx}: the sidecar was written"
                    );
                } else {
                    caught_up += 1;
                }
            }
        }
    }
    // The fast path answered most resumes after an append (the others: a line it declines,
    // such as a compaction or a bad line, or a torn half with nothing new).
    eprintln!("answered in memory: {in_memory}, caught up: {caught_up}");
    assert!(
        in_memory > 300 && in_memory > caught_up,
        "too few answers read in memory: {in_memory} (caught up: {caught_up})"
    );
}

/// `resume --format jsonl|uuids` prints line by line from the materialised view (the second
/// call; the first walks and stores it) exactly what the walk and the full scan print, on
/// every fixture and real transcript.
#[test]
fn the_streamed_resume_prints_what_the_walk_and_the_scan_print() {
    let dir = tempfile::tempdir().unwrap();
    let idx = dir.path().join("index");
    let idx = idx.to_str().unwrap();
    let mut streamed = 0;
    for path in corpus() {
        let p = path.to_str().unwrap();
        for format in ["jsonl", "uuids"] {
            let run = |extra: &[&str]| {
                let mut args = vec![
                    "--index-dir",
                    idx,
                    "--json",
                    "resume",
                    p,
                    "--format",
                    format,
                ];
                args.extend_from_slice(extra);
                let o = util::chainlog(&args);
                // Lines are handed over as written, invalid UTF-8 included.
                let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
                let mut lines: Vec<&str> = stdout.lines().collect();
                // jsonl ends with the trailer; uuid lines leave it to stderr.
                if format == "jsonl" {
                    lines.pop();
                }
                let trailer = o.status.success().then(|| {
                    let mut v = util::resume_trailer(&o);
                    let materialised = v["chainlog"]["materialised"] == true;
                    for k in ["source", "materialised"] {
                        v["chainlog"][k] = serde_json::Value::Null;
                    }
                    (v, materialised)
                });
                (o.status.code(), lines.join("\n"), trailer)
            };
            let walked = run(&[]);
            let read = run(&[]);
            let scanned = run(&["--no-index"]);
            let ctx = format!("{format} of {}", path.display());
            if walked.0 != Some(0) {
                // No message to resume: all three refuse alike.
                assert_eq!(read.0, walked.0, "{ctx}");
                assert_eq!(scanned.0, walked.0, "{ctx}");
                continue;
            }
            let (Some((wt, _)), Some((rt, materialised)), Some((st, _))) =
                (&walked.2, &read.2, &scanned.2)
            else {
                panic!("{ctx}: no trailer");
            };
            assert!(
                materialised,
                "{ctx}: the second resume was not read from the view"
            );
            streamed += 1;
            assert_eq!(read.1, walked.1, "{ctx}: streamed vs walked");
            assert_eq!(read.1, scanned.1, "{ctx}: streamed vs --no-index");
            assert_eq!(rt, wt, "{ctx}: trailer");
            assert_eq!(rt, st, "{ctx}: trailer vs --no-index");
        }
    }
    assert!(streamed > 40, "only {streamed} streamed resumes");
}

/// `Store::catch_up_all` (what `chainlog index` runs: one open per sidecar) catches up what
/// `Store::catch_up` would, its results in the order given: after a first index of half of
/// every file (three projects, interleaved), and after the rest of some files was appended.
#[test]
fn catching_up_a_tree_at_once_matches_the_scan() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("index"));
    let sources: Vec<PathBuf> = corpus()
        .into_iter()
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.len() < 200_000))
        .collect();
    let mut paths = Vec::new();
    let mut rest = Vec::new();
    for (n, src) in sources.iter().enumerate() {
        let bytes = std::fs::read(src).unwrap();
        let cut = bytes[..bytes.len() / 2]
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1);
        let path = dir.path().join(format!("projects/p{}/s{n}.jsonl", n % 3));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &bytes[..cut]).unwrap();
        paths.push(path);
        rest.push(bytes[cut..].to_vec());
    }
    let mut seen = Vec::new();
    let first = store.catch_up_all(&paths, |p, _| seen.push(p.to_path_buf()));
    // Reported sidecar by sidecar, each transcript once.
    seen.sort();
    let mut given = paths.clone();
    given.sort();
    assert_eq!(seen, given);
    for (path, r) in paths.iter().zip(&first) {
        let len = std::fs::metadata(path).unwrap().len();
        assert_eq!(r.as_ref().unwrap().bytes, len, "{}", path.display());
        assert_same(&store, path, "indexed at once", false);
    }
    for (n, (path, rest)) in paths.iter().zip(&rest).enumerate() {
        if n % 2 == 0 {
            let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
            f.write_all(rest).unwrap();
        }
    }
    let second = store.catch_up_all(&paths, |_, _| {});
    for (n, ((path, r), rest)) in paths.iter().zip(&second).zip(&rest).enumerate() {
        let complete = rest
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i as u64 + 1);
        let want = if n % 2 == 0 { complete } else { 0 };
        assert_eq!(r.as_ref().unwrap().bytes, want, "{}", path.display());
        assert_same(&store, path, "caught up at once", false);
    }
}

/// A project of many short sessions is caught up a batch to a write transaction, with the
/// resume views of its sessions, and verified together. One transcript that fails in a batch
/// (a folder named like a session: it opens, its read fails) fails alone: the others answer as
/// a catch-up of each would, their views are stored (in the batch that failed and in one that
/// did not), and `verify_all` compares them from one open of each sidecar, verifying only the
/// failing one on its own.
#[test]
fn a_batch_of_short_sessions_with_one_failing_matches_the_scan() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("index"));
    // The same sessions in two projects: one batch that fails (the folder below), one that
    // does not.
    let project = dir.path().join("projects/-many");
    let mut paths = Vec::new();
    for p in [&project, &dir.path().join("projects/-many-ok")] {
        std::fs::create_dir_all(p).unwrap();
        for (n, src) in corpus()
            .into_iter()
            .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.len() < 200_000))
            .enumerate()
        {
            let path = p.join(format!("{n:08x}-0000-4000-8000-000000000000.jsonl"));
            std::fs::copy(&src, &path).unwrap();
            paths.push(path);
        }
    }
    assert!(paths.len() > 40, "{} sessions", paths.len());
    let bad = project.join("0000000f-ffff-4000-8000-000000000000.jsonl");
    std::fs::create_dir(&bad).unwrap();
    paths.push(bad.clone());
    paths.sort();
    let results = store.catch_up_all(&paths, |_, _| {});
    // Each transcript resumed on its own, in another index folder.
    let alone = Store::new(dir.path().join("index-alone"));
    let mut views = 0;
    for (path, r) in paths.iter().zip(&results) {
        if *path == bad {
            assert!(r.is_err(), "a folder was caught up: {r:?}");
            continue;
        }
        // The batch holding the folder failed and was caught up one by one; the other was
        // caught up together.
        let batched = r.as_ref().unwrap().batched;
        assert_eq!(batched, !path.starts_with(&project), "{}", path.display());
        // Up to the last line's end (a torn tail waits).
        let bytes = std::fs::read(path).unwrap();
        let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        assert_eq!(
            r.as_ref().unwrap().bytes,
            complete as u64,
            "{}",
            path.display()
        );
        // Stored by the batch, before any resume, as a first resume of each stores it.
        let stored = store.materialised(path).unwrap().map(|a| a.resolution);
        let _ = alone.conversation(path, &chainlog::ResumeOptions::default());
        let want = alone.materialised(path).unwrap().map(|a| a.resolution);
        assert_eq!(stored, want, "{}: stored view", path.display());
        views += usize::from(stored.is_some());
        // What `chainlog index` reads to leave these out of `prepare_views`.
        assert_eq!(
            r.as_ref().unwrap().view == ViewUpdate::Stored,
            stored.is_some(),
            "{}: said stored",
            path.display()
        );
        assert_same(&store, path, "caught up in a batch", false);
    }
    assert!(views > paths.len() / 2, "{views} views stored");
    let mut answers = Vec::new();
    let on_its_own = store.verify_all(&paths, |p, r| answers.push((p.to_path_buf(), r)));
    assert_eq!(on_its_own, 1, "only the folder is verified on its own");
    assert_eq!(answers.len(), paths.len());
    for ((p, r), path) in answers.iter().zip(&paths) {
        assert_eq!(p, path, "answers in the order given");
        if *p == bad {
            assert!(r.is_err());
        } else {
            assert_eq!(r.as_ref().unwrap(), &Vec::new(), "{}", p.display());
        }
    }
}

/// Right after a compaction, the next message is written under the summary (the preserved
/// segment's anchor) and re-pointed to the segment's tail by the projections (format.md §A5
/// step 5): a resume reading that message in memory would chain it under the anchor instead.
/// It is caught up first, and the answer is the full scan's.
#[test]
fn a_message_under_the_preserved_segments_anchor_is_caught_up_not_read_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("index"));
    let src =
        std::fs::read_to_string(manifest().join("fixtures/a5/step5_preserved_live.jsonl")).unwrap();
    let lines: Vec<&str> = src.lines().collect();
    let path = dir.path().join("project/s.jsonl");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    // Up to the summary (line 8, the anchor), then the message under it.
    std::fs::write(&path, lines[..8].join("\n") + "\n").unwrap();
    store
        .conversation(&path, &chainlog::ResumeOptions::default())
        .unwrap();
    std::fs::write(&path, lines[..9].join("\n") + "\n").unwrap();
    let resumed = store
        .conversation(&path, &chainlog::ResumeOptions::default())
        .unwrap();
    let t = Transcript::open(&path).unwrap();
    let opts = ResolveOptions {
        leaf: None,
        view: View::Resume,
        list_leaves: false,
    };
    assert_eq!(resumed.answer().resolution, resolve(&t, opts).unwrap());
    assert_eq!(resumed.answer().tail_lines, 0, "read in memory");
}

/// A catch-up of many says which views it stored (`ViewUpdate::Stored`, what `chainlog index`
/// reads to walk no session twice): the sessions indexed anew, not an agent's file (no view is
/// stored for it), and nothing when caught up again unchanged.
#[test]
fn a_catch_up_of_many_says_which_views_it_stored() {
    let tmp = tempfile::tempdir().unwrap();
    let mut paths = util::copy_real_sessions(tmp.path());
    let agent = paths[0].with_file_name("agent-a0123456789abcdef.jsonl");
    std::fs::copy(&paths[0], &agent).unwrap();
    paths.push(agent.clone());
    paths.sort();
    let store = Store::new(tmp.path().join("index"));
    let results = store.catch_up_all(&paths, |_, _| {});
    for (path, r) in paths.iter().zip(&results) {
        let said = r.as_ref().unwrap().view == ViewUpdate::Stored;
        let stored = store.materialised(path).unwrap().is_some();
        assert_eq!(said, stored, "{}", path.display());
        assert_eq!(said, *path != agent, "{}", path.display());
    }
    for r in store.catch_up_all(&paths, |_, _| {}) {
        assert_eq!(r.unwrap().view, ViewUpdate::Untouched, "unchanged");
    }
}

/// `chainlog index` materialises every session's resume view: the next resume of each reads
/// it (no walk), writes nothing to the sidecar, and equals the full scan.
#[test]
fn after_index_every_resume_reads_its_view_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let copies = util::copy_real_sessions(tmp.path());
    let index = tmp.path().join("index");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_chainlog"))
        .arg("index")
        .arg("--claude-dir")
        .arg(tmp.path())
        .arg("--index-dir")
        .arg(&index)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let store = Store::new(&index);
    let opts = ResolveOptions {
        leaf: None,
        view: View::Resume,
        list_leaves: false,
    };
    for path in &copies {
        let sidecar = store.db_path(path);
        let before = std::fs::read(&sidecar).unwrap();
        let got = store.resolve_indexed(path, opts).unwrap().unwrap();
        assert!(got.materialised(), "{} was walked", path.display());
        assert_eq!(
            std::fs::read(&sidecar).unwrap(),
            before,
            "resuming {} wrote the sidecar",
            path.display()
        );
        let t = Transcript::open(path).unwrap();
        let want = resolve(&t, opts).unwrap();
        let lines = read_view(path, &want.chain, &t.names).unwrap();
        assert_eq!(got.resolution, want, "{}", path.display());
        assert_eq!(
            got.interrupt,
            Some(detect_interrupt(&lines)),
            "{}",
            path.display()
        );
    }
}

/// A catch-up of many reads each small session it indexed from zero whole once more, resolves
/// its view from that read and stores its listing row with it: the first listing after it
/// scans nothing, and every row answers what a scan of the file answers. A session that is a
/// link, one whose last line is unterminated, an empty one and one that changed after its
/// catch-up are left to the listing (it scans them); every stored view equals the full scan's.
#[test]
fn a_catch_up_of_many_stores_the_listing_rows_of_the_sessions_it_read_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let limit = 1 << 20;
    let (mut small, empty): (Vec<PathBuf>, Vec<PathBuf>) = util::copy_real_sessions(tmp.path())
        .into_iter()
        .filter(|p| std::fs::metadata(p).unwrap().len() <= limit)
        .partition(|p| std::fs::metadata(p).unwrap().len() > 0);
    assert!(small.len() >= 5, "{} small real sessions", small.len());
    let project = small[0].parent().unwrap().to_path_buf();
    let source = small[0].clone();
    // Named to come last in its folder: the listing finds a folder's sidecar from its first
    // file, and a link's own sidecar is where its target lies.
    let linked = project.join("ffffffff-0000-4000-8000-000000000001.jsonl");
    let outside = tmp.path().join("elsewhere.jsonl");
    std::fs::copy(&source, &outside).unwrap();
    std::os::unix::fs::symlink(&outside, &linked).unwrap();
    let torn = project.join("10000000-0000-4000-8000-000000000002.jsonl");
    let bytes = std::fs::read(&source).unwrap();
    std::fs::write(&torn, &bytes[..bytes.len() - 1]).unwrap();
    util::age(&torn);
    let store = Store::new(tmp.path().join("index"));
    // An empty session has nothing to read whole.
    let mut left = vec![linked.clone(), torn.clone()];
    left.extend(empty);
    small.sort();
    let mut paths = small.clone();
    paths.extend(left.iter().cloned());
    paths.sort();
    for r in store.catch_up_all(&paths, |_, _| {}) {
        assert_eq!(r.unwrap().view, ViewUpdate::Stored);
    }
    // Appended to after its catch-up: its row (for the shorter file) is stale.
    let grown = small.pop().unwrap();
    let mut more = std::fs::read(&source).unwrap();
    more.truncate(memchr::memchr(b'\n', &more).unwrap() + 1);
    std::fs::OpenOptions::new()
        .append(true)
        .open(&grown)
        .unwrap()
        .write_all(&more)
        .unwrap();
    util::age(&grown);
    left.push(grown);
    let rows = store.prepare_listing(&paths).unwrap();
    assert_eq!(
        (rows.current, rows.scanned),
        (small.len() as u64, left.len() as u64),
        "rows read whole, and those left to the listing"
    );
    let mut cache = store.facts_cache();
    for (path, facts) in paths.iter().zip(cache.facts_all(&paths)) {
        let facts = serde_json::to_value(facts.unwrap()).unwrap();
        let scanned = serde_json::to_value(chainlog::discovery::scan_session_facts(path).unwrap());
        assert_eq!(facts, scanned.unwrap(), "{}", path.display());
    }
    let opts = ResolveOptions {
        leaf: None,
        view: View::Resume,
        list_leaves: false,
    };
    for path in &small {
        let got = store.resolve_indexed(path, opts).unwrap().unwrap();
        assert!(got.materialised(), "{} was walked", path.display());
        let t = Transcript::open(path).unwrap();
        let want = resolve(&t, opts).unwrap();
        let lines = read_view(path, &want.chain, &t.names).unwrap();
        assert_eq!(got.resolution, want, "{}", path.display());
        assert_eq!(got.interrupt, Some(detect_interrupt(&lines)));
    }
}

/// The uuid of message `n` of the hand-built transcripts below.
fn msg_id(n: u64) -> String {
    format!("00000000-0000-4000-8000-{n:012x}")
}

/// One line of a hand-built transcript: message `n` (odd: a user, even: an assistant) under
/// `parent`, saying `content`.
fn message_line(n: u64, parent: Option<u64>, content: &str) -> String {
    let parent = parent.map_or("null".to_owned(), |p| format!("\"{}\"", msg_id(p)));
    let ty = if n % 2 == 1 { "user" } else { "assistant" };
    format!(
        r#"{{"parentUuid":{parent},"type":"{ty}","message":{{"role":"{ty}","content":"{content}"}},"uuid":"{}","sessionId":"s","timestamp":"2026-01-01T00:00:00.000Z"}}"#,
        msg_id(n)
    ) + "\n"
}

/// A first index writes the keys of `uuids` in sorted runs of 65,536: a uuid that comes back
/// after a run was written (with another parent) is found there, not taken for a new message;
/// a message names a parent that arrives after it; then more of both are appended.
#[test]
fn a_first_index_finds_a_duplicate_written_runs_earlier() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("index"));
    let path = dir.path().join("projects/p/s.jsonl");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let line = |text: &mut String, n: u64, parent: Option<u64>| {
        *text += &message_line(n, parent, &format!("m{n}"));
    };
    let mut text = String::new();
    for n in 1..=70_000u64 {
        line(&mut text, n, n.checked_sub(1).filter(|&p| p > 0));
    }
    // Message 10 again, under message 5: its first position stays, 6..9 become a branch.
    line(&mut text, 10, Some(5));
    // 70,001 names 70,002 before it arrives.
    line(&mut text, 70_001, Some(70_002));
    line(&mut text, 70_002, Some(70_000));
    std::fs::write(&path, &text).unwrap();
    store.catch_up(&path).unwrap();
    assert_same(&store, &path, "a duplicate runs later", true);
    let mut more = String::new();
    line(&mut more, 70_003, Some(70_001));
    line(&mut more, 20, Some(70_003));
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(more.as_bytes())
        .unwrap();
    let next = store.catch_up(&path).unwrap();
    assert_eq!(next.reindexed, None);
    assert_same(&store, &path, "a duplicate appended", true);
}

/// A file that did not grow past the bytes a catch-up saw (its lines and a torn tail) may have
/// been edited in place anywhere: a resume then catches up (which checks every chunk), never
/// reads the new state in memory. Here a uuid in the first 64 KiB chunk is changed in place
/// (not the last complete one, which every catch-up checks) while a torn tail stays as it was.
#[test]
fn an_in_place_edit_behind_a_torn_tail_is_not_read_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("index"));
    let path = dir.path().join("project/s.jsonl");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut text = String::new();
    for n in 1..=200u64 {
        let parent = n.checked_sub(1).filter(|&p| p > 0);
        text += &message_line(n, parent, &"x".repeat(900));
    }
    text += r#"{"parentUuid":"#; // torn
    std::fs::write(&path, &text).unwrap();
    store
        .conversation(&path, &chainlog::ResumeOptions::default())
        .unwrap();
    // Message 2's uuid changed in place: message 3 now names a parent no line has.
    let edited = text.replacen(
        &format!("\"uuid\":\"{}\"", msg_id(2)),
        &format!("\"uuid\":\"{}\"", msg_id(999)),
        1,
    );
    assert_eq!(edited.len(), text.len());
    std::fs::write(&path, &edited).unwrap();
    // The index's answer itself (a resume also checks each line it reads, and would start
    // over on the changed one).
    let opts = ResolveOptions {
        leaf: None,
        view: View::Resume,
        list_leaves: false,
    };
    let got = store.resolve_indexed(&path, opts).unwrap().unwrap();
    let t = Transcript::open(&path).unwrap();
    assert_eq!(got.resolution, resolve(&t, opts).unwrap());
}

/// `Store::leaf_report` (`chainlog leaves`) reads every leaf from the index: right after an
/// append it catches up (a default resume might have read the new lines in memory), and its
/// leaves are the full scan's, the active one marked.
#[test]
fn the_leaf_report_right_after_an_append_is_caught_up() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("index"));
    let mut checked = 0;
    for (n, src) in corpus().into_iter().enumerate() {
        let bytes = std::fs::read(&src).unwrap();
        let lines: Vec<&[u8]> = bytes.split_inclusive(|b| *b == b'\n').collect();
        if bytes.len() > 60_000 || lines.len() < 2 {
            continue;
        }
        let path = dir.path().join(format!("project/s{n}.jsonl"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, lines[..lines.len() - 1].concat()).unwrap();
        store
            .conversation(&path, &chainlog::ResumeOptions::default())
            .unwrap();
        std::fs::write(&path, &bytes).unwrap();
        let Some((ans, leaves)) = store.leaf_report(&path).unwrap() else {
            panic!("index damaged");
        };
        let t = Transcript::open(&path).unwrap();
        let want = resolve(
            &t,
            ResolveOptions {
                list_leaves: true,
                ..Default::default()
            },
        )
        .unwrap();
        let mut got: Vec<_> = leaves.iter().map(|l| l.uuid).collect();
        let mut want_leaves = want.leaves.clone();
        got.sort_unstable();
        want_leaves.sort_unstable();
        assert_eq!(got, want_leaves, "{}", src.display());
        // A checkpoint may name a system entry (Claude Code 2.1.x names `/exit`'s output):
        // then no listed leaf is the active one (`leaves` says "not a leaf").
        let chosen = ans.resolution.leaf.map(|(id, _)| id);
        assert_eq!(
            leaves.iter().find(|l| l.active).map(|l| l.uuid),
            chosen.filter(|id| want.leaves.contains(id)),
            "{}",
            src.display()
        );
        checked += 1;
    }
    assert!(checked > 20);
}
