//! The `sidechains` table kept current at catch-up: the row numbers of a file's `isSidechain`
//! messages as runs, the first row of each the key and its last the value (read by
//! [`crate::index::read::sidechains`]).

use redb::ReadableTable;

/// The `sidechains` table, open for writing: runs of rows, `(file, first) → last`.
pub(crate) type Runs<'t> = redb::Table<'t, (u32, u32), u32>;

/// The run of file `f` that starts at or before `seq`, as `(first, last)`.
fn run_before(t: &Runs<'_>, f: u32, seq: u32) -> Result<Option<(u32, u32)>, redb::StorageError> {
    Ok(t.range((f, 0)..=(f, seq))?
        .next_back()
        .transpose()?
        .map(|(k, v)| (k.value().1, v.value())))
}

/// Lists row `seq` of file `f` as a sidechain row, joining the runs beside it; `false` when
/// it was listed already.
pub(crate) fn add(t: &mut Runs<'_>, f: u32, seq: u32) -> Result<bool, redb::StorageError> {
    let before = run_before(t, f, seq)?;
    if before.is_some_and(|(_, last)| last >= seq) {
        return Ok(false);
    }
    let first = match before {
        Some((first, last)) if last.checked_add(1) == Some(seq) => first,
        _ => seq,
    };
    let last = match seq.checked_add(1) {
        Some(next) => t.remove((f, next))?.map_or(seq, |v| v.value()),
        None => seq,
    };
    t.insert((f, first), last)?;
    Ok(true)
}

/// Unlists row `seq` of file `f`, splitting its run; `false` when it was not listed.
pub(crate) fn remove(t: &mut Runs<'_>, f: u32, seq: u32) -> Result<bool, redb::StorageError> {
    let Some((first, last)) = run_before(t, f, seq)?.filter(|&(_, last)| last >= seq) else {
        return Ok(false);
    };
    t.remove((f, first))?;
    if first < seq {
        t.insert((f, first), seq - 1)?;
    }
    if seq < last {
        t.insert((f, seq + 1), last)?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::format::schema::SIDECHAINS;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        /// Any sequence of adds and removes leaves the runs listing exactly the rows a set
        /// holds, as few runs as those rows make (no two runs touch), and another file's
        /// runs untouched.
        #[test]
        fn runs_list_what_a_set_holds(ops in proptest::collection::vec((any::<bool>(), 0u32..40), 0..120)) {
            let tmp = tempfile::tempdir().unwrap();
            let db = redb::Database::create(tmp.path().join("t.redb")).unwrap();
            let txn = db.begin_write().unwrap();
            let mut t = txn.open_table(SIDECHAINS).unwrap();
            t.insert((9, 0), 5).unwrap();
            let mut model = BTreeSet::new();
            for (adding, seq) in ops {
                let listed = if adding { add(&mut t, 3, seq) } else { remove(&mut t, 3, seq) };
                let changed = if adding { model.insert(seq) } else { model.remove(&seq) };
                prop_assert_eq!(listed.unwrap(), changed);
            }
            let runs: Vec<(u32, u32)> = t
                .range((3, 0)..=(3, u32::MAX))
                .unwrap()
                .map(|i| i.map(|(k, v)| (k.value().1, v.value())).unwrap())
                .collect();
            let rows: Vec<u32> = runs.iter().flat_map(|&(a, b)| a..=b).collect();
            prop_assert_eq!(rows, model.iter().copied().collect::<Vec<_>>());
            let gaps = model.iter().zip(model.iter().skip(1)).filter(|(a, b)| **b > **a + 1).count();
            prop_assert_eq!(runs.len(), if model.is_empty() { 0 } else { gaps + 1 });
            prop_assert_eq!(t.get((9, 0)).unwrap().map(|v| v.value()), Some(5));
        }
    }
}
