//! A damaged full-text index is a cache to build again, never a failure (#29, item 4): after
//! any damage to the search index's files — 8 random bytes over each kind of tantivy file,
//! `meta.json` and the marker, a file truncated, a segment file deleted, `meta.json` emptied
//! or garbage — the next `chainlog search` exits 0 with the hits a sound index gives and prints
//! no panic; `chainlog ls --search` too; and `chainlog rebuild` leaves a sound, current index.
//!
//! The real binary on the real-transcript corpus. The index is built once (twice: current,
//! and stale so that the search after the damage appends to it and deletes from it, the paths
//! on which tantivy's own threads read the old segments) and copied for each round.

use crate::util;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use chainlog::Store;
use chainlog::search::SearchOptions;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Matches messages in each of the three projects.
const QUERY: &str = "file";
const ROUNDS: usize = 4 * KINDS.len();

fn run(claude: &Path, index: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chainlog"))
        .arg("--claude-dir")
        .arg(claude)
        .arg("--index-dir")
        .arg(index)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// `search QUERY` over every project, every hit: the hits (three lines each) sorted, so that
/// hits of equal score in another order (another segment layout) compare equal.
fn hits(claude: &Path, index: &Path) -> (Output, Vec<String>) {
    let o = run(
        claude,
        index,
        &["search", QUERY, "--all", "--limit", "100000"],
    );
    // The printed commands name the index folder, which differs between the compared runs.
    let text = String::from_utf8_lossy(&o.stdout).replace(&*index.to_string_lossy(), "INDEX");
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks: Vec<String> = lines.chunks(3).map(|c| c.join("\n")).collect();
    blocks.sort();
    (o, blocks)
}

/// `ls --search QUERY` over every project: the sessions listed, sorted.
fn listed(claude: &Path, index: &Path) -> (Output, Vec<String>) {
    let o = run(claude, index, &["--json", "ls", "--all", "--search", QUERY]);
    let mut ids: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["path"].as_str().unwrap_or_default().to_owned()
        })
        .collect();
    ids.sort();
    (o, ids)
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            out.extend(files_under(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out.sort();
    out
}

/// The kinds of damage, each applied to one project's search index folder.
const KINDS: &[&str] = &[
    "bytes .fast",
    "bytes .store",
    "bytes .idx",
    "bytes .term",
    "bytes .pos",
    "bytes .fieldnorm",
    "bytes meta.json",
    "bytes other",
    "truncate",
    "truncate short",
    "delete",
    "meta.json empty",
    "meta.json garbage",
];

/// Applies damage `kind` to a file of `dir` chosen by `rng`; says what it did.
fn damage(dir: &Path, kind: &str, rng: &mut ChaCha8Rng) -> String {
    let files = files_under(dir);
    let segment = |p: &PathBuf| {
        let n = p.file_name().unwrap().to_string_lossy();
        n.len() > 33 && n.as_bytes()[32] == b'.' && n[..32].bytes().all(|b| b.is_ascii_hexdigit())
    };
    let pick = |rng: &mut ChaCha8Rng, of: Vec<&PathBuf>| -> PathBuf {
        assert!(!of.is_empty(), "no file for {kind} in {}", dir.display());
        of[rng.random_range(0..of.len())].clone()
    };
    let name = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
    if let Some(which) = kind.strip_prefix("bytes ") {
        let target = match which {
            "meta.json" => dir.join("meta.json"),
            // Whatever else is there: `.managed.json`, lock files, chainlog's own marker.
            "other" => pick(
                rng,
                files
                    .iter()
                    .filter(|p| !segment(p) && name(p) != "meta.json")
                    .collect(),
            ),
            ext => pick(
                rng,
                files.iter().filter(|p| name(p).ends_with(ext)).collect(),
            ),
        };
        let mut bytes = std::fs::read(&target).unwrap();
        let at = rng.random_range(0..=bytes.len().saturating_sub(8));
        let mut eight = [0u8; 8];
        rng.fill(&mut eight);
        if bytes.len() < at + 8 {
            bytes.resize(at + 8, 0);
        }
        bytes[at..at + 8].copy_from_slice(&eight);
        std::fs::write(&target, bytes).unwrap();
        return format!("{kind}: {} at {at}", name(&target));
    }
    match kind {
        "truncate" | "truncate short" => {
            let target = pick(rng, files.iter().filter(|p| segment(p)).collect());
            let len = std::fs::metadata(&target).unwrap().len();
            // Short: under tantivy's 8-byte footer trailer.
            let to = rng.random_range(0..if kind == "truncate" { len } else { 8 });
            std::fs::OpenOptions::new()
                .write(true)
                .open(&target)
                .unwrap()
                .set_len(to)
                .unwrap();
            format!("{} truncated from {len} to {to}", name(&target))
        }
        "delete" => {
            let target = pick(rng, files.iter().filter(|p| segment(p)).collect());
            std::fs::remove_file(&target).unwrap();
            format!("{} deleted", name(&target))
        }
        "meta.json empty" => {
            std::fs::write(dir.join("meta.json"), b"").unwrap();
            kind.to_owned()
        }
        "meta.json garbage" => {
            let mut g = vec![0u8; rng.random_range(1..4096)];
            rng.fill(&mut g[..]);
            std::fs::write(dir.join("meta.json"), g).unwrap();
            kind.to_owned()
        }
        _ => unreachable!("{kind}"),
    }
}

struct Corpus {
    tmp: tempfile::TempDir,
    claude: PathBuf,
    /// Index folders (sidecars and search indexes) built once: current, and stale.
    current: PathBuf,
    stale: PathBuf,
    want_hits: Vec<String>,
    want_listed: Vec<String>,
}

fn corpus() -> Corpus {
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    let sessions = util::copy_real_sessions(&claude);
    // The right answers: a first search, with no index at all.
    let (o, want_hits) = hits(&claude, &tmp.path().join("fresh"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (o, want_listed) = listed(&claude, &tmp.path().join("fresh-ls"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(want_hits.len() >= 10, "{} hits", want_hits.len());
    // Each project has hits, so damage to any of them matters.
    for p in 0..3 {
        assert!(
            want_hits.iter().any(|h| h.contains(&format!("/-p{p}/"))),
            "no hit in -p{p}"
        );
    }
    let current = tmp.path().join("current");
    assert_eq!(hits(&claude, &current).1, want_hits);
    // Stale: built while one transcript of each project was shorter (the next search appends
    // its lines) and another one said something else (the next search deletes its documents).
    let stale = tmp.path().join("stale");
    let originals: Vec<(PathBuf, Vec<u8>)> = (0..3)
        .flat_map(|p| {
            let mut of: Vec<&PathBuf> = sessions
                .iter()
                .filter(|s| s.to_string_lossy().contains(&format!("/-p{p}/")))
                .collect();
            of.sort();
            of.into_iter().take(2)
        })
        .map(|s| (s.clone(), std::fs::read(s).unwrap()))
        .collect();
    for (i, (path, bytes)) in originals.iter().enumerate() {
        let cut = if i % 2 == 0 {
            // About its first half, whole lines.
            let end = bytes[..bytes.len() / 2]
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(0, |i| i + 1);
            bytes[..end].to_vec()
        } else {
            bytes
                .iter()
                .map(|b| if *b == b'e' { b'o' } else { *b })
                .collect()
        };
        std::fs::write(path, cut).unwrap();
    }
    let o = run(&claude, &stale, &["search", QUERY, "--all"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for (i, (path, bytes)) in originals.iter().enumerate() {
        if i % 2 == 0 {
            // Grown in place: the rest of its lines appended.
            let have = std::fs::metadata(path).unwrap().len() as usize;
            let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
            std::io::Write::write_all(&mut f, &bytes[have..]).unwrap();
        } else {
            std::fs::write(path, bytes).unwrap();
        }
        util::age(path);
    }
    Corpus {
        tmp,
        claude,
        current,
        stale,
        want_hits,
        want_listed,
    }
}

/// The search index folders of an index folder (one per project).
fn search_dirs(index: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(index.join("search"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

#[test]
fn any_damage_to_the_search_index_is_repaired_in_the_same_call() {
    let c = corpus();
    let mut rng = ChaCha8Rng::seed_from_u64(294);
    let mut failures = Vec::new();
    let mut by_kind: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let work = c.tmp.path().join("rounds");
    for round in 0..ROUNDS {
        let kind = KINDS[round % KINDS.len()];
        let from = if round % 2 == 0 { &c.current } else { &c.stale };
        let index = work.join(format!("{round}"));
        util::copy_tree(from, &index);
        let dirs = search_dirs(&index);
        let dir = dirs[rng.random_range(0..dirs.len())].clone();
        let what = damage(&dir, kind, &mut rng);
        let mut fail = |why: String| failures.push(format!("round {round} ({what}): {why}"));
        let tally = by_kind.entry(kind).or_default();
        tally.0 += 1;
        // Every third round asks through `ls --search` instead.
        let (o, ok) = if round % 3 == 2 {
            let (o, got) = listed(&c.claude, &index);
            let ok = got == c.want_listed;
            (o, ok)
        } else {
            let (o, got) = hits(&c.claude, &index);
            let ok = got == c.want_hits;
            (o, ok)
        };
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        let mut bad = false;
        if stderr.contains("panicked") || o.status.code() != Some(0) {
            fail(format!("exit {:?}: {}", o.status, stderr.trim()));
            bad = true;
        } else if !ok {
            fail(format!("other hits; stderr {}", stderr.trim()));
            bad = true;
        }
        // Every third round: damage of the same kind on another copy, then `rebuild` alone must
        // leave a sound, current index (a catch-up after it has nothing to read again).
        if round % 3 == 0 {
            let index = work.join(format!("{round}-rebuild"));
            util::copy_tree(from, &index);
            let mut again = ChaCha8Rng::seed_from_u64(round as u64);
            damage(&dir_in(&index, &dir), kind, &mut again);
            let o = run(&c.claude, &index, &["rebuild"]);
            let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
            if stderr.contains("panicked") || !o.status.success() {
                fail(format!("rebuild: exit {:?}: {}", o.status, stderr.trim()));
                bad = true;
            } else {
                let done = catch_up_in_a_child(&c.claude, &index);
                if done != "reindexed 0 appended 0" {
                    fail(format!("rebuild left the search index to redo: {done}"));
                    bad = true;
                }
                let (o, got) = hits(&c.claude, &index);
                if !o.status.success() || got != c.want_hits {
                    fail(format!(
                        "search after rebuild: exit {:?}, {} hits of {}",
                        o.status,
                        got.len(),
                        c.want_hits.len()
                    ));
                    bad = true;
                }
            }
        }
        if bad {
            tally.1 += 1;
        }
        std::fs::remove_dir_all(&work).unwrap();
    }
    let panics = failures.iter().filter(|f| f.contains("panicked")).count();
    eprintln!("{ROUNDS} rounds; failed by kind (rounds, failed): {by_kind:?}; {panics} panicked");
    assert!(
        failures.is_empty(),
        "{} of {ROUNDS} rounds failed ({panics} panicked):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

const ROLE: &str = "CHAINLOG_SEARCH_DAMAGE_CHILD";

/// Child role: catches up the search index of `$ROLE` (claude dir, index dir) and prints what
/// it did. A child, so that a damaged index tantivy aborts on fails the round, not the test.
#[test]
fn catch_up_role() {
    let Some(dirs) = std::env::var_os(ROLE) else {
        return;
    };
    let dirs: Vec<PathBuf> = std::env::split_paths(&dirs).collect();
    let all = SearchOptions {
        all: true,
        ..SearchOptions::default()
    };
    match Store::open(&dirs[0], &dirs[1]).and_then(|s| s.search_catch_up(&all)) {
        Ok(done) => println!(
            "CATCH-UP reindexed {} appended {}",
            done.reindexed, done.appended
        ),
        Err(e) => println!("CATCH-UP failed: {e}"),
    }
}

/// What a catch-up of the search indexes in `index` did, run in a child process.
fn catch_up_in_a_child(claude: &Path, index: &Path) -> String {
    let o = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &util::test_name(module_path!(), "catch_up_role"),
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, std::env::join_paths([claude, index]).unwrap())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .find_map(|l| l.split_once("CATCH-UP ").map(|(_, done)| done.to_owned()))
        .unwrap_or_else(|| format!("the catch-up ended with {}", o.status))
}

/// The folder of `index` that is `dir` in another copy of the index folder.
fn dir_in(index: &Path, dir: &Path) -> PathBuf {
    index.join("search").join(dir.file_name().unwrap())
}
