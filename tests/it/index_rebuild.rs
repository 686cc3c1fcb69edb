//! `Store::rebuild`: a sidecar's only transcript is rebuilt into a new file (nothing to
//! drop, nothing to compact); one of several transcripts has its rows dropped in place, and
//! the others keep theirs. Either way the answers equal a full scan and listing rows survive.

use crate::util;

use std::path::{Path, PathBuf};

use chainlog::reference::{ResolveOptions, Transcript, resolve};
use chainlog::{Source, Store};

/// The real sessions of one project directory (at least two), copied and aged.
fn project(tmp: &Path) -> Vec<PathBuf> {
    let copies = util::copy_real_sessions(tmp);
    let dir = copies[0].parent().unwrap().to_path_buf();
    let mine: Vec<PathBuf> = copies
        .into_iter()
        .filter(|p| p.parent() == Some(dir.as_path()))
        .collect();
    assert!(mine.len() >= 2, "{mine:?}");
    mine
}

fn assert_index_answers(store: &Store, path: &Path) {
    let want = resolve(&Transcript::open(path).unwrap(), ResolveOptions::default()).unwrap();
    let got = store.resolve(path, ResolveOptions::default()).unwrap();
    assert_eq!(got.source, Source::Index, "{}", path.display());
    assert_eq!(got.resolution, want, "{}", path.display());
}

const STRAY: redb::TableDefinition<u32, u32> = redb::TableDefinition::new("stray");

/// Adds a table chainlog does not know to the sidecar: gone after the file is written anew,
/// still there after a rebuild in place.
fn add_stray_table(db: &Path) {
    let mut b = redb::Builder::new();
    b.set_concurrency_mode(redb::ConcurrencyMode::MultiWriter);
    let d = b.open(db).unwrap();
    let txn = d.begin_write().unwrap();
    txn.open_table(STRAY).unwrap().insert(1, 1).unwrap();
    txn.commit().unwrap();
}

fn has_stray_table(db: &Path) -> bool {
    let d = redb::Builder::new().open_read_only(db).unwrap();
    let txn = redb::ReadableDatabase::begin_read(&d).unwrap();
    txn.list_tables()
        .unwrap()
        .any(|h| redb::TableHandle::name(&h) == "stray")
}

/// Fills the listing rows of `sessions` (what `ls` and `index` do).
fn list(store: &Store, sessions: &[PathBuf]) -> u64 {
    let mut cache = store.facts_cache();
    for p in sessions {
        cache.facts(p).unwrap();
    }
    let scanned = cache.scanned;
    cache.flush().unwrap();
    scanned
}

#[test]
fn the_only_transcript_of_a_sidecar_is_rebuilt_into_a_new_file_that_keeps_the_listing() {
    let tmp = tempfile::tempdir().unwrap();
    let sessions = project(tmp.path());
    let store = Store::new(tmp.path().join("index"));
    let a = &sessions[0];
    store.catch_up(a).unwrap();
    // Every session of the project is listed; only `a` is indexed.
    assert_eq!(list(&store, &sessions), sessions.len() as u64);
    let db = store.db_path(a);
    add_stray_table(&db);

    let done = store.rebuild(a).unwrap();
    assert_eq!(done.bytes, std::fs::metadata(a).unwrap().len());
    assert!(
        !has_stray_table(&db),
        "the sidecar was written anew, not emptied in place"
    );
    assert_index_answers(&store, a);
    assert_eq!(
        list(&store, &sessions),
        0,
        "the listing rows were carried over: no session was read again"
    );
}

#[test]
fn rebuilding_one_of_several_transcripts_keeps_the_others_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let sessions = project(tmp.path());
    let store = Store::new(tmp.path().join("index"));
    for p in &sessions {
        store.catch_up(p).unwrap();
    }
    let db = store.db_path(&sessions[0]);
    add_stray_table(&db);

    store.rebuild(&sessions[0]).unwrap();
    assert!(has_stray_table(&db), "rebuilt in place");
    for p in &sessions[1..] {
        assert_eq!(store.catch_up(p).unwrap().bytes, 0, "{} kept", p.display());
    }
    for p in &sessions {
        assert_index_answers(&store, p);
    }
}
