//! The example run as a user runs it, on a real claude dir (vendored in `fixtures/real/`): it
//! lists the sessions and prints the last 3 messages of the newest one.

use std::process::Command;

#[test]
fn prints_the_last_three_messages_of_the_newest_session() {
    let claude = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/real/claude-code-viewer"
    );
    let index = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_last-messages"))
        .arg(claude)
        .arg(index.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("the last 3 messages of ")),
        "{stdout}"
    );
    let messages = stdout
        .lines()
        .filter(|l| {
            l.strip_prefix('[')
                .and_then(|r| r.split_once("] "))
                .is_some_and(|(role, _)| {
                    !role.is_empty() && role.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
                })
        })
        .count();
    assert_eq!(messages, 3, "{stdout}");
}
