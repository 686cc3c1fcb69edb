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
        &["--full"],
        "compact.full.md",
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
fn jsonl_export_is_the_resume_view() {
    for fixture in [
        "fixtures/example.jsonl",
        "fixtures/a5/step5_preserved_live.jsonl",
    ] {
        assert_eq!(
            run_ok(&["export", fixture, "--format", "jsonl"]),
            run_ok(&["resume", fixture, "--format", "jsonl"]),
            "{fixture}"
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
        run_ok(&[
            "export", fixture, "--format", "html", "--full", "-o", html_s,
        ]);
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
        let png = tmp.path().join("shot.png");
        headless(
            &browser,
            &html,
            &[
                &format!("--screenshot={}", png.display()),
                "--window-size=900,1200",
            ],
        );
        let bytes = std::fs::read(&png).expect("a screenshot");
        assert!(
            bytes.starts_with(b"\x89PNG") && bytes.len() > 10_000,
            "{fixture}"
        );
    }
}
