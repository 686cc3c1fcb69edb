//! Sync as a property: three machines append, start sessions and sync in random order against
//! one `file://` remote, some syncs killed with SIGKILL part-way (a real `chainlog sync`
//! process). After everyone has synced: every message any machine wrote is on every machine,
//! nothing any machine held was rewritten, every index equals its scan, and syncing again sends
//! nothing and makes no fork.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use chainlog::SyncOptions;
use proptest::prelude::*;

use crate::sync::Machine;

#[derive(Debug, Clone)]
enum Op {
    Append(usize, prop::sample::Index),
    NewSession(usize),
    Sync(usize),
    /// `chainlog sync` killed after this many × 0.3 ms.
    KilledSync(usize, u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..3usize, any::<prop::sample::Index>()).prop_map(|(m, i)| Op::Append(m, i)),
        1 => (0..3usize).prop_map(Op::NewSession),
        3 => (0..3usize).prop_map(Op::Sync),
        1 => (0..3usize, any::<u8>()).prop_map(|(m, d)| Op::KilledSync(m, d)),
    ]
}

fn sessions(m: &Machine) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(m.claude.join("projects/-w"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    v.sort();
    v
}

/// The uuids of a transcript's lines, in file order.
fn uuid_list(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|&b| b == b'\n')
        .filter_map(|line| serde_json::from_slice::<serde_json::Value>(line).ok())
        .filter_map(|v| v.get("uuid").and_then(|u| u.as_str()).map(str::to_owned))
        .collect()
}

/// Every uuid in every transcript of a machine.
fn uuids(m: &Machine) -> BTreeSet<String> {
    m.files()
        .into_values()
        .flat_map(|bytes| uuid_list(&bytes))
        .collect()
}

fn stem(p: &std::path::Path) -> String {
    p.file_stem().unwrap().to_str().unwrap().to_owned()
}

fn killed_sync(m: &Machine, remote: &str, delay: u8) {
    let mut child = m
        .command()
        .args(["sync", remote, "--all"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_micros(u64::from(delay) * 300));
    let _ = child.kill();
    let _ = child.wait();
}

/// Checks that no file of `m` lost or changed a byte it held before (`seen` updated).
fn nothing_rewritten(m: &Machine, seen: &mut BTreeMap<String, Vec<u8>>, step: usize) {
    for (rel, bytes) in m.files() {
        if let Some(before) = seen.get(&rel) {
            assert!(
                bytes.starts_with(before),
                "step {step}: {rel} was rewritten"
            );
        }
        seen.insert(rel, bytes);
    }
}

fn run(ops: &[Op]) {
    let tmp = tempfile::tempdir().unwrap();
    let machines: Vec<Machine> = ["a", "b", "c"]
        .iter()
        .map(|n| Machine::new(tmp.path(), n))
        .collect();
    for m in &machines {
        std::fs::create_dir_all(m.claude.join("projects/-w")).unwrap();
    }
    let remote = format!("file://{}", tmp.path().join("remote").display());
    let all = SyncOptions::all();
    let mut written: BTreeSet<String> = BTreeSet::new();
    // Which machines appended to each session: a fork is right only for a session two did.
    let mut appenders: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
    let mut seen: Vec<BTreeMap<String, Vec<u8>>> = vec![BTreeMap::new(); 3];
    let mut n = 0;
    for (step, op) in ops.iter().enumerate() {
        n += 1;
        match op {
            Op::Append(m, i) => {
                let have = sessions(&machines[*m]);
                let path = if have.is_empty() {
                    machines[*m]
                        .claude
                        .join(format!("projects/-w/{}.jsonl", uuid::Uuid::new_v4()))
                } else {
                    i.get(&have).clone()
                };
                written.insert(machines[*m].append(&path, &format!("message {n}")));
                appenders.entry(stem(&path)).or_default().insert(*m);
            }
            Op::NewSession(m) => {
                let path = machines[*m]
                    .claude
                    .join(format!("projects/-w/{}.jsonl", uuid::Uuid::new_v4()));
                written.insert(machines[*m].append(&path, &format!("first {n}")));
                appenders.entry(stem(&path)).or_default().insert(*m);
            }
            Op::Sync(m) => {
                machines[*m].sync(&remote, &all);
            }
            Op::KilledSync(m, d) => killed_sync(&machines[*m], &remote, *d),
        }
        for (i, m) in machines.iter().enumerate() {
            nothing_rewritten(m, &mut seen[i], step);
        }
    }
    // Everyone syncs until nothing moves (two rounds carry anything anywhere).
    for _ in 0..2 {
        for m in &machines {
            m.sync(&remote, &all);
        }
    }
    for (i, m) in machines.iter().enumerate() {
        nothing_rewritten(m, &mut seen[i], ops.len());
        let have = uuids(m);
        let missing: Vec<&String> = written.difference(&have).collect();
        assert!(missing.is_empty(), "machine {i} lacks {missing:?}");
        for p in sessions(m) {
            if appenders.contains_key(&stem(&p)) {
                continue;
            }
            // A session sync wrote: the other side of a session two machines continued. A
            // fork keeps uuids and files only grow, so its messages, in order, begin its
            // source's file on the machine whose continuation it holds. (Its first message
            // alone does not name the source: a fork another machine continued holds it too.)
            let mine = uuid_list(&std::fs::read(&p).unwrap());
            let sources: Vec<(usize, String)> = machines
                .iter()
                .enumerate()
                .flat_map(|(j, other)| sessions(other).into_iter().map(move |q| (j, q)))
                .filter(|(_, q)| appenders.contains_key(&stem(q)))
                .filter(|(_, q)| uuid_list(&std::fs::read(q).unwrap()).starts_with(&mine))
                .map(|(j, q)| (j, stem(&q)))
                .collect();
            assert!(
                sources
                    .iter()
                    .any(|(_, s)| appenders.get(s).is_some_and(|a| a.len() >= 2)),
                "machine {i}: fork {} of {sources:?}, continued by {:?}",
                p.display(),
                sources
                    .iter()
                    .map(|(_, s)| &appenders[s])
                    .collect::<Vec<_>>()
            );
        }
        let store = m.store();
        for p in sessions(m) {
            assert!(store.verify(&p).unwrap().is_empty(), "{}", p.display());
        }
        let again = m.sync(&remote, &all);
        assert_eq!(again.uploaded_bytes, 0, "machine {i}: {again:?}");
        assert!(again.forks.is_empty(), "machine {i}: {again:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn machines_syncing_in_any_order_end_with_every_message(
        ops in prop::collection::vec(op(), 1..20)
    ) {
        run(&ops);
    }
}
