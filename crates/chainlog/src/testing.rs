//! Helpers of the library's unit tests.

use std::path::{Path, PathBuf};

/// Every `.jsonl` file under the repository's `fixtures/` (the vendored real transcripts
/// included), sorted.
pub fn fixture_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures"),
        &mut files,
    );
    assert!(files.len() > 20, "fixtures missing");
    files.sort();
    files
}
