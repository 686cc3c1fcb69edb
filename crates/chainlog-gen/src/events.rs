//! Events between turns: metadata, corruption and turn durations, and the order in which the
//! reshaping events of [`super::reshape`] run.

use std::io::{self, Write};

use serde_json::{Value, json};

use super::lines::{self, Obj};
use super::meta::{META_ORDER, Meta};
use super::session::Session;
use super::text;

impl<W: Write> Session<'_, W> {
    /// Everything that may happen between two turns, in a fixed order.
    pub(super) fn boundary(&mut self) -> io::Result<()> {
        self.maybe_metadata()?;
        self.maybe_corrupt()?;
        if self.g.chance(0.25) {
            self.turn_duration()?;
        }
        if self.s_snip.due(self.bytes, self.o.target_bytes) && self.snip()? {
            self.s_snip.done(&mut self.g, self.bytes);
        }
        if self.compaction_due() && self.compact()? {
            self.compactions_done += 1;
            self.last_compact_at = self.bytes;
            if self.o.compact_every_bytes.is_none() {
                self.s_compact.done(&mut self.g, self.bytes);
            }
        }
        if self.s_rewind.due(self.bytes, self.o.target_bytes) && self.rewind() {
            self.s_rewind.done(&mut self.g, self.bytes);
        }
        Ok(())
    }

    fn compaction_due(&self) -> bool {
        if let Some(n) = self.o.compact_every_bytes {
            return self.bytes - self.last_compact_at >= n;
        }
        let segment_owed = self.o.preserved_segments && self.segments_done == 0;
        self.s_compact.due(self.bytes, self.o.target_bytes)
            || segment_owed && self.bytes >= self.o.target_bytes
    }

    /// One to three metadata entries (past the target: every kind not written yet).
    fn maybe_metadata(&mut self) -> io::Result<()> {
        let owed = self.meta_cycle < META_ORDER.len();
        let overtime = self.bytes >= self.o.target_bytes;
        if !self.o.metadata_midfile
            || !(self.s_meta.due(self.bytes, self.o.target_bytes) || owed && overtime)
        {
            return Ok(());
        }
        self.s_meta.done(&mut self.g, self.bytes);
        let n = if owed && overtime {
            META_ORDER.len() - self.meta_cycle
        } else {
            self.g.between(1, 3)
        };
        for _ in 0..n {
            let kind = META_ORDER
                .get(self.meta_cycle)
                .copied()
                .unwrap_or_else(|| *self.g.pick(META_ORDER));
            self.meta_cycle += 1;
            self.write_meta(kind)?;
        }
        Ok(())
    }

    fn write_meta(&mut self, kind: Meta) -> io::Result<()> {
        let sid = self.sid.clone();
        // The tip at a turn boundary is the previous turn's final reply.
        let leaf = if self.tip_is_progress {
            None
        } else {
            self.tip.clone()
        };
        let v = match kind {
            Meta::CustomTitle => {
                let t = format!(
                    "{} {}",
                    capitalised(text::ident(&mut self.g)),
                    text::sentence(&mut self.g, 1, 4)
                );
                self.title = Some(t.clone());
                lines::metadata(
                    "custom-title",
                    Obj::new().set("customTitle", t).set("sessionId", sid),
                )
            }
            Meta::Tag => {
                let t = *self
                    .g
                    .pick(&["wip", "bugfix", "perf", "review", "refactor"]);
                self.tag = Some(t.to_owned());
                lines::metadata("tag", Obj::new().set("tag", t).set("sessionId", sid))
            }
            Meta::TagClear => {
                self.tag = None;
                lines::metadata("tag", Obj::new().set("tag", "").set("sessionId", sid))
            }
            Meta::LastPrompt => {
                let p = self.last_prompt.clone().unwrap_or_default();
                lines::metadata(
                    "last-prompt",
                    Obj::new()
                        .set("lastPrompt", p)
                        .opt("leafUuid", leaf)
                        .set("sessionId", sid),
                )
            }
            Meta::AiTitle => {
                let t = format!(
                    "Fix {} {}",
                    text::ident(&mut self.g),
                    text::ident(&mut self.g)
                );
                self.ai_title = Some(t.clone());
                lines::metadata(
                    "ai-title",
                    Obj::new().set("aiTitle", t).set("sessionId", sid),
                )
            }
            Meta::Summary => {
                let t = format!(
                    "{} {} handling",
                    capitalised(text::ident(&mut self.g)),
                    text::ident(&mut self.g)
                );
                lines::metadata(
                    "summary",
                    Obj::new().set("summary", t).opt("leafUuid", leaf),
                )
            }
            _ => self.other_meta(kind, sid)?,
        };
        self.emit(&v, false)
    }

    /// Metadata kinds that do not feed [`super::Expected`].
    fn other_meta(&mut self, kind: Meta, sid: String) -> io::Result<Value> {
        Ok(match kind {
            Meta::Mode => lines::metadata(
                "mode",
                Obj::new()
                    .set("mode", *self.g.pick(&["normal", "plan"]))
                    .set("sessionId", sid),
            ),
            Meta::PermissionMode => lines::metadata(
                "permission-mode",
                Obj::new()
                    .set("permissionMode", *self.g.pick(&["default", "acceptEdits"]))
                    .set("sessionId", sid),
            ),
            Meta::AgentName => lines::metadata(
                "agent-name",
                Obj::new()
                    .set("agentName", "reviewer")
                    .set("sessionId", sid),
            ),
            Meta::PrLink => {
                let n = self.g.range(1, 5000);
                let ts = super::rng::format_ms(self.clock.now_ms());
                lines::metadata(
                    "pr-link",
                    Obj::new()
                        .set("prNumber", n)
                        .set(
                            "prUrl",
                            format!(
                                "https://github.com/example/{}/pull/{n}",
                                text::ident(&mut self.g)
                            ),
                        )
                        .set("prRepository", "example/app")
                        .set("timestamp", ts)
                        .set("sessionId", sid),
                )
            }
            Meta::WorktreeState => lines::metadata(
                "worktree-state",
                Obj::new()
                    .set("worktreeSession", Value::Null)
                    .set("sessionId", sid),
            ),
            Meta::ContentReplacement => {
                let id = self
                    .last_tool_id
                    .clone()
                    .unwrap_or_else(|| self.g.tool_use_id());
                let replacement = format!(
                    "<persisted-output>Output too large ({} KB). Full output saved to: {}/tool-results/{id}.txt</persisted-output>",
                    self.g.range(30, 900),
                    self.cwd
                );
                lines::metadata(
                    "content-replacement",
                    Obj::new().set("sessionId", sid).set(
                        "replacements",
                        json!([{"kind": "tool-result", "toolUseId": id, "replacement": replacement}]),
                    ),
                )
            }
            Meta::Unknown => {
                let ts = super::rng::format_ms(self.clock.now_ms());
                lines::metadata(
                    "session-insight",
                    Obj::new()
                        .set("uuid", self.g.uuid())
                        .set("timestamp", ts)
                        .set(
                            "insight",
                            json!({"kind": "future", "score": self.g.range(0, 100)}),
                        )
                        .set("sessionId", sid),
                )
            }
            Meta::QueueOps => {
                let ts = super::rng::format_ms(self.clock.now_ms());
                let prompt = text::prompt(&mut self.g, &self.cwd);
                let enqueue = lines::metadata(
                    "queue-operation",
                    Obj::new()
                        .set("operation", "enqueue")
                        .set("timestamp", ts.as_str())
                        .set("sessionId", sid.as_str())
                        .set("content", prompt),
                );
                self.emit(&enqueue, false)?;
                lines::metadata(
                    "queue-operation",
                    Obj::new()
                        .set("operation", "remove")
                        .set("timestamp", ts)
                        .set("sessionId", sid),
                )
            }
            _ => unreachable!("handled by write_meta"),
        })
    }

    /// Metadata re-appended at exit (Claude Code keeps it in the tail window).
    pub(super) fn reappend_metadata(&mut self) -> io::Result<()> {
        let sid = self.sid.clone();
        if let Some(t) = self.title.clone() {
            let v = lines::metadata(
                "custom-title",
                Obj::new()
                    .set("customTitle", t)
                    .set("sessionId", sid.as_str()),
            );
            self.emit(&v, false)?;
        }
        if let Some(t) = self.tag.clone() {
            let v = lines::metadata(
                "tag",
                Obj::new().set("tag", t).set("sessionId", sid.as_str()),
            );
            self.emit(&v, false)?;
        }
        if let Some(t) = self.ai_title.clone() {
            let v = lines::metadata(
                "ai-title",
                Obj::new().set("aiTitle", t).set("sessionId", sid.as_str()),
            );
            self.emit(&v, false)?;
        }
        let v = lines::metadata(
            "last-prompt",
            Obj::new()
                .set("lastPrompt", self.last_prompt.clone().unwrap_or_default())
                .opt("leafUuid", self.tip.clone())
                .set("sessionId", sid),
        );
        self.emit(&v, false)
    }

    fn maybe_corrupt(&mut self) -> io::Result<()> {
        let c = self.o.corruption;
        #[allow(clippy::cast_precision_loss, clippy::cast_sign_loss)]
        let at = |f: f64, bytes: u64, target: u64| bytes >= (target as f64 * f) as u64;
        let (bytes, target) = (self.bytes, self.o.target_bytes);
        if c.nul_run && !self.corrupt_done[0] && at(0.35, bytes, target) {
            let mut line = vec![0u8; self.g.between(16, 700)];
            line.push(b'\n');
            self.emit_bytes(&line)?;
            self.corrupt_done[0] = true;
            self.bad_lines += 1;
        }
        if c.lone_surrogate && !self.lone_done && at(0.45, bytes, target) {
            self.lone_armed = true;
        }
        if c.glued && !self.corrupt_done[1] && at(0.55, bytes, target) {
            // Two writers appending at once: the records lose their separator. Neither counts.
            let mut line = Vec::new();
            let a = lines::metadata(
                "custom-title",
                Obj::new()
                    .set("customTitle", "Glued title (must be ignored)")
                    .set("sessionId", self.sid.as_str()),
            );
            let b = lines::metadata(
                "tag",
                Obj::new()
                    .set("tag", "glued")
                    .set("sessionId", self.sid.as_str()),
            );
            lines::push_line(&mut line, &a);
            line.pop();
            lines::push_line(&mut line, &b);
            self.emit_bytes(&line)?;
            self.corrupt_done[1] = true;
            self.bad_lines += 1;
        }
        if c.invalid_json && !self.corrupt_done[2] && at(0.75, bytes, target) {
            let mut line = self.cut_assistant_line();
            line.push(b'\n');
            self.emit_bytes(&line)?;
            self.corrupt_done[2] = true;
            self.bad_lines += 1;
        }
        Ok(())
    }

    /// The torn tail: a record cut mid-JSON, no newline.
    pub(super) fn torn_tail(&mut self) -> io::Result<()> {
        let line = self.cut_assistant_line();
        self.emit_bytes(&line)
    }

    /// The first 20–80% of an assistant line off the tip (never parses: a proper prefix of a
    /// JSON object lacks its closing brace).
    fn cut_assistant_line(&mut self) -> Vec<u8> {
        let mid = self.g.message_id();
        let rid = self.g.request_id();
        let usage = lines::usage(&mut self.g);
        let uuid = self.g.uuid();
        let ts = super::rng::format_ms(self.clock.now_ms() + 1);
        let reply = text::closer(&mut self.g, &self.cwd);
        let msg = lines::assistant_message(
            self.model,
            &mid,
            json!({"type": "text", "text": reply}),
            &usage,
        );
        let v = lines::message(
            &self.env(),
            self.tip.as_deref(),
            None,
            None,
            lines::assistant_body(msg, &rid, &uuid, &ts),
        );
        let mut line = Vec::new();
        lines::push_line(&mut line, &v);
        line.pop();
        #[allow(clippy::cast_precision_loss, clippy::cast_sign_loss)]
        let cut = ((line.len() as f64) * self.g.float(0.2, 0.8)) as usize;
        line.truncate(cut.clamp(1, line.len() - 1));
        line
    }

    /// `system/turn_duration`, a chain participant.
    fn turn_duration(&mut self) -> io::Result<()> {
        let uuid = self.g.uuid();
        let ts = self.tick(5, 100);
        let ms = self.g.range(2_000, 600_000);
        let v = lines::message(
            &self.env(),
            self.tip.as_deref(),
            None,
            None,
            lines::system_body(
                "turn_duration",
                None,
                false,
                &uuid,
                &ts,
                Obj::new().set("durationMs", ms),
            ),
        );
        self.emit(&v, false)?;
        self.advance(uuid, false);
        Ok(())
    }
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}
