//! Interrupt detection on resumed messages (format.md §A7 step 3, as amended by §A8).
//!
//! Runs after the clean-up of §A7 step 2 (the same passes as the API view,
//! [`super::api`]): a trailing thinking-only reply or a reply whose every `tool_use` is
//! unanswered is not a finished reply. A chain ending in a `prompt_snapshot` or hook
//! attachment, a local command or an API-error reply is not interrupted (Claude Code
//! 2.1.328 adds no repair there).

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::api::{Tail, cleaned_tail, suffix_tail, tool_ids};
use super::body::{Lines, ViewEntry, read_view};
use crate::chain::Link;
use crate::error::Result;
use crate::id::IdNames;

/// Entries read back from the end of a view to decide how it ends ([`Ending::of_lines`]),
/// multiplied by four while they cannot.
const TAIL_FIRST: usize = 32;

/// How a resumed conversation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Interrupt {
    /// Ended on an assistant reply (or nothing to judge): nothing to continue.
    None,
    /// Ended on a user prompt with no reply: the prompt is re-sent.
    InterruptedPrompt,
    /// Ended on a tool result or a rendered attachment: the turn was cut.
    InterruptedTurn,
}

/// Classifies the end of a view.
pub fn detect(view: &[ViewEntry]) -> Interrupt {
    Ending::of(view).interrupt
}

fn of_tail(tail: Tail) -> Interrupt {
    match tail {
        Tail::None | Tail::Reply | Tail::ApiError | Tail::LocalCommand | Tail::Meta => {
            Interrupt::None
        }
        Tail::ToolResult | Tail::Attachment => Interrupt::InterruptedTurn,
        Tail::Prompt => Interrupt::InterruptedPrompt,
    }
}

/// How a view ends and what a later extension of it needs to decide how the longer view ends
/// from its last entries alone: the tool ids the view names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ending {
    /// [`detect`] of the view.
    pub interrupt: Interrupt,
    /// Every tool id the view names ([`tool_id_hash`]) with the first entry naming it,
    /// sorted by hash.
    pub ids: Vec<(u64, u32)>,
}

/// A tool id as [`Ending::ids`] holds it. Two ids with one hash only make a later check
/// decline (see [`Ending::extended`]), never answer wrong.
pub(crate) fn tool_id_hash(id: &str) -> u64 {
    crate::transcript::envelope::hash64(id)
}

/// Tool ids of `values` (entries from view position `from` on), in order, with the position
/// of the entry naming them.
fn named(values: &[(u32, Value)]) -> Vec<(u64, u32)> {
    values
        .iter()
        .flat_map(|(at, v)| {
            tool_ids(v)
                .into_iter()
                .map(move |id| (tool_id_hash(&id), *at))
        })
        .collect()
}

impl Ending {
    /// The ending of a whole view. Every entry is parsed once for the tool ids it names; how
    /// it ends is decided from its last entries ([`Ending::decide`]), so the parsed form of the
    /// whole view (10 times its bytes) is never held.
    pub(crate) fn of(view: &[ViewEntry]) -> Ending {
        if view.len() <= TAIL_FIRST {
            // What `decide` would parse at once anyway, without the pass for the ids first.
            return Ending::of_parsed(view);
        }
        let whole = Ending::naming(view.iter().map(Ok)).expect("entries in memory");
        whole
            .decide(view.len(), TAIL_FIRST, |from| {
                Ok(std::borrow::Cow::Borrowed(&view[from..]))
            })
            .expect("entries in memory")
            .0
    }

    /// The ending of a whole view from every entry parsed at once.
    fn of_parsed(view: &[ViewEntry]) -> Ending {
        let values: Vec<(u32, Value)> = (0..)
            .zip(view)
            .filter_map(|(at, e)| Some((at, e.value()?)))
            .collect();
        let ids = named(&values);
        let values: Vec<Value> = values.into_iter().map(|(_, v)| v).collect();
        let mut ending = Ending {
            interrupt: of_tail(cleaned_tail(&values)),
            ids: Vec::new(),
        };
        ending.add(ids);
        ending
    }

    /// The tool ids of a view's entries (its interrupt not decided yet), each parsed and
    /// dropped in turn.
    fn naming<E: std::borrow::Borrow<ViewEntry>>(
        entries: impl Iterator<Item = Result<E>>,
    ) -> Result<Ending> {
        let mut ids = Vec::new();
        for (at, e) in (0u32..).zip(entries) {
            if let Some(v) = e?.borrow().value() {
                ids.extend(tool_ids(&v).into_iter().map(|id| (tool_id_hash(&id), at)));
            }
        }
        let mut whole = Ending {
            interrupt: Interrupt::None,
            ids: Vec::new(),
        };
        whole.add(ids);
        Ok(whole)
    }

    /// How the view of `len` entries whose tool ids `self` holds ends, decided from its last
    /// `back` entries (`tail(from)`: the entries from position `from` on) with
    /// [`Ending::extended`]; four times as many while they cannot; from all of them, parsed at
    /// once, at worst. Also returns the position the deciding entries started from.
    fn decide<'v>(
        &self,
        len: usize,
        mut back: usize,
        mut tail: impl FnMut(usize) -> Result<std::borrow::Cow<'v, [ViewEntry]>>,
    ) -> Result<(Ending, usize)> {
        loop {
            let from = len.saturating_sub(back);
            let entries = tail(from)?;
            if from == 0 {
                return Ok((Ending::of_parsed(&entries), 0));
            }
            let at = u32::try_from(from).expect("a view's length fits u32");
            if let Some(ending) = self.extended(at, &entries) {
                return Ok((ending, from));
            }
            back = back.saturating_mul(4);
        }
    }

    /// The ending of the view `chain` of the transcript at `path`, its lines read one batch at
    /// a time: [`Ending::of`] of the whole view, in memory bounded by a batch and the last
    /// entries instead of every line.
    pub(crate) fn of_lines(path: &Path, chain: &[Link], names: &IdNames) -> Result<Ending> {
        if chain.len() <= TAIL_FIRST {
            // A short view is decided from all its entries: read and parse each once.
            return Ok(Ending::of_parsed(&read_view(path, chain, names)?));
        }
        let whole = Ending::naming(Lines::open(path, chain, names)?)?;
        let read_tail = |from: usize| {
            Ok(std::borrow::Cow::Owned(read_view(
                path,
                &chain[from..],
                names,
            )?))
        };
        Ok(whole.decide(chain.len(), TAIL_FIRST, read_tail)?.0)
    }

    /// Adds named ids, keeping each one's first position.
    fn add(&mut self, ids: Vec<(u64, u32)>) {
        self.ids.extend(ids);
        self.ids.sort_unstable();
        self.ids.dedup_by_key(|&mut (h, _)| h);
    }

    /// The ending of this view extended: `tail` holds the entries of the longer view from
    /// position `from` on (`from` at most this view's length: the last entries of this view
    /// may be among them). `None` when they cannot decide it alone: a tool id they name occurs
    /// before `from`, or [`suffix_tail`] cannot tell.
    pub(crate) fn extended(&self, from: u32, tail: &[ViewEntry]) -> Option<Ending> {
        let values: Vec<(u32, Value)> = (from..)
            .zip(tail)
            .filter_map(|(at, e)| Some((at, e.value()?)))
            .collect();
        let ids = named(&values);
        let before = |h: u64| {
            self.ids
                .binary_search_by_key(&h, |&(k, _)| k)
                .is_ok_and(|i| self.ids[i].1 < from)
        };
        if ids.iter().any(|&(h, _)| before(h)) {
            return None;
        }
        let values: Vec<Value> = values.into_iter().map(|(_, v)| v).collect();
        // The entries from `from` on are all in `tail` (those of this view may have moved):
        // their ids are taken from it.
        // From the first entry, the last lines are the whole view.
        let tail = if from == 0 {
            cleaned_tail(&values)
        } else {
            suffix_tail(&values)?
        };
        let mut ending = Ending {
            interrupt: of_tail(tail),
            ids: self
                .ids
                .iter()
                .copied()
                .filter(|&(_, at)| at < from)
                .collect(),
        };
        ending.add(ids);
        Some(ending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::{Link, ResolveOptions, Transcript, resolve};
    use crate::id::Id;
    use crate::resume::body::read_view;
    use crate::transcript::envelope::Kind;
    use crate::transcript::frame::LinePos;

    fn entry(json: &str) -> ViewEntry {
        ViewEntry {
            link: Link {
                uuid: Id([0; 16]),
                pos: LinePos {
                    line: 0,
                    offset: 0,
                    len: 0,
                },
                kind: Kind::User,
                parent: None,
                written_parent: None,
                spliced: false,
                zero_usage: false,
            },
            json: json.as_bytes().to_vec().into(),
        }
    }

    fn prompt(text: &str) -> String {
        format!(r#"{{"type":"user","message":{{"role":"user","content":"{text}"}}}}"#)
    }

    fn reply(content: &str) -> String {
        format!(
            r#"{{"type":"assistant","message":{{"id":"m","role":"assistant","content":[{content}]}}}}"#
        )
    }

    fn result(id: &str) -> String {
        format!(
            r#"{{"type":"user","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"{id}","content":"ok"}}]}}}}"#
        )
    }

    fn call(id: &str) -> String {
        format!(r#"{{"type":"tool_use","id":"{id}","name":"Bash","input":{{}}}}"#)
    }

    /// A tool id of the new lines that an earlier line of the view names (a duplicate the
    /// clean-up keeps once) makes the last lines unable to decide: the extension declines
    /// instead of answering what the last lines alone say.
    #[test]
    fn a_tool_id_named_before_the_last_lines_declines() {
        let text = r#"{"type":"text","text":"done"}"#;
        let old: Vec<ViewEntry> = [prompt("go"), reply(&call("X")), result("X"), reply(text)]
            .iter()
            .map(|j| entry(j))
            .collect();
        let mut whole = old.clone();
        whole.extend([reply(&call("X")), result("X")].iter().map(|j| entry(j)));
        let alone = Ending::of(&whole[3..]);
        let want = Ending::of(&whole);
        assert_ne!(
            alone.interrupt, want.interrupt,
            "the case must tell the two apart"
        );
        assert_eq!(Ending::of(&old).extended(3, &whole[3..]), None);
        // Without the repeated id the last lines decide, and agree with the whole view.
        let mut fresh = old.clone();
        fresh.extend([reply(&call("Y")), result("Y")].iter().map(|j| entry(j)));
        assert_eq!(
            Ending::of(&old).extended(3, &fresh[3..]),
            Some(Ending::of(&fresh))
        );
    }

    /// Whether the view ends in a local-command group is decided by looking back to the last
    /// assistant reply: last lines without one cannot decide it.
    #[test]
    fn last_lines_without_a_reply_decline() {
        let caveat = r#"{"type":"user","isMeta":true,"message":{"role":"user","content":"<local-command-caveat>Caveat</local-command-caveat>"}}"#;
        let old: Vec<ViewEntry> = [
            prompt("go"),
            reply(r#"{"type":"text","text":"done"}"#),
            caveat.to_owned(),
        ]
        .iter()
        .map(|j| entry(j))
        .collect();
        let mut whole = old.clone();
        whole.push(entry(&prompt("again")));
        assert_eq!(Ending::of(&whole).interrupt, Interrupt::None);
        assert_eq!(
            Ending::of(&whole[3..]).interrupt,
            Interrupt::InterruptedPrompt,
            "the case must tell the two apart"
        );
        assert_eq!(Ending::of(&old).extended(3, &whole[3..]), None);
        assert_eq!(
            Ending::of(&old).extended(1, &whole[1..]),
            Some(Ending::of(&whole))
        );
    }

    /// On every fixture and real transcript, the ending of the resume view extended from any
    /// prefix of it, reading back to any of the prefix's last assistant lines, is either
    /// declined or the ending of the whole view.
    #[test]
    fn an_extended_ending_is_the_whole_views_or_none() {
        let files = crate::testing::fixture_files();
        let (mut decided, mut declined) = (0, 0);
        for path in files {
            let t = Transcript::open(&path).unwrap();
            let Ok(res) = resolve(&t, ResolveOptions::default()) else {
                continue;
            };
            let view = read_view(&path, &res.chain, &t.names).unwrap();
            let whole = Ending::of_parsed(&view);
            for cut in 1..view.len() {
                let old = Ending::of_parsed(&view[..cut]);
                let assistants = (0..cut)
                    .rev()
                    .filter(|&i| view[i].link.kind == Kind::Assistant)
                    .take(2);
                for from in assistants.chain([cut]) {
                    match old.extended(u32::try_from(from).unwrap(), &view[from..]) {
                        Some(e) => {
                            decided += 1;
                            assert_eq!(e, whole, "{} cut at {cut} from {from}", path.display());
                        }
                        None => declined += 1,
                    }
                }
            }
        }
        eprintln!("decided {decided}, declined {declined}");
        assert!(decided > declined, "decided {decided}, declined {declined}");
    }

    /// On every fixture and real transcript, the ending of the resume view decided from its
    /// last entries (starting from 1, 3, 8 or 32 of them), of the view in memory and of its
    /// lines read a batch at a time, is the ending of every line parsed at once; most views
    /// longer than the entries first read are decided before their first entry.
    #[test]
    fn the_ending_decided_from_the_last_entries_is_the_whole_views() {
        let (mut windowed, mut whole_read) = (0, 0);
        for path in crate::testing::fixture_files() {
            let t = Transcript::open(&path).unwrap();
            let Ok(res) = resolve(&t, ResolveOptions::default()) else {
                continue;
            };
            let view = read_view(&path, &res.chain, &t.names).unwrap();
            let want = Ending::of_parsed(&view);
            let ids = Ending::naming(view.iter().map(Ok)).unwrap();
            for back in [1, 3, 8, 32] {
                let (got, from) = ids
                    .decide(view.len(), back, |from| {
                        Ok(std::borrow::Cow::Borrowed(&view[from..]))
                    })
                    .unwrap();
                assert_eq!(got, want, "{} from the last {back}", path.display());
                if from > 0 {
                    windowed += 1;
                } else if view.len() > back {
                    whole_read += 1;
                }
            }
            assert_eq!(Ending::of(&view), want, "{}", path.display());
            let lines = Ending::of_lines(&path, &res.chain, &t.names).unwrap();
            assert_eq!(lines, want, "{}", path.display());
        }
        eprintln!("decided from the last entries {windowed}, from all {whole_read}");
        assert!(windowed > whole_read, "{windowed} vs {whole_read}");
    }
}
