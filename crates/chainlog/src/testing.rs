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

/// A message line (no newline): uuid and parent `00000000-0000-4000-8000-<n as 12 hex>`,
/// type and role `ty`, `n` seconds after 2026-01-01 (n < 10).
pub fn line(n: u64, parent: Option<u64>, ty: &str) -> String {
    let id = |n: u64| format!("00000000-0000-4000-8000-{n:012x}");
    let parent = parent.map_or("null".to_owned(), |p| format!("\"{}\"", id(p)));
    format!(
        r#"{{"parentUuid":{parent},"type":"{ty}","message":{{"role":"{ty}","content":"x"}},"uuid":"{}","sessionId":"s","timestamp":"2026-01-01T00:00:0{n}.000Z"}}"#,
        id(n)
    )
}

/// Makes a FIFO at `path` (a special file where a regular one is expected).
pub fn mkfifo(path: &Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(ok.success(), "mkfifo {}", path.display());
}
