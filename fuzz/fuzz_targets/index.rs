//! Arbitrary bytes as a transcript file: the index, caught up in two parts (a cut anywhere,
//! a torn line included) and read warm, answers like the reference loader, in both views.

#![no_main]

use chainlog::Store;
use chainlog::reference::{ResolveOptions, Transcript, View, resolve};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("projects/-p/s.jsonl");
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("a folder");
    let store = Store::new(dir.path().join("index"));
    let cut = data.first().map_or(0, |&b| usize::from(b) * data.len() / 256);
    std::fs::write(&path, &data[..cut]).expect("write");
    let _ = store.catch_up(&path);
    std::fs::write(&path, data).expect("write");
    for view in [View::Resume, View::Full] {
        let opts = ResolveOptions {
            view,
            ..ResolveOptions::default()
        };
        let want = resolve(&Transcript::scan_bytes(data), opts).expect("no leaf");
        let got = store.resolve(&path, opts).expect("an answer");
        assert_eq!(got.resolution, want, "{view:?} ({:?})", got.source);
    }
});
