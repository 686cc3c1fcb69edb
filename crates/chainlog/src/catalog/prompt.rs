//! The text a picker shows for a prompt (format.md §A6 "first meaningful prompt").
//!
//! | user text | shown |
//! |---|---|
//! | `<command-name>/review</command-name><command-args>PR 12</command-args>` | `/review PR 12` |
//! | `<command-name>/exit</command-name>` (no args) | skipped |
//! | `<bash-input>ls -la</bash-input>` | `! ls -la` |
//! | `<local-command-stdout>…`, any other text starting with `<tag` | skipped |
//! | `[Request interrupted by user]` | skipped |
//! | `fix\nthe   bug` | `fix the   bug` (newlines → spaces, trimmed, cut at 200 chars + `…`) |
//!
//! Meta and compact-summary users are skipped by the caller (their flags are in the envelope).

use serde_json::Value;

/// Longest prompt shown, in chars; longer ones are cut and end with `…`.
pub const MAX_PROMPT_CHARS: usize = 200;

/// The text of a user entry: a string `message.content`, or its first non-blank text block.
pub fn user_text(entry: &Value) -> Option<&str> {
    match entry.pointer("/message/content")? {
        Value::String(s) => Some(s.as_str()),
        Value::Array(blocks) => blocks.iter().find_map(|b| {
            (b.get("type").and_then(Value::as_str) == Some("text"))
                .then(|| b.get("text").and_then(Value::as_str))
                .flatten()
                .filter(|t| !t.trim().is_empty())
        }),
        _ => None,
    }
}

/// What a picker shows for one user text, or `None` when it is not a meaningful prompt.
pub fn meaningful(text: &str) -> Option<String> {
    let t = text.trim_start();
    if starts_with_tag(t) && t.contains("<command-name>") {
        let name = tag_content(t, "command-name")?.trim();
        let args = tag_content(t, "command-args").map_or("", str::trim);
        return (!name.is_empty() && !args.is_empty()).then(|| flatten(&format!("{name} {args}")));
    }
    if let Some(rest) = t.strip_prefix("<bash-input>") {
        let input = rest.split("</bash-input>").next().unwrap_or(rest).trim();
        return (!input.is_empty()).then(|| flatten(&format!("! {input}")));
    }
    if starts_with_tag(t) || t.starts_with("[Request interrupted by user") {
        return None;
    }
    let shown = flatten(t);
    (!shown.is_empty()).then_some(shown)
}

/// Newlines → spaces, trimmed, cut at [`MAX_PROMPT_CHARS`] chars with `…`.
pub fn flatten(text: &str) -> String {
    // Newlines are whitespace: trimming before replacing them trims the same, and only the
    // part shown is copied (a prompt may be 100 MB).
    let one_line = |s: &str| s.replace(['\n', '\r'], " ");
    let trimmed = text.trim();
    match trimmed.char_indices().nth(MAX_PROMPT_CHARS) {
        Some((cut, _)) => format!("{}…", one_line(&trimmed[..cut]).trim_end()),
        None => one_line(trimmed),
    }
}

/// `<name>` followed by a letter: an XML-ish tag Claude Code wraps around non-prompts.
fn starts_with_tag(t: &str) -> bool {
    t.strip_prefix('<')
        .and_then(|r| r.chars().next())
        .is_some_and(|c| c.is_ascii_alphabetic())
}

fn tag_content<'a>(text: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = text.find(&open)? + open.len();
    let end = text[start..].find(&close).map_or(text.len(), |e| start + e);
    Some(&text[start..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules_of_a6() {
        assert_eq!(
            meaningful(
                "<command-message>orchestrator is running…</command-message>\n<command-name>/orchestrator</command-name>\n<command-args>@CLAUDE.md update</command-args>"
            )
            .as_deref(),
            Some("/orchestrator @CLAUDE.md update")
        );
        assert_eq!(
            meaningful("<command-name>/exit</command-name>\n<command-args></command-args>"),
            None
        );
        assert_eq!(
            meaningful("<bash-input>ls -la</bash-input>").as_deref(),
            Some("! ls -la")
        );
        assert_eq!(
            meaningful("<local-command-stdout>Bye!</local-command-stdout>"),
            None
        );
        assert_eq!(
            meaningful("[Request interrupted by user for tool use]"),
            None
        );
        assert_eq!(meaningful("  \n "), None);
        assert_eq!(
            meaningful("fix\nthe bug\r\n").as_deref(),
            Some("fix the bug")
        );
        assert_eq!(meaningful("a < b?").as_deref(), Some("a < b?"));
        let long = "é".repeat(250);
        let shown = meaningful(&long).unwrap();
        assert_eq!(shown.chars().count(), 201);
        assert!(shown.ends_with('…'));
        assert_eq!(flatten(&"x".repeat(200)), "x".repeat(200));
    }

    #[test]
    fn text_of_string_and_block_content() {
        let v: Value = serde_json::from_str(r#"{"message":{"content":"hi"}}"#).unwrap();
        assert_eq!(user_text(&v), Some("hi"));
        let v: Value = serde_json::from_str(
            r#"{"message":{"content":[{"type":"image"},{"type":"text","text":" "},{"type":"text","text":"yo"}]}}"#,
        )
        .unwrap();
        assert_eq!(user_text(&v), Some("yo"));
        let v: Value = serde_json::from_str(
            r#"{"message":{"content":[{"type":"tool_result","content":"x"}]}}"#,
        )
        .unwrap();
        assert_eq!(user_text(&v), None);
    }
}
