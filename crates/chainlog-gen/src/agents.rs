//! Sub-agent (sidechain) conversations: the lines of one agent run, whatever file they go to,
//! and how the main session spawns them (inline lines or a separate file).

use std::io::{self, Write};

use serde_json::{Value, json};

use super::lines::{self, Env, Obj, Style, UserBody, UserFlags};
use super::rng::{Clock, Gen};
use super::session::{Session, VERSION};
use super::text::{self, TextPool};
use super::tools::{self, ToolCall};
use super::{GeneratedAgent, SidechainLayout};

/// The lines of one agent run and what the parent's tool result reports.
pub(crate) struct AgentRun {
    pub lines: Vec<Value>,
    /// The agent's newest message that no other of its messages names as parent.
    pub leaf: String,
    pub summary: String,
    pub tool_uses: usize,
}

/// Everything an agent run needs from the session.
pub(crate) struct AgentCtx<'a> {
    pub g: &'a mut Gen,
    pub clock: &'a mut Clock,
    pub pool: &'a TextPool,
    pub model: &'a str,
    pub out_hi: u64,
}

/// A linear agent conversation: the prompt (a root, `parentUuid:null`), a few tool rounds,
/// a final text answer.
pub(crate) fn conversation(cx: &mut AgentCtx<'_>, env: &Env<'_>, prompt: &str) -> AgentRun {
    let mut lines = Vec::new();
    let root = cx.g.uuid();
    let ts = cx.clock.tick(cx.g, 5, 60);
    lines.push(lines::message(
        env,
        None,
        None,
        None,
        lines::user_body(UserBody {
            content: Value::from(prompt),
            flags: UserFlags::default(),
            uuid: &root,
            timestamp: &ts,
            tool_use_result: None,
            source_tool_assistant: None,
            permission_mode: None,
        }),
    ));
    let mut tip = root;
    let rounds = cx.g.between(1, 3);
    for _ in 0..rounds {
        let call = tools::random_call(cx.g, cx.pool, env.cwd, 200.min(cx.out_hi), cx.out_hi);
        let mid = cx.g.message_id();
        let rid = cx.g.request_id();
        let usage = lines::usage(cx.g);
        let mut blocks = Vec::new();
        if cx.g.chance(0.5) {
            blocks.push(json!({"type": "text", "text": text::opener(cx.g, env.cwd)}));
        }
        blocks.push(call.block());
        for block in blocks {
            let uuid = cx.g.uuid();
            let ts = cx.clock.tick(cx.g, 300, 4000);
            let msg = lines::assistant_message(cx.model, &mid, block, &usage);
            lines.push(lines::message(
                env,
                Some(&tip),
                None,
                None,
                lines::assistant_body(msg, &rid, &uuid, &ts),
            ));
            tip = uuid;
        }
        let uuid = cx.g.uuid();
        let ts = cx.clock.tick(cx.g, 20, 3000);
        let source = (env.style == Style::Modern).then_some(tip.as_str());
        lines.push(lines::message(
            env,
            Some(&tip),
            None,
            None,
            lines::user_body(UserBody {
                content: call.result_content(),
                flags: UserFlags::default(),
                uuid: &uuid,
                timestamp: &ts,
                tool_use_result: Some(call.result_meta),
                source_tool_assistant: source,
                permission_mode: None,
            }),
        ));
        tip = uuid;
    }
    let summary = text::closer(cx.g, env.cwd);
    let uuid = cx.g.uuid();
    let ts = cx.clock.tick(cx.g, 500, 6000);
    let usage = lines::usage(cx.g);
    let mid = cx.g.message_id();
    let rid = cx.g.request_id();
    let msg = lines::assistant_message(
        cx.model,
        &mid,
        json!({"type": "text", "text": summary}),
        &usage,
    );
    lines.push(lines::message(
        env,
        Some(&tip),
        None,
        None,
        lines::assistant_body(msg, &rid, &uuid, &ts),
    ));
    AgentRun {
        lines,
        leaf: uuid,
        summary,
        tool_uses: rounds,
    }
}

/// `agent-<id>.meta.json` content (format.md §A3).
pub(crate) fn meta_json(g: &mut Gen, description: &str, tool_use_id: &str) -> Vec<u8> {
    let agent_type = *g.pick(&["general-purpose", "Explore", "Plan", "code-reviewer"]);
    let mut obj = Obj::new()
        .set("agentType", agent_type)
        .set("description", description)
        .set("toolUseId", tool_use_id);
    if g.chance(0.3) {
        obj = obj.set("spawnDepth", 1);
    }
    serde_json::to_vec(&obj.value()).expect("serialising a Value cannot fail")
}

/// Spawning sub-agents from the main session.
impl<W: Write> Session<'_, W> {
    pub(super) fn plan_agent(&mut self, layout: SidechainLayout) -> AgentPlan {
        let agent_id = match layout {
            SidechainLayout::Subagents => format!("a{}", self.g.hex(16)),
            _ => format!("a{}", self.g.hex(7)),
        };
        let description = format!("Explore {} handling", text::ident(&mut self.g));
        let prompt = format!(
            "{}\n\nReport the relevant files and a short summary.",
            text::prompt(&mut self.g, &self.cwd)
        );
        AgentPlan {
            layout,
            agent_id,
            description,
            prompt,
            tool_use_id: self.g.tool_use_id(),
        }
    }

    /// Write the agent's lines (inline, or into its own file) and fill in the tool result.
    pub(super) fn run_agent(&mut self, plan: &AgentPlan, call: &mut ToolCall) -> io::Result<()> {
        let (style, version, agent_id, slug) = match plan.layout {
            SidechainLayout::Inline => (Style::Legacy, "1.0.98", None, None),
            SidechainLayout::TopLevel => {
                (Style::Legacy, "2.0.76", Some(plan.agent_id.as_str()), None)
            }
            _ => (
                Style::Modern,
                VERSION,
                Some(plan.agent_id.as_str()),
                self.slug.as_deref(),
            ),
        };
        let env = Env {
            session_id: &self.sid,
            cwd: &self.cwd,
            version,
            git_branch: &self.branch,
            slug,
            style,
            sidechain: true,
            agent_id,
        };
        let mut cx = AgentCtx {
            g: &mut self.g,
            clock: &mut self.clock,
            pool: &self.pool,
            model: self.model,
            out_hi: self.out_hi,
        };
        let run = conversation(&mut cx, &env, &plan.prompt);
        let slot = plan.layout.slot();
        self.layouts_done[slot] = true;
        let content = json!([{"type": "text", "text": run.summary}]);
        let duration = self.g.range(5_000, 120_000);
        let tokens = self.g.range(2_000, 60_000);
        call.result.clone_from(&run.summary);
        call.result_meta = if plan.layout == SidechainLayout::Inline {
            json!({"content": content, "totalDurationMs": duration, "totalTokens": tokens, "totalToolUseCount": run.tool_uses})
        } else {
            json!({
                "status": "completed",
                "prompt": plan.prompt,
                "agentId": plan.agent_id,
                "content": content,
                "totalDurationMs": duration,
                "totalTokens": tokens,
                "totalToolUseCount": run.tool_uses,
            })
        };
        if plan.layout == SidechainLayout::Inline {
            for line in &run.lines {
                self.emit(line, false)?;
            }
            return Ok(());
        }
        let mut jsonl = Vec::new();
        for line in &run.lines {
            lines::push_line(&mut jsonl, line);
        }
        let meta_json = (plan.layout == SidechainLayout::Subagents)
            .then(|| meta_json(&mut self.g, &plan.description, &plan.tool_use_id));
        self.agents.push(GeneratedAgent {
            agent_id: plan.agent_id.clone(),
            layout: plan.layout,
            jsonl,
            meta_json,
            expected_leaf: run.leaf,
        });
        Ok(())
    }

    /// A label-style agent (`aprompt_suggestion-…`) with no `.meta.json`.
    pub(super) fn label_agent(&mut self) {
        let agent_id = format!("aprompt_suggestion-{}", self.g.hex(6));
        let env = Env {
            session_id: &self.sid,
            cwd: &self.cwd,
            version: VERSION,
            git_branch: &self.branch,
            slug: self.slug.as_deref(),
            style: Style::Modern,
            sidechain: true,
            agent_id: Some(&agent_id),
        };
        let mut cx = AgentCtx {
            g: &mut self.g,
            clock: &mut self.clock,
            pool: &self.pool,
            model: self.model,
            out_hi: self.out_hi.min(2000),
        };
        let run = conversation(
            &mut cx,
            &env,
            "Suggest the user's next prompt in at most 12 words.",
        );
        let mut jsonl = Vec::new();
        for line in &run.lines {
            lines::push_line(&mut jsonl, line);
        }
        self.agents.push(GeneratedAgent {
            agent_id,
            layout: SidechainLayout::Subagents,
            jsonl,
            meta_json: None,
            expected_leaf: run.leaf,
        });
    }
}

/// A sub-agent about to be spawned by a `Task`/`Agent` tool call.
pub(super) struct AgentPlan {
    layout: SidechainLayout,
    agent_id: String,
    description: String,
    prompt: String,
    tool_use_id: String,
}

impl AgentPlan {
    /// The tool call (result filled in after the run).
    pub(super) fn call(&self, g: &mut Gen) -> ToolCall {
        let name = if self.layout == SidechainLayout::Subagents {
            "Agent"
        } else {
            "Task"
        };
        let subagent_type = *g.pick(&["general-purpose", "Explore"]);
        ToolCall {
            id: self.tool_use_id.clone(),
            name,
            input: json!({"description": self.description, "prompt": self.prompt, "subagent_type": subagent_type}),
            result: String::new(),
            result_meta: Value::Null,
            is_error: false,
        }
    }
}
