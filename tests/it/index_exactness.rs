//! Named reproductions of index answers that once differed from a full scan (issue #7,
//! shapes 1 and 2): each transcript is written in several appends with a catch-up after each,
//! then the index must answer — itself, not through the fallback — exactly like `--no-index`,
//! and `verify` must report nothing.

use std::io::Write;
use std::path::{Path, PathBuf};

use chainlog::Source;
use chainlog::Store;
use chainlog::reference::ResolveOptions;
use chainlog::reference::Transcript;
use chainlog::reference::View;
use chainlog::reference::resolve;
use chainlog::sidecar::verify;

fn id(n: u64) -> String {
    format!("00000000-0000-4000-8000-{n:012x}")
}

fn ts(n: u64) -> String {
    format!(
        "2026-01-01T{:02}:{:02}:{:02}.000Z",
        n / 3600,
        (n / 60) % 60,
        n % 60
    )
}

fn parent(p: Option<u64>) -> String {
    p.map_or("null".to_owned(), |p| format!("\"{}\"", id(p)))
}

/// A message line: `ty` is `user`, `assistant` or `system`; `extra` is spliced into the object.
fn msg(n: u64, p: Option<u64>, ty: &str, extra: &str) -> String {
    let body = match ty {
        "user" => format!(r#""message":{{"role":"user","content":"prompt {n}"}}"#),
        "assistant" => format!(
            r#""message":{{"id":"msg_{n}","role":"assistant","content":[{{"type":"text","text":"reply {n}"}}],"usage":{{"input_tokens":3,"output_tokens":5}}}}"#
        ),
        _ => r#""subtype":"informational","content":"note","level":"info""#.to_owned(),
    };
    format!(
        r#"{{"parentUuid":{},"isSidechain":false,"userType":"external","cwd":"/p","sessionId":"s","version":"2.1.328","type":"{ty}",{body}{extra},"uuid":"{}","timestamp":"{}"}}"#,
        parent(p),
        id(n),
        ts(n)
    )
}

/// A `system/snip_boundary` removing `removed`.
fn snip(n: u64, p: Option<u64>, removed: &[u64]) -> String {
    let ids: Vec<String> = removed.iter().map(|r| format!("\"{}\"", id(*r))).collect();
    format!(
        r#"{{"parentUuid":{},"isSidechain":false,"userType":"external","cwd":"/p","sessionId":"s","version":"2.1.328","type":"system","subtype":"snip_boundary","content":"Conversation snipped","isMeta":true,"snipMetadata":{{"removedUuids":[{}]}},"uuid":"{}","timestamp":"{}"}}"#,
        parent(p),
        ids.join(","),
        id(n),
        ts(n)
    )
}

/// A compact boundary after `logical`, with a preserved segment `(head, anchor, tail)`.
fn boundary(n: u64, logical: u64, seg: (u64, u64, u64)) -> String {
    format!(
        r#"{{"parentUuid":null,"logicalParentUuid":"{}","isSidechain":false,"userType":"external","cwd":"/p","sessionId":"s","version":"2.1.328","type":"system","subtype":"compact_boundary","content":"Conversation compacted","isMeta":false,"compactMetadata":{{"trigger":"manual","preTokens":1000,"preservedSegment":{{"headUuid":"{}","anchorUuid":"{}","tailUuid":"{}"}}}},"uuid":"{}","timestamp":"{}"}}"#,
        id(logical),
        id(seg.0),
        id(seg.1),
        id(seg.2),
        id(n),
        ts(n)
    )
}

fn last_prompt(leaf: u64) -> String {
    format!(
        r#"{{"type":"last-prompt","lastPrompt":"prompt {leaf}","leafUuid":"{}","sessionId":"s"}}"#,
        id(leaf)
    )
}

struct Case {
    _dir: tempfile::TempDir,
    path: PathBuf,
    store: Store,
}

impl Case {
    fn new() -> Case {
        let dir = tempfile::tempdir().unwrap();
        let path = dir
            .path()
            .join("projects/-p/77777777-7777-4777-8777-777777777777.jsonl");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::File::create(&path).unwrap();
        let store = Store::new(dir.path().join("index"));
        Case {
            _dir: dir,
            path,
            store,
        }
    }

    /// Appends `lines` and catches the index up.
    fn append(&self, lines: &[String]) {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.path)
            .unwrap();
        for l in lines {
            writeln!(f, "{l}").unwrap();
        }
        drop(f);
        self.store.catch_up(&self.path).unwrap();
    }

    /// The index answers (not the fallback) like the full scan, in both views, and `verify`
    /// finds nothing. Returns the resume chain's uuids.
    fn assert_exact(&self) -> Vec<String> {
        assert_exact(&self.store, &self.path)
    }
}

fn assert_exact(store: &Store, path: &Path) -> Vec<String> {
    let t = Transcript::open(path).unwrap();
    let mut chain = Vec::new();
    for view in [View::Resume, View::Full] {
        let opts = ResolveOptions {
            view,
            ..ResolveOptions::default()
        };
        let want = resolve(&t, opts).unwrap();
        let got = store
            .resolve_indexed(path, opts)
            .unwrap()
            .expect("the index answers");
        assert_eq!(got.source, Source::Index);
        assert_eq!(got.resolution, want, "{view:?}");
        if view == View::Resume {
            chain = want.chain.iter().map(|l| t.names.name(l.uuid)).collect();
        }
    }
    // Every message as a requested leaf (the first 60): live ones give the same chain, removed
    // ones (snipped, dropped) are refused by both paths.
    for row in t.rows.iter().take(60) {
        let opts = ResolveOptions {
            leaf: Some(row.head.uuid),
            ..ResolveOptions::default()
        };
        let want = resolve(&t, opts).ok();
        let got = store.resolve_indexed(path, opts);
        match (want, got) {
            (Some(want), Ok(Some(got))) => assert_eq!(got.resolution, want),
            (None, Err(chainlog::Error::UnknownLeaf { leaf, .. })) if leaf.id == row.head.uuid => {}
            (want, got) => panic!(
                "leaf {}: reference {:?}, index {:?}",
                t.names.name(row.head.uuid),
                want.map(|w| w.chain.len()),
                got.map(|g| g.map(|a| a.resolution.chain.len()))
            ),
        }
    }
    let diffs = verify(store, path).unwrap();
    assert!(diffs.is_empty(), "verify: {diffs:?}");
    chain
}

/// Repro 1: a user, an assistant, then 5,000 chained `system` lines appended 200 at a time
/// with a catch-up after each. The incremental leaf update used to give up at its walk limit
/// and answer "no message to resume".
#[test]
fn long_system_run_across_batches_keeps_the_assistant_leaf() {
    let c = Case::new();
    c.append(&[msg(1, None, "user", ""), msg(2, Some(1), "assistant", "")]);
    let mut n = 3;
    for _ in 0..25 {
        let batch: Vec<String> = (n..n + 200)
            .map(|k| msg(k, Some(k - 1), "system", ""))
            .collect();
        n += 200;
        c.append(&batch);
    }
    assert_eq!(c.assert_exact(), [id(1), id(2)]);
}

/// Repro 1, the other walk: the turn's leaf status needs a walk down a long run of non-turn
/// entries (its only terminal is 2,000 lines below), and a short branch appended beside it
/// must not make the update give up with "not a leaf".
#[test]
fn short_branch_beside_a_long_system_run_keeps_the_leaf() {
    let c = Case::new();
    let mut lines = vec![msg(1, None, "user", ""), msg(2, Some(1), "assistant", "")];
    lines.extend((3..2003).map(|k| msg(k, Some(k - 1), "system", "")));
    c.append(&lines);
    c.assert_exact();
    c.append(&[msg(3000, Some(2), "system", "")]);
    assert_eq!(c.assert_exact(), [id(1), id(2)]);
}

/// Repro 2a: a snip names a uuid that arrives only in a later append; the removed message
/// must leave the chain and its child must be re-pointed.
#[test]
fn snip_naming_a_later_uuid_removes_it_when_it_arrives() {
    let c = Case::new();
    c.append(&[
        msg(1, None, "user", ""),
        msg(2, Some(1), "assistant", ""),
        snip(3, Some(2), &[4]),
    ]);
    c.assert_exact();
    c.append(&[
        msg(4, Some(3), "user", ""),
        msg(5, Some(4), "assistant", ""),
    ]);
    assert_eq!(c.assert_exact(), [id(1), id(2), id(3), id(5)]);
}

/// Repro 2b: a compact boundary whose preserved segment's head and tail arrive later; when
/// they do, the segment becomes live (children of the anchor re-pointed to the tail, the tail's
/// usage zeroed).
#[test]
fn preserved_segment_completed_by_a_later_append() {
    let c = Case::new();
    c.append(&[
        msg(1, None, "user", ""),
        msg(2, Some(1), "assistant", ""),
        boundary(3, 2, (6, 4, 7)),
        msg(
            4,
            Some(3),
            "user",
            r#","isCompactSummary":true,"isVisibleInTranscriptOnly":true"#,
        ),
        msg(5, Some(4), "user", ""),
    ]);
    c.assert_exact();
    c.append(&[
        msg(6, Some(4), "user", ""),
        msg(7, Some(6), "assistant", ""),
    ]);
    let chain = c.assert_exact();
    assert_eq!(chain, [id(3), id(4), id(6), id(7), id(5)]);
}

/// Repro 2c: the anchor of a preserved segment arrives after the boundary (and after the
/// segment), so the segment turns live only then.
#[test]
fn preserved_segment_anchor_arriving_later() {
    let c = Case::new();
    c.append(&[
        msg(1, None, "user", ""),
        msg(2, Some(1), "assistant", ""),
        boundary(3, 2, (1, 9, 2)),
    ]);
    c.assert_exact();
    c.append(&[msg(4, Some(3), "user", "")]);
    c.assert_exact();
    c.append(&[
        msg(9, Some(4), "user", ""),
        msg(10, Some(9), "assistant", ""),
    ]);
    c.assert_exact();
}

/// Repro 2d: `last-prompt.leafUuid` written before its message (Claude Code 2.1.328, SPEC A8).
#[test]
fn checkpoint_written_before_its_message() {
    let c = Case::new();
    c.append(&[
        msg(1, None, "user", ""),
        msg(2, Some(1), "assistant", ""),
        last_prompt(3),
    ]);
    c.assert_exact();
    c.append(&[msg(3, Some(2), "user", "")]);
    assert_eq!(c.assert_exact(), [id(1), id(2), id(3)]);
    c.append(&[msg(4, Some(3), "assistant", "")]);
    c.assert_exact();
}

/// Repro 2e: a dangling parent (a chain break) healed by a later append.
#[test]
fn dangling_parent_healed_by_a_later_append() {
    let c = Case::new();
    c.append(&[
        msg(1, None, "user", ""),
        msg(2, Some(1), "assistant", ""),
        msg(4, Some(3), "user", ""),
        msg(5, Some(4), "assistant", ""),
    ]);
    // The missing parent is bridged to the nearest earlier message (≤ 5 s older, SPEC A8).
    assert_eq!(c.assert_exact(), [id(1), id(2), id(4), id(5)]);
    c.append(&[msg(3, Some(2), "system", "")]);
    assert_eq!(c.assert_exact(), [id(1), id(2), id(3), id(4), id(5)]);
}

/// A snip and a dangling parent named in one batch, their targets spread over later batches
/// of ordinary messages.
#[test]
fn forward_references_resolved_over_several_batches() {
    let c = Case::new();
    c.append(&[
        msg(1, None, "user", ""),
        msg(2, Some(1), "assistant", ""),
        snip(3, Some(2), &[20, 21]),
        msg(30, Some(22), "user", ""),
    ]);
    c.assert_exact();
    for k in 20..23 {
        let p = if k == 20 { 3 } else { k - 1 };
        c.append(&[msg(k, Some(p), "user", "")]);
        c.assert_exact();
    }
    c.append(&[msg(31, Some(30), "assistant", "")]);
    assert_eq!(
        c.assert_exact(),
        [id(1), id(2), id(3), id(22), id(30), id(31)]
    );
}
