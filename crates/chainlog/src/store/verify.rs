//! `verify`: compare what the index answers with a full scan, and say where they differ.

use std::path::{Path, PathBuf};

use super::Store;
use crate::chain::{LeafRule, Resolution, ResolveOptions, Stop, Transcript, View, resolve};
use crate::error::{Error, Result};
use crate::id::IdNames;
use crate::index::Answer;
use crate::index::write::ingest::CatchUp;

/// One difference between the index and the reference (ids as the transcript wrote them;
/// `view` is `"resume view"` or `"full view"`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Difference {
    /// The index could not answer (damaged, and the rebuild failed too).
    #[error("the index was damaged and could not be rebuilt")]
    Damaged,
    /// The index chose a leaf where the reference found none.
    #[error("{view}: the reference found no leaf but the index did")]
    NoReferenceLeaf {
        /// Which view.
        view: &'static str,
    },
    /// Different chosen leaves (uuid and rule).
    #[error("{view}: leaf: reference {}, index {}", leaf_text(reference.as_ref()), leaf_text(index.as_ref()))]
    Leaf {
        /// Which view.
        view: &'static str,
        /// The reference's leaf.
        reference: Option<(String, LeafRule)>,
        /// The index's leaf.
        index: Option<(String, LeafRule)>,
    },
    /// The chains differ from `at` on (each side's message there: uuid and line).
    #[error(
        "{view}: chain differs at position {at} (reference {reference_len} messages, index {index_len}): reference {}, index {}",
        entry_text(reference.as_ref()),
        entry_text(index.as_ref())
    )]
    Chain {
        /// Which view.
        view: &'static str,
        /// The first position where they differ.
        at: usize,
        /// The reference chain's length.
        reference_len: usize,
        /// The index chain's length.
        index_len: usize,
        /// The reference's message at `at`.
        reference: Option<(String, u64)>,
        /// The index's message at `at`.
        index: Option<(String, u64)>,
    },
    /// Different leaf sets (their sizes).
    #[error("{view}: leaves: reference {reference}, index {index}")]
    Leaves {
        /// Which view.
        view: &'static str,
        /// How many leaves the reference found.
        reference: usize,
        /// How many the index found.
        index: usize,
    },
    /// The walks ended differently.
    #[error("{view}: walk end: reference {reference}, index {index}")]
    WalkEnd {
        /// Which view.
        view: &'static str,
        /// How the reference's walk ended.
        reference: String,
        /// How the index's walk ended.
        index: String,
    },
    /// No materialised resume view is stored for the indexed state after a resume.
    #[error("the resume view is not materialised")]
    NotMaterialised,
    /// Different skipped lines (their line numbers).
    #[error("bad lines: reference {} at lines {reference:?}, index {} at lines {index:?}", reference.len(), index.len())]
    BadLines {
        /// Lines the reference skipped.
        reference: Vec<u64>,
        /// Lines the index skipped.
        index: Vec<u64>,
    },
}

fn leaf_text(leaf: Option<&(String, LeafRule)>) -> String {
    leaf.map_or_else(|| "none".into(), |(id, rule)| format!("{id} ({rule:?})"))
}

fn entry_text(entry: Option<&(String, u64)>) -> String {
    entry.map_or_else(|| "none".into(), |(id, line)| format!("{id} (line {line})"))
}

/// Compares the index of `transcript` with a full scan, for both views. The index answers
/// first (catching up); the scan then reads exactly the prefix that answer covers, so lines
/// appended meanwhile by a writer are no difference.
pub fn verify(store: &Store, transcript: &Path) -> Result<Vec<Difference>> {
    // The index itself is checked: caught up first, so no answer is read from new lines in
    // memory instead.
    store.catch_up(transcript)?;
    let mut walked = Vec::new();
    for view in [View::Resume, View::Full] {
        let opts = ResolveOptions {
            leaf: None,
            view,
            ..Default::default()
        };
        walked.push((view, store.resolve_indexed(transcript, opts)?));
    }
    // The materialised resume view is a cache of the same answer: compare it too (a resume
    // stores it when none is stored for the indexed state).
    store.conversation(transcript, &crate::ResumeOptions::default())?;
    let stored = store.materialised(transcript)?;
    differences(transcript, walked, stored)
}

/// [`verify`] of each of `transcripts`, `done` called with each answer in order: caught up
/// together ([`Store::catch_up_all`]), then the index's answers read under one read-only open
/// per sidecar and compared with the scans on every core, a thousand transcripts at a time
/// (memory bounded by their answers). A transcript the index holds no answer or stored view
/// for is verified on its own. Returns how many were.
pub fn verify_all(
    store: &Store,
    transcripts: &[PathBuf],
    mut done: impl FnMut(&Path, Result<Vec<Difference>>),
) -> usize {
    use rayon::prelude::*;
    let mut alone = 0;
    let caught: Vec<Result<CatchUp>> = store.catch_up_all(transcripts, |_, _| {});
    for (chunk, caught) in transcripts.chunks(1024).zip(caught.chunks(1024)) {
        let held = store.sidecars.held_all(chunk);
        let compared: Vec<Option<Result<Vec<Difference>>>> = chunk
            .par_iter()
            .zip(held)
            .zip(caught)
            .map(|((t, held), caught)| {
                let held = held.filter(|_| caught.is_ok())?;
                let walked = vec![
                    (View::Resume, Some(held.resume)),
                    (View::Full, Some(held.full)),
                ];
                Some(differences(t, walked, Some(held.stored)))
            })
            .collect();
        for (t, r) in chunk.iter().zip(compared) {
            done(
                t,
                r.unwrap_or_else(|| {
                    alone += 1;
                    verify(store, t)
                }),
            );
        }
    }
    alone
}

/// The differences between a full scan of `transcript` and what the index answered: the
/// walks of `walked` (`None`: damaged) and the stored view (`None`: not stored). Each answer is
/// compared with a scan of the prefix it covers.
fn differences(
    transcript: &Path,
    walked: Vec<(View, Option<Answer>)>,
    stored: Option<Answer>,
) -> Result<Vec<Difference>> {
    let mut diffs = Vec::new();
    let mut scanned: Option<(u64, Transcript)> = None;
    for (view, got) in walked {
        let opts = ResolveOptions {
            leaf: None,
            view,
            ..Default::default()
        };
        let Some(got) = got else {
            diffs.push(Difference::Damaged);
            continue;
        };
        if scanned.as_ref().is_none_or(|(at, _)| *at != got.cursor) {
            scanned = Some((got.cursor, scan_prefix(transcript, got.cursor)?));
        }
        let t = &scanned.as_ref().expect("scanned above").1;
        let want = resolve(t, opts).ok();
        let label = if view == View::Full {
            "full view"
        } else {
            "resume view"
        };
        match want {
            Some(want) => compare(label, &want, &got.resolution, t, &mut diffs),
            None => diffs.push(Difference::NoReferenceLeaf { view: label }),
        }
        let kept = &t.bad_lines[..t.bad_lines.len().min(crate::index::BAD_LINES_KEPT)];
        if view == View::Resume
            && (got.bad_lines != kept || got.bad_line_count != t.bad_lines.len() as u64)
        {
            diffs.push(Difference::BadLines {
                reference: t.bad_lines.iter().map(|b| b.pos.line).collect(),
                index: got.bad_lines.iter().map(|b| b.pos.line).collect(),
            });
        }
    }
    match stored {
        None => diffs.push(Difference::NotMaterialised),
        Some(got) => {
            if scanned.as_ref().is_none_or(|(at, _)| *at != got.cursor) {
                scanned = Some((got.cursor, scan_prefix(transcript, got.cursor)?));
            }
            let t = &scanned.as_ref().expect("scanned above").1;
            match resolve(t, crate::index::read::view::OPTIONS).ok() {
                Some(want) => compare(
                    "materialised resume view",
                    &want,
                    &got.resolution,
                    t,
                    &mut diffs,
                ),
                None => diffs.push(Difference::NoReferenceLeaf {
                    view: "materialised resume view",
                }),
            }
        }
    }
    Ok(diffs)
}

/// A full scan of the first `len` bytes of `transcript`.
fn scan_prefix(transcript: &Path, len: u64) -> Result<Transcript> {
    use std::io::Read;
    let file = std::fs::File::open(transcript).map_err(|e| Error::io(transcript, e))?;
    let mut t = Transcript::scan_reader(file.take(len)).map_err(|e| Error::io(transcript, e))?;
    t.path = Some(transcript.to_path_buf());
    Ok(t)
}

fn compare(
    label: &'static str,
    want: &Resolution,
    got: &Resolution,
    t: &Transcript,
    out: &mut Vec<Difference>,
) {
    let name = |id: crate::id::Id| t.names.name(id);
    if want.leaf != got.leaf {
        out.push(Difference::Leaf {
            view: label,
            reference: want.leaf.map(|(id, r)| (name(id), r)),
            index: got.leaf.map(|(id, r)| (name(id), r)),
        });
    }
    if want.chain != got.chain {
        let at = want
            .chain
            .iter()
            .zip(&got.chain)
            .position(|(a, b)| a != b)
            .unwrap_or(want.chain.len().min(got.chain.len()));
        out.push(Difference::Chain {
            view: label,
            at,
            reference_len: want.chain.len(),
            index_len: got.chain.len(),
            reference: want.chain.get(at).map(|l| (name(l.uuid), l.pos.line)),
            index: got.chain.get(at).map(|l| (name(l.uuid), l.pos.line)),
        });
    }
    if want.leaves != got.leaves {
        out.push(Difference::Leaves {
            view: label,
            reference: want.leaves.len(),
            index: got.leaves.len(),
        });
    }
    if want.stop != got.stop || want.chain_break != got.chain_break {
        out.push(Difference::WalkEnd {
            view: label,
            reference: stop_text(want.stop, &t.names),
            index: stop_text(got.stop, &t.names),
        });
    }
}

/// Where a walk ended, ids as the transcript wrote them.
fn stop_text(stop: Option<Stop>, names: &IdNames) -> String {
    match stop {
        None => "no walk".into(),
        Some(Stop::Root) => "a root".into(),
        Some(Stop::MissingParent { child, parent }) => format!(
            "missing parent {} of {}",
            names.name(parent),
            names.name(child)
        ),
        Some(Stop::Cycle { at }) => format!("a cycle at {}", names.name(at)),
    }
}
