//! `resume` on a real terminal (tmux): readable text, a pager when longer than the screen,
//! no "interrupt: none" noise; JSONL when piped.

use crate::util;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// A detached tmux session on a private server, killed on drop.
struct Tmux {
    socket: String,
}

impl Tmux {
    /// Starts `command` in an 100×30 pane, or `None` when tmux is missing outside CI.
    fn start(command: &str) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "tmux is missing in CI"
            );
            eprintln!("!!! tmux is missing: terminal tests NOT RUN");
            return None;
        }
        let socket = format!("chainlog-tty-{}-{}", std::process::id(), rand_suffix());
        let ok = Command::new("tmux")
            .args(["-L", &socket, "new-session", "-d", "-x", "100", "-y", "30"])
            .arg(command)
            .status()
            .unwrap()
            .success();
        assert!(ok, "tmux new-session failed");
        Some(Tmux { socket })
    }

    fn pane(&self) -> String {
        let o = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Waits until the pane shows `needle` (or fails after 20 s with the pane's text).
    fn wait_for(&self, needle: &str) -> String {
        let start = Instant::now();
        loop {
            let pane = self.pane();
            if pane.contains(needle) {
                return pane;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the pane never showed {needle:?}:\n{pane}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn sh_quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', "'\\''"))
}

/// The shell command running `chainlog resume FILE` with `pager`, then printing a marker.
fn resume_command(index: &Path, file: &Path, pager: &str, err: &Path) -> String {
    format!(
        "PAGER='{pager}' {} --index-dir {} resume {} 2>{}; echo DONE-$?; sleep 60",
        sh_quote(Path::new(env!("CARGO_BIN_EXE_chainlog"))),
        sh_quote(index),
        sh_quote(file),
        sh_quote(err),
    )
}

#[test]
fn resume_on_a_terminal_is_readable_text_without_noise() {
    let dir = tempfile::tempdir().unwrap();
    let example = util::manifest_dir().join("fixtures/example.jsonl");
    let err = dir.path().join("stderr");
    let Some(t) = Tmux::start(&resume_command(dir.path(), &example, "cat", &err)) else {
        return;
    };
    let pane = t.wait_for("DONE-0");
    assert!(
        !pane.contains("{\"parentUuid\""),
        "raw JSONL on a terminal:\n{pane}"
    );
    // The last reply of the example, as text.
    let last = util::chainlog(&["resume", example.to_str().unwrap(), "--format", "text"]);
    let text = String::from_utf8_lossy(&last.stdout);
    let tail = text
        .lines()
        .rev()
        .find(|l| l.trim().len() > 10)
        .unwrap()
        .trim();
    let tail: String = tail.chars().take(40).collect();
    assert!(
        pane.contains(&tail),
        "{tail:?} not on the terminal:\n{pane}"
    );
    let stderr = std::fs::read_to_string(&err).unwrap();
    assert!(!stderr.contains("interrupt: none"), "{stderr}");
    // Piped, the same command prints JSONL.
    let piped = util::chainlog(&["resume", example.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&piped.stdout).starts_with('{'));
}

#[test]
fn long_output_on_a_terminal_goes_through_the_pager() {
    let dir = tempfile::tempdir().unwrap();
    let example = util::manifest_dir().join("fixtures/example.jsonl");
    let err = dir.path().join("stderr");
    // A pager that announces itself, then shows what it got.
    let pager = dir.path().join("pager.sh");
    std::fs::write(&pager, "#!/bin/sh\necho PAGER-RAN $(wc -l)\n").unwrap();
    std::fs::set_permissions(&pager, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let Some(t) = Tmux::start(&resume_command(
        dir.path(),
        &example,
        pager.to_str().unwrap(),
        &err,
    )) else {
        return;
    };
    let pane = t.wait_for("DONE-0");
    assert!(
        pane.contains("PAGER-RAN"),
        "no pager for a long view:\n{pane}"
    );
}

#[test]
fn json_trailer_of_text_output_goes_to_stderr() {
    let example = util::manifest_dir().join("fixtures/example.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().to_str().unwrap();
    let p = example.to_str().unwrap();
    let text = util::chainlog(&[
        "--index-dir",
        index,
        "--json",
        "resume",
        p,
        "--format",
        "text",
    ]);
    assert!(text.status.success());
    let (out, err) = (
        String::from_utf8_lossy(&text.stdout),
        String::from_utf8_lossy(&text.stderr),
    );
    assert!(
        !out.contains("{\"chainlog\""),
        "trailer mixed into the text:\n{out}"
    );
    let trailer: serde_json::Value = serde_json::from_str(
        err.lines()
            .find(|l| l.starts_with("{\"chainlog\""))
            .expect("the trailer on stderr"),
    )
    .unwrap();
    assert!(trailer["chainlog"]["messages"].as_u64().unwrap() > 0);
    // Uuid lines stay uuid lines too (issue #33): the trailer goes to stderr.
    let uuids = util::chainlog(&[
        "--index-dir",
        index,
        "--json",
        "resume",
        p,
        "--format",
        "uuids",
    ]);
    let out = String::from_utf8_lossy(&uuids.stdout);
    assert!(out.lines().all(|l| !l.contains('{')), "{out}");
    assert!(
        util::resume_trailer(&uuids)["chainlog"]["messages"]
            .as_u64()
            .unwrap()
            > 0
    );
}
