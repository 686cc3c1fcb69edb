//! Property test: any interleaving of appends, torn lines, truncations, rewrites, index
//! damage, reopen and rebuild leaves the index answering exactly what a full scan answers.
//! Transcripts come from the generator with every feature on (branches, compactions with and
//! without preserved segments, snips, progress, sidechains, metadata mid-file, corruption).

use std::io::Write;
use std::path::Path;

use chainlog::generate::{GenOptions, generate};
use chainlog::{ResolveOptions, Store, Transcript, View, resolve};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    /// Append the next `n` lines of the source.
    Append(usize),
    /// Append half of the next line (a torn tail).
    AppendTorn,
    /// Cut the file back by `n` lines (a tombstone truncation).
    Truncate(usize),
    /// Replace the file with a different session (atomic rename).
    Rewrite,
    /// Flip bytes in the index files.
    CorruptIndex,
    /// Delete the index files.
    DeleteIndex,
    /// Drop the store and open a new one.
    Reopen,
    /// `rebuild` the transcript.
    Rebuild,
    /// Compare answers.
    Query,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (1usize..40).prop_map(Op::Append),
        2 => Just(Op::AppendTorn),
        1 => (1usize..10).prop_map(Op::Truncate),
        1 => Just(Op::Rewrite),
        1 => Just(Op::CorruptIndex),
        1 => Just(Op::DeleteIndex),
        1 => Just(Op::Reopen),
        1 => Just(Op::Rebuild),
        4 => Just(Op::Query),
    ]
}

fn lines_of(seed: u64) -> Vec<Vec<u8>> {
    let mut opts = GenOptions::everything(seed, 40_000);
    opts.compact_every_bytes = Some(12_000);
    let s = generate(&opts);
    s.main
        .split_inclusive(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

fn check(store: &Store, path: &Path, step: usize) -> Result<(), TestCaseError> {
    let t = Transcript::open(path).unwrap();
    for view in [View::Resume, View::Full] {
        let opts = ResolveOptions {
            view,
            ..ResolveOptions::default()
        };
        let want = resolve(&t, opts).unwrap();
        let got = store.resolve(path, opts).unwrap();
        prop_assert_eq!(&got.resolution, &want, "step {} {:?}", step, view);
        prop_assert_eq!(&got.bad_lines, &t.bad_lines, "bad lines at step {}", step);
    }
    Ok(())
}

fn damage(dir: &Path, delete: bool) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if delete {
            std::fs::remove_file(&p).unwrap();
            continue;
        }
        let mut bytes = std::fs::read(&p).unwrap();
        let n = bytes.len();
        for k in 0..64 {
            let i = (k * 7919 + 4096) % n;
            bytes[i] ^= 0x5a;
        }
        std::fs::write(&p, bytes).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn index_equals_full_scan_under_any_history(seed in 0u64..1000, ops in prop::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("projects/-p/44444444-4444-4444-8444-444444444444.jsonl");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let index = dir.path().join("index");
        let mut store = Store::new(&index);
        let mut src = lines_of(seed);
        let mut written: Vec<Vec<u8>> = Vec::new(); // complete lines on disk
        let mut torn: Option<Vec<u8>> = None;       // a half line at the end
        let mut next = 0usize;
        let mut generation = 0u64;
        let write_all = |written: &[Vec<u8>], torn: &Option<Vec<u8>>| {
            let tmp = path.with_extension("tmp");
            let mut f = std::fs::File::create(&tmp).unwrap();
            for l in written { f.write_all(l).unwrap(); }
            if let Some(t) = torn { f.write_all(t).unwrap(); }
            std::fs::rename(&tmp, &path).unwrap();
        };
        std::fs::File::create(&path).unwrap();
        for (step, op) in ops.into_iter().enumerate() {
            match op {
                Op::Append(n) => {
                    let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
                    if let Some(t) = torn.take() {
                        // Complete the torn line.
                        let line = &src[next - 1];
                        f.write_all(&line[t.len()..]).unwrap();
                        written.push(line.clone());
                    }
                    for _ in 0..n {
                        if next >= src.len() { break; }
                        f.write_all(&src[next]).unwrap();
                        written.push(src[next].clone());
                        next += 1;
                    }
                }
                Op::AppendTorn => {
                    if torn.is_none() && next < src.len() {
                        let line = &src[next];
                        let half = line[..line.len() / 2].to_vec();
                        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(&half).unwrap();
                        torn = Some(half);
                        next += 1;
                    }
                }
                Op::Truncate(n) => {
                    if torn.take().is_some() { next -= 1; }
                    for _ in 0..n.min(written.len()) { written.pop(); next -= 1; }
                    let len: usize = written.iter().map(Vec::len).sum();
                    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(len as u64).unwrap();
                }
                Op::Rewrite => {
                    generation += 1;
                    src = lines_of(seed + 1000 * generation);
                    let keep = written.len().min(src.len()) / 2;
                    written = src[..keep].to_vec();
                    next = keep;
                    torn = None;
                    write_all(&written, &torn);
                }
                Op::CorruptIndex => damage(&index, false),
                Op::DeleteIndex => damage(&index, true),
                Op::Reopen => store = Store::new(&index),
                Op::Rebuild => { store.rebuild(&path).unwrap(); }
                Op::Query => check(&store, &path, step)?,
            }
        }
        check(&store, &path, usize::MAX)?;
    }
}
