//! Tests of the generator, including a small independent implementation of format.md §A5 that
//! cross-checks [`Expected`].

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::*;

/// A parsed line of the main file.
enum Line {
    Ok(Value),
    Lossy(Value),
    Bad,
}

/// Split into complete lines (a last line without `\n` is a torn tail and skipped) and parse.
fn parse(bytes: &[u8]) -> Vec<Line> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while let Some(i) = rest.iter().position(|&b| b == b'\n') {
        let line = &rest[..i];
        rest = &rest[i + 1..];
        out.push(if let Ok(v) = serde_json::from_slice::<Value>(line) {
            Line::Ok(v)
        } else {
            let fixed = String::from_utf8_lossy(line).replace("\\ud83d", "\\ufffd");
            match serde_json::from_str::<Value>(&fixed) {
                Ok(v) if std::str::from_utf8(line).is_ok() => Line::Lossy(v),
                _ => Line::Bad,
            }
        });
    }
    out
}

fn values(bytes: &[u8]) -> Vec<Value> {
    parse(bytes)
        .into_iter()
        .filter_map(|l| match l {
            Line::Ok(v) | Line::Lossy(v) => Some(v),
            Line::Bad => None,
        })
        .collect()
}

fn s<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

#[derive(Clone)]
struct Msg {
    pos: usize,
    kind: String,
    parent: Option<String>,
    ts: String,
    sidechain: bool,
    api_id: Option<String>,
    tool_result: bool,
}

/// Steps 1–2 of format.md §A5 plus what the later steps need.
#[derive(Default)]
struct Scan {
    e: Expected,
    msgs: HashMap<String, Msg>,
    progress: HashMap<String, Option<String>>,
    boundaries: Vec<(usize, Option<Value>)>,
    removed: HashSet<String>,
    checkpoint: Option<String>,
}

fn scan(bytes: &[u8]) -> Scan {
    let mut sc = Scan::default();
    for (pos, line) in parse(bytes).into_iter().enumerate() {
        let v = match line {
            Line::Ok(v) => v,
            Line::Lossy(v) => {
                sc.e.lossy_lines += 1;
                v
            }
            Line::Bad => {
                sc.e.bad_lines += 1;
                continue;
            }
        };
        let kind = s(&v, "type").unwrap_or_default();
        match kind {
            "user" | "assistant" | "attachment" | "system" => {
                let uuid = s(&v, "uuid").unwrap().to_owned();
                if kind == "system" && s(&v, "subtype") == Some("compact_boundary") {
                    sc.boundaries
                        .push((pos, v["compactMetadata"].get("preservedSegment").cloned()));
                }
                if let Some(r) = v
                    .get("snipMetadata")
                    .and_then(|m| m["removedUuids"].as_array())
                {
                    sc.removed
                        .extend(r.iter().map(|u| u.as_str().unwrap().to_owned()));
                }
                let content = &v["message"]["content"];
                let tool_result = kind == "user"
                    && content
                        .as_array()
                        .is_some_and(|a| a.iter().any(|b| b["type"] == "tool_result"));
                sc.msgs.entry(uuid).or_insert(Msg {
                    pos,
                    kind: kind.to_owned(),
                    parent: s(&v, "parentUuid").map(str::to_owned),
                    ts: s(&v, "timestamp").unwrap().to_owned(),
                    sidechain: v["isSidechain"] == true,
                    api_id: (kind == "assistant")
                        .then(|| s(&v["message"], "id").unwrap().to_owned()),
                    tool_result,
                });
            }
            "progress" => {
                sc.progress.insert(
                    s(&v, "uuid").unwrap().to_owned(),
                    s(&v, "parentUuid").map(str::to_owned),
                );
            }
            "custom-title" => sc.e.custom_title = s(&v, "customTitle").map(str::to_owned),
            "ai-title" => sc.e.ai_title = s(&v, "aiTitle").map(str::to_owned),
            "tag" => sc.e.tag = s(&v, "tag").filter(|t| !t.is_empty()).map(str::to_owned),
            "last-prompt" => {
                if let Some(l) = s(&v, "leafUuid") {
                    sc.checkpoint = Some(l.to_owned());
                }
            }
            _ => {}
        }
    }
    sc
}

/// Step 3: re-point children of progress lines to the nearest non-progress ancestor.
fn bridge_progress(sc: &mut Scan) {
    let progress = &sc.progress;
    for m in sc.msgs.values_mut() {
        while let Some(u) = m.parent.as_ref().filter(|u| progress.contains_key(*u)) {
            m.parent.clone_from(&progress[u]);
        }
    }
}

/// Step 5: the preserved segment.
fn relink_segment(sc: &mut Scan) {
    if !sc.boundaries.iter().any(|b| b.1.is_some()) {
        return;
    }
    let last_boundary = sc.boundaries.last().unwrap().0;
    let (seg_pos, seg) = sc
        .boundaries
        .iter()
        .rev()
        .find_map(|(p, s)| s.as_ref().map(|s| (*p, s)))
        .unwrap();
    let mut keep = HashSet::new();
    if seg_pos == last_boundary {
        let (head, anchor, tail) = (
            s(seg, "headUuid").unwrap(),
            s(seg, "anchorUuid").unwrap(),
            s(seg, "tailUuid").unwrap(),
        );
        let mut cur = Some(tail.to_owned());
        let mut walked = Vec::new();
        while let Some(u) = cur {
            walked.push(u.clone());
            if u == head {
                break;
            }
            cur = sc.msgs.get(&u).and_then(|m| m.parent.clone());
        }
        if walked.last().map(String::as_str) == Some(head) {
            for m in sc
                .msgs
                .iter_mut()
                .filter(|(u, m)| *u != head && m.parent.as_deref() == Some(anchor))
            {
                m.1.parent = Some(tail.to_owned());
            }
            sc.msgs.get_mut(head).unwrap().parent = Some(anchor.to_owned());
            keep.extend(walked);
        }
    }
    sc.msgs
        .retain(|u, m| m.pos >= last_boundary || keep.contains(u));
}

/// Step 6: snips.
fn apply_snips(sc: &mut Scan) {
    let removed_parent: HashMap<String, Option<String>> = sc
        .removed
        .iter()
        .filter_map(|u| sc.msgs.remove(u).map(|m| (u.clone(), m.parent)))
        .collect();
    for m in sc.msgs.values_mut() {
        while let Some(p) = m.parent.clone().filter(|p| sc.removed.contains(p)) {
            m.parent = removed_parent.get(&p).cloned().flatten();
        }
    }
}

/// Steps 7–8: the leaf.
fn choose_leaf(sc: &Scan) -> Option<String> {
    let ua = |m: &Msg| m.kind == "user" || m.kind == "assistant";
    let named: HashSet<&str> = sc
        .msgs
        .values()
        .filter(|m| ua(m))
        .filter_map(|m| m.parent.as_deref())
        .collect();
    sc.checkpoint
        .clone()
        .filter(|c| sc.msgs.contains_key(c))
        .or_else(|| {
            sc.msgs
                .iter()
                .filter(|(u, m)| ua(m) && !m.sidechain && !named.contains(u.as_str()))
                .max_by(|a, b| (&a.1.ts, a.1.pos).cmp(&(&b.1.ts, b.1.pos)))
                .map(|(u, _)| u.clone())
        })
}

/// Steps 9–10: the chain and the parallel tool-result splice.
fn walk_and_splice(msgs: &HashMap<String, Msg>, leaf: Option<String>) -> Vec<String> {
    let mut chain = Vec::new();
    let mut cur = leaf;
    while let Some(u) = cur.filter(|u| msgs.contains_key(u)) {
        assert!(!chain.contains(&u), "cycle");
        cur = msgs[&u].parent.clone();
        chain.push(u);
    }
    chain.reverse();
    let on: HashSet<String> = chain.iter().cloned().collect();
    let by_time =
        |a: &String, b: &String| (&msgs[a].ts, msgs[a].pos).cmp(&(&msgs[b].ts, msgs[b].pos));
    let mut done = HashSet::new();
    let mut inserts: HashMap<String, Vec<String>> = HashMap::new();
    for u in &chain {
        let Some(id) = msgs[u].api_id.clone() else {
            continue;
        };
        if !done.insert(id.clone()) {
            continue;
        }
        let group: Vec<&String> = msgs
            .iter()
            .filter(|(_, m)| m.api_id.as_ref() == Some(&id))
            .map(|(u, _)| u)
            .collect();
        let anchor = chain
            .iter()
            .rev()
            .find(|c| msgs[*c].api_id.as_ref() == Some(&id))
            .unwrap()
            .clone();
        let mut extra: Vec<String> = group
            .iter()
            .filter(|g| !on.contains(**g))
            .map(|g| (*g).clone())
            .collect();
        let mut results: Vec<String> = msgs
            .iter()
            .filter(|(tu, m)| {
                m.tool_result
                    && !on.contains(*tu)
                    && m.parent.as_ref().is_some_and(|p| group.contains(&p))
            })
            .map(|(u, _)| u.clone())
            .collect();
        extra.sort_by(by_time);
        results.sort_by(by_time);
        extra.extend(results);
        if !extra.is_empty() {
            inserts.insert(anchor, extra);
        }
    }
    let mut view = Vec::new();
    for u in chain {
        let extra = inserts.remove(&u);
        view.push(u);
        view.extend(extra.into_iter().flatten());
    }
    view
}

/// format.md §A5 steps 1–10, written independently of the generator's model.
fn reference_load(bytes: &[u8]) -> Expected {
    let mut sc = scan(bytes);
    bridge_progress(&mut sc);
    relink_segment(&mut sc);
    apply_snips(&mut sc);
    let leaf = choose_leaf(&sc);
    sc.e.resume_uuids = walk_and_splice(&sc.msgs, leaf.clone());
    sc.e.leaf = leaf;
    sc.e
}

fn uuids_in(bytes: &[u8]) -> HashSet<String> {
    values(bytes)
        .iter()
        .filter_map(|v| s(v, "uuid").map(str::to_owned))
        .collect()
}

#[test]
fn deterministic() {
    for opts in [
        GenOptions::small(7),
        GenOptions::plain(7, 50_000),
        GenOptions::everything(3, 200_000),
    ] {
        let a = generate(&opts);
        let b = generate(&opts);
        assert_eq!(a.main, b.main);
        assert_eq!(a.expected, b.expected);
        assert_eq!(a.agents.len(), b.agents.len());
        for (x, y) in a.agents.iter().zip(&b.agents) {
            assert_eq!(
                (&x.agent_id, &x.jsonl, &x.meta_json),
                (&y.agent_id, &y.jsonl, &y.meta_json)
            );
        }
        let mut streamed = Vec::new();
        let exp = generate_to(&opts, &mut streamed).unwrap();
        assert_eq!(streamed, a.main);
        assert_eq!(exp, a.expected);
    }
    assert_ne!(
        generate(&GenOptions::small(1)).main,
        generate(&GenOptions::small(2)).main
    );
}

#[test]
fn expected_matches_reference_loader() {
    for seed in 0..40 {
        for opts in [
            GenOptions::small(seed),
            GenOptions::everything(seed, 150_000),
            GenOptions::plain(seed, 30_000),
            GenOptions {
                compact_every_bytes: Some(20_000),
                ..GenOptions::everything(seed, 120_000)
            },
        ] {
            let g = generate(&opts);
            let r = reference_load(&g.main);
            assert_eq!(r, g.expected, "seed {seed}, opts {opts:?}");
        }
    }
}

#[test]
fn random_option_combinations_match_reference_loader() {
    for seed in 0..120u64 {
        let bit = |i: u32| seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(i * 5) & 1 == 1;
        let layouts = [
            SidechainLayout::None,
            SidechainLayout::Inline,
            SidechainLayout::TopLevel,
            SidechainLayout::Subagents,
            SidechainLayout::All,
        ];
        let opts = GenOptions {
            seed,
            target_bytes: 20_000 + (seed % 7) * 15_000,
            parallel_tools: bit(0),
            rewinds: bit(1),
            retries: bit(2),
            compactions: bit(3),
            preserved_segments: bit(4),
            snips: bit(5),
            legacy_progress: bit(6),
            sidechains: layouts[usize::try_from(seed % 5).unwrap()],
            metadata_midfile: bit(7),
            corruption: Corruption {
                torn_tail: bit(8),
                nul_run: bit(9),
                glued: bit(10),
                lone_surrogate: bit(11),
                invalid_json: bit(12),
            },
            compact_every_bytes: bit(13).then_some(15_000),
        };
        let g = generate(&opts);
        assert_eq!(reference_load(&g.main), g.expected, "{opts:?}");
    }
}

#[test]
fn lines_parse_except_injected_ones() {
    for seed in 0..10 {
        let g = generate(&GenOptions::small(seed));
        let lines = parse(&g.main);
        let bad = lines.iter().filter(|l| matches!(l, Line::Bad)).count();
        let lossy = lines.iter().filter(|l| matches!(l, Line::Lossy(_))).count();
        assert_eq!(bad, g.expected.bad_lines);
        assert_eq!(bad, 3);
        assert_eq!(lossy, g.expected.lossy_lines);
        assert_eq!(lossy, 1);
        assert_ne!(g.main.last(), Some(&b'\n'), "torn tail");
        let clean = generate(&GenOptions::plain(seed, 40_000));
        assert!(parse(&clean.main).iter().all(|l| matches!(l, Line::Ok(_))));
        assert_eq!(clean.main.last(), Some(&b'\n'));
    }
}

#[test]
fn resume_uuids_exist_and_are_distinct() {
    for seed in 0..10 {
        let g = generate(&GenOptions::everything(seed, 100_000));
        let all = uuids_in(&g.main);
        let mut seen = HashSet::new();
        for u in &g.expected.resume_uuids {
            assert!(all.contains(u), "{u} not in file");
            assert!(seen.insert(u), "{u} twice");
        }
        assert_eq!(g.expected.leaf.as_ref(), g.expected.resume_uuids.last());
        // Message timestamps strictly increase in file order.
        let ts: Vec<String> = values(&g.main)
            .iter()
            .filter(|v| {
                matches!(
                    s(v, "type"),
                    Some("user" | "assistant" | "system" | "attachment")
                )
            })
            .map(|v| s(v, "timestamp").unwrap().to_owned())
            .collect();
        assert!(ts.windows(2).all(|w| w[0] < w[1]));
    }
}

#[test]
fn key_order() {
    let g = generate(&GenOptions::small(5));
    for v in values(&g.main) {
        let first = v.as_object().unwrap().keys().next().unwrap().clone();
        match s(&v, "type").unwrap() {
            "user" | "assistant" | "system" | "attachment" | "progress" => {
                assert_eq!(first, "parentUuid");
                if v["isSidechain"] == false {
                    assert_eq!(v["version"], "2.1.88");
                }
                if v["type"] == "system" {
                    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
                    let pos = |k: &str| keys.iter().position(|x| *x == k).unwrap();
                    assert!(pos("timestamp") < pos("uuid"));
                    assert_eq!(pos("subtype"), pos("type") + 1);
                }
            }
            _ => assert_eq!(first, "type"),
        }
    }
}

#[test]
fn plain_is_linear_with_parallel_results() {
    for seed in 0..5 {
        let g = generate(&GenOptions::plain(seed, 60_000));
        let vals = values(&g.main);
        let msgs: Vec<&Value> = vals.iter().filter(|v| v.get("uuid").is_some()).collect();
        // Every message is on the resume view, in file order.
        let uuids: Vec<String> = msgs
            .iter()
            .map(|v| s(v, "uuid").unwrap().to_owned())
            .collect();
        assert_eq!(uuids, g.expected.resume_uuids);
        let by_uuid: HashMap<&str, &Value> =
            msgs.iter().map(|v| (s(v, "uuid").unwrap(), *v)).collect();
        let mut seen = HashSet::new();
        let mut parallel = 0;
        for (i, v) in msgs.iter().enumerate() {
            let parent = s(v, "parentUuid");
            if i == 0 {
                assert_eq!(parent, None);
            } else {
                assert!(seen.contains(parent.unwrap()), "parent must come earlier");
            }
            if let Some(src) = s(v, "sourceToolAssistantUUID") {
                assert_eq!(parent, Some(src));
                let id = v["message"]["content"][0]["tool_use_id"].as_str().unwrap();
                let a = by_uuid[src];
                assert_eq!(a["message"]["content"][0]["id"], id);
                if parent != s(msgs[i - 1], "uuid") {
                    parallel += 1;
                }
            } else if i > 0 {
                assert_eq!(parent, s(msgs[i - 1], "uuid"), "linear chain");
            }
            seen.insert(s(v, "uuid").unwrap());
        }
        assert!(parallel > 0, "some results hang off earlier lines");
        // Timestamps strictly increase.
        let ts: Vec<&str> = msgs.iter().map(|v| s(v, "timestamp").unwrap()).collect();
        assert!(ts.windows(2).all(|w| w[0] < w[1]));
    }
}

#[test]
fn sizes_are_reached() {
    for target in [10_000u64, 200_000, 2_000_000] {
        let g = generate(&GenOptions::plain(11, target));
        let len = g.main.len() as u64;
        assert!(
            len >= target && len < target + target / 4 + 60_000,
            "target {target}, got {len}"
        );
    }
    let g = generate(&GenOptions::everything(11, 1_000_000));
    let len = g.main.len() as u64;
    assert!((1_000_000..1_400_000).contains(&len), "got {len}");
}

#[test]
fn small_covers_every_feature() {
    for seed in 0..20 {
        let g = generate(&GenOptions::small(seed));
        let text = String::from_utf8_lossy(&g.main);
        for needle in [
            "\"subtype\":\"compact_boundary\"",
            "\"preservedSegment\":",
            "\"isCompactSummary\":true",
            "\"subtype\":\"snip_boundary\"",
            "\"type\":\"progress\"",
            "\"isSidechain\":true",
            "\"type\":\"custom-title\"",
            "\"type\":\"ai-title\"",
            "\"tag\":\"\"",
            "\"type\":\"last-prompt\"",
            "\"type\":\"summary\"",
            "\"type\":\"content-replacement\"",
            "\"type\":\"file-history-snapshot\"",
            "\"type\":\"session-insight\"",
            "\\ud83d",
            "\0\0\0\0",
            "}{",
        ] {
            assert!(text.contains(needle), "seed {seed}: missing {needle}");
        }
        assert!(
            g.main.len() < 120_000,
            "seed {seed}: {} bytes",
            g.main.len()
        );
        let layouts: HashSet<_> = g
            .agents
            .iter()
            .map(|a| (a.layout, a.meta_json.is_some()))
            .collect();
        assert!(layouts.contains(&(SidechainLayout::TopLevel, false)));
        assert!(layouts.contains(&(SidechainLayout::Subagents, true)));
        assert!(layouts.contains(&(SidechainLayout::Subagents, false)));
        // Dead branches exist: more uuid'd user/assistant lines than the view holds.
        let e = &g.expected;
        assert!(uuids_in(&g.main).len() > e.resume_uuids.len());
    }
}

#[test]
fn agents_are_consistent() {
    let g = generate(&GenOptions::everything(4, 600_000));
    assert!(g.agents.len() >= 3);
    for a in &g.agents {
        let vals = values(&a.jsonl);
        assert!(
            vals.iter()
                .all(|v| v["isSidechain"] == true && s(v, "sessionId") == Some(&g.session_id))
        );
        assert_eq!(
            s(vals.last().unwrap(), "uuid"),
            Some(a.expected_leaf.as_str())
        );
        assert_eq!(s(&vals[0], "parentUuid"), None);
        assert!(
            vals.iter()
                .all(|v| s(v, "agentId") == Some(a.agent_id.as_str()))
        );
        if let Some(meta) = &a.meta_json {
            let m: Value = serde_json::from_slice(meta).unwrap();
            assert!(m["agentType"].is_string());
        }
        if a.layout == SidechainLayout::TopLevel {
            assert_eq!(a.agent_id.len(), 8);
        }
    }
    // The main file names the agents it spawned.
    let text = String::from_utf8_lossy(&g.main);
    for a in g.agents.iter().filter(|a| a.meta_json.is_some()) {
        assert!(text.contains(&format!("\"agentId\":\"{}\"", a.agent_id)));
    }
}

#[test]
fn compact_every_bytes_bounds_the_view() {
    let opts = GenOptions {
        compact_every_bytes: Some(100_000),
        ..GenOptions::plain(9, 3_000_000)
    };
    let mut out = Vec::new();
    let e = generate_to(&opts, &mut out).unwrap();
    assert!(e.resume_uuids.len() < 400, "{}", e.resume_uuids.len());
    let boundaries = String::from_utf8_lossy(&out)
        .matches("\"subtype\":\"compact_boundary\"")
        .count();
    assert!(boundaries >= 15, "{boundaries}");
    assert_eq!(reference_load(&out), e);
}

#[test]
fn write_session_lays_out_files() {
    let dir = tempfile::tempdir().unwrap();
    let g = generate(&GenOptions::small(21));
    let main = write_session(dir.path(), &g).unwrap();
    assert_eq!(std::fs::read(&main).unwrap(), g.main);
    let project = main.parent().unwrap();
    assert_eq!(
        project.file_name().unwrap().to_str().unwrap(),
        project_key(&g.cwd)
    );
    for a in &g.agents {
        let p = match a.layout {
            SidechainLayout::Subagents => project.join(&g.session_id).join("subagents"),
            _ => project.to_path_buf(),
        };
        assert_eq!(
            std::fs::read(p.join(format!("agent-{}.jsonl", a.agent_id))).unwrap(),
            a.jsonl
        );
        assert_eq!(
            p.join(format!("agent-{}.meta.json", a.agent_id)).exists(),
            a.meta_json.is_some()
        );
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&main).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}

#[test]
fn project_keys() {
    assert_eq!(project_key("/home/a/my.proj"), "-home-a-my-proj");
    assert_eq!(project_key("/x/\u{1F680}"), "-x---");
    assert_eq!(project_key("/x/é"), "-x--");
}

#[test]
#[ignore = "benchmark: cargo test --release --lib tests::throughput -- --ignored --nocapture"]
fn throughput() {
    for opts in [
        GenOptions {
            compact_every_bytes: Some(4 << 20),
            ..GenOptions::everything(1, 256 << 20)
        },
        GenOptions::plain(2, 256 << 20),
    ] {
        let start = std::time::Instant::now();
        let mut sink = std::io::sink();
        let mut counter = Counter(&mut sink, 0);
        let e = generate_to(&opts, &mut counter).unwrap();
        let secs = start.elapsed().as_secs_f64();
        #[allow(clippy::cast_precision_loss)]
        let mbps = counter.1 as f64 / secs / 1e6;
        println!(
            "{} bytes in {secs:.2}s = {mbps:.0} MB/s, view {}",
            counter.1,
            e.resume_uuids.len()
        );
    }
}

struct Counter<'a, W>(&'a mut W, u64);

impl<W: std::io::Write> std::io::Write for Counter<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.1 += buf.len() as u64;
        self.0.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}
