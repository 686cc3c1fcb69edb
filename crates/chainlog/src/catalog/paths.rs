//! Where transcripts live: the config root, the projects root and project keys (format.md §A3).
//!
//! # Context
//! Claude Code files a session under `<config>/projects/<key>/`, where `<key>` is the session's
//! working directory with every UTF-16 code unit that is not ASCII `[A-Za-z0-9]` replaced by `-`.
//! Keys longer than 200 units are cut and suffixed with `-<hash>`; the CLI (Bun) and the SDK
//! (Node) hash differently, so a lookup accepts any directory starting with `<first 200>-`.
//!
//! # Design
//! The mapping is lossy (`/a/b.c` and `/a/b-c` share a key), so a project found by key is
//! confirmed from the sessions' own `cwd` by the listing ([`super::list`]).
//!
//! | cwd | key |
//! |---|---|
//! | `/home/a/my.proj` | `-home-a-my-proj` |
//! | `/tmp/😀` | `-tmp---` (one non-BMP char = two UTF-16 units) |
//! | 300 × `a` | 200 × `a` + `-` + base-36 hash |

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Longest key kept as is, in UTF-16 code units.
pub const MAX_KEY_UNITS: usize = 200;

/// The Claude config directory: `explicit` (`--claude-dir`), else `$CLAUDE_CONFIG_DIR`, else
/// `$HOME/.claude`.
pub fn claude_dir(explicit: Option<&Path>) -> Result<PathBuf> {
    claude_dir_from(
        explicit,
        std::env::var_os("CLAUDE_CONFIG_DIR"),
        std::env::var_os("HOME"),
    )
}

fn claude_dir_from(
    explicit: Option<&Path>,
    config_env: Option<OsString>,
    home: Option<OsString>,
) -> Result<PathBuf> {
    if let Some(dir) = explicit {
        return Ok(dir.to_path_buf());
    }
    if let Some(dir) = config_env.filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    match home.filter(|h| !h.is_empty()) {
        Some(home) => Ok(PathBuf::from(home).join(".claude")),
        None => Err(Error::NoClaudeDir),
    }
}

/// `<claude_dir>/projects`.
pub fn projects_root(claude_dir: &Path) -> PathBuf {
    claude_dir.join("projects")
}

/// The project key of a working directory, exactly as Claude Code computes it (format.md §A3).
///
/// Long keys get the suffix Claude Code's Node build writes (a 32-bit string hash in base
/// 36); the Bun build writes another hash, which is why lookups use [`key_matches`].
pub fn project_key(cwd: &str) -> String {
    let units: Vec<u16> = cwd.encode_utf16().collect();
    let mut key: String = units
        .iter()
        .map(|&u| match u8::try_from(u) {
            Ok(b) if b.is_ascii_alphanumeric() => char::from(b),
            _ => '-',
        })
        .collect();
    if units.len() > MAX_KEY_UNITS {
        // Every char of `key` is ASCII, so units and bytes coincide.
        key.truncate(MAX_KEY_UNITS);
        key.push('-');
        key.push_str(&base36(js_string_hash(&units).unsigned_abs()));
    }
    key
}

/// Whether a project directory named `dir_name` holds sessions of a cwd whose key is `key`:
/// equal, or for a cut key (longer than 200 units) any directory starting with `<first 200>-`.
pub fn key_matches(dir_name: &str, key: &str) -> bool {
    if key.len() <= MAX_KEY_UNITS {
        return dir_name == key;
    }
    dir_name.len() > MAX_KEY_UNITS + 1
        && dir_name.as_bytes()[..MAX_KEY_UNITS] == key.as_bytes()[..MAX_KEY_UNITS]
        && dir_name.as_bytes()[MAX_KEY_UNITS] == b'-'
}

/// The cwd a project argument stands for: canonicalised when it exists (Claude Code keys by
/// the real path), trailing separators removed otherwise.
pub fn normalize_cwd(cwd: &Path) -> String {
    let real = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let s = real.to_string_lossy().into_owned();
    let trimmed = s.trim_end_matches('/');
    if trimmed.is_empty() {
        "/".into()
    } else {
        trimmed.to_owned()
    }
}

/// JavaScript's `(h << 5) - h + unit | 0` string hash over UTF-16 units.
fn js_string_hash(units: &[u16]) -> i32 {
    units.iter().fold(0i32, |h, &u| {
        h.wrapping_shl(5).wrapping_sub(h).wrapping_add(i32::from(u))
    })
}

fn base36(mut n: u32) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).expect("ASCII digits")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_replace_every_non_alnum_utf16_unit() {
        assert_eq!(project_key("/home/a/my.proj"), "-home-a-my-proj");
        assert_eq!(project_key("/tmp/x_y z"), "-tmp-x-y-z");
        // é is one BMP unit, 😀 is a surrogate pair: two units, two dashes.
        assert_eq!(project_key("/é"), "--");
        assert_eq!(project_key("/😀"), "---");
        assert_eq!(project_key("C:\\Users\\A"), "C--Users-A");
    }

    #[test]
    fn long_keys_are_cut_and_hashed_and_match_by_prefix() {
        let cwd = format!("/{}", "a".repeat(299));
        let key = project_key(&cwd);
        let head = format!("-{}", "a".repeat(199));
        assert!(key.starts_with(&format!("{head}-")), "{key}");
        assert!(key.len() > 202);
        assert!(key[201..].bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_eq!(project_key(&cwd), key, "deterministic");
        // The other build's hash: any suffix after `<first 200>-` matches.
        assert!(key_matches(&key, &key));
        assert!(key_matches(&format!("{head}-zz9"), &key));
        assert!(!key_matches(&format!("{head}x"), &key));
        assert!(!key_matches(&head, &key));
        // Exactly 200 units: kept whole, matched exactly.
        let cwd200 = format!("/{}", "b".repeat(199));
        assert_eq!(project_key(&cwd200).len(), 200);
        assert!(key_matches(&project_key(&cwd200), &project_key(&cwd200)));
        assert!(!key_matches(
            &format!("{}-x", project_key(&cwd200)),
            &project_key(&cwd200)
        ));
    }

    #[test]
    fn js_hash_matches_node() {
        // Values computed with Node: Math.abs(djb2("hello")).toString(36).
        let units: Vec<u16> = "hello".encode_utf16().collect();
        assert_eq!(js_string_hash(&units), 99_162_322);
        assert_eq!(base36(99_162_322), "1n1e4y");
        assert_eq!(base36(0), "0");
        let min: Vec<u16> = Vec::new();
        assert_eq!(js_string_hash(&min), 0);
    }

    #[test]
    fn config_root_precedence() {
        let home = Some(OsString::from("/h"));
        let env = Some(OsString::from("/cfg"));
        assert_eq!(
            claude_dir_from(Some(Path::new("/x")), env.clone(), home.clone()).unwrap(),
            PathBuf::from("/x")
        );
        assert_eq!(
            claude_dir_from(None, env, home.clone()).unwrap(),
            PathBuf::from("/cfg")
        );
        assert_eq!(
            claude_dir_from(None, Some(OsString::new()), home).unwrap(),
            PathBuf::from("/h/.claude")
        );
        assert!(claude_dir_from(None, None, None).is_err());
    }
}
