//! The resume views (and listing rows) a catch-up of many stores for the sessions it indexed.
//!
//! # Context
//! `chainlog index` stores each session's default resume view so its first resume is a range
//! read, and each session's listing row so the first `ls` reads no transcript. Walked from the
//! index, a view costs a read transaction, the walk through redb and a read of its lines;
//! the listing row a second read and scan of the whole file. In a project of 20,000 small
//! sessions (every `claude -p` run is one) that was most of the catch-up (issue 34).
//!
//! # Design
//! A session indexed from zero in this catch-up whose file is small ([`WHOLE_MAX`]) is read
//! whole once more and scanned by the reference loader: its view is resolved from that scan
//! (the answer the index walk gives, which `verify` checks), how it ends is read from the same
//! bytes, and the caller's [`Sessions::listing_row`] computes its listing row from them too.
//! The read is kept only when the file is still the state just indexed (identity, length,
//! times, before and after the read), and no link is followed. Any other session is walked
//! from the index as a first resume would walk it. The views of a batch are walked on every
//! core and written in one write transaction, each only if its transcript is still at the
//! state it was walked for.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use bytes::Bytes;

use crate::chain::{Resolution, Transcript, resolve};
use crate::index::db::open::IndexDb;
use crate::index::format::schema::{FILES, FileState};
use crate::index::read;
use crate::index::write::ingest::{CatchUp, Stat, ViewUpdate, file_state, now_ns};
use crate::resume::interrupt::Ending;

/// Files of up to this many bytes are read whole to store their view and listing row (the
/// size up to which a listing scan reads a file whole, `catalog::facts`).
pub const WHOLE_MAX: u64 = 1 << 20;

/// What a catch-up of many does beside the index for the sessions among its transcripts: the
/// floors above the index know what a session file is and what a listing row holds.
#[derive(Clone, Copy)]
pub(crate) struct Sessions {
    /// Whether a transcript is a session's: its resume view is stored.
    pub is_session: fn(&Path) -> bool,
    /// The listing row of a session read whole, stored with its view; `None` leaves it to the
    /// listing.
    pub listing_row: fn(&WholeRead<'_>) -> Option<Vec<u8>>,
}

/// A session file just indexed from zero, read whole again and scanned.
pub(crate) struct WholeRead<'a> {
    pub path: &'a Path,
    /// Its key in the index (the listing table's key of a file that is not a link).
    pub key: &'a str,
    pub bytes: &'a [u8],
    pub transcript: &'a Transcript,
    /// The file's metadata, taken before the read (and unchanged after it).
    pub meta: &'a std::fs::Metadata,
    /// When the read started.
    pub checked_at_ns: i128,
}

/// A session whose view is to be stored: its path, key, the state it was just caught up to,
/// and whether it was indexed from zero in that catch-up (its whole file was new).
pub(crate) type Fresh<'a> = (&'a Path, &'a str, FileState, bool);

/// A resume view walked for a transcript just caught up.
pub(crate) struct Walked<'a> {
    key: &'a str,
    /// The state it was walked for.
    st: FileState,
    resolution: Resolution,
    ending: Ending,
    /// The session's listing row, when its file was read whole.
    listing: Option<Vec<u8>>,
}

/// Walks the default resume view of each session of `fresh` and reads how it ends, on every
/// core: from a whole read of a small file indexed from zero ([`read_whole`]), else from the
/// index, each walk in its own read transaction. A view that holds a line longer than
/// [`read::view::VIEW_LINE_MAX`], or that fails, is left to the session's first resume (best
/// effort, as a resume's own store).
pub(crate) fn walk_views<'a>(
    db: &IndexDb,
    fresh: Vec<Fresh<'a>>,
    sessions: Sessions,
) -> Vec<Walked<'a>> {
    use rayon::prelude::*;
    fresh
        .into_par_iter()
        .filter_map(|(path, key, st, from_zero)| {
            if from_zero && let Some(w) = read_whole(path, key, &st, sessions) {
                return Some(w);
            }
            let ans = crate::index::query(db.db(), st.clone(), path, read::view::OPTIONS, false)
                .ok()??;
            let longest = ans.resolution.chain.iter().map(|l| l.pos.len).max();
            if ans.state.is_none() || longest.unwrap_or(0) > read::view::VIEW_LINE_MAX {
                return None;
            }
            let ending = Ending::of_lines(path, &ans.resolution.chain, &ans.names).ok()?;
            Some(Walked {
                key,
                st,
                resolution: ans.resolution,
                ending,
                listing: None,
            })
        })
        .collect()
}

/// The view (and listing row) of the session at `path`, just indexed from zero to `st`, from
/// one read of the whole file; `None` when it is larger than [`WHOLE_MAX`], a link, or not
/// the state indexed any more.
fn read_whole<'a>(
    path: &Path,
    key: &'a str,
    st: &FileState,
    sessions: Sessions,
) -> Option<Walked<'a>> {
    if st.indexed_len > WHOLE_MAX || st.torn_tail.is_some() {
        return None;
    }
    let checked_at_ns = now_ns();
    let mut file = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    let stat = Stat::from_meta(&meta);
    let indexed = |s: &Stat| {
        (s.dev, s.ino, s.len, s.mtime_ns, s.ctime_ns)
            == (st.dev, st.ino, st.indexed_len, st.mtime_ns, st.ctime_ns)
    };
    if !indexed(&stat) {
        return None;
    }
    let mut bytes = Vec::with_capacity(usize::try_from(stat.len).ok()? + 1);
    file.read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 != stat.len || !Stat::from_file(&file).is_some_and(|s| indexed(&s)) {
        return None;
    }
    let bytes = Bytes::from(bytes);
    let mut t = Transcript::scan_bytes(&bytes);
    t.path = Some(path.to_path_buf());
    let resolution = resolve(&t, read::view::OPTIONS).ok()?;
    let entries = crate::resume::body::view_in(&bytes, path, &resolution.chain, &t.names).ok()?;
    let ending = Ending::of(&entries);
    drop(entries);
    let listing = (sessions.listing_row)(&WholeRead {
        path,
        key,
        bytes: &bytes,
        transcript: &t,
        meta: &meta,
        checked_at_ns,
    });
    Some(Walked {
        key,
        st: st.clone(),
        resolution,
        ending,
        listing,
    })
}

/// Stores the views (and listing rows) of `walked` in one write transaction, each only if its
/// transcript is still at the state it was walked for; returns the keys of those stored.
pub(crate) fn write_views<'a>(db: &IndexDb, walked: &[Walked<'a>]) -> Vec<&'a str> {
    if walked.is_empty() {
        return Vec::new();
    }
    crate::index::db::guard::isolate(|| -> std::result::Result<Vec<&'a str>, redb::Error> {
        let txn = db.begin_write()?;
        let current: Vec<bool> = {
            let files = txn.open_table(FILES)?;
            walked
                .iter()
                .map(|w| file_state(&files, w.key).ok().flatten().as_ref() == Some(&w.st))
                .collect()
        };
        let mut stored = Vec::new();
        let mut rows = Vec::new();
        for (w, current) in walked.iter().zip(current) {
            if current {
                read::view::store(&txn, &w.st, &w.resolution, &w.ending)?;
                stored.push(w.key);
                rows.extend(w.listing.as_deref().map(|row| (w.key, row)));
            }
        }
        crate::index::db::listing::insert_rows(&txn, rows)?;
        txn.commit()?;
        Ok(stored)
    })
    .and_then(std::result::Result::ok)
    .unwrap_or_default()
}

/// Says [`ViewUpdate::Stored`] of each of `done` whose key is in `stored`.
pub(crate) fn mark_stored(
    done: &mut [(usize, CatchUp, FileState)],
    keys: &[String],
    stored: &std::collections::HashSet<String>,
) {
    for (i, d, _) in done {
        if stored.contains(&keys[*i]) {
            d.view = ViewUpdate::Stored;
        }
    }
}

/// The transcripts among `done` whose resume view is to be walked and stored: sessions with
/// new lines the stored view was not extended with, or empty (an empty view).
pub(crate) fn fresh_views<'a>(
    paths: &'a [std::path::PathBuf],
    keys: &'a [String],
    done: &[(usize, CatchUp, FileState)],
    sessions: Sessions,
) -> Vec<Fresh<'a>> {
    done.iter()
        .filter(|(i, d, st)| {
            let stale = d.bytes > 0 && d.view != ViewUpdate::Extended;
            (stale || st.indexed_len == 0) && (sessions.is_session)(&paths[*i])
        })
        .map(|(i, d, st)| {
            let from_zero = d.bytes > 0 && d.bytes == st.indexed_len;
            (
                paths[*i].as_path(),
                keys[*i].as_str(),
                st.clone(),
                from_zero,
            )
        })
        .collect()
}
