//! A [`Document`] as one self-contained HTML file: inline CSS, no script, no network. Message
//! text is rendered as the Markdown it is written in; tool calls and results are collapsible
//! `<details>` named by what the call did (the command, the file, the pattern); compaction
//! boundaries and branch points are visible; sub-agent transcripts are sections linked from
//! the top.
//!
//! # Transcript text is text
//! Markdown is rendered by pulldown-cmark, but nothing in a transcript becomes markup of its
//! own: raw HTML in a message is shown as text, a link whose address is not `http(s):`,
//! `mailto:` or a relative one is shown as its text only, and an image becomes a link to its
//! address (the page loads nothing).

use std::fmt::Write as _;

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd};

use super::{Calls, Document};
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
.md{overflow-wrap:anywhere}
.md>:first-child{margin-top:0}
.md>:last-child{margin-bottom:0}
.md table{border-collapse:collapse}
.md th,.md td{border:1px solid #ccc;padding:.2rem .5rem}
.md blockquote{border-left:3px solid #ddd;margin-left:0;padding-left:.75rem;color:#555}
code,pre,kbd{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em}
:not(pre)>code{background:#f0f0f0;border-radius:3px;padding:0 .25rem}
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
    let calls = super::calls_by_id(doc);
    let message = |out: &mut String, m: &Message| message(out, m, &calls);
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

fn message(out: &mut String, m: &Message, calls: &Calls) {
    if m.is_compact_boundary() {
        let _ = writeln!(
            out,
            "<div class=\"boundary\" id=\"m-{}\">{}</div>",
            escape(&m.uuid),
            super::COMPACTED
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
        block(out, b, calls);
    }
    out.push_str("</article>\n");
}

/// `<b>tool</b> <code>subject</code>`: a tool call as its heading names it.
fn call_label(name: &str, subject: Option<&str>) -> String {
    match subject {
        Some(s) => format!("<b>{}</b> <code>{}</code>", escape(name), escape(s)),
        None => format!("<b>{}</b>", escape(name)),
    }
}

fn block(out: &mut String, b: &Block, calls: &Calls) {
    match b {
        Block::Text(t) => {
            let _ = writeln!(out, "<div class=\"md\">{}</div>", markdown(t.trim_end()));
        }
        Block::Thinking(t) => {
            let _ = writeln!(
                out,
                "<details class=\"thinking\"><summary>Thinking</summary><div class=\"md\">{}</div></details>",
                markdown(t)
            );
        }
        Block::ToolUse { id, name, input } => {
            let pretty = serde_json::to_string_pretty(input).unwrap_or_default();
            let subject = super::tool_subject(input);
            let _ = writeln!(
                out,
                "<details class=\"tool-use\" data-tool-use-id=\"{id}\"><summary>Tool call: {}</summary><pre><code>{}</code></pre></details>",
                call_label(name, subject.as_deref()),
                escape(&pretty),
                id = escape(id)
            );
        }
        Block::ToolResult {
            tool_use_id,
            text,
            is_error,
        } => {
            let of = calls
                .get(tool_use_id.as_str())
                .map_or_else(String::new, |(name, subject)| {
                    format!(" of {}", call_label(name, subject.as_deref()))
                });
            let _ = writeln!(
                out,
                "<details class=\"tool-result{}\" data-tool-use-id=\"{id}\"><summary>Tool result{of}{}</summary><pre><code>{}</code></pre></details>",
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

/// Message text rendered as Markdown (see the module documentation): raw HTML as text, only
/// safe link addresses, images as links, and a line break where the writer broke the line.
fn markdown(text: &str) -> String {
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    // Whether each open link was kept (its end is dropped with it).
    let mut links: Vec<bool> = Vec::new();
    let events = Parser::new_ext(text, opts).filter_map(|e| match e {
        Event::Html(h) | Event::InlineHtml(h) => Some(Event::Text(h)),
        Event::SoftBreak => Some(Event::HardBreak),
        Event::Start(
            Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }
            | Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            },
        ) => {
            let keep = safe_address(&dest_url);
            links.push(keep);
            keep.then_some(Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }))
        }
        Event::End(TagEnd::Link | TagEnd::Image) => links
            .pop()
            .unwrap_or(false)
            .then_some(Event::End(TagEnd::Link)),
        Event::Text(t) => Some(Event::Text(CowStr::from(without_controls(&t)))),
        e => Some(e),
    });
    let mut html = String::with_capacity(text.len() + text.len() / 4);
    pulldown_cmark::html::push_html(&mut html, events);
    html
}

/// Whether a link may point at `url`: the web, mail, or a relative address (no scheme).
/// Whitespace and control characters are left out first, as browsers leave them out of a
/// scheme (`java\tscript:` is `javascript:` to them).
fn safe_address(url: &str) -> bool {
    let lower: String = url
        .chars()
        .filter(|c| !c.is_whitespace() && !c.is_control())
        .collect::<String>()
        .to_ascii_lowercase();
    let scheme_end = lower.find(|c: char| !(c.is_ascii_alphanumeric() || "+-.".contains(c)));
    match scheme_end {
        Some(i) if lower[i..].starts_with(':') && i > 0 => {
            matches!(&lower[..i], "http" | "https" | "mailto")
        }
        _ => true,
    }
}

/// `t` without the control characters HTML text may not hold (newline and tab stay).
fn without_controls(t: &str) -> String {
    t.chars()
        .filter(|&c| !c.is_control() || c == '\n' || c == '\t')
        .collect()
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
