//! `chainlog export`: a session as a document people read — Markdown, self-contained HTML, or
//! the JSONL of its view.
//!
//! # Design
//! [`Store::export_document`](crate::Store::export_document) gathers a [`Document`] once — the chosen chain (or the full conversation), with
//! `--all-branches` every other leaf's branch from the point where it leaves the chain, and
//! the sub-agent transcripts of the session — and the renderers (`markdown`, `html`) only
//! format it. Everything is read through [`Store::resolve`](crate::Store::resolve) (the index when it can answer) and
//! [`read_view`], so the export shows exactly what `resume` resolves.

mod html;
mod markdown;

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use crate::catalog::discover::AgentLayout;
use crate::chain::{ResolveOptions, View};
use crate::error::Result;
use crate::index::Sidecars;
use crate::resume::message::Message;
use crate::resume::read_view;

/// What `export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// Markdown (GitHub flavour: `<details>` for tool calls).
    Markdown,
    /// One self-contained HTML file (no network, no script needed to read it).
    Html,
    /// The view's JSONL lines, as `resume --format jsonl` prints them.
    Jsonl,
}

/// How to export.
#[derive(Debug, Clone, Copy)]
pub struct ExportOptions {
    /// The format.
    pub format: ExportFormat,
    /// The whole conversation across compactions instead of the resume view.
    pub full: bool,
    /// Also every other branch (leaf), from where it leaves the chosen chain.
    pub all_branches: bool,
    /// Start from this message instead of the chosen leaf (an inline agent's newest leaf,
    /// [`Target::leaf`](crate::Target::leaf)).
    pub leaf: Option<crate::Id>,
}

/// A session gathered for rendering.
#[derive(Debug, Clone)]
pub struct Document {
    /// The title shown at the top.
    pub title: String,
    /// The session id (file stem).
    pub session_id: String,
    /// The chosen chain, root first.
    pub messages: Vec<Message>,
    /// Other branches (only with `all_branches`).
    pub branches: Vec<Branch>,
    /// Sub-agents with their transcripts.
    pub agents: Vec<AgentDoc>,
}

/// A branch that leaves the chosen chain.
#[derive(Debug, Clone)]
pub struct Branch {
    /// Its leaf's uuid.
    pub leaf: String,
    /// The last message it shares with the chosen chain (`None`: it shares none).
    pub after: Option<String>,
    /// Its own messages, from the fork on.
    pub messages: Vec<Message>,
}

/// A sub-agent of the session.
#[derive(Debug, Clone)]
pub struct AgentDoc {
    /// The agent id.
    pub id: String,
    /// Its type and description, when known.
    pub label: String,
    /// Its chain (empty when its messages are not in a file of their own).
    pub messages: Vec<Message>,
}

impl Document {
    /// How many branches leave the chain after each message (by uuid).
    pub fn branch_points(&self) -> HashMap<&str, usize> {
        let mut m = HashMap::new();
        for b in &self.branches {
            if let Some(a) = &b.after {
                *m.entry(a.as_str()).or_insert(0) += 1;
            }
        }
        m
    }
}

/// What a tool call acted on, as a person names it: the command a shell ran, the file read
/// or edited, the pattern searched, the address fetched, the task handed to an agent. The
/// first of the input's string fields that say so, on one line, cut after 160 characters;
/// `None` for a call without one (the renderers then show only the tool's name).
pub fn tool_subject(input: &serde_json::Value) -> Option<String> {
    const NAMING: [&str; 11] = [
        "command",
        "file_path",
        "notebook_path",
        "pattern",
        "url",
        "query",
        "description",
        "path",
        "skill",
        "subject",
        "prompt",
    ];
    const MAX: usize = 160;
    let text = NAMING
        .iter()
        .find_map(|k| input.get(k)?.as_str().filter(|s| !s.trim().is_empty()))?;
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(match line.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    })
}

/// What a compaction boundary says in a document. The messages before it are in the
/// document unless it holds only the resume view.
pub(crate) const COMPACTED: &str =
    "Conversation compacted: the messages before this point were summarised for the model.";

/// What each tool call of a document was, by call id: its tool and [`tool_subject`].
pub(crate) type Calls<'a> = HashMap<&'a str, (&'a str, Option<String>)>;

/// The calls of `doc` by id: what a tool result answers, named in its heading.
pub(crate) fn calls_by_id(doc: &Document) -> Calls<'_> {
    let all = doc
        .messages
        .iter()
        .chain(doc.branches.iter().flat_map(|b| &b.messages))
        .chain(doc.agents.iter().flat_map(|a| &a.messages));
    all.flat_map(|m| &m.blocks)
        .filter_map(|b| match b {
            crate::resume::message::Block::ToolUse { id, name, input } => {
                Some((id.as_str(), (name.as_str(), tool_subject(input))))
            }
            _ => None,
        })
        .collect()
}

/// Gathers the document of the transcript at `path`.
pub(crate) fn build(store: &Sidecars, path: &Path, opts: &ExportOptions) -> Result<Document> {
    let view = if opts.full { View::Full } else { View::Resume };
    let ans = store.resolve(
        path,
        ResolveOptions {
            leaf: opts.leaf,
            view,
            list_leaves: opts.all_branches,
        },
    )?;
    let entries = read_view(path, &ans.resolution.chain, &ans.names)?;
    let messages: Vec<Message> = entries
        .iter()
        .map(|e| Message::from_entry(e, &ans.names))
        .collect();
    let mut branches = Vec::new();
    if opts.all_branches {
        let active = ans.resolution.leaf.map(|(id, _)| id);
        let on_chain: HashMap<_, usize> = ans
            .resolution
            .chain
            .iter()
            .enumerate()
            .map(|(i, l)| (l.uuid, i))
            .collect();
        for &leaf in &ans.resolution.leaves {
            if Some(leaf) == active || on_chain.contains_key(&leaf) {
                continue;
            }
            let other = store.resolve(
                path,
                ResolveOptions {
                    leaf: Some(leaf),
                    view,
                    list_leaves: false,
                },
            )?;
            let chain = &other.resolution.chain;
            // The branch starts after the last message it shares with the chosen chain.
            let shared = chain
                .iter()
                .rposition(|l| on_chain.contains_key(&l.uuid))
                .map_or(0, |i| i + 1);
            let own = read_view(path, &chain[shared..], &other.names)?;
            branches.push(Branch {
                leaf: other.names.name(leaf),
                after: shared
                    .checked_sub(1)
                    .map(|i| other.names.name(chain[i].uuid)),
                messages: own
                    .iter()
                    .map(|e| Message::from_entry(e, &other.names))
                    .collect(),
            });
        }
    }
    let mut agents = Vec::new();
    let listed = crate::catalog::indexed::agents(store, path)
        .map(|a| a.agents)
        .unwrap_or_default();
    for a in listed {
        let label = [a.agent_type.as_deref(), a.description.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(": ");
        let own_file = matches!(a.layout, AgentLayout::Subagents | AgentLayout::TopLevel);
        let messages = match (&a.path, own_file) {
            (Some(p), true) => {
                let ans = store.resolve(p, ResolveOptions::default())?;
                read_view(p, &ans.resolution.chain, &ans.names)?
                    .iter()
                    .map(|e| Message::from_entry(e, &ans.names))
                    .collect()
            }
            _ => Vec::new(),
        };
        agents.push(AgentDoc {
            id: a.agent_id,
            label,
            messages,
        });
    }
    let session_id = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let title = crate::catalog::cache::FactsCache::new(store)
        .facts(path)
        .map_or_else(|_| session_id.clone(), |f| f.title);
    Ok(Document {
        title,
        session_id,
        messages,
        branches,
        agents,
    })
}

/// Writes the transcript at `path` as `opts` asks.
pub(crate) fn export(
    store: &Sidecars,
    path: &Path,
    opts: &ExportOptions,
    out: &mut dyn Write,
) -> Result<()> {
    let doc = build(store, path, opts)?;
    let io = |e| crate::error::Error::io("<output>", e);
    match opts.format {
        ExportFormat::Markdown => out.write_all(markdown::render(&doc).as_bytes()),
        ExportFormat::Html => out.write_all(html::render(&doc).as_bytes()),
        ExportFormat::Jsonl => doc.messages.iter().try_for_each(|m| {
            out.write_all(&m.raw)?;
            out.write_all(b"\n")
        }),
    }
    .map_err(io)
}
