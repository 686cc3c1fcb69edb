//! A readable rendering of a view for people (`--format text`).
//!
//! Transcript content is untrusted: control characters other than `\n` and `\t` (terminal
//! escape sequences such as `ESC]0;` retitling or `ESC[2J` clearing the terminal, `\r`, C1
//! controls) are written as visible `\u{..}` escapes, never raw.

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
    let mut out = format!("── {} {}", printable(&who), printable(ts));
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
            push_text(out, &format!("→ {} ", printable(name)), &input);
        }
        Some("tool_result") => {
            let content = super::message::result_text(b.get("content"));
            push_text(out, "← ", &content);
        }
        Some(other) => {
            let _ = writeln!(out, "  [{}]", printable(other));
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
        let _ = writeln!(
            out,
            "  {}{}",
            if i == 0 { prefix } else { "" },
            printable(line)
        );
    }
}

/// `text` with every control character but `\n` and `\t` written as a visible escape.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.contains(unsafe_char) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out.into()
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn terminal_escapes_are_made_visible() {
        assert_eq!(printable("a\tb\nc"), "a\tb\nc");
        assert_eq!(
            printable("\u{1b}]0;owned\u{7}\u{1b}[2J\r\u{9b}x"),
            "\\u{1b}]0;owned\\u{7}\\u{1b}[2J\\u{d}\\u{9b}x"
        );
    }
}
