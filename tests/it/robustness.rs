//! Inputs that are valid but unusual, unreadable items, huge lines and hostile content
//! (issue #8): each must leave the session resumable and be reported, never crash or hang.

use crate::util;

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

#[test]
fn text_format_writes_no_terminal_escapes() {
    let hostile = r#""\u001b]0;owned\u0007\u001b[2J\r\u009bline\tone\nline two""#;
    let text = chain(3, |i| (i == 2).then(|| hostile.to_owned()));
    let c = case(&text);
    let (out, _) = c.resume("text");
    assert!(
        !out.bytes().any(|b| b == 0x1b || b == 0x07 || b == b'\r'),
        "raw control characters in: {out:?}"
    );
    assert!(!out.contains('\u{9b}'), "a raw C1 CSI in: {out:?}");
    assert!(
        out.contains("\\u{1b}]0;owned\\u{7}\\u{1b}[2J\\u{d}\\u{9b}line\tone\n"),
        "{out}"
    );
}

fn chmod(path: &std::path::Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn unreadable_items_are_skipped_and_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let sids = [
        "11111111-1111-4111-8111-111111111111",
        "22222222-2222-4222-8222-222222222222",
        "33333333-3333-4333-8333-333333333333",
    ];
    for project in ["-p", "-q"] {
        let p = dir.join("c/projects").join(project);
        std::fs::create_dir_all(&p).unwrap();
        for (n, sid) in sids.iter().enumerate() {
            std::fs::write(
                p.join(format!("{sid}.jsonl")),
                format!(
                    r#"{{"parentUuid":null,"type":"user","cwd":"/p","message":{{"role":"user","content":"hello {n}"}},"uuid":"{}","timestamp":"2025-01-0{}T00:00:00.000Z","sessionId":"{sid}"}}"#,
                    id(n as u64 + 1),
                    n + 1
                ) + "\n",
            )
            .unwrap();
        }
    }
    let subagents = dir.join("c/projects/-p").join(sids[1]).join("subagents");
    std::fs::create_dir_all(&subagents).unwrap();
    // Everything readable by anyone, then three items by no one.
    for d in [dir, &dir.join("c"), &dir.join("c/projects")] {
        chmod(d, 0o755);
    }
    for project in ["-p", "-q"] {
        let p = dir.join("c/projects").join(project);
        chmod(&p, 0o755);
        for sid in sids {
            chmod(&p.join(format!("{sid}.jsonl")), 0o644);
        }
    }
    chmod(&dir.join("c/projects/-p").join(sids[1]), 0o755);
    std::fs::create_dir(dir.join("cache")).unwrap();
    chmod(&dir.join("cache"), 0o777);
    let unreadable = dir.join("c/projects/-p").join(format!("{}.jsonl", sids[0]));
    chmod(&unreadable, 0o000);
    chmod(&subagents, 0o000);
    chmod(&dir.join("c/projects/-q"), 0o000);

    let claude = dir.join("c");
    let project = claude.join("projects/-p");
    let (claude, project) = (claude.to_str().unwrap(), project.to_str().unwrap());
    let ls = util::run_unprivileged(
        dir,
        &["--json", "--claude-dir", claude, "ls", "--project", project],
    );
    let all = util::run_unprivileged(dir, &["--json", "--claude-dir", claude, "ls", "--all"]);
    let cont = util::run_unprivileged(
        dir,
        &[
            "--claude-dir",
            claude,
            "continue",
            "--project",
            project,
            "--format",
            "uuids",
        ],
    );
    for (what, o) in [("ls", &ls), ("ls --all", &all), ("continue", &cont)] {
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{what} failed: {err}");
        for item in [unreadable.to_str().unwrap(), subagents.to_str().unwrap()] {
            assert!(
                err.contains(&format!("skipped (cannot be read): {item}")),
                "{what}: {item} not reported:\n{err}"
            );
        }
    }
    let listed = |o: &Output| {
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        sids.iter().map(|s| out.contains(s)).collect::<Vec<_>>()
    };
    assert_eq!(listed(&ls), [false, true, true]);
    assert_eq!(listed(&all), [false, true, true]);
    assert!(String::from_utf8_lossy(&all.stderr).contains("-q: Permission denied"));
    assert_eq!(String::from_utf8_lossy(&cont.stdout), id(3) + "\n");
    // Let the temporary folder be removed.
    for p in [&unreadable, &subagents, &dir.join("c/projects/-q")] {
        chmod(p, 0o755);
    }
}

/// Peak resident memory (KiB) of `chainlog args`, measured by `/usr/bin/time -f %M`.
fn peak_rss_kib(args: &[&str]) -> (u64, Output) {
    let out = std::process::Command::new("/usr/bin/time")
        .args(["-f", "peak-rss-kib=%M", env!("CARGO_BIN_EXE_chainlog")])
        .args(args)
        .env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("/usr/bin/time (GNU time) measures peak memory");
    let err = String::from_utf8_lossy(&out.stderr);
    let kib = err
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("peak-rss-kib="))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS in: {err}"));
    (kib, out)
}

const MEMORY_BOUND_KIB: u64 = 256 << 10;

/// What a process may hold with one line of up to 128 MiB: the framer's buffer grows to it
/// once (140–148 MB measured); a copy of a 100 MB line beside it (as when the parsing stage
/// copied every line into its blocks) peaked at 250 MB.
const LONG_LINE_BOUND_KIB: u64 = 192 << 10;

/// A first index holds a small record per message while it derives the projections, and
/// redb's dirty pages are written out past a bounded cache: 150,000 messages (40 MB, in
/// conversations of 100 so that the resume view `index` prepares is short) are indexed and
/// rebuilt in less than 64 MiB (51 MiB measured; with redb's default cache, which keeps every
/// dirty page of the one write transaction, 74 MiB; with full rows held for the derivation,
/// 70 MiB).
#[test]
fn a_first_index_does_not_hold_the_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("projects/-p");
    std::fs::create_dir_all(&project).unwrap();
    let path = project.join("cccccccc-cccc-4ccc-8ccc-cccccccccccc.jsonl");
    let text: String = chain(150_000, |_| None)
        .lines()
        .zip(1u64..)
        .map(|(line, i)| {
            // Every 100th message starts a new conversation.
            let line = if i % 100 == 1 && i > 1 {
                line.replacen(
                    &format!(r#""parentUuid":"{}""#, id(i - 1)),
                    r#""parentUuid":null"#,
                    1,
                )
            } else {
                line.to_owned()
            };
            line + "\n"
        })
        .collect();
    std::fs::write(&path, text).unwrap();
    let idx = tmp.path().join("idx");
    let (idx, file) = (idx.to_str().unwrap(), path.to_str().unwrap());
    for command in ["index", "rebuild"] {
        let (kib, o) = peak_rss_kib(&["--index-dir", idx, command, file]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(kib < 64 << 10, "{command} peaked at {kib} KiB");
    }
    let o = chainlog(&["--index-dir", idx, "resume", file, "--format", "uuids"]);
    assert!(o.status.success());
    let view: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(view.len(), 100);
    assert_eq!(view[99], id(150_000));
}

/// A long resume view (150,000 messages, 40 MB) is stored by `chainlog index` and by a first
/// resume without holding its parsed lines: how the conversation ends is decided from the tool
/// ids of every line, parsed one at a time, and the last lines. (Parsed all at once, as before,
/// a first resume held 609 MB and `index` left the view to it.)
#[test]
fn a_long_view_is_stored_without_holding_its_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("projects/-p");
    std::fs::create_dir_all(&project).unwrap();
    let path = project.join("dddddddd-dddd-4ddd-8ddd-dddddddddddd.jsonl");
    std::fs::write(&path, chain(150_000, |_| None)).unwrap();
    let file = path.to_str().unwrap();
    for (first, idx) in [("index", "idx-a"), ("resume", "idx-b")] {
        let idx = tmp.path().join(idx);
        let idx = idx.to_str().unwrap();
        let (kib, o) = if first == "index" {
            peak_rss_kib(&["--index-dir", idx, "index", file])
        } else {
            peak_rss_kib(&["--index-dir", idx, "resume", file, "--format", "uuids"])
        };
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(kib < MEMORY_BOUND_KIB, "{first} peaked at {kib} KiB");
        // The next resume reads the stored view.
        let o = chainlog(&[
            "--index-dir",
            idx,
            "--json",
            "resume",
            file,
            "--format",
            "uuids",
        ]);
        assert!(o.status.success());
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(out.lines().count(), 150_000, "{first}");
        let trailer = util::resume_trailer(&o);
        assert_eq!(trailer["chainlog"]["materialised"], true, "{first}");
        assert_eq!(trailer["chainlog"]["interrupt"], "none", "{first}");
    }
}

#[test]
fn gen_memory_does_not_follow_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("g.jsonl");
    let (kib, o) = peak_rss_kib(&["gen", out.to_str().unwrap(), "--bytes", "300000000"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::metadata(&out).unwrap().len() >= 300_000_000);
    assert!(kib < MEMORY_BOUND_KIB, "gen of 300 MB peaked at {kib} KiB");
}

#[test]
fn path_arguments_that_are_not_transcripts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let index = dir.join("idx");
    let passwd = dir.join("passwd");
    std::fs::write(
        &passwd,
        "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/:/bin/sh\n",
    )
    .unwrap();
    let fifo = dir.join("fifo.jsonl");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let resume = |arg: &std::path::Path| {
        chainlog(&[
            "--index-dir",
            index.to_str().unwrap(),
            "resume",
            arg.to_str().unwrap(),
        ])
    };
    let o = resume(&passwd);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("not a transcript"), "{err}");
    assert!(
        std::fs::read_dir(&index).map_or(true, |d| d.count() == 0),
        "a sidecar was created for a file that is not a transcript"
    );
    for (arg, says) in [
        (dir.join("missing.jsonl"), "no such transcript file"),
        (dir.join("sub/missing.jsonl"), "no such transcript file"),
        (dir.to_path_buf(), "a directory"),
        (fifo.clone(), "not a regular file"),
    ] {
        let o = resume(&arg);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{}: {err}", arg.display());
        assert!(err.contains(says), "{}: {err}", arg.display());
    }
}

#[test]
fn memory_does_not_follow_the_longest_line() {
    use std::io::{Seek, SeekFrom, Write};
    let tmp = tempfile::tempdir().unwrap();
    let project = |name: &str| {
        let p = tmp.path().join(name).join("projects/-p");
        std::fs::create_dir_all(&p).unwrap();
        p
    };
    // 1: a torn tail of 600 MB of NULs (sparse), never a line.
    let torn = project("torn").join("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa.jsonl");
    let mut f = std::fs::File::create(&torn).unwrap();
    f.write_all(chain(4, |_| None).as_bytes()).unwrap();
    let len = f.metadata().unwrap().len();
    f.set_len(len + (600 << 20)).unwrap();
    // 2: a 100 MB message (parsed), then a 300 MB line of NULs (too long to hold: a bad line)
    // and one more message after it, which must still be read.
    let huge = project("huge").join("bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb.jsonl");
    let big = format!("\"{}\"", "x".repeat(100 << 20));
    let text = chain(3, |i| (i == 2).then(|| big.clone()));
    let (head, last) = text.trim_end().rsplit_once('\n').unwrap();
    let mut f = std::fs::File::create(&huge).unwrap();
    writeln!(f, "{head}").unwrap();
    let at = f.stream_position().unwrap();
    f.seek(SeekFrom::Start(at + (300 << 20))).unwrap();
    writeln!(f).unwrap();
    writeln!(f, "{last}").unwrap();
    drop(f);
    for (claude, path) in [("torn", &torn), ("huge", &huge)] {
        let claude = tmp.path().join(claude);
        let index = claude.join("idx");
        let project = claude.join("projects/-p");
        let (dir, idx, proj) = (
            claude.to_str().unwrap(),
            index.to_str().unwrap(),
            project.to_str().unwrap(),
        );
        for args in [
            &[
                "--claude-dir",
                dir,
                "--index-dir",
                idx,
                "ls",
                "--project",
                proj,
            ][..],
            &["--claude-dir", dir, "--index-dir", idx, "index", proj],
            &["--claude-dir", dir, "--index-dir", idx, "rebuild", proj],
        ] {
            let (kib, o) = peak_rss_kib(args);
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(o.status.success(), "{args:?}: {err}");
            assert!(kib < LONG_LINE_BOUND_KIB, "{args:?} peaked at {kib} KiB");
        }
        let o = chainlog(&[
            "--index-dir",
            idx,
            "resume",
            path.to_str().unwrap(),
            "--format",
            "uuids",
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{err}");
        let n = if claude.ends_with("torn") { 4 } else { 3 };
        assert_eq!(String::from_utf8_lossy(&o.stdout), uuids(n), "{err}");
        if n == 3 {
            assert!(err.contains("skipped line: longer than 128 MiB"), "{err}");
        }
    }
}

#[test]
fn resume_racing_a_tail_truncation_answers() {
    use std::sync::atomic::{AtomicBool, Ordering};
    // Long lines make the window between resolving and reading wide.
    let pad = format!("\"{}\"", "p".repeat(20_000));
    let text = chain(120, |i| (i % 2 == 0).then(|| pad.clone()));
    let c = case(&text);
    let last = text.trim_end().rsplit_once('\n').unwrap().0.len() as u64 + 1;
    let full = text.len() as u64;
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        // A tombstone writer: cut the last line off, put it back, again and again.
        s.spawn(|| {
            let tail = text.as_bytes()[usize::try_from(last).unwrap()..].to_vec();
            while !stop.load(Ordering::Relaxed) {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&c.path)
                    .unwrap();
                f.set_len(last).unwrap();
                std::thread::sleep(std::time::Duration::from_micros(300));
                std::os::unix::fs::FileExt::write_all_at(&f, &tail, last).unwrap();
                assert_eq!(f.metadata().unwrap().len(), full);
                std::thread::sleep(std::time::Duration::from_micros(300));
            }
        });
        let p = c.path.to_str().unwrap();
        let (whole, cut) = (uuids(120), uuids(119));
        let mut failures = Vec::new();
        for round in 0..60 {
            let extra: &[&str] = if round % 3 == 0 { &["--no-index"] } else { &[] };
            let mut args = vec!["resume", p, "--format", "uuids"];
            args.extend_from_slice(extra);
            let o = c.run(&args);
            let out = String::from_utf8_lossy(&o.stdout);
            let err = String::from_utf8_lossy(&o.stderr);
            if !o.status.success() || (out != whole && out != cut) {
                failures.push(format!("round {round}: {} {err}", o.status));
            }
        }
        stop.store(true, Ordering::Relaxed);
        assert!(
            failures.is_empty(),
            "{} of 60 failed:\n{}",
            failures.len(),
            failures.join("\n")
        );
    });
}

#[test]
fn warm_resume_summarises_bad_lines() {
    // #8 item 7: a transcript with many bad lines made every warm resume hold every bad-line
    // record (1M lines: about 190 MB) and hand all of them to the command. The index serves
    // the first few with their position and a count instead, without reading the others.
    const BAD: usize = 5000;
    let mut text = chain(4, |_| None);
    for i in 0..BAD {
        writeln!(text, "not json {i}").unwrap();
    }
    let c = case(&text);
    let store = chainlog::Store::new(&c.index);
    store.catch_up(&c.path).unwrap();
    let t = chainlog::reference::Transcript::open(&c.path).unwrap();
    assert_eq!(t.bad_lines.len(), BAD);
    let a = store
        .resolve(&c.path, chainlog::reference::ResolveOptions::default())
        .unwrap();
    assert_eq!(a.source, chainlog::Source::Index);
    assert!(
        a.bad_lines.len() <= 100,
        "a warm resume holds {} bad-line records",
        a.bad_lines.len()
    );
    assert_eq!(a.bad_lines[..], t.bad_lines[..a.bad_lines.len()]);
    assert_eq!(a.bad_line_count, BAD as u64);
    // The full scan's answer is summarised the same way.
    let r = chainlog::Store::reference(
        &c.path,
        chainlog::reference::ResolveOptions::default(),
        String::new(),
    )
    .unwrap();
    assert_eq!((&r.bad_lines, r.bad_line_count), (&a.bad_lines, BAD as u64));

    let (out, err) = c.resume("uuids");
    assert_eq!(out, uuids(4));
    let warnings = err.lines().filter(|l| l.contains("warning")).count();
    assert!(warnings <= 11, "{warnings} warning lines");
    assert!(
        err.contains("s.jsonl:5 (byte "),
        "the first bad line, placed: {err}"
    );
    assert!(
        err.contains(&format!("… and {} more lines with problems", BAD - 10)),
        "{err}"
    );
}
