//! The catalog (SPEC A3, A6, A7, B3, B5): listing, titles, targets and sub-agents, over the real
//! transcripts vendored in `fixtures/real/`, over a generated tree of thousands of sessions, and
//! through the built binary.
//!
//! Expected values for the real transcripts were read from the files by hand (and with a
//! short Python script applying SPEC A6), not taken from chainlog's output.

use crate::util;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use chainlog::Error;
use chainlog::ListOptions;
use chainlog::SessionFacts;
use chainlog::SortBy;
use chainlog::Target;
use chainlog::discovery::AgentLayout;
use chainlog::discovery::list_sessions;
use chainlog::discovery::project_key;
use chainlog::discovery::resolve_target;
use chainlog::discovery::scan_session_facts;
use chainlog::discovery::session_agents;
use serde_json::{Value, json};

// ------------------------------------------------------------------------------------------
// Harness
// ------------------------------------------------------------------------------------------

/// The real transcripts (`util::real_corpus`: the vendored copy or `$CHAINLOG_REAL_TRANSCRIPTS`).
fn real_root() -> PathBuf {
    util::real_corpus()
}

fn list(claude: &Path, opts: &ListOptions) -> Vec<SessionFacts> {
    list_sessions(claude, opts, &mut scan_session_facts).unwrap()
}

fn all() -> ListOptions {
    ListOptions {
        all: true,
        ..ListOptions::default()
    }
}

fn ids(list: &[SessionFacts]) -> Vec<&str> {
    list.iter().map(|f| &f.session_id[..8]).collect()
}

fn by_id<'a>(list: &'a [SessionFacts], prefix: &str) -> &'a SessionFacts {
    list.iter()
        .find(|f| f.session_id.starts_with(prefix))
        .unwrap_or_else(|| panic!("{prefix} not listed"))
}

/// A caching facts callback: what an index does, reduced to a map. Counts calls.
struct Cache {
    facts: HashMap<PathBuf, SessionFacts>,
    scans: usize,
}

impl Cache {
    fn new() -> Self {
        Cache {
            facts: HashMap::new(),
            scans: 0,
        }
    }

    fn get(&mut self, path: &Path) -> chainlog::Result<SessionFacts> {
        if let Some(f) = self.facts.get(path) {
            return Ok(f.clone());
        }
        self.scans += 1;
        let f = scan_session_facts(path)?;
        self.facts.insert(path.to_path_buf(), f.clone());
        Ok(f)
    }

    fn list(&mut self, claude: &Path, opts: &ListOptions) -> Vec<SessionFacts> {
        list_sessions(claude, opts, &mut |p| self.get(p)).unwrap()
    }
}

// ------------------------------------------------------------------------------------------
// Real transcripts
// ------------------------------------------------------------------------------------------

/// A copy of the 2.0 claude dir, so the two files without messages (ordered by mtime) get known
/// mtimes: a git checkout gives every file the same one.
fn pai_copy_with_mtimes(tmp: &Path) -> PathBuf {
    let claude = tmp.join("personal-ai-infrastructure");
    util::copy_tree(&real_root().join("personal-ai-infrastructure"), &claude);
    let project = claude.join("projects/-home-jenkins-Personal-AI-Infrastructure");
    for (stem, secs) in [
        ("98098c74-435a-42ec-ad08-ae58c7559232", 2_000),
        ("d3d4e0f8-bcb2-4597-8d7e-3fbcb2d9402b", 1_000),
    ] {
        let path = project.join(format!("{stem}.jsonl"));
        let f = std::fs::File::options().write(true).open(path).unwrap();
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000 + secs);
        f.set_modified(t).unwrap();
    }
    claude
}

#[test]
fn real_2_0_project_titles_counts_order_and_agents() {
    let tmp = tempfile::tempdir().unwrap();
    let claude = pai_copy_with_mtimes(tmp.path());
    let sessions = list(&claude, &all());
    // Newest last message first; the empty and the summary-only file (no messages) last.
    assert_eq!(
        ids(&sessions),
        [
            "155715ec", "7de1dd02", "5eac5945", "e8c742ee", "98098c74", "d3d4e0f8"
        ]
    );
    let titles: Vec<&str> = sessions.iter().map(|f| f.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            // Summaries written into *other* files (d3d4e0f8, 7de1dd02) name these leaves; the
            // one for 155715ec names the stop_hook_summary after the leaf.
            "Observability Skill Setup and Dashboard Launch",
            // Only `/plugin`, `/mcp`, `/exit` without args and command output: no prompt.
            "(session)",
            "Fixed PAI_DIR placeholder startup hook errors",
            "(session)",
            "(session)",
            "(session)",
        ]
    );
    let counts: Vec<u64> = sessions.iter().map(|f| f.message_count).collect();
    assert_eq!(counts, [7, 6, 7, 2, 0, 0]);
    // The two 2.0.x top-level agent files attach by the sessionId inside them.
    let agents: Vec<u64> = sessions.iter().map(|f| f.agents).collect();
    assert_eq!(agents, [1, 1, 0, 0, 0, 0]);

    let obs = by_id(&sessions, "155715ec");
    assert_eq!(
        obs.first_prompt.as_deref(),
        Some("What skills are available?")
    );
    assert_eq!(obs.summary.as_deref(), Some(obs.title.as_str()));
    assert_eq!(obs.created.as_deref(), Some("2025-12-17T01:50:28.491Z"));
    assert_eq!(obs.modified.as_deref(), Some("2025-12-17T01:55:03.156Z"));
    assert_eq!(obs.git_branch.as_deref(), Some("main"));
    assert_eq!(
        obs.cwd.as_deref(),
        Some("/home/jenkins/Personal_AI_Infrastructure")
    );
    assert_eq!(obs.bytes, 36445);
    assert_eq!(
        obs.leaf_uuid.as_deref(),
        Some("2eecba81-edfa-4c53-9766-469f5ffaabff")
    );
    assert_eq!(obs.project_key, "-home-jenkins-Personal-AI-Infrastructure");

    let fix = by_id(&sessions, "5eac5945");
    assert_eq!(
        fix.first_prompt.as_deref(),
        Some(
            "we are getting these errors please resolve:   Welcome to Opus 4.5   ⎿  SessionStart:startup hook error   ⎿  SessionStart:startup hook error   ⎿  SessionStart:startup hook error"
        )
    );

    let empty = by_id(&sessions, "98098c74");
    assert_eq!(
        (empty.bytes, empty.created.as_deref(), empty.cwd.as_deref()),
        (0, None, None)
    );
    let summary_only = by_id(&sessions, "d3d4e0f8");
    assert_eq!(summary_only.bytes, 252);
    assert_eq!(summary_only.leaf_uuid, None);
    assert_eq!(
        summary_only.summary, None,
        "its summaries describe other files"
    );

    // The cwd form of the project finds the same directory (key of SPEC A3).
    assert_eq!(
        project_key("/home/jenkins/Personal_AI_Infrastructure"),
        "-home-jenkins-Personal-AI-Infrastructure"
    );
    let by_cwd = list(
        &claude,
        &ListOptions {
            project: Some("/home/jenkins/Personal_AI_Infrastructure".into()),
            ..ListOptions::default()
        },
    );
    assert_eq!(ids(&by_cwd), ids(&sessions));

    // `chainlog agents` and the count agree; the agent files resolve as agent targets.
    let a = session_agents(&obs.path).unwrap();
    assert_eq!(a.len(), 1);
    assert_eq!(
        (a[0].agent_id.as_str(), a[0].layout, a[0].message_count),
        ("a4e3ca2", AgentLayout::TopLevel, 2)
    );
    assert_eq!(
        (a[0].description.as_deref(), a[0].status.as_str()),
        (Some("Warmup"), "completed")
    );
    let other = session_agents(&by_id(&sessions, "7de1dd02").path).unwrap();
    assert_eq!(other[0].agent_id, "af374ee");
    for arg in ["a4e3ca2", "agent-a4e3ca2"] {
        let t = resolve_target(&claude, None, arg, &mut scan_session_facts).unwrap();
        assert!(
            matches!(&t, Target::Agent { agent_id, layout: AgentLayout::TopLevel, .. } if agent_id == "a4e3ca2"),
            "{t:?}"
        );
    }
}

#[test]
fn real_1_0_project_inline_agents_and_cross_file_summary() {
    let root = real_root();
    let claude = root.join("claude-code-viewer");
    let project = claude.join("projects/sample-project");
    let sessions = list(
        &claude,
        &ListOptions {
            project: Some(project.clone()),
            ..ListOptions::default()
        },
    );
    assert_eq!(ids(&sessions), ["5c0375b4", "fe5e1c67", "1af7fc5e"]);
    let expect = [
        (
            "5c0375b4",
            "/orchestrator @CLAUDE.md を最新の状態にアップデートしてください",
            4,
            2,
            Some("main"),
        ),
        (
            "fe5e1c67",
            "/orchestrator create TODO app by Next.js",
            9,
            5,
            None,
        ),
        // `/init` has no args; the summary at the top of fe5e1c67 names this file's last message.
        (
            "1af7fc5e",
            "Empty Repo Setup: CLAUDE.md Foundation Created",
            4,
            0,
            None,
        ),
    ];
    for (f, (id, title, count, agents, branch)) in sessions.iter().zip(expect) {
        assert!(f.session_id.starts_with(id));
        assert_eq!(f.title, title, "{id}");
        assert_eq!(f.message_count, count, "{id}");
        assert_eq!(f.agents, agents, "{id}");
        assert_eq!(f.inline_agents, agents, "{id}");
        assert_eq!(f.git_branch.as_deref(), branch, "{id}");
        assert_eq!(f.cwd.as_deref(), Some("/path/to/Demo"));
    }
    assert_eq!(by_id(&sessions, "1af7fc5e").first_prompt, None);
    // The cwd written in these files does not map to the folder: a cwd lookup finds nothing.
    let by_cwd = list(
        &claude,
        &ListOptions {
            project: Some("/path/to/Demo".into()),
            ..ListOptions::default()
        },
    );
    assert!(by_cwd.is_empty());

    let agents = session_agents(&by_id(&sessions, "fe5e1c67").path).unwrap();
    assert_eq!(agents.len(), 5);
    assert!(agents.iter().all(|a| a.layout == AgentLayout::Inline));
    let mut counts: Vec<u64> = agents.iter().map(|a| a.message_count).collect();
    counts.sort_unstable();
    assert_eq!(counts, [5, 17, 20, 20, 31]);
    assert!(agents.iter().any(|a| {
        a.description
            .as_deref()
            .unwrap_or("")
            .starts_with("Create React components for the TODO app in a components/ directory: 1.")
    }));
}

#[test]
fn real_2_1_projects_order_filters_and_lookups() {
    let root = real_root();
    let claude = root.join("claude-reliability");
    let by_modified = list(&claude, &all());
    assert_eq!(
        ids(&by_modified),
        [
            "e4743781", "645d338e", "cb88ae13", "063004b7", "c7d3d95c", "de3b8b19", "c64cc478"
        ]
    );
    let by_created = list(
        &claude,
        &ListOptions {
            sort: SortBy::Created,
            ..all()
        },
    );
    assert_eq!(
        ids(&by_created),
        [
            "e4743781", "645d338e", "cb88ae13", "063004b7", "c7d3d95c", "de3b8b19", "c64cc478"
        ]
    );
    let port = by_id(&by_modified, "c7d3d95c");
    assert_eq!(
        port.title,
        "Port this Python project to Rust. Create a standalone Rust library (no Python bindings needed). Delete all the Python source files when you're done (but keep the Justfile - update it to run Rust tests…"
    );
    assert_eq!(port.title.chars().count(), 201);
    assert_eq!(port.message_count, 17);
    assert_eq!(port.created.as_deref(), Some("2026-01-21T06:20:46.065Z"));
    assert_eq!(port.modified.as_deref(), Some("2026-01-21T06:24:31.843Z"));
    assert_eq!(by_id(&by_modified, "c64cc478").message_count, 9);
    assert_eq!(
        by_id(&by_modified, "645d338e").title,
        "I've reviewed my work and it's complete. Stop now."
    );

    let master = list(
        &claude,
        &ListOptions {
            branch: Some("master".into()),
            ..all()
        },
    );
    assert_eq!(ids(&master), ["cb88ae13", "c7d3d95c", "c64cc478"]);
    let search = list(
        &claude,
        &ListOptions {
            search: Some("DOCSTRING".into()),
            ..all()
        },
    );
    assert_eq!(ids(&search), ["e4743781"]);
    let limited = list(
        &claude,
        &ListOptions {
            limit: Some(2),
            ..all()
        },
    );
    assert_eq!(ids(&limited), ["e4743781", "645d338e"]);
    let one_project = list(
        &claude,
        &ListOptions {
            project: Some("/tmp/tmpqwh7888i".into()),
            ..ListOptions::default()
        },
    );
    assert_eq!(ids(&one_project), ["c7d3d95c"]);

    // A session id is found in any project (the current directory has none of them).
    let t = resolve_target(
        &claude,
        None,
        "C7D3D95C-57F0-4359-8F4B-926A9BEF5A3F",
        &mut scan_session_facts,
    )
    .unwrap();
    assert_eq!(t.path(), port.path);
    let t = resolve_target(
        &claude,
        None,
        "I've reviewed my work and it's complete. Stop now.",
        &mut scan_session_facts,
    )
    .unwrap();
    assert!(
        matches!(t, Target::Session { ref session_id, .. } if session_id.starts_with("645d338e"))
    );
}

#[test]
fn real_facts_through_a_cache_equal_the_scan() {
    let root = real_root();
    for name in [
        "personal-ai-infrastructure",
        "claude-code-viewer",
        "claude-reliability",
    ] {
        let claude = root.join(name);
        let mut cache = Cache::new();
        let first = cache.list(&claude, &all());
        let scans = cache.scans;
        let again = cache.list(&claude, &all());
        assert_eq!(first, again, "{name}");
        assert_eq!(
            cache.scans, scans,
            "{name}: the second listing read no transcript"
        );
        assert_eq!(first, list(&claude, &all()), "{name}");
    }
}

// ------------------------------------------------------------------------------------------
// A generated tree
// ------------------------------------------------------------------------------------------

const CWD: &str = "/work/gen.proj";

fn uuid(session: usize, n: usize) -> String {
    format!("{session:08x}-0000-4000-8000-{n:012x}")
}

fn sid(i: usize) -> String {
    format!("{i:08x}-1111-4111-8111-111111111111")
}

fn ts(i: usize, step: usize) -> String {
    let secs = i * 60 + step;
    format!(
        "2025-03-{:02}T{:02}:{:02}:{:02}.000Z",
        1 + secs / 86_400,
        secs / 3600 % 24,
        secs / 60 % 60,
        secs % 60
    )
}

/// Writes sessions line by line with plain `serde_json` values.
struct Writer {
    session: String,
    i: usize,
    lines: Vec<Value>,
    last: Option<String>,
    n: usize,
    extra: serde_json::Map<String, Value>,
    branch: String,
}

impl Writer {
    fn new(i: usize) -> Self {
        Writer {
            session: sid(i),
            i,
            lines: Vec::new(),
            last: None,
            n: 0,
            extra: serde_json::Map::new(),
            branch: "main".into(),
        }
    }

    fn message(&mut self, ty: &str, content: &Value, flags: &[(&str, Value)]) -> String {
        self.n += 1;
        let id = uuid(self.i, self.n);
        let mut v = json!({
            "parentUuid": self.last,
            "isSidechain": false,
            "userType": "external",
            "cwd": CWD,
            "sessionId": self.session,
            "version": "2.1.88",
            "gitBranch": self.branch,
        });
        let o = v.as_object_mut().unwrap();
        for (k, x) in &self.extra {
            o.insert(k.clone(), x.clone());
        }
        o.insert("type".into(), json!(ty));
        let message = if ty == "user" {
            json!({"role": "user", "content": content})
        } else {
            json!({"id": format!("msg_{}_{}", self.i, self.n), "type": "message", "role": "assistant", "model": "m", "content": content})
        };
        o.insert("message".into(), message);
        for (k, x) in flags {
            o.insert((*k).into(), x.clone());
        }
        o.insert("uuid".into(), json!(id));
        o.insert("timestamp".into(), json!(ts(self.i, self.n)));
        self.lines.push(v);
        self.last = Some(id.clone());
        id
    }

    fn user(&mut self, text: &str) -> String {
        self.message("user", &json!(text), &[])
    }

    fn reply(&mut self, text: &str) -> String {
        self.message("assistant", &json!([{"type": "text", "text": text}]), &[])
    }

    fn meta(&mut self, v: Value) {
        self.lines.push(v);
    }

    fn bytes(&self) -> String {
        let mut s = String::new();
        for l in &self.lines {
            writeln!(s, "{}", serde_json::to_string(l).unwrap()).unwrap();
        }
        s
    }
}

/// What the test expects of one generated session.
#[derive(Debug, Clone, Default)]
struct Want {
    title: String,
    tag: Option<String>,
    branch: Option<String>,
    count: u64,
    forked_from: Option<String>,
    listed: bool,
    agents: u64,
}

/// Session kinds, by `i % KINDS`.
const KINDS: usize = 13;

/// Builds session `i` in `project` and says what a listing must show for it.
fn build(i: usize, project: &Path) -> Want {
    let mut w = Writer::new(i);
    let mut want = Want {
        listed: true,
        branch: Some("main".into()),
        ..Want::default()
    };
    if i % KINDS < 7 {
        titled_by_metadata(i, &mut w, &mut want);
    } else {
        titled_by_content(i, &mut w, &mut want, project);
    }
    std::fs::write(project.join(format!("{}.jsonl", w.session)), w.bytes()).unwrap();
    want
}

/// Kinds 0–6: titles, tags and forks from metadata entries written mid-file.
fn titled_by_metadata(i: usize, w: &mut Writer, want: &mut Want) {
    let s = w.session.clone();
    let prompt = format!("task {i}: make the widget faster");
    w.user(&prompt);
    want.title.clone_from(&prompt);
    want.count = 2;
    match i % KINDS {
        0 => {
            w.reply("done");
        }
        1 => {
            // Renamed twice mid-file; messages follow each rename.
            w.meta(json!({"type": "custom-title", "customTitle": format!("first name {i}"), "sessionId": s}));
            w.reply("ok");
            w.meta(json!({"type": "custom-title", "customTitle": format!("renamed {i}"), "sessionId": s}));
            for k in 0..5 {
                w.user(&format!("more {k}"));
                w.reply("sure");
            }
            want.title = format!("renamed {i}");
            want.count = 12;
        }
        2 => {
            // Tagged, then the tag cleared with "".
            w.meta(json!({"type": "tag", "tag": "wip", "sessionId": s}));
            w.reply("ok");
            w.meta(json!({"type": "tag", "tag": "", "sessionId": s}));
        }
        3 => {
            // A /branch copy: forkedFrom on every entry, a "(Branch)" title.
            let from = sid(i - 3);
            let fork = json!({"sessionId": from, "messageUuid": uuid(i - 3, 2)});
            w.reply("ok");
            for l in &mut w.lines {
                l["forkedFrom"] = fork.clone();
            }
            w.meta(json!({"type": "custom-title", "customTitle": format!("{prompt} (Branch)"), "sessionId": s}));
            w.meta(json!({"type": "tag", "tag": "keep", "sessionId": s}));
            want.title = format!("{prompt} (Branch)");
            want.tag = Some("keep".into());
            want.forked_from = Some(from);
        }
        4 => {
            w.reply("ok");
            w.meta(json!({"type": "ai-title", "aiTitle": format!("AI title {i}"), "sessionId": s}));
            want.title = format!("AI title {i}");
        }
        5 => {
            w.reply("ok");
            w.meta(json!({"type": "last-prompt", "lastPrompt": format!("last\nprompt {i}"), "sessionId": s}));
            want.title = format!("last prompt {i}");
        }
        _ => {
            let leaf = w.reply("ok");
            w.meta(json!({"type": "summary", "summary": format!("Summary {i}"), "leafUuid": leaf}));
            want.title = format!("Summary {i}");
        }
    }
}

/// Kinds 7–12: empty, metadata-only and agent files, prompt text rules, sub-agents.
fn titled_by_content(i: usize, w: &mut Writer, want: &mut Want, project: &Path) {
    let s = w.session.clone();
    match i % KINDS {
        7 => {
            want.title = "(session)".into();
            want.branch = None;
        }
        8 => {
            w.meta(json!({"type": "custom-title", "customTitle": format!("named only {i}"), "sessionId": s}));
            want.title = format!("named only {i}");
            want.branch = None;
        }
        9 => {
            // An agent transcript under a session name: not a session.
            w.user("look");
            w.reply("ok");
            for l in &mut w.lines {
                l["isSidechain"] = json!(true);
            }
            want.listed = false;
        }
        10 => {
            w.user("<local-command-stdout>x</local-command-stdout>");
            w.message("user", &json!("caveat"), &[("isMeta", json!(true))]);
            w.user(&format!(
                "<command-message>review</command-message>\n<command-name>/review</command-name>\n<command-args>{i} carefully</command-args>"
            ));
            w.reply("ok");
            want.title = format!("/review {i} carefully");
            want.count = 3;
        }
        11 => {
            let long = format!("{i} ").repeat(150);
            w.user(&format!("\n{long}\n"));
            w.reply("ok");
            let cut: String = long.trim().chars().take(200).collect();
            want.title = format!("{}…", cut.trim_end());
            want.count = 2;
        }
        _ => {
            w.branch = format!("feature-{}", i % 3);
            w.user(&format!("<bash-input>cargo test {i}</bash-input>"));
            w.reply("ok");
            want.title = format!("! cargo test {i}");
            want.branch = Some(format!("feature-{}", i % 3));
            want.count = 2;
            write_subagents(project, &s, i);
            want.agents = 3;
        }
    }
}

/// One agent under `subagents/` with meta, one nested a folder deeper, one remote agent.
fn write_subagents(project: &Path, s: &str, i: usize) {
    let sub = project.join(s).join("subagents");
    std::fs::create_dir_all(sub.join("workflows")).unwrap();
    let mut a = Writer::new(i + 1_000_000);
    s.clone_into(&mut a.session);
    a.user("look around");
    a.reply("found it");
    for l in &mut a.lines {
        l["isSidechain"] = json!(true);
        l["agentId"] = json!(format!("a{i:x}"));
    }
    std::fs::write(sub.join(format!("agent-a{i:x}.jsonl")), a.bytes()).unwrap();
    std::fs::write(
        sub.join(format!("agent-a{i:x}.meta.json")),
        json!({"agentType": "Explore", "description": "look around"}).to_string(),
    )
    .unwrap();
    let nested = sub
        .join("workflows")
        .join(format!("agent-acompact-{i:x}.jsonl"));
    std::fs::write(nested, a.bytes()).unwrap();
    let remote = project.join(s).join("remote-agents");
    std::fs::create_dir_all(&remote).unwrap();
    let meta =
        json!({"taskId": "t1", "remoteTaskType": "review", "sessionId": s, "title": "Review"});
    std::fs::write(remote.join("remote-agent-t1.meta.json"), meta.to_string()).unwrap();
}

/// A generated claude dir: `N` sessions in the project of [`CWD`], plus noise.
struct Tree {
    _tmp: tempfile::TempDir,
    claude: PathBuf,
    project: PathBuf,
    wants: Vec<Want>,
    pos: HashMap<String, usize>,
}

const N: usize = 2600;

impl Tree {
    fn new() -> Tree {
        let tmp = tempfile::tempdir().unwrap();
        let claude = tmp.path().join("claude");
        let key = project_key(CWD);
        assert_eq!(key, "-work-gen-proj");
        let project = claude.join("projects").join(&key);
        std::fs::create_dir_all(&project).unwrap();
        let wants: Vec<Want> = (0..N).map(|i| build(i, &project)).collect();
        // Noise that is not a session: other names, a symlink, a top-level 2.0.x agent file
        // of session 0, and a sibling project with one (empty) session.
        std::fs::write(project.join("notes.jsonl"), "{}\n").unwrap();
        std::fs::write(project.join(format!("{}.json", sid(0))), "{}\n").unwrap();
        std::os::unix::fs::symlink(
            project.join(format!("{}.jsonl", sid(0))),
            project.join("ffffffff-ffff-4fff-8fff-ffffffffffff.jsonl"),
        )
        .unwrap();
        let mut top = Writer::new(9_999_999);
        top.session = sid(0);
        top.user("Warmup");
        for l in &mut top.lines {
            l["isSidechain"] = json!(true);
        }
        std::fs::write(project.join("agent-a0top.jsonl"), top.bytes()).unwrap();
        let other = claude.join("projects/-elsewhere");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join(format!("{}.jsonl", sid(N + 5))), "").unwrap();
        Tree {
            _tmp: tmp,
            claude,
            project,
            wants,
            pos: (0..N).map(|i| (sid(i), i)).collect(),
        }
    }

    fn here() -> ListOptions {
        ListOptions {
            project: Some(CWD.into()),
            ..ListOptions::default()
        }
    }

    fn listed(&self) -> usize {
        self.wants.iter().filter(|w| w.listed).count()
    }
}

#[test]
fn generated_tree_titles_counts_and_order() {
    let tree = Tree::new();
    let listed = list(&tree.claude, &Tree::here());
    assert_eq!(listed.len(), tree.listed());
    for f in &listed {
        let i = tree.pos[&f.session_id];
        let w = &tree.wants[i];
        assert!(w.listed, "{i}");
        assert_eq!(f.title, w.title, "session {i}");
        assert_eq!(f.tag, w.tag, "session {i}");
        assert_eq!(f.git_branch, w.branch, "session {i}");
        assert_eq!(f.message_count, w.count, "session {i}");
        let forked = f.forked_from.as_ref().map(|x| x.session_id.clone());
        assert_eq!(forked, w.forked_from, "session {i}");
        // Session 0 also owns the top-level agent file.
        assert_eq!(f.agents, w.agents + u64::from(i == 0), "session {i}");
        assert_eq!(f.bad_lines, 0);
        if w.count > 0 {
            assert_eq!(f.cwd.as_deref(), Some(CWD));
        }
    }
    // Newest first: sessions with messages by descending i, then the message-less ones.
    let order: Vec<usize> = listed.iter().map(|f| tree.pos[&f.session_id]).collect();
    let with_messages = order
        .iter()
        .take_while(|&&i| tree.wants[i].count > 0)
        .count();
    assert!(order[..with_messages].windows(2).all(|p| p[0] > p[1]));
    assert!(
        order[with_messages..]
            .iter()
            .all(|&i| tree.wants[i].count == 0)
    );
    assert_eq!(list(&tree.claude, &all()).len(), tree.listed() + 1);
}

#[test]
fn generated_tree_filters_answer_from_the_cache_and_vanished_files_go() {
    let tree = Tree::new();
    let mut cache = Cache::new();
    let here = Tree::here;
    assert_eq!(cache.list(&tree.claude, &here()).len(), tree.listed());
    let scans = cache.scans;
    let keep = cache.list(
        &tree.claude,
        &ListOptions {
            tag: Some("keep".into()),
            ..here()
        },
    );
    let tagged = tree.wants.iter().filter(|w| w.tag.is_some()).count();
    assert_eq!(keep.len(), tagged);
    let wip = cache.list(
        &tree.claude,
        &ListOptions {
            tag: Some("wip".into()),
            ..here()
        },
    );
    assert!(wip.is_empty(), "the tag was cleared with \"\"");
    let feature = cache.list(
        &tree.claude,
        &ListOptions {
            branch: Some("feature-1".into()),
            ..here()
        },
    );
    let on_feature = (0..N).filter(|i| i % KINDS == 12 && i % 3 == 1).count();
    assert_eq!(feature.len(), on_feature);
    // The title written mid-file is found (sessions 14, 144, 1404... match); the first
    // name is not.
    let renamed = cache.list(
        &tree.claude,
        &ListOptions {
            search: Some("RENAMED 14".into()),
            ..here()
        },
    );
    let want_renamed: Vec<usize> = (0..N)
        .filter(|i| i % KINDS == 1 && format!("renamed {i}").contains("renamed 14"))
        .collect();
    assert!(want_renamed.contains(&14));
    assert_eq!(renamed.len(), want_renamed.len());
    assert!(
        renamed
            .iter()
            .all(|f| want_renamed.contains(&tree.pos[&f.session_id]))
    );
    let first = cache.list(
        &tree.claude,
        &ListOptions {
            search: Some("first name 14".into()),
            ..here()
        },
    );
    assert!(first.is_empty());
    let limited = cache.list(
        &tree.claude,
        &ListOptions {
            limit: Some(5),
            sort: SortBy::Created,
            ..here()
        },
    );
    let newest: Vec<String> = (0..N)
        .rev()
        .filter(|&i| tree.wants[i].listed && tree.wants[i].count > 0)
        .take(5)
        .map(sid)
        .collect();
    assert_eq!(
        limited
            .iter()
            .map(|f| f.session_id.clone())
            .collect::<Vec<_>>(),
        newest
    );
    assert_eq!(cache.scans, scans, "no transcript read again");

    // A vanished file disappears from the listing (discovery is the directory listing).
    std::fs::remove_file(tree.project.join(format!("{}.jsonl", sid(13)))).unwrap();
    let after = cache.list(&tree.claude, &here());
    assert_eq!(after.len(), tree.listed() - 1);
    assert!(after.iter().all(|f| f.session_id != sid(13)));
}

#[test]
fn generated_tree_title_and_agent_lookups() {
    let tree = Tree::new();
    let mut cache = Cache::new();
    let cwd = Some(Path::new(CWD));
    // Titles: exact first; duplicates refused with the candidates listed.
    let t = resolve_target(&tree.claude, cwd, "renamed 27", &mut |p| cache.get(p)).unwrap();
    assert_eq!(t.path(), tree.project.join(format!("{}.jsonl", sid(27))));
    let dup = resolve_target(&tree.claude, cwd, "(session)", &mut |p| cache.get(p)).unwrap_err();
    let untitled = tree.wants.iter().filter(|w| w.title == "(session)").count();
    assert!(
        matches!(dup, Error::Ambiguous { ref candidates, .. } if candidates.len() == untitled),
        "{dup}"
    );
    assert_eq!(dup.exit_code(), 2);
    // A title in another case.
    let t = resolve_target(&tree.claude, cwd, "RENAMED 27", &mut |p| cache.get(p)).unwrap();
    assert_eq!(t.path(), tree.project.join(format!("{}.jsonl", sid(27))));
    let none = resolve_target(&tree.claude, cwd, "no title has this", &mut |p| {
        cache.get(p)
    })
    .unwrap_err();
    assert!(matches!(none, Error::NoMatch { .. }), "{none}");
    // An agent id in the subagents layout (nested one level) resolves to its file.
    let t = resolve_target(&tree.claude, cwd, "acompact-c", &mut |p| cache.get(p)).unwrap();
    assert!(
        matches!(
            t,
            Target::Agent {
                layout: AgentLayout::Subagents,
                ..
            }
        ),
        "{t:?}"
    );
    assert!(
        t.path()
            .ends_with("subagents/workflows/agent-acompact-c.jsonl")
    );
    let agents = session_agents(&tree.project.join(format!("{}.jsonl", sid(12)))).unwrap();
    let layouts: Vec<_> = agents
        .iter()
        .map(|a| (a.agent_id.as_str(), a.layout))
        .collect();
    assert_eq!(
        layouts,
        [
            ("ac", AgentLayout::Subagents),
            ("acompact-c", AgentLayout::Subagents),
            ("t1", AgentLayout::Remote)
        ]
    );
    assert_eq!(agents[0].agent_type.as_deref(), Some("Explore"));
    assert_eq!(agents[0].message_count, 2);
    assert_eq!(agents[2].agent_type.as_deref(), Some("review"));
}

#[test]
fn ids_are_never_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    std::fs::create_dir_all(claude.join("projects/-x")).unwrap();
    // A file that a joined id would reach.
    std::fs::write(tmp.path().join("secret.jsonl"), "{}\n").unwrap();
    let mut never = |p: &Path| -> chainlog::Result<SessionFacts> {
        panic!("no transcript may be read for {}", p.display())
    };
    for bad in ["", "a\0b"] {
        let e = resolve_target(&claude, None, bad, &mut never).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{bad:?}");
    }
    for bad in ["../secret", "..", "a/b", "a\\b", "../no-such-dir/x"] {
        let e = resolve_target(&claude, Some(&claude.join("projects/-x")), bad, &mut never)
            .unwrap_err();
        assert!(matches!(e, Error::InvalidId { .. }), "{bad:?}: {e}");
        assert_eq!(e.exit_code(), 2, "{bad:?}");
    }
}

// ------------------------------------------------------------------------------------------
// The binary
// ------------------------------------------------------------------------------------------

fn run(claude: &Path, cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chainlog"))
        .arg("--claude-dir")
        .arg(claude)
        .args(args)
        .current_dir(cwd)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"))
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json_lines(o: &Output) -> Vec<Value> {
    assert!(o.status.success(), "{}", stderr(o));
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A claude dir with four sessions in the project of a real working directory:
/// "Alpha" (1 prompt), "Twin" (2 prompts), "Twin" (1 prompt), untitled (3 prompts), written
/// in that order and time.
struct CliFixture {
    tmp: tempfile::TempDir,
    claude: PathBuf,
    cwd: PathBuf,
    project: PathBuf,
    /// `(session id, uuids of its chain)`.
    sessions: Vec<(String, Vec<String>)>,
}

impl CliFixture {
    fn new() -> CliFixture {
        let tmp = tempfile::tempdir().unwrap();
        let claude = tmp.path().join("claude");
        let work = tmp.path().join("my.work");
        std::fs::create_dir_all(&work).unwrap();
        let cwd = std::fs::canonicalize(&work).unwrap();
        let cwd_s = cwd.to_str().unwrap().to_owned();
        let project = claude.join("projects").join(project_key(&cwd_s));
        std::fs::create_dir_all(&project).unwrap();
        let mut sessions = Vec::new();
        for (i, title, prompts) in [
            (1, Some("Alpha"), 1),
            (2, Some("Twin"), 2),
            (3, Some("Twin"), 1),
            (4, None, 3),
        ] {
            let mut w = Writer::new(i);
            let mut uuids = Vec::new();
            for k in 0..prompts {
                uuids.push(w.user(&format!("prompt {i}.{k}")));
                uuids.push(w.reply("answer"));
            }
            for l in &mut w.lines {
                l["cwd"] = json!(cwd_s);
            }
            if let Some(t) = title {
                w.meta(json!({"type": "custom-title", "customTitle": t, "sessionId": w.session}));
            }
            std::fs::write(project.join(format!("{}.jsonl", w.session)), w.bytes()).unwrap();
            sessions.push((w.session, uuids));
        }
        CliFixture {
            tmp,
            claude,
            cwd,
            project,
            sessions,
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        run(&self.claude, &self.cwd, args)
    }

    fn id(&self, n: usize) -> &str {
        &self.sessions[n - 1].0
    }

    fn uuids(&self, n: usize) -> Vec<String> {
        self.sessions[n - 1].1.clone()
    }
}

#[test]
fn cli_ls_and_continue() {
    let fx = CliFixture::new();
    // ls --json in the project's working directory: one object per line, newest first.
    let rows = json_lines(&fx.run(&["ls", "--json"]));
    let got: Vec<&str> = rows
        .iter()
        .map(|r| r["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(got, [fx.id(4), fx.id(3), fx.id(2), fx.id(1)]);
    assert_eq!(rows[0]["title"], "prompt 4.0");
    assert_eq!(rows[0]["messageCount"], 6);
    assert_eq!(rows[0]["cwd"], fx.cwd.to_str().unwrap());
    assert_eq!(rows[3]["title"], "Alpha");
    for key in [
        "path",
        "projectKey",
        "firstPrompt",
        "lastPrompt",
        "gitBranch",
        "tag",
        "created",
        "modified",
        "bytes",
        "forkedFrom",
        "agents",
        "badLines",
    ] {
        assert!(rows[0].get(key).is_some(), "{key}");
    }
    let table = fx.run(&["ls", "--limit", "2"]);
    assert!(stdout(&table).contains("prompt 4.0"));
    assert_eq!(stdout(&table).lines().count(), 3, "header and two rows");
    // continue: the newest session, as resume prints it.
    let o = fx.run(&["continue", "--format", "uuids"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().collect::<Vec<_>>(), fx.uuids(4));
    // CLAUDE_CONFIG_DIR is the default claude dir.
    let o = Command::new(env!("CARGO_BIN_EXE_chainlog"))
        .args(["ls", "--json", "--all"])
        .env("CLAUDE_CONFIG_DIR", &fx.claude)
        .env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"))
        .current_dir(&fx.cwd)
        .output()
        .unwrap();
    assert_eq!(json_lines(&o).len(), 4);
    // A project with no sessions: nothing listed, nothing to continue.
    let empty = fx.tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    assert!(json_lines(&run(&fx.claude, &empty, &["ls", "--json"])).is_empty());
    let o = run(&fx.claude, &empty, &["continue"]);
    assert_eq!(o.status.code(), Some(1));
}

/// `ls` for people: one line per session at 80 columns (title first, short ids), the header
/// names the sort, empty sessions only with `--include-empty`, `--project` takes a project key.
#[test]
fn cli_ls_human_rows_fit_and_project_keys() {
    let fx = CliFixture::new();
    let long = "x".repeat(300);
    let mut w = Writer::new(9);
    w.user(&long);
    w.reply("answer");
    for l in &mut w.lines {
        l["cwd"] = json!(fx.cwd.to_str().unwrap());
    }
    std::fs::write(fx.project.join(format!("{}.jsonl", w.session)), w.bytes()).unwrap();
    std::fs::write(
        fx.project
            .join("00000000-0000-4000-8000-0000000000ee.jsonl"),
        "",
    )
    .unwrap();
    let ls = |extra: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_chainlog"))
            .arg("--claude-dir")
            .arg(&fx.claude)
            .arg("ls")
            .args(extra)
            .current_dir(&fx.cwd)
            .env("COLUMNS", "80")
            .env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    let table = ls(&[]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 6, "header + 5 sessions with messages: {table}");
    for l in &lines {
        assert!(l.chars().count() <= 80, "wider than 80: {l:?}");
    }
    assert!(
        lines[0].starts_with("title") && lines[0].contains("modified"),
        "{table}"
    );
    assert!(
        lines[1].starts_with("xxxx") && lines[1].contains('…'),
        "{table}"
    );
    assert!(lines[1].contains(&w.session[..8]) && !lines[1].contains(&w.session[..9]));
    assert!(
        ls(&["--sort", "created"])
            .lines()
            .next()
            .unwrap()
            .contains("created")
    );
    assert_eq!(
        ls(&["--include-empty"]).lines().count(),
        7,
        "the empty file too"
    );
    // A project key lists the same sessions as the working directory.
    let key = fx.project.file_name().unwrap().to_str().unwrap();
    let elsewhere = fx.tmp.path();
    let by_key = run(&fx.claude, elsewhere, &["ls", "--json", "--project", key]);
    let rows = json_lines(&by_key);
    assert_eq!(rows.len(), 5, "{}", stderr(&by_key));
    assert_eq!(rows[0]["schema"], 1);
}

/// Issue #33: `ls --all` fits 80 display columns with CJK titles and long branches, tags and
/// paths (the title keeps its room, columns line up by display width); a raw system text is no
/// title; the project column is the session's folder, not its key; a pipe cuts nothing.
#[test]
fn cli_ls_all_fits_80_columns_with_wide_titles_and_readable_projects() {
    use unicode_width::UnicodeWidthStr;
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    let long_cwd = "/srv/checkouts/team-platform/services/billing-reconciliation-worker";
    let titles = [
        "修复登录页面的错误并添加单元测试以及集成测试",
        "リファクタリング：設定ローダーをTOMLに移行する",
        "An English title long enough to need cutting at eighty columns wide",
    ];
    let mut ids = Vec::new();
    for (i, title) in titles.iter().enumerate() {
        let mut w = Writer::new(40 + i);
        w.branch = "feature/a-very-long-branch-name-for-layout".into();
        w.user("hello");
        w.reply("hi");
        for l in &mut w.lines {
            l["cwd"] = json!(long_cwd);
        }
        w.meta(json!({"type": "custom-title", "customTitle": title, "sessionId": w.session}));
        w.meta(json!({"type": "tag", "tag": "needs-review-before-friday", "sessionId": w.session}));
        let dir = claude.join("projects").join(project_key(long_cwd));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{}.jsonl", w.session)), w.bytes()).unwrap();
        ids.push(w.session.clone());
    }
    // A session whose only prompts are system texts: its last-prompt is a task notification.
    let mut w = Writer::new(50);
    w.user("<task-notification>\n<task-id>b81f</task-id>\n<status>completed</status>\n</task-notification>");
    w.reply("noted");
    w.meta(json!({"type": "last-prompt", "lastPrompt": "<task-notification> <task-id>b81f</task-id>", "sessionId": w.session}));
    let dir = claude.join("projects").join(project_key(CWD));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{}.jsonl", w.session)), w.bytes()).unwrap();
    let ls = |columns: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_chainlog"));
        c.arg("--claude-dir")
            .arg(&claude)
            .args(["ls", "--all"])
            .env("XDG_CACHE_HOME", tmp.path().join("cache"))
            .env_remove("COLUMNS");
        if let Some(n) = columns {
            c.env("COLUMNS", n);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    let table = ls(Some("80"));
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 5, "{table}");
    for l in &lines {
        assert!(l.width() <= 80, "{} columns: {l:?}\n{table}", l.width());
    }
    // The session column starts at the same display column on every row.
    let starts: Vec<usize> = lines[1..]
        .iter()
        .map(|l| {
            let id = ids
                .iter()
                .chain([&w.session])
                .find(|id| l.contains(&id[..8]))
                .unwrap();
            l[..l.find(&id[..8]).unwrap()].width()
        })
        .collect();
    assert!(
        starts.windows(2).all(|p| p[0] == p[1]),
        "{starts:?}\n{table}"
    );
    assert!(starts[0] >= 24, "the title keeps its room: {table}");
    assert!(table.contains("修复登录"), "{table}");
    assert!(
        !table.contains('<'),
        "no raw system text as a title: {table}"
    );
    assert!(
        table.contains("…") && table.contains("worker\n"),
        "the folder's end: {table}"
    );
    assert!(
        !table.contains("-srv-checkouts"),
        "not the project key: {table}"
    );
    // Piped without a width: every cell whole.
    let piped = ls(None);
    assert!(
        piped.contains(titles[2]) && piped.contains(long_cwd),
        "{piped}"
    );
    assert!(piped.contains("feature/a-very-long-branch-name-for-layout"));
    assert!(piped.contains("needs-review-before-friday"));
}

#[test]
fn cli_resume_by_id_title_path_and_refusals() {
    let fx = CliFixture::new();
    let s1 = fx.id(1).to_owned();
    // resume by id, by title, by path, by an id in another case.
    for arg in [
        s1.clone(),
        "Alpha".into(),
        s1.to_uppercase(),
        fx.project.join(format!("{s1}.jsonl")).display().to_string(),
    ] {
        let o = fx.run(&["resume", &arg, "--format", "uuids"]);
        assert!(o.status.success(), "{arg}: {}", stderr(&o));
        assert_eq!(stdout(&o).lines().collect::<Vec<_>>(), fx.uuids(1), "{arg}");
    }
    // From elsewhere, with --project.
    let cwd = fx.cwd.to_str().unwrap();
    let o = run(
        &fx.claude,
        fx.tmp.path(),
        &["resume", "Alpha", "--project", cwd, "--format", "uuids"],
    );
    assert_eq!(
        stdout(&o).lines().collect::<Vec<_>>(),
        fx.uuids(1),
        "{}",
        stderr(&o)
    );
    // Two sessions titled "Twin": exit 2, both listed, nothing printed.
    let o = fx.run(&["resume", "Twin"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(fx.id(2)) && stderr(&o).contains(fx.id(3)),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).is_empty());
    // Ids that could be paths: exit 2, nothing printed.
    for bad in ["../x", "a/b", "..", "x\\y"] {
        let o = fx.run(&["resume", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
        assert!(stderr(&o).contains("refusing id"), "{}", stderr(&o));
        assert!(stdout(&o).is_empty());
    }
    let o = fx.run(&["resume", "--leaf", "../x", &s1]);
    assert_eq!(o.status.code(), Some(2));
    // Unknown id and title: exit 1.
    let o = fx.run(&["resume", "99999999-9999-4999-8999-999999999999"]);
    assert_eq!(o.status.code(), Some(1));
    let o = fx.run(&["resume", "No such title"]);
    assert_eq!(o.status.code(), Some(1));
}

/// Every verb takes the same targets: a unique id prefix (≥ 4 characters), a title in any case
/// or a unique part of it (≥ 4 characters); an ambiguous or too short prefix or title lists the
/// candidates and exits 2.
#[test]
fn cli_targets_prefixes_and_loose_titles() {
    let fx = CliFixture::new();
    for (arg, n) in [("00000001", 1), ("00000004", 4), ("ALPHA", 1), ("alph", 1)] {
        let o = fx.run(&["resume", arg, "--format", "uuids"]);
        assert!(o.status.success(), "{arg}: {}", stderr(&o));
        assert_eq!(stdout(&o).lines().collect::<Vec<_>>(), fx.uuids(n), "{arg}");
    }
    // `leaves` takes a session id, not only a path.
    let o = fx.run(&["leaves", "00000002", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let last = fx.uuids(2).pop().unwrap();
    assert!(stdout(&o).contains(&last), "{}", stdout(&o));
    // Every `--json` row names its schema, as `ls` and `search` rows do.
    for row in stdout(&o).lines() {
        let row: serde_json::Value = serde_json::from_str(row).unwrap();
        assert_eq!(row["schema"], 1, "{row}");
    }
    for ambiguous in ["0000", "twin"] {
        let o = fx.run(&["resume", ambiguous]);
        assert_eq!(o.status.code(), Some(2), "{ambiguous}: {}", stderr(&o));
        assert!(stderr(&o).contains(fx.id(2)) && stderr(&o).contains(fx.id(3)));
        assert!(stdout(&o).is_empty());
    }
    // Shorter than a prefix may be: never picked by a part of a title or an id (issue #33: `a12`
    // resumed a session titled "…a12…"), the sessions it could mean are listed, exit 2.
    for (short, meant) in [("lph", 1), ("000", 2)] {
        let o = fx.run(&["resume", short]);
        assert_eq!(o.status.code(), Some(2), "{short}: {}", stderr(&o));
        assert!(stderr(&o).contains(fx.id(meant)), "{short}: {}", stderr(&o));
        assert!(stdout(&o).is_empty());
    }
    // Short and meaning nothing: no match, exit 1.
    assert_eq!(fx.run(&["resume", "zq"]).status.code(), Some(1));
}

#[test]
fn cli_agents_and_resume_of_an_agent() {
    let fx = CliFixture::new();
    let s1 = fx.id(1).to_owned();
    let sub = fx.project.join(&s1).join("subagents");
    std::fs::create_dir_all(&sub).unwrap();
    let mut a = Writer::new(77);
    a.session.clone_from(&s1);
    a.user("dig");
    // Two leaves under the first prompt: the newer one is resumed.
    let older = a.reply("dug");
    a.last = Some(uuid(77, 1));
    let newer = a.reply("dug deeper");
    for l in &mut a.lines {
        l["isSidechain"] = json!(true);
        l["agentId"] = json!("a77");
    }
    std::fs::write(sub.join("agent-a77.jsonl"), a.bytes()).unwrap();
    let meta = json!({"agentType": "general-purpose", "description": "Dig"});
    std::fs::write(sub.join("agent-a77.meta.json"), meta.to_string()).unwrap();

    let rows = json_lines(&fx.run(&["--json", "agents", &s1]));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["agentId"], "a77");
    assert_eq!(rows[0]["schema"], 1);
    assert_eq!(rows[0]["agentType"], "general-purpose");
    assert_eq!(rows[0]["description"], "Dig");
    assert_eq!(rows[0]["layout"], "subagents");
    assert_eq!(rows[0]["messageCount"], 2);
    assert_eq!(rows[0]["status"], "completed");
    let table = fx.run(&["agents", "Alpha"]);
    assert!(
        stdout(&table).contains("general-purpose"),
        "{}",
        stderr(&table)
    );
    for arg in ["a77", "agent-a77"] {
        let o = fx.run(&["resume", arg, "--format", "uuids"]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(
            stdout(&o).lines().collect::<Vec<_>>(),
            [uuid(77, 1), newer.clone()]
        );
        assert!(!stdout(&o).contains(&older));
    }
    let rows = json_lines(&fx.run(&["ls", "--json"]));
    let s1_row = rows.iter().find(|r| r["sessionId"] == s1.as_str()).unwrap();
    assert_eq!(s1_row["agents"], 1);
}

/// Issue #33: the manual has a page for every subcommand it names (`man --dir` writes them
/// all, `man COMMAND` prints one), and `chainlog(1)` says the environment, the exit statuses
/// and examples. Each page is rendered by man(1) when it is installed.
#[test]
fn cli_man_pages_for_every_command_with_environment_exit_status_and_examples() {
    let fx = CliFixture::new();
    let dir = fx.tmp.path().join("man1");
    // A link named like a page is replaced by the page, its target left alone.
    let target = fx.tmp.path().join("not-a-page");
    std::fs::write(&target, "keep").unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(&target, dir.join("chainlog-ls.1")).unwrap();
    let o = fx.run(&["man", "--dir", dir.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    assert!(!dir.join("chainlog-ls.1").is_symlink());
    assert!(o.status.success(), "{}", stderr(&o));
    let main = std::fs::read_to_string(dir.join("chainlog.1")).unwrap();
    for section in [
        ".SH ENVIRONMENT",
        ".SH \"EXIT STATUS\"",
        ".SH EXAMPLES",
        ".SH \"SEE ALSO\"",
    ] {
        assert!(main.contains(section), "{section} missing");
    }
    for var in [
        "CLAUDE_CONFIG_DIR",
        "XDG_CACHE_HOME",
        "CHAINLOG_CLAUDE",
        "NO_COLOR",
    ] {
        assert!(main.contains(var), "{var} missing from ENVIRONMENT");
    }
    // Every page chainlog(1) refers to exists, and names itself.
    let mut named = 0;
    for (i, _) in main.match_indices("chainlog\\-") {
        let rest = &main[i + "chainlog\\-".len()..];
        let Some(end) = rest.find("(1)") else {
            continue;
        };
        let name = &rest[..end];
        if name.contains(char::is_whitespace) {
            continue;
        }
        let page = dir.join(format!("chainlog-{name}.1"));
        let text = std::fs::read_to_string(&page)
            .unwrap_or_else(|e| panic!("chainlog-{name}(1) is named but {}: {e}", page.display()));
        assert!(text.contains(&format!(".TH chainlog-{name} 1")), "{name}");
        named += 1;
    }
    assert!(named >= 15, "the subcommands are referred to: {named}");
    let written = stdout(&o).lines().count();
    assert_eq!(
        written,
        std::fs::read_dir(&dir).unwrap().count(),
        "each path printed"
    );
    let one = fx.run(&["man", "resume"]);
    assert!(one.status.success());
    assert_eq!(
        stdout(&one),
        std::fs::read_to_string(dir.join("chainlog-resume.1")).unwrap()
    );
    assert_eq!(fx.run(&["man", "nosuch"]).status.code(), Some(2));
    if Path::new("/usr/bin/man").exists() {
        let shown = Command::new("man")
            .arg("-l")
            .arg(dir.join("chainlog.1"))
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "80")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&shown.stdout);
        assert!(
            text.contains("EXIT STATUS") && text.contains("chainlog ls"),
            "{text}"
        );
    }
}

/// Issue #33: `resume <TAB>` offers the current project's session ids (in bash, through the
/// script `completions bash` prints, in a real bash), and subcommands still complete.
#[test]
fn cli_completion_offers_session_ids_in_bash() {
    let fx = CliFixture::new();
    let script = fx.tmp.path().join("chainlog.bash");
    let o = fx.run(&["completions", "bash"]);
    assert!(o.status.success());
    std::fs::write(&script, &o.stdout).unwrap();
    let complete_in = |claude: &Path, words: &[&str]| {
        let words_q: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
        let cur = words.last().unwrap();
        let prev = words[words.len() - 2];
        let line = format!(
            "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; COMP_TYPE=9; \
             _clap_complete_chainlog chainlog '{cur}' '{prev}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display(),
            words_q.join(" "),
            words.len() - 1
        );
        let o = Command::new("bash")
            .args(["--norc", "-c", &line])
            .current_dir(&fx.cwd)
            .env("CLAUDE_CONFIG_DIR", claude)
            .env("XDG_CACHE_HOME", fx.tmp.path().join("cache"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o).lines().map(str::to_owned).collect::<Vec<_>>()
    };
    let complete = |words: &[&str]| complete_in(&fx.claude, words);
    let offered = complete(&["chainlog", "resume", ""]);
    for (sid, _) in &fx.sessions {
        assert!(offered.contains(sid), "{sid} not offered: {offered:?}");
    }
    let s1 = fx.id(1).to_owned();
    let narrowed = complete(&["chainlog", "resume", &s1[..30]]);
    assert_eq!(
        narrowed,
        vec![s1.clone()],
        "a prefix narrows to its session"
    );
    let subcommands = complete(&["chainlog", "re"]);
    for want in ["resume", "rebuild"] {
        assert!(
            subcommands.iter().any(|c| c == want),
            "{want}: {subcommands:?}"
        );
    }
    let title = complete(&["chainlog", "title", ""]);
    assert!(
        title.contains(&s1),
        "title's session completes too: {title:?}"
    );
    // A --claude-dir typed on the line is the one completed from, whatever the environment
    // names (both spellings).
    let elsewhere = fx.tmp.path().join("no-sessions-here");
    std::fs::create_dir_all(elsewhere.join("projects")).unwrap();
    assert!(
        !complete_in(&elsewhere, &["chainlog", "resume", ""]).contains(&s1),
        "the environment's folder has no sessions"
    );
    let claude = fx.claude.to_str().unwrap();
    let given = complete_in(
        &elsewhere,
        &["chainlog", "--claude-dir", claude, "resume", ""],
    );
    assert!(given.contains(&s1), "--claude-dir DIR: {given:?}");
    let flag = format!("--claude-dir={claude}");
    let given = complete_in(&elsewhere, &["chainlog", &flag, "resume", ""]);
    assert!(given.contains(&s1), "--claude-dir=DIR: {given:?}");
}

/// Completions and the man page come from the clap definitions; errors under `--json` are one
/// JSON object on stderr with the exit code.
#[test]
fn cli_completions_man_and_json_errors() {
    let fx = CliFixture::new();
    let o = fx.run(&["completions", "bash"]);
    assert!(o.status.success());
    assert!(
        stdout(&o).contains("_clap_complete_chainlog"),
        "{}",
        stdout(&o)
    );
    let o = fx.run(&["man"]);
    assert!(o.status.success());
    assert!(stdout(&o).contains(".TH chainlog 1"));
    let o = fx.run(&["--json", "resume", "no such title"]);
    assert_eq!(o.status.code(), Some(1));
    let err: Value = serde_json::from_str(stderr(&o).trim()).expect("one JSON object");
    assert_eq!(err["exitCode"], 1);
    assert!(err["error"].as_str().unwrap().contains("no such title"));
    assert!(stdout(&o).is_empty());
}

/// A `--claude-dir` that does not exist is an error naming it (exit 1), not an empty listing
/// (issue #33: `ls` said "no sessions", exit 0, for a mistyped folder).
#[test]
fn a_missing_claude_dir_is_an_error_not_an_empty_listing() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-claude");
    let missing = missing.to_str().unwrap();
    for args in [
        &["--claude-dir", missing, "ls", "--all"][..],
        &["--claude-dir", missing, "search", "x", "--all"][..],
    ] {
        let o = crate::util::chainlog(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(missing) && err.contains("no such folder"),
            "{err}"
        );
    }
    // An existing folder without sessions is still an empty listing.
    let o = crate::util::chainlog(&["--claude-dir", tmp.path().to_str().unwrap(), "ls", "--all"]);
    assert_eq!(o.status.code(), Some(0));
}
