//! The writing verbs of the real binary: `append`, `fork`, `branch`, `title`, `tag`.

use crate::util;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

struct Dir {
    tmp: tempfile::TempDir,
}

impl Dir {
    fn claude(&self) -> PathBuf {
        self.tmp.path().join("claude")
    }
    fn work(&self) -> PathBuf {
        let w = self.tmp.path().join("work");
        std::fs::create_dir_all(&w).unwrap();
        w
    }
    /// Runs `chainlog ARGS --claude-dir … --index-dir …` with `stdin`.
    fn run(&self, args: &[&str], stdin: &str) -> Output {
        let mut child = Command::new(env!("CARGO_BIN_EXE_chainlog"))
            .args(args)
            .arg("--claude-dir")
            .arg(self.claude())
            .arg("--index-dir")
            .arg(self.tmp.path().join("index"))
            .current_dir(self.work())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // A command refused before it reads its input closes the pipe: not an error here.
        let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
        child.wait_with_output().unwrap()
    }
    fn ok(&self, args: &[&str], stdin: &str) -> Vec<String> {
        let out = self.run(args, stdin);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }
    fn session_path(&self, sid: &str) -> PathBuf {
        let work = std::fs::canonicalize(self.work()).unwrap();
        let key = chainlog::discovery::project_key(work.to_str().unwrap());
        self.claude()
            .join("projects")
            .join(key)
            .join(format!("{sid}.jsonl"))
    }
    fn resume(&self, sid: &str) -> Vec<String> {
        self.ok(&["resume", sid, "--format", "uuids"], "")
    }
}

fn dir() -> Dir {
    Dir {
        tmp: tempfile::tempdir().unwrap(),
    }
}

fn lines(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

const SID: &str = "7e57c0de-0000-4000-8000-000000000001";

const CONVERSATION: &str = concat!(
    r#"{"type":"user","message":{"role":"user","content":"list the files"}}"#,
    "\n",
    r#"{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]}}"#,
    "\n\n",
    r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"a b"}]}}"#,
    "\n",
    r#"{"type":"assistant","message":{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"a and b"}]}}"#,
    "\n",
);

fn with_session(d: &Dir) -> Vec<String> {
    let work = d.work();
    d.ok(
        &["append", SID, "--project", work.to_str().unwrap()],
        CONVERSATION,
    )
}

#[test]
fn append_creates_the_session_and_resume_reads_it_back() {
    let d = dir();
    let written = with_session(&d);
    assert_eq!(written.len(), 4);
    assert_eq!(d.resume(SID), written);
    let path = d.session_path(SID);
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let ls = lines(&path);
    assert_eq!(ls[2]["sourceToolAssistantUUID"], written[1].as_str());
    // Appending again continues the chain.
    let more = d.ok(
        &["append", SID],
        r#"{"type":"user","message":{"role":"user","content":"thanks"}}"#,
    );
    assert_eq!(more.len(), 1);
    assert_eq!(lines(&path)[4]["parentUuid"], written[3].as_str());
    assert_eq!(d.resume(SID).last(), more.last());
}

#[test]
fn invalid_input_writes_nothing_and_names_the_line() {
    let d = dir();
    with_session(&d);
    let path = d.session_path(SID);
    let before = std::fs::read(&path).unwrap();
    let input =
        "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n{not json\n";
    let out = d.run(&["append", SID], input);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("<stdin>:2"), "{err}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "nothing from the batch"
    );
    let out = d.run(&["append", SID], "{\"type\":\"progress\",\"uuid\":\"x\"}\n");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

/// Issue #33: `append` refuses what its own reader would skip or warn about (one rule, the
/// reader's): a message whose content is a number, a flag of the wrong type, a title that is
/// not text. Nothing of the batch is written, the line is named; what the reader takes is
/// written and read back without a warning.
#[test]
fn append_refuses_what_the_reader_would_warn_about() {
    let d = dir();
    with_session(&d);
    let path = d.session_path(SID);
    let before = std::fs::read(&path).unwrap();
    for (bad, field) in [
        (
            r#"{"type":"user","message":{"role":"user","content":42}}"#,
            "message.content",
        ),
        (
            r#"{"type":"user","message":{"role":"user","content":"x"},"isMeta":"yes"}"#,
            "isMeta",
        ),
        (r#"{"type":"custom-title","customTitle":5}"#, "customTitle"),
    ] {
        let input = format!(
            "{{\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"ok\"}}}}\n{bad}\n"
        );
        let out = d.run(&["append", SID], &input);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        assert!(
            err.contains("<stdin>:2") && err.contains(field),
            "{bad}: {err}"
        );
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "{bad}: nothing from the batch"
        );
    }
    d.ok(
        &["append", SID],
        r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"fine"}]}}"#,
    );
    let o = util::chainlog(&["resume", path.to_str().unwrap(), "--format", "uuids"]);
    assert!(o.status.success());
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("warning"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn append_to_an_agent_goes_to_its_file() {
    let d = dir();
    with_session(&d);
    let out = d.ok(
        &["append", SID, "--agent", "a0000000000000001"],
        r#"{"type":"user","message":{"role":"user","content":"sub task"}}"#,
    );
    assert_eq!(out.len(), 1);
    let agent = d
        .session_path(SID)
        .with_extension("")
        .join("subagents/agent-a0000000000000001.jsonl");
    let ls = lines(&agent);
    assert_eq!(ls[0]["isSidechain"], true);
    assert_eq!(ls[0]["agentId"], "a0000000000000001");
    let bad = d.run(&["append", SID, "--agent", "../x"], "");
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn title_and_tag_append_metadata_to_existing_sessions_only() {
    let d = dir();
    with_session(&d);
    d.ok(&["title", SID, "Listing files"], "");
    d.ok(&["tag", SID, "infra"], "");
    d.ok(&["tag", SID, ""], "");
    let ls = lines(&d.session_path(SID));
    let n = ls.len();
    assert_eq!(ls[n - 3]["type"], "custom-title");
    assert_eq!(ls[n - 3]["customTitle"], "Listing files");
    assert_eq!(ls[n - 2]["tag"], "infra");
    assert_eq!(ls[n - 1]["tag"], "");
    assert_eq!(ls[n - 1]["sessionId"], SID);
    // The title names the session now.
    assert_eq!(d.resume("Listing files").len(), 4);
    // Never a metadata-only session; ids are never paths.
    let other = "7e57c0de-0000-4000-8000-0000000000ff";
    assert_eq!(d.run(&["title", other, "x"], "").status.code(), Some(1));
    assert!(!d.session_path(other).exists());
    assert_eq!(d.run(&["tag", "../../x", "t"], "").status.code(), Some(2));
    // A write needs the session named exactly: no id prefix, no part of a title.
    let before = std::fs::read(d.session_path(SID)).unwrap();
    assert_eq!(d.run(&["tag", "Listing", "t"], "").status.code(), Some(1));
    assert_eq!(d.run(&["tag", &SID[..8], "t"], "").status.code(), Some(1));
    assert_eq!(std::fs::read(d.session_path(SID)).unwrap(), before);
}

#[test]
fn fork_copies_the_resume_view_into_a_new_session() {
    let d = dir();
    let written = with_session(&d);
    d.ok(&["title", SID, "Files"], "");
    let new = d.ok(&["fork", SID], "");
    assert_eq!(new.len(), 1);
    let fork = &new[0];
    assert_ne!(fork, SID);
    assert_eq!(d.resume(fork), written, "same uuids, same chain");
    let ls = lines(&d.session_path(fork));
    assert_eq!(ls[0]["type"], "custom-title", "metadata first");
    assert_eq!(ls[0]["customTitle"], "Files");
    for l in &ls[1..] {
        assert_eq!(l["sessionId"], fork.as_str());
        // As the client's `--fork-session`: the source id on assistant lines only (issue 31).
        if l["type"] == "assistant" {
            assert_eq!(l["requestSessionId"], SID);
        } else {
            assert!(l.get("requestSessionId").is_none(), "{l}");
        }
        assert!(l.get("forkedFrom").is_none());
    }
    // The title is stated again after the messages, as the client does after a turn.
    assert_eq!(ls.last().unwrap()["customTitle"], "Files");
    // Parents are kept.
    let src = lines(&d.session_path(SID));
    let ls: Vec<Value> = ls.into_iter().filter(|l| l.get("uuid").is_some()).collect();
    let ls = [vec![Value::Null], ls].concat();
    assert_eq!(ls[1..].len(), 4);
    for (a, b) in ls[1..].iter().zip(&src) {
        assert_eq!(a["parentUuid"], b["parentUuid"]);
        assert_eq!(a["timestamp"], b["timestamp"]);
    }
    // --at cuts the view.
    let cut = d.ok(&["fork", SID, "--at", &written[1]], "");
    assert_eq!(d.resume(&cut[0]), written[..2]);
    let off = d.run(
        &["fork", SID, "--at", "7e57c0de-0000-4000-8000-00000000beef"],
        "",
    );
    assert_eq!(off.status.code(), Some(1));
}

#[test]
fn branch_copies_the_active_chain_with_forked_from_and_a_branch_title() {
    let d = dir();
    let written = with_session(&d);
    let b1 = d.ok(&["branch", SID], "").remove(0);
    assert_eq!(d.resume(&b1), written);
    let ls = lines(&d.session_path(&b1));
    let msgs: Vec<&Value> = ls.iter().filter(|l| l.get("uuid").is_some()).collect();
    for (i, m) in msgs.iter().enumerate() {
        assert_eq!(m["forkedFrom"]["sessionId"], SID);
        assert_eq!(m["forkedFrom"]["messageUuid"], written[i].as_str());
        let parent = if i == 0 {
            Value::Null
        } else {
            written[i - 1].as_str().into()
        };
        assert_eq!(m["parentUuid"], parent, "re-chained");
    }
    let title = ls.last().unwrap();
    assert_eq!(title["customTitle"], "list the files (Branch)");
    let b2 = d.ok(&["branch", SID], "").remove(0);
    let t2 = lines(&d.session_path(&b2)).pop().unwrap();
    assert_eq!(t2["customTitle"], "list the files (Branch 2)");
    let named = d.ok(&["branch", SID, "experiment"], "").remove(0);
    let t3 = lines(&d.session_path(&named)).pop().unwrap();
    assert_eq!(t3["customTitle"], "experiment (Branch)");
    assert_eq!(d.resume("experiment (Branch)"), written);
}

#[test]
fn messages_carry_the_git_branch_of_the_project() {
    let d = dir();
    let work = d.work();
    std::fs::create_dir_all(work.join(".git")).unwrap();
    std::fs::write(work.join(".git/HEAD"), "ref: refs/heads/topic/login\n").unwrap();
    with_session(&d);
    let ls = lines(&d.session_path(SID));
    assert!(!ls.is_empty());
    for l in ls.iter().filter(|l| l.get("uuid").is_some()) {
        assert_eq!(l["gitBranch"], "topic/login", "{l}");
    }
}

/// Every file and link under `root` with what it is (a link's target, a hash of a file's
/// bytes).
fn snapshot(root: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let what = if m.file_type().is_symlink() {
                format!("link {}", std::fs::read_link(&p).unwrap().display())
            } else if m.is_dir() {
                stack.push(p.clone());
                "dir".into()
            } else if m.is_file() {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                std::fs::read(&p).unwrap().hash(&mut h);
                format!("file {:x}", h.finish())
            } else {
                format!("special {:o}", m.permissions().mode())
            };
            out.push((p, what));
        }
    }
    out.sort();
    out
}

use util::mkfifo;

const SID2: &str = "7e57c0de-0000-4000-8000-000000000002";
const SID3: &str = "7e57c0de-0000-4000-8000-000000000003";

#[test]
fn writers_never_write_through_links_or_into_special_files() {
    let d = dir();
    with_session(&d);
    let project = d.session_path(SID).parent().unwrap().to_path_buf();
    let outside = d.tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("file"), "keep\n").unwrap();
    let msg = r#"{"type":"user","message":{"role":"user","content":"x"}}"#;

    // A session file that is a link to a file outside, or a dangling link.
    std::os::unix::fs::symlink(outside.join("file"), project.join(format!("{SID2}.jsonl")))
        .unwrap();
    std::os::unix::fs::symlink(outside.join("new"), project.join(format!("{SID3}.jsonl"))).unwrap();
    // An agent file that is a link; a subagents folder that is a link.
    let sub = project.join(SID).join("subagents");
    std::fs::create_dir_all(&sub).unwrap();
    std::os::unix::fs::symlink(outside.join("file"), sub.join("agent-a1.jsonl")).unwrap();
    let other = "7e57c0de-0000-4000-8000-000000000004";
    d.ok(&["append", other], msg);
    std::fs::create_dir_all(project.join(other)).unwrap();
    std::os::unix::fs::symlink(&outside, project.join(other).join("subagents")).unwrap();
    // A FIFO where a session file would be.
    let fifo_sid = "7e57c0de-0000-4000-8000-000000000005";
    mkfifo(&project.join(format!("{fifo_sid}.jsonl")));

    let tree = || (snapshot(&d.claude()), snapshot(&outside));
    let before = tree();
    let cases: Vec<Vec<&str>> = vec![
        vec!["append", SID2],
        vec!["append", SID3],
        vec!["append", SID, "--agent", "a1"],
        vec!["append", other, "--agent", "a2"],
        vec!["append", fifo_sid],
        vec!["title", SID2, "t"],
        vec!["tag", SID3, "t"],
        vec!["fork", SID2],
        vec!["branch", SID3],
    ];
    for args in &cases {
        let out = d.run(args, msg);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{args:?} succeeded");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(tree() == before, "{args:?} changed the tree: {err}");
    }
    // The refusals say why.
    let err =
        String::from_utf8_lossy(&d.run(&["append", SID, "--agent", "a1"], msg).stderr).into_owned();
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(
        std::fs::read_to_string(outside.join("file")).unwrap(),
        "keep\n"
    );
    assert!(!outside.join("new").exists());
}

#[test]
fn ids_that_are_not_ids_are_refused_before_anything_is_written() {
    let d = dir();
    with_session(&d);
    let before = snapshot(&d.claude());
    let msg = r#"{"type":"user","message":{"role":"user","content":"x"}}"#;
    for agent in ["a\nb", ".", "..", "a/b", "a.b", " ", "é", ""] {
        let out = d.run(&["append", SID, "--agent", agent], msg);
        assert_eq!(out.status.code(), Some(2), "--agent {agent:?}");
        assert!(snapshot(&d.claude()) == before, "--agent {agent:?}");
    }
    for (key, id) in [
        ("uuid", "../../etc"),
        ("uuid", "a\nb"),
        ("parentUuid", "../x"),
        ("agentId", "."),
        ("sessionId", "x/y"),
    ] {
        let line = format!(
            r#"{{"type":"user","{key}":{},"message":{{"role":"user","content":"x"}}}}"#,
            serde_json::to_string(id).unwrap()
        );
        let out = d.run(&["append", SID], &line);
        assert_eq!(out.status.code(), Some(2), "{key} {id:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("<stdin>:1"), "{err}");
        assert!(snapshot(&d.claude()) == before, "{key} {id:?}");
    }
    // `agent-<id>` names agent `<id>`, as a target does.
    d.ok(&["append", SID, "--agent", "agent-abc"], msg);
    let sub = d.session_path(SID).with_extension("").join("subagents");
    assert!(sub.join("agent-abc.jsonl").is_file());
    assert!(
        sub.join("agent-abc.meta.json").is_file(),
        "the agent's meta file"
    );
    assert!(!sub.join("agent-agent-abc.jsonl").exists());
}

/// Writers over a random tree of transcripts, links (to files and folders inside and outside,
/// dangling), FIFOs and folders in place of files: every verb either writes a regular file
/// inside the project folder or is refused, and nothing outside it, nor any link, FIFO or
/// other transcript, changes.
#[test]
fn writers_over_a_random_tree_of_links_and_special_files_touch_only_regular_files() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2929);
    for round in 0..6 {
        let d = dir();
        with_session(&d);
        let project = d.session_path(SID).parent().unwrap().to_path_buf();
        let outside = d.tmp.path().join("outside");
        std::fs::create_dir_all(outside.join("dir")).unwrap();
        std::fs::write(outside.join("file"), "keep\n").unwrap();
        let sids: Vec<String> = (0..8)
            .map(|i| format!("7e57c0de-0000-4000-8000-0000000001{round}{i}"))
            .collect();
        for s in &sids {
            let p = project.join(format!("{s}.jsonl"));
            match rng.random_range(0..7) {
                0 => std::os::unix::fs::symlink(outside.join("file"), &p).unwrap(),
                1 => std::os::unix::fs::symlink(outside.join("gone"), &p).unwrap(),
                2 => std::os::unix::fs::symlink(d.session_path(SID), &p).unwrap(),
                3 => mkfifo(&p),
                4 => std::fs::create_dir(&p).unwrap(),
                5 => {
                    d.ok(
                        &["append", s],
                        r#"{"type":"user","message":{"role":"user","content":"y"}}"#,
                    );
                }
                _ => {}
            }
            let sub = project.join(s);
            match rng.random_range(0..4) {
                0 => std::os::unix::fs::symlink(outside.join("dir"), &sub).unwrap(),
                1 => {
                    std::fs::create_dir_all(&sub).unwrap();
                    std::os::unix::fs::symlink(outside.join("dir"), sub.join("subagents")).unwrap();
                }
                2 => {
                    std::fs::create_dir_all(sub.join("subagents")).unwrap();
                    std::os::unix::fs::symlink(
                        outside.join("file"),
                        sub.join("subagents/agent-a1.jsonl"),
                    )
                    .unwrap();
                }
                _ => {}
            }
        }
        let outside_before = snapshot(&outside);
        for _ in 0..12 {
            let s = sids[rng.random_range(0..sids.len())].as_str();
            let msg = r#"{"type":"user","message":{"role":"user","content":"z"}}"#;
            let args: Vec<&str> = match rng.random_range(0..6) {
                0 => vec!["append", s],
                1 => vec!["append", s, "--agent", "a1"],
                2 => vec!["title", s, "t"],
                3 => vec!["tag", s, "t"],
                4 => vec!["fork", s],
                _ => vec!["branch", s],
            };
            let links_before: Vec<_> = snapshot(&project)
                .into_iter()
                .filter(|(_, w)| !w.starts_with("file") && w != "dir")
                .collect();
            let out = d.run(&args, msg);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                matches!(out.status.code(), Some(0..=2)),
                "{args:?}: {:?} {err}",
                out.status
            );
            assert!(!err.contains("panicked"), "{args:?}: {err}");
            assert_eq!(snapshot(&outside), outside_before, "{args:?}: {err}");
            let links_after: Vec<_> = snapshot(&project)
                .into_iter()
                .filter(|(_, w)| !w.starts_with("file") && w != "dir")
                .collect();
            assert_eq!(links_after, links_before, "{args:?}: {err}");
        }
    }
}
