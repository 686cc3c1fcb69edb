//! [`Conversation`]: what a resume hands over, read and typed — the answer of
//! [`Store::resume`](crate::Store::resume) and [`Store::conversation`](crate::Store::conversation).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::Store;
use crate::catalog::Target;
use crate::chain::{BadLine, ChainBreak, LeafRule, Link, Resolution, ResolveOptions, View};
use crate::error::{Error, Result, check_id};
use crate::id::{Id, IdNames};
use crate::index::write::ingest::Stat;
use crate::index::{Answer, Source};
use crate::resume::body::{Lines, ViewEntry, read_view};
use crate::resume::fork::ForkContext;
use crate::resume::interrupt::{Ending, Interrupt, detect};
use crate::resume::message::Message;

/// How to resume a session. The default is what Claude Code does: the chosen leaf, the resume
/// view, missing parents bridged, answered from the index.
#[derive(Debug, Clone, Default)]
pub struct ResumeOptions {
    /// Start from this message (its uuid as written) instead of the chosen leaf.
    pub leaf: Option<String>,
    /// The whole conversation across compact boundaries instead of the resume view.
    pub full: bool,
    /// Cut the chain after this message (its uuid as written).
    pub at: Option<String>,
    /// The strict walk: stop at a missing parent instead of bridging it to the nearest
    /// earlier message at most 5 s older (Claude Code bridges).
    pub strict: bool,
    /// Answer from a full scan of the transcript instead of the index.
    pub no_index: bool,
    /// Where to look ids and titles up ([`Store::resume`]): a working directory, a project
    /// directory or a project key; `None`: the current directory's project, then every one.
    pub project: Option<PathBuf>,
}

impl ResumeOptions {
    /// Refuses path-like message ids before any file is read.
    pub fn check(&self) -> Result<()> {
        for id in [&self.leaf, &self.at].into_iter().flatten() {
            check_id(id)?;
        }
        Ok(())
    }

    fn resolve_options(&self) -> ResolveOptions {
        ResolveOptions {
            leaf: self.leaf.as_deref().map(Id::from_text),
            view: if self.full { View::Full } else { View::Resume },
            list_leaves: false,
        }
    }
}

/// A resumed conversation: the messages the model gets, root first, and how they were found.
#[derive(Debug, Clone)]
pub struct Conversation {
    path: PathBuf,
    answer: Answer,
    entries: Vec<ViewEntry>,
    inherited: usize,
    fork: Option<ForkContext>,
    retried: Option<String>,
    /// Where the chain was cut (`--at`): the length of the cut chain.
    cut_at: Option<usize>,
    /// The leaf was chosen (no `--leaf`, no `--at`, the resume view).
    chosen_leaf: bool,
}

impl Conversation {
    /// Whether the chain was cut (`--at`) inside a response: the line after the cut is
    /// another line of the same assistant response, holding more than thinking. The client
    /// then keeps the cut reply as it stands ([`ApiOptions::cut_inside_response`](crate::view::ApiOptions)).
    /// Reads that one line, when asked (only the request needs it).
    pub fn cut_inside_response(&self) -> Result<bool> {
        let chain = &self.answer.resolution.chain;
        let Some(next) = self.cut_at.and_then(|n| chain.get(n)) else {
            return Ok(false);
        };
        let after = read_view(&self.path, std::slice::from_ref(next), &self.answer.names)?;
        Ok(continues_response(self.entries.last(), after.first()))
    }

    /// The system and attachment entries the client's chain holds below the chosen leaf
    /// (local commands such as `/exit` written after the last message), read from the lines
    /// after the leaf's; the client sends a local command as user text with the next turn.
    /// Empty when the leaf was asked for (`--leaf`, `--at`) or for the full view.
    pub fn below_leaf(&self) -> Result<Vec<serde_json::Value>> {
        let res = &self.answer.resolution;
        let leaf = res.leaf.map(|(id, _)| id);
        let Some(link) = res.chain.iter().rev().find(|l| Some(l.uuid) == leaf) else {
            return Ok(Vec::new());
        };
        if !self.chosen_leaf {
            return Ok(Vec::new());
        }
        crate::resume::trailing::below_leaf(
            &self.path,
            link.pos,
            &self.answer.names.name(link.uuid),
        )
    }

    /// The transcript the conversation was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The messages, typed (role, text, content blocks; the raw JSON line is kept).
    pub fn messages(&self) -> impl ExactSizeIterator<Item = Message> + '_ {
        self.entries
            .iter()
            .map(|e| Message::from_entry(e, &self.answer.names))
    }

    /// The projected JSON lines (byte-identical to the transcript where no projection applied).
    pub fn entries(&self) -> &[ViewEntry] {
        &self.entries
    }

    /// How many leading entries a fork agent inherited from its parent session.
    pub fn inherited(&self) -> usize {
        self.inherited
    }

    /// The parent session a fork agent inherited its context from.
    pub fn fork(&self) -> Option<&ForkContext> {
        self.fork.as_ref()
    }

    /// The uuid of the leaf the chain starts from, as written, and the rule that chose it.
    pub fn leaf(&self) -> Option<(String, LeafRule)> {
        self.answer
            .resolution
            .leaf
            .map(|(id, rule)| (self.answer.names.name(id), rule))
    }

    /// The chain, its leaves and breaks.
    pub fn resolution(&self) -> &Resolution {
        &self.answer.resolution
    }

    /// The missing parent the walk stopped at, if any.
    pub fn chain_break(&self) -> Option<&ChainBreak> {
        self.answer.resolution.chain_break.as_ref()
    }

    /// Whether the conversation ends interrupted (format.md §A7), and how (read from the
    /// materialised view when it answered, else detected on the entries).
    pub fn interrupt(&self) -> Interrupt {
        self.answer
            .interrupt
            .unwrap_or_else(|| detect(&self.entries))
    }

    /// Where the answer came from: the index, or a full scan and why.
    pub fn source(&self) -> &Source {
        &self.answer.source
    }

    /// The first [`BAD_LINES_KEPT`](crate::BAD_LINES_KEPT) lines of the transcript that were
    /// skipped or kept with unreadable fields ([`Conversation::bad_line_count`] counts them all).
    pub fn bad_lines(&self) -> &[BadLine] {
        &self.answer.bad_lines
    }

    /// How many lines of the transcript were skipped or kept with unreadable fields.
    pub fn bad_line_count(&self) -> u64 {
        self.answer.bad_line_count
    }

    /// The whole answer (ids are [`Id`]s: print them through [`Answer::names`]).
    pub fn answer(&self) -> &Answer {
        &self.answer
    }

    /// The change of the file that made the read start again, if one did (a tail rewritten
    /// while it was read).
    pub fn retried(&self) -> Option<&str> {
        self.retried.as_deref()
    }

    /// Consumes the conversation into its entries.
    pub fn into_entries(self) -> Vec<ViewEntry> {
        self.entries
    }
}

/// A resume answered whose lines are not read yet ([`Store::pending`]): they are read in order,
/// a batch of adjacent lines at a time ([`Pending::lines`]), so printing a view of any length
/// holds one batch, and a view's uuids need no transcript byte at all.
#[derive(Debug, Clone)]
pub struct Pending {
    path: PathBuf,
    answer: Answer,
    chain: Vec<Link>,
    /// What was asked (to resolve again when the file changes under the read).
    opts: ResumeOptions,
}

impl Pending {
    /// The transcript.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The whole answer (its chain before a cut; [`Pending::chain`] is what is handed over).
    pub fn answer(&self) -> &Answer {
        &self.answer
    }

    /// The messages handed over, root first (cut after `--at`, strict when asked).
    pub fn chain(&self) -> &[Link] {
        &self.chain
    }

    /// How the conversation ends when known without reading its lines (the materialised
    /// view's; `None`: read the lines, [`Conversation::interrupt`]).
    pub fn interrupt(&self) -> Option<Interrupt> {
        self.answer.interrupt
    }

    /// The uuid of the leaf the chain starts from, as written, and the rule that chose it.
    pub fn leaf(&self) -> Option<(String, LeafRule)> {
        self.answer
            .resolution
            .leaf
            .map(|(id, rule)| (self.answer.names.name(id), rule))
    }

    /// The entries, read and projected in order.
    pub fn lines(&self) -> Result<Lines<'_>> {
        Lines::open(&self.path, &self.chain, &self.answer.names)
    }
}

/// How often a read starts again when the file changed under it. Each try waits a little
/// longer (up to [`RACE_BACKOFF_MAX`]), so a writer that keeps rewriting the tail is out of
/// phase with some try; the whole wait stays under about half a second.
const RACE_RETRIES: u32 = 30;

/// The longest wait between two tries.
const RACE_BACKOFF_MAX: Duration = Duration::from_millis(20);

/// An error that means the transcript changed under the read (worth resolving again).
fn changed_under_us(e: &Error) -> bool {
    match e {
        Error::Changed { .. } | Error::BadEntry { .. } => true,
        Error::Io { source, .. } => source.kind() == std::io::ErrorKind::UnexpectedEof,
        _ => false,
    }
}

impl Store {
    /// Resumes the session, agent or transcript `target` names (see [`Store::target`]): the
    /// conversation the model gets, answered from the index. A fork agent's conversation
    /// starts with the context it inherited from its parent session.
    pub fn resume(&self, target: &str, opts: &ResumeOptions) -> Result<Conversation> {
        opts.check()?;
        let target = self.target(opts.project.as_deref(), target)?;
        self.resume_target(&target, opts)
    }

    /// [`Store::resume`] of a target already looked up.
    pub fn resume_target(&self, target: &Target, opts: &ResumeOptions) -> Result<Conversation> {
        match target {
            // An inline agent lives in its session file: resume from its newest leaf, in the
            // full view (a compaction after it drops it from the resume view).
            Target::Agent { path, .. } if target.leaf().is_some() => {
                let opts = ResumeOptions {
                    leaf: opts
                        .leaf
                        .clone()
                        .or_else(|| target.leaf().map(str::to_owned)),
                    full: true,
                    ..opts.clone()
                };
                self.conversation(path, &opts)
            }
            Target::Agent { path, .. } => self.agent_conversation(path, opts),
            t => self.conversation(t.path(), opts),
        }
    }

    /// The conversation of the transcript at `path` as `opts` asks, answered from the index
    /// (caught up first) unless `opts.no_index`. A file changed while it is read (a tail
    /// truncated by a tombstone) is resolved again, a few times.
    pub fn conversation(&self, path: &Path, opts: &ResumeOptions) -> Result<Conversation> {
        opts.check()?;
        let mut tries = 0;
        let mut retried = None;
        loop {
            match self.read_conversation(path, opts) {
                Err(e) if tries < RACE_RETRIES && changed_under_us(&e) => {
                    retried.get_or_insert_with(|| e.to_string());
                    tries += 1;
                    std::thread::sleep(RACE_BACKOFF_MAX.min(Duration::from_micros(
                        u64::from(tries) * u64::from(tries) * 100,
                    )));
                }
                r => {
                    let mut c = r?;
                    c.retried = retried;
                    return Ok(c);
                }
            }
        }
    }

    /// The answer for `path`: the index, or the full scan with `no_index`.
    pub(crate) fn answer(
        &self,
        path: &Path,
        opts: ResolveOptions,
        no_index: bool,
    ) -> Result<Answer> {
        if !path.is_file() {
            return Err(Error::NoTranscript { path: path.into() });
        }
        // A batch a killed writer left is completed before the chain is read (one `stat` when
        // there is none); a reader that cannot write leaves it to the next writer.
        let _ = crate::transcript::batch::settle_path(path);
        if no_index {
            return Store::reference(path, opts, "--no-index".into());
        }
        self.resolve(path, opts)
    }

    /// One resolve-and-read of [`Store::conversation`]. A line that is not what the index
    /// answer says (another uuid or `parentUuid` at the recorded offset) while the transcript's
    /// stat did not change is index damage no checksum caught, not a change of the file: the
    /// file's index state is rebuilt and the answer read again; a second mismatch answers from
    /// the transcript.
    fn read_conversation(&self, path: &Path, opts: &ResumeOptions) -> Result<Conversation> {
        let before = Stat::of(path).ok();
        let unchanged = || before.is_some() && Stat::of(path).ok() == before;
        match self.read_conversation_from(path, opts, opts.no_index) {
            Err(Error::BadEntry { .. }) if !opts.no_index && unchanged() => {
                if self.rebuild(path).is_err() {
                    return self.read_conversation_from(path, opts, true);
                }
                match self.read_conversation_from(path, opts, false) {
                    Err(Error::BadEntry { .. }) if unchanged() => {
                        self.read_conversation_from(path, opts, true)
                    }
                    r => r,
                }
            }
            r => r,
        }
    }

    /// A resolve (from the index unless `no_index`) and the read of its lines.
    fn read_conversation_from(
        &self,
        path: &Path,
        opts: &ResumeOptions,
        no_index: bool,
    ) -> Result<Conversation> {
        let p = self.pending_from(path, opts, no_index)?;
        self.read_pending_once(p)
    }

    /// Reads the lines of a [`Pending`] resume into its [`Conversation`]; when the file
    /// changed under the read, it is resolved again as [`Store::conversation`] does. A default
    /// resume that walked stores its answer and how it ends as the materialised view, so the
    /// next resume reads it (best effort).
    pub fn read_pending(&self, p: Pending) -> Result<Conversation> {
        let (path, opts) = (p.path.clone(), p.opts.clone());
        match self.read_pending_once(p) {
            Err(e) if changed_under_us(&e) => self.conversation(&path, &opts),
            r => r,
        }
    }

    /// Decides how the conversation of a walked [`Pending`] resume ends, reading its lines a
    /// batch at a time (only the last lines are held parsed), and stores its answer as the
    /// materialised view (best effort), so its lines can then be streamed
    /// ([`Pending::interrupt`] is known) and the next resume reads the view. Nothing is done for a resume that already knows how it
    /// ends, or that is cut (`--at`) or strict (not the whole view). An error reading the lines
    /// (the file changed) is returned: [`Store::read_pending`] then resolves again.
    pub fn materialise(&self, p: &mut Pending) -> Result<()> {
        if p.answer.interrupt.is_some() || p.opts.strict || p.opts.at.is_some() {
            return Ok(());
        }
        p.answer.interrupt = Some(self.materialise_answer(&p.path, &p.answer)?.interrupt);
        Ok(())
    }

    /// How the whole view of `ans` (a walked answer of the default view) ends, read from the
    /// transcript a batch at a time; stored with `ans` as the materialised view (best effort).
    pub(crate) fn materialise_answer(&self, path: &Path, ans: &Answer) -> Result<Ending> {
        let ending = Ending::of_lines(path, &ans.resolution.chain, &ans.names)?;
        let _ = self.sidecars.store_view(path, ans, &ending);
        Ok(ending)
    }

    fn read_pending_once(&self, p: Pending) -> Result<Conversation> {
        let entries = read_view(&p.path, &p.chain, &p.answer.names)?;
        // The answer's whole chain (neither cut nor made strict) is the view.
        if !p.opts.strict && p.opts.at.is_none() {
            let _ = self
                .sidecars
                .store_view(&p.path, &p.answer, &Ending::of(&entries));
        }
        Ok(Conversation {
            path: p.path,
            answer: p.answer,
            entries,
            inherited: 0,
            fork: None,
            retried: None,
            cut_at: p.opts.at.is_some().then_some(p.chain.len()),
            chosen_leaf: p.opts.at.is_none() && p.opts.leaf.is_none() && !p.opts.full,
        })
    }

    /// The resume of the transcript at `path` as `opts` asks, its lines not read yet: the
    /// answer of [`Store::conversation`] (without its retries when the file changes while
    /// it is read), to be read or printed a batch at a time.
    pub fn pending(&self, path: &Path, opts: &ResumeOptions) -> Result<Pending> {
        opts.check()?;
        self.pending_from(path, opts, opts.no_index)
    }

    fn pending_from(&self, path: &Path, opts: &ResumeOptions, no_index: bool) -> Result<Pending> {
        let mut answer = self
            .answer(path, opts.resolve_options(), no_index)
            .map_err(|e| match &opts.leaf {
                Some(text) => e.name_requested(text),
                None => e,
            })?;
        if opts.strict {
            answer.resolution = answer.resolution.strict();
        }
        if opts.strict || opts.at.is_some() {
            // The materialised interrupt is the whole view's.
            answer.interrupt = None;
        }
        let mut chain = answer.resolution.chain.clone();
        if let Some(at) = &opts.at {
            let id = Id::from_text(at);
            let Some(cut) = chain.iter().position(|l| l.uuid == id) else {
                return Err(Error::NotOnChain {
                    path: path.into(),
                    id: at.clone(),
                });
            };
            chain.truncate(cut + 1);
        }
        Ok(Pending {
            path: path.to_path_buf(),
            answer,
            chain,
            opts: ResumeOptions {
                no_index,
                ..opts.clone()
            },
        })
    }

    /// A fork agent's inherited context: the parent's chain up to the spawning `tool_use`
    /// line (format.md §A8), or nothing for any other transcript.
    fn fork_prefix(&self, fork: &ForkContext, no_index: bool) -> Result<(Vec<ViewEntry>, IdNames)> {
        let last = Id::from_text(&fork.parent_last);
        let opts = ResolveOptions {
            leaf: Some(last),
            view: View::Resume,
            list_leaves: false,
        };
        let ans = self
            .answer(&fork.parent_path, opts, no_index)
            .map_err(|e| e.name_requested(&fork.parent_last))?;
        // Up to the spawning line: its own results (spliced) came after the fork started.
        let mut chain = ans.resolution.chain.clone();
        if let Some(cut) = chain.iter().position(|l| l.uuid == last) {
            chain.truncate(cut + 1);
        }
        Ok((read_view(&fork.parent_path, &chain, &ans.names)?, ans.names))
    }

    /// [`Store::conversation`] of an agent transcript with a fork agent's inherited context
    /// put first.
    pub(crate) fn agent_conversation(
        &self,
        agent: &Path,
        opts: &ResumeOptions,
    ) -> Result<Conversation> {
        let Some(fork) = crate::resume::fork::fork_context(agent)? else {
            return self.conversation(agent, opts);
        };
        let (mut prefix, names) = self.fork_prefix(&fork, opts.no_index)?;
        let mut c = self.conversation(agent, opts)?;
        c.fork = Some(fork);
        c.inherited = prefix.len();
        // The inherited context comes first: how the whole ends is detected on it all.
        c.answer.interrupt = None;
        if !prefix.is_empty() {
            for (_, name) in names.iter() {
                c.answer.names.intern(name);
            }
            prefix.append(&mut c.entries);
            c.entries = prefix;
        }
        Ok(c)
    }
}

/// Whether `next` is a line of the same assistant response as `last` holding more than
/// thinking (the client keeps a reply cut there, see [`Conversation::cut_inside_response`]).
fn continues_response(last: Option<&ViewEntry>, next: Option<&ViewEntry>) -> bool {
    let (Some(last), Some(next)) = (
        last.and_then(ViewEntry::value),
        next.and_then(ViewEntry::value),
    ) else {
        return false;
    };
    let id = |v: &serde_json::Value| {
        (v.get("type").and_then(serde_json::Value::as_str) == Some("assistant"))
            .then(|| v.pointer("/message/id").cloned())
            .flatten()
    };
    id(&last).is_some()
        && id(&last) == id(&next)
        && next
            .pointer("/message/content")
            .and_then(serde_json::Value::as_array)
            .is_some_and(|c| {
                c.iter().any(|b| {
                    !matches!(
                        b.get("type").and_then(serde_json::Value::as_str),
                        Some("thinking" | "redacted_thinking")
                    )
                })
            })
}
