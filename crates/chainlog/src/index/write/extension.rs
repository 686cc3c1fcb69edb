//! Keeping the materialised resume view current after a plain append.
//!
//! # Context
//! A view stored by a resume ([`crate::index::read::view`]) answers only the state it was computed for;
//! after an append the next resume had to walk the whole chain again and read every line of it
//! (for how the conversation ends). Most appends continue the chain.
//!
//! # Design
//! Right after a catch-up that appended rows without deriving the projections again (a
//! re-derivation drops the view, see `ingest`), the view stored for the earlier state is
//! extended: the view's head and its last [`TAIL_LINES`] links are read,
//! [`crate::chain::extend`] walks only from the new leaf to the old one (splicing the last
//! responses again when the append continues one), and how the longer conversation ends is
//! decided from its last lines alone ([`Ending::extended`]: the new lines, else back to one of
//! the old view's last [`RETRIES`] assistant lines, else the whole view when all of it was read)
//! with the tool ids the view names. The work and the bytes read follow the append, not the
//! chain. Whatever cannot be proven that way drops the view, and
//! the next resume walks and stores it as before.

use std::ops::Range;
use std::path::Path;

use crate::chain::extend::{Extended, extend};
use crate::chain::{Graph, Link};
use crate::id::{Id, IdNames};
use crate::index::db::guard;
use crate::index::db::guard::isolate;
use crate::index::db::open::IndexDb;
use crate::index::format::schema::{FILES, FileState, VIEW};
use crate::index::read::query::IndexGraph;
use crate::index::read::view::{self, Older, Stored};
use crate::index::write::ingest::{self, ViewUpdate};
use crate::resume::body::read_view;
use crate::resume::interrupt::Ending;
use crate::transcript::envelope::Kind;

/// Links of the old view read with its head: the end that may be spliced again, and the lines
/// that may decide how the longer conversation ends.
pub const TAIL_LINES: usize = 64;

/// Old assistant lines the last lines may reach back to, nearest first.
const RETRIES: usize = 3;

/// Extends the stored view of `transcript` (index key `key`) to `st`, its state just caught
/// up, or drops it. Best effort: a failure leaves the walk to answer.
pub(crate) fn extend_view(
    db: &IndexDb,
    transcript: &Path,
    key: &str,
    st: &FileState,
) -> ViewUpdate {
    // redb panics on some damaged pages (see `guard`): a panic here is a view not extended.
    let planned = isolate(|| plan(db, transcript, st)).unwrap_or(Err(()));
    let write = |f: &dyn Fn(&redb::WriteTransaction) -> Result<bool, redb::Error>| {
        isolate(|| -> Result<bool, redb::Error> {
            let txn = db.begin_write()?;
            {
                let files = txn.open_table(FILES)?;
                if ingest::file_state(&files, key).ok().flatten().as_ref() != Some(st) {
                    return Ok(false);
                }
            }
            let done = f(&txn)?;
            txn.commit()?;
            Ok(done)
        })
        .and_then(Result::ok)
        .unwrap_or(false)
    };
    match planned {
        Ok(None) => ViewUpdate::Untouched,
        Ok(Some((older, ext, ending))) => {
            if write(&|txn| view::store_extended(txn, st, &older, &ext, &ending)) {
                ViewUpdate::Extended
            } else {
                ViewUpdate::Untouched
            }
        }
        Err(()) => {
            write(&|txn| view::clear(txn, st.file).map(|()| true));
            ViewUpdate::Dropped
        }
    }
}

/// The extended view and its ending; `Ok(None)`: no view of an earlier state is stored;
/// `Err(())`: one is, and it cannot be extended.
fn plan(
    db: &IndexDb,
    transcript: &Path,
    st: &FileState,
) -> Result<Option<(Older, Extended, Ending)>, ()> {
    let txn = db.begin_read().map_err(drop)?;
    let older = guard::read("view", || txn.open_table(VIEW))
        .and_then(|t| view::load_older(&t, st, TAIL_LINES))
        .map_err(drop)?;
    let Some(older) = older else {
        return Ok(None);
    };
    let graph = IndexGraph::new(&txn, st.clone()).map_err(drop)?;
    let names = IndexGraph::names(&txn, st).map_err(drop)?;
    let appended = older.rows as usize..st.rows as usize;
    let (ext, ending) = extend_stored(
        &graph,
        transcript,
        &names,
        &older.stored,
        older.len,
        older.checkpoint,
        appended,
    )
    .ok_or(())?;
    Ok(Some((older, ext, ending)))
}

/// The view `stored` of `len` links (its `chain` holding the last ones), chosen with newest
/// checkpoint `checkpoint`, extended over `g` after rows `appended` were appended, with how
/// the longer conversation ends; `None` when that cannot be proven (see the module doc).
/// What a catch-up stores, and what a read-only resume answers from ([`crate::index::read::overlay`]).
pub(crate) fn extend_stored<G: Graph>(
    g: &G,
    transcript: &Path,
    names: &IdNames,
    stored: &Stored,
    len: usize,
    checkpoint: Option<Id>,
    appended: Range<usize>,
) -> Option<(Extended, Ending)> {
    let ext = extend(g, &stored.resolution, len, checkpoint, appended).ok()??;
    // The last lines decide how it ends: the new links alone, else back to one of the old
    // view's last assistant lines among those read, else (the whole old view read) all of it.
    let old = &stored.resolution.chain;
    let tail_start = len - old.len();
    let mut starts = vec![ext.kept];
    starts.extend(
        (tail_start..ext.kept)
            .rev()
            .filter(|&n| old[n - tail_start].kind == Kind::Assistant)
            .take(RETRIES),
    );
    if tail_start == 0 {
        starts.push(0);
    }
    starts.dedup();
    for from in starts {
        let links: Vec<Link> = old[from - tail_start..ext.kept - tail_start]
            .iter()
            .chain(&ext.resolution.chain)
            .cloned()
            .collect();
        let tail = read_view(transcript, &links, names).ok()?;
        let at = u32::try_from(from).ok()?;
        if let Some(ending) = stored.ending.extended(at, &tail) {
            return Some((ext, ending));
        }
    }
    None
}
