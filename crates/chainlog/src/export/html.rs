//! A [`Document`] as one self-contained HTML file: inline CSS, no script, no network. Tool
//! calls and results are collapsible `<details>`; compaction boundaries and branch points are
//! visible; sub-agent transcripts are sections linked from the top.

use std::fmt::Write as _;

use super::Document;
use crate::resume::message::{Block, Message, Role};

const STYLE: &str = r"
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222;background:#fff}
header p{color:#666}
nav a{margin-right:1rem}
article.msg{border-left:4px solid #ccc;margin:1rem 0;padding:.25rem .75rem}
article.user{border-color:#3a7bd5}
article.assistant{border-color:#2e9d57}
article.system,article.attachment,article.other{border-color:#aaa;color:#555;font-size:.9em}
article .who{font-weight:600}
article .when{color:#888;font-size:.85em;margin-left:.5rem}
article .tag{background:#eee;border-radius:3px;padding:0 .3rem;font-size:.8em;margin-left:.3rem}
.text{white-space:pre-wrap;overflow-wrap:anywhere}
.thinking{color:#666;font-style:italic}
details{margin:.4rem 0}
summary{cursor:pointer;color:#444}
pre{background:#f6f8fa;padding:.5rem;overflow:auto;white-space:pre-wrap;overflow-wrap:anywhere}
.error summary{color:#b00}
.boundary{text-align:center;color:#8a6d00;background:#fff8dc;border:1px dashed #e0c050;padding:.4rem;margin:1.5rem 0}
.branch-point{color:#7a3db8;font-size:.9em;margin:.25rem 0 1rem}
section{margin-top:2.5rem}
";

/// Renders `doc`.
pub fn render(doc: &Document) -> String {
    let mut out = String::new();
    let title = escape(&doc.title);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title}</title><style>{STYLE}</style></head><body>\n"
    );
    let _ = writeln!(
        out,
        "<header><h1>{title}</h1><p>Session <code>{}</code> · {} messages · exported by chainlog</p>",
        escape(&doc.session_id),
        doc.messages.len()
    );
    if !doc.branches.is_empty() || !doc.agents.is_empty() {
        out.push_str("<nav>");
        if !doc.branches.is_empty() {
            let n = doc.branches.len();
            let _ = write!(
                out,
                "<a href=\"#branches\">{n} other branch{}</a>",
                if n == 1 { "" } else { "es" }
            );
        }
        for a in &doc.agents {
            let _ = write!(
                out,
                "<a href=\"#agent-{id}\">agent {id}</a>",
                id = escape(&a.id)
            );
        }
        out.push_str("</nav>");
    }
    out.push_str("</header>\n<main id=\"conversation\">\n");
    let points = doc.branch_points();
    for m in &doc.messages {
        message(&mut out, m);
        if let Some(n) = points.get(m.uuid.as_str()) {
            let _ = writeln!(
                out,
                "<p class=\"branch-point\">Branch point: <a href=\"#branches\">{n} other branch{}</a> leave{} the conversation here.</p>",
                if *n == 1 { "" } else { "es" },
                if *n == 1 { "s" } else { "" },
            );
        }
    }
    out.push_str("</main>\n");
    if !doc.branches.is_empty() {
        out.push_str("<section id=\"branches\"><h2>Branches</h2>\n");
        for b in &doc.branches {
            let after = b.after.as_deref().map_or_else(
                || "the start".to_owned(),
                |a| format!("<a href=\"#m-{0}\">{0}</a>", escape(a)),
            );
            let _ = writeln!(
                out,
                "<section class=\"branch\" id=\"branch-{leaf}\"><h3>Branch ending at <code>{leaf}</code>, after {after}</h3>",
                leaf = escape(&b.leaf)
            );
            for m in &b.messages {
                message(&mut out, m);
            }
            out.push_str("</section>\n");
        }
        out.push_str("</section>\n");
    }
    for a in &doc.agents {
        let _ = writeln!(
            out,
            "<section class=\"agent\" id=\"agent-{id}\"><h2>Sub-agent <code>{id}</code> {label}</h2>",
            id = escape(&a.id),
            label = escape(&a.label)
        );
        if a.messages.is_empty() {
            out.push_str("<p>Its messages are inline in the session file.</p>\n");
        }
        for m in &a.messages {
            message(&mut out, m);
        }
        out.push_str("</section>\n");
    }
    out.push_str("</body></html>\n");
    out
}

fn message(out: &mut String, m: &Message) {
    if m.is_compact_boundary() {
        let _ = writeln!(
            out,
            "<div class=\"boundary\" id=\"m-{}\">Conversation compacted: the messages above were summarised for the model.</div>",
            escape(&m.uuid)
        );
        return;
    }
    let role = m.role.as_str();
    let _ = write!(
        out,
        "<article class=\"msg {role}\" id=\"m-{}\" data-uuid=\"{}\"><div><span class=\"who\">{role}</span>",
        escape(&m.uuid),
        escape(&m.uuid)
    );
    if matches!(m.role, Role::System | Role::Attachment)
        && let Some(s) = &m.subtype
    {
        let _ = write!(out, "<span class=\"tag\">{}</span>", escape(s));
    }
    if m.sidechain {
        out.push_str("<span class=\"tag\">sidechain</span>");
    }
    if m.meta {
        out.push_str("<span class=\"tag\">meta</span>");
    }
    let _ = writeln!(
        out,
        "<span class=\"when\">{}</span></div>",
        escape(m.timestamp.as_deref().unwrap_or(""))
    );
    for b in &m.blocks {
        block(out, b);
    }
    out.push_str("</article>\n");
}

fn block(out: &mut String, b: &Block) {
    match b {
        Block::Text(t) => {
            let _ = writeln!(out, "<div class=\"text\">{}</div>", escape(t.trim_end()));
        }
        Block::Thinking(t) => {
            let _ = writeln!(
                out,
                "<details class=\"thinking\"><summary>Thinking</summary><div class=\"text\">{}</div></details>",
                escape(t)
            );
        }
        Block::ToolUse { id, name, input } => {
            let pretty = serde_json::to_string_pretty(input).unwrap_or_default();
            let _ = writeln!(
                out,
                "<details class=\"tool-use\" data-tool-use-id=\"{id}\"><summary>Tool call: <b>{}</b> <code>{id}</code></summary><pre>{}</pre></details>",
                escape(name),
                escape(&pretty),
                id = escape(id)
            );
        }
        Block::ToolResult {
            tool_use_id,
            text,
            is_error,
        } => {
            let _ = writeln!(
                out,
                "<details class=\"tool-result{}\" data-tool-use-id=\"{id}\"><summary>Tool result{} <code>{id}</code></summary><pre>{}</pre></details>",
                if *is_error { " error" } else { "" },
                if *is_error { " (error)" } else { "" },
                escape(text),
                id = escape(tool_use_id)
            );
        }
        Block::Image { media_type } => {
            let _ = writeln!(
                out,
                "<p class=\"image\">[image{}]</p>",
                media_type
                    .as_deref()
                    .map(|t| format!(": {}", escape(t)))
                    .unwrap_or_default()
            );
        }
        Block::Other { kind, .. } => {
            let _ = writeln!(out, "<p class=\"other\">[{} block]</p>", escape(kind));
        }
    }
}

/// Escapes text for HTML element content and quoted attribute values; control characters
/// other than newline and tab are dropped (they are not allowed in HTML text).
pub fn escape(t: &str) -> String {
    let mut s = String::with_capacity(t.len());
    for c in t.chars() {
        match c {
            '&' => s.push_str("&amp;"),
            '<' => s.push_str("&lt;"),
            '>' => s.push_str("&gt;"),
            '"' => s.push_str("&quot;"),
            '\'' => s.push_str("&#39;"),
            '\n' | '\t' => s.push(c),
            c if c.is_control() => {}
            c => s.push(c),
        }
    }
    s
}
