//! Merging metadata entries (format.md §A2).
//!
//! Metadata entries have no place in the message tree. Each type has a key (the field its map
//! is keyed by) and a merge rule. Values stay in the JSONL: the maps hold the line position
//! and, for the string facts a picker shows (title, tag, last prompt, summary...), the string.
//!
//! | type | key | merge |
//! |---|---|---|
//! | `summary` | `leafUuid` | last wins |
//! | `custom-title`, `ai-title`, `last-prompt`, `tag`, `agent-*`, `mode`, `permission-mode`, `worktree-state`, `pr-link` | `sessionId` | last wins |
//! | `file-history-snapshot` | `messageId` | last wins |
//! | `attribution-snapshot` | `messageId` | all kept, in order |
//! | `content-replacement` | `agentId` if set, else `sessionId` | append, in file order |
//! | `marble-origami-commit` | `sessionId` | append; cleared at each compact boundary |
//! | `marble-origami-snapshot` | `sessionId` | last wins; cleared at each compact boundary |
//! | anything else | — | kept by type, in order |

use std::collections::{BTreeMap, HashMap};

use super::envelope::{MetaEntry, hash64};
use super::frame::LinePos;
use crate::id::Id;

/// How entries of one type combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Merge {
    /// The last entry for a key wins.
    LastWins,
    /// Every entry for a key is kept in file order.
    Append,
    /// Kept by type only (not needed by resume).
    ByType,
}

/// One kept metadata entry: where it is and the string fact it carries.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MetaRef {
    /// Line position of the entry.
    pub pos: LinePos,
    /// The string value (`customTitle`, `tag`, `summary`, ...), if the type has one.
    pub text: Option<String>,
}

/// Per-session last-wins types.
pub(crate) const SESSION_LAST_WINS: &[&str] = &[
    "custom-title",
    "ai-title",
    "last-prompt",
    "tag",
    "agent-name",
    "agent-color",
    "agent-setting",
    "mode",
    "permission-mode",
    "worktree-state",
    "pr-link",
    "marble-origami-snapshot",
];

/// The merge rule of a metadata type.
pub fn merge_rule(ty: &str) -> Merge {
    match ty {
        "summary" | "file-history-snapshot" => Merge::LastWins,
        "attribution-snapshot" | "content-replacement" | "marble-origami-commit" => Merge::Append,
        t if SESSION_LAST_WINS.contains(&t) => Merge::LastWins,
        _ => Merge::ByType,
    }
}

/// All metadata of one transcript, merged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metadata {
    /// Last-wins values keyed by `(type, hash of sessionId)`.
    pub by_session: BTreeMap<(String, u64), MetaRef>,
    /// `summary` entries keyed by `leafUuid`.
    pub summaries: HashMap<Id, MetaRef>,
    /// `file-history-snapshot` keyed by `messageId` (last wins).
    pub by_message: BTreeMap<(String, String), MetaRef>,
    /// Append-only lists keyed by `(type, key)`: content replacements (agent or session),
    /// attribution snapshots (message), marble-origami commits (session).
    pub appended: BTreeMap<(String, String), Vec<MetaRef>>,
    /// Every `last-prompt` that carries a `leafUuid`, in file order.
    pub leaf_checkpoints: Vec<(Id, LinePos)>,
    /// Every other type, by type, in file order.
    pub by_type: BTreeMap<String, Vec<LinePos>>,
}

impl Metadata {
    /// Merges one entry (in file order).
    pub fn add(&mut self, e: &MetaEntry, pos: LinePos) {
        let r = MetaRef {
            pos,
            text: e.text.clone(),
        };
        let session = e.session_id.as_deref().map_or(0, hash64);
        match (e.ty.as_str(), merge_rule(&e.ty)) {
            ("summary", _) => {
                if let Some(leaf) = e.leaf {
                    self.summaries.insert(leaf, r);
                }
            }
            ("file-history-snapshot", _) => {
                let key = e.message_id.clone().unwrap_or_default();
                self.by_message.insert((e.ty.clone(), key), r);
            }
            ("content-replacement", _) => {
                let key = e
                    .agent_id
                    .clone()
                    .or_else(|| e.session_id.clone())
                    .unwrap_or_default();
                self.appended
                    .entry((e.ty.clone(), key))
                    .or_default()
                    .push(r);
            }
            ("attribution-snapshot", _) => {
                let key = e.message_id.clone().unwrap_or_default();
                self.appended
                    .entry((e.ty.clone(), key))
                    .or_default()
                    .push(r);
            }
            ("marble-origami-commit", _) => {
                let key = e.session_id.clone().unwrap_or_default();
                self.appended
                    .entry((e.ty.clone(), key))
                    .or_default()
                    .push(r);
            }
            (ty, Merge::LastWins) => {
                if ty == "last-prompt"
                    && let Some(leaf) = e.leaf
                {
                    self.leaf_checkpoints.push((leaf, pos));
                }
                self.by_session.insert((e.ty.clone(), session), r);
            }
            _ => self.by_type.entry(e.ty.clone()).or_default().push(pos),
        }
    }

    /// A compact boundary was read: context-collapse state collected so far is cleared.
    pub fn on_compact_boundary(&mut self) {
        self.appended
            .retain(|(ty, _), _| ty != "marble-origami-commit");
        self.by_session
            .retain(|(ty, _), _| ty != "marble-origami-snapshot");
    }

    /// The last-wins value of `ty` for the session with hash `session`.
    pub fn session_value(&self, ty: &str, session: u64) -> Option<&MetaRef> {
        self.by_session.get(&(ty.to_owned(), session))
    }

    /// The last-wins text of `ty` for a session, with `""` treated as cleared.
    pub fn session_text(&self, ty: &str, session: u64) -> Option<&str> {
        self.session_value(ty, session)
            .and_then(|r| r.text.as_deref())
            .filter(|t| !t.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::IdNames;
    use crate::transcript::envelope::{Entry, parse_line};

    fn add(m: &mut Metadata, line: &str, n: u64) {
        let Ok(Entry::Meta(e)) = parse_line(line.as_bytes(), &mut IdNames::default()).entry else {
            panic!("not metadata: {line}")
        };
        m.add(
            &e,
            LinePos {
                line: n,
                offset: n * 100,
                len: 10,
            },
        );
    }

    #[test]
    fn last_wins_append_and_clearing() {
        let mut m = Metadata::default();
        add(
            &mut m,
            r#"{"type":"custom-title","customTitle":"a","sessionId":"s"}"#,
            1,
        );
        add(
            &mut m,
            r#"{"type":"custom-title","customTitle":"b","sessionId":"s"}"#,
            2,
        );
        add(&mut m, r#"{"type":"tag","tag":"x","sessionId":"s"}"#, 3);
        add(&mut m, r#"{"type":"tag","tag":"","sessionId":"s"}"#, 4);
        add(
            &mut m,
            r#"{"type":"content-replacement","sessionId":"s","replacements":[]}"#,
            5,
        );
        add(
            &mut m,
            r#"{"type":"content-replacement","sessionId":"s","agentId":"a1","replacements":[]}"#,
            6,
        );
        add(
            &mut m,
            r#"{"type":"content-replacement","sessionId":"s","replacements":[]}"#,
            7,
        );
        add(
            &mut m,
            r#"{"type":"marble-origami-commit","sessionId":"s"}"#,
            8,
        );
        add(
            &mut m,
            r#"{"type":"queue-operation","operation":"enqueue"}"#,
            9,
        );
        let s = hash64("s");
        assert_eq!(m.session_text("custom-title", s), Some("b"));
        assert_eq!(m.session_text("tag", s), None);
        let cr = &m.appended[&("content-replacement".to_owned(), "s".to_owned())];
        assert_eq!(
            cr.iter().map(|r| r.pos.line).collect::<Vec<_>>(),
            vec![5, 7]
        );
        assert_eq!(
            m.appended[&("content-replacement".to_owned(), "a1".to_owned())].len(),
            1
        );
        m.on_compact_boundary();
        assert!(!m.appended.keys().any(|(t, _)| t == "marble-origami-commit"));
        assert_eq!(m.by_type["queue-operation"].len(), 1);
    }
}
