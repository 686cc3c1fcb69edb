//! A readable rendering of a view for people (`--format text`).

use std::fmt::Write as _;

use serde_json::Value;

use super::body::ViewEntry;

const MAX_BLOCK: usize = 2000;

/// Renders one entry as a few readable lines.
pub fn render(entry: &ViewEntry) -> String {
    let v = entry.value().unwrap_or(Value::Null);
    let ts = v.get("timestamp").and_then(Value::as_str).unwrap_or("");
    let ty = v.get("type").and_then(Value::as_str).unwrap_or("?");
    let who = match ty {
        "system" => format!(
            "system/{}",
            v.get("subtype").and_then(Value::as_str).unwrap_or("-")
        ),
        "attachment" => format!(
            "attachment/{}",
            v.pointer("/attachment/type")
                .and_then(Value::as_str)
                .unwrap_or("-")
        ),
        t => t.to_owned(),
    };
    let mut out = format!("── {who} {ts}");
    if v.get("isSidechain").and_then(Value::as_bool) == Some(true) {
        out.push_str(" [sidechain]");
    }
    out.push('\n');
    match v.pointer("/message/content") {
        Some(Value::String(s)) => push_text(&mut out, "", s),
        Some(Value::Array(blocks)) => {
            for b in blocks {
                render_block(&mut out, b);
            }
        }
        _ => {
            if let Some(c) = v.get("content").and_then(Value::as_str) {
                push_text(&mut out, "", c);
            }
        }
    }
    out
}

fn render_block(out: &mut String, b: &Value) {
    match b.get("type").and_then(Value::as_str) {
        Some("text") => push_text(out, "", b.get("text").and_then(Value::as_str).unwrap_or("")),
        Some("thinking") => push_text(
            out,
            "(thinking) ",
            b.get("thinking").and_then(Value::as_str).unwrap_or(""),
        ),
        Some("tool_use") => {
            let name = b.get("name").and_then(Value::as_str).unwrap_or("?");
            let input = b.get("input").map(Value::to_string).unwrap_or_default();
            push_text(out, &format!("→ {name} "), &input);
        }
        Some("tool_result") => {
            let content = match b.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(parts)) => parts
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => String::new(),
            };
            push_text(out, "← ", &content);
        }
        Some(other) => {
            let _ = writeln!(out, "  [{other}]");
        }
        None => {}
    }
}

fn push_text(out: &mut String, prefix: &str, text: &str) {
    let mut shown: String = text.chars().take(MAX_BLOCK).collect();
    if shown.len() < text.len() {
        shown.push('…');
    }
    for (i, line) in shown.lines().enumerate() {
        let _ = writeln!(out, "  {}{line}", if i == 0 { prefix } else { "" });
    }
}
