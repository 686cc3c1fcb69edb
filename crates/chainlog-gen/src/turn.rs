//! One turn of the main conversation: the prompt, tool rounds (with parallel tool calls,
//! retries and sub-agents) and the final reply.

use std::io::{self, Write};

use serde_json::{Value, json};

use super::lines::{self, UserBody, UserFlags};
use super::session::{LONE, Node, Session};
use super::text;
use super::tools::{self, ToolCall};

impl<W: Write> Session<'_, W> {
    /// One turn: prompt, tool rounds, final reply.
    pub(super) fn turn(&mut self) -> io::Result<()> {
        let uuid = self.g.uuid();
        if self.o.metadata_midfile && self.g.chance(0.4) {
            self.file_history_snapshot(&uuid)?;
        }
        let prompt = text::prompt(&mut self.g, &self.cwd);
        let ts = self.tick(3000, 90_000);
        let prompt_id = self.g.uuid();
        let v = lines::message(
            &self.env(),
            self.tip.as_deref(),
            None,
            Some(&prompt_id),
            lines::user_body(UserBody {
                content: Value::from(prompt.as_str()),
                flags: UserFlags::default(),
                uuid: &uuid,
                timestamp: &ts,
                tool_use_result: None,
                source_tool_assistant: None,
                permission_mode: Some("default"),
            }),
        );
        self.emit(&v, false)?;
        self.advance(uuid, true);
        self.last_prompt = Some(prompt);
        if self.slug.is_none() {
            self.slug = Some(self.slug_name.clone());
        }
        if self.g.chance(0.2) {
            self.attachment()?;
        }
        let no_tools = if self.rounds_max == 1 { 0.4 } else { 0.15 };
        let rounds = if self.g.chance(no_tools) {
            0
        } else {
            self.g.between(1, self.rounds_max)
        };
        for _ in 0..rounds {
            self.tool_round()?;
        }
        self.final_reply()
    }

    fn file_history_snapshot(&mut self, message_id: &str) -> io::Result<()> {
        let ts = crate::rng::format_ms(self.clock.now_ms());
        let v = lines::metadata(
            "file-history-snapshot",
            lines::Obj::new()
                .set("messageId", message_id)
                .set(
                    "snapshot",
                    json!({"messageId": message_id, "trackedFileBackups": {}, "timestamp": ts}),
                )
                .set("isSnapshotUpdate", false),
        );
        self.emit(&v, false)
    }

    fn attachment(&mut self) -> io::Result<()> {
        let path = format!("{}/CLAUDE.md", self.cwd);
        let att = match self.g.below(3) {
            0 => json!({"type": "todo_reminder", "content": [], "itemCount": 0}),
            1 => {
                json!({"type": "nested_memory", "path": path, "content": {"path": path, "type": "Project", "content": text::sentence(&mut self.g, 10, 40)}})
            }
            _ => {
                json!({"type": "edited_text_file", "filename": text::file_path(&mut self.g, &self.cwd), "snippet": self.pool.window(&mut self.g, 200).0})
            }
        };
        let uuid = self.g.uuid();
        let ts = self.tick(5, 200);
        let v = lines::message(
            &self.env(),
            self.tip.as_deref(),
            None,
            None,
            lines::attachment_body(att, &uuid, &ts),
        );
        self.emit(&v, false)?;
        self.advance(uuid, false);
        Ok(())
    }

    /// Write the assistant lines of one response (same `message.id`), chained from the tip.
    /// With `lone`, the last line carries the lone-surrogate stand-in.
    fn write_response(&mut self, blocks: Vec<Value>, lone: bool) -> io::Result<Vec<String>> {
        let mid = self.g.message_id();
        let rid = self.g.request_id();
        let usage = lines::usage(&mut self.g);
        let n = blocks.len();
        let mut uuids = Vec::with_capacity(n);
        for (i, block) in blocks.into_iter().enumerate() {
            let uuid = self.g.uuid();
            let ts = if i == 0 {
                self.tick(800, 9000)
            } else {
                self.tick(20, 900)
            };
            let msg = lines::assistant_message(self.model, &mid, block, &usage);
            let v = lines::message(
                &self.env(),
                self.tip.as_deref(),
                None,
                None,
                lines::assistant_body(msg, &rid, &uuid, &ts),
            );
            self.emit(&v, lone && i + 1 == n)?;
            self.after_child()?;
            self.advance(uuid.clone(), false);
            uuids.push(uuid);
        }
        Ok(uuids)
    }

    /// Write a progress line whose child has just been written.
    fn after_child(&mut self) -> io::Result<()> {
        if let Some(p) = self.late_progress.take() {
            self.write_progress(&p.uuid, &p.parent, &p.tool_use_id)?;
        }
        Ok(())
    }

    pub(super) fn write_progress(
        &mut self,
        uuid: &str,
        parent: &str,
        tool_use_id: &str,
    ) -> io::Result<()> {
        let ts = self.tick(5, 300);
        let data = json!({
            "type": "hook_progress",
            "hookEvent": "PostToolUse",
            "hookName": "PostToolUse:Edit",
            "command": "$CLAUDE_PROJECT_DIR/.claude/hooks/format.sh",
        });
        let v = lines::message(
            &self.env(),
            Some(parent),
            None,
            None,
            lines::progress_body(data, tool_use_id, uuid, &ts),
        );
        self.emit(&v, false)
    }

    fn thinking_block(&mut self) -> Value {
        json!({"type": "thinking", "thinking": text::thinking(&mut self.g), "signature": text::signature(&mut self.g)})
    }

    /// An abandoned streaming attempt: an assistant line off the tip that nothing continues.
    fn maybe_retry(&mut self) -> io::Result<()> {
        if !self.s_retry.due(self.bytes, self.o.target_bytes) {
            return Ok(());
        }
        self.s_retry.done(&mut self.g, self.bytes);
        let mid = self.g.message_id();
        let rid = self.g.request_id();
        let usage = lines::usage(&mut self.g);
        let full = text::opener(&mut self.g, &self.cwd);
        let cut: String = full.chars().take(full.chars().count() / 2 + 1).collect();
        let uuid = self.g.uuid();
        let ts = self.tick(500, 5000);
        let msg = lines::assistant_message(
            self.model,
            &mid,
            json!({"type": "text", "text": cut}),
            &usage,
        );
        let v = lines::message(
            &self.env(),
            self.tip.as_deref(),
            None,
            None,
            lines::assistant_body(msg, &rid, &uuid, &ts),
        );
        self.emit(&v, false)?;
        self.after_child()
    }

    pub(super) fn tool_round(&mut self) -> io::Result<()> {
        self.maybe_retry()?;
        let n = if self.o.parallel_tools {
            match self.g.below(20) {
                0..=9 => 1,
                10..=14 => 2,
                15..=17 => 3,
                _ => 4,
            }
        } else {
            1
        };
        let mut calls: Vec<ToolCall> = (0..n)
            .map(|_| {
                tools::random_call(&mut self.g, &self.pool, &self.cwd, self.out_lo, self.out_hi)
            })
            .collect();
        let layouts = self.o.sidechains.enabled();
        let missing = layouts
            .iter()
            .copied()
            .find(|l| !self.layouts_done[l.slot()]);
        let overtime = self.bytes >= self.o.target_bytes;
        let agent = if self.s_agent.due(self.bytes, self.o.target_bytes) && self.agents_spawned < 16
            || overtime && missing.is_some()
        {
            self.s_agent.done(&mut self.g, self.bytes);
            self.agents_spawned += 1;
            let layout = missing.unwrap_or_else(|| layouts[self.agents_spawned % layouts.len()]);
            let plan = self.plan_agent(layout);
            calls[n - 1] = plan.call(&mut self.g);
            Some(plan)
        } else {
            None
        };
        let mut blocks = Vec::new();
        if self.g.chance(0.3) {
            blocks.push(self.thinking_block());
        }
        if self.g.chance(0.5) {
            blocks.push(json!({"type": "text", "text": text::opener(&mut self.g, &self.cwd)}));
        }
        let pre = blocks.len();
        blocks.extend(calls.iter().map(ToolCall::block));
        let uuids = self.write_response(blocks, false)?;
        if let Some(plan) = agent {
            self.run_agent(&plan, &mut calls[n - 1])?;
        }
        let mut last = None;
        for (call, line) in calls.into_iter().zip(uuids[pre..].iter()) {
            last = Some(self.write_result(call, line)?);
        }
        self.tip = last;
        self.tip_is_progress = false;
        self.maybe_progress()
    }

    /// A `tool_result` user line hanging off `parent` (the line holding its `tool_use`).
    fn write_result(&mut self, mut call: ToolCall, parent: &str) -> io::Result<String> {
        let lone = self.lone_armed;
        if lone {
            self.lone_armed = false;
            self.lone_done = true;
            call.result.push_str("\nbuild finished \u{1F680}");
            call.result.push_str(LONE);
        }
        self.last_tool_id = Some(call.id.clone());
        let uuid = self.g.uuid();
        let ts = self.tick(20, 3000);
        let v = lines::message(
            &self.env(),
            Some(parent),
            None,
            None,
            lines::user_body(UserBody {
                content: call.result_content(),
                flags: UserFlags::default(),
                uuid: &uuid,
                timestamp: &ts,
                tool_use_result: Some(call.result_meta),
                source_tool_assistant: Some(parent),
                permission_mode: None,
            }),
        );
        self.emit(&v, lone)?;
        self.view.push(Node {
            uuid: uuid.clone(),
            raw_parent: Some(parent.to_owned()),
            prompt: false,
            via_progress: false,
        });
        Ok(uuid)
    }

    fn final_reply(&mut self) -> io::Result<()> {
        self.maybe_retry()?;
        let mut blocks = Vec::new();
        if self.g.chance(0.25) {
            blocks.push(self.thinking_block());
        }
        let mut reply = text::closer(&mut self.g, &self.cwd);
        let lone = self.lone_armed;
        if lone {
            self.lone_armed = false;
            self.lone_done = true;
            reply.push_str(" \u{1F680}");
            reply.push_str(LONE);
        }
        blocks.push(json!({"type": "text", "text": reply}));
        self.write_response(blocks, lone)?;
        Ok(())
    }
}
