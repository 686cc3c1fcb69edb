//! `chainlog pick` driven in a real terminal (tmux): the list renders, typing filters it and
//! the preview follows, Enter hands off to `claude --resume ID` and Ctrl-F to
//! `claude --resume ID --fork-session`, in the session's working directory; Left/Right switch
//! the preview between branches, and Enter on another branch resumes a copy of it. A fake `claude`
//! (named by `$CHAINLOG_CLAUDE`) writes its working directory and arguments to a file.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

const TIMEOUT: Duration = Duration::from_mins(1);

/// The size of the session whose first full-text indexing keeps the search busy for seconds.
const BULK_BYTES: usize = 96 << 20;

/// (session id, title, last reply)
const SESSIONS: [(&str, &str, &str); 3] = [
    (
        "aaaaaaaa-0000-4000-8000-000000000001",
        "Alpha refactor",
        "alpha reply: split the parser",
    ),
    (
        "bbbbbbbb-0000-4000-8000-000000000002",
        "Zebra migration",
        "zebra reply: moved the tables",
    ),
    (
        "cccccccc-0000-4000-8000-000000000003",
        "Gamma docs",
        "gamma reply: wrote the guide",
    ),
];

/// A claude dir with the three sessions in one project whose working directory exists.
struct Fixture {
    tmp: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let f = Fixture { tmp };
        std::fs::create_dir_all(f.work()).unwrap();
        let cwd = f.work().to_str().unwrap().to_owned();
        let project = f
            .claude()
            .join("projects")
            .join(chainlog::discovery::project_key(&cwd));
        std::fs::create_dir_all(&project).unwrap();
        for (i, (sid, title, reply)) in SESSIONS.iter().enumerate() {
            write_session(&project, &cwd, i, sid, title, reply);
        }
        // The fake client: its working directory, then its arguments, written at once.
        let script = format!(
            "#!/bin/sh\n{{ pwd; echo \"$*\"; }} > '{out}.tmp' && mv '{out}.tmp' '{out}'\n",
            out = f.out().display()
        );
        std::fs::write(f.fake(), script).unwrap();
        std::fs::set_permissions(f.fake(), std::fs::Permissions::from_mode(0o755)).unwrap();
        f
    }
    fn claude(&self) -> PathBuf {
        self.tmp.path().join("claude")
    }
    fn work(&self) -> PathBuf {
        self.tmp.path().join("work")
    }
    fn fake(&self) -> PathBuf {
        self.tmp.path().join("fake-claude")
    }
    fn out(&self) -> PathBuf {
        self.tmp.path().join("claude-args")
    }

    /// The fake client's (working directory, arguments), once it has run.
    fn handed_off(&self) -> (String, String) {
        let start = Instant::now();
        while !self.out().exists() {
            assert!(
                start.elapsed() < TIMEOUT,
                "the fake claude never ran ({})",
                self.out().display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let text = std::fs::read_to_string(self.out()).unwrap();
        let mut lines = text.lines().map(str::to_owned);
        (lines.next().unwrap(), lines.next().unwrap_or_default())
    }
}

/// Writes session `i` (a prompt naming the title, a reply, a `custom-title`) in `project`.
fn write_session(project: &Path, cwd: &str, i: usize, sid: &str, title: &str, reply: &str) {
    let u1 = format!("00000000-0000-4000-8000-0000000{i}0001");
    let u2 = format!("00000000-0000-4000-8000-0000000{i}0002");
    let base = |uuid: &str, parent: Option<&str>, minute: usize| {
        json!({
            "parentUuid": parent, "isSidechain": false, "userType": "external",
            "cwd": cwd, "sessionId": sid, "version": "2.1.88", "gitBranch": "main",
            "uuid": uuid, "timestamp": format!("2025-03-01T10:{:02}:00.000Z", minute),
        })
    };
    let mut user = base(&u1, None, i * 10);
    user["type"] = json!("user");
    user["message"] = json!({"role": "user", "content": format!("please work on {title}")});
    let mut answer = base(&u2, Some(&u1), i * 10 + 1);
    answer["type"] = json!("assistant");
    answer["message"] = json!({"id": format!("msg_{i}"), "type": "message",
        "role": "assistant", "model": "m", "content": [{"type": "text", "text": reply}]});
    let meta = json!({"type": "custom-title", "customTitle": title, "sessionId": sid});
    let text = [user, answer, meta]
        .iter()
        .map(|v| format!("{v}\n"))
        .collect::<Vec<_>>()
        .concat();
    std::fs::create_dir_all(project).unwrap();
    std::fs::write(project.join(format!("{sid}.jsonl")), text).unwrap();
}

/// A private tmux server running `chainlog pick` in a 100×30 pane.
struct Tmux {
    socket: String,
}

impl Tmux {
    /// `chainlog pick --all`.
    fn start(f: &Fixture, case: &str) -> Tmux {
        Tmux::start_with(f, case, "--all")
    }

    /// `chainlog pick ARGS` in the fixture's working directory.
    fn start_with(f: &Fixture, case: &str, args: &str) -> Tmux {
        let q = |p: &Path| format!("'{}'", p.display());
        let command = format!(
            "{} --claude-dir {} --index-dir {} pick {args}",
            q(Path::new(env!("CARGO_BIN_EXE_chainlog"))),
            q(&f.claude()),
            q(&f.tmp.path().join("index")),
        );
        Tmux::start_command(f, case, &command)
    }

    /// A shell command line (one starting the picker) in the fixture's working directory,
    /// with the fake client.
    fn start_command(f: &Fixture, case: &str, command: &str) -> Tmux {
        let socket = format!("chainlog-pick-{}-{case}", std::process::id());
        // After the hand-off (or a failure) the pane stays, so a failure can show the screen.
        let cmd = format!(
            "export CHAINLOG_CLAUDE='{}'; {command}; echo \"[exit $?]\"; sleep 600",
            f.fake().display(),
        );
        let t = Tmux { socket };
        t.run(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-c",
            f.work().to_str().unwrap(),
            "-x",
            "100",
            "-y",
            "30",
            &cmd,
        ]);
        t
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("run tmux");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p"])
    }

    /// Polls the pane until `want` holds of it; fails with the last screen after a timeout.
    fn wait_for(&self, what: &str, want: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if want(&s) {
                return s;
            }
            assert!(
                start.elapsed() < TIMEOUT,
                "timed out waiting for {what}; the screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Types text literally.
    fn type_text(&self, text: &str) {
        self.run(&["send-keys", "-l", text]);
    }

    fn key(&self, key: &str) {
        self.run(&["send-keys", key]);
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

/// Whether the test can run: tmux missing is a skip on a developer's machine, a failure in CI.
fn have_tmux() -> bool {
    let ok = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "tmux is missing in CI (.ci/run installs it)"
        );
        eprintln!("!!!!!! SKIPPED: tmux is not installed; `chainlog pick` was NOT tested !!!!!!");
    }
    ok
}

/// Starts the picker, waits for all three sessions, filters down to the zebra one and checks
/// the list and the preview.
fn filtered_to_zebra(f: &Fixture, case: &str) -> Tmux {
    filtered_to_zebra_with(f, case, "--all")
}

/// [`filtered_to_zebra`] of `chainlog pick ARGS`.
fn filtered_to_zebra_with(f: &Fixture, case: &str, args: &str) -> Tmux {
    let t = Tmux::start_with(f, case, args);
    t.wait_for("the three sessions", |s| {
        SESSIONS.iter().all(|(_, title, _)| s.contains(title))
    });
    t.type_text("ZEBRA m");
    let s = t.wait_for("the filter to leave one session", |s| {
        !s.contains("Alpha refactor") && !s.contains("Gamma docs")
    });
    assert!(s.contains("Zebra migration"), "{s}");
    assert!(s.contains("1/3"), "the count shows one of three:\n{s}");
    t.wait_for("the preview of the zebra session", |s| {
        s.contains("zebra reply: moved the tables") && s.contains("please work on Zebra")
    });
    t
}

#[test]
fn enter_resumes_the_filtered_session_in_its_directory() {
    if !have_tmux() {
        return;
    }
    let f = Fixture::new();
    let t = filtered_to_zebra(&f, "enter");
    t.key("Enter");
    let (cwd, args) = f.handed_off();
    assert_eq!(args, format!("--resume {}", SESSIONS[1].0));
    assert_eq!(Path::new(&cwd), f.work().canonicalize().unwrap());
    t.wait_for("the picker to end", |s| s.contains("[exit 0]"));
}

/// A session recorded in a folder that no longer exists (a deleted worktree) is not handed off
/// in another folder unasked (issue #33): the user is told and asked; "n" resumes nothing, "y"
/// resumes in the current folder.
#[test]
fn a_session_whose_folder_is_gone_is_resumed_elsewhere_only_when_the_user_says_so() {
    if !have_tmux() {
        return;
    }
    for (answer, resumed) in [("n", false), ("y", true)] {
        let f = Fixture::new();
        let project = f
            .claude()
            .join("projects")
            .join(chainlog::discovery::project_key(f.work().to_str().unwrap()));
        let gone = f.tmp.path().join("deleted-worktree");
        let sid = "dddddddd-0000-4000-8000-000000000004";
        write_session(
            &project,
            gone.to_str().unwrap(),
            3,
            sid,
            "Delta gone",
            "delta reply",
        );
        let t = Tmux::start(&f, &format!("gone-{answer}"));
        t.wait_for("the session whose folder is gone", |s| {
            s.contains("Delta gone")
        });
        t.type_text("Delta");
        t.wait_for("the filter to leave it alone", |s| {
            !s.contains("Alpha refactor")
        });
        t.key("Enter");
        let s = t.wait_for("the question", |s| s.contains("[y/N]"));
        assert!(s.contains("no longer exists"), "{s}");
        t.type_text(answer);
        t.key("Enter");
        if resumed {
            let (cwd, args) = f.handed_off();
            assert_eq!(args, format!("--resume {sid}"));
            assert_eq!(Path::new(&cwd), f.work().canonicalize().unwrap());
        } else {
            let s = t.wait_for("the picker to end", |s| s.contains("[exit 0]"));
            assert!(s.contains("not resumed"), "{s}");
            assert!(!f.out().exists(), "claude ran although the user said no");
        }
    }
}

/// `pick --print` prints the chosen id for a script and runs nothing.
#[test]
fn print_prints_the_chosen_id_and_runs_no_claude() {
    if !have_tmux() {
        return;
    }
    let f = Fixture::new();
    let t = filtered_to_zebra_with(&f, "print", "--all --print");
    t.key("Enter");
    let s = t.wait_for("the picker to end", |s| s.contains("[exit 0]"));
    assert!(s.contains(SESSIONS[1].0), "{s}");
    assert!(!f.out().exists(), "claude ran although --print was given");
}

#[test]
fn ctrl_f_forks_the_filtered_session() {
    if !have_tmux() {
        return;
    }
    let f = Fixture::new();
    let t = filtered_to_zebra(&f, "fork");
    // Moving within one row stays on it; Backspace widens the filter again.
    t.key("Down");
    t.key("BSpace");
    t.key("C-f");
    let (_, args) = f.handed_off();
    assert_eq!(args, format!("--resume {} --fork-session", SESSIONS[1].0));
}

#[test]
fn esc_clears_the_filter_then_quits_without_a_hand_off() {
    if !have_tmux() {
        return;
    }
    let f = Fixture::new();
    let t = filtered_to_zebra(&f, "esc");
    t.key("Escape");
    t.wait_for("every session again", |s| {
        SESSIONS.iter().all(|(_, title, _)| s.contains(title))
    });
    t.key("Escape");
    let s = t.wait_for("the picker to end", |s| s.contains("[exit 0]"));
    assert!(
        !s.contains("Zebra migration"),
        "the screen is restored:\n{s}"
    );
    assert!(!f.out().exists(), "nothing was handed off");
}

#[test]
fn a_pause_in_typing_adds_sessions_whose_messages_match() {
    if !have_tmux() {
        return;
    }
    let f = Fixture::new();
    let t = Tmux::start(&f, "fulltext");
    t.wait_for("the three sessions", |s| {
        SESSIONS.iter().all(|(_, title, _)| s.contains(title))
    });
    // Only the zebra session's reply says "tables"; no title or prompt does.
    t.type_text("tables");
    let s = t.wait_for("the full-text hit", |s| {
        s.contains("Zebra migration (in messages)")
    });
    assert!(
        !s.contains("Alpha refactor") && !s.contains("Gamma docs"),
        "{s}"
    );
    t.key("Enter");
    let (_, args) = f.handed_off();
    assert_eq!(args, format!("--resume {}", SESSIONS[1].0));
}

/// Issue #33: a search offers the hand-off to the client. The command `search` prints after
/// its hits runs as printed and opens the picker on the query, and so does `search --pick`;
/// Enter resumes the matching session in its folder.
#[test]
fn search_hands_off_through_the_picker_as_it_prints() {
    if !have_tmux() {
        return;
    }
    let f = Fixture::new();
    let bin = env!("CARGO_BIN_EXE_chainlog");
    let index = f.tmp.path().join("index");
    let o = Command::new(bin)
        .arg("--claude-dir")
        .arg(f.claude())
        .arg("--index-dir")
        .arg(&index)
        .args(["search", "tables", "--all"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let printed = text
        .lines()
        .find_map(|l| l.strip_prefix("resume one with claude: "))
        .unwrap_or_else(|| panic!("no hand-off offered:\n{text}"));
    let command = printed
        .strip_prefix("chainlog ")
        .map(|rest| format!("'{bin}' {rest}"))
        .expect("the printed command runs chainlog");
    let searched = format!(
        "'{bin}' --claude-dir '{}' --index-dir '{}' search tables --all --pick",
        f.claude().display(),
        index.display()
    );
    for (case, line) in [("printed", command), ("search-pick", searched)] {
        let _ = std::fs::remove_file(f.out());
        let t = Tmux::start_command(&f, case, &line);
        let s = t.wait_for("the full-text hit", |s| {
            s.contains("Zebra migration (in messages)")
        });
        assert!(
            !s.contains("Alpha refactor") && !s.contains("Gamma docs"),
            "{s}"
        );
        t.key("Enter");
        let (cwd, args) = f.handed_off();
        assert_eq!(args, format!("--resume {}", SESSIONS[1].0), "{case}");
        assert_eq!(Path::new(&cwd), f.work().canonicalize().unwrap(), "{case}");
    }
}

#[test]
fn the_current_project_first_and_tab_switches_to_all() {
    if !have_tmux() {
        return;
    }
    let f = Fixture::new();
    let elsewhere = f.tmp.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let cwd = elsewhere.to_str().unwrap();
    let project = f
        .claude()
        .join("projects")
        .join(chainlog::discovery::project_key(cwd));
    let sid = "dddddddd-0000-4000-8000-000000000004";
    write_session(&project, cwd, 4, sid, "Elsewhere notes", "other reply");
    let t = Tmux::start_with(&f, "tab", "");
    let s = t.wait_for("the project's sessions", |s| s.contains("3/3 this project"));
    assert!(
        SESSIONS.iter().all(|(_, title, _)| s.contains(title)) && !s.contains("Elsewhere"),
        "{s}"
    );
    t.key("Tab");
    t.wait_for("every project", |s| {
        s.contains("4/4 all projects") && s.contains("Elsewhere notes")
    });
    t.type_text("elsewhere");
    t.wait_for("the other project's session alone", |s| {
        s.contains("1/4 all projects") && s.contains("other reply")
    });
    t.key("Enter");
    let (dir, args) = f.handed_off();
    assert_eq!(args, format!("--resume {sid}"));
    assert_eq!(Path::new(&dir), elsewhere.canonicalize().unwrap());
}

/// Writes a session of about `bytes` of generated words (no title, prompt or reply of the
/// fixture's sessions matches a query of the tests): its first full-text indexing takes seconds.
fn write_bulk_session(project: &Path, cwd: &str, bytes: usize) {
    use std::io::Write;
    let sid = "eeeeeeee-0000-4000-8000-000000000005";
    let mut out = std::io::BufWriter::new(
        std::fs::File::create(project.join(format!("{sid}.jsonl"))).unwrap(),
    );
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut word = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        format!("w{:x}", seed % 200_000)
    };
    let mut written = 0;
    let mut parent: Option<String> = None;
    let mut n = 0u64;
    while written < bytes {
        let uuid = format!("00000000-0000-4000-8000-{n:012}");
        let text: Vec<String> = (0..4000).map(|_| word()).collect();
        let (kind, message) = if n.is_multiple_of(2) {
            (
                "user",
                json!({"role": "user", "content": format!("bulk {}", text.join(" "))}),
            )
        } else {
            (
                "assistant",
                json!({"id": format!("msg_b{n}"), "type": "message", "role": "assistant",
                       "model": "m", "content": [{"type": "text", "text": text.join(" ")}]}),
            )
        };
        let line = json!({
            "parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": cwd,
            "sessionId": sid, "version": "2.1.88", "type": kind, "message": message,
            "uuid": uuid, "timestamp": format!("2025-02-01T10:00:{:02}.000Z", n % 60),
        });
        let s = format!("{line}\n");
        written += s.len();
        out.write_all(s.as_bytes()).unwrap();
        parent = Some(uuid);
        n += 1;
    }
    out.flush().unwrap();
}

#[test]
fn the_list_follows_the_keys_while_the_first_search_catches_up() {
    if !have_tmux() {
        return;
    }
    let f = Fixture::new();
    let cwd = f.work().to_str().unwrap().to_owned();
    let project = f
        .claude()
        .join("projects")
        .join(chainlog::discovery::project_key(&cwd));
    write_bulk_session(&project, &cwd, BULK_BYTES);
    let t = Tmux::start(&f, "busy");
    t.wait_for("the sessions", |s| {
        SESSIONS.iter().all(|(_, title, _)| s.contains(title))
    });
    // The pause after "tables" starts the first full-text search, which indexes the bulk.
    t.type_text("tables");
    t.wait_for("the search to start", |s| s.contains("searching"));
    // Meanwhile the list keeps following the keys.
    t.key("C-u");
    t.type_text("gamma");
    let typed = Instant::now();
    let s = t.wait_for("the new filter during the search", |s| {
        s.contains("> gamma") && s.contains("Gamma docs") && !s.contains("Zebra migration")
    });
    let took = typed.elapsed();
    // Shown at once, while the search still runs (not after it ended).
    assert!(
        s.contains("searching") && took < Duration::from_secs(2),
        "the filter showed after {took:?}, the first search {}:\n{s}",
        if s.contains("searching") {
            "still running"
        } else {
            "over"
        }
    );
    // When the search ends its hits are applied to the filter they were asked for.
    t.key("C-u");
    t.type_text("tables");
    t.wait_for("the full-text hit", |s| {
        s.contains("Zebra migration (in messages)") && !s.contains("searching")
    });
    t.key("Enter");
    let (_, args) = f.handed_off();
    assert_eq!(args, format!("--resume {}", SESSIONS[1].0));
}

/// A session whose prompt got two answers (two branches; the newer one is active).
const BRANCHED: &str = "dddddddd-0000-4000-8000-000000000004";

fn write_branched(f: &Fixture) -> PathBuf {
    let cwd = f.work().to_str().unwrap().to_owned();
    let project = f
        .claude()
        .join("projects")
        .join(chainlog::discovery::project_key(&cwd));
    let line =
        |uuid: &str, parent: Option<&str>, minute: u32, ty: &str, message: serde_json::Value| {
            json!({
                "parentUuid": parent, "isSidechain": false, "userType": "external",
                "cwd": cwd, "sessionId": BRANCHED, "version": "2.1.88", "type": ty,
                "uuid": uuid, "timestamp": format!("2025-03-02T10:{minute:02}:00.000Z"),
                "message": message,
            })
        };
    let prompt = "00000000-0000-4000-8000-000000000d01";
    let first = "00000000-0000-4000-8000-000000000d02";
    let second = "00000000-0000-4000-8000-000000000d03";
    let answer = |id: &str, text: &str| {
        json!({"id": id, "type": "message", "role": "assistant", "model": "m",
               "content": [{"type": "text", "text": text}]})
    };
    let lines = [
        line(
            prompt,
            None,
            0,
            "user",
            json!({"role": "user", "content": "please work on Delta"}),
        ),
        line(
            first,
            Some(prompt),
            1,
            "assistant",
            answer("msg_d1", "delta first answer"),
        ),
        line(
            second,
            Some(prompt),
            2,
            "assistant",
            answer("msg_d2", "delta second answer"),
        ),
        json!({"type": "custom-title", "customTitle": "Delta branches", "sessionId": BRANCHED}),
    ];
    let text = lines
        .iter()
        .map(|v| format!("{v}\n"))
        .collect::<Vec<_>>()
        .concat();
    let path = project.join(format!("{BRANCHED}.jsonl"));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn left_shows_the_older_branch_and_enter_resumes_a_copy_of_it() {
    if !have_tmux() {
        return;
    }
    let f = Fixture::new();
    let source = write_branched(&f);
    let t = Tmux::start(&f, "branch");
    t.wait_for("the branched session", |s| s.contains("Delta branches"));
    t.type_text("delta");
    t.wait_for("the active branch in the preview", |s| {
        s.contains("delta second answer") && s.contains("branch 2/2 (active)")
    });
    t.key("Left");
    let s = t.wait_for("the older branch in the preview", |s| {
        s.contains("delta first answer") && s.contains("branch 1/2")
    });
    assert!(!s.contains("delta second answer"), "{s}");
    t.key("Enter");
    let (cwd, args) = f.handed_off();
    assert_eq!(Path::new(&cwd), f.work().canonicalize().unwrap());
    let id = args
        .strip_prefix("--resume ")
        .unwrap_or_else(|| panic!("handed off {args}"));
    assert_ne!(
        id, BRANCHED,
        "the client resumes only the active branch: a copy is resumed"
    );
    let copy = std::fs::read_to_string(source.with_file_name(format!("{id}.jsonl")))
        .expect("the copy is a session of the same project");
    assert!(copy.contains("delta first answer"), "{copy}");
    assert!(!copy.contains("delta second answer"), "{copy}");
    let original = std::fs::read_to_string(&source).unwrap();
    assert!(
        original.contains("delta second answer"),
        "the source is left as it was"
    );
}

/// `pick --remote` lists a session only another machine synced, and Enter pulls just that
/// session, then resumes it in its directory (issue #32).
#[test]
fn a_session_only_the_remote_has_is_listed_and_pulled_on_enter() {
    if !have_tmux() {
        return;
    }
    let f = Fixture::new();
    // Machine B: one session of the same working directory, synced to a file:// remote.
    let b_claude = f.tmp.path().join("b-claude");
    let cwd = f.work().to_str().unwrap().to_owned();
    let project = b_claude
        .join("projects")
        .join(chainlog::discovery::project_key(&cwd));
    let sid = "eeeeeeee-0000-4000-8000-000000000005";
    write_session(&project, &cwd, 4, sid, "Epsilon elsewhere", "epsilon reply");
    let remote = format!("file://{}", f.tmp.path().join("remote").display());
    chainlog::Store::open(&b_claude, f.tmp.path().join("b-index"))
        .unwrap()
        .sync(&remote, &chainlog::SyncOptions::all())
        .unwrap();
    let here = f
        .claude()
        .join("projects")
        .join(chainlog::discovery::project_key(&cwd))
        .join(format!("{sid}.jsonl"));
    assert!(!here.exists());
    let t = Tmux::start_with(&f, "remote", &format!("--all --remote {remote}"));
    t.wait_for("the remote session beside the local ones", |s| {
        s.contains("Epsilon elsewhere (on another machine)") && s.contains("Alpha refactor")
    });
    t.type_text("Epsilon");
    t.wait_for("the filter and the preview", |s| {
        !s.contains("Alpha refactor") && s.contains("Enter pulls it here")
    });
    t.key("Enter");
    let (cwd_run, args) = f.handed_off();
    assert_eq!(args, format!("--resume {sid}"));
    assert_eq!(Path::new(&cwd_run), f.work().canonicalize().unwrap());
    assert_eq!(
        std::fs::read(&here).unwrap(),
        std::fs::read(project.join(format!("{sid}.jsonl"))).unwrap(),
        "the session was pulled before the hand-off"
    );
    t.wait_for("the picker to end", |s| s.contains("[exit 0]"));
}
