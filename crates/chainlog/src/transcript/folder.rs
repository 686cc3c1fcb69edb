//! The files chainlog writes inside a claude dir, opened without following a link.
//!
//! # Rule (format.md §A3, README "Writing")
//! A writer opens a project folder, and below it every folder and file, through `openat`
//! with `O_NOFOLLOW` (folders also `O_DIRECTORY`): a symbolic link anywhere below the
//! project folder, the project folder itself included, is refused with
//! [`Error::Refused`] and nothing is created at its target — also when the link dangles. A file
//! that is not a regular file (a FIFO, a device, a socket) is refused too, and opening it never
//! blocks. Folders are created 0700, files 0600. Walking down from an open descriptor, not
//! from a path, leaves no window in which a folder swapped for a link is followed.
//!
//! The folders above the project folder (`projects/`, the claude dir) are the user's choice:
//! `~/.claude` may itself be a link.

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use crate::error::{Error, Result};

/// A folder opened for writing beneath (see the module docs).
#[derive(Debug)]
pub struct Folder {
    fd: OwnedFd,
    path: PathBuf,
}

/// What [`Folder::stat`] tells of a name in a folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    /// Device.
    pub dev: u64,
    /// Inode.
    pub ino: u64,
    /// Length in bytes.
    pub len: u64,
    /// A regular file (not a link, folder, FIFO, ...).
    pub regular: bool,
}

impl Identity {
    fn of(st: &rustix::fs::Stat) -> Identity {
        Identity {
            dev: st.st_dev,
            ino: st.st_ino,
            len: u64::try_from(st.st_size).unwrap_or(0),
            regular: FileType::from_raw_mode(st.st_mode) == FileType::RegularFile,
        }
    }

    /// The identity of an open file.
    pub fn of_file(file: &File, path: &Path) -> Result<Identity> {
        rustix::fs::fstat(file)
            .map(|st| Identity::of(&st))
            .map_err(|e| Error::io(path, e.into()))
    }
}

fn refused(path: PathBuf, reason: &str) -> Error {
    Error::Refused {
        path,
        reason: reason.to_owned(),
    }
}

/// `ELOOP` from `O_NOFOLLOW` on a link, `ENOTDIR` from `O_DIRECTORY` on a link or file.
fn open_error(path: PathBuf, e: rustix::io::Errno, folder: bool) -> Error {
    if e == rustix::io::Errno::LOOP {
        refused(
            path,
            "it is a symbolic link; chainlog never writes through links",
        )
    } else if folder && e == rustix::io::Errno::NOTDIR {
        refused(path, "it is not a folder (a link or a file)")
    } else {
        Error::io(path, e.into())
    }
}

const DIR_FLAGS: OFlags = OFlags::DIRECTORY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC)
    .union(OFlags::RDONLY);

impl Folder {
    /// Opens the project folder `dir`, which must be a folder and not a link. With `create`,
    /// a missing `dir` is created 0700 (its missing parents too).
    pub fn open(dir: &Path, create: bool) -> Result<Folder> {
        let cwd = rustix::fs::CWD;
        match rustix::fs::openat(cwd, dir, DIR_FLAGS, Mode::empty()) {
            Ok(fd) => Ok(Folder {
                fd,
                path: dir.to_path_buf(),
            }),
            Err(e) if create && e == rustix::io::Errno::NOENT => {
                if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                    use std::os::unix::fs::DirBuilderExt;
                    std::fs::DirBuilder::new()
                        .recursive(true)
                        .mode(0o700)
                        .create(parent)
                        .map_err(|e| Error::io(parent, e))?;
                }
                match rustix::fs::mkdirat(cwd, dir, Mode::from_raw_mode(0o700)) {
                    Ok(()) => {}
                    Err(e) if e == rustix::io::Errno::EXIST => {}
                    Err(e) => return Err(Error::io(dir, e.into())),
                }
                Folder::open(dir, false)
            }
            Err(e) => Err(open_error(dir.to_path_buf(), e, true)),
        }
    }

    /// The folder's path (for messages and for readers).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of `name` in this folder.
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// The sub-folder `name`, not a link; created 0700 when missing and `create`. `Ok(None)`:
    /// missing and not created.
    pub fn sub(&self, name: &str, create: bool) -> Result<Option<Folder>> {
        let path = self.join(name);
        loop {
            match rustix::fs::openat(&self.fd, name, DIR_FLAGS, Mode::empty()) {
                Ok(fd) => return Ok(Some(Folder { fd, path })),
                Err(e) if e == rustix::io::Errno::NOENT && create => {
                    match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o700)) {
                        Ok(()) => {}
                        Err(e) if e == rustix::io::Errno::EXIST => {}
                        Err(e) => return Err(open_error(path, e, true)),
                    }
                }
                Err(e) if e == rustix::io::Errno::NOENT => return Ok(None),
                Err(e) => return Err(open_error(path, e, true)),
            }
        }
    }

    /// Walks down `names` from this folder (see [`Folder::sub`]).
    pub fn descend(self, names: &[&str], create: bool) -> Result<Option<Folder>> {
        let mut at = self;
        for n in names {
            match at.sub(n, create)? {
                Some(f) => at = f,
                None => return Ok(None),
            }
        }
        Ok(Some(at))
    }

    fn open_file(&self, name: &str, flags: OFlags, mode: u32) -> Result<Option<File>> {
        let path = self.join(name);
        // NONBLOCK: a FIFO put where a file was expected must not hang the open.
        let flags = flags | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let fd = match rustix::fs::openat(&self.fd, name, flags, Mode::from_raw_mode(mode)) {
            Ok(fd) => fd,
            Err(e) if e == rustix::io::Errno::NOENT => return Ok(None),
            Err(e) if e == rustix::io::Errno::EXIST && flags.contains(OFlags::EXCL) => {
                return Ok(None);
            }
            Err(e) => return Err(open_error(path, e, false)),
        };
        let file = File::from(fd);
        if !Identity::of_file(&file, &path)?.regular {
            return Err(refused(path, "it is not a regular file"));
        }
        // Back to blocking I/O for the regular file it is.
        let fl = rustix::fs::fcntl_getfl(&file).map_err(|e| Error::io(&path, e.into()))?;
        rustix::fs::fcntl_setfl(&file, fl - OFlags::NONBLOCK)
            .map_err(|e| Error::io(&path, e.into()))?;
        Ok(Some(file))
    }

    /// `name` opened for reading and appending, created 0600 when missing.
    pub fn open_append(&self, name: &str) -> Result<File> {
        let flags = OFlags::RDWR | OFlags::APPEND | OFlags::CREATE;
        self.open_file(name, flags, 0o600)?
            .ok_or_else(|| Error::io(self.join(name), std::io::ErrorKind::NotFound.into()))
    }

    /// `name` opened for appending (created when `create`, else `None` when missing) with the
    /// writers' lock held: an exclusive `flock` among chainlog writers ([`File::lock`]). After
    /// locking, the name is checked to still be the locked file (a tombstone rewrite renames a
    /// new file in); if not, the file there now is opened and locked instead.
    pub fn open_locked(&self, name: &str, create: bool) -> Result<Option<File>> {
        loop {
            let file = if create {
                self.open_append(name)?
            } else {
                let flags = OFlags::RDWR | OFlags::APPEND;
                match self.open_file(name, flags, 0)? {
                    Some(f) => f,
                    None => return Ok(None),
                }
            };
            file.lock().map_err(|e| Error::io(self.join(name), e))?;
            let held = Identity::of_file(&file, &self.join(name))?;
            match self.stat(name)? {
                Some(now) if now.dev == held.dev && now.ino == held.ino => return Ok(Some(file)),
                // Replaced or removed: lock the file there now.
                _ => {}
            }
        }
    }

    /// `name` opened for reading, or `None` when it does not exist.
    pub fn open_read(&self, name: &str) -> Result<Option<File>> {
        self.open_file(name, OFlags::RDONLY, 0)
    }

    /// A new file `name` (mode `mode`), or `None` when the name is taken (by anything, a link
    /// included: it is not followed).
    pub fn create_new(&self, name: &str, mode: u32) -> Result<Option<File>> {
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::EXCL;
        self.open_file(name, flags, mode)
    }

    /// What `name` is (not following a link), or `None` when it does not exist.
    pub fn stat(&self, name: &str) -> Result<Option<Identity>> {
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(Identity::of(&st))),
            Err(e) if e == rustix::io::Errno::NOENT => Ok(None),
            Err(e) => Err(Error::io(self.join(name), e.into())),
        }
    }

    /// Renames `from` to `to` inside this folder (`to` is replaced, a link in its place as a
    /// name, never followed).
    pub fn rename(&self, from: &str, to: &str) -> Result<()> {
        rustix::fs::renameat(&self.fd, from, &self.fd, to)
            .map_err(|e| Error::io(self.join(to), e.into()))
    }

    /// Removes the file `name` (a missing one is fine).
    pub fn remove(&self, name: &str) -> Result<()> {
        match rustix::fs::unlinkat(&self.fd, name, AtFlags::empty()) {
            Ok(()) => Ok(()),
            Err(e) if e == rustix::io::Errno::NOENT => Ok(()),
            Err(e) => Err(Error::io(self.join(name), e.into())),
        }
    }

    /// Makes the folder's entries durable.
    pub fn sync(&self) -> Result<()> {
        rustix::fs::fsync(self.fd.as_fd()).map_err(|e| Error::io(&self.path, e.into()))
    }
}

/// Reads a small file chainlog wrote itself, refusing anything that is not a regular file of at
/// most `max` bytes: a FIFO must not hang the reader, a link to `/dev/zero` must not eat memory.
/// The open does not block (`O_NONBLOCK`: a FIFO opens at once) and the type and size are taken
/// from the opened handle, so a swap between a check and the read cannot slip through.
pub fn read_small_file(path: &Path, max: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let m = file.metadata().ok()?;
    if !m.is_file() || m.len() > max {
        return None;
    }
    let mut out = Vec::new();
    file.take(max + 1).read_to_end(&mut out).ok()?;
    (out.len() as u64 <= max).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn links_and_special_files_are_refused_and_nothing_is_made_at_their_target() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        let project = tmp.path().join("project");
        std::fs::create_dir(&project).unwrap();
        std::os::unix::fs::symlink(outside.join("f"), project.join("dangling.jsonl")).unwrap();
        std::fs::write(outside.join("real"), b"x").unwrap();
        std::os::unix::fs::symlink(outside.join("real"), project.join("link.jsonl")).unwrap();
        std::os::unix::fs::symlink(&outside, project.join("dirlink")).unwrap();
        let linked_project = tmp.path().join("linked-project");
        std::os::unix::fs::symlink(&project, &linked_project).unwrap();
        let fifo = project.join("fifo.jsonl");
        crate::testing::mkfifo(&fifo);

        let f = Folder::open(&project, false).unwrap();
        for name in ["dangling.jsonl", "link.jsonl", "fifo.jsonl"] {
            let e = f.open_append(name).unwrap_err();
            assert!(matches!(e, Error::Refused { .. }), "{name}: {e}");
        }
        assert!(matches!(f.sub("dirlink", true), Err(Error::Refused { .. })));
        assert!(matches!(
            Folder::open(&linked_project, true),
            Err(Error::Refused { .. })
        ));
        assert!(
            !outside.join("f").exists(),
            "a dangling link's target was created"
        );
        assert_eq!(std::fs::read(outside.join("real")).unwrap(), b"x");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);

        // Ordinary files and folders work, with private modes.
        let sub = f.descend(&["s", "subagents"], true).unwrap().unwrap();
        let mut file = sub.open_append("agent-a1.jsonl").unwrap();
        std::io::Write::write_all(&mut file, b"{}\n").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&project.join("s/subagents/agent-a1.jsonl")), 0o600);
        assert_eq!(mode(&project.join("s/subagents")), 0o700);
        assert!(sub.create_new("agent-a1.jsonl", 0o600).unwrap().is_none());
    }
}
