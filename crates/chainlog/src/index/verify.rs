//! `verify`: compare what the index answers with a full scan, and say where they differ.

use std::path::Path;

use super::Store;
use crate::chain::{Resolution, ResolveOptions, Stop, Transcript, View, resolve};
use crate::error::{Error, Result};
use crate::transcript::id::IdNames;

/// One difference between the index and the reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// What differs (`leaf`, `chain`, `leaves`, `bad lines`, ...), with both values.
    pub what: String,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.what)
    }
}

/// Compares the index of `transcript` with a full scan, for both views. The index answers
/// first (catching up); the scan then reads exactly the prefix that answer covers, so lines
/// appended meanwhile by a writer are no difference.
pub fn verify(store: &Store, transcript: &Path) -> Result<Vec<Difference>> {
    let mut diffs = Vec::new();
    let mut scanned: Option<(u64, Transcript)> = None;
    for view in [View::Resume, View::Full] {
        let opts = ResolveOptions {
            leaf: None,
            view,
            ..Default::default()
        };
        let got = store.resolve_indexed(transcript, opts)?;
        let Some(got) = got else {
            diffs.push(Difference {
                what: "the index was damaged and could not be rebuilt".into(),
            });
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
            None => diffs.push(Difference {
                what: format!("{label}: the reference found no leaf but the index did"),
            }),
        }
        if view == View::Resume && got.bad_lines != t.bad_lines {
            diffs.push(Difference {
                what: format!(
                    "bad lines: reference {} at lines {:?}, index {} at lines {:?}",
                    t.bad_lines.len(),
                    t.bad_lines.iter().map(|b| b.pos.line).collect::<Vec<_>>(),
                    got.bad_lines.len(),
                    got.bad_lines.iter().map(|b| b.pos.line).collect::<Vec<_>>()
                ),
            });
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
    label: &str,
    want: &Resolution,
    got: &Resolution,
    t: &Transcript,
    out: &mut Vec<Difference>,
) {
    let name = |id: crate::transcript::id::Id| t.names.name(id);
    if want.leaf != got.leaf {
        out.push(Difference {
            what: format!(
                "{label}: leaf: reference {:?}, index {:?}",
                want.leaf.map(|(id, r)| (name(id), r)),
                got.leaf.map(|(id, r)| (name(id), r))
            ),
        });
    }
    if want.chain != got.chain {
        let at = want
            .chain
            .iter()
            .zip(&got.chain)
            .position(|(a, b)| a != b)
            .unwrap_or(want.chain.len().min(got.chain.len()));
        out.push(Difference {
            what: format!(
                "{label}: chain differs at position {at} (reference {} messages, index {}): reference {:?}, index {:?}",
                want.chain.len(),
                got.chain.len(),
                want.chain.get(at).map(|l| (name(l.uuid), l.pos.line)),
                got.chain.get(at).map(|l| (name(l.uuid), l.pos.line)),
            ),
        });
    }
    if want.leaves != got.leaves {
        out.push(Difference {
            what: format!(
                "{label}: leaves: reference {}, index {}",
                want.leaves.len(),
                got.leaves.len()
            ),
        });
    }
    if want.stop != got.stop || want.chain_break != got.chain_break {
        out.push(Difference {
            what: format!(
                "{label}: walk end: reference {}, index {}",
                stop_text(want.stop, &t.names),
                stop_text(got.stop, &t.names)
            ),
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
