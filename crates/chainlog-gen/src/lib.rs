//! A deterministic generator of Claude Code transcripts, with the answer a correct loader
//! must give.
//!
//! # What is generated
//!
//! [`generate`] writes one session (the main `<sessionId>.jsonl`, 2.1.88 key order per
//! format.md §A2) plus its sub-agent files. A session is a sequence of *turns*: a user prompt
//! (sometimes a `file-history-snapshot` before it and an `attachment` after it), tool rounds (an
//! assistant response of optional thinking/text lines plus one or more `tool_use` lines, all with
//! the same `message.id`, then one `tool_result` user line per tool) and a final text reply.
//! Optional features ([`GenOptions`]) are scheduled by bytes written, so small files get each of
//! them at least once and large files get them regularly:
//!
//! - **parallel tools**: A1←A2←…←An, then R1..Rn with `Ri.parentUuid = Ai` and
//!   `sourceToolAssistantUUID = Ai` (the write order of real 2.1.x files); the next line hangs
//!   off Rn;
//! - **rewinds**: a new prompt whose parent is the tip before an earlier prompt of the current
//!   view (the old continuation becomes a dead branch; rewinding the very first prompt makes a
//!   second root);
//! - **retries**: an abandoned assistant line (own `message.id`) and then the real response with
//!   the same parent;
//! - **compactions**: `system/compact_boundary` (`parentUuid:null`, `logicalParentUuid` = tip,
//!   `compactMetadata{trigger, preTokens}`) then an `isCompactSummary` user line; with
//!   preserved segments, `preservedSegment{headUuid, anchorUuid = summary, tailUuid = last
//!   pre-compact message}` over a suffix of the view; the next message hangs off either the
//!   summary (the loader re-points it to the tail) or the tail;
//! - **snips**: `system/snip_boundary` with `snipMetadata.removedUuids` = whole earlier turns of
//!   the current view;
//! - **legacy progress**: `progress` lines between a tool result and the next request (one or
//!   two in a row), sometimes written after the line that names it as parent (#40319);
//! - **sidechains**: inline `isSidechain:true` runs (1.0.x), `agent-<id>.jsonl` beside the
//!   session (2.0.x), `<sessionId>/subagents/agent-<id>.jsonl` + `.meta.json` (2.1.x, plus one
//!   label-style `aprompt_suggestion-…` agent without meta);
//! - **metadata mid-file**: custom-title, ai-title, tag (including `""`), last-prompt (with
//!   `leafUuid` = the tip at that moment), summary, mode, permission-mode, agent-name, pr-link,
//!   content-replacement, file-history-snapshot, queue-operation and an unknown future type; the
//!   title/tag/last-prompt are re-appended at the end as Claude Code does at exit;
//! - **corruption**: a NUL run line, two records glued on one line, a cut-off line, a lone
//!   `\ud83d` escape inside a message on the active chain, and a torn tail (no `\n`).
//!
//! # How [`Expected`] is modelled
//!
//! The generator keeps the *resume view* as an explicit list (in spliced order,
//! format.md §A5 step 10) and edits it as it writes: a prompt/response/result is pushed; a rewind
//! truncates it to the rewind point; a compaction replaces it with `[boundary, summary]` (plus the
//! preserved segment); a snip removes the snipped turns (the loader re-points the survivor to the
//! nearest surviving ancestor, which is the previous element of the list). Features are restricted
//! so the list is certainly what format.md §A5 yields: rewinds and snips only touch whole turns
//! after the last compaction; a preserved segment is a suffix whose every element (but the head)
//! has the previous element as its raw parent (so no spliced tool results, progress or snipped gaps
//! inside it); snips never cover turns containing progress lines or the message re-pointed from
//! a live anchor to the tail (which would make the answer depend on the order of steps 5 and 6).
//! `system/turn_duration` and snip boundaries are chain participants, written only before a
//! prompt, never after the last reply. Timestamps strictly increase in file order and the file
//! always ends with a text reply on the active chain, so the leaf is the last user/assistant line
//! written (and any `last-prompt.leafUuid` equals the tip at the time; the final one equals the
//! leaf). The tests check `Expected` against a small independent implementation of format.md §A5.
//!
//! Files: `session` (state, the expected view, the main loop), `turn` (prompt, tool rounds,
//! replies), `events` (metadata, corruption, the boundary schedule), `reshape` (snips,
//! compactions, rewinds, progress), `agents` (sidechains), `lines` (key order), `tools`, `text`,
//! `rng`.

mod agents;
mod events;
mod lines;
mod meta;
mod reshape;
mod rng;
mod session;
#[cfg(test)]
mod tests;
mod text;
mod tools;
mod turn;

use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Where sub-agent transcripts go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SidechainLayout {
    /// No sub-agents.
    #[default]
    None,
    /// `isSidechain:true` entries inside the main file (1.0.x).
    Inline,
    /// `agent-<id>.jsonl` beside the session file (2.0.x).
    TopLevel,
    /// `<sessionId>/subagents/agent-<id>.jsonl` + `agent-<id>.meta.json` (2.1.x).
    Subagents,
    /// All three, in turn.
    All,
}

impl SidechainLayout {
    /// The slot of a concrete layout in per-layout tables (inline, top level, `subagents/`).
    pub(crate) fn slot(self) -> usize {
        match self {
            SidechainLayout::Inline => 0,
            SidechainLayout::TopLevel => 1,
            _ => 2,
        }
    }

    /// The concrete layouts this setting enables.
    fn enabled(self) -> &'static [SidechainLayout] {
        match self {
            Self::None => &[],
            Self::Inline => &[Self::Inline],
            Self::TopLevel => &[Self::TopLevel],
            Self::Subagents => &[Self::Subagents],
            Self::All => &[Self::Inline, Self::TopLevel, Self::Subagents],
        }
    }
}

/// Corrupt lines to inject (each at most once per session).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[allow(clippy::struct_excessive_bools)] // independent switches
pub struct Corruption {
    /// The last line is cut mid-JSON and has no `\n` (not counted in `bad_lines`).
    pub torn_tail: bool,
    /// A line made of NUL bytes.
    pub nul_run: bool,
    /// Two metadata records glued on one line (a `custom-title` and a `tag` that must not count).
    pub glued: bool,
    /// A message line on the active chain whose JSON text contains a lone `\ud83d` escape. It
    /// must be recovered lossily (format.md §A1), so it is *not* a bad line: see
    /// [`Expected::lossy_lines`].
    pub lone_surrogate: bool,
    /// A line cut in the middle of a record, followed by more records.
    pub invalid_json: bool,
}

impl Corruption {
    /// Every kind.
    pub fn all() -> Self {
        Self {
            torn_tail: true,
            nul_run: true,
            glued: true,
            lone_surrogate: true,
            invalid_json: true,
        }
    }
}

/// What to generate.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::struct_excessive_bools)] // independent switches
pub struct GenOptions {
    /// Same seed and options, same bytes.
    pub seed: u64,
    /// Approximate size of the main file; generation stops at the first turn boundary past it
    /// once every enabled feature has appeared at least once (at most at 4× the target or the
    /// target + 128 KiB, whichever is larger; past the target only missing features fire).
    pub target_bytes: u64,
    /// N `tool_use` blocks of one response as N chained assistant lines, each result hanging
    /// off its own line.
    pub parallel_tools: bool,
    /// Rewinds: dead branches.
    pub rewinds: bool,
    /// Abandoned assistant attempts followed by a retry with the same parent.
    pub retries: bool,
    /// Compact boundaries followed by compact summaries.
    pub compactions: bool,
    /// Some compactions carry `preservedSegment` (needs compactions).
    pub preserved_segments: bool,
    /// Snip boundaries removing earlier turns.
    pub snips: bool,
    /// Legacy `progress` lines inside the chain.
    pub legacy_progress: bool,
    /// Sub-agent transcripts.
    pub sidechains: SidechainLayout,
    /// Metadata entries of many types mid-file.
    pub metadata_midfile: bool,
    /// Corrupt lines.
    pub corruption: Corruption,
    /// Compact after about this many bytes since the last compaction (implies compactions);
    /// keeps the resume view of huge files bounded. `None`: about three per file, at most
    /// 4 MiB apart, when `compactions` is on.
    pub compact_every_bytes: Option<u64>,
}

impl GenOptions {
    /// Every feature on, a 20 KB target (files end at about 40–70 KB, once each feature has
    /// appeared).
    pub fn small(seed: u64) -> Self {
        Self::everything(seed, 20_000)
    }

    /// A linear conversation with parallel tool calls only.
    pub fn plain(seed: u64, target_bytes: u64) -> Self {
        Self {
            seed,
            target_bytes,
            parallel_tools: true,
            rewinds: false,
            retries: false,
            compactions: false,
            preserved_segments: false,
            snips: false,
            legacy_progress: false,
            sidechains: SidechainLayout::None,
            metadata_midfile: false,
            corruption: Corruption::default(),
            compact_every_bytes: None,
        }
    }

    /// Every feature on.
    pub fn everything(seed: u64, target_bytes: u64) -> Self {
        Self {
            seed,
            target_bytes,
            parallel_tools: true,
            rewinds: true,
            retries: true,
            compactions: true,
            preserved_segments: true,
            snips: true,
            legacy_progress: true,
            sidechains: SidechainLayout::All,
            metadata_midfile: true,
            corruption: Corruption::all(),
            compact_every_bytes: None,
        }
    }
}

/// One generated session.
#[derive(Debug, Clone)]
pub struct GeneratedSession {
    /// The session id (a UUID), also the main file's stem.
    pub session_id: String,
    /// The `cwd` of every entry.
    pub cwd: String,
    /// The main `<sessionId>.jsonl` bytes.
    pub main: Vec<u8>,
    /// Sub-agent files.
    pub agents: Vec<GeneratedAgent>,
    /// What a correct loader answers for the main file.
    pub expected: Expected,
}

/// One sub-agent file.
#[derive(Debug, Clone)]
pub struct GeneratedAgent {
    /// `a<hex>` or `a<label>-<hex>`.
    pub agent_id: String,
    /// [`SidechainLayout::TopLevel`] or [`SidechainLayout::Subagents`].
    pub layout: SidechainLayout,
    /// The `agent-<id>.jsonl` bytes.
    pub jsonl: Vec<u8>,
    /// The `agent-<id>.meta.json` bytes (sub-agents layout; `None` for label-style agents).
    pub meta_json: Option<Vec<u8>>,
    /// The agent's newest message not named as parent by another of its messages.
    pub expected_leaf: String,
}

/// The oracle for the main file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Expected {
    /// The active leaf by format.md §A5 step 8.
    pub leaf: Option<String>,
    /// Root-first uuids of the resume view (after preserved-segment relink, snips and the
    /// parallel tool-result splice of step 10).
    pub resume_uuids: Vec<String>,
    /// Last parsed `custom-title`.
    pub custom_title: Option<String>,
    /// Last parsed `tag` (`""` clears it).
    pub tag: Option<String>,
    /// Last parsed `ai-title`.
    pub ai_title: Option<String>,
    /// Lines that do not parse (NUL run, glued, cut-off), excluding the torn tail.
    pub bad_lines: usize,
    /// Lines that only parse with the lossy lone-surrogate fallback (their message is kept and
    /// may be on the resume view).
    pub lossy_lines: usize,
}

/// Generate a session in memory.
pub fn generate(opts: &GenOptions) -> GeneratedSession {
    let mut main =
        Vec::with_capacity(usize::try_from(opts.target_bytes).unwrap_or(0).min(1 << 30) + 4096);
    let out = session::run(opts, &mut main).expect("writing into a Vec cannot fail");
    GeneratedSession {
        session_id: out.session_id,
        cwd: out.cwd,
        main,
        agents: out.agents,
        expected: out.expected,
    }
}

/// Stream the main file of the session [`generate`] would build (same bytes) into `w`.
/// Sub-agent files are not produced. Memory stays bounded by the resume view (use
/// `compact_every_bytes` for huge files).
pub fn generate_to(opts: &GenOptions, w: &mut impl Write) -> io::Result<Expected> {
    let out = session::run(opts, w)?;
    Ok(out.expected)
}

/// Above this size [`write_file`] compacts the session every [`COMPACT_EVERY`] bytes, so
/// the resume view the generator tracks (its memory) stays bounded however large the file.
pub const STREAM_ABOVE: u64 = 64 << 20;
/// See [`STREAM_ABOVE`].
pub const COMPACT_EVERY: u64 = 32 << 20;

/// Writes the main file of one session to `path`, streamed (memory does not follow the
/// size; above [`STREAM_ABOVE`] bytes the session compacts regularly unless `opts` says
/// otherwise). Returns the file's length and the expected answer. Sub-agent files are not
/// written (use [`generate`] and [`write_session`] for a whole claude dir).
pub fn write_file(opts: &GenOptions, path: &Path) -> io::Result<(u64, Expected)> {
    let mut opts = opts.clone();
    if opts.target_bytes > STREAM_ABOVE && opts.compact_every_bytes.is_none() {
        opts.compact_every_bytes = Some(COMPACT_EVERY);
    }
    let mut w = io::BufWriter::new(create_private(path)?);
    let expected = generate_to(&opts, &mut w)?;
    let file = w.into_inner().map_err(io::IntoInnerError::into_error)?;
    Ok((file.metadata()?.len(), expected))
}

/// Claude Code's project directory name for a cwd (format.md §A3): every UTF-16 code unit that is
/// not ASCII alphanumeric becomes `-` (the generator's cwds are short, so no hashing).
pub fn project_key(cwd: &str) -> String {
    cwd.encode_utf16()
        .map(|u| match u8::try_from(u) {
            Ok(b) if b.is_ascii_alphanumeric() => char::from(b),
            _ => '-',
        })
        .collect()
}

/// Writes the session into a Claude-style tree: `<projects_dir>/<project-key>/<sessionId>.jsonl`
/// plus agent files per layout (`agent-<id>.jsonl` beside it, or
/// `<sessionId>/subagents/agent-<id>.jsonl` + `.meta.json`). Files are 0600, directories 0700
/// (on Unix). Returns the main file path.
pub fn write_session(projects_dir: &Path, s: &GeneratedSession) -> io::Result<PathBuf> {
    let project = projects_dir.join(project_key(&s.cwd));
    make_dir(&project)?;
    let main = project.join(format!("{}.jsonl", s.session_id));
    write_bytes(&main, &s.main)?;
    for agent in &s.agents {
        let dir = match agent.layout {
            SidechainLayout::Subagents => {
                let dir = project.join(&s.session_id).join("subagents");
                make_dir(&dir)?;
                dir
            }
            _ => project.clone(),
        };
        write_bytes(
            &dir.join(format!("agent-{}.jsonl", agent.agent_id)),
            &agent.jsonl,
        )?;
        if let Some(meta) = &agent.meta_json {
            write_bytes(
                &dir.join(format!("agent-{}.meta.json", agent.agent_id)),
                meta,
            )?;
        }
    }
    Ok(main)
}

fn make_dir(dir: &Path) -> io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)
}

/// Creates (or truncates) `path`, readable by its owner only (transcripts are private).
fn create_private(path: &Path) -> io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    o.open(path)
}

fn write_bytes(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = create_private(path)?;
    f.write_all(bytes)?;
    f.flush()
}
