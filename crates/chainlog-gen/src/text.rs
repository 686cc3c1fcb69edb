//! Realistic-looking text: prompts, replies, file paths and a pool of source-like lines
//! that tool outputs are cut from (cheap enough to fill a 1 GiB file quickly).

use std::fmt::Write as _;

use super::rng::Gen;

const IDENTS: &[&str] = &[
    "config",
    "session",
    "parser",
    "index",
    "offset",
    "buffer",
    "reader",
    "writer",
    "entry",
    "leaf",
    "chain",
    "parent",
    "uuid",
    "line",
    "frame",
    "cursor",
    "store",
    "table",
    "value",
    "record",
    "message",
    "payload",
    "handle",
    "state",
    "result",
    "error",
    "count",
    "limit",
    "timestamp",
    "path",
    "project",
    "summary",
    "title",
    "snapshot",
    "batch",
    "queue",
    "worker",
    "token",
    "usage",
    "tool",
    "request",
    "response",
    "stream",
    "chunk",
    "digest",
    "schema",
];
const TYPES: &[&str] = &[
    "u64",
    "usize",
    "String",
    "&str",
    "Vec<u8>",
    "Option<String>",
    "bool",
    "Result<(), Error>",
    "HashMap<String, u64>",
    "PathBuf",
    "&[u8]",
    "i64",
];
const WORDS: &[&str] = &[
    "the", "a", "this", "that", "we", "it", "should", "now", "then", "also", "file", "function",
    "test", "tests", "module", "change", "update", "check", "fix", "error", "value", "case",
    "first", "next", "last", "line", "lines", "returns", "when", "if", "because", "before",
    "after", "with", "without", "into", "from", "for", "and", "or", "not", "is", "are", "be",
    "parser", "index", "session", "handles", "keeps", "reads", "writes", "edge", "empty", "large",
    "small", "correct", "missing", "order", "key", "keys", "field", "fields",
];
const DIRS: &[&str] = &[
    "src", "src/core", "src/util", "tests", "lib", "app", "scripts", "docs",
];
const EXTS: &[&str] = &["rs", "ts", "py", "go", "md", "toml", "json", "tsx"];
const PROMPTS: &[&str] = &[
    "Add a function called {i}_{j} that takes a {t} and returns the {k}. Add a test for it.",
    "The {i} module panics when the {j} is empty. Can you find out why and fix it?",
    "Refactor {f} so that the {i} handling lives in its own function.",
    "Run the test suite and fix whatever is failing.",
    "Why does {f} read the whole {i} into memory? Make it stream instead.",
    "Please review {f} and tell me if the {j} logic is correct.",
    "Rename `{i}` to `{j}_{k}` everywhere and update the docs.",
    "Can you also handle the café / naïve / Zürich cases in the {i} normaliser? 🚀",
    "日本語のコメントを {f} に追加してください。",
    "Write a benchmark for {i}::{j} with 10k entries and report the numbers.",
    "Commit the changes with a descriptive message.",
    "The CI job fails on `cargo clippy -- -D warnings`; fix the lints in {f}.",
    "Explain how {i} and {j} interact, with a short example.",
    "Add error context to every `?` in {f}.",
];
const OPENERS: &[&str] = &[
    "I'll start by exploring the codebase to understand its structure.",
    "Let me look at the relevant files first.",
    "Let me check how {i} is used before changing it.",
    "I'll run the tests to see the current state.",
    "Now let me update {f} accordingly.",
    "Let me read {f} to see the {i} handling.",
];
const CLOSERS: &[&str] = &[
    "Done. I added `{i}_{j}` to {f} and a test covering the empty {k} case; all tests pass.",
    "The bug was an off-by-one in the {i} loop: the last {j} was never flushed. Fixed in {f}.",
    "I refactored {f}: `{i}` now delegates to a new `{j}_{k}` helper. No behaviour change.",
    "All 42 tests pass and clippy is clean. Summary of changes:\n\n- {f}: handle empty {i}\n- tests: add {j} cases",
    "The {i} logic looks correct, but `{j}` can overflow on 32-bit targets; I'd use `u64` there.",
    "Committed as `fix({i}): keep {j} order when {k} is empty`.",
];

/// A pool of code-like lines that tool outputs are sliced from.
pub(crate) struct TextPool {
    text: String,
    /// Byte offsets of line starts in `text`.
    starts: Vec<usize>,
}

impl TextPool {
    /// About `size` bytes of source-like text.
    pub(crate) fn new(g: &mut Gen, size: usize) -> Self {
        let mut text = String::with_capacity(size + 256);
        let mut starts = Vec::new();
        let mut depth = 0usize;
        while text.len() < size {
            starts.push(text.len());
            let indent = "    ".repeat(depth);
            let line = match g.below(10) {
                0 => {
                    depth = (depth + 1).min(3);
                    format!(
                        "{indent}pub fn {}_{}(&self, {}: {}) -> {} {{",
                        g.pick(IDENTS),
                        g.pick(IDENTS),
                        g.pick(IDENTS),
                        g.pick(TYPES),
                        g.pick(TYPES)
                    )
                }
                1 => {
                    depth = depth.saturating_sub(1);
                    format!("{}}}", "    ".repeat(depth))
                }
                2 => format!("{indent}// {}", sentence(g, 6, 14)),
                3 => format!("{indent}use crate::{}::{};", g.pick(IDENTS), g.pick(IDENTS)),
                4 => format!(
                    "{indent}if {}.{}() > {} {{ return Err(Error::{}); }}",
                    g.pick(IDENTS),
                    g.pick(IDENTS),
                    g.range(0, 4096),
                    g.pick(IDENTS)
                ),
                5 => String::new(),
                6 => format!("{indent}#[derive(Debug, Clone, PartialEq)]"),
                _ => format!(
                    "{indent}let {} = {}.{}(&{})?;",
                    g.pick(IDENTS),
                    g.pick(IDENTS),
                    g.pick(IDENTS),
                    g.pick(IDENTS)
                ),
            };
            text.push_str(&line);
            text.push('\n');
        }
        Self { text, starts }
    }

    /// Whole lines totalling about `len` bytes (at least one line), starting at a random line.
    /// Returns the text and the first line number (1-based).
    pub(crate) fn window(&self, g: &mut Gen, len: usize) -> (String, usize) {
        let first = g.below(self.starts.len());
        let mut out = String::with_capacity(len + 128);
        let mut i = first;
        while out.len() < len.max(1) {
            let start = self.starts[i];
            let end = self.starts.get(i + 1).copied().unwrap_or(self.text.len());
            out.push_str(&self.text[start..end]);
            i = (i + 1) % self.starts.len();
        }
        (out, first + 1)
    }

    /// Like [`Self::window`] but with `cat -n` style line numbers (`     1→…`), as the Read
    /// tool returns: (numbered text, raw text, first line number, line count).
    pub(crate) fn numbered(&self, g: &mut Gen, len: usize) -> (String, String, usize, usize) {
        let (raw, first) = self.window(g, len);
        let mut out = String::with_capacity(raw.len() + raw.len() / 4);
        let mut n = first;
        for line in raw.lines() {
            let _ = writeln!(out, "{n:>6}\u{2192}{line}");
            n += 1;
        }
        (out, raw, first, n - first)
    }
}

/// `lo..=hi` random words.
pub(crate) fn sentence(g: &mut Gen, lo: usize, hi: usize) -> String {
    let n = g.between(lo, hi);
    let mut s = String::new();
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(g_pick(g, WORDS));
    }
    s
}

/// A relative-looking source path under `cwd`.
pub(crate) fn file_path(g: &mut Gen, cwd: &str) -> String {
    format!(
        "{cwd}/{}/{}_{}.{}",
        g.pick(DIRS),
        g.pick(IDENTS),
        g.pick(IDENTS),
        g.pick(EXTS)
    )
}

fn fill(g: &mut Gen, template: &str, cwd: &str) -> String {
    let mut s = template.to_owned();
    for (key, value) in [
        ("{i}", (*g.pick(IDENTS)).to_owned()),
        ("{j}", (*g.pick(IDENTS)).to_owned()),
        ("{k}", (*g.pick(IDENTS)).to_owned()),
        ("{t}", (*g.pick(TYPES)).to_owned()),
        ("{f}", file_path(g, cwd)),
    ] {
        s = s.replace(key, &value);
    }
    s
}

pub(crate) fn prompt(g: &mut Gen, cwd: &str) -> String {
    let base = {
        let t = g_pick(g, PROMPTS);
        fill(g, t, cwd)
    };
    if g.chance(0.3) {
        format!("{base}\n\n{}.", sentence(g, 8, 30))
    } else {
        base
    }
}

pub(crate) fn opener(g: &mut Gen, cwd: &str) -> String {
    {
        let t = g_pick(g, OPENERS);
        fill(g, t, cwd)
    }
}

pub(crate) fn closer(g: &mut Gen, cwd: &str) -> String {
    let base = {
        let t = g_pick(g, CLOSERS);
        fill(g, t, cwd)
    };
    if g.chance(0.4) {
        format!("{base}\n\n{}.", sentence(g, 10, 60))
    } else {
        base
    }
}

pub(crate) fn thinking(g: &mut Gen) -> String {
    let n = g.between(1, 4);
    (0..n)
        .map(|_| format!("{}.", sentence(g, 8, 30)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// An opaque base64-looking thinking signature.
pub(crate) fn signature(g: &mut Gen) -> String {
    let n = g.between(180, 420);
    format!("Eu{}", g.base62(n))
}

pub(crate) fn ident(g: &mut Gen) -> &'static str {
    g_pick(g, IDENTS)
}

fn g_pick(g: &mut Gen, items: &[&'static str]) -> &'static str {
    items[g.below(items.len())]
}
