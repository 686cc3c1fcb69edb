//! Progress of long index work reaches the process's observer; short work stays silent.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use chainlog::Store;
use chainlog::sidecar::{REPORT_ABOVE, set_progress};

#[test]
fn a_large_catch_up_reports_its_bytes_and_a_small_one_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let calls: Arc<Mutex<Vec<(PathBuf, u64, u64)>>> = Arc::default();
    let sink = calls.clone();
    set_progress(Some(Arc::new(move |p, done, total| {
        sink.lock().unwrap().push((p.to_path_buf(), done, total));
    })));
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
