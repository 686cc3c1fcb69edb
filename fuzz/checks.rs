//! The properties the fuzz targets check, as plain functions: the cargo-fuzz targets
//! (`fuzz_targets/`) call them on libFuzzer's inputs, and `tests/it/input_properties.rs` replays
//! them over the seed corpus (`fixtures/a5`, `fixtures/bad`) and proptest's inputs in
//! `cargo test`, so CI needs no nightly sanitizer build. Run libFuzzer by hand:
//! `cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run transcript`.

use std::io::Read;

use chainlog::Store;
use chainlog::reference::{ResolveOptions, Transcript, View, leaf_report, resolve};

/// A reader handing out at most `step` bytes per call (framing across every boundary).
struct Dribble<'a> {
    data: &'a [u8],
    step: usize,
}

impl Read for Dribble<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// Arbitrary bytes as a transcript: the line reader and the chain builder never panic, and
/// reading the bytes in small pieces gives the answer of reading them at once.
pub fn transcript(data: &[u8]) {
    let whole = Transcript::scan_bytes(data);
    let step = 1 + data.first().map_or(0, |&b| usize::from(b % 7));
    let dribbled = Transcript::scan_reader(Dribble { data, step }).expect("reading memory");
    assert_eq!(whole.bad_lines, dribbled.bad_lines);
    assert_eq!(whole.frame, dribbled.frame);
    for view in [View::Resume, View::Full] {
        let opts = ResolveOptions {
            view,
            ..ResolveOptions::default()
        };
        let a = resolve(&whole, opts).expect("no leaf was requested");
        let b = resolve(&dribbled, opts).expect("no leaf was requested");
        assert_eq!(a, b, "{view:?}");
        if view == View::Resume {
            let _ = leaf_report(&whole, &a);
            let _ = a.clone().strict();
        }
    }
}

/// Arbitrary bytes as a transcript file: the index, caught up in two parts (a cut anywhere,
/// a torn line included) and read warm, answers like the reference loader, in both views.
pub fn index(data: &[u8]) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("projects/-p/s.jsonl");
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("a folder");
    let store = Store::new(dir.path().join("index"));
    let cut = data
        .first()
        .map_or(0, |&b| usize::from(b) * data.len() / 256);
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
}
