//! Upgrade-on-read: old entry shapes rewritten into the current ones (STYLE practice 7).
//!
//! # Context
//! chainlog reads every transcript version Claude Code ever wrote and hands the current shape
//! to whoever consumes an entry (the model, an export). The file on disk is never rewritten:
//! an upgrade happens on the parsed [`Value`] of one entry, after the chain is resolved.
//!
//! # Design
//! Each format change is one numbered step, a pure function of one entry that says whether
//! it changed anything. [`upgrade`] applies all of them in order. Every step has a folder
//! `migrate/NNNN-name/` (README.md: what, why, lossless?; `before.jsonl`; `after.jsonl`), and
//! `tests/it/migrate.rs` checks each folder byte-for-byte and that a second upgrade is a no-op.
//! A step must be idempotent and must keep key order (values are replaced in place; with
//! `serde_json`'s `preserve_order` a replaced key keeps its position).
//!
//! | step | before | after |
//! |---|---|---|
//! | `0001-legacy-attachment-types` | `"attachment":{"type":"new_file",…}` | `"attachment":{"type":"file",…}` |
//! | | `"attachment":{"type":"new_directory",…}` | `"attachment":{"type":"directory",…}` |
//!
//! Steps cannot delete or add entries (a legacy `progress` line is dropped by the chain
//! builder, format.md §A5 step 3, not here).

use serde_json::Value;

/// The names of the format steps (their `migrate/` folders), in the order they are applied.
pub const STEPS: &[&str] = &["0001-legacy-attachment-types"];

/// The entry types some step rewrites: an entry of any other type is current as written, and
/// is handed over without a parse ([`crate::resume::body`]). A step for another type adds it.
pub const KINDS: &[crate::transcript::envelope::Kind] =
    &[crate::transcript::envelope::Kind::Attachment];

/// The step functions, index for index with [`STEPS`] (the array length ties the two lists).
/// Each rewrites one entry in place and says whether it changed something.
const APPLY: [fn(&mut Value) -> bool; STEPS.len()] = [legacy_attachment_types];

/// Upgrades one entry to the current format in place, applying every step in order. Returns
/// whether anything changed (an entry that did not change can be passed on byte-for-byte).
pub fn upgrade(entry: &mut Value) -> bool {
    let mut changed = false;
    for step in APPLY {
        changed |= step(entry);
    }
    changed
}

/// `0001-legacy-attachment-types` (format.md §A7 step 1): attachment types renamed by Claude Code,
/// `new_file` → `file` and `new_directory` → `directory`.
fn legacy_attachment_types(entry: &mut Value) -> bool {
    if entry.get("type").and_then(Value::as_str) != Some("attachment") {
        return false;
    }
    let Some(ty) = entry.get_mut("attachment").and_then(|a| a.get_mut("type")) else {
        return false;
    };
    let current = match ty.as_str() {
        Some("new_file") => "file",
        Some("new_directory") => "directory",
        _ => return false,
    };
    *ty = Value::from(current);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn up(line: &str) -> (String, bool) {
        let mut v: Value = serde_json::from_str(line).unwrap();
        let changed = upgrade(&mut v);
        (serde_json::to_string(&v).unwrap(), changed)
    }

    #[test]
    fn renames_legacy_attachment_types_in_place() {
        assert_eq!(
            up(
                r#"{"type":"attachment","attachment":{"type":"new_file","filename":"a"},"uuid":"u"}"#
            ),
            (
                r#"{"type":"attachment","attachment":{"type":"file","filename":"a"},"uuid":"u"}"#
                    .to_owned(),
                true
            )
        );
        assert_eq!(
            up(r#"{"attachment":{"path":"d","type":"new_directory"},"type":"attachment"}"#),
            (
                r#"{"attachment":{"path":"d","type":"directory"},"type":"attachment"}"#.to_owned(),
                true
            )
        );
    }

    #[test]
    fn leaves_everything_else_alone() {
        for line in [
            r#"{"type":"attachment","attachment":{"type":"file","filename":"a"}}"#,
            r#"{"type":"user","attachment":{"type":"new_file"}}"#,
            r#"{"type":"attachment","attachment":{"type":7}}"#,
            r#"{"type":"attachment","attachment":"new_file"}"#,
            r#"{"type":"attachment"}"#,
            "[1,2]",
        ] {
            assert_eq!(up(line), (line.to_owned(), false), "{line}");
        }
    }
}
