//! Progress of long index work reaches the process's observer; short work stays silent.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use chainlog::Store;
use chainlog::search::SearchOptions;
use chainlog::sidecar::{REPORT_ABOVE, set_progress};

/// The observer is one per process: the tests of this file take turns.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

type Calls = Arc<Mutex<Vec<(PathBuf, u64, u64)>>>;

/// Sets an observer that records every call.
fn record() -> Calls {
    let calls: Calls = Arc::default();
    let sink = calls.clone();
    set_progress(Some(Arc::new(move |p, done, total| {
        sink.lock().unwrap().push((p.to_path_buf(), done, total));
    })));
    calls
}

#[test]
fn a_large_catch_up_reports_its_bytes_and_a_small_one_does_not() {
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let calls = record();
    let store = Store::new(dir.path().join("index"));

    let small = dir.path().join("small.jsonl");
    chainlog_gen::write_file(&chainlog_gen::GenOptions::plain(1, 1 << 20), &small).unwrap();
    store.catch_up(&small).unwrap();
    assert!(
        calls.lock().unwrap().is_empty(),
        "a 1 MiB catch-up reported progress"
    );

    let big = dir.path().join("big.jsonl");
    let (len, _) = chainlog_gen::write_file(
        &chainlog_gen::GenOptions::plain(2, REPORT_ABOVE + (8 << 20)),
        &big,
    )
    .unwrap();
    store.catch_up(&big).unwrap();
    set_progress(None);
    let calls = calls.lock().unwrap().clone();
    assert!(calls.len() >= 3, "{calls:?}");
    assert!(calls.iter().all(|(p, _, total)| *p == big && *total == len));
    assert_eq!(calls[0].1, 0);
    assert_eq!(calls.last().unwrap().1, len);
    assert!(
        calls.windows(2).all(|w| w[0].1 <= w[1].1),
        "not monotonic: {calls:?}"
    );
}

#[test]
fn a_first_search_index_build_over_many_files_reports_its_bytes() {
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let claude = dir.path().join("claude");
    let project = claude.join("projects/-work-big");
    std::fs::create_dir_all(&project).unwrap();
    // Each file is below the threshold; together they are above it.
    let each = REPORT_ABOVE / 4;
    let mut total = 0;
    for i in 0..5u64 {
        let path = project.join(format!("0000000{i}-0000-4000-8000-000000000000.jsonl"));
        let (len, _) =
            chainlog_gen::write_file(&chainlog_gen::GenOptions::plain(20 + i, each), &path)
                .unwrap();
        assert!(len < REPORT_ABOVE);
        total += len;
    }
    assert!(total > REPORT_ABOVE);
    let store = Store::open(&claude, dir.path().join("index")).unwrap();
    let opts = SearchOptions {
        all: true,
        ..SearchOptions::default()
    };
    let calls = record();
    let done = store.search_catch_up(&opts).unwrap();
    assert_eq!(done.reindexed, 5);
    let first = calls.lock().unwrap().clone();
    // Nothing changed: nothing to report.
    calls.lock().unwrap().clear();
    store.search_catch_up(&opts).unwrap();
    let second = calls.lock().unwrap().clone();
    set_progress(None);
    assert!(first.len() >= 3, "{first:?}");
    assert!(
        first.iter().all(|(p, _, t)| *p == project && *t == total),
        "{first:?}"
    );
    assert_eq!(first[0].1, 0);
    assert_eq!(first.last().unwrap().1, total);
    assert!(
        first.windows(2).all(|w| w[0].1 <= w[1].1),
        "not monotonic: {first:?}"
    );
    assert!(second.is_empty(), "{second:?}");
}
