//! Full-text search (`chainlog search`, `ls --search`): finds words in prompts, answers, tool
//! calls and results; marks dead branches; follows appends and rewrites by tailing; and the
//! second search reads no transcript that did not change.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use chainlog::Store;
use chainlog::search::SearchOptions;
use serde_json::json;

const CWD: &str = "/work/demo";

fn line(uuid: u32, parent: Option<u32>, ty: &str, content: &serde_json::Value) -> String {
    let id = |n: u32| format!("00000000-0000-4000-8000-{n:012}");
    let message = if ty == "user" {
        json!({"role": "user", "content": content})
    } else {
        json!({"id": format!("msg_{uuid}"), "type": "message", "role": "assistant", "model": "m", "content": content})
    };
    let v = json!({
        "parentUuid": parent.map(id),
        "isSidechain": false,
        "type": ty,
        "message": message,
        "uuid": id(uuid),
        "timestamp": format!("2025-05-01T10:00:{:02}.000Z", uuid),
        "sessionId": "11111111-1111-4111-8111-111111111111",
        "cwd": CWD,
    });
    format!("{v}\n")
}

/// A session: a prompt, a Bash call running rsync and its result, then two answers to the
/// same result (the older one, mentioning "abandoned", is a dead branch).
fn session() -> String {
    [
        line(1, None, "user", &json!("back up the photos")),
        line(
            2,
            Some(1),
            "assistant",
            &json!([{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "rsync -a photos/ /mnt/backup/"}}]),
        ),
        line(
            3,
            Some(2),
            "user",
            &json!([{"type": "tool_result", "tool_use_id": "t1", "content": "sent 1,024 bytes"}]),
        ),
        line(4, Some(3), "assistant", &json!([{"type": "text", "text": "An abandoned answer."}])),
        line(5, Some(3), "assistant", &json!([{"type": "text", "text": "Backup finished."}])),
    ]
    .concat()
}

struct Fx {
    _tmp: tempfile::TempDir,
    claude: PathBuf,
    file: PathBuf,
    store: Store,
}

fn fx() -> Fx {
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    let project = claude.join("projects/-work-demo");
    std::fs::create_dir_all(&project).unwrap();
    let file = project.join("11111111-1111-4111-8111-111111111111.jsonl");
    std::fs::write(&file, session()).unwrap();
    let store = Store::open(&claude, tmp.path().join("index")).unwrap();
    Fx {
        _tmp: tmp,
        claude,
        file,
        store,
    }
}

/// An empty project folder in a new claude dir: (the temporary folder, the claude dir, the
/// project folder).
fn empty_project() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    let project = claude.join("projects/-work-demo");
    std::fs::create_dir_all(&project).unwrap();
    (tmp, claude, project)
}

/// Writes session number `s` (its id is `s` repeated, `ssssssss-1111-…`) into `project`: one
/// user prompt after the other, prompt `n` (from 1) with uuid `n`; returns its session id.
fn write_prompts(project: &Path, s: u32, prompts: impl IntoIterator<Item = String>) -> String {
    let sid = format!("{s}{s}{s}{s}{s}{s}{s}{s}-1111-4111-8111-111111111111");
    let mut text = String::new();
    for (n, prompt) in (1u32..).zip(prompts) {
        let l = line(n, (n > 1).then(|| n - 1), "user", &json!(prompt));
        text.push_str(&l.replace("11111111-1111-4111-8111-111111111111", &sid));
    }
    std::fs::write(project.join(format!("{sid}.jsonl")), text).unwrap();
    sid
}

fn all() -> SearchOptions {
    SearchOptions {
        all: true,
        ..SearchOptions::default()
    }
}

fn uuids(fx: &Fx, q: &str) -> Vec<(String, bool)> {
    fx.store
        .search(q, &all())
        .map(|f| f.hits)
        .unwrap()
        .into_iter()
        .map(|h| (h.uuid[h.uuid.len() - 2..].to_owned(), h.on_chain))
        .collect()
}

#[test]
fn finds_tool_commands_results_and_marks_branches() {
    let fx = fx();
    assert_eq!(uuids(&fx, "rsync"), [("02".to_owned(), true)]);
    assert_eq!(uuids(&fx, "1,024"), [("03".to_owned(), true)]);
    assert_eq!(
        uuids(&fx, "abandoned"),
        [("04".to_owned(), false)],
        "dead branch"
    );
    assert_eq!(uuids(&fx, "finished"), [("05".to_owned(), true)]);
    assert!(uuids(&fx, "nowhere").is_empty());
    let hit = &fx.store.search("rsync", &all()).unwrap().hits[0];
    assert!(hit.snippet.contains("[rsync]"), "{}", hit.snippet);
    assert_eq!(hit.path, fx.file);
}

#[test]
fn catch_up_tails_appends_and_notices_rewrites() {
    let fx = fx();
    let first = fx.store.search_catch_up(&all()).unwrap();
    assert_eq!((first.files, first.reindexed, first.appended), (1, 1, 0));
    // Nothing changed: no transcript is indexed again (written just before it was indexed,
    // its times prove nothing: the bytes before its end are compared).
    let again = fx.store.search_catch_up(&all()).unwrap();
    assert_eq!((again.reindexed, again.appended, again.compared), (0, 0, 1));
    // An append is read from the old end only.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&fx.file)
        .unwrap();
    f.write_all(line(6, Some(5), "user", &json!("now zip the archive")).as_bytes())
        .unwrap();
    drop(f);
    let grown = fx.store.search_catch_up(&all()).unwrap();
    assert_eq!((grown.reindexed, grown.appended), (0, 1));
    assert_eq!(uuids(&fx, "zip"), [("06".to_owned(), true)]);
    assert_eq!(
        uuids(&fx, "rsync").len(),
        1,
        "old documents are not duplicated"
    );
    // A same-length rewrite in place (a redaction): the old word must not be found.
    let text = std::fs::read_to_string(&fx.file)
        .unwrap()
        .replace("rsync", "xxxxx");
    std::fs::write(&fx.file, text).unwrap();
    let redone = fx.store.search_catch_up(&all()).unwrap();
    assert_eq!(redone.reindexed, 1);
    assert!(uuids(&fx, "rsync").is_empty());
    assert_eq!(uuids(&fx, "xxxxx").len(), 1);
    // A deleted transcript's documents go.
    std::fs::remove_file(&fx.file).unwrap();
    let gone = fx.store.search_catch_up(&all()).unwrap();
    assert_eq!(gone.dropped, 1);
    assert!(uuids(&fx, "zip").is_empty());
}

#[test]
fn the_search_index_is_a_cache() {
    let fx = fx();
    assert_eq!(uuids(&fx, "rsync").len(), 1);
    // Damage it: the next search rebuilds it and answers the same.
    let dir = fx.store.db_path(&fx.file).parent().unwrap().join("search");
    for e in walk(&dir) {
        std::fs::write(&e, b"garbage").unwrap();
    }
    assert_eq!(uuids(&fx, "rsync"), [("02".to_owned(), true)]);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out
}

#[test]
fn cli_search_and_ls_search() {
    let fx = fx();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_chainlog"))
            .arg("--claude-dir")
            .arg(&fx.claude)
            .arg("--index-dir")
            .arg(fx.store.db_path(&fx.file).parent().unwrap())
            .args(args)
            .output()
            .unwrap()
    };
    let o = run(&["--json", "search", "rsync", "--all"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let hit: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(hit["uuid"], "00000000-0000-4000-8000-000000000002");
    assert_eq!(hit["onChain"], true);
    assert_eq!(hit["schema"], 1);
    // `ls --search` finds the session by a word only its tool call holds.
    let o = run(&["--json", "ls", "--all", "--search", "rsync"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 1);
    let o = run(&["--json", "ls", "--all", "--search", "nowhere"]);
    assert!(o.stdout.is_empty());
    assert_eq!(run(&["search", "nowhere", "--all"]).status.code(), Some(1));
}

/// Every command `search` prints runs as printed (issue #33: a hit on a dead branch printed
/// `resume <id> --at <uuid>`, which refuses a message off the chosen chain): over each vendored
/// real claude dir (its path holds a space, so the printed `--claude-dir` must be quoted), every
/// printed command runs in a shell and exits 0 with the conversation up to that message. Hits
/// off the chosen chain are among them (the test says so), so the `--leaf` form is run too.
#[test]
fn every_printed_resume_command_runs_as_printed() {
    let tmp = tempfile::tempdir().unwrap();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_chainlog")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (mut ran, mut off_chain) = (0, 0);
    for real in std::fs::read_dir(crate::util::real_corpus())
        .unwrap()
        .flatten()
    {
        if !real.path().join("projects").is_dir() {
            continue;
        }
        let claude = tmp.path().join("a claude dir").join(real.file_name());
        crate::util::copy_tree(&real.path(), &claude);
        let index = tmp.path().join("index");
        for query in ["the", "error", "file"] {
            let o = Command::new(env!("CARGO_BIN_EXE_chainlog"))
                .arg("--claude-dir")
                .arg(&claude)
                .arg("--index-dir")
                .arg(&index)
                .args(["search", query, "--all", "--limit", "200"])
                .output()
                .unwrap();
            let printed = String::from_utf8_lossy(&o.stdout).into_owned();
            for cmd in printed
                .lines()
                .filter_map(|l| l.strip_prefix("    chainlog "))
            {
                let cmd = format!("chainlog {cmd} --format uuids");
                let uuid = cmd.split_whitespace().nth_back(2).unwrap().to_owned();
                let r = Command::new("sh")
                    .args(["-c", &cmd])
                    .env("PATH", &path)
                    .output()
                    .unwrap();
                assert!(
                    r.status.success(),
                    "{cmd}: exit {:?}: {}",
                    r.status,
                    String::from_utf8_lossy(&r.stderr)
                );
                // The conversation printed reaches the hit (tool results spliced after it may
                // follow).
                let out = String::from_utf8_lossy(&r.stdout);
                assert!(out.lines().any(|l| l == uuid), "{cmd}: {out}");
                ran += 1;
                off_chain += usize::from(cmd.contains(" --leaf "));
            }
        }
    }
    assert!(ran > 0, "no command was printed");
    assert!(
        off_chain > 0,
        "no hit off the chosen chain: the --leaf form went untried"
    );
}

/// Issue #33: one transcript that cannot be read does not fail `search --all`: the others are
/// searched and the unreadable one is named on standard error. Run as an unprivileged user
/// (root reads a file of mode 0000): `setpriv` to `nobody` when the tests run as root.
#[test]
fn search_all_skips_an_unreadable_transcript_and_says_so() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m));
    let tmp = tempfile::tempdir().unwrap();
    mode(tmp.path(), 0o755).unwrap();
    let claude = tmp.path().join("claude");
    let mut paths = Vec::new();
    for (project, sid) in [
        ("-work-a", "aaaaaaaa-1111-4111-8111-111111111111"),
        ("-work-b", "bbbbbbbb-1111-4111-8111-111111111111"),
    ] {
        let dir = claude.join("projects").join(project);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{sid}.jsonl"));
        std::fs::write(&path, session()).unwrap();
        paths.push(path);
    }
    for d in [claude.clone(), claude.join("projects")] {
        mode(&d, 0o755).unwrap();
    }
    let index = tmp.path().join("index");
    std::fs::create_dir_all(&index).unwrap();
    mode(&index, 0o777).unwrap();
    mode(&paths[1], 0o000).unwrap();
    let o = crate::util::run_unprivileged(
        tmp.path(),
        &[
            "--claude-dir",
            claude.to_str().unwrap(),
            "--index-dir",
            index.to_str().unwrap(),
            "search",
            "rsync",
            "--all",
        ],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(
        out.contains("aaaaaaaa"),
        "the readable session is searched: {out}"
    );
    assert!(!out.contains("bbbbbbbb"), "{out}");
    assert!(
        err.contains("skipped") && err.contains(paths[1].to_str().unwrap()),
        "the unreadable one is named: {err}"
    );
}

/// Issue #33: `search --since/--until` keeps the messages of those UTC days, as a condition of
/// the query (the limit counts only messages in range); a day that does not parse is exit 2.
#[test]
fn since_and_until_keep_the_messages_of_those_days() {
    let fx = fx();
    let june = fx.claude.join("projects/-work-june");
    std::fs::create_dir_all(&june).unwrap();
    let later = session().replace("2025-05-01T", "2025-06-10T").replace(
        "11111111-1111-4111-8111-111111111111",
        "22222222-1111-4111-8111-111111111111",
    );
    std::fs::write(
        june.join("22222222-1111-4111-8111-111111111111.jsonl"),
        later,
    )
    .unwrap();
    let sessions = |since: Option<&str>, until: Option<&str>, limit: usize| {
        let opts = SearchOptions {
            all: true,
            limit,
            days: chainlog::usage::DayRange {
                since: since.map(str::to_owned),
                until: until.map(str::to_owned),
            },
            ..SearchOptions::default()
        };
        let mut ids: Vec<String> = fx
            .store
            .search("rsync", &opts)
            .unwrap()
            .hits
            .into_iter()
            .map(|h| h.session_id[..8].to_owned())
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(sessions(None, None, 20), ["11111111", "22222222"]);
    assert_eq!(sessions(Some("2025-06-01"), None, 20), ["22222222"]);
    assert_eq!(sessions(None, Some("2025-05-31"), 20), ["11111111"]);
    assert_eq!(
        sessions(Some("2025-05-01"), Some("2025-05-01"), 20),
        ["11111111"]
    );
    assert!(sessions(Some("2025-07-01"), None, 20).is_empty());
    // One hit asked for, in range: the limit does not spend itself on May.
    assert_eq!(sessions(Some("2025-06-10"), None, 1), ["22222222"]);
    assert_eq!(sessions(None, Some("2025-05-01"), 1), ["11111111"]);
    let cli = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_chainlog"))
            .arg("--claude-dir")
            .arg(&fx.claude)
            .arg("--index-dir")
            .arg(fx.claude.with_file_name("index"))
            .args(["search", "rsync", "--all"])
            .args(extra)
            .output()
            .unwrap()
    };
    let o = cli(&["--since", "2025-06-01"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: Vec<&str> = out.lines().filter(|l| !l.starts_with(' ')).collect();
    assert!(rows.iter().any(|l| l.starts_with("22222222")), "{out}");
    assert!(!rows.iter().any(|l| l.starts_with("11111111")), "{out}");
    assert_eq!(cli(&["--since", "June"]).status.code(), Some(2));
    assert_eq!(
        cli(&["--since", "2025-06-02", "--until", "2025-06-01"])
            .status
            .code(),
        Some(2)
    );
}

/// The uuids of the reference loader's resume view of `path`.
fn reference_view(path: &Path) -> std::collections::HashSet<String> {
    use chainlog::reference::{ResolveOptions, Transcript, resolve};
    let t = Transcript::open(path).unwrap();
    resolve(&t, ResolveOptions::default())
        .unwrap()
        .chain
        .iter()
        .map(|l| t.names.name(l.uuid).clone())
        .collect()
}

/// Which hits are on the resume view is answered by the view the first search stores, a few
/// of its blocks read (`Found::resolved` counts the sessions that had to be resolved): equal
/// to the reference loader's view for sessions with every feature (spliced parallel results
/// put lines out of file order; compactions, rewinds and retries leave lines off it), also
/// after an append, which is resolved and stored again.
#[test]
fn hits_on_the_view_are_the_reference_views_lines() {
    use chainlog_gen::{GenOptions, generate, write_session};
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    // Views of several blocks (256 links each) with parallel results spliced out of file
    // order and branches off them, and small views with every feature.
    let mut long = GenOptions::plain(0, 4_000_000);
    long.retries = true;
    let mut rewound = GenOptions::plain(1, 2_000_000);
    rewound.rewinds = true;
    let paths: Vec<PathBuf> = [long, rewound, GenOptions::everything(2, 600_000)]
        .iter()
        .map(|opts| write_session(&claude.join("projects"), &generate(opts)).unwrap())
        .collect();
    // Past the racy window (100 ms) of the files' last write: an index state caught up within
    // it is not trusted later, and the view stored for it would not answer.
    let settle = || std::thread::sleep(std::time::Duration::from_millis(250));
    settle();
    let store = Store::open(&claude, tmp.path().join("index")).unwrap();
    let opts = SearchOptions {
        all: true,
        limit: 1_000_000,
        ..SearchOptions::default()
    };
    let check = |store: &Store| {
        let found = store.search("the OR src OR error", &opts).unwrap();
        let views: std::collections::HashMap<PathBuf, _> = paths
            .iter()
            .map(|p| (p.clone(), reference_view(p)))
            .collect();
        let mut on = 0;
        for h in &found.hits {
            let want = views[&h.path].contains(&h.uuid);
            assert_eq!(h.on_chain, want, "{} {}", h.path.display(), h.uuid);
            on += usize::from(want);
        }
        assert!(
            on > 1000 && found.hits.len() - on > 300,
            "{on} of {}",
            found.hits.len()
        );
        found.resolved
    };
    assert_eq!(
        check(&store),
        paths.len(),
        "the first search resolves each session"
    );
    assert_eq!(check(&store), 0, "the stored views answer");
    let again = Store::open(&claude, tmp.path().join("index")).unwrap();
    assert_eq!(check(&again), 0, "in another store too");
    let session = paths[0].file_stem().unwrap().to_str().unwrap().to_owned();
    let mut w = store
        .writer(
            paths[0].parent().unwrap(),
            &session,
            chainlog::WriterOptions::new("/work/demo"),
        )
        .unwrap();
    w.append(json!({"type": "user", "message": {"role": "user", "content": "the end"}}))
        .unwrap();
    w.close().unwrap();
    settle();
    assert_eq!(check(&store), 1, "the grown session is resolved again");
    assert_eq!(check(&store), 0);
}

/// The search index keeps no positions: a phrase is asked as its words, and the messages
/// found are checked with the phrase itself, so words in another order or apart do not
/// match, and an excluded phrase excludes only where it is written (`ls --search` too).
#[test]
fn phrases_match_only_their_words_in_order() {
    let fx = fx();
    assert_eq!(uuids(&fx, "\"backup finished\""), [("05".to_owned(), true)]);
    assert!(
        uuids(&fx, "\"finished backup\"").is_empty(),
        "another order"
    );
    assert!(uuids(&fx, "\"rsync photos\"").is_empty(), "words apart");
    assert_eq!(uuids(&fx, "\"rsync photos\"~1"), [("02".to_owned(), true)]);
    assert_eq!(
        uuids(&fx, "photos/"),
        [("01".to_owned(), true), ("02".to_owned(), true)]
    );
    assert_eq!(
        uuids(&fx, "backup -\"backup finished\""),
        [("02".to_owned(), true)]
    );
    let sessions = |q: &str| fx.store.matching_sessions(q, &all()).unwrap().len();
    assert_eq!(sessions("\"backup finished\""), 1);
    assert_eq!(sessions("\"finished backup\""), 0);
}

/// A phrase whose words are in thousands of messages, in order in only some: every one of
/// those is found and no other, though they are checked a chunk at a time and the index is
/// asked again for more; `ls --search` names each session that has one, and no other.
#[test]
fn a_phrase_among_thousands_of_its_words_apart() {
    let (tmp, claude, project) = empty_project();
    let mut want = Vec::new();
    for (s, in_order) in [(1, true), (2, false), (3, true)] {
        let prompts = (1..=1500u32).map(|n| {
            // Every 7th message of an in-order session holds the phrase; the others hold its
            // words reversed, or apart.
            let phrase = in_order && n % 7 == 0;
            if phrase {
                want.push(format!("{s}-{n}"));
            }
            match (phrase, n % 2) {
                (true, _) => format!("step {n}: alpha beta done"),
                (false, 0) => format!("step {n}: beta alpha done"),
                (false, _) => format!("step {n}: alpha then beta"),
            }
        });
        write_prompts(&project, s, prompts);
    }
    let store = Store::open(&claude, tmp.path().join("index")).unwrap();
    let opts = SearchOptions {
        all: true,
        limit: 100_000,
        ..SearchOptions::default()
    };
    let mut got: Vec<String> = store
        .search("\"alpha beta\"", &opts)
        .unwrap()
        .hits
        .iter()
        .map(|h| {
            let n: u32 = h.uuid[h.uuid.len() - 12..].parse().unwrap();
            format!("{}-{n}", &h.session_id[..1])
        })
        .collect();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    // Fewer than all: the first answers checked hold too few, so the index is asked again.
    let few = store
        .search(
            "\"alpha beta\"",
            &SearchOptions {
                limit: 300,
                ..opts.clone()
            },
        )
        .unwrap()
        .hits;
    assert_eq!(few.len(), 300);
    assert!(
        few.iter().all(|h| h.snippet.contains("[alpha] [beta]")),
        "{:?}",
        few[0]
    );
    let mut sessions: Vec<String> = store
        .matching_sessions("\"alpha beta\"", &opts)
        .unwrap()
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy()[..1].to_owned())
        .collect();
    sessions.sort();
    assert_eq!(sessions, ["1", "3"]);
}

/// A transcript indexed after its times settled is proved unchanged by its `stat` alone: the
/// next searches do not open it.
#[test]
fn a_settled_transcript_is_not_opened_again() {
    let fx = fx();
    // Past the racy window (100 ms) of its last write, then indexed.
    std::thread::sleep(std::time::Duration::from_millis(250));
    let first = fx.store.search_catch_up(&all()).unwrap();
    assert_eq!(first.reindexed, 1);
    for _ in 0..2 {
        let again = fx.store.search_catch_up(&all()).unwrap();
        assert_eq!((again.reindexed, again.appended, again.compared), (0, 0, 0));
    }
    assert_eq!(uuids(&fx, "rsync"), [("02".to_owned(), true)]);
}

/// A catch-up of 16 MiB or more indexes on two tantivy threads (a segment each): every message
/// is found, each unique word in the one message holding it, as a small catch-up finds them.
#[test]
fn a_big_first_build_on_two_threads_finds_every_message() {
    let (tmp, claude, project) = empty_project();
    // Three sessions of 3,000 messages of ~2 KiB: 18 MiB.
    let filler = "lorem ipsum dolor sit amet ".repeat(75);
    let mut marks = Vec::new();
    for s in 1..=3u32 {
        let sid = write_prompts(
            &project,
            s,
            (1..=3000u32).map(|n| format!("zqx{s}m{n} common {filler}")),
        );
        marks.extend(
            (1..=3000u32)
                .filter(|n| n % 97 == 0)
                .map(|n| (format!("zqx{s}m{n}"), sid.clone(), n)),
        );
    }
    let store = Store::open(&claude, tmp.path().join("index")).unwrap();
    let opts = SearchOptions {
        all: true,
        limit: 100_000,
        ..SearchOptions::default()
    };
    let built = store.search_catch_up(&opts).unwrap();
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    assert_eq!(built.threads, if cores > 1 { 2 } else { 1 }, "{built:?}");
    assert_eq!(store.search("common", &opts).unwrap().hits.len(), 9000);
    for (mark, sid, n) in &marks {
        let hits = store.search(mark, &opts).unwrap().hits;
        assert_eq!(hits.len(), 1, "{mark}");
        assert_eq!(&hits[0].session_id, sid, "{mark}");
        assert!(
            hits[0].uuid.ends_with(&format!("{n:012}")),
            "{mark}: {}",
            hits[0].uuid
        );
    }
    // One more message: a small catch-up, on one thread.
    write_prompts(&project, 4, ["zqxsmall common".to_owned()]);
    let small = store.search_catch_up(&opts).unwrap();
    assert_eq!((small.threads, small.reindexed), (1, 1), "{small:?}");
    assert_eq!(store.search("common", &opts).unwrap().hits.len(), 9001);
}
