//! Transcript format steps (`migrate/`, STYLE practice 7): every numbered folder upgrades its
//! `before.jsonl` to its `after.jsonl` byte for byte, a second upgrade changes nothing, the
//! folders and [`chainlog::format::UPGRADE_STEPS`] match one to one, and the resume view hands the
//! upgraded shape over.

use std::path::{Path, PathBuf};

use chainlog::Id;
use chainlog::format::UPGRADE_STEPS;
use chainlog::format::upgrade;
use chainlog::reference::ResolveOptions;
use chainlog::reference::Transcript;
use chainlog::reference::resolve;
use chainlog::view::read_view;
use serde_json::Value;

fn migrate_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("migrate")
}

/// The step folders, sorted by name.
fn step_dirs() -> Vec<PathBuf> {
    let dir = migrate_dir();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no step folders in {}", dir.display());
    dirs
}

fn name(dir: &Path) -> &str {
    dir.file_name().unwrap().to_str().unwrap()
}

fn read_lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        text.ends_with('\n'),
        "{}: every line ends with \\n",
        path.display()
    );
    text.lines().map(str::to_owned).collect()
}

/// Parses, upgrades and re-serialises one line.
fn upgraded(line: &str, context: &str) -> (String, bool) {
    let mut v: Value =
        serde_json::from_str(line).unwrap_or_else(|e| panic!("{context}: not JSON: {e}"));
    let changed = upgrade(&mut v);
    (serde_json::to_string(&v).unwrap(), changed)
}

#[test]
fn folders_are_numbered_steps_matching_the_code() {
    let dirs = step_dirs();
    let names: Vec<&str> = dirs.iter().map(|d| name(d)).collect();
    assert_eq!(
        names, UPGRADE_STEPS,
        "migrate/ folders and chainlog::format::UPGRADE_STEPS (same steps, same order)"
    );
    for (i, n) in names.iter().enumerate() {
        let (num, rest) = n
            .split_once('-')
            .unwrap_or_else(|| panic!("{n}: NNNN-name"));
        assert_eq!(
            num,
            format!("{:04}", i + 1),
            "{n}: numbered from 0001 without gaps"
        );
        assert!(
            !rest.is_empty()
                && rest
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "{n}: kebab-case name"
        );
    }
}

#[test]
fn each_step_has_a_readme_saying_what_why_and_whether_lossless() {
    for dir in step_dirs() {
        let path = dir.join("README.md");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for needle in ["**What.**", "**Why.**", "**Lossless?**"] {
            assert!(text.contains(needle), "{}: no {needle}", path.display());
        }
    }
}

#[test]
fn before_upgrades_to_after_byte_for_byte() {
    for dir in step_dirs() {
        let n = name(&dir);
        let before = read_lines(&dir.join("before.jsonl"));
        let after = read_lines(&dir.join("after.jsonl"));
        assert_eq!(before.len(), after.len(), "{n}: line counts differ");
        let mut changed_lines = 0;
        for (i, (b, a)) in before.iter().zip(&after).enumerate() {
            let context = format!("{n}/before.jsonl line {}", i + 1);
            let (got, changed) = upgraded(b, &context);
            assert_eq!(&got, a, "{context}: upgrade differs from after.jsonl");
            assert_eq!(
                changed,
                b != a,
                "{context}: `changed` must say whether bytes changed"
            );
            changed_lines += usize::from(changed);
        }
        assert!(changed_lines > 0, "{n}: before.jsonl has no old shape");
    }
}

#[test]
fn upgrading_after_changes_nothing() {
    for dir in step_dirs() {
        let n = name(&dir);
        for (i, a) in read_lines(&dir.join("after.jsonl")).iter().enumerate() {
            let context = format!("{n}/after.jsonl line {}", i + 1);
            let (got, changed) = upgraded(a, &context);
            assert!(!changed, "{context}: upgraded twice");
            assert_eq!(&got, a, "{context}: not a byte-identical round trip");
        }
    }
}

#[test]
fn resume_view_hands_over_upgraded_entries() {
    // The first step's fixture as a transcript: the main-thread chain is lines 1–5 (the prompt
    // and four attachments), line 6 a sidechain attachment, line 7 metadata.
    let dir = migrate_dir().join("0001-legacy-attachment-types");
    let before = std::fs::read(dir.join("before.jsonl")).unwrap();
    let after = read_lines(&dir.join("after.jsonl"));
    let before_lines = read_lines(&dir.join("before.jsonl"));
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp
        .path()
        .join("0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0.jsonl");
    std::fs::write(&path, &before).unwrap();
    let t = Transcript::open(&path).unwrap();
    for (leaf, lines) in [
        ("00000000-0000-4000-8000-000000000005", 0..5),
        ("00000000-0000-4000-8000-000000000006", 5..6),
    ] {
        let opts = ResolveOptions {
            leaf: Some(Id::from_text(leaf)),
            ..ResolveOptions::default()
        };
        let r = resolve(&t, opts).unwrap();
        let view = read_view(&path, &r.chain, &t.names).unwrap();
        let got: Vec<String> = view
            .iter()
            .map(|e| String::from_utf8(e.json.to_vec()).unwrap())
            .collect();
        assert_eq!(got, after[lines.clone()], "view ending at {leaf}");
        // Entries the step leaves alone are the file's bytes, not a re-serialisation.
        for (e, b) in view.iter().zip(&before_lines[lines]) {
            if !b.contains("\"type\":\"new_") {
                assert_eq!(e.json, b.as_bytes());
            }
        }
    }
    // Nothing was written to the transcript.
    assert_eq!(std::fs::read(&path).unwrap(), before);
}
