//! The catalog's answers read from a sidecar: a session's sub-agents and inline agent targets
//! from its sidechain rows, else from a full scan of the session (and why).

use std::path::Path;

use super::AgentInfo;
use super::inline::InlineTarget;
use crate::chain::Transcript;
use crate::error::{Error, Result};
use crate::index::read::sidechains::SidechainRows;
use crate::index::{Sidecars, Source};

/// The sub-agents of a session, and where its inline (1.0.x) agents were read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agents {
    /// Sorted by layout, then id.
    pub agents: Vec<AgentInfo>,
    /// [`Source::Index`], or a full scan of the session and why the index was not used.
    pub source: Source,
}

/// The sub-agents of the session at `session_path` (all three layouts), sorted by layout,
/// then id. Inline agents are read from the index (its sidechain rows); when the index
/// cannot be used, from a scan of the session ([`Agents::source`] says which).
pub(crate) fn agents(sidecars: &Sidecars, session_path: &Path) -> Result<Agents> {
    let (side, source) = sidechains(sidecars, session_path)?;
    let agents = super::agents::agents_with(session_path, &side.rows, &side.names)?;
    Ok(Agents { agents, source })
}

/// The inline agents of a session file as targets, from the index (else a scan).
pub(crate) fn inline_targets(
    sidecars: &Sidecars,
    session_path: &Path,
) -> Result<Vec<InlineTarget>> {
    let (side, _) = sidechains(sidecars, session_path)?;
    super::inline::targets(session_path, &side.rows, &side.names)
}

/// The sidechain rows of a session from the index, else from a full scan (and why).
fn sidechains(sidecars: &Sidecars, session_path: &Path) -> Result<(SidechainRows, Source)> {
    let why = match sidecars.sidechain_rows(session_path) {
        Ok(Some(rows)) => return Ok((rows, Source::Index)),
        Ok(None) => "the index was damaged".to_owned(),
        Err(e @ (Error::Io { .. } | Error::UnknownLeaf { .. })) => return Err(e),
        Err(e) => e.to_string(),
    };
    let t = Transcript::open(session_path).map_err(|e| Error::io(session_path, e))?;
    let rows = super::inline::sidechain_rows(&t);
    Ok((
        SidechainRows {
            rows,
            names: t.names,
        },
        Source::Transcript(why),
    ))
}
