//! Inputs that are valid but unusual, unreadable items, huge lines and hostile content
//! (issue #8): each must leave the session resumable and be reported, never crash or hang.

mod util;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Output;

use util::chainlog;

fn id(n: u64) -> String {
    format!("00000000-0000-4000-8000-{n:012}")
}

/// A plain chain of `n` messages (1..=n), user/assistant alternating; `content(i)` replaces
/// message i's content.
fn chain(n: u64, content: impl Fn(u64) -> Option<String>) -> String {
    let mut out = String::new();
    for i in 1..=n {
        let parent = if i == 1 {
            "null".to_owned()
        } else {
            format!("\"{}\"", id(i - 1))
        };
        let ty = if i % 2 == 1 { "user" } else { "assistant" };
        let body = content(i).unwrap_or_else(|| format!(r#"[{{"type":"text","text":"m{i}"}}]"#));
        writeln!(
            out,
            r#"{{"parentUuid":{parent},"isSidechain":false,"type":"{ty}","message":{{"id":"msg{i}","role":"{ty}","content":{body}}},"uuid":"{}","timestamp":"2026-01-01T00:00:{i:02}.000Z","sessionId":"s"}}"#,
            id(i)
        )
        .unwrap();
    }
    out
}

struct Case {
    _dir: tempfile::TempDir,
    path: PathBuf,
    index: PathBuf,
}

fn case(text: &str) -> Case {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, text).unwrap();
    let index = dir.path().join("idx");
    Case {
        path,
        index,
        _dir: dir,
    }
}

impl Case {
    fn run(&self, args: &[&str]) -> Output {
        let mut all = vec!["--index-dir", self.index.to_str().unwrap()];
        all.extend_from_slice(args);
        chainlog(&all)
    }

    /// `resume --format F` through the index and with `--no-index`: both must succeed and agree.
    fn resume(&self, format: &str) -> (String, String) {
        let p = self.path.to_str().unwrap();
        let a = self.run(&["resume", p, "--format", format]);
        let b = self.run(&["resume", p, "--format", format, "--no-index"]);
        for o in [&a, &b] {
            assert!(
                o.status.success(),
                "resume failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        assert_eq!(a.stdout, b.stdout, "index and full scan disagree");
        (
            String::from_utf8(a.stdout).unwrap(),
            String::from_utf8_lossy(&a.stderr).into_owned(),
        )
    }
}

fn uuids(n: u64) -> String {
    (1..=n).map(|i| id(i) + "\n").collect()
}

fn verify_ok(c: &Case) {
    let v = c.run(&["verify", c.path.to_str().unwrap()]);
    assert!(
        v.status.success(),
        "verify: {}{}",
        String::from_utf8_lossy(&v.stdout),
        String::from_utf8_lossy(&v.stderr)
    );
}

#[test]
fn deep_json_keeps_the_session_resumable() {
    let deep = |d: usize| format!("{}\"x\"{}", "[".repeat(d), "]".repeat(d));
    for depth in [129, 200, 1_000_000] {
        let text = chain(6, |i| {
            (i == 3).then(|| {
                format!(
                    r#"[{{"type":"tool_use","id":"t","name":"X","input":{{"a":{}}}}}]"#,
                    deep(depth)
                )
            })
        });
        let c = case(&text);
        let (out, _) = c.resume("uuids");
        assert_eq!(out, uuids(6), "depth {depth}");
        // The deep line is handed over byte for byte.
        let (jsonl, _) = c.resume("jsonl");
        assert_eq!(jsonl, text, "depth {depth}");
        verify_ok(&c);
    }
}

#[test]
fn deep_json_on_a_projected_entry_is_reprinted_whole() {
    // Message 4 names a parent that is a legacy progress entry: resume re-points it, so the
    // line is re-serialised with its deep part in place.
    let depth = 300;
    let mut text = chain(4, |i| {
        (i == 4).then(|| {
            format!(
                r#"[{{"type":"text","text":"deep"}},{{"type":"tool_use","input":{}{}}}]"#,
                "[ ".repeat(depth),
                " ]".repeat(depth)
            )
        })
    });
    text = text.replace(
        &format!(
            r#""parentUuid":"{}","isSidechain":false,"type":"assistant""#,
            id(3)
        ),
        &format!(
            r#""parentUuid":"{}","isSidechain":false,"type":"assistant""#,
            id(99)
        ),
    );
    writeln!(
        text,
        r#"{{"type":"progress","uuid":"{}","parentUuid":"{}","timestamp":"2026-01-01T00:00:10.000Z"}}"#,
        id(99),
        id(3)
    )
    .unwrap();
    let c = case(&text);
    let (out, _) = c.resume("uuids");
    assert_eq!(out, uuids(4));
    let (jsonl, _) = c.resume("jsonl");
    let last = jsonl.lines().last().unwrap();
    let expected = format!(r#""parentUuid":"{}""#, id(3));
    assert!(last.contains(&expected), "{last:.200}");
    let inner = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    assert!(
        last.contains(&inner),
        "the deep part is printed compactly, whole"
    );
}

#[test]
fn unexpected_field_types_keep_the_message_and_are_reported() {
    let top = |extra: &str| {
        (
            r#""type":"assistant""#.to_owned(),
            format!(r#""type":"assistant",{extra}"#),
        )
    };
    let subs: Vec<((String, String), &str)> = vec![
        (top(r#""agentId":7"#), "agentId"),
        (top(r#""isSidechain":0"#), "isSidechain"),
        (top(r#""timestamp":1700000000000"#), "timestamp"),
        (top(r#""isMeta":"yes""#), "isMeta"),
        (top(r#""sessionId":{"a":1}"#), "sessionId"),
        (top(r#""logicalParentUuid":[1]"#), "logicalParentUuid"),
        (top(r#""subtype":false"#), "subtype"),
        (top(r#""uuid":"dup-first""#), "uuid"),
        ((r#""id":"msg2""#.into(), r#""id":5"#.into()), "message.id"),
        (
            (r#""text":"m2""#.into(), r#""text":123"#.into()),
            "message.content[].text",
        ),
        (
            (r#"{"type":"text""#.into(), r#"{"type":7"#.into()),
            "message.content[].type",
        ),
        (
            (
                r#""content":[{"type":"text","text":"m2"}]"#.into(),
                r#""content":4"#.into(),
            ),
            "message.content",
        ),
    ];
    for ((from, to), field) in &subs {
        let mut text = chain(5, |_| None);
        let start = text.find('\n').unwrap() + 1;
        let end = start + text[start..].find('\n').unwrap();
        let line2 = text[start..end].replacen(from.as_str(), to, 1);
        assert_ne!(line2, text[start..end], "{to}: substitution not applied");
        text.replace_range(start..end, &line2);
        let c = case(&text);
        let (out, err) = c.resume("uuids");
        assert_eq!(out, uuids(5), "{to}: the chain is cut:\n{err}");
        let at = format!("s.jsonl:2 (byte {start}): kept line: {field} ");
        assert!(err.contains(&at), "{to}: not reported as {at:?}:\n{err}");
        verify_ok(&c);
    }
}
