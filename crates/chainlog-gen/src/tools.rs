//! Tool calls with realistic inputs and outputs (Read, Bash, Grep, Glob, Edit, Write,
//! `TodoWrite`).

use serde_json::{Value, json};

use super::rng::Gen;
use super::text::{self, TextPool};

/// One tool call: the `tool_use` input and the result the user line will carry.
pub(crate) struct ToolCall {
    pub id: String,
    pub name: &'static str,
    pub input: Value,
    /// `tool_result` content (a string).
    pub result: String,
    /// The `toolUseResult` field of the result line.
    pub result_meta: Value,
    pub is_error: bool,
}

impl ToolCall {
    /// The `tool_use` content block.
    pub(crate) fn block(&self) -> Value {
        json!({"type": "tool_use", "id": self.id, "name": self.name, "input": self.input})
    }

    /// The `tool_result` content of the user line.
    pub(crate) fn result_content(&self) -> Value {
        let mut block = json!({
            "tool_use_id": self.id,
            "type": "tool_result",
            "content": self.result,
        });
        if self.is_error {
            block["is_error"] = Value::Bool(true);
        }
        json!([block])
    }
}

/// A random tool call whose output is about `out_lo..=out_hi` bytes (log-uniform).
pub(crate) fn random_call(
    g: &mut Gen,
    pool: &TextPool,
    cwd: &str,
    out_lo: u64,
    out_hi: u64,
) -> ToolCall {
    let id = g.tool_use_id();
    let size = usize::try_from(g.log_uniform(out_lo, out_hi)).unwrap_or(1024);
    match g.below(10) {
        0..=2 => read(g, pool, cwd, id, size),
        3..=4 => bash(g, pool, cwd, id, size),
        5 => grep(g, pool, cwd, id, size),
        6 => glob(g, cwd, id, size),
        7 => edit(g, pool, cwd, id),
        8 => write(g, pool, cwd, id, size),
        _ => todo_write(g, id),
    }
}

fn read(g: &mut Gen, pool: &TextPool, cwd: &str, id: String, size: usize) -> ToolCall {
    let path = text::file_path(g, cwd);
    let (numbered, raw, first, n) = pool.numbered(g, size);
    let total = first + n + g.between(0, 400);
    ToolCall {
        id,
        name: "Read",
        input: json!({"file_path": path}),
        result: numbered,
        result_meta: json!({
            "type": "text",
            "file": {"filePath": path, "content": raw, "numLines": n, "startLine": first, "totalLines": total},
        }),
        is_error: false,
    }
}

fn bash(g: &mut Gen, pool: &TextPool, cwd: &str, id: String, size: usize) -> ToolCall {
    let (command, description) = match g.below(4) {
        0 => (
            "cargo test 2>&1 | tail -80".to_owned(),
            "Run the test suite",
        ),
        1 => (
            format!("git -C {cwd} diff --stat && git -C {cwd} log --oneline -20"),
            "Show recent changes",
        ),
        2 => (
            format!("rg -n '{}' {cwd}/src", text::ident(g)),
            "Search for usages",
        ),
        _ => (
            "cargo clippy --all-targets -- -D warnings 2>&1".to_owned(),
            "Run clippy",
        ),
    };
    let (out, _) = pool.window(g, size);
    let is_error = g.chance(0.08);
    let result = if is_error {
        format!("Exit code 101\n{out}")
    } else {
        out.clone()
    };
    ToolCall {
        id,
        name: "Bash",
        input: json!({"command": command, "description": description}),
        result,
        result_meta: json!({"stdout": out, "stderr": "", "interrupted": false, "isImage": false}),
        is_error,
    }
}

fn grep(g: &mut Gen, pool: &TextPool, cwd: &str, id: String, size: usize) -> ToolCall {
    let pattern = format!("fn {}_", text::ident(g));
    let (raw, first) = pool.window(g, size);
    let path = text::file_path(g, cwd);
    let mut out = String::with_capacity(raw.len() + raw.len() / 2);
    for (i, line) in raw.lines().enumerate() {
        out.push_str(&path);
        out.push(':');
        out.push_str(&(first + i).to_string());
        out.push(':');
        out.push_str(line);
        out.push('\n');
    }
    let n = raw.lines().count();
    ToolCall {
        id,
        name: "Grep",
        input: json!({"pattern": pattern, "path": cwd, "output_mode": "content", "-n": true}),
        result: out.clone(),
        result_meta: json!({"mode": "content", "numFiles": 0, "filenames": [], "content": out, "numLines": n}),
        is_error: false,
    }
}

fn glob(g: &mut Gen, cwd: &str, id: String, size: usize) -> ToolCall {
    let mut files = Vec::new();
    let mut len = 0;
    while len < size.min(6000) {
        let f = text::file_path(g, cwd);
        len += f.len() + 1;
        files.push(f);
    }
    ToolCall {
        id,
        name: "Glob",
        input: json!({"pattern": "**/*.rs"}),
        result: files.join("\n"),
        result_meta: json!({
            "filenames": files,
            "durationMs": g.range(2, 400),
            "numFiles": files.len(),
            "truncated": false,
        }),
        is_error: false,
    }
}

fn edit(g: &mut Gen, pool: &TextPool, cwd: &str, id: String) -> ToolCall {
    let path = text::file_path(g, cwd);
    let sizes = (g.between(40, 600), g.between(40, 900), g.between(200, 1200));
    let (old, _) = pool.window(g, sizes.0);
    let (new, _) = pool.window(g, sizes.1);
    let (snippet, ..) = pool.numbered(g, sizes.2);
    ToolCall {
        id,
        name: "Edit",
        input: json!({"file_path": path, "old_string": old, "new_string": new, "replace_all": false}),
        result: format!(
            "The file {path} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n{snippet}"
        ),
        result_meta: json!({
            "filePath": path,
            "oldString": old,
            "newString": new,
            "userModified": false,
            "replaceAll": false,
        }),
        is_error: false,
    }
}

fn write(g: &mut Gen, pool: &TextPool, cwd: &str, id: String, size: usize) -> ToolCall {
    let path = text::file_path(g, cwd);
    let (content, _) = pool.window(g, size);
    ToolCall {
        id,
        name: "Write",
        input: json!({"file_path": path, "content": content}),
        result: format!("File created successfully at: {path}"),
        result_meta: json!({"type": "create", "filePath": path, "content": content, "structuredPatch": []}),
        is_error: false,
    }
}

fn todo_write(g: &mut Gen, id: String) -> ToolCall {
    let n = g.between(1, 5);
    let todos: Vec<Value> = (0..n)
        .map(|i| {
            let what = text::sentence(g, 3, 8);
            let status = match i.cmp(&1) {
                std::cmp::Ordering::Less => "completed",
                std::cmp::Ordering::Equal => "in_progress",
                std::cmp::Ordering::Greater => "pending",
            };
            json!({"content": what, "status": status, "activeForm": format!("Working on: {what}")})
        })
        .collect();
    ToolCall {
        id,
        name: "TodoWrite",
        input: json!({"todos": todos}),
        result: "Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress. Please proceed with the current tasks if applicable".to_owned(),
        result_meta: json!({"oldTodos": [], "newTodos": todos}),
        is_error: false,
    }
}
