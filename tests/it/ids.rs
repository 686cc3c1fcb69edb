//! Ids are shown as the file (or the user) wrote them (issue #9). An `Id` keeps a non-UUID id
//! as a blake3 hash: `resume --leaf notauuid` used to answer "message 51daa628-… is not in the
//! transcript", and `resume --json` printed chain-break ids as arrays of 16 integers.

use crate::util;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Output;

use serde_json::Value;
use util::chainlog;

/// One message line: `ty` with `uuid`, `parent` (`None`: a root) and a time in seconds.
fn line(out: &mut String, ty: &str, uuid: &str, parent: Option<&str>, secs: u32) {
    let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
    writeln!(
        out,
        r#"{{"parentUuid":{parent},"isSidechain":false,"type":"{ty}","message":{{"id":"msg-{uuid}","role":"{ty}","content":[{{"type":"text","text":"{uuid}"}}]}},"uuid":"{uuid}","timestamp":"2026-01-01T00:{:02}:{:02}.000Z","sessionId":"s"}}"#,
        secs / 60,
        secs % 60
    )
    .unwrap();
}

/// A transcript whose ids are not UUIDs: `u1 → a1`, then `u2` whose parent `gone` is missing
/// (`gap` seconds after `a1`), then `a2`.
fn broken(gap: u32) -> String {
    let mut t = String::new();
    line(&mut t, "user", "u1", None, 0);
    line(&mut t, "assistant", "a1", Some("u1"), 1);
    line(&mut t, "user", "u2", Some("gone"), 1 + gap);
    line(&mut t, "assistant", "a2", Some("u2"), 2 + gap);
    t
}

struct Case {
    _dir: tempfile::TempDir,
    path: PathBuf,
    index: PathBuf,
}

impl Case {
    fn new(text: &str) -> Case {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, text).unwrap();
        Case {
            path,
            index: dir.path().join("idx"),
            _dir: dir,
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut all = vec!["--index-dir", self.index.to_str().unwrap()];
        all.extend_from_slice(args);
        chainlog(&all)
    }

    fn path(&self) -> &str {
        self.path.to_str().unwrap()
    }

    /// The `{"chainlog": …}` object `resume --json` prints last, through the index and with
    /// `--no-index` (both must agree), and stderr.
    fn resume_json(&self, extra: &[&str]) -> (Value, String) {
        let mut answers = Vec::new();
        for no_index in [false, true] {
            let mut args = vec!["--json", "resume", self.path(), "--format", "uuids"];
            args.extend_from_slice(extra);
            if no_index {
                args.push("--no-index");
            }
            let o = self.run(&args);
            let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
            assert!(o.status.success(), "{args:?}: {stderr}");
            let stdout = String::from_utf8(o.stdout).unwrap();
            // Issue #33: uuid lines stay uuid lines; the trailer goes to stderr.
            assert!(
                stdout.lines().all(|l| !l.contains('{')),
                "only uuids on stdout: {stdout}"
            );
            let last = stderr
                .lines()
                .rfind(|l| l.starts_with("{\"chainlog\""))
                .expect("a summary line on stderr");
            let v: Value = serde_json::from_str(last).unwrap();
            answers.push((v["chainlog"].clone(), stderr));
        }
        let (mut a, b) = (answers.remove(0), answers.remove(0));
        let mut b0 = b.0;
        // Where the answer came from differs by design.
        for k in ["source", "materialised"] {
            a.0[k] = Value::Null;
            b0[k] = Value::Null;
        }
        assert_eq!(a.0, b0, "index and full scan disagree");
        a
    }
}

#[test]
fn an_unknown_leaf_is_named_as_given() {
    let c = Case::new(&broken(60));
    for no_index in [false, true] {
        let mut args = vec!["resume", c.path(), "--leaf", "notauuid"];
        if no_index {
            args.push("--no-index");
        }
        let o = c.run(&args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains("message notauuid is not in the transcript"),
            "{args:?}: {stderr}"
        );
        args.insert(0, "--json");
        let o = c.run(&args);
        let err: Value = serde_json::from_slice(&o.stderr).unwrap();
        assert!(
            err["error"]
                .as_str()
                .unwrap()
                .contains("message notauuid is not"),
            "{err}"
        );
        assert_eq!(err["exitCode"], 1);
    }
    // A UUID that is not there is named as given too.
    let absent = "00000000-0000-4000-8000-0000000000AB";
    let o = c.run(&["resume", c.path(), "--leaf", absent]);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(&format!("message {absent} is not")),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn a_chain_break_shows_string_ids() {
    let c = Case::new(&broken(60));
    let (v, stderr) = c.resume_json(&[]);
    assert_eq!(v["leaf"], "a2", "{v}");
    let b = &v["chainBreak"];
    assert_eq!(b["child"], "u2", "{v}");
    assert_eq!(b["parent"], "gone", "{v}");
    assert_eq!(b["pos"]["line"], 3, "{v}");
    assert_eq!(v["bridges"], Value::Array(Vec::new()), "{v}");
    assert!(
        stderr.contains("chain break: parent gone of u2 is missing"),
        "{stderr}"
    );
    // Requested by its name, a non-UUID leaf resolves (and shows) the same.
    let (v, _) = c.resume_json(&["--leaf", "a2"]);
    assert_eq!(v["leaf"], "a2", "{v}");
    assert_eq!(v["chainBreak"]["parent"], "gone", "{v}");
}

#[test]
fn a_bridged_break_shows_string_ids() {
    let c = Case::new(&broken(1));
    let (v, stderr) = c.resume_json(&[]);
    assert_eq!(v["chainBreak"], Value::Null, "{v}");
    let bridges = v["bridges"].as_array().expect("an array");
    assert_eq!(bridges.len(), 1, "{v}");
    assert_eq!(bridges[0]["child"], "u2", "{v}");
    assert_eq!(bridges[0]["missing"], "gone", "{v}");
    assert_eq!(bridges[0]["to"], "a1", "{v}");
    assert!(
        stderr.contains("parent gone of u2 is missing; continued from a1"),
        "{stderr}"
    );
    // The strict walk reports the same break as a chain break.
    let (v, _) = c.resume_json(&["--no-bridge"]);
    assert_eq!(v["chainBreak"]["child"], "u2", "{v}");
    assert_eq!(v["chainBreak"]["parent"], "gone", "{v}");
}

#[test]
fn leaves_name_non_uuid_ids() {
    let c = Case::new(&broken(60));
    let o = c.run(&["--json", "leaves", c.path()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let leaves: Vec<Value> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = leaves.iter().map(|l| l["uuid"].as_str().unwrap()).collect();
    assert_eq!(names, ["a1", "a2"], "{leaves:?}");
    let o = c.run(&["leaves", c.path()]);
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("\nactive: a2 ("), "{text}");
}
