//! A damaged or foreign index is detected and rebuilt; the answers never change.

use crate::util;

use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use chainlog::Source;
use chainlog::Store;
use chainlog::reference::ResolveOptions;
use chainlog::reference::Transcript;
use chainlog::reference::View;
use chainlog::reference::resolve;
use chainlog::sidecar::INDEX_SCHEMA_VERSION;
use chainlog::{Answer, ResumeOptions};
use rand::{Rng, SeedableRng};
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

/// A sidecar of the current version that lacks a table (written by a build whose layout
/// changed without a new version, as happened between two commits once) is rebuilt, not
/// answered around: the read-only path that a trusted sidecar takes checks the tables too.
#[test]
fn a_sidecar_without_one_of_its_tables_is_rebuilt() {
    let (_dir, path, store, db) = setup();
    let names: Vec<String> = {
        let d = redb::Builder::new().open_read_only(&db).unwrap();
        let txn = d.begin_read().unwrap();
        txn.list_tables()
            .unwrap()
            .map(|h| redb::TableHandle::name(&h).to_owned())
            .collect()
    };
    assert!(names.len() > 10, "{names:?}");
    for name in &names {
        {
            let mut b = redb::Builder::new();
            b.set_concurrency_mode(redb::ConcurrencyMode::MultiWriter);
            let d = b.open(&db).unwrap();
            let txn = d.begin_write().unwrap();
            let handle = txn
                .list_tables()
                .unwrap()
                .find(|h| redb::TableHandle::name(h) == name.as_str())
                .unwrap();
            assert!(txn.delete_table(handle).unwrap(), "{name}");
            txn.commit().unwrap();
        }
        // Trusted as chainlog's own file: the marker matches it again.
        rot_in_place(&db, &std::fs::read(&db).unwrap());
        assert_answers(&store, &path);
        let d = redb::Builder::new().open_read_only(&db).unwrap();
        let txn = d.begin_read().unwrap();
        assert!(
            txn.list_tables()
                .unwrap()
                .any(|h| redb::TableHandle::name(&h) == name.as_str()),
            "{name} is back"
        );
    }
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

/// Damage that a stat cannot see: bytes rewritten in place (same inode and length), the
/// modification time put back, and the `.verified` marker rewritten to match the file as it is
/// now (only the status-change time, which no user can set back, would tell; bit rot on the
/// disk does not change it either). The full page check is then skipped, as for real bit rot.
fn rot_in_place(db: &Path, bytes: &[u8]) {
    let mtime = std::fs::metadata(db).unwrap().modified().unwrap();
    let mut f = std::fs::OpenOptions::new().write(true).open(db).unwrap();
    f.seek(SeekFrom::Start(0)).unwrap();
    f.write_all(bytes).unwrap();
    f.set_len(bytes.len() as u64).unwrap();
    f.set_modified(mtime).unwrap();
    drop(f);
    let mut marker = db.as_os_str().to_owned();
    marker.push(".verified");
    let marker = PathBuf::from(marker);
    // The marker starts with the boot it was written in (a reboot makes every marker stale):
    // keep it, or the damage would not be silent and the full page check would find it.
    let previous = std::fs::read_to_string(&marker).unwrap_or_default();
    let boot = previous.split(' ').next().unwrap_or("-").to_owned();
    let m = std::fs::metadata(db).unwrap();
    let version = format!(
        "{boot} {} {} {} {} {}",
        m.dev(),
        m.ino(),
        m.len(),
        i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
        i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec())
    );
    assert_eq!(
        previous.split(' ').count(),
        version.split(' ').count(),
        "the marker's format changed ({previous}): rewrite it as chainlog does, or the damage is \
         not silent any more"
    );
    std::fs::write(marker, version).unwrap();
}

#[derive(Debug, Clone, Copy)]
enum Damage {
    /// One bit.
    Bit,
    /// Eight consecutive bits from any bit position.
    Run8,
    /// A whole 4 KiB page zeroed.
    ZeroPage,
}

fn damaged(clean: &[u8], kind: Damage, rng: &mut impl Rng) -> Vec<u8> {
    let mut b = clean.to_vec();
    let bits = b.len() * 8;
    match kind {
        Damage::Bit => {
            let i = rng.random_range(0..bits);
            b[i / 8] ^= 1 << (i % 8);
        }
        Damage::Run8 => {
            let start = rng.random_range(0..bits - 8);
            for i in start..start + 8 {
                b[i / 8] ^= 1 << (i % 8);
            }
        }
        Damage::ZeroPage => {
            let page = rng.random_range(0..b.len().div_ceil(4096));
            let end = (page * 4096 + 4096).min(b.len());
            b[page * 4096..end].fill(0);
        }
    }
    b
}

/// What one damaged read gave.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Tally {
    correct: u32,
    wrong: u32,
    errors: u32,
    panics: u32,
}

impl Tally {
    fn add<T>(
        &mut self,
        r: std::thread::Result<chainlog::Result<T>>,
        right: impl FnOnce(&T) -> bool,
    ) {
        match r {
            Err(_) => self.panics += 1,
            Ok(Err(_)) => self.errors += 1,
            Ok(Ok(v)) if right(&v) => self.correct += 1,
            Ok(Ok(_)) => self.wrong += 1,
        }
    }
}

type AnswerKey = (
    chainlog::Resolution,
    Vec<(String, Option<String>)>,
    Vec<chainlog::reference::BadLine>,
    Option<(u64, u64)>,
    u64,
);

/// The parts of an answer a caller sees (ids also as written, through the answer's names).
fn answer_key(a: &Answer) -> AnswerKey {
    let name = |id| a.names.name(id);
    (
        a.resolution.clone(),
        a.resolution
            .chain
            .iter()
            .map(|l| (name(l.uuid), l.parent.map(name)))
            .collect::<Vec<_>>(),
        a.bad_lines.clone(),
        a.torn_tail,
        a.cursor,
    )
}

/// A generated transcript with every projection (compactions, preserved segments, snips,
/// parallel tool results, sidechains, damaged lines), aged so its stat is trusted.
fn generated_case() -> (tempfile::TempDir, PathBuf, Store, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir
        .path()
        .join("projects/-g/66666666-6666-4666-8666-666666666666.jsonl");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut f = std::fs::File::create(&path).unwrap();
    chainlog_gen::generate_to(&chainlog_gen::GenOptions::small(11), &mut f).unwrap();
    drop(f);
    util::age(&path);
    let store = Store::new(dir.path().join("index"));
    store.catch_up(&path).unwrap();
    let db = store.db_path(&path);
    (dir, path, store, db)
}

/// Rots the sidecar of `path` `trials` times per kind of damage and asks three questions each
/// time (resume view, full view, the resumed conversation), each on freshly rotted bytes.
fn rot_trials(path: &Path, store: &Store, db: &Path, trials: u64) -> Vec<(Damage, Tally)> {
    let full = ResolveOptions {
        view: View::Full,
        ..ResolveOptions::default()
    };
    let opts = [ResolveOptions::default(), full];
    let want: Vec<_> = opts
        .iter()
        .map(|&o| answer_key(&Store::reference(path, o, String::new()).unwrap()))
        .collect();
    let want_entries: Vec<Vec<u8>> = store
        .conversation(
            path,
            &ResumeOptions {
                no_index: true,
                ..ResumeOptions::default()
            },
        )
        .unwrap()
        .entries()
        .iter()
        .map(|e| e.json.to_vec())
        .collect();
    for (o, w) in opts.iter().zip(&want) {
        let a = store.resolve(path, *o).unwrap();
        assert_eq!(a.source, Source::Index);
        assert_eq!(answer_key(&a), *w);
    }
    let clean = std::fs::read(db).unwrap();
    let mut out = Vec::new();
    for kind in [Damage::Bit, Damage::Run8, Damage::ZeroPage] {
        let mut tally = Tally::default();
        for seed in 0..trials {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed * 3 + kind as u64);
            let bytes = damaged(&clean, kind, &mut rng);
            for (o, w) in opts.iter().zip(&want) {
                rot_in_place(db, &bytes);
                let r = catch_unwind(AssertUnwindSafe(|| store.resolve(path, *o)));
                tally.add(r, |a| answer_key(a) == *w);
            }
            rot_in_place(db, &bytes);
            let r = catch_unwind(AssertUnwindSafe(|| {
                store.conversation(path, &ResumeOptions::default())
            }));
            tally.add(r, |c| {
                c.entries().iter().map(|e| &e.json).eq(want_entries.iter())
            });
        }
        // Leave a healthy sidecar for the next kind (a rebuild wrote a different layout).
        rot_in_place(db, &clean);
        out.push((kind, tally));
    }
    out
}

/// Bit rot in the sidecar that no stat sees (#7, "silent damage"): single bits, 8-bit runs and
/// zeroed 4 KiB pages at many seeds, the verified marker kept matching. Every answer is the
/// reference answer or an error — never a different answer, never a panic.
#[test]
fn silent_rot_never_changes_an_answer_or_panics() {
    let trials = std::env::var("CHAINLOG_ROT_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let (_dir, path, store, db) = setup();
    util::age(&path);
    let mut report = rot_trials(&path, &store, &db, trials);
    let (_gdir, gpath, gstore, gdb) = generated_case();
    report.extend(rot_trials(&gpath, &gstore, &gdb, trials));
    eprintln!("rot report (example.jsonl, then generated):");
    for (kind, t) in &report {
        eprintln!("  {kind:?}: {t:?}");
    }
    for (kind, t) in &report {
        assert_eq!((t.wrong, t.panics), (0, 0), "{kind:?}: {t:?}");
    }
}

/// A small sidecar damaged in place without a trace (each of its pages zeroed in turn) that
/// then gains a new transcript: the catch-up writes into the damaged B-trees and then compacts
/// (a transcript indexed from zero into a small sidecar), and redb panics on some damaged pages
/// in both. Such a panic must start the sidecar over, not end the process (7 of 21 pages did
/// before), and both transcripts then answer like the full scan.
#[test]
fn a_silently_damaged_small_sidecar_gaining_a_transcript_neither_panics_nor_answers_wrong() {
    let (dir, path, store, db) = setup();
    drop(store);
    let clean = std::fs::read(&db).unwrap();
    let other = dir
        .path()
        .join("projects/-p/66666666-6666-4666-8666-666666666666.jsonl");
    let mut panics = 0;
    for page in 0..clean.len() / 4096 {
        let mut bytes = clean.clone();
        bytes[page * 4096..(page + 1) * 4096].fill(0);
        rot_in_place(&db, &bytes);
        std::fs::copy(&path, &other).unwrap();
        let store = Store::new(dir.path().join("index"));
        let caught = catch_unwind(AssertUnwindSafe(|| {
            let _ = store.catch_up(&other);
            for p in [&path, &other] {
                let t = Transcript::open(p).unwrap();
                let want = resolve(&t, ResolveOptions::default()).unwrap();
                let got = store.resolve(p, ResolveOptions::default()).unwrap();
                assert_eq!(got.resolution, want, "page {page} zeroed");
            }
        }));
        if caught.is_err() {
            panics += 1;
        }
        std::fs::remove_file(&other).unwrap();
        // The next page is zeroed in the clean file (one that was started over is fresh).
        std::fs::write(&db, &clean).unwrap();
    }
    assert_eq!(
        panics,
        0,
        "panics among {} zeroed pages",
        clean.len() / 4096
    );
}
