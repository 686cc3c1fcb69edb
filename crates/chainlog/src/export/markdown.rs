//! A [`Document`] as Markdown: one heading per message, tool calls and results folded in
//! `<details>`, compaction boundaries and branch points marked, sub-agents as sections.

use std::fmt::Write as _;

use super::Document;
use crate::resume::message::{Block, Message, Role};

/// Renders `doc`.
pub fn render(doc: &Document) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", one_line(&doc.title));
    let _ = writeln!(
        out,
        "Session `{}` · {} messages{}{}\n",
        doc.session_id,
        doc.messages.len(),
        count(doc.branches.len(), "other branch", "other branches"),
        count(doc.agents.len(), "sub-agent", "sub-agents"),
    );
    let points = doc.branch_points();
    for m in &doc.messages {
        message(&mut out, m);
        if let Some(n) = points.get(m.uuid.as_str()) {
            let _ = writeln!(
                out,
                "> **Branch point**: {} other branch{} continue{} after this message (see Branches).\n",
                n,
                if *n == 1 { "" } else { "es" },
                if *n == 1 { "s" } else { "" },
            );
        }
    }
    if !doc.branches.is_empty() {
        out.push_str("## Branches\n\n");
        for b in &doc.branches {
            let _ = writeln!(
                out,
                "### Branch ending at `{}` (after `{}`)\n",
                b.leaf,
                b.after.as_deref().unwrap_or("the start")
            );
            for m in &b.messages {
                message(&mut out, m);
            }
        }
    }
    if !doc.agents.is_empty() {
        out.push_str("## Sub-agents\n\n");
        for a in &doc.agents {
            let _ = writeln!(out, "### Agent `{}` {}\n", a.id, one_line(&a.label));
            if a.messages.is_empty() {
                out.push_str("_Its messages are inline in the session file._\n\n");
            }
            for m in &a.messages {
                message(&mut out, m);
            }
        }
    }
    out
}

fn count(n: usize, one: &str, many: &str) -> String {
    match n {
        0 => String::new(),
        1 => format!(" · 1 {one}"),
        n => format!(" · {n} {many}"),
    }
}

fn message(out: &mut String, m: &Message) {
    if m.is_compact_boundary() {
        out.push_str("---\n\n*Conversation compacted: the messages above were summarised for the model.*\n\n---\n\n");
        return;
    }
    let who = match (m.role, m.subtype.as_deref()) {
        (Role::System | Role::Attachment, Some(s)) => format!("{} · {s}", m.role.as_str()),
        (r, _) => r.as_str().to_owned(),
    };
    let mut tags = String::new();
    if m.sidechain {
        tags.push_str(" · sidechain");
    }
    if m.meta {
        tags.push_str(" · meta");
    }
    let _ = writeln!(
        out,
        "#### {who}{tags} · {} <a id=\"m-{}\"></a>\n",
        m.timestamp.as_deref().unwrap_or("-"),
        m.uuid
    );
    for b in &m.blocks {
        block(out, b);
    }
}

fn block(out: &mut String, b: &Block) {
    match b {
        Block::Text(t) => {
            let _ = writeln!(out, "{}\n", t.trim_end());
        }
        Block::Thinking(t) => {
            out.push_str("<details><summary>Thinking</summary>\n\n");
            let _ = writeln!(out, "{}\n\n</details>\n", quote(t));
        }
        Block::ToolUse { id, name, input } => {
            let pretty = serde_json::to_string_pretty(input).unwrap_or_default();
            let _ = writeln!(
                out,
                "<details><summary>Tool call: {} <code>{}</code></summary>\n\n{}\n</details>\n",
                html_text(name),
                html_text(id),
                fenced("json", &pretty)
            );
        }
        Block::ToolResult {
            tool_use_id,
            text,
            is_error,
        } => {
            let _ = writeln!(
                out,
                "<details><summary>Tool result{} <code>{}</code></summary>\n\n{}\n</details>\n",
                if *is_error { " (error)" } else { "" },
                html_text(tool_use_id),
                fenced("", text)
            );
        }
        Block::Image { media_type } => {
            let _ = writeln!(
                out,
                "*[image{}]*\n",
                media_type
                    .as_deref()
                    .map(|t| format!(": {t}"))
                    .unwrap_or_default()
            );
        }
        Block::Other { kind, .. } => {
            let _ = writeln!(out, "*[{kind} block]*\n");
        }
    }
}

/// A code block whose fence is longer than any run of backticks inside.
fn fenced(lang: &str, text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{lang}\n{}\n{fence}\n", text.trim_end_matches('\n'))
}

fn quote(t: &str) -> String {
    t.lines()
        .map(|l| format!("> {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn one_line(t: &str) -> String {
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Text inside inline HTML (`<summary>`): `&`, `<`, `>` escaped.
fn html_text(t: &str) -> String {
    super::html::escape(t)
}
