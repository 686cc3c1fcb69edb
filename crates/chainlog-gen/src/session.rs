//! The session state machine: turns, tool rounds, sub-agents, and the expected resume view.
//!
//! Boundary events (compactions, snips, rewinds, metadata, corruption) live in
//! [`super::events`].

use std::io::{self, BufWriter, Write};

use serde_json::Value;

use super::lines::{self, Env, Style};
use super::rng::{Clock, Gen};
use super::text::TextPool;
use super::{Expected, GenOptions, GeneratedAgent, SidechainLayout};

/// The version every main-file line carries.
pub(super) const VERSION: &str = "2.1.88";
/// Stand-in for a lone `\ud83d` escape; replaced in the serialised line (a Rust string cannot
/// hold a lone surrogate).
pub(super) const LONE: &str = "\u{E000}lone-surrogate\u{E000}";

/// One element of the expected resume view.
pub(super) struct Node {
    pub uuid: String,
    /// The `parentUuid` written on disk (may be a progress uuid, or differ from the previous
    /// view element after a splice, a snip or a compaction).
    pub raw_parent: Option<String>,
    /// A user prompt (a turn start).
    pub prompt: bool,
    /// `raw_parent` is a progress line.
    pub via_progress: bool,
}

/// A byte-based schedule for one feature.
pub(super) struct Sched {
    next: u64,
    interval: u64,
    pub fired: usize,
    enabled: bool,
}

impl Sched {
    /// `typical` bytes apart, but at least `per_file` times per target size.
    pub(super) fn new(
        g: &mut Gen,
        enabled: bool,
        target: u64,
        typical: u64,
        per_file: u64,
    ) -> Self {
        let interval = typical.min(target / per_file).max(1);
        #[allow(clippy::cast_precision_loss, clippy::cast_sign_loss)]
        let next = (interval as f64 * g.float(0.3, 0.8)) as u64;
        Self {
            next,
            interval,
            fired: 0,
            enabled,
        }
    }

    /// Due at `bytes` of a file whose target is `target`. Past the target, only features that
    /// have not appeared yet fire (so small files end soon after covering everything).
    pub(super) fn due(&self, bytes: u64, target: u64) -> bool {
        self.enabled && bytes >= self.next && (bytes < target || self.fired == 0)
    }

    pub(super) fn done(&mut self, g: &mut Gen, bytes: u64) {
        self.fired += 1;
        #[allow(clippy::cast_precision_loss, clippy::cast_sign_loss)]
        let step = (self.interval as f64 * g.float(0.6, 1.4)) as u64;
        self.next = bytes + step.max(1);
    }

    pub(super) fn owed(&self) -> bool {
        self.enabled && self.fired == 0
    }
}

/// A pending `progress` line to write right after the line that names it as parent.
pub(super) struct LateProgress {
    pub uuid: String,
    pub parent: String,
    pub tool_use_id: String,
}

/// What [`run`] returns.
pub(super) struct Outcome {
    pub session_id: String,
    pub cwd: String,
    pub expected: Expected,
    pub agents: Vec<GeneratedAgent>,
}

pub(super) struct Session<'o, W: Write> {
    pub o: &'o GenOptions,
    pub g: Gen,
    pub pool: TextPool,
    out: BufWriter<W>,
    pub bytes: u64,
    buf: Vec<u8>,
    pub sid: String,
    pub cwd: String,
    pub branch: String,
    pub slug_name: String,
    pub slug: Option<String>,
    pub model: &'static str,
    pub clock: Clock,
    /// The raw cursor: the uuid the next chain line names as parent.
    pub tip: Option<String>,
    pub tip_is_progress: bool,
    /// The expected resume view, root-first, in spliced order.
    pub view: Vec<Node>,
    /// View index of the first element after the last compaction (and its preserved segment).
    pub floor: usize,
    pub out_lo: u64,
    pub out_hi: u64,
    pub rounds_max: usize,
    pub hard_cap: u64,
    // Expected metadata.
    pub title: Option<String>,
    pub tag: Option<String>,
    pub ai_title: Option<String>,
    pub last_prompt: Option<String>,
    pub bad_lines: usize,
    pub lossy_lines: usize,
    // Schedules and feature state.
    pub s_meta: Sched,
    pub s_rewind: Sched,
    pub s_retry: Sched,
    pub s_snip: Sched,
    pub s_compact: Sched,
    pub s_agent: Sched,
    pub s_progress: Sched,
    pub compactions_done: usize,
    pub last_compact_at: u64,
    pub segments_done: usize,
    /// The anchor (summary) of the last compaction when it carries a preserved segment.
    pub seg_anchor: Option<String>,
    pub progress_done: [bool; 2],
    pub late_progress: Option<LateProgress>,
    pub meta_cycle: usize,
    /// Corruption kinds injected so far: nul, glued, invalid.
    pub corrupt_done: [bool; 3],
    pub lone_armed: bool,
    pub lone_done: bool,
    pub last_tool_id: Option<String>,
    pub agents: Vec<GeneratedAgent>,
    pub agents_spawned: usize,
    pub layouts_done: [bool; 3],
}

/// Generate the session for `opts` into `w`.
pub(super) fn run<W: Write>(opts: &GenOptions, w: W) -> io::Result<Outcome> {
    let mut s = Session::new(opts, w);
    s.queue_operation()?;
    let mut first = true;
    loop {
        if !first {
            s.boundary()?;
        }
        first = false;
        s.turn()?;
        let done = s.bytes >= opts.target_bytes && s.owed().is_empty();
        if done || s.bytes >= s.hard_cap {
            break;
        }
    }
    s.finish()
}

impl<'o, W: Write> Session<'o, W> {
    fn new(o: &'o GenOptions, w: W) -> Self {
        let mut g = Gen::new(o.seed);
        let sid = g.uuid();
        let user = *g.pick(&["dev", "alice", "sam", "ci"]);
        let project = *g.pick(&[
            "chainlog",
            "web-app",
            "my.proj",
            "data_pipeline",
            "api-server",
        ]);
        let cwd = format!("/home/{user}/src/{project}");
        let branch =
            (*g.pick(&["main", "master", "feature/index-sidecar", "fix/torn-tail"])).to_owned();
        let slug_name = format!(
            "{}-{}-{}",
            g.pick(&["delegated", "curious", "gentle", "rapid", "quiet"]),
            g.pick(&["marinating", "wandering", "humming", "folding", "sketching"]),
            g.pick(&["toast", "otter", "lantern", "pebble", "comet"])
        );
        let model = *g.pick(&["claude-opus-4-5-20251101", "claude-sonnet-4-5-20250929"]);
        let clock = Clock::new(&mut g);
        let target = o.target_bytes.max(1);
        let pool_size =
            usize::try_from((target / 2).clamp(8 * 1024, 96 * 1024)).unwrap_or(96 * 1024);
        let pool = TextPool::new(&mut g, pool_size);
        let out_hi = (target / 40).clamp(200, 20_000);
        let out_lo = 200.min(out_hi);
        let rounds_max = match target {
            0..65_536 => 1,
            65_536..1_048_576 => 3,
            _ => 6,
        };
        let compacting = o.compactions && o.compact_every_bytes.is_none();
        let s_meta = Sched::new(&mut g, o.metadata_midfile, target, 24 * 1024, 12);
        let s_rewind = Sched::new(&mut g, o.rewinds, target, 96 * 1024, 3);
        let s_retry = Sched::new(&mut g, o.retries, target, 48 * 1024, 4);
        let s_snip = Sched::new(&mut g, o.snips, target, 160 * 1024, 3);
        let s_compact = Sched::new(&mut g, compacting, target, 4 << 20, 3);
        let s_agent = Sched::new(
            &mut g,
            o.sidechains != SidechainLayout::None,
            target,
            256 * 1024,
            4,
        );
        let s_progress = Sched::new(&mut g, o.legacy_progress, target, 32 * 1024, 4);
        Self {
            o,
            g,
            pool,
            out: BufWriter::with_capacity(1 << 16, w),
            bytes: 0,
            buf: Vec::with_capacity(1 << 16),
            sid,
            cwd,
            branch,
            slug_name,
            slug: None,
            model,
            clock,
            tip: None,
            tip_is_progress: false,
            view: Vec::new(),
            floor: 0,
            out_lo,
            out_hi,
            rounds_max,
            hard_cap: (target * 4).max(target + 128 * 1024),
            title: None,
            tag: None,
            ai_title: None,
            last_prompt: None,
            bad_lines: 0,
            lossy_lines: 0,
            s_meta,
            s_rewind,
            s_retry,
            s_snip,
            s_compact,
            s_agent,
            s_progress,
            compactions_done: 0,
            last_compact_at: 0,
            segments_done: 0,
            seg_anchor: None,
            progress_done: [false; 2],
            late_progress: None,
            meta_cycle: 0,
            corrupt_done: [false; 3],
            lone_armed: false,
            lone_done: false,
            last_tool_id: None,
            agents: Vec::new(),
            agents_spawned: 0,
            layouts_done: [false; 3],
        }
    }

    /// The main file's envelope.
    pub(super) fn env(&self) -> Env<'_> {
        Env {
            session_id: &self.sid,
            cwd: &self.cwd,
            version: VERSION,
            git_branch: &self.branch,
            slug: self.slug.as_deref(),
            style: Style::Modern,
            sidechain: false,
            agent_id: None,
        }
    }

    pub(super) fn tick(&mut self, lo: u64, hi: u64) -> String {
        self.clock.tick(&mut self.g, lo, hi)
    }

    /// Write one JSON line; with `lone`, the [`LONE`] stand-in becomes a lone `\ud83d` escape.
    pub(super) fn emit(&mut self, v: &Value, lone: bool) -> io::Result<()> {
        self.buf.clear();
        lines::push_line(&mut self.buf, v);
        if lone {
            let s = String::from_utf8_lossy(&self.buf).replace(LONE, "\\ud83d");
            self.buf.clear();
            self.buf.extend_from_slice(s.as_bytes());
            self.lossy_lines += 1;
        }
        self.out.write_all(&self.buf)?;
        self.bytes += self.buf.len() as u64;
        Ok(())
    }

    /// Write raw bytes (corrupt lines).
    pub(super) fn emit_bytes(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.bytes += bytes.len() as u64;
        Ok(())
    }

    /// The line just written names the tip as parent: push it on the view.
    pub(super) fn advance(&mut self, uuid: String, prompt: bool) {
        self.view.push(Node {
            uuid: uuid.clone(),
            raw_parent: self.tip.take(),
            prompt,
            via_progress: self.tip_is_progress,
        });
        self.tip = Some(uuid);
        self.tip_is_progress = false;
    }

    /// Features that must appear at least once and have not yet.
    fn owed(&self) -> Vec<&'static str> {
        let o = self.o;
        let c = &o.corruption;
        let compacting = o.compactions || o.compact_every_bytes.is_some();
        let layouts = o.sidechains.enabled();
        let checks = [
            (self.s_rewind.owed(), "rewind"),
            (self.s_retry.owed(), "retry"),
            (self.s_snip.owed(), "snip"),
            (compacting && self.compactions_done == 0, "compaction"),
            (
                compacting && o.preserved_segments && self.segments_done == 0,
                "segment",
            ),
            (
                o.legacy_progress && !(self.progress_done[0] && self.progress_done[1]),
                "progress",
            ),
            (
                layouts.iter().any(|l| !self.layouts_done[l.slot()]),
                "agents",
            ),
            (
                o.metadata_midfile && self.meta_cycle < super::meta::META_ORDER.len(),
                "metadata",
            ),
            (c.nul_run && !self.corrupt_done[0], "nul"),
            (c.glued && !self.corrupt_done[1], "glued"),
            (c.invalid_json && !self.corrupt_done[2], "invalid"),
            (c.lone_surrogate && !self.lone_done, "lone"),
        ];
        checks.iter().filter(|c| c.0).map(|c| c.1).collect()
    }

    fn queue_operation(&mut self) -> io::Result<()> {
        let ts = self.tick(1, 50);
        let v = lines::metadata(
            "queue-operation",
            lines::Obj::new()
                .set("operation", "dequeue")
                .set("timestamp", ts)
                .set("sessionId", self.sid.as_str()),
        );
        self.emit(&v, false)
    }

    /// End of session: metadata re-appended at exit, the torn tail, and the answer.
    fn finish(mut self) -> io::Result<Outcome> {
        if self.o.metadata_midfile {
            self.reappend_metadata()?;
        }
        if self.o.corruption.torn_tail {
            self.torn_tail()?;
        }
        if matches!(
            self.o.sidechains,
            SidechainLayout::Subagents | SidechainLayout::All
        ) {
            self.label_agent();
        }
        self.out.flush()?;
        let leaf = self.tip.clone();
        debug_assert_eq!(leaf.as_deref(), self.view.last().map(|n| n.uuid.as_str()));
        let expected = Expected {
            leaf,
            resume_uuids: self.view.iter().map(|n| n.uuid.clone()).collect(),
            custom_title: self.title.clone(),
            tag: self.tag.clone(),
            ai_title: self.ai_title.clone(),
            bad_lines: self.bad_lines,
            lossy_lines: self.lossy_lines,
        };
        Ok(Outcome {
            session_id: self.sid,
            cwd: self.cwd,
            expected,
            agents: self.agents,
        })
    }
}
