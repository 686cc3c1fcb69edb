//! New sessions made from an old one: `fork` (as `claude --resume X --fork-session` writes it,
//! format.md §A8) and `branch` (format.md §A7, chainlog's active-chain variant of `/branch`).
//!
//! Both read the source's resume view through the index (the lines of the view, by offset) and
//! its session metadata (`custom-title`, `content-replacement`) with a byte-prefix filter over
//! the file, then write the new session with a [`SessionWriter`] in the same project folder.
//!
//! | | fork | branch |
//! |---|---|---|
//! | messages | the resume view (cut after `--at`; an `--at` on another branch: that branch's chain), spliced tool results included | the same view |
//! | uuids, timestamps | kept | kept |
//! | `parentUuid` | kept | re-chained: each message's parent is the previous copied one |
//! | `sessionId` | new | new |
//! | `promptId` | re-stamped (one new id per old one) | kept |
//! | extra | `requestSessionId` = source id on assistant lines (last key), `slug` dropped on the others, as the client | `forkedFrom{sessionId, messageUuid}` |
//! | metadata | last `custom-title` and `agent-name`, every `content-replacement` of the session; title and name stated again at the end, as the client does after a turn | one combined `content-replacement`, `custom-title` `<name or first prompt> (Branch)` / `(Branch N)` |

use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

use serde_json::{Value, json};

use super::{SessionWriter, WriterOptions};
use crate::chain::ResolveOptions;
use crate::error::{Error, Result};
use crate::id::Id;
use crate::index::Sidecars;

/// The source's resume view as JSON entries, cut after `at` when given. A message `at` that is
/// not on the chosen chain (another branch's leaf, picked in `chainlog pick`) gives the chain
/// that ends at it instead.
fn view(
    store: &Sidecars,
    source: &Path,
    at: Option<&str>,
) -> Result<Vec<serde_json::Map<String, Value>>> {
    let mut ans = store.resolve(source, ResolveOptions::default())?;
    let mut chain = ans.resolution.chain.clone();
    if let Some(at) = at {
        let id = Id::from_text(at);
        if let Some(cut) = chain.iter().position(|l| l.uuid == id) {
            chain.truncate(cut + 1);
        } else {
            let opts = ResolveOptions {
                leaf: Some(id),
                ..ResolveOptions::default()
            };
            ans = store.resolve(source, opts)?;
            chain.clone_from(&ans.resolution.chain);
        }
    }
    if chain.is_empty() {
        return Err(Error::NoMessage {
            path: source.to_path_buf(),
        });
    }
    let entries = crate::resume::read_view(source, &chain, &ans.names)?;
    Ok(entries
        .iter()
        .filter_map(|e| match e.value() {
            Some(Value::Object(o)) => Some(o),
            _ => None,
        })
        .collect())
}

/// What [`session_metadata`] finds.
#[derive(Default)]
struct Metadata {
    /// The last `customTitle`.
    title: Option<String>,
    /// The last `agentName`.
    agent_name: Option<String>,
    /// Every `content-replacement` entry of the main thread.
    replacements: Vec<Value>,
}

impl Metadata {
    /// The title and agent-name entries, in the client's order (the writer adds `sessionId`).
    fn names(&self) -> Vec<Value> {
        let mut out = Vec::new();
        if let Some(t) = &self.title {
            out.push(json!({"type": "custom-title", "customTitle": t}));
        }
        if let Some(n) = &self.agent_name {
            out.push(json!({"type": "agent-name", "agentName": n}));
        }
        out
    }
}

/// `custom-title`, `agent-name` (last of each) and `content-replacement` entries (main thread)
/// of `session_id`.
fn session_metadata(source: &Path, session_id: &str) -> Result<Metadata> {
    let f = std::fs::File::open(source).map_err(|e| Error::io(source, e))?;
    let mut meta = Metadata::default();
    for line in std::io::BufReader::new(f).split(b'\n') {
        let line = line.map_err(|e| Error::io(source, e))?;
        let wanted = line.starts_with(br#"{"type":"custom-title""#)
            || line.starts_with(br#"{"type":"agent-name""#)
            || line.starts_with(br#"{"type":"content-replacement""#);
        if !wanted {
            continue;
        }
        let Some(v) = crate::resume::body::parse_value(line.trim_ascii_end()) else {
            continue;
        };
        if v.get("sessionId").and_then(Value::as_str) != Some(session_id) {
            continue;
        }
        let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        match v.get("type").and_then(Value::as_str) {
            Some("custom-title") => meta.title = text("customTitle"),
            Some("agent-name") => meta.agent_name = text("agentName"),
            _ if v.get("agentId").is_none() => meta.replacements.push(v),
            _ => {}
        }
    }
    Ok(meta)
}

fn source_session_id(source: &Path) -> Result<String> {
    source
        .file_stem()
        .and_then(|s| s.to_str())
        .map(str::to_owned)
        .ok_or_else(|| Error::NotATranscript {
            path: source.to_path_buf(),
            what: "not a session file",
        })
}

fn new_writer(store: &Sidecars, dir: &Path, cwd: &str, sid: Option<&str>) -> Result<SessionWriter> {
    let sid = sid.map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned);
    SessionWriter::open(store, dir, &sid, WriterOptions::new(cwd))
}

fn cwd_of(entries: &[serde_json::Map<String, Value>]) -> String {
    entries
        .iter()
        .find_map(|e| e.get("cwd").and_then(Value::as_str))
        .unwrap_or_default()
        .to_owned()
}

/// Writes a new session holding `source`'s resume view (cut after `at`) the way
/// `--fork-session` does (format.md §A8). Returns the new session id.
pub(crate) fn fork(store: &Sidecars, source: &Path, at: Option<&str>) -> Result<String> {
    fork_to(
        store,
        source,
        at,
        source.parent().unwrap_or(Path::new(".")),
        None,
    )
}

/// [`fork`] of the whole resume view into session `sid` of the project folder `dest` (sync
/// keeps another machine's continuation this way; `source` is a copy outside the claude dir,
/// indexed in `store`). Run again on the same `sid`, it writes no message twice (the writer
/// skips uuids the session holds).
#[cfg(feature = "sync")]
pub(crate) fn fork_into(store: &Sidecars, source: &Path, dest: &Path, sid: &str) -> Result<String> {
    fork_to(store, source, None, dest, Some(sid))
}

fn fork_to(
    store: &Sidecars,
    source: &Path,
    at: Option<&str>,
    dest: &Path,
    sid: Option<&str>,
) -> Result<String> {
    let src_sid = source_session_id(source)?;
    let entries = view(store, source, at)?;
    let meta = session_metadata(source, &src_sid)?;
    let mut w = new_writer(store, dest, &cwd_of(&entries), sid)?;
    let mut batch: Vec<Value> = meta.names();
    for mut r in meta.replacements.clone() {
        r["sessionId"] = w.session_id().into();
        batch.push(r);
    }
    let mut prompts: HashMap<String, String> = HashMap::new();
    for mut e in entries {
        if let Some(p) = e.get("promptId").and_then(Value::as_str) {
            let new = prompts
                .entry(p.to_owned())
                .or_insert_with(|| uuid::Uuid::new_v4().to_string())
                .clone();
            e.insert("promptId".into(), new.into());
        }
        // As the client's copies: the source's id on assistant lines, no `slug` on the others
        // (the kit's `fork` scenario, after a compaction; issue 31).
        if e.get("type").and_then(Value::as_str) == Some("assistant") {
            e.insert("requestSessionId".into(), src_sid.clone().into());
        } else {
            e.remove("slug");
        }
        batch.push(Value::Object(e));
    }
    // The title and agent name stated again after the messages, as the client does after
    // the turn it appends.
    w.append_all(batch)?;
    w.flush_stating_again()?;
    Ok(w.session_id().to_owned())
}

/// Writes a new session holding `source`'s active chain with `forkedFrom`, one combined
/// `content-replacement` and a `(Branch)` title (format.md §A7). Returns the new session id.
pub(crate) fn branch(store: &Sidecars, source: &Path, name: Option<&str>) -> Result<String> {
    let src_sid = source_session_id(source)?;
    let entries = view(store, source, None)?;
    let replacements = session_metadata(source, &src_sid)?.replacements;
    let mut w = new_writer(
        store,
        source.parent().unwrap_or(Path::new(".")),
        &cwd_of(&entries),
        None,
    )?;
    let mut batch: Vec<Value> = Vec::new();
    let combined: Vec<Value> = replacements
        .iter()
        .filter_map(|r| r.get("replacements").and_then(Value::as_array))
        .flatten()
        .cloned()
        .collect();
    if !combined.is_empty() {
        batch.push(
            json!({"type": "content-replacement", "sessionId": w.session_id(),
            "replacements": combined}),
        );
    }
    let mut parent = Value::Null;
    for mut e in entries {
        let uuid = e.get("uuid").cloned().unwrap_or(Value::Null);
        e.insert("parentUuid".into(), parent);
        e.insert("isSidechain".into(), false.into());
        e.insert(
            "forkedFrom".into(),
            json!({"sessionId": src_sid, "messageUuid": uuid}),
        );
        parent = uuid;
        batch.push(Value::Object(e));
    }
    let title = branch_title(store, source, name)?;
    w.append_all(batch)?;
    w.flush()?;
    // After the messages, as `/branch` writes it (a flush before creates no metadata-first
    // reordering).
    w.set_title(&title);
    w.flush()?;
    Ok(w.session_id().to_owned())
}

/// `<name or first prompt> (Branch)`, or `(Branch N)` (N = 2, 3, …) when a session of the
/// project already has that title.
fn branch_title(store: &Sidecars, source: &Path, name: Option<&str>) -> Result<String> {
    let mut cache = crate::catalog::cache::FactsCache::new(store);
    let base = match name {
        Some(n) => n.to_owned(),
        None => cache
            .facts(source)?
            .first_prompt
            .unwrap_or_else(|| "Branched conversation".into()),
    };
    let dir = source.parent().unwrap_or(Path::new("."));
    // A session that cannot be read cannot hold a title to avoid: skipped.
    let mut unreadable = Vec::new();
    let taken: Vec<String> =
        crate::catalog::list::list_dir(dir, &mut |p| cache.facts(p), &mut unreadable)?
            .into_iter()
            .map(|f| f.title)
            .collect();
    cache.flush()?;
    let mut title = format!("{base} (Branch)");
    let mut n = 2;
    while taken.contains(&title) {
        title = format!("{base} (Branch {n})");
        n += 1;
    }
    Ok(title)
}
