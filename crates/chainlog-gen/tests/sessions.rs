//! `chainlog-gen OUT --claude-dir --sessions N`: a project of N small sessions (the 20,000
//! session tree of `benches/many.rs`).

use std::process::Command;

fn generator(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_chainlog-gen"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn sessions_writes_that_many_sessions_into_one_project() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().to_str().unwrap();
    let o = generator(&[out, "--claude-dir", "--sessions", "5", "--bytes", "300"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let projects: Vec<_> = std::fs::read_dir(tmp.path().join("projects"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(projects.len(), 1, "one project");
    let mut ids = Vec::new();
    for e in std::fs::read_dir(projects[0].path()).unwrap().flatten() {
        let name = e.file_name().into_string().unwrap();
        let id = name
            .strip_suffix(".jsonl")
            .expect("only transcripts")
            .to_owned();
        let text = std::fs::read_to_string(e.path()).unwrap();
        assert!(
            text.lines().count() >= 2,
            "{name}: {} lines",
            text.lines().count()
        );
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(sid) = v.get("sessionId") {
                assert_eq!(sid.as_str(), Some(id.as_str()), "{name}");
            }
        }
        ids.push(id);
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 5, "five distinct sessions");
    let o = generator(&[out, "--sessions", "2"]);
    assert_eq!(o.status.code(), Some(2), "--sessions needs --claude-dir");
}
