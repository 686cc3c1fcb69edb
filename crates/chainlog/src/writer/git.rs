//! The git branch of a working directory, as Claude Code stamps `gitBranch` on messages: read
//! from `.git/HEAD` (no `git` process), following a worktree's or submodule's `.git` file.

use std::path::{Path, PathBuf};

/// The branch checked out in the repository holding `dir`: its name, `HEAD` when detached,
/// `None` outside a repository (or when `HEAD` cannot be read).
pub fn git_branch(dir: &Path) -> Option<String> {
    let git_dir = git_dir(dir)?;
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let head = head.trim();
    Some(match head.strip_prefix("ref:") {
        Some(r) => {
            let r = r.trim();
            r.strip_prefix("refs/heads/").unwrap_or(r).to_owned()
        }
        None => "HEAD".to_owned(),
    })
}

/// The git folder of the repository holding `dir` (a worktree's or submodule's own folder,
/// named by its `.git` file), or `None` outside a repository.
pub fn git_dir(dir: &Path) -> Option<PathBuf> {
    let git = dir
        .ancestors()
        .map(|d| d.join(".git"))
        .find(|g| g.exists())?;
    if git.is_file() {
        // `gitdir: <path>` (worktrees, submodules), relative to the file's folder.
        let text = std::fs::read_to_string(&git).ok()?;
        let target = PathBuf::from(text.strip_prefix("gitdir:")?.trim());
        Some(git.parent()?.join(target))
    } else {
        Some(git)
    }
}

#[cfg(test)]
mod tests {
    use super::git_branch;

    #[test]
    fn branch_detached_worktree_and_none() {
        let d = tempfile::tempdir().unwrap();
        let repo = d.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/feature/x\n").unwrap();
        assert_eq!(
            git_branch(&repo.join("src/deep")).as_deref(),
            Some("feature/x")
        );
        std::fs::write(
            repo.join(".git/HEAD"),
            "0123456789abcdef0123456789abcdef01234567\n",
        )
        .unwrap();
        assert_eq!(git_branch(&repo).as_deref(), Some("HEAD"));
        // A worktree: `.git` is a file naming the real git dir.
        let wt = d.path().join("wt");
        std::fs::create_dir_all(repo.join(".git/worktrees/wt")).unwrap();
        std::fs::write(
            repo.join(".git/worktrees/wt/HEAD"),
            "ref: refs/heads/wt-branch\n",
        )
        .unwrap();
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(wt.join(".git"), "gitdir: ../repo/.git/worktrees/wt\n").unwrap();
        assert_eq!(git_branch(&wt).as_deref(), Some("wt-branch"));
        let outside = tempfile::tempdir().unwrap();
        // (a temp folder can sit inside a repository on some machines: only check no panic)
        let _ = git_branch(outside.path());
    }
}
