//! Helpers shared by the integration tests: running the real binary, reading fixtures and
//! printing ids readably in failure messages.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The crate root (where `fixtures/` lives).
pub fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The real-transcript corpus: `$CHAINLOG_REAL_TRANSCRIPTS` when set (extra corpora), else the
/// vendored copy in `fixtures/real/` (MIT-licensed, see its MANIFEST.md). A folder that is
/// missing is a failure naming the variable, never a skip.
pub fn real_corpus() -> PathBuf {
    let (dir, origin) = match std::env::var_os("CHAINLOG_REAL_TRANSCRIPTS") {
        Some(d) => (PathBuf::from(d), "$CHAINLOG_REAL_TRANSCRIPTS"),
        None => (manifest_dir().join("fixtures/real"), "the vendored corpus"),
    };
    assert!(
        dir.is_dir(),
        "{origin}: {} is not a directory (set CHAINLOG_REAL_TRANSCRIPTS to a folder of claude dirs)",
        dir.display()
    );
    dir
}

/// Copies the folder `from` to `to` (created), files and folders only.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_type().unwrap().is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
            // Writable by the owner only (the source may be read-only).
            let perm =
                <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o600);
            std::fs::set_permissions(&dst, perm).unwrap();
        }
    }
}

/// Runs the real `chainlog` binary with `args`, stdin closed.
pub fn chainlog(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chainlog"))
        .args(args)
        // Index sidecars go to the build's scratch folder, not the user's cache.
        .env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"))
        .stdin(Stdio::null())
        .output()
        .expect("the chainlog binary runs")
}

/// Runs `chainlog resume PATH --format uuids [extra...]` and returns the printed uuids, or a
/// message with the exit status and stderr.
pub fn cli_resume_uuids(path: &Path, extra: &[&str]) -> Result<Vec<String>, String> {
    let p = path.to_str().expect("utf-8 path");
    let mut args = vec!["resume", p, "--format", "uuids"];
    args.extend_from_slice(extra);
    let out = chainlog(&args);
    if !out.status.success() {
        return Err(format!(
            "`chainlog {}` exited with {}: {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8(out.stdout)
        .map_err(|e| format!("stdout is not UTF-8: {e}"))?
        .lines()
        .map(str::to_owned)
        .collect())
}

/// Every file under `dir` (recursively) whose name ends with `suffix`, sorted.
pub fn files_ending(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, suffix: &str, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            let Ok(ty) = e.file_type() else { continue };
            if ty.is_dir() {
                walk(&path, suffix, out);
            } else if path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(suffix))
            {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, suffix, &mut out);
    out.sort();
    out
}

/// The fixtures' readable uuids `00000000-0000-4000-8000-0000000000NN` shown as `NN`
/// (anything else unchanged), so failure messages stay short.
pub fn short(uuid: &str) -> String {
    const PREFIX: &str = "00000000-0000-4000-8000-";
    match uuid.strip_prefix(PREFIX) {
        Some(tail) if tail.len() == 12 && tail.bytes().all(|b| b.is_ascii_digit()) => {
            let n = tail.trim_start_matches('0');
            format!("{n:0>2}")
        }
        _ => uuid.to_owned(),
    }
}

/// [`short`] over a list.
pub fn shorts<S: AsRef<str>>(uuids: &[S]) -> Vec<String> {
    uuids.iter().map(|u| short(u.as_ref())).collect()
}

/// Sets a file's modification time to an hour ago: chainlog re-reads a file modified just
/// before it was last read (the racy-mtime rule), so tests of cache hits age their files.
pub fn age(path: &Path) {
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_hours(1);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(hour_ago)
        .unwrap();
}

fn real_sessions(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            real_sessions(&p, out);
        } else if p.extension().is_some_and(|x| x == "jsonl")
            && p.file_stem().is_some_and(|s| s.len() == 36)
        {
            out.push(p);
        }
    }
}

/// Copies the real sessions into `<tmp>/projects/-p0..2` (a claude dir), aged; returns the
/// copies.
pub fn copy_real_sessions(tmp: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    real_sessions(&real_corpus(), &mut files);
    assert!(
        files.len() >= 10,
        "real transcripts missing under {}",
        real_corpus().display()
    );
    let mut copies = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let to = tmp.join(format!(
            "projects/-p{}/{}",
            i % 3,
            f.file_name().unwrap().to_string_lossy()
        ));
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(f, &to).unwrap();
        // Written an hour ago: a file modified just before it was read is re-read (racy mtime).
        age(&to);
        copies.push(to);
    }
    copies
}

/// Makes a FIFO at `path` (a special file where a regular one is expected).
pub fn mkfifo(path: &Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(ok.success(), "mkfifo {}", path.display());
}

/// The name libtest knows the test `f` of the module `module` (its `module_path!()`) by, for a
/// child process that runs that one test (`--exact`): the path inside this binary, e.g.
/// `writer_processes::child_role`.
pub fn test_name(module: &str, f: &str) -> String {
    let inside = module.split_once("::").map_or("", |(_, rest)| rest);
    if inside.is_empty() {
        f.to_owned()
    } else {
        format!("{inside}::{f}")
    }
}

/// `chainlog --claude-dir CLAUDE --index-dir INDEX ARGS`: (exit code, stdout, stderr).
pub fn chainlog_in(claude: &Path, index: &Path, args: &[&str]) -> (i32, String, String) {
    let mut all = vec![
        "--claude-dir",
        claude.to_str().unwrap(),
        "--index-dir",
        index.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let out = chainlog(&all);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `chainlog ARGS` as an unprivileged user, for tests of files it may not read or write
/// (root reads a file of mode 0000 and writes in a folder of mode 0555): as `nobody` through
/// `setpriv` when the tests run as root, else as the current user. The binary is copied into
/// `dir` (mode 0755; CI's target folder is private); `HOME` is `dir` and `XDG_CACHE_HOME`
/// `dir/cache`. `dir` and whatever the command must reach must be open to others.
pub fn run_unprivileged(dir: &Path, args: &[&str]) -> Output {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let bin = dir.join("chainlog");
    if !bin.exists() {
        std::fs::copy(env!("CARGO_BIN_EXE_chainlog"), &bin).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    // A child another test thread forks while the copy was open for writing holds it open
    // until that child's exec: running the copy then fails with ETXTBSY. Tried again.
    let mut attempt = 0;
    loop {
        let mut c = if root {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(&bin);
            c
        } else {
            Command::new(&bin)
        };
        let out = c
            .args(args)
            .env("HOME", dir)
            .env("XDG_CACHE_HOME", dir.join("cache"))
            .stdin(Stdio::null())
            .output();
        let busy = match &out {
            Err(e) => e.to_string().contains("Text file busy"),
            Ok(o) => String::from_utf8_lossy(&o.stderr).contains("Text file busy"),
        };
        attempt += 1;
        if !busy || attempt == 50 {
            return out.expect("setpriv (util-linux) runs the binary as nobody");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// The `{"chainlog": …}` trailer of `resume --json`: the last such line of stderr (text and
/// uuid output keep stdout to themselves), else the last line of stdout (JSON output).
pub fn resume_trailer(o: &Output) -> serde_json::Value {
    let err = String::from_utf8_lossy(&o.stderr);
    let out = String::from_utf8_lossy(&o.stdout);
    let line = err
        .lines()
        .rfind(|l| l.starts_with("{\"chainlog\""))
        .or_else(|| out.lines().last())
        .unwrap_or_else(|| panic!("no trailer: {err}"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}
