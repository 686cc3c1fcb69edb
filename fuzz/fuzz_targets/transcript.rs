//! Arbitrary bytes as a transcript: the line reader and the chain builder never panic, and
//! reading the bytes in small pieces gives the answer of reading them at once.

#![no_main]

use std::io::Read;

use chainlog::reference::{ResolveOptions, Transcript, View, leaf_report, resolve};
use libfuzzer_sys::fuzz_target;

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

fuzz_target!(|data: &[u8]| {
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
});
