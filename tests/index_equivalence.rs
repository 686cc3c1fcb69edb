//! The index answers exactly what the reference loader answers: on every fixture and real
//! transcript, after a cold build, and after catching up line by line (torn tails included).

mod util;

use std::io::Write;
use std::path::{Path, PathBuf};

use chainlog::Source;
use chainlog::Store;
use chainlog::reference::ResolveOptions;
use chainlog::reference::Transcript;
use chainlog::reference::View;
use chainlog::reference::resolve;
use chainlog::sidecar::verify;

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

fn assert_same(store: &Store, path: &Path, context: &str, every_leaf: bool) {
    let t = Transcript::open(path).unwrap();
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
        got.materialised,
        "{context}: the resume of {} was walked, not read from the materialised view",
        path.display()
    );
    assert_eq!(
        got.resolution,
        resolve(&t, opts).unwrap(),
        "{context}: materialised view of {}",
        path.display()
    );
    if !every_leaf {
        return;
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
            assert_same(&store, &path, &ctx, false);
        }
        assert_eq!(written, bytes.len());
    }
}
