//! A [`Document`] as Markdown: one heading per message, tool calls and results folded in
//! `<details>`, compaction boundaries and branch points marked, sub-agents as sections.
//!
//! # Transcript text is text
//! A Markdown file is rendered by GitHub, editors and site generators, most of which pass
//! raw HTML through. Every piece of transcript text enters the document through one of four
//! helpers, chosen by where it lands:
//! - [`prose`]: message text and thinking. Its own Markdown (emphasis, lists, headings, code)
//!   stays, but `<` and `&` become entities and `[` `]` are backslash-escaped, so it can make
//!   neither HTML nor a link (`[x](javascript:…)`, `<javascript:…>`, `[x]: …`). Code — a
//!   fenced block opened at the start of a line, a code span closed on its line — is kept as
//!   written (a renderer shows it verbatim), and every construct that could make a renderer
//!   disagree about where code starts or ends is neutralised: a backtick run that closes
//!   nothing on its line or follows a would-be autolink is escaped, a fence that is indented
//!   or holds a `|` is escaped, an unclosed fence is closed, a quote indents with spaces.
//!   (Checked by rendering random hostile text with cmark-gfm and markdown-it, raw HTML on.)
//! - [`inline`]: one-line text inside the document's own lines (titles, headings, labels).
//! - [`code`]: ids in code spans; [`fenced`]: tool inputs and results in code blocks, each
//!   fence longer than any backtick run inside.
//! - [`html_text`]: text inside the document's own HTML (`<summary>`, an anchor's `id`).

use std::fmt::Write as _;

use super::{Calls, Document};
use crate::resume::message::{Block, Message, Role};

/// Renders `doc`.
pub fn render(doc: &Document) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", inline(&doc.title));
    let _ = writeln!(
        out,
        "Session {} · {} messages{}{}\n",
        code(&doc.session_id),
        doc.messages.len(),
        count(doc.branches.len(), "other branch", "other branches"),
        count(doc.agents.len(), "sub-agent", "sub-agents"),
    );
    let points = doc.branch_points();
    let calls = super::calls_by_id(doc);
    let message = |out: &mut String, m: &Message| message(out, m, &calls);
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
                "### Branch ending at {} (after {})\n",
                code(&b.leaf),
                b.after
                    .as_deref()
                    .map_or_else(|| "the start".to_owned(), code)
            );
            for m in &b.messages {
                message(&mut out, m);
            }
        }
    }
    if !doc.agents.is_empty() {
        out.push_str("## Sub-agents\n\n");
        for a in &doc.agents {
            let _ = writeln!(out, "### Agent {} {}\n", code(&a.id), inline(&a.label));
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

fn message(out: &mut String, m: &Message, calls: &Calls) {
    if m.is_compact_boundary() {
        let _ = write!(out, "---\n\n*{}*\n\n---\n\n", super::COMPACTED);
        return;
    }
    let who = match (m.role, m.subtype.as_deref()) {
        (Role::System | Role::Attachment, Some(s)) => {
            format!("{} · {}", m.role.as_str(), inline(s))
        }
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
        inline(m.timestamp.as_deref().unwrap_or("-")),
        html_text(&m.uuid)
    );
    for b in &m.blocks {
        block(out, b, calls);
    }
}

/// `tool <code>subject</code>`: a tool call as a `<summary>` names it.
fn call_label(name: &str, subject: Option<&str>) -> String {
    match subject {
        Some(s) => format!("{} <code>{}</code>", html_text(name), html_text(s)),
        None => html_text(name),
    }
}

fn block(out: &mut String, b: &Block, calls: &Calls) {
    match b {
        Block::Text(t) => {
            let _ = writeln!(out, "{}\n", prose(t.trim_end()));
        }
        Block::Thinking(t) => {
            out.push_str("<details><summary>Thinking</summary>\n\n");
            let _ = writeln!(out, "{}\n\n</details>\n", quote(&prose(t)));
        }
        Block::ToolUse { name, input, .. } => {
            let pretty = serde_json::to_string_pretty(input).unwrap_or_default();
            let subject = super::tool_subject(input);
            let _ = writeln!(
                out,
                "<details><summary>Tool call: {}</summary>\n\n{}\n</details>\n",
                call_label(name, subject.as_deref()),
                fenced("json", &pretty)
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
                "<details><summary>Tool result{of}{}</summary>\n\n{}\n</details>\n",
                if *is_error { " (error)" } else { "" },
                fenced("", text)
            );
        }
        Block::Image { media_type } => {
            let _ = writeln!(
                out,
                "*[image{}]*\n",
                media_type
                    .as_deref()
                    .map(|t| format!(": {}", inline(t)))
                    .unwrap_or_default()
            );
        }
        Block::Other { kind, .. } => {
            let _ = writeln!(out, "*[{} block]*\n", inline(kind));
        }
    }
}

/// A code block whose fence is longer than any run of backticks inside.
fn fenced(lang: &str, text: &str) -> String {
    let fence = "`".repeat(longest_run(text, '`').max(2) + 1);
    format!("{fence}{lang}\n{}\n{fence}\n", text.trim_end_matches('\n'))
}

/// The longest run of `c` in `text`.
fn longest_run(text: &str, c: char) -> usize {
    text.split(|x| x != c).map(str::len).max().unwrap_or(0)
}

/// `t` as a block quote. Tabs that indent a line become spaces first: a tab stops at the next
/// multiple of four columns, so behind `> ` one indents by two where it indented by four, and
/// a line [`prose`] left as text (`\t~~~`) would open or close a code block.
fn quote(t: &str) -> String {
    t.lines()
        .map(|l| {
            let body = l.trim_start_matches([' ', '\t']);
            let mut col = 0;
            for c in l[..l.len() - body.len()].chars() {
                col = if c == '\t' { col / 4 * 4 + 4 } else { col + 1 };
            }
            format!("> {}{body}", " ".repeat(col))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn one_line(t: &str) -> String {
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Text inside the document's inline HTML (`<summary>`, an attribute): on one line (a line
/// break would end the HTML block and let the rest be read as Markdown), `&`, `<`, `>`, `"`
/// and `'` escaped, and `[` `]` as references too (a renderer that reads Markdown inside HTML
/// finds no link).
fn html_text(t: &str) -> String {
    super::html::escape(&one_line(t))
        .replace('[', "&#91;")
        .replace(']', "&#93;")
}

/// One-line transcript text inside a line of the document (a heading, a label).
fn inline(t: &str) -> String {
    let mut out = String::new();
    prose_line(&mut out, &one_line(t));
    out
}

/// An id as a code span, on one line, delimited by a backtick run longer than any inside.
fn code(t: &str) -> String {
    let t = one_line(t);
    let ticks = "`".repeat(longest_run(&t, '`') + 1);
    let pad = if t.is_empty() || t.contains('`') {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{t}{pad}{ticks}")
}

/// Message text as Markdown that makes no HTML and no link (see the module documentation).
/// Line endings become `\n` (a lone `\r` ends a line for `CommonMark`).
fn prose(text: &str) -> String {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    // The fence of the code block the text is in: its character and length.
    let mut fence: Option<(u8, usize)> = None;
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if let Some((c, n)) = fence {
            out.push_str(line);
            if closes_fence(line, c, n) {
                fence = None;
            }
        } else if let Some((c, n)) = opens_fence(line) {
            out.push_str(&line[..n]);
            prose_line(&mut out, &line[n..]);
            fence = Some((c, n));
        } else {
            prose_line(&mut out, line);
        }
    }
    if let Some((c, n)) = fence {
        out.push('\n');
        out.extend(std::iter::repeat_n(char::from(c), n));
    }
    out
}

/// A fence that opens a code block the export keeps as written: at the start of the line
/// (indented, it may belong to a list item and end with it, where the text goes on), three or
/// more backticks (with no backtick after them) or tildes, and no `|` after them (markdown-it
/// reads such a line followed by `|---|` as a table). Its character and length.
fn opens_fence(line: &str) -> Option<(u8, usize)> {
    let c = *line
        .as_bytes()
        .first()
        .filter(|&&c| c == b'`' || c == b'~')?;
    let n = line.bytes().take_while(|&b| b == c).count();
    let info = &line[n..];
    (n >= 3 && !info.contains('|') && !(c == b'`' && info.contains('`'))).then_some((c, n))
}

/// Whether `line` closes a block opened by `n` times `c` (`CommonMark`: up to three spaces, at
/// least as many of the same character, then only spaces and tabs).
fn closes_fence(line: &str, c: u8, n: usize) -> bool {
    let rest = line.trim_start_matches(' ');
    let indent = line.len() - rest.len();
    let run = rest.bytes().take_while(|&b| b == c).count();
    indent <= 3 && run >= n && rest[run..].bytes().all(|b| b == b' ' || b == b'\t')
}

/// One line of prose (not in a code block): `<` and `&` as entities, `[` and `]` escaped, a
/// tilde fence escaped (one the export does not follow: indented, or with a `|`), and a
/// code span kept as written when a renderer is sure to read it as one: closed on the line,
/// and opened where no link can be running — a GFM autolink (`http://…`, `www.…`, `a@b.c`)
/// swallows everything up to the next space, backticks included. Any other backtick run is
/// escaped (a renderer could pair it with one on another line and read the text between as
/// code). A backslash escape of the text (`\` and punctuation) is kept: it is literal already.
fn prose_line(out: &mut String, line: &str) {
    let b = line.as_bytes();
    let mut i = 0;
    let indent = b.iter().take_while(|&&c| c == b' ').count();
    if indent <= 3 && line[indent..].starts_with("~~~") {
        out.push_str(&line[..indent]);
        out.push('\\');
        i = indent;
    }
    // Whether the text since the last space could be part of an autolink.
    let mut linkish = false;
    let mut note = |bytes: &[u8]| {
        for &c in bytes {
            if c == b' ' || c == b'\t' {
                linkish = false;
            } else if c.is_ascii_alphanumeric() || c == b':' || c == b'@' {
                linkish = true;
            }
        }
        linkish
    };
    while i < b.len() {
        let start = i;
        match b[i] {
            // GFM's autolinks take a backslash into the link, freeing the `<` it escaped.
            b'\\' if b.get(i + 1) == Some(&b'<') => {
                out.push_str("&lt;");
                i += 2;
            }
            b'\\' if b.get(i + 1).is_some_and(u8::is_ascii_punctuation) => {
                out.push_str(&line[i..i + 2]);
                i += 2;
            }
            b'`' => {
                let n = b[i..].iter().take_while(|&&c| c == b'`').count();
                if let Some(end) = code_span_end(line, i, n).filter(|_| !note(&[])) {
                    out.push_str(&line[i..end]);
                    i = end;
                } else {
                    for _ in 0..n {
                        out.push_str("\\`");
                    }
                    i += n;
                }
            }
            b'<' => {
                out.push_str("&lt;");
                i += 1;
            }
            b'&' => {
                out.push_str("&amp;");
                i += 1;
            }
            b'[' | b']' => {
                out.push('\\');
                out.push(char::from(b[i]));
                i += 1;
            }
            _ => {
                // Up to the next byte that matters (never inside a UTF-8 sequence: they are
                // all ASCII).
                let end = b[i + 1..]
                    .iter()
                    .position(|c| matches!(c, b'\\' | b'`' | b'<' | b'&' | b'[' | b']'))
                    .map_or(b.len(), |p| i + 1 + p);
                out.push_str(&line[i..end]);
                i = end;
            }
        }
        note(&b[start..i]);
    }
}

/// The end of the code span whose opening run of `n` backticks starts at `start`: just after
/// the next run of exactly `n` backticks on the line. `None` when there is none, or when the
/// span holds a `|` (a table row splits its cells there first, code or not).
fn code_span_end(line: &str, start: usize, n: usize) -> Option<usize> {
    let b = line.as_bytes();
    let mut i = start + n;
    while i < b.len() {
        if b[i] == b'`' {
            let m = b[i..].iter().take_while(|&&c| c == b'`').count();
            if m == n {
                let end = i + m;
                return (!line[start..end].contains('|')).then_some(end);
            }
            i += m;
        } else {
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_makes_no_html_and_no_link() {
        assert_eq!(
            prose("<script>x</script> & [a](javascript:b) <javascript:c>\n[r]: javascript:d"),
            "&lt;script>x&lt;/script> &amp; \\[a\\](javascript:b) &lt;javascript:c>\n\\[r\\]: javascript:d"
        );
        // The text's own escapes stay, but a `\<` an autolink could take apart is an entity.
        assert_eq!(prose(r"\[a\] \* \<b>"), r"\[a\] \* &lt;b>");
        assert_eq!(prose("a\r<b>\r\nc"), "a\n&lt;b>\nc");
    }

    #[test]
    fn code_stays_as_written() {
        for t in [
            "use `Vec<T>` and ``a`b`` (`<b>`)",
            "```rust\nlet a: Vec<u8> = [] & x;\n```\n",
            "~~~\n<b>\n  ~~~~\n",
        ] {
            assert_eq!(prose(t), t);
        }
    }

    #[test]
    fn code_a_renderer_could_read_otherwise_is_escaped() {
        // An unclosed fence is closed (the next message is not code).
        assert_eq!(prose("```\n<b>"), "```\n<b>\n```");
        // A tilde fence closed before a backtick fence opens.
        assert_eq!(
            prose("~~~\n```\n~~~\n<b>\n```"),
            "~~~\n```\n~~~\n&lt;b>\n```\n```"
        );
        // A backtick run that closes nothing on its line (a renderer pairs it across lines).
        assert_eq!(prose("`a\n\n<b>`"), "\\`a\n\n&lt;b>\\`");
        // A code span an autolink would run into.
        assert_eq!(prose("http://a`<b>`"), "http://a\\`&lt;b>\\`");
        assert_eq!(prose("a@b.c`<b>`"), "a@b.c\\`&lt;b>\\`");
        // A span holding `|` (a table cell ends there).
        assert_eq!(prose("`<b>|`"), "\\`&lt;b>|\\`");
        // Fences the export does not follow: indented (a list item's), or with a `|`.
        assert_eq!(prose("  ~~~\n<b>"), "  \\~~~\n&lt;b>");
        assert_eq!(prose("  ```\n<b>"), "  \\`\\`\\`\n&lt;b>");
        assert_eq!(prose("~~~ |\n<b>"), "\\~~~ |\n&lt;b>");
        assert_eq!(prose("``` a|b\n<b>"), "\\`\\`\\` a|b\n&lt;b>");
    }

    #[test]
    fn a_quote_indents_with_spaces() {
        // `> \t~~~` is indented by two: a fence that `\t~~~` at the start of a line is not.
        assert_eq!(quote("\t~~~\n \tx\ny"), ">     ~~~\n>     x\n> y");
    }

    #[test]
    fn ids_and_html_text_stay_on_their_line() {
        assert_eq!(code("a`b"), "`` a`b ``");
        assert_eq!(code("x\n\ny"), "`x y`");
        assert_eq!(inline("a\n\n# <b>"), "a # &lt;b>");
        assert_eq!(html_text("a\n\n[x](y)<\""), "a &#91;x&#93;(y)&lt;&quot;");
        assert!(fenced("", "a````b").starts_with("`````\n"));
    }
}
