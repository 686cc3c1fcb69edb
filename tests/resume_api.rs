//! The API view (`--format api`, SPEC A8) on hand-made shapes, and fork agents resumed through
//! `fork-context-ref`. Each behaviour here was observed on Claude Code 2.1.328
//! (tests/conformance.rs checks the whole against the real client when the kit ran).

#![allow(
    clippy::needless_pass_by_value,
    reason = "json! values built inline read better passed by value"
)]

mod util;

use chainlog::view::ApiOptions;
use chainlog::view::api_messages_of;
use serde_json::{Value, json};

fn user(uuid: &str, content: Value) -> Value {
    json!({"type": "user", "uuid": uuid, "message": {"role": "user", "content": content}})
}

fn assistant(uuid: &str, mid: &str, block: Value) -> Value {
    json!({"type": "assistant", "uuid": uuid, "message": {"id": mid, "role": "assistant", "model": "m1", "content": [block]}})
}

fn tool_use(id: &str, name: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": name, "input": {}})
}

fn result(id: &str) -> Value {
    json!([{"type": "tool_result", "tool_use_id": id, "content": "ok"}])
}

fn api(entries: &[Value]) -> Vec<Value> {
    api_messages_of(entries, &ApiOptions::default())
}

fn roles(msgs: &[Value]) -> Vec<&str> {
    msgs.iter().map(|m| m["role"].as_str().unwrap()).collect()
}

#[test]
fn one_response_is_one_message_and_its_results_one_user_message() {
    // A(U1) R1 A(U2) R2 on disk becomes A(U1,U2) U(R1,R2).
    let msgs = api(&[
        user("u", json!("go")),
        assistant("a1", "m", json!({"type": "text", "text": "two calls"})),
        assistant("a2", "m", tool_use("t1", "Bash")),
        user("r1", result("t1")),
        assistant("a3", "m", tool_use("t2", "Task")),
        user("r2", result("t2")),
        assistant("a4", "n", json!({"type": "text", "text": "done"})),
    ]);
    assert_eq!(roles(&msgs), ["user", "assistant", "user", "assistant"]);
    let ids: Vec<&str> = msgs[1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["id"].as_str())
        .collect();
    assert_eq!(ids, ["t1", "t2"]);
    // Task is sent as Agent.
    assert_eq!(msgs[1]["content"][2]["name"], "Agent");
    assert_eq!(msgs[2]["content"].as_array().unwrap().len(), 2);
}

#[test]
fn unanswered_calls_mid_conversation_are_dropped_a_trailing_one_is_repaired() {
    let mid = api(&[
        user("u", json!("go")),
        assistant("a1", "m", tool_use("lost", "Bash")),
        user("u2", json!("again")),
        assistant("a2", "n", json!({"type": "text", "text": "hi"})),
    ]);
    // The call-only reply disappears; the two prompts join into one user message.
    assert_eq!(roles(&mid), ["user", "assistant"]);
    assert_eq!(mid[0]["content"][0]["text"], "go\n");

    let tail = api(&[
        user("u", json!("go")),
        assistant("a1", "m", tool_use("open", "Bash")),
    ]);
    assert_eq!(roles(&tail), ["user", "assistant", "user", "assistant"]);
    assert_eq!(tail[2]["content"][0]["tool_use_id"], "open");
    assert_eq!(tail[2]["content"][0]["is_error"], true);
    assert!(
        tail[2]["content"][0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("[Tool call interrupted: the session ended")
    );
    assert_eq!(tail[3]["content"][0]["text"], "No response requested.");
}

#[test]
fn api_errors_and_system_entries_are_dropped_local_commands_are_user_text() {
    let msgs = api(&[
        user("u", json!("go")),
        json!({"type": "assistant", "uuid": "e", "isApiErrorMessage": true, "message": {"id": "x", "role": "assistant", "model": "<synthetic>", "content": [{"type": "text", "text": "API Error: 400"}]}}),
        json!({"type": "system", "subtype": "api_error", "uuid": "s"}),
        json!({"type": "system", "subtype": "local_command", "uuid": "l", "content": "<local-command-stdout>x</local-command-stdout>"}),
    ]);
    // No synthetic reply after an API error; the local command joins the prompt.
    assert_eq!(roles(&msgs), ["user"]);
    assert_eq!(
        msgs[0]["content"][1]["text"],
        "<local-command-stdout>x</local-command-stdout>"
    );
}

#[test]
fn a_trailing_prompt_gets_no_response_requested_a_thinking_cut_does_not() {
    let prompt = api(&[user("u", json!("go"))]);
    assert_eq!(roles(&prompt), ["user", "assistant"]);
    let thinking = api(&[
        user("u", json!("go")),
        assistant(
            "a",
            "m",
            json!({"type": "thinking", "thinking": "hm", "signature": "s"}),
        ),
    ]);
    // The thinking-only reply is not sent, and no synthetic reply is added (--at a thinking line).
    assert_eq!(roles(&thinking), ["user"]);
}

#[test]
fn duplicate_tool_use_ids_are_kept_once() {
    let msgs = api(&[
        user("u", json!("go")),
        assistant("a1", "m", tool_use("t", "Bash")),
        assistant("a2", "m", tool_use("t", "Bash")),
        user("r", result("t")),
        assistant("a3", "n", json!({"type": "text", "text": "done"})),
    ]);
    assert_eq!(msgs[1]["content"].as_array().unwrap().len(), 1);
}

#[test]
fn signed_thinking_of_another_model_is_left_out() {
    let entries = [
        user("u", json!("go")),
        assistant(
            "a",
            "m",
            json!({"type": "thinking", "thinking": "hm", "signature": "s"}),
        ),
        assistant("b", "m", json!({"type": "text", "text": "hi"})),
    ];
    let same = api_messages_of(
        &entries,
        &ApiOptions {
            model: Some("m1".into()),
        },
    );
    let other = api_messages_of(
        &entries,
        &ApiOptions {
            model: Some("m2".into()),
        },
    );
    assert_eq!(same[1]["content"].as_array().unwrap().len(), 2);
    assert_eq!(other[1]["content"].as_array().unwrap().len(), 1);
}

/// A fork agent resumes with the parent's chain up to the spawning `tool_use`, then its own
/// lines (SPEC A8), from the index and with `--no-index`.
#[test]
fn fork_agent_resumes_through_fork_context_ref() {
    let dir = tempfile::tempdir().unwrap();
    let sid = "11111111-1111-4111-8111-111111111111";
    let project = dir.path().join("projects/-p");
    let agents = project.join(sid).join("subagents");
    std::fs::create_dir_all(&agents).unwrap();
    let line = |uuid: &str, parent: Option<&str>, ty: &str, content: Value, side: bool| {
        let mut v = json!({"parentUuid": parent, "isSidechain": side, "type": ty,
            "message": {"role": ty, "content": content}, "uuid": uuid,
            "timestamp": "2026-01-01T00:00:00.000Z", "sessionId": sid});
        if ty == "assistant" {
            v["message"]["id"] = json!(format!("msg-{uuid}"));
        }
        v.to_string()
    };
    let u = |n: u8| format!("00000000-0000-4000-8000-0000000000{n:02}");
    let parent = [
        line(&u(1), None, "user", json!("spawn a fork"), false),
        line(
            &u(2),
            Some(&u(1)),
            "assistant",
            json!([tool_use("tf", "Agent")]),
            false,
        ),
        line(&u(3), Some(&u(2)), "user", result("tf"), false),
        line(
            &u(4),
            Some(&u(3)),
            "assistant",
            json!([{"type": "text", "text": "after"}]),
            false,
        ),
    ];
    std::fs::write(
        project.join(format!("{sid}.jsonl")),
        parent.join("\n") + "\n",
    )
    .unwrap();
    let agent = [
        json!({"type": "fork-context-ref", "agentId": "a0123456789abcdef", "parentSessionId": sid, "parentLastUuid": u(2), "contextLength": 2}).to_string(),
        line(&u(11), None, "user", json!("fork directive"), true),
        line(&u(12), Some(&u(11)), "assistant", json!([{"type": "text", "text": "fork report"}]), true),
    ];
    std::fs::write(
        agents.join("agent-a0123456789abcdef.jsonl"),
        agent.join("\n") + "\n",
    )
    .unwrap();
    let claude = dir.path().to_str().unwrap();
    for extra in [&[][..], &["--no-index"][..]] {
        let mut args = vec![
            "--claude-dir",
            claude,
            "resume",
            "a0123456789abcdef",
            "--format",
            "uuids",
        ];
        args.extend_from_slice(extra);
        let out = util::chainlog(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        assert_eq!(got, [u(1), u(2), u(11), u(12)], "{extra:?}");
    }
}

/// `leaves` tells parallel dead ends (tool results of a multi-line response) from branches.
#[test]
fn leaves_marks_parallel_dead_ends() {
    let path = util::manifest_dir().join("fixtures/a5/step10_parallel_tools.jsonl");
    let out = util::chainlog(&["leaves", path.to_str().unwrap(), "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Vec<(String, bool)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| {
            (
                v["uuid"].as_str().unwrap()[34..].to_owned(),
                v["parallelDeadEnd"].as_bool().unwrap(),
            )
        })
        .collect();
    let want =
        [("05", true), ("06", true), ("12", true), ("14", false)].map(|(u, p)| (u.to_owned(), p));
    assert_eq!(got, want);
}
