//! The `listing` table's rows as stored: read in one range scan, looked up by key, written in
//! one transaction, and carried over when a sidecar is written anew. What the rows mean is the
//! catalog's ([`crate::catalog::cache`]).

use std::path::Path;

use redb::{ReadOnlyTable, ReadableDatabase, ReadableTable};

use crate::index::db::open::{self, IndexDb};
use crate::index::format::schema::LISTING;

/// Rows of a sidecar in key order, their keys and values in one buffer (one allocation for
/// the whole table instead of two per row).
#[derive(Default)]
pub(crate) struct Rows {
    /// Every key and value, one after the other.
    bytes: Vec<u8>,
    /// Per row: where its key starts, where its value starts, where the value ends.
    at: Vec<(usize, usize, usize)>,
}

impl Rows {
    pub(crate) fn len(&self) -> usize {
        self.at.len()
    }

    pub(crate) fn key(&self, i: usize) -> &[u8] {
        let (k, v, _) = self.at[i];
        &self.bytes[k..v]
    }

    pub(crate) fn value(&self, i: usize) -> &[u8] {
        let (_, v, end) = self.at[i];
        &self.bytes[v..end]
    }

    /// The row stored under `key`. `hint` is tried first (a listing asks for the files of a
    /// folder in key order, so the row after the previous one is usually the one).
    pub(crate) fn find(&self, key: &str, hint: usize) -> Option<usize> {
        if hint < self.len() && self.key(hint) == key.as_bytes() {
            return Some(hint);
        }
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.key(mid).cmp(key.as_bytes()) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }
}

/// A sidecar's `listing` table in a read transaction, for single lookups.
pub(crate) fn open_table(db_path: &Path) -> Option<ReadOnlyTable<&'static str, &'static [u8]>> {
    let db = open::open_read_only(db_path)?;
    let txn = crate::index::db::wait::waiting(|| db.begin_read()).ok()?;
    crate::index::db::guard::read("listing", || txn.open_table(LISTING)).ok()
}

/// Every row of a sidecar's `listing` table: one read transaction, one range scan.
pub(crate) fn read_rows(db_path: &Path) -> Option<Rows> {
    let db = open::open_read_only(db_path)?;
    let txn = crate::index::db::wait::waiting(|| db.begin_read()).ok()?;
    crate::index::db::guard::read("listing", || all_rows(&txn.open_table(LISTING)?)).ok()
}

/// Every row of a `listing` table, in key order.
fn all_rows(t: &impl ReadableTable<&'static str, &'static [u8]>) -> Result<Rows, redb::Error> {
    let mut rows = Rows {
        bytes: Vec::new(),
        at: Vec::with_capacity(usize::try_from(t.len()?).unwrap_or(0)),
    };
    for entry in t.iter()? {
        let (k, v) = entry?;
        if rows.bytes.is_empty() {
            // Rows are of similar sizes: room for all of them at once (no copy on growth).
            let each = k.value().len() + v.value().len();
            // Capped: one long first row must not reserve gigabytes.
            rows.bytes
                .reserve(((each + each / 4) * rows.at.capacity()).min(32 << 20));
        }
        let start = rows.bytes.len();
        rows.bytes.extend_from_slice(k.value().as_bytes());
        let value = rows.bytes.len();
        rows.bytes.extend_from_slice(v.value());
        rows.at.push((start, value, rows.bytes.len()));
    }
    Ok(rows)
}

/// Stores listing rows (`(key, value)` as stored: their checksums travel with them) in `txn`.
pub(crate) fn insert_rows<'a>(
    txn: &redb::WriteTransaction,
    rows: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Result<(), redb::Error> {
    let mut t = txn.open_table(LISTING)?;
    for (k, v) in rows {
        t.insert(k, v)?;
    }
    Ok(())
}

/// A sidecar's listing rows, read before the sidecar is written anew (`Sidecars::rebuild` of its
/// only transcript) and stored again in the new file with [`Carried::restore`].
pub(crate) struct Carried(Rows);

impl Carried {
    /// Reads every listing row in `txn`.
    pub(crate) fn read(txn: &redb::WriteTransaction) -> Result<Carried, redb::Error> {
        Ok(Carried(all_rows(&txn.open_table(LISTING)?)?))
    }

    /// Stores the rows in `txn`.
    pub(crate) fn restore(&self, txn: &redb::WriteTransaction) -> Result<(), redb::Error> {
        let rows = &self.0;
        insert_rows(
            txn,
            (0..rows.len()).map(|i| {
                let key = std::str::from_utf8(rows.key(i)).expect("a stored key is a str");
                (key, rows.value(i))
            }),
        )
    }
}

pub(crate) fn write_rows(db_path: &Path, pending: &[(String, Vec<u8>)]) {
    let Ok(db) = IndexDb::open(db_path) else {
        return;
    };
    let Ok(txn) = db.begin_write() else {
        return;
    };
    let rows = pending.iter().map(|(k, v)| (k.as_str(), v.as_slice()));
    if insert_rows(&txn, rows).is_ok() {
        let _ = txn.commit();
    }
}
