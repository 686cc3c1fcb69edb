//! `chainlog sync` against a real S3 server: Garage started on 127.0.0.1 with a scratch
//! config, one node, and three nodes (replication factor 3) with one killed during a push.
//!
//! The server binary: `$CHAINLOG_GARAGE`, else `garage` on `PATH`, else the one `.ci/run`
//! caches (`~/.cache/chainlog-ci/garage/bin/garage`). A plain `cargo test` lists these tests as
//! ignored, with the reason; `.ci/run` runs them (`--ignored sync_garage::`), and without the
//! server they fail: none reports `ok` without having synced through Garage.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::sync::{Machine, seed_sessions};

fn garage_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CHAINLOG_GARAGE") {
        return Some(PathBuf::from(p));
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("garage"))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| {
        let cached =
            PathBuf::from(std::env::var_os("HOME")?).join(".cache/chainlog-ci/garage/bin/garage");
        cached.is_file().then_some(cached)
    })
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One Garage node.
struct Node {
    config: PathBuf,
    s3: u16,
    rpc: u16,
    child: Option<Child>,
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A cluster of `n` nodes on this machine with a bucket `chainlog` and a key for it.
struct Garage {
    bin: PathBuf,
    nodes: Vec<Node>,
    key_id: String,
    secret: String,
}

impl Garage {
    fn start(dir: &Path, n: usize) -> Garage {
        let bin = garage_binary().expect(
            "no Garage server: set CHAINLOG_GARAGE, put `garage` on PATH, or run .ci/run (it installs one)",
        );
        let secret = uuid::Uuid::new_v4().simple().to_string().repeat(2);
        let mut nodes = Vec::new();
        for i in 0..n {
            let d = dir.join(format!("node{i}"));
            std::fs::create_dir_all(&d).unwrap();
            let (rpc, s3) = (free_port(), free_port());
            let config = d.join("garage.toml");
            std::fs::write(
                &config,
                format!(
                    "metadata_dir = {meta:?}\ndata_dir = {data:?}\ndb_engine = \"sqlite\"\n\
                     replication_factor = {n}\nrpc_bind_addr = \"127.0.0.1:{rpc}\"\n\
                     rpc_public_addr = \"127.0.0.1:{rpc}\"\nrpc_secret = \"{secret}\"\n\
                     [s3_api]\ns3_region = \"garage\"\napi_bind_addr = \"127.0.0.1:{s3}\"\n\
                     root_domain = \".s3.garage.localhost\"\n",
                    meta = d.join("meta").display().to_string(),
                    data = d.join("data").display().to_string(),
                ),
            )
            .unwrap();
            let log = std::fs::File::create(d.join("server.log")).unwrap();
            let child = Command::new(&bin)
                .arg("-c")
                .arg(&config)
                .arg("server")
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .unwrap();
            nodes.push(Node {
                config,
                s3,
                rpc,
                child: Some(child),
            });
        }
        let mut g = Garage {
            bin,
            nodes,
            key_id: String::new(),
            secret: String::new(),
        };
        let ids: Vec<String> = (0..n)
            .map(|i| {
                let out = g.retry(i, &["node", "id", "-q"]);
                out.trim().split('@').next().unwrap().to_owned()
            })
            .collect();
        for (i, id) in ids.iter().enumerate().skip(1) {
            g.retry(
                0,
                &[
                    "node",
                    "connect",
                    &format!("{id}@127.0.0.1:{}", g.nodes[i].rpc),
                ],
            );
        }
        for (i, id) in ids.iter().enumerate() {
            g.retry(
                0,
                &["layout", "assign", "-z", &format!("dc{i}"), "-c", "1G", id],
            );
        }
        g.retry(0, &["layout", "apply", "--version", "1"]);
        g.retry(0, &["bucket", "create", "chainlog"]);
        let key = g.retry(0, &["key", "create", "chainlog-tests"]);
        let field = |name: &str| {
            key.lines()
                .find_map(|l| l.strip_prefix(name))
                .map_or_else(|| panic!("no {name} in {key}"), |v| v.trim().to_owned())
        };
        g.key_id = field("Key ID:");
        g.secret = field("Secret key:");
        g.retry(
            0,
            &[
                "bucket",
                "allow",
                "--read",
                "--write",
                "chainlog",
                "--key",
                "chainlog-tests",
            ],
        );
        g
    }

    /// Runs `garage <args>` on node `i` until it succeeds (the server starts, the layout
    /// spreads); returns its output.
    fn retry(&self, i: usize, args: &[&str]) -> String {
        let start = Instant::now();
        loop {
            let out = Command::new(&self.bin)
                .arg("-c")
                .arg(&self.nodes[i].config)
                .args(args)
                .output()
                .unwrap();
            if out.status.success() {
                return String::from_utf8_lossy(&out.stdout).into_owned();
            }
            assert!(
                start.elapsed() < Duration::from_mins(1),
                "garage {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `chainlog sync` of `m` against this cluster (through node 0), as a process.
    fn sync(&self, m: &Machine, extra: &[&str]) -> Child {
        m.command()
            .args(["sync", "s3://chainlog/sessions", "--all", "--json"])
            .args(extra)
            .env(
                "AWS_ENDPOINT_URL",
                format!("http://127.0.0.1:{}", self.nodes[0].s3),
            )
            .env("AWS_REGION", "garage")
            .env("AWS_ACCESS_KEY_ID", &self.key_id)
            .env("AWS_SECRET_ACCESS_KEY", &self.secret)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn sync_ok(&self, m: &Machine) -> serde_json::Value {
        let out = self.sync(m, &[]).wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "sync: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

#[test]
#[ignore = "needs the Garage S3 server: .ci/run runs it (--ignored sync_garage::)"]
fn two_machines_sync_through_one_garage_node() {
    let tmp = tempfile::tempdir().unwrap();
    let g = Garage::start(&tmp.path().join("garage"), 1);
    let (a, b) = (Machine::new(tmp.path(), "a"), Machine::new(tmp.path(), "b"));
    let sessions = seed_sessions(&a, 41);
    g.sync_ok(&a);
    let first = g.sync_ok(&b);
    assert!(first["pulledFiles"].as_u64().unwrap() >= 3, "{first}");
    assert_eq!(a.files(), b.files());
    for (sid, _) in &sessions {
        assert_eq!(a.resume(sid), b.resume(sid));
        assert_eq!(a.resume_api(sid), b.resume_api(sid));
    }
    // An append on A arrives; a sync with nothing new sends nothing.
    let appended = a.append(&sessions[2].1, "after the first sync");
    g.sync_ok(&a);
    g.sync_ok(&b);
    assert_eq!(b.resume(&sessions[2].0).last(), Some(&appended));
    for m in [&a, &b] {
        let again = g.sync_ok(m);
        assert_eq!(again["uploadedBytes"], 0, "{again}");
        assert_eq!(again["pulledFiles"], 0, "{again}");
    }
    // Both continue one session before syncing: each keeps its own, and gets the other's.
    let (sid, path_a) = &sessions[1];
    let path_b = b.claude.join(path_a.strip_prefix(&a.claude).unwrap());
    let (ua, ub) = (a.append(path_a, "on a"), b.append(&path_b, "on b"));
    g.sync_ok(&a);
    let on_b = g.sync_ok(&b);
    let on_a = g.sync_ok(&a);
    for (m, r, mine, theirs) in [(&a, &on_a, &ua, &ub), (&b, &on_b, &ub, &ua)] {
        assert_eq!(r["forks"][0]["session"], sid.as_str(), "{r}");
        assert_eq!(m.resume(sid).last(), Some(mine));
        let fork = r["forks"][0]["fork"].as_str().unwrap();
        assert_eq!(m.resume(fork).last(), Some(theirs));
    }
}

#[test]
#[ignore = "needs the Garage S3 server: .ci/run runs it (--ignored sync_garage::)"]
fn a_push_survives_a_node_killed_in_a_three_node_cluster() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cluster = Garage::start(&tmp.path().join("garage"), 3);
    let (a, b) = (Machine::new(tmp.path(), "a"), Machine::new(tmp.path(), "b"));
    let mut sessions = seed_sessions(&a, 51);
    // Enough segments that the push is under way when the node dies.
    for i in 0..6 {
        let mut opts = chainlog_gen::GenOptions::plain(60 + i, 3_000_000);
        opts.corruption = chainlog_gen::Corruption::default();
        let session = chainlog_gen::generate(&opts);
        let path = chainlog_gen::write_session(&a.claude.join("projects"), &session).unwrap();
        sessions.push((session.session_id, path));
    }
    let mut push = cluster.sync(&a, &[]);
    std::thread::sleep(Duration::from_millis(150));
    assert!(
        push.try_wait().unwrap().is_none(),
        "the push is under way when the node dies"
    );
    let mut victim = cluster.nodes[2].child.take().unwrap();
    victim.kill().unwrap(); // SIGKILL
    victim.wait().unwrap();
    let out = push.wait_with_output().unwrap();
    // Quorum writes (2 of 3) go on; a sync that failed meanwhile is completed by the next.
    if !out.status.success() {
        eprintln!("first push: {}", String::from_utf8_lossy(&out.stderr));
        cluster.sync_ok(&a);
    }
    cluster.sync_ok(&b);
    assert_eq!(a.files(), b.files());
    for (sid, _) in &sessions {
        assert_eq!(a.resume(sid), b.resume(sid));
    }
}
