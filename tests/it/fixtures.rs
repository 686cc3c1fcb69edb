//! The reference loader against the hand-made fixtures and their worked-out answers.
//!
//! Every `fixtures/{a5,bad}/<name>.jsonl` has a `<name>.expect.json` (schema in
//! `fixtures/README.md`) derived by hand from SPEC A5. Each fixture is one `#[test]` (listed in
//! the [`fixtures!`] invocation below); `listed_fixtures_match_the_folders` fails when a fixture
//! on disk is missing from the list (or the reverse), and `unlisted_fixtures_are_checked`
//! checks any such new fixture anyway, so nothing on disk goes untested.
//!
//! Each check covers the library (`resolve` in both views, `leaf_report`, `read_view`, the
//! scan's bad/repaired lines, metadata) and the real binary (`resume --format uuids`,
//! `resume --full`, `leaves --json`). A failure names the fixture and lists every mismatch
//! with expected and got values (fixture uuids `…0000000000NN` are shown as `NN`).

use crate::util;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::path::{Path, PathBuf};

use chainlog::LeafRule;
use chainlog::Resolution;
use chainlog::format::hash64;
use chainlog::reference::Link;
use chainlog::reference::ResolveOptions;
use chainlog::reference::Stop;
use chainlog::reference::Transcript;
use chainlog::reference::View;
use chainlog::reference::leaf_report;
use chainlog::reference::resolve;
use chainlog::view::ViewEntry;
use chainlog::view::read_view;
use serde::Deserialize;
use serde_json::Value;
use util::{manifest_dir, short, shorts};

/// One `*.expect.json` (see `fixtures/README.md`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    #[expect(dead_code, reason = "documentation for people; read by serde only")]
    about: String,
    leaf: Option<String>,
    leaf_rule: Option<String>,
    resume: Vec<String>,
    full: Vec<String>,
    leaves: Vec<String>,
    bad_lines: Vec<ExpectBadLine>,
    #[serde(default)]
    repaired: Vec<ExpectPos>,
    torn_tail: bool,
    cycle: bool,
    /// The full-view walk met a cycle (defaults to `cycle`).
    #[serde(default)]
    full_cycle: Option<bool>,
    breaks: Vec<String>,
    full_breaks: Vec<String>,
    title: Option<String>,
    tag: Option<String>,
    usage_zeroed: Vec<String>,
    effective_parents: BTreeMap<String, Option<String>>,
    #[serde(default)]
    duplicate_uuids: Option<Vec<String>>,
    #[serde(default)]
    metadata: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    load_as: Option<String>,
    /// Messages whose missing parent the walk bridged (resume view; SPEC A8).
    #[serde(default)]
    bridges: Vec<String>,
    /// The resume view of the strict walk (`--no-bridge`), when it differs.
    #[serde(default)]
    strict_resume: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectBadLine {
    line: u64,
    byte_offset: u64,
    reason: String,
}

#[derive(Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
struct ExpectPos {
    line: u64,
    byte_offset: u64,
}

/// Collects every mismatch of one fixture, then fails once with all of them.
struct Report {
    fixture: String,
    failures: Vec<String>,
}

impl Report {
    fn eq<T: PartialEq + Debug + ?Sized>(&mut self, what: &str, expected: &T, got: &T) {
        if expected != got {
            self.failures.push(format!(
                "{what}:\n      expected: {expected:?}\n      got:      {got:?}"
            ));
        }
    }

    fn fail(&mut self, what: &str, detail: &str) {
        self.failures.push(format!("{what}: {detail}"));
    }

    fn finish(self) {
        assert!(
            self.failures.is_empty(),
            "fixture {}: {} mismatch(es)\n  - {}",
            self.fixture,
            self.failures.len(),
            self.failures.join("\n  - ")
        );
    }
}

fn fixtures_dir() -> PathBuf {
    manifest_dir().join("fixtures")
}

/// Checks `fixtures/<dir>/<name>.jsonl` against its `.expect.json`.
fn check(dir: &str, name: &str) {
    let base = fixtures_dir().join(dir);
    let jsonl = base.join(format!("{name}.jsonl"));
    let expect_path = base.join(format!("{name}.expect.json"));
    let fixture = jsonl
        .strip_prefix(manifest_dir())
        .unwrap_or(&jsonl)
        .display()
        .to_string();
    let text = std::fs::read_to_string(&expect_path).unwrap_or_else(|e| {
        panic!(
            "fixture {fixture}: cannot read {}: {e}",
            expect_path.display()
        )
    });
    let exp: Expect = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("fixture {fixture}: bad {}: {e}", expect_path.display()));
    let mut r = Report {
        fixture,
        failures: Vec::new(),
    };
    check_library(&mut r, &jsonl, &exp);
    check_cli(&mut r, &jsonl, &exp);
    r.finish();
}

fn leaf_rule_name(rule: LeafRule) -> &'static str {
    match rule {
        LeafRule::LastPrompt => "last-prompt",
        LeafRule::NewerThanCheckpoint => "newer-than-checkpoint",
        LeafRule::Newest => "newest",
        LeafRule::NewestSidechain => "newest (agent)",
        LeafRule::Requested => "requested",
    }
}

/// One fixture scanned and resolved in both views.
struct Loaded {
    t: Transcript,
    res: Resolution,
    full: Resolution,
}

impl Loaded {
    fn name(&self, id: chainlog::Id) -> String {
        short(&self.t.names.name(id))
    }

    fn names(&self, ids: impl IntoIterator<Item = chainlog::Id>) -> Vec<String> {
        ids.into_iter().map(|id| self.name(id)).collect()
    }
}

fn check_library(r: &mut Report, jsonl: &Path, exp: &Expect) {
    let t = Transcript::open(jsonl).expect("fixture scans");
    let res = match resolve(&t, ResolveOptions::default()) {
        Ok(res) => res,
        Err(e) => return r.fail("resolve (resume view)", &format!("failed: {e}")),
    };
    let full_opts = ResolveOptions {
        view: View::Full,
        ..ResolveOptions::default()
    };
    let full = match resolve(&t, full_opts) {
        Ok(res) => res,
        Err(e) => return r.fail("resolve (full view)", &format!("failed: {e}")),
    };
    // The in-memory scan must give the same answer as the file scan.
    let bytes = std::fs::read(jsonl).expect("fixture readable");
    match resolve(&Transcript::scan_bytes(&bytes), ResolveOptions::default()) {
        Ok(m) if m == res => {}
        other => r.fail(
            "scan_bytes vs open",
            &format!("resolutions differ: {other:?} vs {res:?}"),
        ),
    }
    let l = Loaded { t, res, full };
    check_leaf(r, &l, exp);
    check_views(r, &l, exp);
    check_lines(r, &l, exp);
    check_stops(r, &l, exp);
    check_effective_parents(r, &l, exp);
    check_metadata(r, jsonl, &l, exp);
    if let Some(dups) = &exp.duplicate_uuids {
        let got: BTreeSet<String> = l
            .names(l.t.duplicates.iter().copied())
            .into_iter()
            .collect();
        let want: BTreeSet<String> = shorts(dups).into_iter().collect();
        r.eq("duplicate_uuids", &want, &got);
    }
    // The projected lines a resume hands over agree with the links.
    check_read_view(r, "resume", jsonl, &l.t, &l.res);
    check_read_view(r, "full", jsonl, &l.t, &l.full);
}

/// Steps 7–8: the leaf, the rule that picked it, every leaf, and `leaf_report`.
fn check_leaf(r: &mut Report, l: &Loaded, exp: &Expect) {
    let want_leaf = exp.leaf.as_deref().map(short);
    r.eq("leaf", &want_leaf, &l.res.leaf.map(|(id, _)| l.name(id)));
    let want_rule = match (exp.leaf_rule.as_deref(), exp.load_as.as_deref()) {
        (Some("newest"), Some("agent")) => Some("newest (agent)"),
        (Some("newest"), None) => Some("newest"),
        (Some("last-prompt"), None) => Some("last-prompt"),
        (Some("newer-than-checkpoint"), None) => Some("newer-than-checkpoint"),
        (None, _) => None,
        (rule, load_as) => panic!("unknown leaf_rule {rule:?} / load_as {load_as:?} in the schema"),
    };
    let got_rule = l.res.leaf.map(|(_, rule)| leaf_rule_name(rule));
    r.eq("leaf_rule", &want_rule, &got_rule);

    let mut want_leaves = shorts(&exp.leaves);
    want_leaves.sort();
    let mut got_leaves = l.names(l.res.leaves.iter().copied());
    got_leaves.sort();
    r.eq("leaves (sorted)", &want_leaves, &got_leaves);
    let report = leaf_report(&l.t, &l.res);
    let mut reported = l.names(report.iter().map(|i| i.uuid));
    reported.sort();
    r.eq("leaf_report uuids (sorted)", &want_leaves, &reported);
    let active = l.names(report.iter().filter(|i| i.active).map(|i| i.uuid));
    let want_active: Vec<String> = want_leaf
        .into_iter()
        .filter(|u| want_leaves.contains(u))
        .collect();
    r.eq("leaf_report active", &want_active, &active);
}

/// Steps 9–10 in both views, and step 5's zeroed usage (carried by the resume view).
fn check_views(r: &mut Report, l: &Loaded, exp: &Expect) {
    let uuids = |links: &[Link]| l.names(links.iter().map(|k| k.uuid));
    r.eq("resume (uuids)", &shorts(&exp.resume), &uuids(&l.res.chain));
    r.eq("full (uuids)", &shorts(&exp.full), &uuids(&l.full.chain));
    let mut zeroed = l.names(l.res.chain.iter().filter(|k| k.zero_usage).map(|k| k.uuid));
    zeroed.sort();
    let mut want_zeroed = shorts(&exp.usage_zeroed);
    want_zeroed.sort();
    r.eq("usage_zeroed", &want_zeroed, &zeroed);
}

/// Step 1 and A1: skipped lines, repaired lines, torn tail.
fn check_lines(r: &mut Report, l: &Loaded, exp: &Expect) {
    let got_bad: Vec<(u64, u64, String)> =
        l.t.bad_lines
            .iter()
            .map(|b| (b.pos.line, b.pos.offset, b.problem.to_string()))
            .collect();
    let bad_ok = got_bad.len() == exp.bad_lines.len()
        && got_bad
            .iter()
            .zip(&exp.bad_lines)
            .all(|(g, e)| g.0 == e.line && g.1 == e.byte_offset && g.2.contains(e.reason.as_str()));
    if !bad_ok {
        let want: Vec<(u64, u64, &str)> = exp
            .bad_lines
            .iter()
            .map(|b| (b.line, b.byte_offset, b.reason.as_str()))
            .collect();
        r.fail(
            "bad_lines (line, byte_offset, reason ⊂ message)",
            &format!("\n      expected: {want:?}\n      got:      {got_bad:?}"),
        );
    }
    let got_repaired: Vec<(u64, u64)> = l.t.repaired.iter().map(|p| (p.line, p.offset)).collect();
    let want_repaired: Vec<(u64, u64)> = exp
        .repaired
        .iter()
        .map(|p| (p.line, p.byte_offset))
        .collect();
    r.eq(
        "repaired (line, byte_offset)",
        &want_repaired,
        &got_repaired,
    );
    r.eq("torn_tail", &exp.torn_tail, &l.t.frame.torn_tail.is_some());
}

/// Steps 9 and 11: cycles and breaks, in both views.
fn check_stops(r: &mut Report, l: &Loaded, exp: &Expect) {
    let is_cycle = |res: &Resolution| matches!(res.stop, Some(Stop::Cycle { .. }));
    let breaks = |res: &Resolution| l.names(res.chain_break.iter().map(|b| b.child));
    r.eq("cycle (resume view)", &exp.cycle, &is_cycle(&l.res));
    let want_full_cycle = exp.full_cycle.unwrap_or(exp.cycle);
    r.eq("cycle (full view)", &want_full_cycle, &is_cycle(&l.full));
    r.eq(
        "breaks (resume view)",
        &shorts(&exp.breaks),
        &breaks(&l.res),
    );
    r.eq(
        "full_breaks (full view)",
        &shorts(&exp.full_breaks),
        &breaks(&l.full),
    );
    r.eq(
        "bridges (resume view)",
        &shorts(&exp.bridges),
        &l.names(l.res.bridges.iter().map(|b| b.child)),
    );
    let strict = l.res.clone().strict();
    r.eq(
        "strict_resume (Resolution::strict)",
        &shorts(exp.strict_resume.as_ref().unwrap_or(&exp.resume)),
        &l.names(strict.chain.iter().map(|x| x.uuid)),
    );
    if !exp.bridges.is_empty() {
        r.eq(
            "strict walk reports the first bridge as the break",
            &shorts(&exp.bridges[..1]),
            &l.names(strict.chain_break.iter().map(|b| b.child)),
        );
    }
    for (view, res) in [("resume", &l.res), ("full", &l.full)] {
        let stop_says_break = matches!(res.stop, Some(Stop::MissingParent { .. }));
        if stop_says_break != res.chain_break.is_some() {
            r.fail(
                &format!("{view} view stop vs chain_break"),
                &format!("stop {:?} but chain_break {:?}", res.stop, res.chain_break),
            );
        }
    }
}

/// `effective_parents` lists the messages whose parent steps 3/5/6 changed; every other message
/// of the resume chain keeps the parent written on disk.
fn check_effective_parents(r: &mut Report, l: &Loaded, exp: &Expect) {
    let want: BTreeMap<String, Option<String>> = exp
        .effective_parents
        .iter()
        .map(|(k, v)| (short(k), v.as_deref().map(short)))
        .collect();
    for (uuid, parent) in &exp.effective_parents {
        let id = chainlog::Id::from_text(uuid);
        // Off the chosen chain (a stale leaf, say): resolve from that message to see its link.
        let link = match l.res.chain.iter().find(|k| k.uuid == id) {
            Some(k) => Some(k.clone()),
            None => resolve(
                &l.t,
                ResolveOptions {
                    leaf: Some(id),
                    view: View::Resume,
                    ..ResolveOptions::default()
                },
            )
            .ok()
            .and_then(|res| res.chain.into_iter().find(|k| k.uuid == id)),
        };
        match link {
            None => r.fail(
                "effective_parents",
                &format!("{} is not a live message", short(uuid)),
            ),
            Some(k) => r.eq(
                &format!("effective parent of {}", short(uuid)),
                &parent.as_deref().map(short),
                &k.parent.map(|p| l.name(p)),
            ),
        }
    }
    for k in &l.res.chain {
        let me = l.name(k.uuid);
        let on_disk = l.t.row(k.uuid).and_then(|row| row.head.parent);
        if !want.contains_key(&me) && on_disk != k.parent {
            r.fail(
                "effective_parents",
                &format!(
                    "{me} was re-pointed from {:?} to {:?} but the expect file does not list it",
                    on_disk.map(|p| l.name(p)),
                    k.parent.map(|p| l.name(p))
                ),
            );
        }
    }
}

/// The first `sessionId` written in the file (for files without a leaf).
fn file_session_id(jsonl: &Path) -> Option<String> {
    let text = String::from_utf8_lossy(&std::fs::read(jsonl).ok()?).into_owned();
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find_map(|v| v.get("sessionId")?.as_str().map(str::to_owned))
}

/// A2: title, tag and the other merged values of the leaf's session.
fn check_metadata(r: &mut Report, jsonl: &Path, l: &Loaded, exp: &Expect) {
    let meta = &l.t.metadata;
    // Metadata is looked up by the leaf's session; with no leaf, by the file's own session.
    let session = match l.res.leaf {
        Some(_) => l.res.session,
        None => file_session_id(jsonl).map(|s| hash64(&s)),
    };
    let text = |ty: &str| session.and_then(|s| meta.session_text(ty, s).map(str::to_owned));
    r.eq("title (custom-title)", &exp.title, &text("custom-title"));
    r.eq("tag", &exp.tag, &text("tag"));
    let Some(extra) = &exp.metadata else { return };
    for (key, want) in extra {
        let want_text = want.as_str().map(str::to_owned);
        match key.as_str() {
            "ai_title" => r.eq("metadata.ai_title", &want_text, &text("ai-title")),
            "last_prompt" => r.eq("metadata.last_prompt", &want_text, &text("last-prompt")),
            "mode" => r.eq("metadata.mode", &want_text, &text("mode")),
            "summary" => {
                let got = l
                    .res
                    .leaf
                    .and_then(|(leaf, _)| meta.summaries.get(&leaf))
                    .and_then(|m| m.text.clone());
                r.eq("metadata.summary", &want_text, &got);
            }
            "worktree_state" => {
                // `worktreeSession: null` = left the worktree: the entry merges, with no value.
                let got = session.and_then(|s| meta.session_value("worktree-state", s));
                if want.is_null() != got.is_some_and(|m| m.text.is_none()) {
                    r.fail(
                        "metadata.worktree_state",
                        &format!("expected {want}, got entry {got:?}"),
                    );
                }
            }
            "unknown_types" => {
                for ty in want
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    if !meta.by_type.contains_key(ty) {
                        r.fail(
                            "metadata.unknown_types",
                            &format!("type {ty:?} is not indexed by type"),
                        );
                    }
                }
            }
            other => panic!("unknown metadata key {other:?} in the schema"),
        }
    }
}

/// `read_view` returns each chain line with the link's parent and, for zeroed links, usage
/// counts of 0; the leaf's `sessionId` is the session the resolution reports.
fn check_read_view(r: &mut Report, view: &str, jsonl: &Path, t: &Transcript, res: &Resolution) {
    let entries = match read_view(jsonl, &res.chain, &t.names) {
        Ok(e) => e,
        Err(e) => return r.fail(&format!("read_view ({view} view)"), &e.to_string()),
    };
    let name = |id| short(&t.names.name(id));
    for e in &entries {
        let me = name(e.link.uuid);
        let Some(v) = e.value() else {
            r.fail(
                &format!("read_view ({view} view)"),
                &format!("{me}: line does not parse"),
            );
            continue;
        };
        let got_uuid = v.get("uuid").and_then(Value::as_str).map(short);
        r.eq(
            &format!("read_view ({view}) uuid"),
            &Some(me.clone()),
            &got_uuid,
        );
        let got_parent = v.get("parentUuid").and_then(Value::as_str).map(short);
        let want_parent = e.link.parent.map(name);
        r.eq(
            &format!("read_view ({view}) parentUuid of {me}"),
            &want_parent,
            &got_parent,
        );
        if e.link.zero_usage {
            let usage = v.pointer("/message/usage").and_then(Value::as_object);
            let nonzero = usage
                .into_iter()
                .flatten()
                .any(|(k, n)| k.ends_with("_tokens") && n.as_u64() != Some(0));
            if usage.is_none() || nonzero {
                r.fail(
                    &format!("read_view ({view}) usage of {me}"),
                    &format!("expected zeroed token counts, got {usage:?}"),
                );
            }
        }
    }
    if let (Some((leaf, _)), Some(session)) = (res.leaf, res.session)
        && let Some(sid) = entries
            .iter()
            .find(|e| e.link.uuid == leaf)
            .and_then(ViewEntry::value)
            .and_then(|v| v.get("sessionId")?.as_str().map(str::to_owned))
    {
        r.eq(
            &format!("session hash of the leaf ({view} view)"),
            &hash64(&sid),
            &session,
        );
    }
}

/// The binary prints what the library resolves.
fn check_cli(r: &mut Report, jsonl: &Path, exp: &Expect) {
    if exp.leaf.is_none() {
        // Nothing to resume: exit 1 (not found), in both views.
        for extra in [&[][..], &["--full"][..]] {
            let mut args = vec!["resume", jsonl.to_str().expect("utf-8 path")];
            args.extend_from_slice(extra);
            let out = util::chainlog(&args);
            r.eq(
                &format!("cli resume {extra:?} with no message: exit code"),
                &Some(1),
                &out.status.code(),
            );
        }
        return;
    }
    match util::cli_resume_uuids(jsonl, &[]) {
        Ok(got) => r.eq(
            "cli resume --format uuids",
            &shorts(&exp.resume),
            &shorts(&got),
        ),
        Err(e) => r.fail("cli resume", &e),
    }
    if let Some(strict) = &exp.strict_resume {
        match util::cli_resume_uuids(jsonl, &["--no-bridge"]) {
            Ok(got) => r.eq(
                "cli resume --no-bridge --format uuids",
                &shorts(strict),
                &shorts(&got),
            ),
            Err(e) => r.fail("cli resume --no-bridge", &e),
        }
    }
    match util::cli_resume_uuids(jsonl, &["--full"]) {
        Ok(got) => r.eq(
            "cli resume --full --format uuids",
            &shorts(&exp.full),
            &shorts(&got),
        ),
        Err(e) => r.fail("cli resume --full", &e),
    }
    let out = util::chainlog(&["leaves", jsonl.to_str().expect("utf-8 path"), "--json"]);
    if !out.status.success() {
        return r.fail(
            "cli leaves --json",
            &format!(
                "exit {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ),
        );
    }
    let mut got: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|v| v.get("uuid")?.as_str().map(short))
        .collect();
    got.sort();
    let mut want = shorts(&exp.leaves);
    want.sort();
    r.eq("cli leaves --json (sorted uuids)", &want, &got);
}

/// One `#[test]` per fixture, in a module per folder, and the list they came from.
macro_rules! fixtures {
    ($($module:ident in $dir:literal: [$($name:ident),* $(,)?]),* $(,)?) => {
        $(
            mod $module {
                $(
                    #[test]
                    fn $name() {
                        super::check($dir, stringify!($name));
                    }
                )*
            }
        )*
        /// `(folder, fixture names)` of every generated test.
        const LISTED: &[(&str, &[&str])] = &[$(($dir, &[$(stringify!($name)),*])),*];
    };
}

fixtures! {
    a5 in "a5": [
        agent_leaf,
        bom_and_crlf,
        empty,
        full_view_logical_cycle,
        full_view_missing_logical_parent,
        lone_surrogate,
        metadata_merge,
        metadata_only,
        sidechain_inline,
        step10_parallel_tools,
        step10_splice_order,
        step11_chain_break,
        step11_bridge_within_5s,
        step1_skip_unparsable,
        step2_duplicate_uuid,
        step3_progress_after_child,
        step3_progress_bridge,
        step4_5_compact_boundary,
        step5_preserved_broken_walk,
        step5_preserved_live,
        step5_preserved_stale,
        step6_snip,
        step7_leaves_tool_tips,
        step8_leaf_last_prompt,
        step8_leaf_stale_checkpoint,
        step8_leaf_last_prompt_unknown,
        step8_leaf_tie,
        step8_leaf_timestamp,
        step9_cycle,
        step9_dangling_parent,
        torn_tail,
    ],
    bad in "bad": [
        array_line,
        dangling_parent,
        duplicate_uuid,
        glued_records,
        invalid_utf8,
        missing_uuid,
        not_json,
        nul_run,
        parent_cycle,
        path_traversal_ids,
        torn_tail,
        unknown_types,
    ],
    top in "": [example],
}

/// The fixture names (`<name>.expect.json`) found in `fixtures/<dir>`, not recursing.
fn on_disk(dir: &str) -> BTreeSet<String> {
    let path = fixtures_dir().join(dir);
    let entries = std::fs::read_dir(&path)
        .unwrap_or_else(|e| panic!("fixture folder {} unreadable: {e}", path.display()));
    entries
        .flatten()
        .filter_map(|e| {
            let file = e.file_name().into_string().ok()?;
            file.strip_suffix(".expect.json").map(str::to_owned)
        })
        .collect()
}

#[test]
fn listed_fixtures_match_the_folders() {
    let mut problems = Vec::new();
    for &(dir, listed) in LISTED {
        let found = on_disk(dir);
        let shown = if dir.is_empty() { "fixtures/" } else { dir };
        if found.is_empty() {
            problems.push(format!("{shown}: no *.expect.json at all"));
        }
        let listed: BTreeSet<String> = listed.iter().map(|s| (*s).to_owned()).collect();
        for missing in found.difference(&listed) {
            problems.push(format!(
                "{shown}/{missing}.expect.json is not listed in the fixtures! macro of tests/it/fixtures.rs"
            ));
        }
        for gone in listed.difference(&found) {
            problems.push(format!(
                "{shown}/{gone}: listed but no .expect.json on disk"
            ));
        }
        for name in &found {
            let jsonl = fixtures_dir().join(dir).join(format!("{name}.jsonl"));
            if !jsonl.is_file() {
                problems.push(format!("{shown}/{name}.expect.json has no {name}.jsonl"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "fixture list out of date:\n  {}",
        problems.join("\n  ")
    );
}

/// A fixture added on disk but not yet to the macro list is still checked (and the test
/// above fails until it is listed).
#[test]
fn unlisted_fixtures_are_checked() {
    for &(dir, listed) in LISTED {
        for name in on_disk(dir) {
            if !listed.contains(&name.as_str()) {
                check(dir, &name);
            }
        }
    }
}
