//! Answering from the index: the [`Graph`] of one file read from redb, row by row.
//!
//! A resume touches the rows of its chain (a point lookup each), the leaves, and — for the
//! parallel tool-result splice — the `message.id` groups and tool results of the assistants
//! on the chain. Nothing is proportional to the file.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;

use redb::{ReadOnlyTable, ReadTransaction};

use super::codec::{decode, read_opt_id};
use super::schema::{
    CHILDREN, DERIVED, FileState, LEAF_TIMES, MSG_IDS, NAMES, REPARENTED, ROWS, UUIDS, derived,
};
use crate::chain::{Graph, MessageRow};
use crate::transcript::envelope::{Flags, Kind, MessageHead};
use crate::transcript::frame::LinePos;
use crate::transcript::id::{Id, IdNames};

use super::schema::{ID_FIRST as ZERO, ID_LAST as MAX};

/// The projected tree of one indexed file.
pub struct IndexGraph {
    st: FileState,
    rows: ReadOnlyTable<(u32, u32), &'static [u8]>,
    uuids: ReadOnlyTable<(u32, [u8; 16]), u32>,
    children: ReadOnlyTable<(u32, [u8; 16], u32), ()>,
    msg_ids: ReadOnlyTable<(u32, u64, u32), ()>,
    derived: ReadOnlyTable<(u32, u8, [u8; 16]), &'static [u8]>,
    leaf_times: ReadOnlyTable<(u32, u8, u64, u32), ()>,
    reparented: ReadOnlyTable<(u32, [u8; 16], u32), ()>,
    cache: RefCell<HashMap<usize, MessageRow>>,
    /// Set when a stored value did not decode: the answer must not be trusted.
    pub damaged: RefCell<bool>,
}

impl IndexGraph {
    /// Opens the tables of `st.file` in `txn`.
    pub fn new(txn: &ReadTransaction, st: FileState) -> Result<IndexGraph, redb::Error> {
        Ok(IndexGraph {
            st,
            rows: txn.open_table(ROWS)?,
            uuids: txn.open_table(UUIDS)?,
            children: txn.open_table(CHILDREN)?,
            msg_ids: txn.open_table(MSG_IDS)?,
            derived: txn.open_table(DERIVED)?,
            leaf_times: txn.open_table(LEAF_TIMES)?,
            reparented: txn.open_table(REPARENTED)?,
            cache: RefCell::new(HashMap::new()),
            damaged: RefCell::new(false),
        })
    }

    fn f(&self) -> u32 {
        self.st.file
    }

    fn damage(&self) {
        *self.damaged.borrow_mut() = true;
    }

    fn row(&self, i: usize) -> MessageRow {
        if let Some(r) = self.cache.borrow().get(&i) {
            return r.clone();
        }
        let seq = u32::try_from(i).unwrap_or(u32::MAX);
        let row = self
            .rows
            .get((self.f(), seq))
            .ok()
            .flatten()
            .and_then(|v| decode::<MessageRow>(v.value()));
        let Some(row) = row else {
            self.damage();
            return placeholder();
        };
        self.cache.borrow_mut().insert(i, row.clone());
        row
    }

    /// Live rows whose effective parent is `parent` and whose head passes `keep`, in map order.
    fn children_where(&self, parent: Id, keep: impl Fn(&MessageHead) -> bool) -> Vec<usize> {
        let f = self.f();
        let mut seqs = self.seqs(
            self.children
                .range((f, parent.0, 0)..=(f, parent.0, u32::MAX)),
            |k| k.2,
        );
        seqs.extend(
            self.seqs(
                self.reparented
                    .range((f, parent.0, 0)..=(f, parent.0, u32::MAX)),
                |k| k.2,
            ),
        );
        seqs.sort_unstable();
        seqs.dedup();
        seqs.into_iter()
            .filter(|&i| {
                let h = self.row(i).head;
                keep(&h) && self.get(h.uuid) == Some(i) && self.parent_of(i) == Some(parent)
            })
            .collect()
    }

    fn has_derived(&self, kind: u8, id: Id) -> bool {
        if let Ok(v) = self.derived.get((self.f(), kind, id.0)) {
            v.is_some()
        } else {
            self.damage();
            false
        }
    }

    fn seqs<K>(
        &self,
        iter: Result<redb::Range<'static, K, ()>, redb::StorageError>,
        seq_of: impl Fn(K::SelfType<'_>) -> u32,
    ) -> Vec<usize>
    where
        K: redb::Key + 'static,
    {
        let Ok(iter) = iter else {
            self.damage();
            return Vec::new();
        };
        let mut out = Vec::new();
        for item in iter {
            if let Ok((k, _)) = item {
                out.push(seq_of(k.value()) as usize);
            } else {
                self.damage();
                return Vec::new();
            }
        }
        out
    }

    /// Texts of non-UUID ids of this file.
    pub fn names(txn: &ReadTransaction, f: u32) -> Result<IdNames, redb::Error> {
        let t = txn.open_table(NAMES)?;
        let mut names = IdNames::default();
        for item in t.range((f, ZERO)..=(f, MAX))? {
            let (_, v) = item?;
            names.intern(v.value());
        }
        Ok(names)
    }
}

/// Stands in for an undecodable row; the graph is marked damaged and the answer discarded.
fn placeholder() -> MessageRow {
    MessageRow {
        head: MessageHead {
            uuid: Id([0; 16]),
            parent: None,
            logical_parent: None,
            kind: Kind::System,
            flags: Flags(0),
            timestamp: i64::MIN,
            message_id: None,
            session: 0,
            source_tool_assistant: None,
            preserved: None,
            snip_removed: Vec::new(),
        },
        pos: LinePos {
            line: 0,
            offset: 0,
            len: 0,
        },
    }
}

impl Graph for IndexGraph {
    fn get(&self, id: Id) -> Option<usize> {
        let seq = if let Ok(v) = self.uuids.get((self.f(), id.0)) {
            v?.value()
        } else {
            self.damage();
            return None;
        };
        let dropped = self.st.drop_before.is_some_and(|b| seq < b)
            && !self.has_derived(derived::PRESERVED, id);
        if dropped || self.has_derived(derived::DEAD, id) {
            return None;
        }
        Some(seq as usize)
    }

    fn head(&self, i: usize) -> Cow<'_, MessageHead> {
        Cow::Owned(self.row(i).head)
    }

    fn pos(&self, i: usize) -> LinePos {
        self.row(i).pos
    }

    fn parent_of(&self, i: usize) -> Option<Id> {
        let row = self.row(i);
        match self
            .derived
            .get((self.f(), derived::PARENT, row.head.uuid.0))
        {
            Ok(Some(v)) => read_opt_id(v.value()).unwrap_or_else(|()| {
                self.damage();
                None
            }),
            Ok(None) => row.head.parent,
            Err(_) => {
                self.damage();
                None
            }
        }
    }

    fn live_count(&self) -> usize {
        self.st.live_rows as usize
    }

    fn leaves(&self) -> Vec<usize> {
        let Ok(iter) = self
            .derived
            .range((self.f(), derived::LEAF, ZERO)..=(self.f(), derived::LEAF, MAX))
        else {
            self.damage();
            return Vec::new();
        };
        let mut out = Vec::new();
        for item in iter {
            let Ok((_, v)) = item else {
                self.damage();
                return Vec::new();
            };
            match <[u8; 4]>::try_from(v.value()) {
                Ok(b) => out.push(u32::from_le_bytes(b) as usize),
                Err(_) => self.damage(),
            }
        }
        out.sort_unstable();
        out
    }

    fn zeroed(&self, id: Id) -> bool {
        self.has_derived(derived::ZEROED, id)
    }

    fn group(&self, mid: u64) -> Vec<usize> {
        let f = self.f();
        let seqs = self.seqs(self.msg_ids.range((f, mid, 0)..=(f, mid, u32::MAX)), |k| {
            k.2
        });
        seqs.into_iter()
            .filter(|&i| {
                let h = self.row(i).head;
                h.kind == Kind::Assistant && self.get(h.uuid) == Some(i)
            })
            .collect()
    }

    fn tool_results_of(&self, parent: Id) -> Vec<usize> {
        self.children_where(parent, |h| {
            h.kind == Kind::User && h.flags.has(Flags::TOOL_RESULT)
        })
    }

    fn attachments_of(&self, parent: Id) -> Vec<usize> {
        self.children_where(parent, |h| h.kind == Kind::Attachment)
    }

    fn all_sidechain(&self) -> bool {
        self.st.main_rows == 0
    }

    fn newest_leaf(&self, sidechain_ok: bool) -> Option<usize> {
        let f = self.f();
        let last = |side: u8| -> Option<(u64, u32)> {
            if let Ok(mut r) = self
                .leaf_times
                .range((f, side, 0, 0)..=(f, side, u64::MAX, u32::MAX))
            {
                match r.next_back() {
                    Some(Ok((k, _))) => {
                        let (_, _, ts, seq) = k.value();
                        Some((ts, seq))
                    }
                    Some(Err(_)) => {
                        self.damage();
                        None
                    }
                    None => None,
                }
            } else {
                self.damage();
                None
            }
        };
        let main = last(0);
        let best = if sidechain_ok {
            main.max(last(1))
        } else {
            main
        };
        best.map(|(_, seq)| seq as usize)
    }

    fn leaf_ids(&self) -> Vec<Id> {
        let f = self.f();
        let mut out: Vec<(usize, Id)> = Vec::new();
        let Ok(iter) = self
            .derived
            .range((f, derived::LEAF, ZERO)..=(f, derived::LEAF, MAX))
        else {
            self.damage();
            return Vec::new();
        };
        for item in iter {
            let Ok((k, v)) = item else {
                self.damage();
                return Vec::new();
            };
            match <[u8; 4]>::try_from(v.value()) {
                Ok(b) => out.push((u32::from_le_bytes(b) as usize, Id(k.value().2))),
                Err(_) => self.damage(),
            }
        }
        out.sort_unstable();
        out.into_iter().map(|(_, id)| id).collect()
    }

    fn checkpoints(&self) -> Cow<'_, [Id]> {
        Cow::Owned(self.st.checkpoint.into_iter().collect())
    }
}
