//! The API view (`--format api`, SPEC A8) on hand-made shapes, and fork agents resumed through
//! `fork-context-ref`. Each behaviour here was observed on Claude Code 2.1.328
//! (tests/it/conformance.rs checks the whole against the real client when the kit ran).

#![allow(
    clippy::needless_pass_by_value,
    reason = "json! values built inline read better passed by value"
)]

use crate::util;

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

/// Issue 31, class 1 (the shapes `thinking-end*` of fixtures/client, replayed through both
/// clients): a reply of thinking only is dropped before the repair, so the prompt before it
/// ends the chain and gets "No response requested."; cut there (`--at`), nothing is added.
#[test]
fn a_trailing_prompt_gets_no_response_requested_after_a_thinking_end_too() {
    let prompt = api(&[user("u", json!("go"))]);
    assert_eq!(roles(&prompt), ["user", "assistant"]);
    let entries = [
        user("u", json!("go")),
        assistant(
            "a",
            "m",
            json!({"type": "thinking", "thinking": "hm", "signature": "s"}),
        ),
    ];
    let thinking = api(&entries);
    assert_eq!(roles(&thinking), ["user", "assistant"]);
    assert_eq!(thinking[1]["content"][0]["text"], "No response requested.");
    let cut = api_messages_of(
        &entries,
        &ApiOptions {
            cut: true,
            ..ApiOptions::default()
        },
    );
    assert_eq!(roles(&cut), ["user"]);
}

/// Issue 31, class 5 (shape `thinking-end-other-model` cut at its thinking line): a cut inside
/// a response whose next line holds text keeps the reply; left empty once another model's
/// thinking is taken out, it is sent as "(no content)". Of the request's own model, or when
/// the response ends at the cut, the thinking-only reply is dropped.
#[test]
fn a_reply_cut_inside_its_response_and_left_empty_is_no_content() {
    let entries = [
        user("u", json!("go")),
        assistant(
            "a",
            "m",
            json!({"type": "thinking", "thinking": "hm", "signature": "s"}),
        ),
    ];
    let with = |model: &str, inside: bool| {
        api_messages_of(
            &entries,
            &ApiOptions {
                model: Some(model.into()),
                cut: true,
                cut_inside_response: inside,
                ..ApiOptions::default()
            },
        )
    };
    let other = with("other-model", true);
    assert_eq!(roles(&other), ["user", "assistant"]);
    assert_eq!(other[1]["content"][0]["text"], "(no content)");
    assert_eq!(roles(&with("m1", true)), ["user"]);
    assert_eq!(roles(&with("other-model", false)), ["user"]);
}

/// Issue 31, classes 3 and 4 (shapes `tool-loaded`, `tool-refs-removed`, `tool-refs-mixed`):
/// a `ToolSearch` result keeps the references to tools the client has and is followed by
/// "Tool loaded." after the last result of its message; references to MCP tools the client
/// lacks are left out, and a result left with none is the removal notice.
#[test]
fn tool_search_results_load_tools_or_say_they_are_gone() {
    let refs = |names: &[&str]| {
        json!(
            names
                .iter()
                .map(|n| json!({"type": "tool_reference", "tool_name": n}))
                .collect::<Vec<_>>()
        )
    };
    let answer = |id: &str, content: Value| {
        user(
            id,
            json!([{"type": "tool_result", "tool_use_id": id, "content": content}]),
        )
    };
    let entries = [
        user("u", json!("load")),
        assistant("a1", "m", tool_use("t1", "ToolSearch")),
        assistant("a2", "m", tool_use("t2", "ToolSearch")),
        assistant("a3", "m", tool_use("t3", "Bash")),
        answer("t1", refs(&["WebFetch", "mcp__gone__x"])),
        answer("t2", refs(&["mcp__gone__y"])),
        answer("t3", json!("hi")),
        assistant("b", "n", json!({"type": "text", "text": "done"})),
    ];
    let msgs = api(&entries);
    let blocks = msgs[2]["content"].as_array().unwrap();
    let kinds: Vec<&str> = blocks.iter().map(|b| b["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["tool_result", "tool_result", "tool_result", "text"]);
    assert_eq!(blocks[0]["content"], refs(&["WebFetch"]));
    assert_eq!(
        blocks[1]["content"],
        json!([{"type": "text", "text": "[Tool references removed - tools no longer available]"}])
    );
    assert_eq!(blocks[3]["text"], "Tool loaded.");
    // With the MCP server connected, its references stay and load.
    let connected = api_messages_of(
        &entries,
        &ApiOptions {
            mcp_tools: vec!["mcp__gone__".into()],
            ..ApiOptions::default()
        },
    );
    let blocks = connected[2]["content"].as_array().unwrap();
    assert_eq!(blocks[1]["content"], refs(&["mcp__gone__y"]));
    assert_eq!(blocks.len(), 5, "two results loaded tools: {blocks:?}");
}

/// `--at` (the client's `--resume-session-at`, observed on generated sessions replayed with
/// `.ci/replay-at.py`): the client writes no repair for a cut chain. A cut at a prompt gets no
/// "No response requested."; a cut inside a parallel response pairs the calls without a
/// result at request time, the missing results first in the next user message.
#[test]
fn a_cut_chain_is_paired_at_request_time_not_repaired() {
    let cut = ApiOptions {
        cut: true,
        ..ApiOptions::default()
    };
    let at_prompt = api_messages_of(&[user("u", json!("go"))], &cut);
    assert_eq!(roles(&at_prompt), ["user"]);
    let parallel = [
        user("u", json!("go")),
        assistant("a1", "m", tool_use("t1", "Read")),
        assistant("a2", "m", tool_use("t2", "Bash")),
        assistant("a3", "m", tool_use("t3", "Grep")),
        user("r1", result("t1")),
    ];
    let msgs = api_messages_of(&parallel, &cut);
    assert_eq!(roles(&msgs), ["user", "assistant", "user"]);
    let results: Vec<(&str, &Value)> = msgs[2]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["tool_use_id"].as_str().unwrap(), &b["content"]))
        .collect();
    let missing = json!(chainlog::view::TOOL_RESULT_MISSING);
    assert_eq!(
        results,
        [("t2", &missing), ("t3", &missing), ("t1", &json!("ok"))]
    );
    assert_eq!(msgs[2]["content"][0]["is_error"], true);
    // Without the cut, the written repair: results after the recorded one, then the reply.
    let resumed = api(&parallel);
    assert_eq!(roles(&resumed), ["user", "assistant", "user", "assistant"]);
    assert_eq!(resumed[2]["content"][0]["tool_use_id"], "t1");
    assert_eq!(
        resumed[2]["content"][1]["content"][0]["text"],
        chainlog::view::INTERRUPTED_TOOL_CALL
    );
    assert_eq!(resumed[3]["content"][0]["text"], "No response requested.");
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
    let of_model = |model: &str| {
        api_messages_of(
            &entries,
            &ApiOptions {
                model: Some(model.into()),
                ..ApiOptions::default()
            },
        )
    };
    let (same, other) = (of_model("m1"), of_model("m2"));
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

/// Rendered attachments are sent as the client renders them: `renderedRole:"system"` as a
/// `role:"system"` message after the user message they follow (the `<system-reminder>`
/// wrapper removed), `renderedRole:"user"` as user text; a task notification is wrapped in a
/// `<system-reminder>`; attachments without `rendered` are not sent.
#[test]
fn attachments_are_sent_as_rendered_and_task_notifications_wrapped() {
    let attachment = |role: &str, text: &str| {
        json!({"type": "attachment", "uuid": text, "attachment": {"type": "hook_additional_context"},
               "rendered": [{"content": format!("<system-reminder>\n{text}\n</system-reminder>")}],
               "renderedRole": role})
    };
    let msgs = api(&[
        user("u", json!("go")),
        attachment("system", "hook said so"),
        json!({"type": "attachment", "uuid": "p", "attachment": {"type": "prompt_snapshot"}}),
        assistant("a", "m", json!({"type": "text", "text": "done"})),
        json!({"type": "user", "uuid": "n", "origin": {"kind": "task-notification"},
               "message": {"role": "user", "content": "<task-notification>t</task-notification>"}}),
        attachment("user", "file changed"),
    ]);
    assert_eq!(
        roles(&msgs),
        ["user", "system", "assistant", "user", "assistant"]
    );
    assert_eq!(msgs[1]["content"], "hook said so");
    assert_eq!(
        msgs[3]["content"][0]["text"],
        "<system-reminder>\n<task-notification>t</task-notification>\n</system-reminder>\n"
    );
    assert_eq!(
        msgs[3]["content"][1]["text"],
        "<system-reminder>\nfile changed\n</system-reminder>"
    );
}

/// A local-command group opened by its `<local-command-caveat>` meta message gets no
/// "No response requested." (the client carries it into the new prompt).
#[test]
fn a_local_command_group_gets_no_synthetic_reply() {
    let caveat = json!({"type": "user", "uuid": "c", "isMeta": true, "message": {"role": "user",
        "content": "<local-command-caveat>Caveat: the messages below were generated by the user while running local commands.</local-command-caveat>"}});
    let msgs = api(&[
        user("u", json!("go")),
        assistant("a", "m", json!({"type": "text", "text": "done"})),
        caveat,
        user("l", json!("<command-name>/model</command-name>")),
    ]);
    assert_eq!(roles(&msgs), ["user", "assistant", "user"]);
}

/// Interrupt detection runs after the clean-up (SPEC A8): a chain ending in an unrendered
/// `prompt_snapshot` attachment, a local command or an API-error reply after a finished reply
/// is not interrupted; a trailing prompt, or a reply whose only call is unanswered, is.
#[test]
fn interrupt_detection_runs_after_the_clean_up() {
    let dir = tempfile::tempdir().unwrap();
    let sid = "7e57c0de-0000-4000-8000-00000000f00d";
    let line = |n: u32, parent: Option<u32>, body: Value| {
        let mut v = json!({
            "parentUuid": parent.map(|p| format!("00000000-0000-4000-8000-{p:012}")),
            "isSidechain": false,
            "uuid": format!("00000000-0000-4000-8000-{n:012}"),
            "timestamp": format!("2026-01-01T00:00:{n:02}.000Z"),
            "sessionId": sid,
        });
        v.as_object_mut()
            .unwrap()
            .extend(body.as_object().unwrap().clone());
        v.to_string()
    };
    let reply = |text: &str| json!({"type": "assistant", "message": {"id": format!("msg_{text}"), "role": "assistant", "model": "m1", "content": [{"type": "text", "text": text}]}});
    let prompt = json!({"type": "user", "message": {"role": "user", "content": "go"}});
    let interrupt = |name: &str, tail: Vec<Value>| -> String {
        let mut lines = vec![line(1, None, prompt.clone()), line(2, Some(1), reply("hi"))];
        for (k, body) in tail.into_iter().enumerate() {
            let n = 3 + u32::try_from(k).unwrap();
            lines.push(line(n, Some(n - 1), body));
        }
        let path = dir.path().join(format!("{name}.jsonl"));
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let index = dir.path().join("index");
        let out = util::chainlog(&[
            "--json",
            "--index-dir",
            index.to_str().unwrap(),
            "resume",
            path.to_str().unwrap(),
            "--format",
            "uuids",
        ]);
        assert!(out.status.success(), "{name}: {out:?}");
        let trailer = util::resume_trailer(&out);
        trailer["chainlog"]["interrupt"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let snapshot = json!({"type": "attachment", "attachment": {"type": "prompt_snapshot"}});
    let local = json!({"type": "system", "subtype": "local_command", "content": "<command-name>/cost</command-name>"});
    let api_error = json!({"type": "assistant", "isApiErrorMessage": true, "message": {"id": "msg_e", "role": "assistant", "model": "<synthetic>", "content": [{"type": "text", "text": "API Error: 400"}]}});
    let call = json!({"type": "assistant", "message": {"id": "msg_c", "role": "assistant", "model": "m1", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]}});
    assert_eq!(interrupt("snapshot", vec![snapshot]), "none");
    assert_eq!(interrupt("local", vec![local]), "none");
    assert_eq!(
        interrupt("api_error", vec![prompt.clone(), api_error]),
        "none"
    );
    assert_eq!(
        interrupt("prompt", vec![prompt.clone()]),
        "interrupted_prompt"
    );
    assert_eq!(
        interrupt("unanswered", vec![prompt.clone(), call]),
        "interrupted_prompt"
    );
}

/// The shape of the kit's `streamjson 02` scenario as 2.1.332 writes it (issue 31, class 6).
#[test]
fn a_message_queued_into_a_running_turn_is_user_text_beside_the_results() {
    let queued = |hosts: bool| {
        json!({"type": "attachment", "uuid": "q", "renderedRole": "system",
            "attachment": {"type": "queued_command", "prompt": "two", "commandMode": "prompt",
                "hostsOwnTurn": hosts},
            "rendered": [{"content": "<system-reminder>\nThe user sent a new message while you were working:\ntwo\n</system-reminder>"}]})
    };
    let turn = |q: Value| {
        api(&[
            user("u", json!("one")),
            assistant("a1", "m", tool_use("t1", "Bash")),
            user("r1", result("t1")),
            q,
            assistant("a2", "n", json!({"type": "text", "text": "done"})),
        ])
    };
    let msgs = turn(queued(true));
    assert_eq!(roles(&msgs), ["user", "assistant", "user", "assistant"]);
    let blocks = msgs[2]["content"].as_array().unwrap();
    assert_eq!(blocks[0]["type"], "tool_result");
    assert_eq!(
        blocks[1],
        json!({"type": "text", "text": "The user sent a new message while you were working:\ntwo"})
    );
    // Without `hostsOwnTurn` (2.1.328's files) it stays a system reminder, as before.
    let msgs = turn(queued(false));
    assert_eq!(
        roles(&msgs),
        ["user", "assistant", "user", "system", "assistant"]
    );
}

/// `resume --format api` of a shape of fixtures/client (issue 31), from the index and with
/// `--no-index`: both must give the same messages, which are returned.
fn shape_api(name: &str, extra: &[&str]) -> Vec<Value> {
    let sid = shape_id(name);
    let path = util::manifest_dir().join(format!("fixtures/client/projects/-shapes/{sid}.jsonl"));
    let mut answers = Vec::new();
    for index in [true, false] {
        let mut args = vec!["resume", path.to_str().unwrap(), "--format", "api"];
        args.extend(extra);
        if !index {
            args.push("--no-index");
        }
        let out = util::chainlog(&args);
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        answers.push(v["messages"].as_array().unwrap().clone());
    }
    assert_eq!(
        answers[0], answers[1],
        "{name}: the index and the scan differ"
    );
    answers.pop().unwrap()
}

/// The session id fixtures/client/shapes.py gives the shape `name`.
fn shape_id(name: &str) -> String {
    shape_uuid(name, "session")
}

/// The uuid shapes.py gives entry `key` of shape `name`: read from the shapes' own list.
fn shape_uuid(name: &str, key: &str) -> String {
    let list = util::manifest_dir().join("fixtures/client/uuids.txt");
    let text = std::fs::read_to_string(&list).unwrap();
    text.lines()
        .find_map(|l| {
            let mut p = l.split_whitespace();
            (p.next() == Some(name) && p.next() == Some(key)).then(|| p.next().unwrap().to_owned())
        })
        .unwrap_or_else(|| panic!("{}: no {name} {key}", list.display()))
}

/// Issue 31, class 2 (shapes `local-after-leaf`, `prompt-then-local`, `meta-then-local`): the
/// local commands written below the chosen leaf after its checkpoint (`/exit`) are sent as
/// user text, after the synthetic reply when there is one; the view itself ends at the leaf.
#[test]
fn local_commands_below_the_leaf_are_sent_after_it() {
    let texts = |msgs: &[Value], i: usize| -> Vec<String> {
        match &msgs[i]["content"] {
            Value::String(s) => vec![s.clone()],
            Value::Array(a) => a
                .iter()
                .filter_map(|b| b["text"].as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        }
    };
    let after_reply = shape_api("local-after-leaf", &[]);
    assert_eq!(
        roles(&after_reply),
        ["user", "assistant", "user", "assistant", "user"]
    );
    let last = texts(&after_reply, 4);
    assert!(
        last[0].starts_with("<command-name>/exit</command-name>"),
        "{last:?}"
    );
    assert_eq!(
        last[1],
        "<local-command-stdout>Goodbye!</local-command-stdout>"
    );
    let after_prompt = shape_api("prompt-then-local", &[]);
    assert_eq!(
        roles(&after_prompt),
        ["user", "assistant", "user", "assistant", "user"]
    );
    assert_eq!(texts(&after_prompt, 3), ["No response requested."]);
    assert_eq!(texts(&after_prompt, 4).len(), 2);
    // The view (what `--format jsonl` and the oracle give) still ends at the leaf.
    let path = util::manifest_dir().join(format!(
        "fixtures/client/projects/-shapes/{}.jsonl",
        shape_id("local-after-leaf")
    ));
    let uuids = util::cli_resume_uuids(&path, &[]).unwrap();
    assert_eq!(uuids.last().unwrap(), &shape_uuid("local-after-leaf", "a2"));
}

/// Issue 31, class 5 through the command: `--at` a thinking line of another model inside a
/// response that goes on is "(no content)"; at the same line of the request's model the reply
/// is not sent.
#[test]
fn a_cut_inside_a_response_of_another_model_is_no_content() {
    let at = shape_uuid("thinking-end-other-model", "a2");
    let msgs = shape_api(
        "thinking-end-other-model",
        &["--at", &at, "--model", "claude-opus-5-5"],
    );
    assert_eq!(roles(&msgs), ["user", "assistant", "user", "assistant"]);
    assert_eq!(msgs[3]["content"][0]["text"], "(no content)");
    let at = shape_uuid("thinking-cut-same-model", "a2");
    let msgs = shape_api(
        "thinking-cut-same-model",
        &["--at", &at, "--model", "claude-opus-5-5"],
    );
    assert_eq!(roles(&msgs), ["user", "assistant", "user"]);
}
