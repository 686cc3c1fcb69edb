//! Where a project of another machine goes here: the local project whose working directory
//! has the same git `origin`, else a path map the user gave (`--map FROM=TO`), else the same
//! project folder name (the same path on both machines).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::format::Project;
use crate::catalog::paths::project_key;

/// The local projects, and how remote ones map onto them.
#[derive(Debug)]
pub struct Placer {
    local: HashMap<String, Project>,
    by_git: HashMap<String, Vec<String>>,
    maps: Vec<(String, String)>,
}

impl Placer {
    /// Reads each local project's working directory (from the first lines of one of its
    /// transcripts) and git origin.
    pub fn new(projects_root: &Path, maps: &[(String, String)]) -> Placer {
        let mut local = HashMap::new();
        let mut by_git: HashMap<String, Vec<String>> = HashMap::new();
        let mut keys: Vec<String> = std::fs::read_dir(projects_root)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        keys.sort();
        for key in keys {
            let cwd = project_cwd(&projects_root.join(&key));
            let git = cwd.as_deref().and_then(|c| git_origin(Path::new(c)));
            if let Some(g) = &git {
                by_git.entry(g.clone()).or_default().push(key.clone());
            }
            local.insert(key.clone(), Project { key, cwd, git });
        }
        Placer {
            local,
            by_git,
            maps: maps.to_vec(),
        }
    }

    /// What this machine says of its project `key`.
    pub fn describe(&self, key: &str) -> Project {
        self.local.get(key).cloned().unwrap_or_else(|| Project {
            key: key.to_owned(),
            ..Project::default()
        })
    }

    /// The local project folder name for another machine's project; `None` when its name is
    /// not a plain folder name.
    pub fn place(&self, p: &Project) -> Option<String> {
        if let Some(keys) = p.git.as_ref().and_then(|g| self.by_git.get(g)) {
            return Some(if keys.contains(&p.key) {
                p.key.clone()
            } else {
                keys[0].clone()
            });
        }
        if let Some(cwd) = &p.cwd {
            for (from, to) in self.maps.iter().rev() {
                let from = from.trim_end_matches('/');
                if let Some(rest) = cwd.strip_prefix(from)
                    && (rest.is_empty() || rest.starts_with('/'))
                {
                    return Some(project_key(&format!("{}{rest}", to.trim_end_matches('/'))));
                }
            }
        }
        plain_name(&p.key).then(|| p.key.clone())
    }
}

/// A folder name that stays in its folder: no separator, not `.`/`..`, no NUL.
fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name.len() <= 255
        && !name.contains(['/', '\0'])
}

/// The `cwd` the first transcript of a project folder records in its first 64 KiB.
fn project_cwd(dir: &Path) -> Option<String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    files.iter().find_map(|f| {
        let head = read_prefix(f, 64 << 10)?;
        head.split(|&b| b == b'\n').find_map(|l| {
            let v: serde_json::Value = serde_json::from_slice(l).ok()?;
            v.get("cwd")?.as_str().map(str::to_owned)
        })
    })
}

fn read_prefix(path: &Path, max: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut buf = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(max)
        .read_to_end(&mut buf)
        .ok()?;
    Some(buf)
}

/// The URL of `origin` of the repository holding `dir` (`host/path`, so that the ssh and https
/// forms of one repository agree), from its config file (no `git` process).
pub fn git_origin(dir: &Path) -> Option<String> {
    let mut git_dir = crate::writer::git_dir(dir)?;
    // A worktree's folder names the repository's common folder, which holds the config.
    if let Ok(common) = std::fs::read_to_string(git_dir.join("commondir")) {
        git_dir = git_dir.join(common.trim());
    }
    let config = std::fs::read_to_string(git_dir.join("config")).ok()?;
    let mut in_origin = false;
    for line in config.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_origin = line.replace(' ', "") == "[remote\"origin\"]";
        } else if in_origin
            && let Some((k, v)) = line.split_once('=')
            && k.trim() == "url"
        {
            return Some(normalize_url(v.trim()));
        }
    }
    None
}

fn normalize_url(url: &str) -> String {
    let url = url.trim_end_matches('/').trim_end_matches(".git");
    let rest = url.split_once("://").map_or_else(
        // scp form: `git@host:path`
        || url.replacen(':', "/", 1),
        |(_, r)| r.to_owned(),
    );
    let rest = rest.rsplit_once('@').map_or(rest.as_str(), |(_, r)| r);
    rest.to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_and_https_forms_of_one_repository_agree() {
        assert_eq!(
            normalize_url("git@github.com:Me/Repo.git"),
            "github.com/me/repo"
        );
        assert_eq!(
            normalize_url("https://github.com/me/repo/"),
            "github.com/me/repo"
        );
        assert_eq!(
            normalize_url("ssh://git@github.com/me/repo.git"),
            "github.com/me/repo"
        );
    }

    #[test]
    fn a_project_is_placed_by_origin_then_map_then_name() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("src/repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::write(
            repo.join(".git/config"),
            "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = git@github.com:me/repo.git\n",
        )
        .unwrap();
        let root = tmp.path().join("projects");
        let key = project_key(repo.to_str().unwrap());
        std::fs::create_dir_all(root.join(&key)).unwrap();
        std::fs::write(
            root.join(&key).join("s.jsonl"),
            format!(
                "{{\"type\":\"user\",\"cwd\":{:?}}}\n",
                repo.to_str().unwrap()
            ),
        )
        .unwrap();
        let maps = vec![("/home/other".to_owned(), "/work".to_owned())];
        let p = Placer::new(&root, &maps);
        assert_eq!(p.describe(&key).git.as_deref(), Some("github.com/me/repo"));
        let theirs = |cwd: &str, git: Option<&str>| Project {
            key: project_key(cwd),
            cwd: Some(cwd.into()),
            git: git.map(str::to_owned),
        };
        assert_eq!(
            p.place(&theirs("/elsewhere/repo", Some("github.com/me/repo"))),
            Some(key)
        );
        assert_eq!(
            p.place(&theirs("/home/other/x/y", None)),
            Some(project_key("/work/x/y"))
        );
        assert_eq!(
            p.place(&theirs("/same/path", None)),
            Some("-same-path".into())
        );
        let bad = Project {
            key: "..".into(),
            ..Project::default()
        };
        assert_eq!(p.place(&bad), None);
    }
}
