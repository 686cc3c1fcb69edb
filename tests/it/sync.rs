//! `chainlog sync` between machines (SPEC C1), each machine a claude dir and an index dir of
//! its own, through a `file://` remote (the same code drives S3: `sync_garage.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chainlog::{ResumeOptions, Store, SyncOptions, SyncReport, WriterOptions};
use chainlog_gen::{GenOptions, SidechainLayout, generate, write_session};
use serde_json::{Value, json};

/// One machine: its claude dir and index dir.
pub struct Machine {
    pub claude: PathBuf,
    pub index: PathBuf,
}

impl Machine {
    pub fn new(root: &Path, name: &str) -> Machine {
        let m = Machine {
            claude: root.join(name).join("claude"),
            index: root.join(name).join("index"),
        };
        std::fs::create_dir_all(m.claude.join("projects")).unwrap();
        m
    }

    pub fn store(&self) -> Store {
        Store::open(&self.claude, &self.index).unwrap()
    }

    pub fn sync(&self, remote: &str, opts: &SyncOptions) -> SyncReport {
        self.store().sync(remote, opts).unwrap()
    }

    /// Every file below `projects/`, by path below it, with its bytes.
    pub fn files(&self) -> BTreeMap<String, Vec<u8>> {
        let root = self.claude.join("projects");
        crate::util::files_ending(&root, "")
            .into_iter()
            .filter(|p| p.is_file())
            .map(|p| {
                let rel = p.strip_prefix(&root).unwrap().to_str().unwrap().to_owned();
                (rel, std::fs::read(&p).unwrap())
            })
            .collect()
    }

    /// The resume view of a session as uuids.
    pub fn resume(&self, session: &str) -> Vec<String> {
        self.store()
            .resume(session, &ResumeOptions::default())
            .unwrap()
            .messages()
            .map(|m| m.uuid)
            .collect()
    }

    /// `chainlog` with this machine's claude dir and index dir.
    pub fn command(&self) -> std::process::Command {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_chainlog"));
        c.arg("--claude-dir")
            .arg(&self.claude)
            .arg("--index-dir")
            .arg(&self.index);
        c
    }

    /// What `chainlog resume SESSION --format api` prints here (the request the model gets).
    pub fn resume_api(&self, session: &str) -> String {
        let out = self
            .command()
            .args(["resume", session, "--format", "api"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Appends a user message to a session; returns its uuid.
    pub fn append(&self, session_path: &Path, text: &str) -> String {
        let project = session_path.parent().unwrap();
        let sid = session_path.file_stem().unwrap().to_str().unwrap();
        let mut w = self
            .store()
            .writer(project, sid, WriterOptions::new("/w"))
            .unwrap();
        let u = w
            .append(json!({"type": "user", "message": {"role": "user", "content": text}}))
            .unwrap()
            .unwrap();
        w.close().unwrap();
        u
    }
}

/// A claude dir holding a few generated sessions (sub-agents in both layouts).
pub fn seed_sessions(m: &Machine, seed: u64) -> Vec<(String, PathBuf)> {
    (0..3)
        .map(|i| {
            let mut g = GenOptions::everything(seed + i, 40_000);
            g.corruption = chainlog_gen::Corruption::default();
            g.sidechains = if i == 0 {
                SidechainLayout::TopLevel
            } else {
                SidechainLayout::Subagents
            };
            let s = generate(&g);
            let path = write_session(&m.claude.join("projects"), &s).unwrap();
            (s.session_id, path)
        })
        .collect()
}

/// Two machines, the first holding a few sessions, and a `file://` remote, in `tmp`.
fn pair(tmp: &Path, seed: u64) -> (Machine, Machine, Vec<(String, PathBuf)>, String) {
    let (a, b) = (Machine::new(tmp, "a"), Machine::new(tmp, "b"));
    let sessions = seed_sessions(&a, seed);
    (a, b, sessions, remote(tmp))
}

fn remote(tmp: &Path) -> String {
    format!("file://{}", tmp.join("remote").display())
}

#[test]
fn two_machines_end_with_the_same_sessions_and_a_second_sync_sends_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, sessions, url) = pair(tmp.path(), 11);
    let all = SyncOptions::all();

    let first = a.sync(&url, &all);
    assert!(first.plaintext);
    assert!(first.pushed_files >= 3, "{first:?}");
    // `ls --remote` on B: A's sessions with A's titles, from the manifests alone.
    let listed = b.store().remote_sessions(&url, None).unwrap();
    let titles: BTreeMap<String, String> = a
        .store()
        .sessions(&chainlog::ListOptions::all())
        .unwrap()
        .sessions
        .into_iter()
        .map(|f| (f.session_id, f.title))
        .collect();
    assert_eq!(listed.len(), sessions.len(), "{listed:?}");
    for s in &listed {
        assert_eq!(Some(&s.title), titles.get(&s.session_id));
        assert!(!s.here && !s.mine && s.messages > 0, "{s:?}");
    }
    assert!(b.files().is_empty(), "listing downloads nothing");
    let got = b.sync(&url, &all);
    assert_eq!(got.pulled_files as usize, a.files().len(), "{got:?}");
    assert_eq!(a.files(), b.files(), "every file arrives byte for byte");
    for (sid, _) in &sessions {
        assert_eq!(a.resume(sid), b.resume(sid), "{sid} resumes the same");
        assert_eq!(
            a.resume_api(sid),
            b.resume_api(sid),
            "{sid}: the same request"
        );
    }

    // An append on B reaches A with the next syncs.
    let (sid, path_a) = &sessions[1];
    let path_b = b.claude.join(path_a.strip_prefix(&a.claude).unwrap());
    let u = b.append(&path_b, "from b");
    let pushed = b.sync(&url, &all);
    assert_eq!(pushed.pushed_files, 1, "{pushed:?}");
    let pulled = a.sync(&url, &all);
    assert_eq!(pulled.pulled_files, 1, "{pulled:?}");
    assert_eq!(a.files(), b.files());
    assert_eq!(a.resume(sid).last(), Some(&u));
    assert_eq!(a.resume(sid), b.resume(sid));

    // Nothing new: nothing sent, nothing pulled.
    for m in [&a, &b] {
        let again = m.sync(&url, &all);
        assert_eq!(
            (again.pushed_files, again.uploaded_bytes, again.pulled_files),
            (0, 0, 0),
            "{again:?}"
        );
        assert!(
            again.forks.is_empty() && again.skipped.is_empty(),
            "{again:?}"
        );
    }
    let listed = b.store().remote_sessions(&url, None).unwrap();
    assert!(listed.iter().all(|s| s.here), "{listed:?}");
    assert_eq!(listed.iter().filter(|s| s.mine).count(), sessions.len());
    // The local index agrees with the files sync wrote.
    for (sid, _) in &sessions {
        let store = b.store();
        let t = store.target(None, sid).unwrap();
        assert!(store.verify(t.path()).unwrap().is_empty(), "{sid}");
    }
}

#[test]
fn sessions_continued_on_both_machines_are_both_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, sessions, url) = pair(tmp.path(), 21);
    let all = SyncOptions::all();
    a.sync(&url, &all);
    b.sync(&url, &all);

    let (sid, path_a) = &sessions[0];
    let path_b = b.claude.join(path_a.strip_prefix(&a.claude).unwrap());
    let before = std::fs::read(path_a).unwrap();
    let ua = a.append(path_a, "only on a");
    let ub = b.append(&path_b, "only on b");
    let a_bytes = std::fs::read(path_a).unwrap();
    let b_bytes = std::fs::read(&path_b).unwrap();

    a.sync(&url, &all);
    let rb = b.sync(&url, &all);
    let ra = a.sync(&url, &all);
    // Each kept its own continuation untouched, and has the other's as a fork.
    assert_eq!(std::fs::read(path_a).unwrap(), a_bytes);
    assert_eq!(std::fs::read(&path_b).unwrap(), b_bytes);
    assert!(a_bytes.starts_with(&before) && b_bytes.starts_with(&before));
    for (m, r, mine, theirs) in [(&a, &ra, &ua, &ub), (&b, &rb, &ub, &ua)] {
        assert_eq!(r.forks.len(), 1, "{r:?}");
        assert_eq!(&r.forks[0].session, sid);
        assert_eq!(m.resume(sid).last(), Some(mine));
        let fork = m.resume(&r.forks[0].fork);
        assert_eq!(
            fork.last(),
            Some(theirs),
            "the other continuation is a session here"
        );
        assert_eq!(fork[..fork.len() - 1], m.resume(sid)[..fork.len() - 1]);
    }
    // A goes on with its continuation: B's copy of it (the fork) grows, and says where it
    // came from.
    let more = a.append(path_a, "more on a");
    a.sync(&url, &all);
    let r = b.sync(&url, &all);
    assert!(r.forks.is_empty(), "{r:?}");
    let fork = &rb.forks[0].fork;
    assert_eq!(b.resume(fork).last(), Some(&more));
    let fork_file = b
        .files()
        .into_iter()
        .find(|(k, _)| k.ends_with(&format!("{fork}.jsonl")))
        .unwrap()
        .1;
    for line in String::from_utf8(fork_file).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["type"] == "assistant" {
            assert_eq!(v["requestSessionId"], sid.as_str(), "{line}");
        }
        if v.get("uuid").is_some() {
            assert_eq!(v["sessionId"], fork.as_str(), "{line}");
        }
    }
    // Settled: more syncs make no more forks and send nothing.
    for m in [&a, &b, &a] {
        let r = m.sync(&url, &all);
        assert!(r.forks.is_empty(), "{r:?}");
        assert_eq!((r.pushed_files, r.uploaded_bytes), (0, 0), "{r:?}");
    }
}

#[test]
fn with_a_key_no_message_text_reaches_the_remote() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (Machine::new(tmp.path(), "a"), Machine::new(tmp.path(), "b"));
    let sessions = seed_sessions(&a, 31);
    let secret = "a user message no bucket operator may read";
    a.append(&sessions[0].1, secret);
    let url = remote(tmp.path());
    let keyed = SyncOptions {
        key: Some(b"0123456789abcdef-the-users-secret".to_vec()),
        ..SyncOptions::all()
    };
    let r = a.sync(&url, &keyed);
    assert!(!r.plaintext);
    let objects = crate::util::files_ending(&tmp.path().join("remote"), "");
    assert!(objects.len() > 3);
    for o in &objects {
        let name = o.strip_prefix(tmp.path()).unwrap().to_str().unwrap();
        assert!(!name.contains(&sessions[0].0), "{name} names a session");
        let bytes = std::fs::read(o).unwrap_or_default();
        for needle in [secret, "parentUuid", &sessions[0].0] {
            assert!(
                !bytes.windows(needle.len()).any(|w| w == needle.as_bytes()),
                "{name} holds {needle:?}"
            );
        }
    }
    // Without the key, or with another, the remote is refused; with it, B gets everything.
    let err = b.store().sync(&url, &SyncOptions::all()).unwrap_err();
    assert!(err.to_string().contains("encrypted"), "{err}");
    let wrong = SyncOptions {
        key: Some(b"another-key-of-sixteen-bytes".to_vec()),
        ..SyncOptions::all()
    };
    let err = b.store().sync(&url, &wrong).unwrap_err();
    assert!(err.to_string().contains("key"), "{err}");
    // A machine that synced with the key is refused without it or with another, before it
    // writes anything (its new message would otherwise go up unreadable to the others).
    let objects = || crate::util::files_ending(&tmp.path().join("remote"), "").len();
    let before = objects();
    a.append(&sessions[0].1, "a secret written after the first sync");
    for opts in [SyncOptions::all(), wrong.clone()] {
        let err = a.store().sync(&url, &opts).unwrap_err();
        assert!(err.to_string().contains("key"), "{err}");
    }
    assert_eq!(
        objects(),
        before,
        "nothing was written with the wrong key setting"
    );
    a.sync(&url, &keyed);
    b.sync(&url, &keyed);
    assert_eq!(a.files(), b.files());
}

#[test]
fn sync_watch_sends_an_append_without_waiting_for_its_interval() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, sessions, url) = pair(tmp.path(), 61);
    let mut watcher = a
        .command()
        .args([
            "--json",
            "sync",
            &url,
            "--all",
            "--watch",
            "--interval",
            "3600",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let arrived = |b: &Machine, sid: &str, want: &str| {
        for _ in 0..100 {
            b.sync(&url, &SyncOptions::all());
            if b.files()
                .keys()
                .any(|k| k.ends_with(&format!("{sid}.jsonl")))
                && b.resume(sid).last().map(String::as_str) == Some(want)
            {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        false
    };
    let (sid, path) = &sessions[0];
    let first_last = a.resume(sid).last().unwrap().clone();
    let first = arrived(&b, sid, &first_last);
    let u = a.append(path, "while watching");
    let second = arrived(&b, sid, &u);
    let _ = watcher.kill();
    let out = watcher.wait_with_output().unwrap();
    assert!(first, "the watcher's first sync");
    assert!(second, "the append reached the other machine within 20 s");
    // The first turn looked at every file; the one that sent the append at that file alone
    // (the watcher said which), not at every file again.
    let reports: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let all = a.files().len() as u64;
    assert_eq!(reports[0]["checkedFiles"], json!(all), "{reports:?}");
    let sent = reports
        .iter()
        .skip(1)
        .find(|r| r["pushedFiles"] != json!(0))
        .unwrap_or_else(|| panic!("no turn sent the append: {reports:?}"));
    assert_eq!(sent["checkedFiles"], json!(1), "{reports:?}");
}

#[test]
fn an_incremental_sync_looks_only_at_what_changed() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, sessions, url) = pair(tmp.path(), 81);
    a.sync(&url, &SyncOptions::all());
    let first = b.sync(&url, &SyncOptions::all());
    let entries = first.checked_entries;
    assert_eq!(
        entries,
        a.files().len() as u64,
        "a first pull looks at every file"
    );
    // One append on A, synced with the file named (as `--watch` does): A looks at it alone.
    let (sid, path) = &sessions[1];
    let u = a.append(path, "one more");
    let r = a.sync(
        &url,
        &SyncOptions {
            changed: Some(vec![path.clone(), a.claude.join("elsewhere.txt")]),
            ..SyncOptions::all()
        },
    );
    assert_eq!((r.checked_files, r.pushed_files), (1, 1), "{r:?}");
    // B's pull looks at the one file the new manifest names, and brings it.
    let r = b.sync(&url, &SyncOptions::all());
    assert_eq!((r.checked_entries, r.pulled_files), (1, 1), "{r:?}");
    assert_eq!(b.resume(sid).last(), Some(&u));
    assert_eq!(a.files(), b.files());
    // Nothing new: nothing looked at on the remote side.
    let r = b.sync(&url, &SyncOptions::all());
    assert_eq!(
        (r.checked_entries, r.pulled_files, r.uploaded_bytes),
        (0, 0, 0),
        "{r:?}"
    );
}

#[test]
fn files_left_out_of_a_project_sync_arrive_with_a_later_sync_of_all() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, _sessions, url) = pair(tmp.path(), 91);
    a.sync(&url, &SyncOptions::all());
    let r = b.sync(
        &url,
        &SyncOptions {
            scope: chainlog::SyncScope::Project("-no-such-project".into()),
            ..SyncOptions::all()
        },
    );
    assert_eq!(r.pulled_files, 0, "{r:?}");
    assert!(b.files().is_empty());
    let r = b.sync(&url, &SyncOptions::all());
    assert!(r.pulled_files > 0, "{r:?}");
    assert_eq!(a.files(), b.files());
}

#[test]
fn a_push_reports_its_progress_up_to_what_it_sent() {
    let tmp = tempfile::tempdir().unwrap();
    let a = Machine::new(tmp.path(), "a");
    seed_sessions(&a, 71);
    let calls = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = calls.clone();
    let opts = SyncOptions {
        progress: Some(std::sync::Arc::new(move |done, total| {
            seen.lock().unwrap().push((done, total));
        })),
        ..SyncOptions::all()
    };
    let r = a.sync(&remote(tmp.path()), &opts);
    let calls = calls.lock().unwrap();
    assert!(calls.len() > 3, "{calls:?}");
    assert!(calls.windows(2).all(|w| w[0].0 <= w[1].0), "{calls:?}");
    assert_eq!(calls.last(), Some(&(r.pushed_bytes, r.pushed_bytes)));
    let total: u64 = a.files().values().map(|b| b.len() as u64).sum();
    assert!(
        calls.iter().all(|c| c.1 == total),
        "the total is known from the start"
    );
}

#[test]
fn resume_with_remote_pulls_just_that_session() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, sessions, url) = pair(tmp.path(), 81);
    a.sync(&url, &SyncOptions::all());
    let mine = b
        .claude
        .join("projects/-b/5e55b0b0-0000-4000-8000-000000000001.jsonl");
    b.append(&mine, "only on b");
    let (sid, _) = &sessions[1];
    let out = b
        .command()
        .args(["resume", sid, "--remote", &url, "--format", "uuids"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(got, a.resume(sid));
    // Only that session came (its transcript and its folder), and nothing of B went up.
    let other = |f: &String| !f.contains(sid.as_str()) && !f.starts_with("-b/");
    assert!(!b.files().keys().any(other), "{:?}", b.files().keys());
    let theirs = a
        .files()
        .keys()
        .filter(|k| k.contains(sid.as_str()))
        .count();
    assert_eq!(
        b.files()
            .keys()
            .filter(|k| k.contains(sid.as_str()))
            .count(),
        theirs
    );
    let machines = std::fs::read_dir(tmp.path().join("remote/m"))
        .unwrap()
        .count();
    assert_eq!(machines, 1, "B published nothing");
}

#[test]
fn a_machine_that_lost_its_sync_state_makes_no_fork_elsewhere() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, sessions, url) = pair(tmp.path(), 91);
    let all = SyncOptions::all();
    a.sync(&url, &all);
    b.sync(&url, &all);
    // A's sync state goes (its index folder cleared): A pushes everything again, under a new
    // machine id and other segments, and goes on appending.
    std::fs::remove_dir_all(a.index.join("sync")).unwrap();
    let u = a.append(&sessions[0].1, "after the state was lost");
    let again = a.sync(&url, &all);
    assert!(again.forks.is_empty(), "{again:?}");
    let r = b.sync(&url, &all);
    assert!(
        r.forks.is_empty(),
        "the same bytes again are not a divergence: {r:?}"
    );
    assert_eq!(b.resume(&sessions[0].0).last(), Some(&u));
    assert_eq!(a.files(), b.files());
    for m in [&a, &b] {
        let settled = m.sync(&url, &all);
        assert!(settled.forks.is_empty(), "{settled:?}");
        assert_eq!(settled.uploaded_bytes, 0, "{settled:?}");
    }
}
