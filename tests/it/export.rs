//! `chainlog export`: Markdown against golden files, JSONL against `resume`, and the HTML
//! rendered by a real browser (headless Chromium) with every message of the chain present.

use crate::util;

use std::path::{Path, PathBuf};
use std::process::Command;

use util::{chainlog, manifest_dir};

/// `(fixture, extra flags, golden file)`.
const GOLDEN: &[(&str, &[&str], &str)] = &[
    (
        "fixtures/example.jsonl",
        &["--all-branches"],
        "example.all-branches.md",
    ),
    (
        "fixtures/a5/step4_5_compact_boundary.jsonl",
        &[],
        "compact.full.md",
    ),
    (
        "fixtures/a5/step4_5_compact_boundary.jsonl",
        &["--resume-view"],
        "compact.resume-view.md",
    ),
    (
        "fixtures/a5/step10_parallel_tools.jsonl",
        &[],
        "parallel_tools.md",
    ),
];

fn run_ok(args: &[&str]) -> String {
    let o = chainlog(args);
    assert!(
        o.status.success(),
        "chainlog {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("utf-8 output")
}

/// Regenerate with `CHAINLOG_BLESS=1 cargo test --test export` and review the diff.
#[test]
fn markdown_matches_golden_files() {
    let bless = std::env::var_os("CHAINLOG_BLESS").is_some();
    for (fixture, flags, golden) in GOLDEN {
        let mut args = vec!["export", fixture, "--format", "markdown"];
        args.extend_from_slice(flags);
        let got = run_ok(&args);
        let path = manifest_dir().join("fixtures/export").join(golden);
        if bless {
            std::fs::write(&path, &got).unwrap();
        }
        let want = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (CHAINLOG_BLESS=1 writes it)", path.display()));
        assert_eq!(got, want, "{fixture} {flags:?} differs from {golden}");
    }
}

#[test]
fn jsonl_export_is_the_conversation_or_with_resume_view_the_view() {
    for fixture in [
        "fixtures/example.jsonl",
        "fixtures/a5/step5_preserved_live.jsonl",
        "fixtures/a5/step4_5_compact_boundary.jsonl",
    ] {
        assert_eq!(
            run_ok(&["export", fixture, "--format", "jsonl"]),
            run_ok(&["resume", fixture, "--full", "--format", "jsonl"]),
            "{fixture}"
        );
        assert_eq!(
            run_ok(&["export", fixture, "--format", "jsonl", "--resume-view"]),
            run_ok(&["resume", fixture, "--format", "jsonl"]),
            "{fixture}"
        );
    }
}

/// Issue #33: an export of a compacted session opens with its first prompt, not with a
/// boundary and nothing above it; `--resume-view` is what the model gets.
#[test]
fn export_of_a_compacted_session_holds_its_first_prompt_by_default() {
    let fixture = "fixtures/a5/step4_5_compact_boundary.jsonl";
    // The first prompt's anchor (its text is also the title, shown either way).
    let first = "m-00000000-0000-4000-8000-000000000001";
    for format in ["markdown", "html"] {
        let whole = run_ok(&["export", fixture, "--format", format]);
        assert!(whole.contains(first), "{format}: {whole}");
        assert!(whole.contains("Port the config loader from YAML to TOML."));
        let view = run_ok(&["export", fixture, "--format", format, "--resume-view"]);
        assert!(!view.contains(first), "{format}: the view starts after it");
        assert!(
            whole.find(first) < whole.find("Conversation compacted"),
            "{format}: the prompt comes before the boundary"
        );
    }
}

fn chromium() -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .map(|n| Path::new("/usr/bin").join(n))
        .find(|p| p.is_file());
    if found.is_none() {
        // CI installs Debian's chromium (.ci/run): there a missing browser is a failure.
        assert!(
            std::env::var("CI").is_err(),
            "headless Chromium is required in CI (apt-get install chromium)"
        );
        eprintln!("SKIPPED: no chromium in /usr/bin; the HTML export was not rendered");
    }
    found
}

/// Runs headless Chromium on `html` with `args`, returns stdout.
fn headless(browser: &Path, html: &Path, args: &[&str]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let o = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("chromium runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A screenshot of `html` at 900×1200 into `png`: a non-trivial PNG shows the page lays out.
fn screenshot(browser: &Path, html: &Path, png: &Path, what: &str) {
    headless(
        browser,
        html,
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=900,1200",
        ],
    );
    let bytes = std::fs::read(png).expect("a screenshot");
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 10_000,
        "{what}"
    );
}

#[test]
fn html_renders_in_chromium_with_every_message() {
    let Some(browser) = chromium() else { return };
    let tmp = tempfile::tempdir().unwrap();
    for fixture in [
        "fixtures/example.jsonl",
        "fixtures/a5/step4_5_compact_boundary.jsonl",
        "fixtures/a5/step10_parallel_tools.jsonl",
    ] {
        let html = tmp.path().join("out.html");
        let html_s = html.to_str().unwrap();
        run_ok(&["export", fixture, "--format", "html", "-o", html_s]);
        let uuids = run_ok(&["resume", fixture, "--full", "--format", "uuids"]);
        let dom = headless(&browser, &html, &["--dump-dom"]);
        for uuid in uuids.lines() {
            assert!(
                dom.contains(&format!("id=\"m-{uuid}\"")),
                "{fixture}: message {uuid} missing from the rendered DOM"
            );
        }
        let shown =
            dom.matches("<article class=\"msg").count() + dom.matches("class=\"boundary\"").count();
        assert_eq!(
            shown,
            uuids.lines().count(),
            "{fixture}: one element per message"
        );
        assert!(dom.contains("<details class=\"tool-use\"") || !fixture.contains("parallel"));
        // A screenshot proves the page lays out (a non-trivial PNG).
        screenshot(&browser, &html, &tmp.path().join("shot.png"), fixture);
    }
}

/// A session whose messages hold Markdown, hostile HTML and links, and tool calls.
fn markdown_session(dir: &Path) -> PathBuf {
    let line = |uuid: u32, parent: Option<u32>, role: &str, content: serde_json::Value| {
        serde_json::json!({
            "parentUuid": parent.map(|p| format!("00000000-0000-4000-8000-{p:012}")),
            "isSidechain": false,
            "type": role,
            "message": {"role": role, "content": content},
            "uuid": format!("00000000-0000-4000-8000-{uuid:012}"),
            "timestamp": format!("2026-03-14T09:00:{uuid:02}.000Z"),
            "sessionId": "0d0d0d0d-0000-4000-8000-000000000001",
            "cwd": "/home/dev/md",
        })
        .to_string()
    };
    let text = |t: &str| serde_json::json!([{"type": "text", "text": t}]);
    let lines = [
        line(
            1,
            None,
            "user",
            serde_json::json!("Explain **bold**\n<script>document.title='pwned'</script>"),
        ),
        line(
            2,
            Some(1),
            "assistant",
            text(
                "Here is *why*:\n\n- one\n- two\n\n```rust\nfn main() {}\n```\n\n\
                 [click](javascript:alert(1)) and [docs](https://example.com/) \
                 ![pic](https://example.com/x.png) <img src=x onerror=alert(1)>",
            ),
        ),
        line(
            3,
            Some(2),
            "assistant",
            serde_json::json!([
                {"type": "tool_use", "id": "toolu_01Bash", "name": "Bash",
                 "input": {"command": "cargo test --workspace", "description": "Run the tests"}},
                {"type": "tool_use", "id": "toolu_01Read", "name": "Read",
                 "input": {"file_path": "/home/dev/md/src/lib.rs"}},
                {"type": "tool_use", "id": "toolu_01Grep", "name": "Grep",
                 "input": {"pattern": "fn load_config", "path": "src"}}
            ]),
        ),
        line(
            4,
            Some(3),
            "user",
            serde_json::json!([
                {"type": "tool_result", "tool_use_id": "toolu_01Bash", "content": "test result: ok"},
                {"type": "tool_result", "tool_use_id": "toolu_01Read", "content": "pub fn x() {}"},
                {"type": "tool_result", "tool_use_id": "toolu_01Grep", "content": "src/config.rs"}
            ]),
        ),
    ];
    let path = dir.join("0d0d0d0d-0000-4000-8000-000000000001.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

/// Issue #33: the HTML export renders message Markdown (emphasis, lists, code in a monospace
/// font), names each tool call by what it did, and lets no transcript text become markup —
/// checked in the DOM and the computed styles of a real browser, plus a screenshot.
#[test]
fn html_renders_markdown_and_names_tool_calls_in_chromium() {
    let tmp = tempfile::tempdir().unwrap();
    let session = markdown_session(tmp.path());
    let html = tmp.path().join("md.html");
    run_ok(&[
        "export",
        session.to_str().unwrap(),
        "--format",
        "html",
        "-o",
        html.to_str().unwrap(),
    ]);
    let page = std::fs::read_to_string(&html).unwrap();
    // What the renderer wrote, before a browser reads it.
    assert!(page.contains("<strong>bold</strong>"), "{page}");
    assert!(page.contains("<em>why</em>") && page.contains("<li>one</li>"));
    assert!(page.contains("<code class=\"language-rust\">fn main() {}"));
    assert!(
        !page.contains("<script") && !page.contains("<img"),
        "{page}"
    );
    assert!(!page.contains("href=\"javascript:"), "{page}");
    assert!(page.contains("<a href=\"https://example.com/\">docs</a>"));
    for subject in [
        "<b>Bash</b> <code>cargo test --workspace</code>",
        "<b>Read</b> <code>/home/dev/md/src/lib.rs</code>",
        "<b>Grep</b> <code>fn load_config</code>",
        "Tool result of <b>Bash</b> <code>cargo test --workspace</code>",
    ] {
        assert!(page.contains(subject), "missing {subject}: {page}");
    }
    let Some(browser) = chromium() else { return };
    // A probe appended to a copy reads what the browser made of the page: the export itself
    // holds no script.
    let probe = tmp.path().join("probe.html");
    std::fs::write(
        &probe,
        page.replace(
            "</body>",
            "<pre id=\"probe\"></pre><script>\
             const f=e=>getComputedStyle(document.querySelector(e)).fontFamily;\
             document.getElementById('probe').textContent=JSON.stringify({\
             title:document.title,scripts:document.scripts.length,\
             imgs:document.images.length,strong:document.querySelectorAll('strong').length,\
             js:[...document.links].filter(a=>a.protocol==='javascript:').length,\
             block:f('pre code'),span:f('p code'),body:f('body')});</script></body>",
        ),
    )
    .unwrap();
    let dom = headless(&browser, &probe, &["--dump-dom"]);
    let start = dom.find("<pre id=\"probe\">").expect("the probe ran") + 16;
    let end = start + dom[start..].find("</pre>").unwrap();
    let seen: serde_json::Value = serde_json::from_str(
        &dom[start..end]
            .replace("&quot;", "\"")
            .replace("&amp;", "&"),
    )
    .unwrap_or_else(|e| panic!("{e}: {}", &dom[start..end]));
    assert_eq!(seen["scripts"], 1, "only the probe runs: {seen}");
    assert_eq!(seen["imgs"], 0, "{seen}");
    assert_eq!(seen["js"], 0, "{seen}");
    assert_eq!(seen["strong"], 1, "{seen}");
    assert_ne!(seen["title"], "pwned", "{seen}");
    for code in ["block", "span"] {
        let font = seen[code].as_str().unwrap_or_default();
        assert!(font.starts_with("ui-monospace"), "{code} code in {font}");
    }
    assert!(
        !seen["body"]
            .as_str()
            .unwrap_or_default()
            .contains("monospace")
    );
    screenshot(
        &browser,
        &html,
        &tmp.path().join("md.png"),
        "markdown session",
    );
}
