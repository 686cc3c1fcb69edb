//! Token usage and its cost: `ls --json` carries each session file's usage, `chainlog usage`
//! reports it by day, project, model and session, costed from the price table.
//!
//! The expected numbers come from an oracle written here, independently of the library: every
//! line parsed with `serde_json`, assistant lines grouped by `message.id` with the largest of
//! each count, copies (`forkedFrom`, a foreign `requestSessionId`) and `<synthetic>` left out,
//! the day the first 10 characters of the response's first timestamp. Prices are typed in here
//! from Anthropic's published table, not read from chainlog's.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use chainlog::Store;
use chainlog::discovery::scan_session_facts;
use chainlog_gen::{Corruption, GenOptions, SidechainLayout, generate, write_session};
use serde_json::{Value, json};

use super::util;

/// Input, output, cache write, cache read, and the number of responses.
type Counts = [u64; 5];

/// (day, model) → counts, by the oracle, over `files`.
fn oracle(files: &[PathBuf]) -> BTreeMap<(String, String), Counts> {
    let mut out: BTreeMap<(String, String), Counts> = BTreeMap::new();
    for f in files {
        let bytes = std::fs::read(f).unwrap();
        // message.id → (day, model, counts), in order of first appearance.
        let mut responses: Vec<(String, String, [u64; 4])> = Vec::new();
        let mut by_id: BTreeMap<String, usize> = BTreeMap::new();
        for line in bytes.split(|&b| b == b'\n') {
            let Ok(v) = serde_json::from_slice::<Value>(line) else {
                continue;
            };
            if v["type"] != "assistant" || v.get("forkedFrom").is_some_and(|f| !f.is_null()) {
                continue;
            }
            if let Some(r) = v["requestSessionId"].as_str()
                && Some(r) != v["sessionId"].as_str()
            {
                continue;
            }
            let m = &v["message"];
            let Some(usage) = m.get("usage").filter(|u| u.is_object()) else {
                continue;
            };
            let n = |k: &str| usage[k].as_u64().unwrap_or(0);
            let counts = [
                n("input_tokens"),
                n("output_tokens"),
                n("cache_creation_input_tokens"),
                n("cache_read_input_tokens"),
            ];
            let id = m["id"]
                .as_str()
                .map_or_else(|| format!("uuid:{}", v["uuid"]), str::to_owned);
            if let Some(&i) = by_id.get(&id) {
                for (have, new) in responses[i].2.iter_mut().zip(counts) {
                    *have = (*have).max(new);
                }
                continue;
            }
            by_id.insert(id, responses.len());
            let day = v["timestamp"]
                .as_str()
                .unwrap_or("")
                .get(..10)
                .unwrap_or("");
            let model = m["model"].as_str().unwrap_or("").to_owned();
            responses.push((day.to_owned(), model, counts));
        }
        for (day, model, c) in responses {
            if model == "<synthetic>" {
                continue;
            }
            let e = out.entry((day, model)).or_default();
            for i in 0..4 {
                e[i] += c[i];
            }
            e[4] += 1;
        }
    }
    out
}

/// USD per million tokens (input, output, cache write, cache read), as published.
fn price(model: &str) -> Option<[f64; 4]> {
    if model.starts_with("claude-opus-4-5-") {
        Some([5.0, 25.0, 6.25, 0.5])
    } else if model.starts_with("claude-sonnet-4-5-") || model.starts_with("claude-sonnet-4-2025") {
        Some([3.0, 15.0, 3.75, 0.3])
    } else {
        None
    }
}

fn cost(model: &str, c: &Counts) -> Option<f64> {
    let p = price(model)?;
    #[expect(clippy::cast_precision_loss, reason = "test counts are small")]
    Some((0..4).map(|i| c[i] as f64 / 1e6 * p[i]).sum())
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(1.0)
}

/// `{"inputTokens":…}` of `c`.
fn tokens(c: &Counts) -> Value {
    json!({
        "inputTokens": c[0],
        "outputTokens": c[1],
        "cacheCreationInputTokens": c[2],
        "cacheReadInputTokens": c[3],
    })
}

/// Sums the counts of `rows` whose key `keep` accepts.
fn sum(rows: &BTreeMap<(String, String), Counts>, keep: impl Fn(&str, &str) -> bool) -> Counts {
    let mut s = [0; 5];
    for ((day, model), c) in rows {
        if keep(day, model) {
            for i in 0..5 {
                s[i] += c[i];
            }
        }
    }
    s
}

struct Dirs {
    tmp: tempfile::TempDir,
}

impl Dirs {
    fn new() -> Dirs {
        Dirs {
            tmp: tempfile::tempdir().unwrap(),
        }
    }
    fn claude(&self) -> PathBuf {
        self.tmp.path().join("claude")
    }
    fn projects(&self) -> PathBuf {
        self.claude().join("projects")
    }
    fn index(&self) -> PathBuf {
        self.tmp.path().join("index")
    }
    /// `chainlog --claude-dir … --index-dir … ARGS`: (exit code, stdout, stderr).
    fn run(&self, args: &[&str]) -> (i32, String, String) {
        util::chainlog_in(&self.claude(), &self.index(), args)
    }
    /// The `--json` lines of a successful run.
    fn json(&self, args: &[&str]) -> Vec<Value> {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let (code, out, err) = self.run(&all);
        assert_eq!(code, 0, "{args:?}: {err}");
        out.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// Every `.jsonl` file below `dir`.
fn transcripts(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(transcripts(&p));
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Checks a report row's models against the oracle's counts for them, costs included.
fn check_models(row: &Value, want: &BTreeMap<String, Counts>) {
    let models = row["models"].as_array().unwrap();
    assert_eq!(models.len(), want.len(), "{row}");
    let mut row_cost = 0.0;
    for m in models {
        let name = m["model"].as_str().unwrap();
        let c = &want[name];
        assert_eq!(m["tokens"], tokens(c), "{name} in {row}");
        assert_eq!(m["responses"], c[4], "{name} in {row}");
        match cost(name, c) {
            Some(usd) => {
                let got = m["costUsd"].as_f64().unwrap();
                assert!(close(got, usd), "{name}: {got} != {usd}");
                row_cost += usd;
            }
            None => assert!(m["costUsd"].is_null(), "{name} has no price"),
        }
    }
    let all = sum_models(want);
    assert_eq!(row["tokens"], tokens(&all), "{row}");
    assert!(close(row["costUsd"].as_f64().unwrap(), row_cost), "{row}");
    assert_eq!(
        row.as_object().unwrap().keys().next_back().unwrap(),
        "schema"
    );
}

fn sum_models(m: &BTreeMap<String, Counts>) -> Counts {
    let mut s = [0; 5];
    for c in m.values() {
        for i in 0..5 {
            s[i] += c[i];
        }
    }
    s
}

/// Generated sessions (sub-agents in every layout, rewinds, retries, compactions) in two
/// projects: `ls --json` carries each session file's usage, and `chainlog usage` reports by
/// day, project, model and session exactly what the oracle counts, costed at the published
/// prices.
#[test]
fn usage_of_generated_sessions_is_their_known_token_counts() {
    let d = Dirs::new();
    let mut sessions = Vec::new();
    for seed in 1..=4u64 {
        let opts = GenOptions {
            sidechains: SidechainLayout::All,
            // A lone surrogate is repaired by chainlog, refused by `serde_json`: the oracle
            // would drop a line chainlog counts.
            corruption: Corruption {
                lone_surrogate: false,
                ..Corruption::all()
            },
            ..GenOptions::everything(seed, 30_000)
        };
        let mut s = generate(&opts);
        s.cwd = if seed <= 2 { "/work/a" } else { "/work/b" }.to_owned();
        let main = write_session(&d.projects(), &s).unwrap();
        sessions.push((s.session_id.clone(), main));
    }
    let all_files = transcripts(&d.projects());
    let everything = oracle(&all_files);
    assert!(everything.len() >= 4, "{everything:?}");
    assert!(
        everything.values().all(|c| c[1] > 0 && c[3] > 0),
        "{everything:?}"
    );

    check_ls(&d, sessions.len());
    check_report(&d, &sessions, &everything);
}

/// `ls --json`: each session file's own rows, as the full scan computes them.
fn check_ls(d: &Dirs, sessions: usize) {
    let listed = d.json(&["ls", "--all"]);
    assert_eq!(listed.len(), sessions);
    for row in &listed {
        let path = PathBuf::from(row["path"].as_str().unwrap());
        let want: Vec<Value> = oracle(std::slice::from_ref(&path))
            .iter()
            .map(|((day, model), c)| {
                json!({"day": day, "model": model, "responses": c[4], "tokens": tokens(c)})
            })
            .collect();
        assert!(!want.is_empty());
        assert_eq!(row["usage"], Value::Array(want), "{}", path.display());
        let keys: Vec<&String> = row.as_object().unwrap().keys().collect();
        assert_eq!(keys[keys.len() - 2..], ["usage", "schema"]);
        // The index's facts are the full scan's.
        assert_eq!(
            serde_json::to_value(scan_session_facts(&path).unwrap().usage).unwrap(),
            row["usage"]
        );
    }
    // The table's tokens column: each file's total, shortened (`12.3k`).
    let (code, table, err) = d.run(&["ls", "--all"]);
    assert_eq!(code, 0, "{err}");
    assert!(table.lines().next().unwrap().contains("tokens"), "{table}");
    for row in &listed {
        let path = PathBuf::from(row["path"].as_str().unwrap());
        let total: u64 = oracle(std::slice::from_ref(&path))
            .values()
            .map(|c| c[0] + c[1] + c[2] + c[3])
            .sum();
        #[expect(clippy::cast_precision_loss, reason = "shown with one decimal")]
        let shown = match total {
            0..1_000 => total.to_string(),
            1_000..999_950 => format!("{:.1}k", total as f64 / 1e3),
            _ => format!("{:.1}M", total as f64 / 1e6),
        };
        let id = &row["sessionId"].as_str().unwrap()[..8];
        let line = table.lines().find(|l| l.contains(id)).unwrap();
        assert!(
            line.split_whitespace().any(|w| w == shown),
            "{shown} tokens of {id}: {line}"
        );
    }
}

/// `ls --since/--until` keep the sessions whose last message (first with `--sort created`)
/// is in the range; a bad day is exit 2.
#[test]
fn ls_since_and_until_keep_the_sessions_of_the_days() {
    let d = Dirs::new();
    for seed in 1..=3u64 {
        let s = generate(&GenOptions::plain(seed, 10_000));
        write_session(&d.projects(), &s).unwrap();
    }
    let all = d.json(&["ls", "--all"]);
    assert_eq!(all.len(), 3);
    let day = |r: &Value, k: &str| r[k].as_str().unwrap()[..10].to_owned();
    let mut days: Vec<String> = all.iter().map(|r| day(r, "modified")).collect();
    days.sort();
    days.dedup();
    assert!(days.len() >= 2, "{days:?}");
    let ids = |rows: &[Value]| -> Vec<String> {
        let mut v: Vec<String> = rows.iter().map(|r| r["sessionId"].to_string()).collect();
        v.sort();
        v
    };
    for (i, dd) in days.iter().enumerate() {
        let want: Vec<Value> = all
            .iter()
            .filter(|r| day(r, "modified") == *dd)
            .cloned()
            .collect();
        assert_eq!(
            ids(&d.json(&["ls", "--all", "--since", dd, "--until", dd])),
            ids(&want)
        );
        let later: Vec<Value> = all
            .iter()
            .filter(|r| day(r, "modified") >= *dd)
            .cloned()
            .collect();
        assert_eq!(
            ids(&d.json(&["ls", "--all", "--since", dd])),
            ids(&later),
            "{i}"
        );
        let created: Vec<Value> = all
            .iter()
            .filter(|r| day(r, "created") <= *dd)
            .cloned()
            .collect();
        assert_eq!(
            ids(&d.json(&["ls", "--all", "--sort", "created", "--until", dd])),
            ids(&created)
        );
    }
    let (code, _, err) = d.run(&["ls", "--all", "--since", "2025-13-01"]);
    assert_eq!((code, err.contains("not a day")), (2, true), "{err}");
}

/// `chainlog usage`: by day, project, session and model, `--since`/`--until`, the table.
fn check_report(
    d: &Dirs,
    sessions: &[(String, PathBuf)],
    everything: &BTreeMap<(String, String), Counts>,
) {
    let project_files = |key: &str| transcripts(&d.projects().join(key));
    // By day (the default), each day's models.
    let by_day = d.json(&["usage"]);
    let (total, rows) = by_day.split_last().unwrap();
    let days: Vec<&str> = rows.iter().map(|r| r["day"].as_str().unwrap()).collect();
    let mut want_days: Vec<&str> = everything.keys().map(|(d, _)| d.as_str()).collect();
    want_days.dedup();
    assert_eq!(days, want_days);
    for row in rows {
        let day = row["day"].as_str().unwrap();
        let want: BTreeMap<String, Counts> = everything
            .iter()
            .filter(|((d, _), _)| d == day)
            .map(|((_, m), c)| (m.clone(), *c))
            .collect();
        check_models(row, &want);
    }
    assert_eq!(total["total"], true);
    assert_eq!(total["estimate"], true);
    let by_model: BTreeMap<String, Counts> = everything
        .keys()
        .map(|(_, m)| (m.clone(), sum(everything, |_, mm| mm == m)))
        .collect();
    check_models(total, &by_model);
    assert!(total["pricesChecked"].as_str().unwrap().len() == 10);

    // By project: each project's files, sub-agents included.
    let by_project = d.json(&["usage", "--by", "project"]);
    assert_eq!(by_project.len(), 3);
    for row in &by_project[..2] {
        let key = row["project"].as_str().unwrap();
        let o = oracle(&project_files(key));
        let want = o
            .keys()
            .map(|(_, m)| (m.clone(), sum(&o, |_, mm| mm == m)))
            .collect();
        check_models(row, &want);
    }

    // --project narrows the report to one project (given by key).
    let only = d.json(&["usage", "--project", "-work-b", "--by", "project"]);
    assert_eq!(only.len(), 2, "{only:?}");
    assert_eq!(only[0]["project"], "-work-b");
    assert_eq!(only[1]["tokens"], only[0]["tokens"]);

    // By session: the session file and its agent files.
    let by_session = d.json(&["usage", "--by", "session"]);
    assert_eq!(by_session.len(), sessions.len() + 1);
    for (sid, main) in sessions {
        let row = by_session
            .iter()
            .find(|r| r["session"] == sid.as_str())
            .unwrap();
        let mut files: Vec<PathBuf> = transcripts(main.parent().unwrap())
            .into_iter()
            .filter(|p| {
                p == main
                    || p.starts_with(main.with_extension(""))
                    || std::fs::read_to_string(p).is_ok_and(|t| {
                        p.file_name()
                            .unwrap()
                            .to_str()
                            .unwrap()
                            .starts_with("agent-")
                            && t.contains(&format!("\"sessionId\":\"{sid}\""))
                    })
            })
            .collect();
        files.dedup();
        assert!(files.len() > 1, "{sid} has sub-agent files");
        let o = oracle(&files);
        let want = o
            .keys()
            .map(|(_, m)| (m.clone(), sum(&o, |_, mm| mm == m)))
            .collect();
        check_models(row, &want);
    }

    // --since/--until keep the days in range, both ends included.
    let (first, last) = (want_days[0], want_days[want_days.len() - 1]);
    let one = d.json(&["usage", "--since", last, "--until", last, "--by", "model"]);
    let (total, _) = one.split_last().unwrap();
    let want: BTreeMap<String, Counts> = everything
        .iter()
        .filter(|((d, _), _)| d == last)
        .map(|((_, m), c)| (m.clone(), *c))
        .collect();
    check_models(total, &want);
    let none = d.json(&["usage", "--until", &format!("{}-01", &first[..7])]);
    if first.ends_with("-01") {
        assert!(none.len() >= 2);
    } else {
        assert_eq!(none.len(), 1, "only the total: {none:?}");
        assert_eq!(none[0]["tokens"], tokens(&[0; 5]));
    }

    // The table says the costs are estimates, and from which table.
    let (code, table, _) = d.run(&["usage"]);
    assert_eq!(code, 0);
    assert!(table.contains("Costs (USD) are estimates"), "{table}");
    assert!(table.lines().any(|l| l.starts_with("total ")), "{table}");
    assert!(table.lines().all(|l| l.chars().count() <= 80), "{table}");
    let usd = cost_total(everything);
    assert!(
        table.contains(&format!("${usd:.2}")),
        "{usd:.2} in\n{table}"
    );
}

fn cost_total(rows: &BTreeMap<(String, String), Counts>) -> f64 {
    rows.iter().filter_map(|((_, m), c)| cost(m, c)).sum()
}

const SID: &str = "11111111-1111-4111-8111-111111111111";

/// An assistant line of response `id`.
fn assistant(uuid: u32, id: &str, model: &str, ts: &str, usage: [u64; 4], extra: &str) -> String {
    format!(
        r#"{{"parentUuid":null,"isSidechain":false,"type":"assistant","uuid":"00000000-0000-4000-8000-{uuid:012}","timestamp":"{ts}","sessionId":"{SID}","cwd":"/w"{extra},"message":{{"id":"{id}","model":"{model}","role":"assistant","content":[{{"type":"text","text":"hi"}}],"usage":{{"input_tokens":{},"output_tokens":{},"cache_creation_input_tokens":{},"cache_read_input_tokens":{}}}}}}}"#,
        usage[0], usage[1], usage[2], usage[3]
    ) + "\n"
}

const SONNET: &str = "claude-sonnet-4-5-20250929";
const FUTURE: &str = "claude-opus-9-20300101";

/// A session with responses on two days, a response over several lines, copies from other
/// sessions, a `<synthetic>` line and a model the table does not price.
fn hand_session() -> String {
    let mut s = String::new();
    writeln!(
        s,
        r#"{{"parentUuid":null,"isSidechain":false,"type":"user","uuid":"00000000-0000-4000-8000-000000000000","timestamp":"2025-03-01T23:59:00.000Z","sessionId":"{SID}","cwd":"/w","message":{{"role":"user","content":"go"}}}}"#
    )
    .unwrap();
    s += &assistant(
        1,
        "m1",
        SONNET,
        "2025-03-01T23:59:58.000Z",
        [10, 2, 100, 1000],
        "",
    );
    // The same response's next line, after midnight: still the first day, larger output.
    s += &assistant(
        2,
        "m1",
        SONNET,
        "2025-03-02T00:00:01.000Z",
        [10, 90, 100, 1000],
        "",
    );
    s += &assistant(
        3,
        "m2",
        SONNET,
        "2025-03-02T10:00:00.000Z",
        [1, 1, 0, 0],
        "",
    );
    s += &assistant(
        4,
        "m3",
        FUTURE,
        "2025-03-02T11:00:00.000Z",
        [7, 7, 7, 7],
        "",
    );
    let fork =
        r#","forkedFrom":{"sessionId":"22222222-2222-4222-8222-222222222222","messageUuid":null}"#;
    s += &assistant(
        5,
        "m4",
        SONNET,
        "2025-03-02T12:00:00.000Z",
        [500, 500, 500, 500],
        fork,
    );
    let copied = r#","requestSessionId":"22222222-2222-4222-8222-222222222222""#;
    s += &assistant(
        6,
        "m5",
        SONNET,
        "2025-03-02T12:00:00.000Z",
        [600, 600, 0, 0],
        copied,
    );
    s += &assistant(
        7,
        "m6",
        "<synthetic>",
        "2025-03-02T12:00:00.000Z",
        [0, 0, 0, 0],
        "",
    );
    s
}

fn rows_of(f: &chainlog::SessionFacts) -> Vec<(String, String, u64, [u64; 4])> {
    f.usage
        .iter()
        .map(|r| {
            let t = &r.tokens;
            (
                r.day.clone(),
                r.model.clone(),
                r.responses,
                [
                    t.input_tokens,
                    t.output_tokens,
                    t.cache_creation_input_tokens,
                    t.cache_read_input_tokens,
                ],
            )
        })
        .collect()
}

/// Usage read through the index (the listing table) is the full scan's, before and after an
/// append; responses count once, by the day of their first line; copies and `<synthetic>` are
/// left out.
#[test]
fn the_index_and_the_full_scan_agree_on_usage_after_an_append() {
    let d = Dirs::new();
    let project = d.projects().join("-w");
    std::fs::create_dir_all(&project).unwrap();
    let path = project.join(format!("{SID}.jsonl"));
    std::fs::write(&path, hand_session()).unwrap();
    util::age(&path);
    let store = Store::open(d.claude(), d.index()).unwrap();
    let s = |day: &str, model: &str, n, c| (day.to_owned(), model.to_owned(), n, c);
    let want = vec![
        s("2025-03-01", SONNET, 1, [10, 90, 100, 1000]),
        s("2025-03-02", FUTURE, 1, [7, 7, 7, 7]),
        s("2025-03-02", SONNET, 1, [1, 1, 0, 0]),
    ];
    let mut cache = store.facts_cache();
    let indexed = cache.facts(&path).unwrap();
    cache.flush().unwrap();
    assert_eq!(rows_of(&indexed), want);
    assert_eq!(indexed, scan_session_facts(&path).unwrap());
    // The oracle agrees.
    let o = oracle(std::slice::from_ref(&path));
    let from_oracle: Vec<_> = o
        .iter()
        .map(|((d, m), c)| (d.clone(), m.clone(), c[4], [c[0], c[1], c[2], c[3]]))
        .collect();
    assert_eq!(from_oracle, want);

    // A second read answers from the listing table.
    let mut cache = store.facts_cache();
    assert_eq!(cache.facts(&path).unwrap(), indexed);
    assert_eq!((cache.scanned, cache.cached), (0, 1));
    drop(cache);

    // Append: a new response and a later line of an old one with a larger output.
    let mut more = String::new();
    more += &assistant(
        8,
        "m7",
        SONNET,
        "2025-03-03T09:00:00.000Z",
        [3, 4, 5, 6],
        "",
    );
    more += &assistant(
        9,
        "m2",
        SONNET,
        "2025-03-03T09:00:01.000Z",
        [1, 50, 0, 0],
        "",
    );
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, more.as_bytes()))
        .unwrap();
    util::age(&path);
    let mut cache = store.facts_cache();
    let after = cache.facts(&path).unwrap();
    assert_eq!(cache.scanned, 1);
    cache.flush().unwrap();
    assert_eq!(after, scan_session_facts(&path).unwrap());
    assert_eq!(
        rows_of(&after),
        vec![
            s("2025-03-01", SONNET, 1, [10, 90, 100, 1000]),
            s("2025-03-02", FUTURE, 1, [7, 7, 7, 7]),
            s("2025-03-02", SONNET, 1, [1, 50, 0, 0]),
            s("2025-03-03", SONNET, 1, [3, 4, 5, 6]),
        ]
    );
    // And the command reads the same.
    let listed = d.json(&["ls", "--all"]);
    assert_eq!(
        listed[0]["usage"],
        serde_json::to_value(&after.usage).unwrap()
    );
}

/// A model the table does not know is counted but not priced, and said so; `--prices FILE`
/// prices it (and can change a shipped price); a bad file is an error (exit 2).
#[test]
fn unknown_models_are_unpriced_until_a_price_file_names_them() {
    let d = Dirs::new();
    let project = d.projects().join("-w");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join(format!("{SID}.jsonl")), hand_session()).unwrap();

    let rows = d.json(&["usage", "--by", "model"]);
    let (total, rows) = rows.split_last().unwrap();
    let future = rows.iter().find(|r| r["model"] == FUTURE).unwrap();
    assert!(future["costUsd"].as_f64().unwrap() == 0.0);
    assert_eq!(future["unpricedTokens"], 28);
    assert!(future["models"][0]["costUsd"].is_null());
    assert_eq!(total["unpricedModels"], json!([FUTURE]));
    let sonnet = cost(SONNET, &[11, 91, 100, 1000, 2]).unwrap();
    assert!(close(total["costUsd"].as_f64().unwrap(), sonnet));
    let (code, table, _) = d.run(&["usage", "--by", "model"]);
    assert_eq!(code, 0);
    let line = table.lines().find(|l| l.starts_with(FUTURE)).unwrap();
    assert!(line.trim_end().ends_with('?'), "{line}");
    assert!(table.contains(&format!("No price for {FUTURE}")), "{table}");
    let total_line = table.lines().find(|l| l.starts_with("total")).unwrap();
    assert!(total_line.trim_end().ends_with("+?"), "{total_line}");

    let file = d.tmp.path().join("prices.json");
    std::fs::write(
        &file,
        r#"{"checked":"2031-05-06","models":[
            {"model":"claude-opus-9","input":100,"output":0,"cacheWrite":0,"cacheRead":0},
            {"model":"claude-sonnet-4-5","input":0,"output":1000,"cacheWrite":0,"cacheRead":0}]}"#,
    )
    .unwrap();
    let rows = d.json(&["usage", "--by", "model", "--prices", file.to_str().unwrap()]);
    let (total, rows) = rows.split_last().unwrap();
    let future = rows.iter().find(|r| r["model"] == FUTURE).unwrap();
    assert!(close(
        future["costUsd"].as_f64().unwrap(),
        7.0 * 100.0 / 1e6
    ));
    assert_eq!(future["unpricedTokens"], 0);
    assert_eq!(total["pricesChecked"], "2031-05-06");
    assert_eq!(total["unpricedModels"], json!([]));
    assert!(close(
        total["costUsd"].as_f64().unwrap(),
        (700.0 + 91.0 * 1000.0) / 1e6
    ));

    for bad in [
        "not json",
        r#"{"checked":"2031-05-06","models":[{"model":"x","input":1}]}"#,
    ] {
        std::fs::write(&file, bad).unwrap();
        let (code, _, err) = d.run(&["usage", "--prices", file.to_str().unwrap()]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("not a price table"), "{err}");
    }
    let (code, _, err) = d.run(&["usage", "--prices", "/no/such/file"]);
    assert_eq!((code, err.contains("cannot read")), (2, true), "{err}");
    let (code, _, err) = d.run(&["usage", "--since", "March"]);
    assert_eq!((code, err.contains("not a day")), (2, true), "{err}");
    let (code, _, err) = d.run(&["usage", "--since", "2025-03-02", "--until", "2025-03-01"]);
    assert_eq!((code, err.contains("after")), (2, true), "{err}");
}

/// The real transcripts (responses spread over several lines whose `output_tokens` grows,
/// sub-agent files): `chainlog usage` per model is what the oracle counts.
#[test]
fn real_transcripts_usage_is_the_oracles() {
    let mut checked = 0;
    for e in std::fs::read_dir(util::real_corpus()).unwrap().flatten() {
        let claude = e.path();
        if !claude.join("projects").is_dir() {
            continue;
        }
        let index = tempfile::tempdir().unwrap();
        let out = util::chainlog(&[
            "--claude-dir",
            claude.to_str().unwrap(),
            "--index-dir",
            index.path().to_str().unwrap(),
            "--json",
            "usage",
            "--by",
            "model",
        ]);
        assert!(out.status.success(), "{}", claude.display());
        let lines: Vec<Value> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let o = oracle(&transcripts(&claude.join("projects")));
        let want: BTreeMap<String, Counts> = o
            .keys()
            .map(|(_, m)| (m.clone(), sum(&o, |_, mm| mm == m)))
            .collect();
        assert!(!want.is_empty(), "{}", claude.display());
        check_models(lines.last().unwrap(), &want);
        checked += 1;
    }
    assert!(checked >= 3);
}
