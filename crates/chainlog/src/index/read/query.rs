//! Answering from the index: the [`Graph`] of one file read from redb, row by row.
//!
//! A resume touches the rows of its chain (a point lookup each), the leaves, and — for the
//! parallel tool-result splice — the `message.id` groups and tool results of the assistants
//! on the chain. Nothing is proportional to the file. The derived state is read through the one
//! decoder ([`crate::index::format::state::Decoder`]); a value that does not decode ends the answer with a
//! typed [`IndexFault`].

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;

use redb::{ReadOnlyTable, ReadTransaction};

use crate::chain::{Graph, MessageRow};
use crate::error::IndexFault;
use crate::id::{Id, IdNames};
use crate::index::db::guard::read;
use crate::index::format::schema::sortable_ts;
use crate::index::format::schema::{
    DERIVED, FORWARD, FileState, IDS, LEAF_TIMES, NAMES, PROGRESS, REPARENTED, RESPONSES, ROWS,
};
use crate::index::format::state::{self, Decoder};
use crate::transcript::envelope::{Flags, Kind, MessageHead};
use crate::transcript::frame::LinePos;

use crate::index::format::schema::{ID_FIRST as ZERO, ID_LAST as MAX};

type ReadDecoder = Decoder<
    ReadOnlyTable<(u32, u32), &'static [u8]>,
    ReadOnlyTable<(u32, [u8; 16]), &'static [u8]>,
    ReadOnlyTable<(u32, u8, [u8; 16]), &'static [u8]>,
    ReadOnlyTable<(u32, [u8; 16], u32), ()>,
>;

/// The projected tree of one indexed file.
pub struct IndexGraph {
    dec: ReadDecoder,
    responses: ReadOnlyTable<(u32, u64), &'static [u8]>,
    leaf_times: ReadOnlyTable<(u32, u8, u64, u32), ()>,
    progress: ReadOnlyTable<(u32, [u8; 16]), &'static [u8]>,
    forward: ReadOnlyTable<(u32, [u8; 16]), ()>,
    cache: RefCell<HashMap<usize, MessageRow>>,
}

impl IndexGraph {
    /// Opens the tables of `st.file` in `txn`.
    pub fn new(txn: &ReadTransaction, st: FileState) -> Result<IndexGraph, IndexFault> {
        Ok(IndexGraph {
            dec: Decoder::new(
                st,
                read("rows", || txn.open_table(ROWS))?,
                read("ids", || txn.open_table(IDS))?,
                read("derived", || txn.open_table(DERIVED))?,
                read("reparented", || txn.open_table(REPARENTED))?,
            )
            .strict(),
            responses: read("responses", || txn.open_table(RESPONSES))?,
            leaf_times: read("leaf_times", || txn.open_table(LEAF_TIMES))?,
            progress: read("progress", || txn.open_table(PROGRESS))?,
            forward: read("forward", || txn.open_table(FORWARD))?,
            cache: RefCell::new(HashMap::new()),
        })
    }

    fn st(&self) -> &FileState {
        self.dec.state()
    }

    fn row(&self, i: usize) -> Result<MessageRow, IndexFault> {
        if let Some(r) = self.cache.borrow().get(&i) {
            return Ok(r.clone());
        }
        let seq = u32::try_from(i)
            .map_err(|_| IndexFault::damaged("rows", format!("row {i} out of range")))?;
        let row = self.dec.row(seq)?;
        self.cache.borrow_mut().insert(i, row.clone());
        Ok(row)
    }

    /// Texts of non-UUID ids of this file.
    pub fn names(txn: &ReadTransaction, st: &FileState) -> Result<IdNames, IndexFault> {
        let f = st.file;
        let t = read("names", || txn.open_table(NAMES))?;
        let texts = read("names", || {
            t.range((f, ZERO)..=(f, MAX))?
                .map(|item| item.map(|(k, v)| (k.value().1, v.value().to_owned())))
                .collect::<Result<Vec<_>, redb::StorageError>>()
        })?;
        if texts.len() as u64 != st.names {
            return Err(IndexFault::damaged(
                "names",
                "fewer or more names than stored",
            ));
        }
        let mut names = IdNames::default();
        for (key, text) in &texts {
            // The key is the hash of the text: a text that does not hash to it is damaged.
            if names.intern(text).0 != *key {
                return Err(IndexFault::damaged(
                    "names",
                    "a name does not match its key",
                ));
            }
        }
        Ok(names)
    }
}

impl IndexGraph {
    /// Whether the index knows `id`: a message or progress entry has it, or an entry named it
    /// before any had it (`forward`). Rows appended with such an id are no plain append.
    pub(crate) fn seen(&self, id: Id) -> Result<bool, IndexFault> {
        let f = self.st().file;
        if self.dec.seq_of(id)?.is_some() {
            return Ok(true);
        }
        read("progress", || {
            Ok::<_, redb::StorageError>(
                self.progress.get((f, id.0))?.is_some() || self.forward.get((f, id.0))?.is_some(),
            )
        })
    }

    /// Whether a row appended under parent `p` leaves the projections as they are (what
    /// `incremental` accepts): `p` is a live message, no progress entry and not the anchor of
    /// the live preserved segment.
    pub(crate) fn plain_parent(&self, p: Id) -> Result<bool, IndexFault> {
        let f = self.st().file;
        let progress = read("progress", || {
            Ok::<_, redb::StorageError>(self.progress.get((f, p.0))?.is_some())
        })?;
        Ok(!progress && self.st().segment_anchor != Some(p) && self.get(p)?.is_some())
    }

    /// Live children of `parent` ([`Decoder::children_of`]).
    pub(crate) fn children_of(&self, parent: Id) -> Result<Vec<(u32, MessageRow)>, IndexFault> {
        self.dec.children_of(parent)
    }

    /// Live assistant rows of response `mid` ([`Graph::group`]). Every assistant row with a
    /// `message.id` is in its response's entry, and `group` is asked for the response of a row:
    /// with `required`, a missing entry is one that damage moved away (its rows would be
    /// silently left out of the splice); the overlay asks without it for a response that may
    /// have only new lines.
    pub(crate) fn response(&self, mid: u64, required: bool) -> Result<Vec<usize>, IndexFault> {
        let f = self.st().file;
        let mut out = Vec::new();
        let v = read("responses", || {
            Ok::<_, redb::StorageError>(self.responses.get((f, mid))?.map(|v| v.value().to_vec()))
        })?;
        let seqs = match v {
            Some(v) => crate::index::format::ids::decode_response(f, mid, &v)
                .ok_or_else(|| IndexFault::damaged("responses", "an entry fails its checksum"))?,
            None if required => {
                return Err(IndexFault::damaged(
                    "responses",
                    "a row's response has no entry",
                ));
            }
            None => Vec::new(),
        };
        for i in seqs {
            let i = i as usize;
            let h = self.row(i)?.head;
            if h.message_id != Some(mid) {
                return Err(IndexFault::damaged(
                    "responses",
                    format!("row {i} is not in the response its entry says"),
                ));
            }
            if h.kind == Kind::Assistant && self.get(h.uuid)? == Some(i) {
                out.push(i);
            }
        }
        Ok(out)
    }

    /// Checks a re-pointed parent `p` of row `i` (a `PARENT` fact): the projections re-point a
    /// row to a message (a live ancestor, a preserved segment's anchor or tail) or to an id a
    /// line named that no line has (`forward`: ingest records the parents of progress entries
    /// and the ids of preserved segments there). One in neither is an `ids` key the damage
    /// changed: without this check the walk would stop there, at a break that is not there.
    fn check_repointed(&self, i: usize, p: Id) -> Result<(), IndexFault> {
        let f = self.st().file;
        if self.dec.seq_of(p)?.is_some()
            || read("forward", || {
                Ok::<_, redb::StorageError>(self.forward.get((f, p.0))?.is_some())
            })?
        {
            return Ok(());
        }
        Err(IndexFault::damaged(
            "ids",
            format!("the re-pointed parent of row {i} is neither indexed nor recorded as missing"),
        ))
    }

    /// Checks the ingest invariant for the on-disk parent `p` of row `i`, when it is also the
    /// effective parent: every id a line names as its parent is a message (`ids`), a progress
    /// entry (`progress`), or was never seen (`forward`). A parent in none of them is an `ids`
    /// key the damage changed: without this check, the lookup would miss and the walk would
    /// bridge or stop at a chain break that is not there. A progress parent of a live row is
    /// always re-pointed (format.md §A5 step 3): one that was not is a `derived` key the damage
    /// changed.
    fn check_named(&self, i: usize, p: Id) -> Result<(), IndexFault> {
        let f = self.st().file;
        if self.dec.seq_of(p)?.is_some() {
            return Ok(());
        }
        let progress = read("progress", || {
            Ok::<_, redb::StorageError>(self.progress.get((f, p.0))?.is_some())
        })?;
        let forward = read("forward", || {
            Ok::<_, redb::StorageError>(self.forward.get((f, p.0))?.is_some())
        })?;
        if progress {
            let uuid = self.row(i)?.head.uuid;
            if self.dec.live(uuid)?.is_some_and(|s| s as usize == i) {
                return Err(IndexFault::damaged(
                    "derived",
                    format!("the progress parent of row {i} is not re-pointed"),
                ));
            }
            return Ok(());
        }
        if forward {
            return Ok(());
        }
        Err(IndexFault::damaged(
            "ids",
            format!("the parent of row {i} is neither indexed nor recorded as missing"),
        ))
    }
}

impl Graph for IndexGraph {
    type Error = IndexFault;

    fn get(&self, id: Id) -> Result<Option<usize>, IndexFault> {
        let Some(i) = self.dec.live(id)?.map(|s| s as usize) else {
            return Ok(None);
        };
        // The position is a bare number in `ids`: the row it names must be the message.
        if self.row(i)?.head.uuid != id {
            return Err(IndexFault::damaged(
                "ids",
                format!("row {i} is not the message its uuid entry names"),
            ));
        }
        Ok(Some(i))
    }

    fn head(&self, i: usize) -> Result<Cow<'_, MessageHead>, IndexFault> {
        Ok(Cow::Owned(self.row(i)?.head))
    }

    fn pos(&self, i: usize) -> Result<LinePos, IndexFault> {
        Ok(self.row(i)?.pos)
    }

    fn parent_of(&self, i: usize) -> Result<Option<Id>, IndexFault> {
        let row = self.row(i)?;
        let parent = self.dec.parent_of(&row)?;
        match parent {
            Some(p) if parent == row.head.parent => self.check_named(i, p)?,
            Some(p) => self.check_repointed(i, p)?,
            None => {}
        }
        Ok(parent)
    }

    fn live_count(&self) -> usize {
        self.st().live_rows as usize
    }

    fn leaves(&self) -> Result<Vec<usize>, IndexFault> {
        Ok(self
            .dec
            .leaves()?
            .into_iter()
            .map(|(s, _)| s as usize)
            .collect())
    }

    fn zeroed(&self, id: Id) -> Result<bool, IndexFault> {
        self.dec.zeroed(id)
    }

    fn group(&self, mid: u64) -> Result<Vec<usize>, IndexFault> {
        self.response(mid, true)
    }

    fn tool_results_of(&self, parent: Id) -> Result<Vec<usize>, IndexFault> {
        Ok(self
            .children_of(parent)?
            .into_iter()
            .filter(|(_, r)| r.head.kind == Kind::User && r.head.flags.has(Flags::TOOL_RESULT))
            .map(|(s, _)| s as usize)
            .collect())
    }

    fn attachments_of(&self, parent: Id) -> Result<Vec<usize>, IndexFault> {
        Ok(self
            .children_of(parent)?
            .into_iter()
            .filter(|(_, r)| r.head.kind == Kind::Attachment)
            .map(|(s, _)| s as usize)
            .collect())
    }

    fn is_leaf(&self, i: usize) -> Result<bool, IndexFault> {
        let uuid = self.row(i)?.head.uuid;
        Ok(self.dec.leaf_seq(uuid)? == u32::try_from(i).ok())
    }

    fn all_sidechain(&self) -> bool {
        self.st().main_rows == 0
    }

    fn newest_leaf(&self, sidechain_ok: bool) -> Result<Option<usize>, IndexFault> {
        let stored = state::newest_leaf(&self.leaf_times, self.st().file, sidechain_ok)?;
        // The key is all `leaf_times` holds, and a key changed by damage could move the newest
        // leaf below another: the answer is checked against the leaves' own rows (the
        // `derived` leaf facts are checksummed with their keys).
        let mut newest = None;
        for (s, id) in self.dec.leaves()? {
            let h = self.row(s as usize)?.head;
            if h.uuid != id {
                return Err(IndexFault::damaged(
                    "derived",
                    format!("leaf {s} is another row"),
                ));
            }
            if h.kind.is_turn() && (sidechain_ok || !h.flags.has(Flags::SIDECHAIN)) {
                newest = newest.max(Some((sortable_ts(h.timestamp), s)));
            }
        }
        if newest != stored {
            return Err(IndexFault::damaged(
                "leaf_times",
                "the newest leaf is not the one its entries say",
            ));
        }
        Ok(newest.map(|(_, s)| s as usize))
    }

    fn leaf_ids(&self) -> Result<Vec<Id>, IndexFault> {
        Ok(self.dec.leaves()?.into_iter().map(|(_, id)| id).collect())
    }

    fn checkpoints(&self) -> Cow<'_, [Id]> {
        Cow::Owned(self.st().checkpoint.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::{ResolveOptions, resolve_graph};
    use crate::index::format::schema;
    use crate::index::write::ingest;
    use crate::testing::line;
    use redb::{ReadableDatabase, ReadableTable};

    /// A sidecar in `dir` holding `t.jsonl` indexed from `parts`, each appended in turn and
    /// caught up (one catch-up per part, in one transaction).
    fn indexed(dir: &std::path::Path, parts: &[String]) -> (redb::Database, FileState) {
        let path = dir.join("t.jsonl");
        let db = redb::Database::create(dir.join("i.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        schema::create_all(&txn).unwrap();
        let mut text = String::new();
        let mut st = None;
        for part in parts {
            text.push_str(part);
            std::fs::write(&path, &text).unwrap();
            st = Some(ingest::catch_up(&txn, "t", &path).unwrap().1);
        }
        txn.commit().unwrap();
        (db, st.expect("a part"))
    }

    /// Lines as one text, each ending in a newline.
    fn text(lines: &[String]) -> String {
        lines.join("\n") + "\n"
    }

    /// [`indexed`] of `lines` written at once.
    fn indexed_lines(dir: &std::path::Path, lines: &[String]) -> (redb::Database, FileState) {
        indexed(dir, &[text(lines)])
    }

    /// The length of the default chain, from the index alone (no fallback to a full scan).
    fn chain_len(db: &redb::Database, st: &FileState) -> Result<usize, IndexFault> {
        let r = db.begin_read().unwrap();
        let g = IndexGraph::new(&r, st.clone()).unwrap();
        let no_full = || Err::<IndexGraph, _>(IndexFault::damaged("rows", "unused"));
        resolve_graph(&g, ResolveOptions::default(), &IdNames::default(), no_full)
            .map(|r| r.unwrap().chain.len())
    }

    /// Sets (`Some`) or removes (`None`) the value under `key` of a table, in its own commit.
    fn put<K: redb::Key + 'static>(
        db: &redb::Database,
        def: redb::TableDefinition<K, &'static [u8]>,
        key: &K::SelfType<'_>,
        value: Option<&[u8]>,
    ) {
        let txn = db.begin_write().unwrap();
        {
            let mut t = txn.open_table(def).unwrap();
            match value {
                Some(v) => drop(t.insert(key, v).unwrap()),
                None => drop(t.remove(key).unwrap()),
            }
        }
        txn.commit().unwrap();
    }

    /// A stored row that does not decode ends the answer with a typed fault naming the table;
    /// no placeholder row and no answer.
    #[test]
    fn a_damaged_row_is_a_typed_fault_not_an_answer() {
        let dir = tempfile::tempdir().unwrap();
        let (db, st) = indexed_lines(
            dir.path(),
            &[line(1, None, "user"), line(2, Some(1), "assistant")],
        );
        assert_eq!(chain_len(&db, &st).unwrap(), 2);
        put(&db, ROWS, &(st.file, 0), Some(b"garbage"));
        let err = chain_len(&db, &st).unwrap_err();
        assert!(err.is_damage(), "{err}");
        assert!(
            matches!(err, IndexFault::Damaged { table: "rows", .. }),
            "{err}"
        );
    }

    /// A block of rows lost with its key (the last one, so the keys before it still follow
    /// each other) is damage: for the walk, which meets a missing row, and for a
    /// re-derivation, which finds fewer rows than the file counts.
    #[test]
    fn a_lost_rows_block_is_a_fault_not_an_answer() {
        let dir = tempfile::tempdir().unwrap();
        let lines: Vec<String> = (1..=40)
            .map(|n| line(n, n.checked_sub(1).filter(|&p| p > 0), "user"))
            .collect();
        let (db, st) = indexed_lines(dir.path(), &lines);
        assert_eq!(chain_len(&db, &st).unwrap(), 40);
        put(&db, ROWS, &(st.file, 1), None);
        assert!(chain_len(&db, &st).unwrap_err().is_damage());
        let r = db.begin_read().unwrap();
        let (rows, progress) = (r.open_table(ROWS).unwrap(), r.open_table(PROGRESS).unwrap());
        let err = crate::index::write::derive::load_rows(&rows, &progress, &st, |r| r).unwrap_err();
        assert!(
            matches!(err, IndexFault::Damaged { table: "rows", .. }),
            "{err}"
        );
    }

    /// An `ids` entry whose value was damaged, or that was lost with its key, ends the answer
    /// with a typed fault, through a first index and an append alike: the walk from the leaf
    /// meets a parent no table names.
    #[test]
    fn a_damaged_or_lost_ids_entry_is_a_fault_not_an_answer() {
        let id = |n: u64| Id::from_text(&format!("00000000-0000-4000-8000-{n:012x}"));
        let first = text(&[line(1, None, "user"), line(2, Some(1), "assistant")]);
        let rest = text(&[line(3, Some(2), "user"), line(4, Some(3), "assistant")]);
        for parts in [vec![first.clone() + &rest], vec![first, rest]] {
            let dir = tempfile::tempdir().unwrap();
            let (db, st) = indexed(dir.path(), &parts);
            assert_eq!(chain_len(&db, &st).unwrap(), 4);
            let key = (st.file, id(2).0);
            let clean = {
                let r = db.begin_read().unwrap();
                let t = r.open_table(IDS).unwrap();
                t.get(key).unwrap().unwrap().value().to_vec()
            };
            let mut flipped = clean.clone();
            flipped[2] ^= 4;
            // A damaged value fails its checksum; a lost one leaves row 3's parent unnamed.
            for (damaged, what) in [(Some(flipped), "checksum"), (None, "row 2")] {
                put(&db, IDS, &key, damaged.as_deref());
                let err = chain_len(&db, &st).unwrap_err();
                assert!(
                    matches!(&err, IndexFault::Damaged { table: "ids", what: w } if w.contains(what)),
                    "{} parts, {damaged:?}: {err}",
                    parts.len()
                );
                put(&db, IDS, &key, Some(&clean));
                assert_eq!(chain_len(&db, &st).unwrap(), 4);
            }
        }
    }

    /// A leaf fact that damage moved out of the `LEAF` range is not found by the scan; the
    /// count in the file state tells (the answer would otherwise be "no leaf", or another one).
    #[test]
    fn a_leaf_fact_missing_from_its_range_is_a_fault_not_an_answer() {
        let dir = tempfile::tempdir().unwrap();
        let (db, st) = indexed_lines(
            dir.path(),
            &[
                line(1, None, "user"),
                line(2, Some(1), "assistant"),
                line(3, Some(1), "assistant"),
            ],
        );
        assert_eq!(st.leaf_facts, 2);
        let leaves = || {
            let r = db.begin_read().unwrap();
            IndexGraph::new(&r, st.clone()).unwrap().leaves()
        };
        assert_eq!(leaves().unwrap(), [1, 2]);
        let id = Id::from_text("00000000-0000-4000-8000-000000000003");
        put(&db, DERIVED, &(st.file, schema::derived::LEAF, id.0), None);
        let err = leaves().unwrap_err();
        assert!(
            matches!(
                err,
                IndexFault::Damaged {
                    table: "derived",
                    ..
                }
            ),
            "{err}"
        );
    }

    /// A response's entry that damage moved away would leave its lines out of the splice: a
    /// row whose response has no entry is a fault; a flipped bit in one fails its checksum.
    #[test]
    fn a_lost_or_damaged_response_entry_is_a_fault_not_an_answer() {
        let id = |n: u64| format!("00000000-0000-4000-8000-{n:012x}");
        let entry = |n: u64, parent: u64, ty: &str| {
            format!(
                r#"{{"parentUuid":"{}","type":"{ty}","message":{{"id":"m1","role":"{ty}","content":"x"}},"uuid":"{}","sessionId":"s","timestamp":"2026-01-01T00:00:0{n}.000Z"}}"#,
                id(parent),
                id(n)
            )
        };
        let dir = tempfile::tempdir().unwrap();
        let (db, st) = indexed_lines(
            dir.path(),
            &[
                line(1, None, "user"),
                entry(2, 1, "assistant"),
                entry(3, 2, "assistant"),
            ],
        );
        assert_eq!(chain_len(&db, &st).unwrap(), 3);
        let (key, clean) = {
            let r = db.begin_read().unwrap();
            let t = r.open_table(RESPONSES).unwrap();
            let (k, v) = t.iter().unwrap().next().unwrap().unwrap();
            (k.value(), v.value().to_vec())
        };
        let mut flipped = clean.clone();
        flipped[1] ^= 1;
        for (damaged, what) in [(Some(flipped), "checksum"), (None, "no entry")] {
            put(&db, RESPONSES, &key, damaged.as_deref());
            let err = chain_len(&db, &st).unwrap_err();
            assert!(
                matches!(&err, IndexFault::Damaged { table: "responses", what: w } if w.contains(what)),
                "{err}"
            );
            put(&db, RESPONSES, &key, Some(&clean));
            assert_eq!(chain_len(&db, &st).unwrap(), 3);
        }
    }
}
