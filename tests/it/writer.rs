//! The write path (SPEC A4): random sequences of append / append-sidechain / title / tag /
//! remove / flush / reopen / a foreign (Claude Code) append on generated sessions, checked
//! after every step against a model; plus the single rules (lazy materialisation, dedup, the
//! prefix rule, compact boundaries, tool results, key order, permissions, tombstones).

#![allow(
    clippy::many_single_char_names,
    reason = "short names for the env, generator, session, writer and model of each case"
)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use chainlog::Source;
use chainlog::Store;
use chainlog::WriterOptions;
use chainlog::reference::ResolveOptions;
use chainlog::reference::Transcript;
use chainlog::reference::resolve;
use chainlog_gen::{Corruption, GenOptions, SidechainLayout, generate};
use proptest::prelude::*;
use serde_json::{Value, json};

fn user(text: &str) -> Value {
    json!({"type": "user", "message": {"role": "user", "content": text}})
}

fn assistant(text: &str) -> Value {
    json!({"type": "assistant", "message": {"id": format!("msg_{text}"), "type": "message",
        "role": "assistant", "model": "claude-x", "content": [{"type": "text", "text": text}]}})
}

fn tool_use(id: &str) -> Value {
    json!({"type": "assistant", "message": {"id": format!("msg_{id}"), "type": "message",
        "role": "assistant", "model": "claude-x",
        "content": [{"type": "tool_use", "id": id, "name": "Bash", "input": {"command": "ls"}}]}})
}

fn tool_result(id: &str) -> Value {
    json!({"type": "user", "message": {"role": "user",
        "content": [{"type": "tool_result", "tool_use_id": id, "content": "ok"}]}})
}

struct Env {
    _tmp: tempfile::TempDir,
    project: PathBuf,
    store: Store,
}

fn env() -> Env {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("claude/projects/-w");
    std::fs::create_dir_all(&project).unwrap();
    let store = Store::new(tmp.path().join("index"));
    Env {
        project,
        store,
        _tmp: tmp,
    }
}

fn lines(path: &Path) -> Vec<Value> {
    let bytes = std::fs::read(path).unwrap();
    assert!(bytes.is_empty() || bytes.ends_with(b"\n"), "torn last line");
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).expect("every written line parses"))
        .collect()
}

/// The index answers (not the fallback) and equals the full scan.
fn assert_index_agrees(store: &Store, path: &Path) {
    let idx = store.resolve(path, ResolveOptions::default()).unwrap();
    assert_eq!(idx.source, Source::Index, "the index must answer");
    let scan = Store::reference(path, ResolveOptions::default(), "oracle".into()).unwrap();
    assert_eq!(idx.resolution, scan.resolution);
}

fn chain_tip(path: &Path) -> Option<String> {
    let t = Transcript::open(path).unwrap();
    let r = resolve(&t, ResolveOptions::default()).ok()?;
    r.chain.last().map(|l| t.names.name(l.uuid))
}

#[test]
fn parents_follow_the_cursor_tool_results_and_compact_boundaries() {
    let e = env();
    let mut w = e
        .store
        .writer(
            &e.project,
            "11111111-1111-4111-8111-111111111111",
            WriterOptions::new("/w"),
        )
        .unwrap();
    let u1 = w.append(user("hi")).unwrap().unwrap();
    let a1 = w.append(tool_use("toolu_1")).unwrap().unwrap();
    let a2 = w.append(tool_use("toolu_2")).unwrap().unwrap();
    let r1 = w.append(tool_result("toolu_1")).unwrap().unwrap();
    let r2 = w.append(tool_result("toolu_2")).unwrap().unwrap();
    let b = w
        .append(json!({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
            "isMeta": false, "level": "info", "compactMetadata": {"trigger": "manual", "preTokens": 1.0}}))
        .unwrap()
        .unwrap();
    let report = w.flush().unwrap();
    assert_eq!(report.written.len(), 6);
    let ls = lines(w.path());
    let parent = |i: usize| ls[i]["parentUuid"].as_str().map(str::to_owned);
    assert_eq!(parent(0), None);
    assert_eq!(parent(1).as_deref(), Some(u1.as_str()));
    assert_eq!(parent(2).as_deref(), Some(a1.as_str()));
    assert_eq!(
        parent(3).as_deref(),
        Some(a1.as_str()),
        "tool result hangs off its tool_use"
    );
    assert_eq!(ls[3]["sourceToolAssistantUUID"], a1.as_str());
    assert_eq!(parent(4).as_deref(), Some(a2.as_str()));
    assert_eq!(ls[4]["sourceToolAssistantUUID"], a2.as_str());
    assert_eq!(ls[5]["parentUuid"], Value::Null);
    assert_eq!(ls[5]["logicalParentUuid"], r2.as_str());
    assert_eq!(ls[5]["uuid"], b.as_str());
    let _ = r1;
    // Key order and stamps of the current shape; numbers as JS prints them.
    let raw = std::fs::read_to_string(w.path()).unwrap();
    let first = raw.lines().next().unwrap();
    assert!(
        first.starts_with(r#"{"parentUuid":null,"isSidechain":false,"type":"user","message":"#),
        "{first}"
    );
    assert!(
        first.contains(r#","userType":"external","cwd":"/w","sessionId":"11111111-1111-4111-8111-111111111111","version":"2.1.328"}"#),
        "{first}"
    );
    assert!(raw.contains(r#""preTokens":1}"#), "JS number format");
    // Timestamps in the `toISOString` format.
    let ts = ls[0]["timestamp"].as_str().unwrap();
    assert_eq!(ts.len(), 24, "{ts}");
    assert!(ts.ends_with('Z'));
    assert_eq!(
        std::fs::metadata(w.path()).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_index_agrees(&e.store, w.path());
}

#[test]
fn no_file_until_the_first_message_and_metadata_first() {
    let e = env();
    let sid = "22222222-2222-4222-8222-222222222222";
    let mut w = e
        .store
        .writer(&e.project, sid, WriterOptions::new("/w"))
        .unwrap();
    w.set_title("my title");
    w.append(json!({"type": "attachment", "attachment": {"type": "skill_listing"}}))
        .unwrap();
    w.flush().unwrap();
    assert!(
        !w.path().exists(),
        "a session that never spoke leaves no file"
    );
    let u = w.append(user("first")).unwrap().unwrap();
    w.flush().unwrap();
    let ls = lines(w.path());
    assert_eq!(ls[0]["type"], "custom-title");
    assert_eq!(ls[0]["sessionId"], sid);
    assert_eq!(ls[1]["type"], "attachment");
    assert_eq!(ls[2]["uuid"], u.as_str());
    assert_eq!(ls[2]["parentUuid"], ls[1]["uuid"]);
}

#[test]
fn dedup_by_index_and_the_prefix_rule_but_never_for_sidechains() {
    let e = env();
    let sid = "33333333-3333-4333-8333-333333333333";
    let mut w = e
        .store
        .writer(&e.project, sid, WriterOptions::new("/w"))
        .unwrap();
    let u1 = w.append(user("a")).unwrap().unwrap();
    let a1 = w.append(assistant("b")).unwrap().unwrap();
    let u2 = w.append(user("c")).unwrap().unwrap();
    w.close().unwrap();
    // A new writer (new process): the uuids are known from the index only.
    let mut w = e
        .store
        .writer(&e.project, sid, WriterOptions::new("/w"))
        .unwrap();
    let mut again = user("a");
    again["uuid"] = u1.clone().into();
    let mut again2 = assistant("b");
    again2["uuid"] = a1.clone().into();
    w.append_all(vec![again, again2, user("d")]).unwrap();
    let report = w.flush().unwrap();
    assert_eq!(report.duplicates, [u1.clone(), a1.clone()]);
    let ls = lines(w.path());
    assert_eq!(ls.len(), 4);
    assert_eq!(
        ls[3]["parentUuid"],
        a1.as_str(),
        "prefix rule: cursor moved to a1"
    );
    // A duplicate later in a batch is dropped without moving the cursor.
    let mut dup = user("c");
    dup["uuid"] = u2.clone().into();
    w.append_all(vec![user("e"), dup]).unwrap();
    let report = w.flush().unwrap();
    assert_eq!(report.duplicates, std::slice::from_ref(&u2));
    // Sidechain messages are never deduped (a forked agent repeats uuids on purpose).
    let mut side = user("a");
    side["uuid"] = u1.clone().into();
    side["isSidechain"] = true.into();
    side["agentId"] = "a0123456789abcdef".into();
    w.append(side).unwrap();
    let report = w.flush().unwrap();
    assert_eq!(report.written.len(), 1);
    let agent = e
        .project
        .join(sid)
        .join("subagents/agent-a0123456789abcdef.jsonl");
    let ls = lines(&agent);
    assert_eq!(ls[0]["uuid"], u1.as_str());
    assert_eq!(ls[0]["agentId"], "a0123456789abcdef");
    assert!(
        agent
            .with_file_name("agent-a0123456789abcdef.meta.json")
            .is_file()
    );
    let dir_mode = std::fs::metadata(agent.parent().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(dir_mode & 0o777, 0o700);
}

#[test]
fn a_flush_of_only_duplicates_keeps_the_cursor_it_moved() {
    // The shrunk case of the property test (seed 0: [Repeat(0), Remove, Assistant, ...]): a
    // flush that writes nothing must not lose track of where the file ends, or the next flush
    // reads the whole file as a foreign append and moves the cursor to its last message.
    let e = env();
    let sid = "77777777-7777-4777-8777-777777777777";
    let mut w = e
        .store
        .writer(&e.project, sid, WriterOptions::new("/w"))
        .unwrap();
    let u1 = w.append(user("a")).unwrap().unwrap();
    let a1 = w.append(assistant("b")).unwrap().unwrap();
    w.close().unwrap();
    let mut w = e
        .store
        .writer(&e.project, sid, WriterOptions::new("/w"))
        .unwrap();
    assert_eq!(w.cursor(), Some(a1.as_str()), "starts at the resume tip");
    let mut again = user("a");
    again["uuid"] = u1.clone().into();
    w.append(again).unwrap();
    let report = w.flush().unwrap();
    assert_eq!(report.duplicates, std::slice::from_ref(&u1));
    assert_eq!(report.bytes, 0);
    assert_eq!(
        w.cursor(),
        Some(u1.as_str()),
        "prefix rule: cursor moved to u1"
    );
    w.append(assistant("c")).unwrap();
    w.flush().unwrap();
    let ls = lines(w.path());
    assert_eq!(ls.len(), 3);
    assert_eq!(
        ls[2]["parentUuid"],
        u1.as_str(),
        "the cursor the duplicate-only flush moved is kept"
    );
    assert_index_agrees(&e.store, w.path());
}

#[test]
fn an_invalid_entry_queues_nothing_of_its_batch() {
    let e = env();
    let mut w = e
        .store
        .writer(
            &e.project,
            "44444444-4444-4444-8444-444444444444",
            WriterOptions::new("/w"),
        )
        .unwrap();
    let err = w
        .append_all(vec![
            user("ok"),
            json!({"type": "user", "uuid": 5, "message": {}}),
        ])
        .unwrap_err();
    assert!(err.to_string().starts_with("entry 1:"), "{err}");
    w.flush().unwrap();
    assert!(!w.path().exists());
    assert!(
        e.store
            .writer(&e.project, "../x", WriterOptions::new("/w"))
            .is_err()
    );
    let mut bad_agent = user("x");
    bad_agent["isSidechain"] = true.into();
    bad_agent["agentId"] = "../../etc".into();
    assert!(w.append(bad_agent).is_err(), "agent ids are never paths");
}

#[test]
fn a_foreign_append_moves_the_cursor_and_a_torn_one_is_fenced() {
    let e = env();
    let sid = "55555555-5555-4555-8555-555555555555";
    let mut w = e
        .store
        .writer(&e.project, sid, WriterOptions::new("/w"))
        .unwrap();
    let u1 = w.append(user("a")).unwrap().unwrap();
    w.flush().unwrap();
    // Claude Code appends without a lock.
    let foreign = "99999999-0000-4000-8000-000000000001";
    let line = format!(
        "{{\"parentUuid\":\"{u1}\",\"isSidechain\":false,\"type\":\"assistant\",\"message\":{{\"id\":\"m\",\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"x\"}}]}},\"uuid\":\"{foreign}\",\"timestamp\":\"2020-01-01T00:00:00.000Z\",\"sessionId\":\"{sid}\"}}\n"
    );
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(w.path())
        .unwrap();
    std::io::Write::write_all(&mut f, line.as_bytes()).unwrap();
    w.append(user("b")).unwrap();
    w.flush().unwrap();
    let ls = lines(w.path());
    assert_eq!(ls[2]["parentUuid"], foreign);
    // A torn fragment that stays torn is fenced off: no written line is glued onto it.
    std::io::Write::write_all(&mut f, b"{\"parentUuid\":\"x\",\"type\":").unwrap();
    let u3 = w.append(user("c")).unwrap().unwrap();
    w.flush().unwrap();
    let raw = std::fs::read_to_string(w.path()).unwrap();
    let last = raw.lines().last().unwrap();
    let v: Value = serde_json::from_str(last).unwrap();
    assert_eq!(v["uuid"], u3.as_str());
    let t = Transcript::open(w.path()).unwrap();
    assert_eq!(t.bad_lines.len(), 1, "the fragment is one skipped line");
    assert_index_agrees(&e.store, w.path());
}

#[test]
fn tombstone_outside_the_tail_window_is_a_full_atomic_rewrite() {
    let e = env();
    let sid = "66666666-6666-4666-8666-666666666666";
    let mut w = e
        .store
        .writer(&e.project, sid, WriterOptions::new("/w"))
        .unwrap();
    let first = w.append(user("x")).unwrap().unwrap();
    for i in 0..200 {
        w.append(assistant(&format!("{i}{}", "y".repeat(600))))
            .unwrap();
    }
    w.flush().unwrap();
    let before = std::fs::read(w.path()).unwrap();
    assert!(before.len() as u64 > chainlog::writer::TAIL_WINDOW * 2);
    let ino = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(w.path()).unwrap());
    assert!(w.remove(&first).unwrap());
    let after = std::fs::read(w.path()).unwrap();
    let first_len = before.iter().position(|&b| b == b'\n').unwrap() + 1;
    assert_eq!(after, before[first_len..], "exactly the line is gone");
    let meta = std::fs::metadata(w.path()).unwrap();
    assert_ne!(
        std::os::unix::fs::MetadataExt::ino(&meta),
        ino,
        "renamed in"
    );
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert!(!w.remove(&first).unwrap(), "already gone");
    assert_index_agrees(&e.store, w.path());
}

// ---------------------------------------------------------------------------------------
// The property test.

#[derive(Debug, Clone)]
enum Op {
    User,
    Assistant,
    ToolPair,
    /// Re-append a uuid already in the session (from the generated part or written).
    Repeat(prop::sample::Index),
    Sidechain(u8),
    Title(u8),
    Tag(u8),
    Remove(prop::sample::Index),
    Flush,
    Reopen,
    Foreign,
    /// `chainlog append` in a real process, killed with SIGKILL after this many × 0.5 ms.
    Kill(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => any::<u8>().prop_map(Op::Kill),
        4 => Just(Op::User),
        4 => Just(Op::Assistant),
        2 => Just(Op::ToolPair),
        2 => any::<prop::sample::Index>().prop_map(Op::Repeat),
        2 => (0u8..2).prop_map(Op::Sidechain),
        1 => (0u8..3).prop_map(Op::Title),
        1 => (0u8..3).prop_map(Op::Tag),
        1 => any::<prop::sample::Index>().prop_map(Op::Remove),
        3 => Just(Op::Flush),
        1 => Just(Op::Reopen),
        1 => Just(Op::Foreign),
    ]
}

/// A line the model expects after the generated prefix.
#[derive(Debug, Clone, PartialEq)]
enum Line {
    Msg {
        uuid: String,
        parent: Option<String>,
    },
    Meta {
        ty: String,
        text: String,
    },
}

fn line_of(v: &Value) -> Line {
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    match v["type"].as_str().unwrap() {
        "custom-title" => Line::Meta {
            ty: "custom-title".into(),
            text: s("customTitle").unwrap(),
        },
        "tag" => Line::Meta {
            ty: "tag".into(),
            text: s("tag").unwrap(),
        },
        _ => Line::Msg {
            uuid: s("uuid").unwrap(),
            parent: s("parentUuid"),
        },
    }
}

/// Runs `chainlog append PATH` with `stdin` in a child process and kills it with SIGKILL after
/// `delay_us` (it may have finished by then).
fn kill_an_append(e: &Env, path: &Path, stdin: &str, delay_us: u64) {
    use std::io::Write as _;
    let claude = e.project.parent().unwrap().parent().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_chainlog"))
        .arg("--claude-dir")
        .arg(claude)
        .arg("--index-dir")
        .arg(e.store.db_path(path).parent().unwrap())
        .arg("append")
        .arg(path)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    std::thread::sleep(std::time::Duration::from_micros(delay_us));
    let _ = child.kill(); // SIGKILL
    let _ = child.wait();
}

/// The title and tag in effect after `lines`.
fn initial_meta(lines: &[Value]) -> (Option<String>, Option<String>) {
    let (mut title, mut tag) = (None, None);
    for v in lines {
        match v["type"].as_str() {
            Some("custom-title") => title = v["customTitle"].as_str().map(str::to_owned),
            Some("tag") => tag = v["tag"].as_str().map(str::to_owned),
            _ => {}
        }
    }
    (title, tag)
}

/// `lines` without metadata lines that restate the title or tag already in effect.
fn effective(lines: &[Line], mut title: Option<String>, mut tag: Option<String>) -> Vec<Line> {
    let mut out = Vec::new();
    for l in lines {
        if let Line::Meta { ty, text } = l {
            let state = if ty == "custom-title" {
                &mut title
            } else {
                &mut tag
            };
            if state.as_deref() == Some(text.as_str()) {
                continue;
            }
            *state = Some(text.clone());
        }
        out.push(l.clone());
    }
    out
}

/// Pending entries in the model: the parent is decided at flush, as the writer does.
#[derive(Debug, Clone)]
enum Queued {
    Msg {
        uuid: String,
        source: Option<String>,
        batch_start: bool,
    },
    Meta(Line),
}

struct Model {
    lines: Vec<Line>,
    known: Vec<String>,
    cursor: Option<String>,
    queued: Vec<Queued>,
    agents: [Vec<(String, Option<String>)>; 2],
    agent_queued: [Vec<String>; 2],
}

impl Model {
    fn flush(&mut self) {
        let mut prefix = true;
        for q in std::mem::take(&mut self.queued) {
            match q {
                Queued::Meta(l) => self.lines.push(l),
                Queued::Msg {
                    uuid,
                    source,
                    batch_start,
                } => {
                    prefix |= batch_start;
                    if self.known.contains(&uuid) {
                        if prefix {
                            self.cursor = Some(uuid);
                        }
                        continue;
                    }
                    prefix = false;
                    let parent = source.or_else(|| self.cursor.clone());
                    self.lines.push(Line::Msg {
                        uuid: uuid.clone(),
                        parent,
                    });
                    self.known.push(uuid.clone());
                    self.cursor = Some(uuid);
                }
            }
        }
        for (a, q) in self.agent_queued.iter_mut().enumerate() {
            for uuid in std::mem::take(q) {
                let parent = self.agents[a].last().map(|(u, _)| u.clone());
                self.agents[a].push((uuid, parent));
            }
        }
    }
}

const AGENTS: [&str; 2] = ["a00000000000000a1", "aprompt_suggestion-b2"];

#[allow(
    clippy::too_many_lines,
    reason = "one match arm per operation, each beside its model update"
)]
fn run_ops(seed: u64, ops: &[Op]) {
    let e = env();
    let mut g = GenOptions::everything(seed, 6_000);
    g.corruption = Corruption::default();
    g.sidechains = SidechainLayout::None;
    let s = generate(&g);
    let path = e.project.join(format!("{}.jsonl", s.session_id));
    std::fs::write(&path, &s.main).unwrap();
    let base_len = s.main.len();
    let initial = Transcript::open(&path).unwrap();
    let mut m = Model {
        lines: Vec::new(),
        known: initial
            .rows
            .iter()
            .map(|r| initial.names.name(r.head.uuid))
            .collect(),
        cursor: chain_tip(&path),
        queued: Vec::new(),
        agents: [Vec::new(), Vec::new()],
        agent_queued: [Vec::new(), Vec::new()],
    };
    let opts = || {
        let mut o = WriterOptions::new(s.cwd.clone());
        o.fsync = false;
        o
    };
    let mut w = e.store.writer(&e.project, &s.session_id, opts()).unwrap();
    let mut n = 0u32;
    for (step, op) in ops.iter().enumerate() {
        n += 1;
        let mut check = false;
        match op {
            Op::User | Op::Assistant => {
                let v = if matches!(op, Op::User) {
                    user(&format!("u{n}"))
                } else {
                    assistant(&format!("a{n}"))
                };
                let uuid = w.append(v).unwrap().unwrap();
                m.queued.push(Queued::Msg {
                    uuid,
                    source: None,
                    batch_start: true,
                });
            }
            Op::ToolPair => {
                let id = format!("toolu_{n}");
                let uuids = w.append_all(vec![tool_use(&id), tool_result(&id)]).unwrap();
                let (a, r) = (uuids[0].clone().unwrap(), uuids[1].clone().unwrap());
                m.queued.push(Queued::Msg {
                    uuid: a.clone(),
                    source: None,
                    batch_start: true,
                });
                m.queued.push(Queued::Msg {
                    uuid: r,
                    source: Some(a),
                    batch_start: false,
                });
            }
            Op::Repeat(i) => {
                let uuid = i.get(&m.known).clone();
                let mut v = user("again");
                v["uuid"] = uuid.clone().into();
                w.append(v).unwrap();
                m.queued.push(Queued::Msg {
                    uuid,
                    source: None,
                    batch_start: true,
                });
            }
            Op::Sidechain(a) => {
                let mut v = user(&format!("s{n}"));
                v["isSidechain"] = true.into();
                v["agentId"] = AGENTS[*a as usize].into();
                let uuid = w.append(v).unwrap().unwrap();
                m.agent_queued[*a as usize].push(uuid);
            }
            Op::Title(t) => {
                let text = format!("title {t}");
                w.set_title(&text);
                m.queued.push(Queued::Meta(Line::Meta {
                    ty: "custom-title".into(),
                    text,
                }));
            }
            Op::Tag(t) => {
                let text = if *t == 0 {
                    String::new()
                } else {
                    format!("tag{t}")
                };
                w.set_tag(&text);
                m.queued.push(Queued::Meta(Line::Meta {
                    ty: "tag".into(),
                    text,
                }));
            }
            Op::Remove(i) => {
                w.flush().unwrap();
                m.flush();
                let ours: Vec<String> = m
                    .lines
                    .iter()
                    .filter_map(|l| match l {
                        Line::Msg { uuid, .. } => Some(uuid.clone()),
                        Line::Meta { .. } => None,
                    })
                    .collect();
                if !ours.is_empty() {
                    let uuid = i.get(&ours).clone();
                    assert!(w.remove(&uuid).unwrap());
                    m.lines
                        .retain(|l| !matches!(l, Line::Msg { uuid: u, .. } if *u == uuid));
                    m.known.retain(|u| *u != uuid);
                    m.cursor = chain_tip(&path);
                }
                check = true;
            }
            Op::Flush => {
                w.flush().unwrap();
                m.flush();
                check = true;
            }
            Op::Reopen => {
                w.close().unwrap();
                m.flush();
                m.cursor = chain_tip(&path);
                w = e.store.writer(&e.project, &s.session_id, opts()).unwrap();
                check = true;
            }
            Op::Kill(delay) => {
                // The in-process writer closes; a real process appends a batch and is killed
                // at some point: the file holds the whole batch or none of it (one `write`),
                // and whatever the index kept still equals the scan.
                w.close().unwrap();
                m.flush();
                let tip = chain_tip(&path);
                let batch: Vec<String> = (0..4).map(|_| uuid::Uuid::new_v4().to_string()).collect();
                let lines_in: Vec<String> = batch
                    .iter()
                    .enumerate()
                    .map(|(i, u)| {
                        let mut v = if i % 2 == 0 {
                            user("k")
                        } else {
                            assistant("k")
                        };
                        v["uuid"] = u.as_str().into();
                        v.to_string()
                    })
                    .collect();
                let stdin = lines_in.join("\n") + "\n";
                kill_an_append(&e, &path, &stdin, u64::from(*delay) * 500);
                // The next writer completes a batch whose journal was whole when the append
                // was killed (seen once in CI: killed between the journal and the append), so
                // the file is judged once a writer has opened it.
                w = e.store.writer(&e.project, &s.session_id, opts()).unwrap();
                let all = lines(&path);
                let file: Vec<Line> = all[initial.frame.lines as usize..]
                    .iter()
                    .map(line_of)
                    .collect();
                let in_batch =
                    |l: &Line| matches!(l, Line::Msg { uuid, .. } if batch.contains(uuid));
                let got: Vec<&Line> = file.iter().filter(|l| in_batch(l)).collect();
                assert!(
                    got.is_empty() || got.len() == batch.len(),
                    "step {step}: part of a batch written: {got:?}"
                );
                // Everything else is what the model holds (plus restated metadata).
                let others: Vec<Line> = file.iter().filter(|l| !in_batch(l)).cloned().collect();
                let (title, tag) = initial_meta(&all[..initial.frame.lines as usize]);
                assert_eq!(
                    effective(&others, title.clone(), tag.clone()),
                    effective(&m.lines, title, tag),
                    "step {step}: the lines before the killed batch"
                );
                let mut parent = tip;
                for (l, u) in got.iter().zip(&batch) {
                    assert_eq!(
                        **l,
                        Line::Msg {
                            uuid: u.clone(),
                            parent: parent.clone()
                        },
                        "step {step}: the killed batch chains from the tip"
                    );
                    parent = Some(u.clone());
                    m.known.push(u.clone());
                }
                m.lines = file;
                m.cursor = chain_tip(&path);
                check = true;
            }
            Op::Foreign => {
                let uuid = uuid::Uuid::new_v4().to_string();
                let parent = m
                    .cursor
                    .clone()
                    .map_or("null".into(), |p| format!("\"{p}\""));
                let line = format!(
                    "{{\"parentUuid\":{parent},\"isSidechain\":false,\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"cc\"}},\"uuid\":\"{uuid}\",\"timestamp\":\"2099-01-01T00:00:00.000Z\",\"sessionId\":\"{}\"}}\n",
                    s.session_id
                );
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .unwrap();
                std::io::Write::write_all(&mut f, line.as_bytes()).unwrap();
                // The writer sees it at its next flush: flush the model's queue after it.
                m.lines.push(Line::Msg {
                    uuid: uuid.clone(),
                    parent: m.cursor.clone(),
                });
                m.known.push(uuid.clone());
                m.cursor = Some(uuid);
                w.flush().unwrap();
                m.flush();
                check = true;
            }
        }
        if check {
            let bytes = std::fs::read(&path).unwrap();
            assert_eq!(
                bytes[..base_len],
                s.main[..],
                "step {step}: the prefix is untouched"
            );
            let got: Vec<Line> = lines(&path)[initial.frame.lines as usize..]
                .iter()
                .map(line_of)
                .collect();
            // The writer restates the title and tag near the end (every 32 KiB and at close):
            // lines that repeat the title or tag in effect change nothing; compare the rest.
            let (title, tag) = initial_meta(&lines(&path)[..initial.frame.lines as usize]);
            assert_eq!(
                effective(&got, title.clone(), tag.clone()),
                effective(&m.lines, title, tag),
                "step {step} {op:?}"
            );
            let t = Transcript::open(&path).unwrap();
            assert_eq!(t.bad_lines.len(), initial.bad_lines.len(), "step {step}");
            assert_index_agrees(&e.store, &path);
            for (a, model) in m.agents.iter().enumerate() {
                let p = e
                    .project
                    .join(&s.session_id)
                    .join(format!("subagents/agent-{}.jsonl", AGENTS[a]));
                if model.is_empty() {
                    assert!(!p.exists());
                    continue;
                }
                let got: Vec<(String, Option<String>)> = lines(&p)
                    .iter()
                    .map(|v| match line_of(v) {
                        Line::Msg { uuid, parent } => (uuid, parent),
                        Line::Meta { .. } => unreachable!(),
                    })
                    .collect();
                assert_eq!(&got, model, "agent {a} at step {step}");
                assert_index_agrees(&e.store, &p);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_write_sequences_match_the_model(seed in 0u64..1000, ops in prop::collection::vec(op(), 1..24)) {
        run_ops(seed, &ops);
    }
}

#[test]
fn the_title_and_tag_are_restated_near_the_end() {
    let e = env();
    let sid = "7e57c0de-0000-4000-8000-00000000e7a1";
    let path = e.project.join(format!("{sid}.jsonl"));
    let mut w = e
        .store
        .writer(&e.project, sid, WriterOptions::new("/w"))
        .unwrap();
    w.append(user("first")).unwrap();
    w.set_title("the title");
    w.set_tag("t1");
    w.flush().unwrap();
    let padding = "p".repeat(900);
    for i in 0..150 {
        w.append(user(&format!("{i} {padding}"))).unwrap();
        w.append(assistant(&format!("{i} {padding}"))).unwrap();
        if i % 5 == 4 {
            w.flush().unwrap();
        }
    }
    w.append(user("last question")).unwrap();
    w.close().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let all = lines(&path);
    let titles = all.iter().filter(|v| v["type"] == "custom-title").count();
    // ~270 KiB of messages: stated again each time the last statement left the last 64 KiB
    // (the window the client reads), not more often.
    let at: Vec<usize> = {
        let mut off = 0;
        let mut v = Vec::new();
        for l in bytes.split_inclusive(|&b| b == b'\n') {
            if l.starts_with(b"{\"type\":\"custom-title\"") {
                v.push(off);
            }
            off += l.len();
        }
        v
    };
    // Each statement follows the one before once it left the window, within one flush (10
    // messages, ~20 KiB) of it, never before.
    assert!(titles >= 4, "{titles} title lines at {at:?}");
    for w in at.windows(2) {
        let gap = w[1] - w[0];
        assert!(
            (64 * 1024..(64 + 20) * 1024).contains(&gap),
            "title lines at {at:?} of {}",
            bytes.len()
        );
    }
    // The 64 KiB window at the end holds the title and the tag.
    let tail = String::from_utf8_lossy(&bytes[bytes.len() - 64 * 1024..]).into_owned();
    assert!(tail.contains("\"customTitle\":\"the title\""));
    assert!(tail.contains("\"tag\":\"t1\""));
    // The resume view and the index are untouched by the restated lines.
    assert_index_agrees(&e.store, &path);

    // A writer that only sets a title writes it once; an existing title is carried over.
    let mut w = e
        .store
        .writer(&e.project, sid, WriterOptions::new("/w"))
        .unwrap();
    w.set_title("renamed");
    w.close().unwrap();
    let after = lines(&path);
    assert_eq!(after.len(), all.len() + 1, "exactly one line added");
    // Ten one-message writers: the title is in the window, so none states it again.
    for i in 0..10 {
        let mut w = e
            .store
            .writer(&e.project, sid, WriterOptions::new("/w"))
            .unwrap();
        w.append(user(&format!("more {i}"))).unwrap();
        w.close().unwrap();
    }
    let end = lines(&path);
    assert_eq!(
        end.len(),
        after.len() + 10,
        "only the ten messages were added"
    );
    assert!(end[after.len()..].iter().all(|v| v["type"] == "user"));
    // Once 64 KiB of messages follow it, the title is stated again, after them.
    let mut w = e
        .store
        .writer(&e.project, sid, WriterOptions::new("/w"))
        .unwrap();
    w.append(user(&"q".repeat(70 * 1024))).unwrap();
    w.close().unwrap();
    let last = lines(&path);
    let restated: Vec<&Value> = last[end.len()..].iter().collect();
    assert_eq!(restated[0]["type"], "user");
    assert!(
        restated
            .iter()
            .any(|v| v["type"] == "custom-title" && v["customTitle"] == "renamed"),
        "the title is stated again once it left the window: {restated:?}"
    );
    assert!(
        restated
            .iter()
            .any(|v| v["type"] == "tag" && v["tag"] == "t1")
    );
}

#[test]
fn a_title_longer_than_the_window_is_not_stated_again_by_each_append() {
    let e = env();
    let sid = "7e57c0de-0000-4000-8000-00000000e7a2";
    let path = e.project.join(format!("{sid}.jsonl"));
    let mut w = e
        .store
        .writer(&e.project, sid, WriterOptions::new("/w"))
        .unwrap();
    w.append(user("first")).unwrap();
    w.set_title(&"T".repeat(130 * 1024));
    w.set_tag("t");
    w.close().unwrap();
    let before = std::fs::metadata(&path).unwrap().len();
    for i in 0..10 {
        let mut w = e
            .store
            .writer(&e.project, sid, WriterOptions::new("/w"))
            .unwrap();
        w.append(user(&format!("short {i}"))).unwrap();
        w.close().unwrap();
    }
    let grown = std::fs::metadata(&path).unwrap().len() - before;
    assert!(
        grown < 10 * 1024,
        "ten short appends grew the file by {grown} bytes"
    );
    let all = lines(&path);
    assert_eq!(
        all.iter().filter(|v| v["type"] == "custom-title").count(),
        1
    );
    assert_eq!(all.iter().filter(|v| v["type"] == "tag").count(), 1);
}
