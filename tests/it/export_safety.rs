//! Issue #29, `export`: nothing `export -o FILE` writes can destroy a transcript (the output
//! is refused when it would land on one or in `projects/`, is not a regular file, or is a
//! symbolic link; it replaces FILE only once the document is complete), and the Markdown and
//! HTML documents carry transcript text as text, never as markup.

use crate::util;

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

const S1: &str = "11111111-1111-4111-8111-111111111111";
const S2: &str = "22222222-2222-4222-8222-222222222222";
const AGENT: &str = "a1";
const FORMATS: [&str; 3] = ["markdown", "html", "jsonl"];

/// A claude dir with two sessions (the first with a sub-agent) in one project, and a folder
/// `outside/` beside it.
struct Tree {
    tmp: tempfile::TempDir,
    claude: PathBuf,
    project: PathBuf,
    s1: PathBuf,
    s2: PathBuf,
    agent: PathBuf,
    outside: PathBuf,
}

fn uuid(session: usize, n: usize) -> String {
    format!("00000000-0000-4000-8{session:03}-{n:012}")
}

/// A transcript of `texts`, alternately user and assistant messages.
fn transcript(session: &str, s: usize, texts: &[&str], sidechain: bool) -> String {
    let mut out = String::new();
    let mut parent = Value::Null;
    for (i, t) in texts.iter().enumerate() {
        let id = uuid(s, i + 1);
        let (ty, message) = if i % 2 == 0 {
            ("user", json!({"role": "user", "content": t}))
        } else {
            (
                "assistant",
                json!({"role": "assistant", "id": format!("msg_{s}_{i}"), "type": "message",
                       "content": [{"type": "text", "text": t}]}),
            )
        };
        let line = json!({
            "parentUuid": parent, "isSidechain": sidechain, "type": ty, "message": message,
            "uuid": id, "timestamp": format!("2026-03-14T09:00:{i:02}.000Z"),
            "sessionId": session, "cwd": "/work/p",
        });
        out.push_str(&line.to_string());
        out.push('\n');
        parent = json!(id);
    }
    out
}

impl Tree {
    fn new() -> Tree {
        let tmp = tempfile::tempdir().unwrap();
        let claude = tmp.path().join("claude");
        let project = claude.join("projects").join("-work-p");
        let outside = tmp.path().join("outside");
        fs::create_dir_all(&project).unwrap();
        fs::create_dir_all(&outside).unwrap();
        let s1 = project.join(format!("{S1}.jsonl"));
        let s2 = project.join(format!("{S2}.jsonl"));
        fs::write(
            &s1,
            transcript(S1, 1, &["first question", "first answer"], false),
        )
        .unwrap();
        fs::write(
            &s2,
            transcript(S2, 2, &["second question", "second answer"], false),
        )
        .unwrap();
        let sub = project.join(S1).join("subagents");
        fs::create_dir_all(&sub).unwrap();
        let agent = sub.join(format!("agent-{AGENT}.jsonl"));
        fs::write(
            &agent,
            transcript(S1, 3, &["look around", "found it"], true),
        )
        .unwrap();
        for f in [&s1, &s2, &agent] {
            util::age(f);
        }
        Tree {
            tmp,
            claude,
            project,
            s1,
            s2,
            agent,
            outside,
        }
    }

    fn root(&self) -> &Path {
        self.tmp.path()
    }

    /// Runs `chainlog --claude-dir <claude> ARGS` in the tree's root.
    fn run(&self, args: &[&str]) -> Output {
        run_in(self.root(), &self.claude, args)
    }

    /// The document `export` prints on standard output.
    fn document(&self, target: &str, format: &str) -> Vec<u8> {
        let o = self.run(&["export", target, "--format", format]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        o.stdout
    }
}

/// Runs the real binary with a deadline: an export that opens a FIFO for writing blocks
/// forever, and a hung test must fail, not stall the suite.
fn run_in(cwd: &Path, claude: &Path, args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_chainlog"))
        .arg("--claude-dir")
        .arg(claude)
        .args(args)
        .current_dir(cwd)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the chainlog binary runs");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            r.read_to_end(&mut v).unwrap();
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + Duration::from_mins(1);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("chainlog {args:?} still running after 60 s (blocked on its output?)");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

use util::mkfifo;

/// Asserts `export TARGET --format F -o OUT` is refused for every format: exit 2, an error
/// naming OUT, and `keep` byte-identical afterwards.
fn assert_refused(t: &Tree, target: &str, out: &Path, keep: &[&Path]) {
    let before: Vec<Vec<u8>> = keep.iter().map(|p| fs::read(p).unwrap()).collect();
    for format in FORMATS {
        let o = t.run(&[
            "export",
            target,
            "--format",
            format,
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(
            o.status.code(),
            Some(2),
            "export {target} --format {format} -o {}: {}",
            out.display(),
            stderr(&o)
        );
        let err = stderr(&o);
        assert!(
            err.contains(&out.display().to_string()) && err.contains("refusing"),
            "the error names the output and refuses: {err}"
        );
        for (p, b) in keep.iter().zip(&before) {
            assert!(&fs::read(p).unwrap() == b, "{} changed", p.display());
        }
    }
}

#[test]
fn an_output_onto_a_transcript_is_refused() {
    let t = Tree::new();
    let all = [t.s1.as_path(), t.s2.as_path(), t.agent.as_path()];
    // Its own transcript, another session's, a sub-agent's.
    for out in all {
        assert_refused(&t, S1, out, &all);
    }
    // A new file in projects/ (it would be found as a transcript or clutter the folder).
    let new = t.project.join("notes.md");
    assert_refused(&t, S1, &new, &all);
    assert!(!new.exists());
    // Relative, and through `..`.
    let o = t.run(&[
        "export",
        S1,
        "-o",
        &format!("claude/projects/-work-p/../-work-p/{S2}.jsonl"),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        fs::read(&t.s2).unwrap(),
        transcript(S2, 2, &["second question", "second answer"], false).as_bytes()
    );
}

#[test]
fn symbolic_links_at_or_above_the_output_are_not_followed_into_transcripts() {
    let t = Tree::new();
    let all = [t.s1.as_path(), t.s2.as_path(), t.agent.as_path()];
    // A link to a transcript.
    let link = t.outside.join("link.jsonl");
    symlink(&t.s1, &link).unwrap();
    assert_refused(&t, S1, &link, &all);
    assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
    // A link to a regular file elsewhere: links are refused, whatever they point at.
    let doc = t.outside.join("doc.md");
    fs::write(&doc, "mine").unwrap();
    let link2 = t.outside.join("link.md");
    symlink(&doc, &link2).unwrap();
    assert_refused(&t, S1, &link2, &[&doc]);
    // A folder link into projects/, and one to the claude dir.
    let dir_link = t.outside.join("proj");
    symlink(&t.project, &dir_link).unwrap();
    assert_refused(&t, S1, &dir_link.join(format!("{S2}.jsonl")), &all);
    assert_refused(&t, S1, &dir_link.join("new.md"), &all);
    assert!(!t.project.join("new.md").exists());
    let claude_link = t.outside.join("claude");
    symlink(&t.claude, &claude_link).unwrap();
    assert_refused(&t, S1, &claude_link.join("projects/-work-p/new.md"), &all);
    assert!(!t.project.join("new.md").exists());
}

#[test]
fn special_files_are_refused_without_blocking() {
    let t = Tree::new();
    let fifo = t.outside.join("fifo");
    mkfifo(&fifo);
    assert_refused(&t, S1, &fifo, &[]);
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    assert_refused(&t, S1, &t.outside, &[]);
    assert!(t.outside.is_dir());
    assert_refused(&t, S1, Path::new("/dev/null"), &[]);
    // A path ending in a slash names a folder.
    let o = t.run(&["export", S1, "-o", &format!("{}/", t.outside.display())]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn a_transcript_outside_the_claude_dir_is_not_overwritten() {
    let t = Tree::new();
    let copy = t.outside.join("fixture.jsonl");
    fs::copy(util::manifest_dir().join("fixtures/example.jsonl"), &copy).unwrap();
    let c = copy.to_str().unwrap();
    assert_refused(&t, c, &copy, &[&copy]);
    // The same file under another name (a hard link).
    let hard = t.outside.join("hard.jsonl");
    fs::hard_link(&copy, &hard).unwrap();
    assert_refused(&t, c, &hard, &[&copy]);
    // Its sub-agents' folder, an existing agent transcript or a new file.
    let sub = t.outside.join("fixture/subagents");
    fs::create_dir_all(&sub).unwrap();
    let agent = sub.join("agent-b1.jsonl");
    fs::copy(&t.agent, &agent).unwrap();
    assert_refused(&t, c, &agent, &[&copy, &agent]);
    assert_refused(&t, c, &sub.join("notes.md"), &[&copy, &agent]);
    assert!(!sub.join("notes.md").exists());
}

#[test]
fn a_new_or_replaced_output_holds_the_document_with_mode_0600() {
    let t = Tree::new();
    for format in FORMATS {
        let want = t.document(S1, format);
        let new = t.outside.join(format!("new.{format}"));
        let o = t.run(&[
            "export",
            S1,
            "--format",
            format,
            "-o",
            new.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            fs::read(&new).unwrap() == want,
            "{format}: not the document"
        );
        let mode = fs::metadata(&new).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{format}: mode {mode:o}");
        // An existing file is replaced (and made private).
        let old = t.outside.join(format!("old.{format}"));
        fs::write(
            &old,
            "an older export that is much longer than the new one ".repeat(400),
        )
        .unwrap();
        fs::set_permissions(&old, fs::Permissions::from_mode(0o644)).unwrap();
        let o = t.run(&[
            "export",
            S1,
            "--format",
            format,
            "-o",
            old.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            fs::read(&old).unwrap() == want,
            "{format}: not the document"
        );
        assert_eq!(
            fs::metadata(&old).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    // Nothing but the outputs was left in the folder (no temporary file).
    let mut names: Vec<String> = fs::read_dir(&t.outside)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "new.html",
            "new.jsonl",
            "new.markdown",
            "old.html",
            "old.jsonl",
            "old.markdown"
        ]
    );
}

/// Runs `chainlog --claude-dir <claude> ARGS` in `cwd` with files limited to `blocks` blocks
/// of 512 bytes and `SIGXFSZ` ignored, so a write past the limit fails with `EFBIG`.
fn run_limited(cwd: &Path, claude: &Path, blocks: u32, args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {blocks}; exec \"$0\" \"$@\""
        ))
        .arg(env!("CARGO_BIN_EXE_chainlog"))
        .arg("--claude-dir")
        .arg(claude)
        .args(args)
        .current_dir(cwd)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn a_failed_export_leaves_the_output_as_it_was() {
    let t = Tree::new();
    // A document of ~150 KB; the output may grow to 32 KiB: the write fails half-way, after
    // the output path was accepted.
    let big = t.outside.join("big.jsonl");
    let big_s = big.to_str().unwrap();
    let o = t.run(&["gen", big_s, "--bytes", "300000"]);
    assert!(o.status.success(), "{}", stderr(&o));
    util::age(&big);
    let keep = t.outside.join("keep.md");
    fs::write(&keep, "precious").unwrap();
    for format in FORMATS {
        // Indexed first, so the limited run only reads the index.
        assert!(t.document(big_s, format).len() > 64 * 512, "{format}");
        let before = snapshot(t.root());
        let o = run_limited(
            t.root(),
            &t.claude,
            64,
            &[
                "export",
                big_s,
                "--format",
                format,
                "-o",
                keep.to_str().unwrap(),
            ],
        );
        assert_eq!(o.status.code(), Some(2), "{format}: {}", stderr(&o));
        assert!(stderr(&o).contains("File too large"), "{}", stderr(&o));
        let kept = fs::read(&keep).unwrap();
        assert!(
            kept == b"precious",
            "{format}: keep.md changed ({} bytes)",
            kept.len()
        );
        assert!(snapshot(t.root()) == before, "{format}: files changed");
    }
}

// ------------------------------------------------------------------------------------------
// Random trees and outputs
// ------------------------------------------------------------------------------------------

/// What a path is, without following links: enough to see any change.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    File { bytes: Vec<u8>, mode: u32, ino: u64 },
    Dir,
    Link(PathBuf),
    Fifo,
    Other,
}

/// Every path under `root`, links not followed.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Node> {
    fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Node>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let m = fs::symlink_metadata(&p).unwrap();
            let ft = m.file_type();
            let node = if ft.is_symlink() {
                Node::Link(fs::read_link(&p).unwrap())
            } else if ft.is_dir() {
                walk(&p, out);
                Node::Dir
            } else if ft.is_file() {
                Node::File {
                    bytes: fs::read(&p).unwrap(),
                    mode: m.mode(),
                    ino: m.ino(),
                }
            } else if ft.is_fifo() {
                Node::Fifo
            } else {
                Node::Other
            };
            out.insert(p, node);
        }
    }
    let mut out = BTreeMap::new();
    walk(root, &mut out);
    out
}

/// Adds to `t` regular files, folders, FIFOs, a hard link to a transcript, and links of every
/// kind (to transcripts, to folders inside projects/, dangling, chained, looping). Returns
/// the transcripts (regular `.jsonl` files under the claude dir and one outside it) and the
/// one outside.
fn odd_tree(t: &Tree) -> (Vec<PathBuf>, PathBuf) {
    let out = &t.outside;
    fs::create_dir_all(out.join("sub/deeper")).unwrap();
    fs::write(out.join("doc.md"), "a document").unwrap();
    fs::write(out.join("sub/notes.txt"), "notes").unwrap();
    let copy = out.join("sub/fixture.jsonl");
    fs::copy(util::manifest_dir().join("fixtures/example.jsonl"), &copy).unwrap();
    mkfifo(&out.join("fifo"));
    mkfifo(&t.project.join("fifo.jsonl"));
    fs::hard_link(&t.s2, out.join("hard.jsonl")).unwrap();
    symlink(&t.s1, out.join("to-s1")).unwrap();
    symlink(
        format!("../claude/projects/-work-p/{S2}.jsonl"),
        out.join("rel-to-s2"),
    )
    .unwrap();
    symlink(&t.project, out.join("to-project")).unwrap();
    symlink(t.project.join(S1), out.join("to-session-folder")).unwrap();
    symlink(&t.claude, out.join("to-claude")).unwrap();
    symlink(out.join("missing"), out.join("dangling")).unwrap();
    symlink(
        t.project.join("missing.jsonl"),
        out.join("dangling-into-projects"),
    )
    .unwrap();
    symlink(out.join("to-s1"), out.join("chain")).unwrap();
    symlink(out.join("chain"), out.join("chain2")).unwrap();
    symlink(out.join("loop-b"), out.join("loop-a")).unwrap();
    symlink(out.join("loop-a"), out.join("loop-b")).unwrap();
    symlink(out.join("fifo"), out.join("to-fifo")).unwrap();
    symlink(out.join("sub"), out.join("to-sub")).unwrap();
    symlink(out.join("doc.md"), out.join("to-doc")).unwrap();
    symlink(out, t.project.join("link-out")).unwrap();
    let transcripts = util::files_ending(&t.claude, ".jsonl")
        .into_iter()
        .filter(|p| fs::metadata(p).is_ok_and(|m| m.is_file()))
        .chain([copy.clone()])
        .collect();
    (transcripts, copy)
}

/// Outputs to try in the tree at `root`: every path, a new name inside every folder and
/// behind every link, and a few odd spellings.
fn candidates(root: &Path) -> Vec<String> {
    let mut candidates: Vec<String> = Vec::new();
    for p in snapshot(root).keys() {
        let rel = p.strip_prefix(root).unwrap().to_str().unwrap().to_owned();
        candidates.push(rel.clone());
        candidates.push(format!("{rel}/new.md"));
        candidates.push(format!("{rel}/../new.md"));
        candidates.push(format!("{rel}/"));
    }
    candidates.extend(
        [
            "new.md",
            "./new.md",
            "outside/new.md",
            "nowhere/new.md",
            "outside/to-project/../new.md",
            "outside/to-claude/projects/new.md",
            "claude/new.md",
            "claude/projects",
            "claude/projects/new.jsonl",
            ".",
            "..",
            "",
        ]
        .map(str::to_owned),
    );
    candidates
}

/// Puts back what an export replaced at `path` (`was`), so later runs see the tree as built.
fn undo(path: &Path, was: Option<&Node>, what: &str) {
    match was {
        None => fs::remove_file(path).unwrap(),
        Some(Node::File { bytes, mode, .. }) => {
            fs::remove_file(path).unwrap();
            fs::write(path, bytes).unwrap();
            fs::set_permissions(path, fs::Permissions::from_mode(*mode)).unwrap();
        }
        Some(other) => panic!("{what}: replaced {other:?}, not a regular file"),
    }
}

#[test]
fn random_outputs_never_touch_a_transcript_or_anything_but_the_output() {
    let t = Tree::new();
    let root = fs::canonicalize(t.root()).unwrap();
    let (transcripts, copy) = odd_tree(&t);
    let originals: Vec<Vec<u8>> = transcripts.iter().map(|p| fs::read(p).unwrap()).collect();

    let candidates = candidates(&root);
    let targets = [S1, S2, AGENT, copy.to_str().unwrap()];
    let mut documents = BTreeMap::new();
    for target in targets {
        for format in FORMATS {
            documents.insert((target, format), t.document(target, format));
        }
    }

    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(29);
    let runs = 300;
    let mut written = 0;
    for _ in 0..runs {
        let rel = &candidates[rng.random_range(0..candidates.len())];
        let target = targets[rng.random_range(0..targets.len())];
        let format = FORMATS[rng.random_range(0..FORMATS.len())];
        // Absolute or relative to the tree's root (the command's working directory).
        let arg = if rng.random_bool(0.5) {
            root.join(rel).to_str().unwrap().to_owned()
        } else {
            rel.clone()
        };
        let before = snapshot(&root);
        let o = t.run(&["export", target, "--format", format, "-o", &arg]);
        let after = snapshot(&root);
        let what = format!("export {target} --format {format} -o {arg:?}");
        for (p, b) in transcripts.iter().zip(&originals) {
            assert!(
                &fs::read(p).unwrap() == b,
                "{what}: {} changed",
                p.display()
            );
        }
        if o.status.success() {
            written += 1;
            // Only the output changed, and it is a regular file holding the document.
            let given = root.join(rel);
            let outp = fs::canonicalize(given.parent().unwrap())
                .unwrap()
                .join(given.file_name().unwrap());
            let node = after.get(&outp).unwrap_or_else(|| {
                panic!("{what}: exit 0 but {} is not in the tree", outp.display())
            });
            let Node::File { bytes, mode, .. } = node else {
                panic!("{what}: the output is {node:?}")
            };
            assert!(
                bytes == &documents[&(target, format)],
                "{what}: not the document"
            );
            assert_eq!(mode & 0o777, 0o600, "{what}");
            let mut rest_before = before.clone();
            let mut rest_after = after.clone();
            rest_before.remove(&outp);
            rest_after.remove(&outp);
            assert!(rest_before == rest_after, "{what}: other paths changed");
            undo(&outp, before.get(&outp), &what);
        } else {
            assert!(
                before == after,
                "{what} failed ({}) but changed files",
                stderr(&o)
            );
        }
    }
    eprintln!("{written} of {runs} exports wrote their output");
    // The runs did exercise both outcomes.
    assert!(
        written > 5 && written < runs,
        "{written} of {runs} runs wrote"
    );
}

// ------------------------------------------------------------------------------------------
// Transcript text is text
// ------------------------------------------------------------------------------------------

const PAYLOAD: &str = "<script>alert(1)</script> <img src=x onerror=alert(1)> \
                       <svg onload=alert(1)> </details> [x](javascript:alert(1)) \
                       <javascript:alert(1)> [y]: javascript:alert(1)";

/// A session whose every text — title, prompt, answer, thinking, tool call and result,
/// timestamps, a system subtype, a sub-agent's type, description and messages — carries
/// [`PAYLOAD`], and text built to break out of code blocks.
fn hostile_tree() -> Tree {
    let t = Tree::new();
    let p = PAYLOAD;
    // Text built to leave code: a tilde fence closed before a backtick fence, a code span
    // across a paragraph break, escaped brackets before links, fences indented or in a list
    // (the renderer closes them with the list), and an unclosed fence (closed by the export,
    // so the next message is not code). Code that stays code keeps its text as written.
    let tricks = [
        "~~~\n```\n~~~\n<script>alert(2)</script>\n```\n<b>code</b>\n```",
        "`a\n\n<img src=x onerror=alert(3)>`",
        "\\[a](javascript:alert(4)) \\\\[b](javascript:alert(5))",
        "  ```\n<script>alert(7)</script>\n  ```",
        "- item\n  ```\n<svg onload=alert(8)>\n  ```",
        "`<b>inline code</b>` and `` a ` <i>b</i> ``",
        "```html\n<b>kept</b>",
    ];
    let lines = [
        json!({"type": "custom-title", "customTitle": p, "sessionId": S1}),
        json!({"parentUuid": null, "type": "user", "uuid": uuid(9, 1), "timestamp": p,
               "sessionId": S1, "message": {"role": "user", "content": p}}),
        json!({"parentUuid": uuid(9, 1), "type": "assistant", "uuid": uuid(9, 2),
        "timestamp": "2026-03-14T09:00:01.000Z", "sessionId": S1,
        "message": {"role": "assistant", "id": "msg_h1", "type": "message", "content": [
            {"type": "thinking", "thinking": format!("{p}\n{}", tricks.join("\n\n"))},
            {"type": "text", "text": format!("{p}\n\n{}", tricks.join("\n\n"))},
            {"type": "tool_use", "id": "toolu_1", "name": p, "input": {"command": p}},
        ]}}),
        json!({"parentUuid": uuid(9, 2), "type": "user", "uuid": uuid(9, 3),
        "timestamp": "2026-03-14T09:00:02.000Z", "sessionId": S1,
        "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": p},
            {"type": "text", "text": tricks[6]},
            {"type": "text", "text": p},
            {"type": "text", "text": tricks[0]},
        ]}}),
        json!({"parentUuid": uuid(9, 3), "type": "system", "subtype": p, "content": p,
               "uuid": uuid(9, 4), "timestamp": "2026-03-14T09:00:03.000Z", "sessionId": S1}),
    ];
    let text: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    fs::write(&t.s1, text).unwrap();
    fs::write(&t.agent, transcript(S1, 3, &[p, p], true)).unwrap();
    fs::write(
        t.agent.with_file_name(format!("agent-{AGENT}.meta.json")),
        json!({"agentType": p, "description": p}).to_string(),
    )
    .unwrap();
    for f in [&t.s1, &t.agent] {
        util::age(f);
    }
    t
}

fn export_of(t: &Tree, format: &str) -> String {
    String::from_utf8(t.document(S1, format)).unwrap()
}

/// `md` without the code blocks of tool calls and results (each opened by a backtick run
/// after `<summary>Tool …</summary>` and a blank line, closed by the same run on its own line).
fn without_tool_blocks(md: &str) -> String {
    let mut out = String::new();
    let mut rest = md;
    while let Some(at) = rest.find("<details><summary>Tool ") {
        let open = at + rest[at..].find("</summary>\n\n").unwrap() + "</summary>\n\n".len();
        let fence: String = rest[open..].chars().take_while(|&c| c == '`').collect();
        assert!(
            fence.len() >= 3,
            "no code block after {:?}",
            &rest[at..open]
        );
        let close = open + rest[open..].find(&format!("\n{fence}\n")).unwrap() + fence.len() + 2;
        out.push_str(&rest[..open]);
        rest = &rest[close..];
    }
    out.push_str(rest);
    out
}

#[test]
fn markdown_export_carries_transcript_html_and_links_as_text() {
    let t = hostile_tree();
    let md = export_of(&t, "markdown");
    // Every piece of text made it (escaped): the title, the agent's label, the messages.
    assert!(md.starts_with("# &lt;script"), "{md}");
    assert!(md.matches("alert(1)").count() >= 10, "{md}");
    // Tool inputs and results are in code blocks, shown as written: leave them out.
    let md = without_tool_blocks(&md);
    let lower = md.to_lowercase();
    for tag in ["<script", "<img", "<svg", "<javascript"] {
        assert!(!lower.contains(tag), "{tag} in the Markdown:\n{md}");
    }
    // The export's own `<details>` (thinking, tool call, tool result), no one else's.
    assert_eq!(md.matches("<details>").count(), 3, "{md}");
    assert_eq!(md.matches("</details>").count(), 3, "{md}");
    // No link can form: every bracket of the transcript is escaped, so no `](` or `]:`
    // follows an unescaped `]`.
    for pat in ["](javascript:", "]: javascript:"] {
        for (i, _) in md.match_indices(pat) {
            assert!(
                md[..i].ends_with('\\') && !md[..i].ends_with("\\\\"),
                "an unescaped `{pat}` at byte {i}:\n{md}"
            );
        }
    }
    // Code stays as written.
    for code in [
        "`<b>inline code</b>`",
        "`` a ` <i>b</i> ``",
        "```html\n<b>kept</b>\n```\n",
    ] {
        assert!(md.contains(code), "{code} changed:\n{md}");
    }
}

#[test]
fn html_export_carries_transcript_html_as_text() {
    let t = hostile_tree();
    let html = export_of(&t, "html");
    let lower = html.to_lowercase();
    for tag in [
        "<script",
        "<img",
        "<svg",
        "<javascript",
        "href=\"javascript",
    ] {
        assert!(!lower.contains(tag), "{tag} in the HTML:\n{html}");
    }
    assert_eq!(
        html.matches("<details").count(),
        html.matches("</details>").count(),
        "{html}"
    );
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{html}"
    );
}
