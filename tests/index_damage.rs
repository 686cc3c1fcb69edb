//! A damaged or foreign index is detected and rebuilt; the answers never change.

use std::path::{Path, PathBuf};

use chainlog::Source;
use chainlog::Store;
use chainlog::reference::ResolveOptions;
use chainlog::reference::Transcript;
use chainlog::reference::resolve;
use chainlog::sidecar::INDEX_SCHEMA_VERSION;
use redb::{ReadableDatabase, TableDefinition};

const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

fn setup() -> (tempfile::TempDir, PathBuf, Store, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir
        .path()
        .join("projects/-p/55555555-5555-4555-8555-555555555555.jsonl");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/example.jsonl"),
        &path,
    )
    .unwrap();
    let store = Store::new(dir.path().join("index"));
    store.catch_up(&path).unwrap();
    let db = store.db_path(&path);
    assert!(db.is_file());
    (dir, path, store, db)
}

fn assert_answers(store: &Store, path: &Path) {
    let t = Transcript::open(path).unwrap();
    let want = resolve(&t, ResolveOptions::default()).unwrap();
    let got = store.resolve(path, ResolveOptions::default()).unwrap();
    assert_eq!(got.resolution, want);
    assert_eq!(got.source, Source::Index, "the index was rebuilt and used");
}

fn schema(db: &Path) -> Option<u32> {
    let mut b = redb::Builder::new();
    b.set_concurrency_mode(redb::ConcurrencyMode::MultiWriter);
    let db = b.open_read_only(db).ok()?;
    let txn = db.begin_read().ok()?;
    let t = txn.open_table(META).ok()?;
    let v = t.get("schema").ok()??;
    Some(u32::from_le_bytes(v.value().try_into().ok()?))
}

#[test]
fn another_schema_version_is_rebuilt() {
    let (_dir, path, store, db) = setup();
    {
        let mut b = redb::Builder::new();
        b.set_concurrency_mode(redb::ConcurrencyMode::MultiWriter);
        let d = b.open(&db).unwrap();
        let txn = d.begin_write().unwrap();
        txn.open_table(META)
            .unwrap()
            .insert("schema", 999u32.to_le_bytes().as_slice())
            .unwrap();
        txn.commit().unwrap();
    }
    assert_eq!(schema(&db), Some(999));
    assert_answers(&store, &path);
    assert_eq!(schema(&db), Some(INDEX_SCHEMA_VERSION));
}

#[test]
fn a_truncated_index_is_rebuilt() {
    let (_dir, path, store, db) = setup();
    let len = std::fs::metadata(&db).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&db)
        .unwrap()
        .set_len(len / 3)
        .unwrap();
    assert_answers(&store, &path);
}

#[test]
fn a_deleted_index_is_rebuilt() {
    let (_dir, path, store, db) = setup();
    std::fs::remove_file(&db).unwrap();
    assert_answers(&store, &path);
    assert!(db.is_file());
}

#[test]
fn garbage_in_place_of_the_index_is_rebuilt() {
    let (_dir, path, store, db) = setup();
    std::fs::write(&db, b"not a redb file at all").unwrap();
    assert_answers(&store, &path);
}

#[test]
fn flipped_bytes_never_change_an_answer() {
    let (_dir, path, store, db) = setup();
    let clean = std::fs::read(&db).unwrap();
    for k in 0..40usize {
        let mut bytes = clean.clone();
        let i = (k * 104_729 + 977) % bytes.len();
        bytes[i] ^= 0xff;
        std::fs::write(&db, &bytes).unwrap();
        let t = Transcript::open(&path).unwrap();
        let want = resolve(&t, ResolveOptions::default()).unwrap();
        let got = store.resolve(&path, ResolveOptions::default()).unwrap();
        assert_eq!(got.resolution, want, "after flipping byte {i}");
    }
}
