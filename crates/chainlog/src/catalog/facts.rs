//! What a picker shows for one session file (format.md §A6).
//!
//! # Context
//! Claude Code's picker reads only the first and last 64 KiB of each file, so titles written
//! mid-file vanish (anthropics/claude-code#77982). chainlog computes the facts from every entry
//! (the merged metadata of a full scan, or the index) and from the lines of the chosen chain,
//! read by offset; nothing is rescanned.
//!
//! # Design
//! [`session_facts`] is a pure function of one file's scan and its resolution, so the index
//! can store its answer per file and tests can compare the index's facts with the reference
//! loader's. Facts that depend on *other* files (a summary written into a later session's
//! file, sub-agent files beside the session) are joined by [`super::list::list_sessions`].
//!
//! Title precedence: last `custom-title` > last `ai-title` > `summary` of the leaf > last
//! `last-prompt` > first meaningful prompt > `(session)`.
//!
//! The *leaf* a summary names is the chosen leaf or a system/attachment entry hanging after
//! it (1.0.x–2.0.x wrote the summary's `leafUuid` as the last entry of the file, often a
//! `stop_hook_summary`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::prompt;
use super::shorten;
use crate::chain::{Link, Resolution, ResolveOptions, Transcript, View, resolve};
use crate::error::{Error, Result};
use crate::id::Id;
use crate::resume::body::entry;
use crate::transcript::envelope::{Flags, Kind, hash64};
use crate::transcript::time::format_millis;
use crate::transcript::usage::UsageRow;

/// The title of a session with nothing better to show.
pub const UNTITLED: &str = "(session)";

/// The session a `/branch` copy was made from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkedFrom {
    /// The original session.
    pub session_id: String,
    /// The message the copy was made at.
    pub message_uuid: Option<String>,
}

/// The last `pr-link` entry of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrLink {
    /// `prNumber`.
    pub number: Option<u64>,
    /// `prUrl`.
    pub url: Option<String>,
    /// `prRepository`.
    pub repository: Option<String>,
}

/// A `summary` entry naming a message that is not in its own file (1.0.x–2.0.x wrote
/// summaries of earlier sessions into the current one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForeignSummary {
    /// The `leafUuid` it names.
    pub leaf_uuid: String,
    /// The summary text.
    pub summary: String,
}

/// Everything `chainlog ls` shows about one session file, plus what the listing needs to
/// join files. Serialised with camelCase names; `--json` prints it without the join fields
/// (`tips`, `foreignSummaries`). Absent values are `null`, never omitted, so the struct
/// round-trips through self-describing and positional formats alike.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionFacts {
    /// The session id: the file stem.
    pub session_id: String,
    /// The session file.
    pub path: PathBuf,
    /// The project directory name.
    pub project_key: String,
    /// `cwd` of the first message of the chain.
    pub cwd: Option<String>,
    /// The title by the precedence of format.md §A6.
    pub title: String,
    /// The last `custom-title` of the leaf's session.
    pub custom_title: Option<String>,
    /// The last `ai-title` of the leaf's session.
    pub ai_title: Option<String>,
    /// The `summary` of the leaf (from this file, or joined from another file by the listing).
    pub summary: Option<String>,
    /// The first meaningful prompt of the chain.
    pub first_prompt: Option<String>,
    /// The last `last-prompt` of the leaf's session, flattened.
    pub last_prompt: Option<String>,
    /// `gitBranch` of the last message of the chain (`""` is none).
    pub git_branch: Option<String>,
    /// The last `tag` (`""` clears it).
    pub tag: Option<String>,
    /// Visible messages on the chain (format.md §A6).
    pub message_count: u64,
    /// Time of the first message of the chain (RFC 3339, UTC, milliseconds).
    pub created: Option<String>,
    /// Time of the last message of the chain.
    pub modified: Option<String>,
    /// The file's modification time, used to order sessions without messages.
    pub file_modified: Option<String>,
    /// Bytes scanned.
    pub bytes: u64,
    /// Set on `/branch` copies.
    pub forked_from: Option<ForkedFrom>,
    /// Sub-agents: inline ones counted here; the listing adds agent files and remote agents.
    pub agents: u64,
    /// Sub-agents whose entries are inline in this file (1.0.x).
    pub inline_agents: u64,
    /// Lines that could not be used.
    pub bad_lines: u64,
    /// The last `pr-link` of the leaf's session.
    pub pr_link: Option<PrLink>,
    /// The chosen leaf.
    pub leaf_uuid: Option<String>,
    /// Every message is a sidechain: an agent transcript, not a session.
    pub sidechain: bool,
    /// `teamName` of the first message: a team (teammate) transcript, not listed.
    pub team_name: Option<String>,
    /// Token usage of the file's API responses by UTC day and model, sorted: every response
    /// in the file once (all branches), lines copied from another session left out (see
    /// [`crate::format::UsageTally`]). A session's sub-agent files have facts of their own.
    pub usage: Vec<UsageRow>,
    /// The uuids a summary of this session may name: the leaf and the system/attachment
    /// entries hanging after it.
    pub tips: Vec<String>,
    /// Summaries in this file naming messages of other files.
    pub foreign_summaries: Vec<ForeignSummary>,
}

impl SessionFacts {
    /// The title by precedence, from the fields. The last prompt counts only when it is a
    /// prompt a person wrote (`prompt::meaningful`: Claude Code records system texts there
    /// too, such as `<task-notification>`), shown as the first prompt is.
    pub fn pick_title(&self) -> String {
        let last_prompt = self.last_prompt.as_deref().and_then(prompt::meaningful);
        [
            self.custom_title.as_deref(),
            self.ai_title.as_deref(),
            self.summary.as_deref(),
            last_prompt.as_deref(),
            self.first_prompt.as_deref(),
        ]
        .into_iter()
        .flatten()
        .find(|t| !t.trim().is_empty())
        .map_or_else(|| UNTITLED.to_owned(), str::to_owned)
    }

    /// Whether `chainlog ls` lists it (not an agent or team transcript).
    pub fn is_listed(&self) -> bool {
        !self.sidechain && self.team_name.is_none()
    }

    /// The facts as `chainlog ls --json` prints them (without the join fields).
    pub fn to_listing_json(&self) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Some(o) = v.as_object_mut() {
            o.shift_remove("tips");
            o.shift_remove("foreignSummaries");
        }
        v
    }

    /// The object `chainlog ls --json` prints, with `schema` last, written straight to `out`
    /// (one line): the bytes of [`SessionFacts::to_listing_json`] with `schema` appended,
    /// without building a `Value`. Facts that do not serialise (a path that is not UTF-8)
    /// are `null`, as `to_listing_json` makes them.
    pub fn write_listing_json(
        &self,
        out: &mut impl std::io::Write,
        schema: u32,
    ) -> std::io::Result<()> {
        let mut line = Vec::with_capacity(1024);
        self.render_listing_json(&mut line, schema);
        out.write_all(&line)
    }

    /// [`SessionFacts::write_listing_json`] appended to `line` (no copy through a buffer of
    /// its own).
    fn render_listing_json(&self, line: &mut Vec<u8>, schema: u32) {
        let row = ListingJson {
            session_id: &self.session_id,
            path: &self.path,
            project_key: &self.project_key,
            cwd: &self.cwd,
            title: &self.title,
            custom_title: &self.custom_title,
            ai_title: &self.ai_title,
            summary: &self.summary,
            first_prompt: &self.first_prompt,
            last_prompt: &self.last_prompt,
            git_branch: &self.git_branch,
            tag: &self.tag,
            message_count: self.message_count,
            created: &self.created,
            modified: &self.modified,
            file_modified: &self.file_modified,
            bytes: self.bytes,
            forked_from: &self.forked_from,
            agents: self.agents,
            inline_agents: self.inline_agents,
            bad_lines: self.bad_lines,
            pr_link: &self.pr_link,
            leaf_uuid: &self.leaf_uuid,
            sidechain: self.sidechain,
            team_name: &self.team_name,
            usage: &self.usage,
            schema,
        };
        let start = line.len();
        if serde_json::to_writer(&mut *line, &row).is_err() {
            line.truncate(start);
            line.extend_from_slice(b"null");
        }
        line.push(b'\n');
    }

    /// [`SessionFacts::write_listing_json`] of each of `sessions`, in order: the lines are
    /// rendered on rayon's threads (in runs of 256 sessions) and written in order.
    pub fn write_listing_json_all(
        sessions: &[SessionFacts],
        out: &mut impl std::io::Write,
        schema: u32,
    ) -> std::io::Result<()> {
        use rayon::prelude::*;
        let runs: Vec<Vec<u8>> = sessions
            .par_chunks(256)
            .map(|run| {
                let mut bytes = Vec::new();
                for (i, f) in run.iter().enumerate() {
                    f.render_listing_json(&mut bytes, schema);
                    if i == 0 {
                        // Lines are of similar lengths: room for the run at once (a buffer
                        // that grows is copied, and its new pages touched, at each doubling).
                        bytes.reserve((bytes.len() + bytes.len() / 4) * run.len());
                    }
                }
                bytes
            })
            .collect();
        for run in runs {
            out.write_all(&run)?;
        }
        Ok(())
    }
}

/// [`SessionFacts`] as `ls --json` prints it: the fields in declaration order without the
/// join fields, then `schema`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ListingJson<'a> {
    session_id: &'a str,
    path: &'a Path,
    project_key: &'a str,
    cwd: &'a Option<String>,
    title: &'a str,
    custom_title: &'a Option<String>,
    ai_title: &'a Option<String>,
    summary: &'a Option<String>,
    first_prompt: &'a Option<String>,
    last_prompt: &'a Option<String>,
    git_branch: &'a Option<String>,
    tag: &'a Option<String>,
    message_count: u64,
    created: &'a Option<String>,
    modified: &'a Option<String>,
    file_modified: &'a Option<String>,
    bytes: u64,
    forked_from: &'a Option<ForkedFrom>,
    agents: u64,
    inline_agents: u64,
    bad_lines: u64,
    pr_link: &'a Option<PrLink>,
    leaf_uuid: &'a Option<String>,
    sidechain: bool,
    team_name: &'a Option<String>,
    usage: &'a [UsageRow],
    schema: u32,
}

/// Files up to this size are read with one `read` and framed in memory (the chunked reader
/// starts with a 4 MiB buffer); their chain lines are then cut from the same bytes.
const READ_WHOLE: u64 = 1 << 20;

/// Scans a session file with the reference loader and computes its facts: the callback
/// `chainlog` passes to [`super::list::list_sessions`] when no index answers.
pub fn scan_session_facts(path: &Path) -> Result<SessionFacts> {
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if meta.len() <= READ_WHOLE {
        let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0) + 1);
        std::io::Read::read_to_end(&mut file, &mut bytes).map_err(|e| Error::io(path, e))?;
        let mut t = Transcript::scan_bytes(&bytes);
        t.path = Some(path.to_path_buf());
        return facts_of_bytes(path, &t, &bytes, &meta);
    }
    let t = Transcript::open(path).map_err(|e| Error::io(path, e))?;
    facts_from(
        path,
        &t,
        &full_resolution(path, &t)?,
        &Lines::File(&file),
        &meta,
    )
}

/// The facts of the session at `path` read whole: its `bytes`, their scan `t` and the file's
/// metadata `meta` (as [`scan_session_facts`] computes them for a file of up to 1 MiB; a
/// catch-up of many that read a new session whole computes its listing row with it).
pub(crate) fn facts_of_bytes(
    path: &Path,
    t: &Transcript,
    bytes: &[u8],
    meta: &std::fs::Metadata,
) -> Result<SessionFacts> {
    facts_from(
        path,
        t,
        &full_resolution(path, t)?,
        &Lines::Bytes(bytes),
        meta,
    )
}

/// The [`View::Full`] resolution facts describe.
fn full_resolution(path: &Path, t: &Transcript) -> Result<Resolution> {
    resolve(
        t,
        ResolveOptions {
            leaf: None,
            view: View::Full,
            list_leaves: false,
        },
    )
    .map_err(|leaf| Error::UnknownLeaf {
        path: path.to_path_buf(),
        leaf,
    })
}

/// The facts of one session file (format.md §A6) from its scan and resolution.
///
/// Pass a [`View::Full`] resolution (as [`scan_session_facts`] does) so `created`, the first
/// prompt and the count describe the whole conversation rather than the part after the last
/// compaction. Only lines of the chain (and the `pr-link` entry) are read, by offset.
pub fn session_facts(path: &Path, t: &Transcript, res: &Resolution) -> Result<SessionFacts> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    facts_from(path, t, res, &Lines::File(&file), &meta)
}

/// Where chain lines are read from: the open file (by offset), or its bytes read whole.
enum Lines<'a> {
    File(&'a std::fs::File),
    Bytes(&'a [u8]),
}

impl Lines<'_> {
    fn line(&self, path: &Path, pos: crate::transcript::frame::LinePos) -> Result<Vec<u8>> {
        match self {
            Lines::File(f) => crate::transcript::frame::read_line(f, path, pos),
            Lines::Bytes(b) => crate::transcript::frame::line_in(b, path, pos),
        }
    }
}

/// [`session_facts`] with the chain lines from `lines` and the file's metadata `meta`.
fn facts_from(
    path: &Path,
    t: &Transcript,
    res: &Resolution,
    lines: &Lines<'_>,
    meta: &std::fs::Metadata,
) -> Result<SessionFacts> {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default()
        .to_owned();
    let project_key = path
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_owned();
    let session = res.session.unwrap_or_else(|| hash64(&stem));
    let text = |ty: &str| t.metadata.session_text(ty, session).map(str::to_owned);
    let chain = &res.chain;
    let flags = |l: &Link| t.row(l.uuid).map_or(Flags::default(), |r| r.head.flags);
    let times: Vec<i64> = chain
        .iter()
        .filter_map(|l| t.row(l.uuid).map(|r| r.head.timestamp))
        .filter(|&ts| ts != i64::MIN)
        .collect();
    let reader = ChainReader {
        path,
        lines,
        t,
        chain,
        last: std::cell::RefCell::default(),
    };
    let first = reader.first_with(|v| v.get("cwd").is_some())?;
    let field = |v: &Option<Rc<Value>>, k: &str| {
        v.as_ref()
            .and_then(|v| v.get(k))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let leaf = res.leaf.map(|(id, _)| id);
    let tips = tips(t, leaf);
    let summary = tips
        .iter()
        .find_map(|id| t.metadata.summaries.get(id))
        .and_then(|r| r.text.clone());
    let foreign_summaries = foreign_summaries(t);
    let inline = super::inline::inline_agents(path, t)?.len() as u64;
    let all_sidechain =
        !t.rows.is_empty() && t.rows.iter().all(|r| r.head.flags.has(Flags::SIDECHAIN));
    let mut facts = SessionFacts {
        session_id: stem,
        path: path.to_path_buf(),
        project_key,
        cwd: field(&first, "cwd"),
        title: String::new(),
        custom_title: text("custom-title"),
        ai_title: text("ai-title"),
        summary,
        first_prompt: reader.first_prompt()?,
        last_prompt: text("last-prompt")
            .map(|p| prompt::flatten(&p))
            .filter(|p| !p.is_empty()),
        git_branch: reader.last_branch()?,
        tag: text("tag"),
        message_count: chain
            .iter()
            .filter(|l| flags(l).has(Flags::VISIBLE))
            .count() as u64,
        created: times.iter().min().and_then(|&ms| format_millis(ms)),
        modified: times.iter().max().and_then(|&ms| format_millis(ms)),
        file_modified: file_mtime(meta),
        bytes: t.frame.complete_len + t.frame.torn_tail.map_or(0, |(_, len)| len),
        forked_from: first
            .as_ref()
            .and_then(|v| v.get("forkedFrom"))
            .and_then(|f| {
                Some(ForkedFrom {
                    session_id: f.get("sessionId")?.as_str()?.to_owned(),
                    message_uuid: f
                        .get("messageUuid")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                })
            }),
        agents: inline,
        inline_agents: inline,
        bad_lines: t.bad_lines.iter().filter(|b| b.problem.skipped()).count() as u64,
        pr_link: pr_link(path, lines, t, session)?,
        leaf_uuid: leaf.map(|id| t.names.name(id)),
        sidechain: all_sidechain,
        team_name: field(&first, "teamName"),
        usage: t.usage.rows(),
        tips: tips.iter().map(|&id| t.names.name(id)).collect(),
        foreign_summaries,
    };
    facts.title = facts.pick_title();
    Ok(facts)
}

/// Reads chain lines by offset, one at a time.
struct ChainReader<'a> {
    path: &'a Path,
    lines: &'a Lines<'a>,
    t: &'a Transcript,
    chain: &'a [Link],
    /// The last line read (its offset and value): the first prompt is usually the line the
    /// `cwd` came from. Shared, not cloned: a line may be 100 MB.
    last: std::cell::RefCell<Option<(u64, Option<Rc<Value>>)>>,
}

impl ChainReader<'_> {
    fn read(&self, link: &Link) -> Result<Option<Rc<Value>>> {
        if let Some((offset, v)) = &*self.last.borrow()
            && *offset == link.pos.offset
        {
            return Ok(v.clone());
        }
        // The value replaces the previous one before this line is read.
        *self.last.borrow_mut() = None;
        let raw = self.lines.line(self.path, link.pos)?;
        let e = entry(raw.into(), link, &self.t.names, self.path)?;
        // A long line (a 100 MB prompt) is parsed from a copy with its strings cut: the
        // listing reads a few short fields and a prompt cut at 200 chars.
        let v = if e.json.len() > shorten::LONG_LINE {
            let short = shorten::shorten_strings(&e.json, shorten::KEEP);
            drop(e);
            crate::resume::body::parse_value(&short)
        } else {
            e.value()
        }
        .map(Rc::new);
        *self.last.borrow_mut() = Some((link.pos.offset, v.clone()));
        Ok(v)
    }

    /// The first chain entry satisfying `want` (or the first entry when none does, within a
    /// few lines).
    fn first_with(&self, want: impl Fn(&Value) -> bool) -> Result<Option<Rc<Value>>> {
        let mut first = None;
        for link in self.chain.iter().take(8) {
            let v = self.read(link)?;
            if v.as_deref().is_some_and(&want) {
                return Ok(v);
            }
            if first.is_none() {
                first = v;
            }
        }
        Ok(first)
    }

    /// `gitBranch` of the last chain entry that has the field (`""` → none).
    fn last_branch(&self) -> Result<Option<String>> {
        for link in self.chain.iter().rev().take(16) {
            if let Some(v) = self.read(link)?
                && let Some(b) = v.get("gitBranch")
            {
                return Ok(b.as_str().filter(|s| !s.is_empty()).map(str::to_owned));
            }
        }
        Ok(None)
    }

    /// The first meaningful prompt (format.md §A6) among the chain's user messages.
    fn first_prompt(&self) -> Result<Option<String>> {
        for link in self.chain {
            if link.kind != Kind::User {
                continue;
            }
            let f = self
                .t
                .row(link.uuid)
                .map_or(Flags::default(), |r| r.head.flags);
            if f.has(Flags::META)
                || f.has(Flags::COMPACT_SUMMARY)
                || f.has(Flags::SIDECHAIN)
                || !f.has(Flags::VISIBLE)
            {
                continue;
            }
            let Some(v) = self.read(link)? else { continue };
            if let Some(p) = prompt::user_text(&v).and_then(prompt::meaningful) {
                return Ok(Some(p));
            }
        }
        Ok(None)
    }
}

/// The leaf and the non-turn entries hanging after it (in file order).
fn tips(t: &Transcript, leaf: Option<Id>) -> Vec<Id> {
    let Some(leaf) = leaf else { return Vec::new() };
    let mut set: HashSet<Id> = HashSet::from([leaf]);
    let mut out = vec![leaf];
    for row in &t.rows {
        let h = &row.head;
        if !h.kind.is_turn() && h.parent.is_some_and(|p| set.contains(&p)) && set.insert(h.uuid) {
            out.push(h.uuid);
        }
    }
    out
}

/// Summaries whose `leafUuid` is not a message of this file, by position.
fn foreign_summaries(t: &Transcript) -> Vec<ForeignSummary> {
    let mut out: Vec<(u64, ForeignSummary)> = t
        .metadata
        .summaries
        .iter()
        .filter(|(id, _)| t.row(**id).is_none() && !t.progress.contains_key(*id))
        .filter_map(|(id, r)| {
            Some((
                r.pos.offset,
                ForeignSummary {
                    leaf_uuid: t.names.name(*id),
                    summary: r.text.clone()?,
                },
            ))
        })
        .collect();
    out.sort_by_key(|(off, _)| *off);
    out.into_iter().map(|(_, s)| s).collect()
}

/// The last `pr-link` of a session, read by offset.
fn pr_link(path: &Path, lines: &Lines<'_>, t: &Transcript, session: u64) -> Result<Option<PrLink>> {
    let Some(r) = t.metadata.session_value("pr-link", session) else {
        return Ok(None);
    };
    let line = lines.line(path, r.pos)?;
    let Some(v) = crate::resume::body::parse_value(&line) else {
        return Ok(None);
    };
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    Ok(Some(PrLink {
        number: v.get("prNumber").and_then(Value::as_u64),
        url: s("prUrl"),
        repository: s("prRepository"),
    }))
}

fn file_mtime(meta: &std::fs::Metadata) -> Option<String> {
    let m = meta.modified().ok()?;
    format_millis(chrono::DateTime::<chrono::Utc>::from(m).timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Write as _;

    fn facts_of(jsonl: &str) -> SessionFacts {
        let dir = tempfile::tempdir().unwrap();
        let proj = dir.path().join("-p");
        std::fs::create_dir_all(&proj).unwrap();
        let path = proj.join("11111111-1111-4111-8111-111111111111.jsonl");
        std::fs::write(&path, jsonl).unwrap();
        scan_session_facts(&path).unwrap()
    }

    const S: &str = "11111111-1111-4111-8111-111111111111";

    fn user(uuid: u8, parent: Option<u8>, ts: u8, content: &str, extra: &str) -> String {
        let parent = parent.map_or("null".to_owned(), |p| {
            format!("\"00000000-0000-4000-8000-0000000000{p:02x}\"")
        });
        format!(
            r#"{{"parentUuid":{parent},"isSidechain":false,"cwd":"/w","sessionId":"{S}","gitBranch":"main","type":"user","message":{{"role":"user","content":{content}}},"uuid":"00000000-0000-4000-8000-0000000000{uuid:02x}","timestamp":"2025-01-01T00:00:{ts:02}.000Z"{extra}}}"#
        ) + "\n"
    }

    fn assistant(uuid: u8, parent: u8, ts: u8, text: &str, branch: &str) -> String {
        format!(
            r#"{{"parentUuid":"00000000-0000-4000-8000-0000000000{parent:02x}","isSidechain":false,"cwd":"/w","sessionId":"{S}","gitBranch":"{branch}","message":{{"id":"m{uuid}","role":"assistant","content":[{{"type":"text","text":"{text}"}}]}},"type":"assistant","uuid":"00000000-0000-4000-8000-0000000000{uuid:02x}","timestamp":"2025-01-01T00:00:{ts:02}.000Z"}}"#
        ) + "\n"
    }

    #[test]
    fn title_precedence_and_chain_facts() {
        let mut f = String::new();
        f += &user(
            1,
            None,
            1,
            r#""<local-command-stdout>x</local-command-stdout>""#,
            "",
        );
        f += &user(2, Some(1), 2, r#""ctx""#, r#","isMeta":true"#);
        f += &user(3, Some(2), 3, r#""<bash-input>make</bash-input>""#, "");
        f += &assistant(4, 3, 4, "ok", "feat");
        f += &assistant(5, 4, 5, " ", "feat");
        let base = facts_of(&f);
        assert_eq!(base.first_prompt.as_deref(), Some("! make"));
        assert_eq!(base.title, "! make");
        assert_eq!(base.cwd.as_deref(), Some("/w"));
        assert_eq!(base.git_branch.as_deref(), Some("feat"));
        // 1 (visible text), 3, 4 are visible; 2 is meta, 5 blank.
        assert_eq!(base.message_count, 3);
        assert_eq!(base.created.as_deref(), Some("2025-01-01T00:00:01.000Z"));
        assert_eq!(base.modified.as_deref(), Some("2025-01-01T00:00:05.000Z"));
        assert_eq!(base.bytes, f.len() as u64);
        assert_eq!(
            base.leaf_uuid.as_deref(),
            Some("00000000-0000-4000-8000-000000000005")
        );

        let mut g = f.clone();
        writeln!(
            g,
            r#"{{"type":"last-prompt","lastPrompt":"again\nplease","sessionId":"{S}"}}"#
        )
        .unwrap();
        assert_eq!(facts_of(&g).title, "again please");
        g.push_str(r#"{"type":"summary","summary":"Sum","leafUuid":"00000000-0000-4000-8000-000000000005"}"#);
        g.push('\n');
        assert_eq!(facts_of(&g).title, "Sum");
        writeln!(
            g,
            r#"{{"type":"ai-title","aiTitle":"AI","sessionId":"{S}"}}"#
        )
        .unwrap();
        assert_eq!(facts_of(&g).title, "AI");
        writeln!(
            g,
            r#"{{"type":"custom-title","customTitle":"Mine","sessionId":"{S}"}}"#
        )
        .unwrap();
        writeln!(g, r#"{{"type":"tag","tag":"t1","sessionId":"{S}"}}"#).unwrap();
        let h = facts_of(&g);
        assert_eq!((h.title.as_str(), h.tag.as_deref()), ("Mine", Some("t1")));
        writeln!(g, r#"{{"type":"tag","tag":"","sessionId":"{S}"}}"#).unwrap();
        assert_eq!(facts_of(&g).tag, None);
    }

    #[test]
    fn empty_and_metadata_only_files_are_sessions_titled_session() {
        let e = facts_of("");
        assert_eq!(e.title, UNTITLED);
        assert_eq!(
            (e.message_count, e.bytes, e.created.is_none()),
            (0, 0, true)
        );
        assert!(e.is_listed());
        let m = facts_of(&format!(
            "{{\"type\":\"custom-title\",\"customTitle\":\"Named\",\"sessionId\":\"{S}\"}}\n"
        ));
        assert_eq!(m.title, "Named");
        let s = facts_of(
            "{\"type\":\"summary\",\"summary\":\"Elsewhere\",\"leafUuid\":\"00000000-0000-4000-8000-0000000000ff\"}\n",
        );
        assert_eq!(s.title, UNTITLED);
        assert_eq!(s.foreign_summaries.len(), 1);
    }

    #[test]
    fn forks_pr_links_and_sidechain_only_files() {
        let fork = r#","forkedFrom":{"sessionId":"22222222-2222-4222-8222-222222222222","messageUuid":"00000000-0000-4000-8000-000000000009"}"#;
        let mut f = user(1, None, 1, r#""hello""#, fork);
        writeln!(f, r#"{{"type":"pr-link","sessionId":"{S}","prNumber":7,"prUrl":"https://x/pull/7","prRepository":"o/r","timestamp":"2025-01-01T00:00:09.000Z"}}"#).unwrap();
        let facts = facts_of(&f);
        let ff = facts.forked_from.unwrap();
        assert_eq!(ff.session_id, "22222222-2222-4222-8222-222222222222");
        assert_eq!(
            ff.message_uuid.as_deref(),
            Some("00000000-0000-4000-8000-000000000009")
        );
        let pr = facts.pr_link.unwrap();
        assert_eq!(
            (pr.number, pr.url.as_deref()),
            (Some(7), Some("https://x/pull/7"))
        );
        let side = user(1, None, 1, r#""hi""#, "")
            .replace("\"isSidechain\":false", "\"isSidechain\":true");
        let s = facts_of(&side);
        assert!(s.sidechain);
        assert!(!s.is_listed());
    }

    #[test]
    fn facts_round_trip_through_json_and_msgpack() {
        let f = facts_of(&user(1, None, 1, r#""hello""#, ""));
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(serde_json::from_str::<SessionFacts>(&json).unwrap(), f);
        let packed = rmp_serde::to_vec(&f).unwrap();
        assert_eq!(rmp_serde::from_slice::<SessionFacts>(&packed).unwrap(), f);
        let listing = f.to_listing_json();
        for key in [
            "sessionId",
            "path",
            "projectKey",
            "cwd",
            "title",
            "firstPrompt",
            "lastPrompt",
            "gitBranch",
            "tag",
            "messageCount",
            "created",
            "modified",
            "bytes",
            "forkedFrom",
            "agents",
            "badLines",
        ] {
            assert!(listing.get(key).is_some(), "{key} missing");
        }
        assert!(listing.get("tips").is_none());
    }

    #[test]
    fn listing_json_is_the_value_with_schema_byte_for_byte() {
        let fork = r#","forkedFrom":{"sessionId":"22222222-2222-4222-8222-222222222222","messageUuid":null}"#;
        let mut f = user(1, None, 1, r#""hello \"quoted\" ünï""#, fork);
        writeln!(f, r#"{{"type":"pr-link","sessionId":"{S}","prNumber":7,"prUrl":"https://x/pull/7","prRepository":"o/r"}}"#).unwrap();
        writeln!(f, r#"{{"type":"tag","tag":"t1","sessionId":"{S}"}}"#).unwrap();
        for facts in [
            facts_of(&f),
            facts_of(""),
            facts_of(&user(1, None, 1, r#""x""#, "")),
        ] {
            let mut v = facts.to_listing_json();
            v.as_object_mut().unwrap().insert("schema".into(), 3.into());
            let mut want = serde_json::to_vec(&v).unwrap();
            want.push(b'\n');
            let mut got = Vec::new();
            facts.write_listing_json(&mut got, 3).unwrap();
            // Rendered on threads in runs: the same lines in the same order.
            let many: Vec<SessionFacts> = (0..600)
                .map(|i| SessionFacts {
                    session_id: format!("s{i}"),
                    ..facts.clone()
                })
                .collect();
            let (mut all, mut one_by_one) = (Vec::new(), Vec::new());
            SessionFacts::write_listing_json_all(&many, &mut all, 3).unwrap();
            for f in &many {
                f.write_listing_json(&mut one_by_one, 3).unwrap();
            }
            assert_eq!(all, one_by_one);
            assert_eq!(
                String::from_utf8(got).unwrap(),
                String::from_utf8(want).unwrap()
            );
        }
    }
}
