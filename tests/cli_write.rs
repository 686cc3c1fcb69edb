//! The writing verbs of the real binary: `append`, `fork`, `branch`, `title`, `tag`.

mod util;

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
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
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
        assert_eq!(l["requestSessionId"], SID);
        assert!(l.get("forkedFrom").is_none());
    }
    // Parents are kept.
    let src = lines(&d.session_path(SID));
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
