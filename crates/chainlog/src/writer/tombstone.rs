//! `remove(uuid)`: drop one message line (a discarded streaming attempt), atomically.
//!
//! The line is found through the index (one point lookup, no scan). A temporary file is
//! written beside the transcript, `fsync`ed, and renamed over it:
//! - line in the last 64 KiB: the prefix before the line is copied in the kernel
//!   (`copy_file_range` through [`std::io::copy`]) and the short tail after it is read, checked
//!   and written from memory (the "truncate and re-write what followed" of format.md §A4);
//! - otherwise: a full rewrite, prefix and suffix both copied in the kernel.
//!
//! Identity: the transcript gets a new inode with the old file's permission bits; the index
//! notices the new inode and length through its fingerprint and indexes the file again. The
//! writers' lock is held on the old inode during the rewrite; other chainlog writers re-open
//! the path after locking (see [`Folder::open_locked`]). A Claude Code process appending
//! during the rewrite could lose that append (it takes no lock); the rewrite checks the length
//! just before the rename and gives up ([`Error::Changed`]) if the file grew.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileExt, PermissionsExt};

use super::sink::Sink;
use crate::error::{Error, Result};
use crate::id::Id;
use crate::index::Sidecars;
use crate::transcript::folder::Folder;

/// The tail window inside which a tombstone re-writes only what followed the line.
pub const TAIL_WINDOW: u64 = 64 * 1024;

/// Removes the line of message `uuid` from `sink`'s file. `Ok(false)`: no such message.
pub fn remove(store: &Sidecars, sink: &mut Sink, uuid: &str) -> Result<bool> {
    let path = sink.path.clone();
    let Some(folder) = sink.folder(false)? else {
        return Ok(false);
    };
    let name = sink.name().to_owned();
    let Some(mut file) = folder.open_locked(&name, false)? else {
        return Ok(false);
    };
    // A batch a killed writer left is settled first: the rewrite keeps it whole.
    crate::transcript::batch::settle(&folder, &name, &mut file, true)?;
    let idx = sink.index(store)?;
    idx.catch_up()?;
    let Some(pos) = idx.position(Id::from_text(uuid))? else {
        return Ok(false);
    };
    let len = file.metadata().map_err(|e| Error::io(&path, e))?.len();
    let end = pos.offset + pos.len;
    // The line must still be the message (the index was caught up under the lock).
    let mut line = vec![0u8; pos.len as usize];
    file.read_exact_at(&mut line, pos.offset)
        .map_err(|e| Error::io(&path, e))?;
    let ok = crate::resume::body::parse_value(line.trim_ascii_end())
        .and_then(|v| v.get("uuid")?.as_str().map(Id::from_text))
        == Some(Id::from_text(uuid));
    if !ok {
        return Err(Error::Changed { path });
    }
    let tmp = format!(".{name}.tombstone-{}", std::process::id());
    let result = rewrite(&folder, &file, (&name, &tmp), pos.offset, end, len);
    if result.is_err() {
        let _ = folder.remove(&tmp);
    }
    result?;
    // The rewritten file is the new starting point (cursor: the end of its resume view).
    sink.reset();
    sink.start(store)?;
    Ok(true)
}

/// Writes the file `names.0` without `[start, end)` to the new file `names.1` beside it and
/// renames it over the original.
fn rewrite(
    folder: &Folder,
    file: &File,
    names: (&str, &str),
    start: u64,
    end: u64,
    len: u64,
) -> Result<()> {
    let (path, tmp) = (&folder.join(names.0), &folder.join(names.1));
    let io = |e| Error::io(path, e);
    let mode = file.metadata().map_err(io)?.permissions().mode();
    folder.remove(names.1)?;
    let mut out = folder
        .create_new(names.1, 0o600)?
        .ok_or_else(|| Error::io(tmp, std::io::ErrorKind::AlreadyExists.into()))?;
    out.set_permissions(std::fs::Permissions::from_mode(mode & 0o777))
        .map_err(|e| Error::io(tmp, e))?;
    let mut src = file.try_clone().map_err(io)?;
    src.seek(SeekFrom::Start(0)).map_err(io)?;
    std::io::copy(&mut (&mut src).take(start), &mut out).map_err(|e| Error::io(tmp, e))?;
    if len - start <= TAIL_WINDOW {
        let mut tail = vec![0u8; (len - end) as usize];
        file.read_exact_at(&mut tail, end).map_err(io)?;
        out.write_all(&tail).map_err(|e| Error::io(tmp, e))?;
    } else {
        src.seek(SeekFrom::Start(end)).map_err(io)?;
        std::io::copy(&mut (&mut src).take(len - end), &mut out).map_err(|e| Error::io(tmp, e))?;
    }
    out.sync_all().map_err(|e| Error::io(tmp, e))?;
    if file.metadata().map_err(io)?.len() != len {
        return Err(Error::Changed { path: path.clone() });
    }
    folder.rename(names.1, names.0)?;
    let _ = folder.sync();
    Ok(())
}
