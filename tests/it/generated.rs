//! Property tests over generated transcripts (SPEC B6, STYLE practice 8).
//!
//! The generator ([`chainlog_gen`]) writes sessions with the answer a correct loader
//! must give ([`Expected`]); the reference loader is the oracle for everything else. For
//! every generated session (every feature on, random feature subsets, a few large files):
//!
//! - the reference loader's resume view, leaf, bad-line count, lossy-line count, custom title,
//!   tag and AI title equal `Expected`;
//! - every resolved chain (both views, the chosen leaf and `--leaf` = every leaf, main and agent
//!   files) is well formed: root first, each walked link's parent is the previous walked link,
//!   spliced links directly follow their group's anchor, no uuid twice, the leaf is the last
//!   walked link, and the chosen leaf is the one SPEC A5 step 8 names;
//! - each agent file resolves to its `expected_leaf`;
//! - the index answers exactly what the reference loader answers;
//! - `read_view` returns parseable lines, byte-identical to the file unless a projection
//!   (re-pointed parent, zeroed usage) or an upgrade step changed the entry, in which case they
//!   are exactly that change re-serialised.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use chainlog::Id;
use chainlog::LeafRule;
use chainlog::Resolution;
use chainlog::Store;
use chainlog::format::Flags;
use chainlog::format::Kind;
use chainlog::format::upgrade;
use chainlog::reference::Link;
use chainlog::reference::ResolveOptions;
use chainlog::reference::Stop;
use chainlog::reference::Transcript;
use chainlog::reference::View;
use chainlog::reference::leaf_report;
use chainlog::reference::resolve;
use chainlog::view::ViewEntry;
use chainlog::view::read_view;
use chainlog_gen::{
    Corruption, Expected, GenOptions, GeneratedSession, SidechainLayout, generate, write_session,
};
use proptest::prelude::*;
use serde_json::Value;

type TestResult = Result<(), TestCaseError>;

const VIEWS: [View; 2] = [View::Resume, View::Full];

fn opts(leaf: Option<Id>, view: View) -> ResolveOptions {
    ResolveOptions {
        leaf,
        view,
        list_leaves: true,
    }
}

fn name(t: &Transcript, id: Id) -> String {
    t.names.name(id)
}

/// Map positions (SPEC A5 step 2: first position of a uuid), for tie-breaks.
fn map_positions(t: &Transcript) -> HashMap<Id, usize> {
    t.rows
        .iter()
        .enumerate()
        .map(|(i, r)| (r.head.uuid, i))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Expected

/// The reference loader agrees with the generator's `Expected`.
fn check_expected(t: &Transcript, r: &Resolution, e: &Expected, ctx: &str) -> TestResult {
    prop_assert_eq!(
        r.leaf.map(|(id, _)| name(t, id)),
        e.leaf.clone(),
        "{}: leaf",
        ctx
    );
    let got: Vec<String> = r.chain.iter().map(|l| name(t, l.uuid)).collect();
    prop_assert_eq!(&got, &e.resume_uuids, "{}: resume view uuids", ctx);
    prop_assert_eq!(t.bad_lines.len(), e.bad_lines, "{}: bad lines", ctx);
    let text = |ty: &str| {
        r.session
            .and_then(|s| t.metadata.session_text(ty, s))
            .map(str::to_owned)
    };
    prop_assert_eq!(
        text("custom-title"),
        e.custom_title.clone(),
        "{}: custom title",
        ctx
    );
    prop_assert_eq!(text("tag"), e.tag.clone(), "{}: tag", ctx);
    prop_assert_eq!(text("ai-title"), e.ai_title.clone(), "{}: ai title", ctx);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Chain invariants

/// A chain is well formed (see the module docs). `requested` is the `--leaf`, if any.
fn check_chain(
    t: &Transcript,
    r: &Resolution,
    view: View,
    requested: Option<Id>,
    ctx: &str,
) -> TestResult {
    let Some((leaf, rule)) = r.leaf else {
        prop_assert!(r.chain.is_empty(), "{}: a chain without a leaf", ctx);
        prop_assert!(requested.is_none(), "{}: requested leaf not resolved", ctx);
        return Ok(());
    };
    if let Some(req) = requested {
        prop_assert_eq!(leaf, req, "{}: --leaf", ctx);
        prop_assert_eq!(rule, LeafRule::Requested, "{}: rule of --leaf", ctx);
    }
    let row = |id: Id| t.row(id).map(|r| &r.head);

    let mut seen = HashSet::new();
    for l in &r.chain {
        prop_assert!(
            seen.insert(l.uuid),
            "{}: {} twice on the chain",
            ctx,
            name(t, l.uuid)
        );
        let head = row(l.uuid);
        prop_assert!(
            head.is_some(),
            "{}: {} is not a message",
            ctx,
            name(t, l.uuid)
        );
        prop_assert_eq!(head.map(|h| h.kind), Some(l.kind), "{}: kind", ctx);
    }

    let walked: Vec<&Link> = r.chain.iter().filter(|l| !l.spliced).collect();
    prop_assert!(!walked.is_empty(), "{}: nothing walked", ctx);
    // Root first: the walk ended at a message without parent (generated files have no breaks
    // and no cycles).
    prop_assert_eq!(r.stop, Some(Stop::Root), "{}: stop", ctx);
    prop_assert_eq!(walked[0].parent, None, "{}: first link is a root", ctx);
    // Each walked link hangs off the previous one (the full view crosses a compact boundary
    // through its `logicalParentUuid`).
    for w in walked.windows(2) {
        let (prev, cur) = (w[0], w[1]);
        let crossed = view == View::Full
            && cur.parent.is_none()
            && row(cur.uuid).is_some_and(|h| {
                h.flags.has(Flags::COMPACT_BOUNDARY) && h.logical_parent == Some(prev.uuid)
            });
        prop_assert!(
            cur.parent == Some(prev.uuid) || crossed,
            "{}: {} follows {} but its parent is {:?}",
            ctx,
            name(t, cur.uuid),
            name(t, prev.uuid),
            cur.parent.map(|p| name(t, p))
        );
    }
    // The leaf is the last walked link; only spliced links may follow it.
    prop_assert_eq!(
        walked.last().map(|l| l.uuid),
        Some(leaf),
        "{}: last walked link is the leaf",
        ctx
    );

    check_splice(t, r, ctx)?;
    if requested.is_none() {
        check_leaf_choice(t, r, ctx)?;
    }
    Ok(())
}

/// Spliced links (SPEC A5 step 10) directly follow their group's anchor: the last walked
/// assistant line of one `message.id`; first the group's other assistant lines, then the tool
/// results hanging off any line of the group, each by timestamp.
fn check_splice(t: &Transcript, r: &Resolution, ctx: &str) -> TestResult {
    let head = |id: Id| &t.row(id).expect("checked: every link is a message").head;
    let mut i = 0;
    while i < r.chain.len() {
        if !r.chain[i].spliced {
            i += 1;
            continue;
        }
        let run_start = i;
        while i < r.chain.len() && r.chain[i].spliced {
            i += 1;
        }
        let run = &r.chain[run_start..i];
        prop_assert!(
            run_start > 0,
            "{}: the chain starts with a spliced link",
            ctx
        );
        let anchor = &r.chain[run_start - 1];
        let ah = head(anchor.uuid);
        prop_assert_eq!(
            anchor.kind,
            Kind::Assistant,
            "{}: spliced run after a non-assistant",
            ctx
        );
        let mid = ah.message_id;
        prop_assert!(mid.is_some(), "{}: anchor without message.id", ctx);
        let last_of_group = r
            .chain
            .iter()
            .rev()
            .find(|l| !l.spliced && head(l.uuid).message_id == mid && l.kind == Kind::Assistant)
            .map(|l| l.uuid);
        prop_assert_eq!(
            last_of_group,
            Some(anchor.uuid),
            "{}: the anchor {} is not the last walked line of its message.id",
            ctx,
            name(t, anchor.uuid)
        );
        let mut in_results = false;
        let mut last_ts = i64::MIN;
        for l in run {
            let h = head(l.uuid);
            let is_sibling = l.kind == Kind::Assistant && h.message_id == mid;
            let is_result = l.kind == Kind::User
                && h.flags.has(Flags::TOOL_RESULT)
                && l.parent.is_some_and(|p| {
                    t.row(p).is_some_and(|pr| {
                        pr.head.kind == Kind::Assistant && pr.head.message_id == mid
                    })
                });
            prop_assert!(
                is_sibling || is_result,
                "{}: spliced {} is neither a sibling nor a tool result of anchor {}",
                ctx,
                name(t, l.uuid),
                name(t, anchor.uuid)
            );
            if is_result && !in_results {
                in_results = true;
                last_ts = i64::MIN;
            }
            prop_assert!(
                !(is_sibling && in_results),
                "{}: sibling {} after the tool results",
                ctx,
                name(t, l.uuid)
            );
            prop_assert!(
                h.timestamp >= last_ts,
                "{}: spliced {} out of timestamp order",
                ctx,
                name(t, l.uuid)
            );
            last_ts = h.timestamp;
        }
    }
    Ok(())
}

/// The chosen leaf is the one SPEC A5 step 8 names: the newest `last-prompt` checkpoint if it
/// is a live message, else the non-sidechain user/assistant leaf with the greatest
/// (timestamp, map position); in an agent transcript (every message a sidechain) the same over
/// all its user/assistant leaves.
fn check_leaf_choice(t: &Transcript, r: &Resolution, ctx: &str) -> TestResult {
    let report = leaf_report(t, r);
    let report_ids: Vec<Id> = report.iter().map(|l| l.uuid).collect();
    prop_assert_eq!(
        &report_ids,
        &r.leaves,
        "{}: leaf_report lists the leaves",
        ctx
    );
    let live = |id: Id| resolve(t, opts(Some(id), View::Resume)).is_ok();
    let checkpoint = t
        .metadata
        .leaf_checkpoints
        .last()
        .map(|(id, _)| *id)
        .filter(|id| live(*id));
    let pos = map_positions(t);
    let newest = |sidechain_ok: bool| {
        report
            .iter()
            .filter(|l| l.kind.is_turn() && (sidechain_ok || !l.sidechain))
            .max_by_key(|l| (l.timestamp, pos[&l.uuid]))
            .map(|l| l.uuid)
    };
    let all_sidechain = t.rows.iter().all(|r| r.head.flags.has(Flags::SIDECHAIN));
    // A stale checkpoint (a user/assistant leaf descends from it) loses to the newest such
    // leaf (SPEC A5 step 8a amended).
    let below = |c: Id| {
        report
            .iter()
            .filter(|l| l.kind.is_turn() && !l.sidechain && l.uuid != c)
            .filter(|l| {
                resolve(t, opts(Some(l.uuid), View::Resume))
                    .is_ok_and(|r| r.chain.iter().any(|x| x.uuid == c && !x.spliced))
            })
            .max_by_key(|l| (l.timestamp, pos[&l.uuid]))
            .map(|l| l.uuid)
    };
    let want = if let Some(c) = checkpoint {
        match below(c) {
            Some(n) => Some((n, LeafRule::NewerThanCheckpoint)),
            None => Some((c, LeafRule::LastPrompt)),
        }
    } else if let Some(n) = newest(false) {
        Some((n, LeafRule::Newest))
    } else if all_sidechain {
        newest(true).map(|n| (n, LeafRule::NewestSidechain))
    } else {
        None
    };
    let show = |x: Option<(Id, LeafRule)>| x.map(|(id, rule)| (name(t, id), rule));
    prop_assert_eq!(
        show(r.leaf),
        show(want),
        "{}: leaf choice (SPEC A5 step 8)",
        ctx
    );
    let active: Vec<Id> = report.iter().filter(|l| l.active).map(|l| l.uuid).collect();
    let expect_active: Vec<Id> = r
        .leaf
        .map(|(id, _)| id)
        .filter(|id| report_ids.contains(id))
        .into_iter()
        .collect();
    prop_assert_eq!(
        active,
        expect_active,
        "{}: leaf_report marks the active leaf",
        ctx
    );
    Ok(())
}

/// The chosen chain and the chain of every leaf, in both views.
fn check_all_chains(t: &Transcript, ctx: &str) -> Result<Resolution, TestCaseError> {
    let chosen = resolve(t, opts(None, View::Resume)).unwrap();
    for view in VIEWS {
        let r = resolve(t, opts(None, view)).unwrap();
        check_chain(t, &r, view, None, &format!("{ctx} {view:?}"))?;
        for &leaf in &chosen.leaves {
            let r = resolve(t, opts(Some(leaf), view));
            prop_assert!(r.is_ok(), "{}: --leaf {} refused", ctx, name(t, leaf));
            let c = format!("{ctx} {view:?} --leaf {}", name(t, leaf));
            check_chain(t, &r.unwrap(), view, Some(leaf), &c)?;
        }
    }
    Ok(chosen)
}

// ---------------------------------------------------------------------------------------------
// Index and read path

/// Where `write_session` put each agent file.
fn agent_path(
    main: &Path,
    s: &GeneratedSession,
    agent_id: &str,
    layout: SidechainLayout,
) -> PathBuf {
    let project = main.parent().expect("main file in a project folder");
    let file = format!("agent-{agent_id}.jsonl");
    match layout {
        SidechainLayout::Subagents => project.join(&s.session_id).join("subagents").join(file),
        _ => project.join(file),
    }
}

/// The index answers what the reference loader answers, for both views, for the chosen leaf
/// and for `--leaf` = every leaf.
fn check_index(store: &Store, path: &Path, t: &Transcript, ctx: &str) -> TestResult {
    let leaves = resolve(t, opts(None, View::Resume)).unwrap().leaves;
    for view in VIEWS {
        for leaf in std::iter::once(None).chain(leaves.iter().copied().map(Some)) {
            let c = format!("{ctx} {view:?} --leaf {:?}", leaf.map(|l| name(t, l)));
            let want = resolve(t, opts(leaf, view)).unwrap();
            let got = store.resolve_indexed(path, opts(leaf, view));
            prop_assert!(got.is_ok(), "{}: index error {:?}", c, got.err());
            let got = got.unwrap();
            prop_assert!(got.is_some(), "{}: index reported damaged", c);
            let got = got.unwrap();
            prop_assert_eq!(&got.resolution, &want, "{}: index vs reference", c);
            prop_assert_eq!(
                &got.bad_lines[..],
                &t.bad_lines[..t.bad_lines.len().min(chainlog::BAD_LINES_KEPT)],
                "{}: bad lines of the index",
                c
            );
            prop_assert_eq!(got.bad_line_count, t.bad_lines.len() as u64, "{}", c);
            prop_assert_eq!(got.torn_tail, t.frame.torn_tail, "{}: torn tail", c);
        }
    }
    Ok(())
}

/// `read_view` returns every link's line: byte-identical to the file unless the entry was
/// re-pointed, zeroed or upgraded, and then exactly that change re-serialised.
fn check_read_view(path: &Path, bytes: &[u8], t: &Transcript, view: View, ctx: &str) -> TestResult {
    let r = resolve(t, opts(None, view)).unwrap();
    let entries = read_view(path, &r.chain, &t.names);
    prop_assert!(
        entries.is_ok(),
        "{}: read_view failed: {:?}",
        ctx,
        entries.err()
    );
    let entries = entries.unwrap();
    prop_assert_eq!(entries.len(), r.chain.len(), "{}: one entry per link", ctx);
    for (e, link) in entries.iter().zip(&r.chain) {
        prop_assert_eq!(&e.link, link, "{}: entry order", ctx);
        let start = usize::try_from(link.pos.offset).unwrap();
        let end = start + usize::try_from(link.pos.len).unwrap();
        let mut line = &bytes[start..end];
        line = line.strip_suffix(b"\n").unwrap_or(line);
        line = line.strip_suffix(b"\r").unwrap_or(line);
        let c = format!(
            "{ctx} {view:?} line {} ({})",
            link.pos.line,
            name(t, link.uuid)
        );
        // The file's entry, lossily repaired if it needs that (SPEC A1).
        let original = ViewEntry {
            link: link.clone(),
            json: line.to_vec().into(),
        }
        .value();
        prop_assert!(original.is_some(), "{}: the file's line does not parse", c);
        let lossy = serde_json::from_slice::<Value>(line).is_err();
        let mut want = original.unwrap();
        let on_disk = want
            .get("parentUuid")
            .and_then(Value::as_str)
            .map(Id::from_text);
        let upgraded = upgrade(&mut want);
        if on_disk == link.parent && !link.zero_usage && !upgraded {
            prop_assert!(
                e.json == line,
                "{}: an untouched entry must be the file's bytes",
                c
            );
            // It parses; lossily (SPEC A1) only when the file's line itself needs the repair.
            let strict = serde_json::from_slice::<Value>(&e.json).is_ok();
            prop_assert!(
                strict || (lossy && e.value().is_some()),
                "{}: returned line does not parse",
                c
            );
            continue;
        }
        let got = serde_json::from_slice::<Value>(&e.json);
        prop_assert!(got.is_ok(), "{}: re-serialised line does not parse", c);
        let obj = want.as_object_mut().expect("a message is an object");
        if on_disk != link.parent {
            obj.insert(
                "parentUuid".into(),
                link.parent.map_or(Value::Null, |p| Value::from(name(t, p))),
            );
        }
        if link.zero_usage
            && let Some(usage) = obj
                .get_mut("message")
                .and_then(|m| m.get_mut("usage"))
                .and_then(Value::as_object_mut)
        {
            for k in [
                "input_tokens",
                "output_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
            ] {
                if usage.contains_key(k) {
                    usage.insert(k.into(), Value::from(0));
                }
            }
        }
        let want = serde_json::to_string(&want).unwrap();
        prop_assert_eq!(
            String::from_utf8_lossy(&e.json),
            want,
            "{}: projected entry (parent {:?}, zero usage {}, upgraded {})",
            c,
            link.parent.map(|p| name(t, p)),
            link.zero_usage,
            upgraded
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// One session

fn check_session(o: &GenOptions) -> TestResult {
    let g = generate(o);
    let ctx = format!("seed {} ({} bytes)", o.seed, g.main.len());
    let t = Transcript::scan_bytes(&g.main);
    let chosen = check_all_chains(&t, &ctx)?;
    check_expected(&t, &chosen, &g.expected, &ctx)?;

    let tmp = tempfile::tempdir().unwrap();
    let main = write_session(&tmp.path().join("projects"), &g).unwrap();
    let store = Store::new(tmp.path().join("index"));
    check_index(&store, &main, &t, &ctx)?;
    for view in VIEWS {
        check_read_view(&main, &g.main, &t, view, &ctx)?;
    }

    for a in &g.agents {
        let actx = format!("{ctx} agent {} ({:?})", a.agent_id, a.layout);
        let at = Transcript::scan_bytes(&a.jsonl);
        let ar = check_all_chains(&at, &actx)?;
        prop_assert_eq!(
            ar.leaf.map(|(id, _)| name(&at, id)),
            Some(a.expected_leaf.clone()),
            "{}: agent leaf",
            actx
        );
        let path = agent_path(&main, &g, &a.agent_id, a.layout);
        prop_assert_eq!(
            &std::fs::read(&path).unwrap(),
            &a.jsonl,
            "{}: written",
            actx
        );
        check_index(&store, &path, &at, &actx)?;
        for view in VIEWS {
            check_read_view(&path, &a.jsonl, &at, view, &actx)?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Strategies

fn layout() -> impl Strategy<Value = SidechainLayout> {
    prop_oneof![
        Just(SidechainLayout::None),
        Just(SidechainLayout::Inline),
        Just(SidechainLayout::TopLevel),
        Just(SidechainLayout::Subagents),
        Just(SidechainLayout::All),
    ]
}

fn corruption() -> impl Strategy<Value = Corruption> {
    prop::array::uniform5(any::<bool>()).prop_map(|b| Corruption {
        torn_tail: b[0],
        nul_run: b[1],
        glued: b[2],
        lone_surrogate: b[3],
        invalid_json: b[4],
    })
}

/// Random feature subsets.
fn subset() -> impl Strategy<Value = GenOptions> {
    (
        any::<u64>(),
        8_000u64..40_000,
        prop::array::uniform9(any::<bool>()),
        layout(),
        corruption(),
        prop::option::weighted(0.25, 8_000u64..20_000),
    )
        .prop_map(
            |(seed, target_bytes, b, sidechains, corruption, every)| GenOptions {
                seed,
                target_bytes,
                parallel_tools: b[0],
                rewinds: b[1],
                retries: b[2],
                compactions: b[3],
                preserved_segments: b[4],
                snips: b[5],
                legacy_progress: b[6],
                sidechains,
                metadata_midfile: b[7],
                corruption,
                compact_every_bytes: every.filter(|_| b[8]),
            },
        )
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        // A failing case is large; a few shrink steps are enough to report it.
        max_shrink_iters: 64,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(64))]

    /// Every feature on, files of about 50–75 KB (each feature at least once).
    #[test]
    fn every_feature(seed in any::<u64>(), target in 12_000u64..30_000) {
        check_session(&GenOptions::everything(seed, target))?;
    }

    /// Random subsets of the features.
    #[test]
    fn random_features(o in subset()) {
        check_session(&o)?;
    }
}

proptest! {
    #![proptest_config(config(4))]

    /// Every feature on, about 290–320 KB (several compactions, many leaves).
    #[test]
    fn every_feature_large(seed in any::<u64>()) {
        check_session(&GenOptions::everything(seed, 280_000))?;
    }
}

proptest! {
    #![proptest_config(config(2))]

    /// Every feature on, over 2 MiB: a first index of several blocks of up to 512 KiB, parsed
    /// on three threads (`index/parsing.rs`), and its edges written beside the derivation.
    #[test]
    fn every_feature_parsed_on_three_threads(seed in any::<u64>()) {
        check_session(&GenOptions::everything(seed, 2_200_000))?;
    }
}
