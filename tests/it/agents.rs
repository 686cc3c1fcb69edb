//! `chainlog agents` answered from the index (the same list as the full scan, and the index
//! really answered), and inline (1.0.x) agent ids opened as targets by `resume`, `leaves` and
//! `export` like the agents stored in their own files.

use crate::util;

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use chainlog::discovery::{AgentLayout, session_agents};
use chainlog::{Source, Store};
use chainlog_gen::{GenOptions, SidechainLayout};
use serde_json::{Value, json};

/// A claude dir holding one generated session with sub-agents in all three layouts.
struct Fixture {
    tmp: tempfile::TempDir,
    main: PathBuf,
}

impl Fixture {
    fn new(seed: u64) -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        // Every feature: inline agents written before a compaction are dropped from the
        // session's resume view.
        let opts = GenOptions {
            sidechains: SidechainLayout::All,
            ..GenOptions::everything(seed, 3 << 20)
        };
        let s = chainlog_gen::generate(&opts);
        let main = chainlog_gen::write_session(&tmp.path().join("claude/projects"), &s).unwrap();
        Fixture { tmp, main }
    }
    fn claude(&self) -> PathBuf {
        self.tmp.path().join("claude")
    }
    fn index(&self) -> PathBuf {
        self.tmp.path().join("index")
    }
    fn store(&self) -> Store {
        Store::open(self.claude(), self.index()).unwrap()
    }
    /// `chainlog --claude-dir … --index-dir … ARGS`: (exit code, stdout, stderr).
    fn run(&self, args: &[&str]) -> (i32, String, String) {
        util::chainlog_in(&self.claude(), &self.index(), args)
    }
}

fn layouts(agents: &[chainlog::AgentInfo]) -> HashSet<AgentLayout> {
    agents.iter().map(|a| a.layout).collect()
}

/// Appends a new inline agent (a sidechain prompt and its reply) to the session file.
fn append_inline_agent(main: &Path, root: &str, reply: &str) {
    let sid = main.file_stem().unwrap().to_str().unwrap();
    let line = |uuid: &str, parent: Option<&str>, kind: &str, message: Value| {
        json!({
            "parentUuid": parent, "isSidechain": true, "userType": "external", "cwd": "/w",
            "sessionId": sid, "version": "1.0.98", "type": kind, "message": message,
            "uuid": uuid, "timestamp": "2099-01-01T00:00:00.000Z",
        })
    };
    let a = format!("{}b", &root[..root.len() - 1]);
    let lines = [
        line(
            root,
            None,
            "user",
            json!({"role": "user", "content": "look around"}),
        ),
        line(
            &a,
            Some(root),
            "assistant",
            json!({"id": "msg_new", "type": "message", "role": "assistant", "model": "m",
                   "content": [{"type": "text", "text": reply}]}),
        ),
    ];
    let ends_a_line = std::fs::read(main).unwrap().last() == Some(&b'\n');
    let mut f = std::fs::OpenOptions::new().append(true).open(main).unwrap();
    if !ends_a_line {
        // End the torn tail first: the agent's lines stay lines of their own.
        writeln!(f).unwrap();
    }
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
}

#[test]
fn agents_are_answered_from_the_index_like_the_scan() {
    let f = Fixture::new(11);
    let scan = session_agents(&f.main).unwrap();
    assert_eq!(
        layouts(&scan),
        [
            AgentLayout::Inline,
            AgentLayout::TopLevel,
            AgentLayout::Subagents
        ]
        .into(),
        "the fixture has every layout: {scan:?}"
    );
    let store = f.store();
    for round in ["cold", "warm"] {
        let got = store.agents(&f.main).unwrap();
        assert_eq!(got.source, Source::Index, "{round}: the index answered");
        assert_eq!(got.agents, scan, "{round}");
    }
    // A new inline agent appended later is found by the catch-up.
    let root = "0a0a0a0a-0000-4000-8000-00000000000a";
    append_inline_agent(&f.main, root, "nothing to see");
    let scan = session_agents(&f.main).unwrap();
    assert!(scan.iter().any(|a| a.agent_id == root), "{scan:?}");
    let got = store.agents(&f.main).unwrap();
    assert_eq!(got.source, Source::Index);
    assert_eq!(got.agents, scan);
}

#[test]
fn the_cli_prints_the_same_agents_from_the_index_and_with_no_index() {
    let f = Fixture::new(12);
    let main = f.main.to_str().unwrap();
    let (code, indexed, err) = f.run(&["--json", "agents", main]);
    assert_eq!(code, 0, "{err}");
    assert!(
        !err.contains("answered from the transcript"),
        "the index was not used: {err}"
    );
    let (code, scanned, err) = f.run(&["--json", "agents", main, "--no-index"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(indexed, scanned);
    assert!(indexed.lines().count() >= 3, "{indexed}");
}

/// The uuids and `isSidechain` of every line of `path` that has a uuid.
fn sidechain_uuids(path: &Path) -> HashSet<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["isSidechain"] == json!(true))
        .filter_map(|v| v["uuid"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn inline_agent_ids_open_as_targets() {
    let f = Fixture::new(13);
    let main = f.main.to_str().unwrap();
    let (code, out, err) = f.run(&["--json", "agents", main]);
    assert_eq!(code, 0, "{err}");
    let inline: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|a| a["layout"] == json!("inline"))
        .collect();
    assert!(!inline.is_empty(), "{out}");
    let sidechain = sidechain_uuids(&f.main);
    for a in &inline {
        let id = a["agentId"].as_str().unwrap();
        let (code, out, err) = f.run(&["resume", id, "--format", "uuids"]);
        assert_eq!(code, 0, "resume {id}: {err}");
        let chain: Vec<&str> = out.lines().collect();
        assert_eq!(
            chain.first(),
            Some(&id),
            "the agent's chain starts at its root"
        );
        assert!(
            chain.iter().all(|u| sidechain.contains(*u)),
            "resume {id} left the agent: {chain:?}"
        );
        assert!(err.contains("inline"), "resume names the agent: {err}");

        let (code, out, err) = f.run(&["--json", "leaves", id]);
        assert_eq!(code, 0, "leaves {id}: {err}");
        let leaves: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(!leaves.is_empty(), "leaves {id}");
        assert!(
            leaves
                .iter()
                .all(|l| sidechain.contains(l["uuid"].as_str().unwrap())),
            "leaves {id} lists only the agent's leaves: {out}"
        );
        let active: Vec<&Value> = leaves
            .iter()
            .filter(|l| l["active"] == json!(true))
            .collect();
        assert_eq!(active.len(), 1, "{out}");
        assert_eq!(active[0]["uuid"].as_str(), chain.last().copied());

        let (code, out, err) = f.run(&["leaves", id]);
        assert_eq!(code, 0, "leaves {id}: {err}");
        assert!(
            out.contains(&format!(
                "active: {} (the agent's newest message)",
                chain.last().unwrap()
            )),
            "{out}"
        );

        let (code, out, err) = f.run(&["export", id, "--format", "jsonl"]);
        assert_eq!(code, 0, "export {id}: {err}");
        let exported: Vec<String> = out
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| v["uuid"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(exported, chain, "export {id} is the agent's view");
    }
}
