//! `chainlog export`: a session as Markdown, self-contained HTML, or JSONL.
//!
//! `-o FILE` never destroys a transcript (issue #29): FILE is refused when it is a symbolic
//! link or not a regular file, when it lies in the claude dir's `projects/` folder (the folders
//! on its way resolved), or when it is the exported transcript or in its sub-agents' folder;
//! the document goes to a private temporary file beside FILE that replaces it only once the
//! export is complete.

use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use chainlog::export::ExportFormat;
use chainlog::export::ExportOptions;

use super::{Cli, CliResult};

/// The document format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// Markdown with collapsible tool calls.
    Markdown,
    /// One self-contained HTML file.
    Html,
    /// The JSONL lines of the conversation (with --resume-view: as `resume --format jsonl`).
    Jsonl,
}

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// A session id, unique id prefix, path, title or agent id.
    #[arg(add = super::complete::sessions())]
    pub target: String,
    /// The format.
    #[arg(long, value_enum, default_value_t = FormatArg::Markdown)]
    pub format: FormatArg,
    /// Only the resume view: what the model gets on resume (from the last compaction on),
    /// instead of the whole conversation.
    #[arg(long)]
    pub resume_view: bool,
    /// The whole conversation across compactions: the default (kept for scripts written
    /// when the resume view was).
    #[arg(long, hide = true, conflicts_with = "resume_view")]
    pub full: bool,
    /// Also every other branch, from where it leaves the conversation.
    #[arg(long)]
    pub all_branches: bool,
    /// Write to FILE instead of standard output. FILE is replaced (mode 0600) only once the
    /// export is complete. Refused: a symbolic link (links are not written through; without -o
    /// the document goes to standard output), anything but a regular file (folder, FIFO,
    /// device), a path in the claude dir's projects/ folder (links on the way resolved), and
    /// the exported transcript itself (or a hard link to it) or its sub-agents' folder.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Look ids and titles up in this project: a working directory, a project directory or a
    /// project key.
    #[arg(long, value_name = "DIR", allow_hyphen_values = true)]
    pub project: Option<PathBuf>,
}

pub fn run(cli: &Cli, a: &ExportArgs, out: &mut impl Write) -> CliResult {
    let target = super::target(cli, a.project.as_deref(), &a.target)?;
    let opts = ExportOptions {
        format: match a.format {
            FormatArg::Markdown => ExportFormat::Markdown,
            FormatArg::Html => ExportFormat::Html,
            FormatArg::Jsonl => ExportFormat::Jsonl,
        },
        // An inline agent: its messages may be before a compaction (full view).
        full: !a.resume_view || target.leaf().is_some(),
        all_branches: a.all_branches,
        leaf: target.leaf().map(chainlog::Id::from_text),
    };
    let store = super::store(cli)?;
    match &a.output {
        Some(file) => {
            let claude = chainlog::claude_dir(cli.claude_dir.as_deref())?;
            let dest = Destination::check(file, &claude, target.path())?;
            dest.write(|w| store.export(target.path(), &opts, w))?;
            eprintln!("chainlog: wrote {}", file.display());
        }
        None => store.export(target.path(), &opts, out)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Where `-o FILE` is written: FILE's folder with its links resolved, and FILE's name. The
/// final component is never resolved: the rename that writes it replaces the entry itself.
#[derive(Debug)]
struct Destination {
    /// FILE as given, for messages.
    given: PathBuf,
    dir: PathBuf,
    name: OsString,
}

impl Destination {
    /// Accepts `file` as the output of an export of `transcript`, or says why not (exit 2).
    fn check(
        file: &Path,
        claude: &Path,
        transcript: &Path,
    ) -> Result<Destination, chainlog::Error> {
        let refuse = |why: String| {
            chainlog::Error::io(
                file,
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("refusing to write the export here: {why}"),
                ),
            )
        };
        // `Path::file_name` reads `dir/.` as `dir`: look at the bytes as given.
        let last = file.as_os_str().as_bytes().rsplit(|&b| b == b'/').next();
        let name = match (last, file.file_name()) {
            (Some(b"" | b"." | b".."), _) | (_, None) => {
                return Err(refuse("it names a folder, not a file".into()));
            }
            (_, Some(name)) => name.to_owned(),
        };
        let existing = match fs::symlink_metadata(file) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(chainlog::Error::io(file, e)),
        };
        if let Some(m) = &existing {
            let ty = m.file_type();
            let what = if ty.is_symlink() {
                Some(
                    "it is a symbolic link (the export does not write through links; name the \
                     file itself, or leave -o out to write to standard output)",
                )
            } else if ty.is_dir() {
                Some("it is a folder")
            } else if ty.is_fifo() {
                Some("it is a FIFO, not a regular file")
            } else if ty.is_socket() {
                Some("it is a socket, not a regular file")
            } else if ty.is_block_device() || ty.is_char_device() {
                Some("it is a device, not a regular file")
            } else if !ty.is_file() {
                Some("it is not a regular file")
            } else {
                None
            };
            if let Some(what) = what {
                return Err(refuse(what.into()));
            }
        }
        let parent = file
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let dir = fs::canonicalize(parent).map_err(|e| chainlog::Error::io(parent, e))?;
        // Inside projects/, as written or with links resolved (a link to the folder, to the
        // claude dir, or a projects/ that is itself a link).
        let projects = chainlog::discovery::projects_root(claude);
        let lexical = std::path::absolute(file).map_err(|e| chainlog::Error::io(file, e))?;
        let inside = |base: &Path| {
            lexical.starts_with(absolute(base)) || dir.join(&name).starts_with(resolved(base))
        };
        if inside(&projects) {
            return Err(refuse(format!(
                "it is in {}, where Claude Code keeps its transcripts",
                projects.display()
            )));
        }
        // The transcript itself, under any name (a hard link is the same file), and its
        // sub-agents (`<dir>/<session>/subagents/`), wherever the transcript lies.
        if let (Some(m), Ok(t)) = (&existing, fs::metadata(transcript))
            && (m.dev(), m.ino()) == (t.dev(), t.ino())
        {
            return Err(refuse(format!(
                "it is the transcript being exported ({})",
                transcript.display()
            )));
        }
        let session_dir = transcript.with_extension("");
        if inside(&session_dir) {
            return Err(refuse(format!(
                "it is in {}, the folder of the session's sub-agents",
                session_dir.display()
            )));
        }
        Ok(Destination {
            given: file.to_path_buf(),
            dir,
            name,
        })
    }

    /// Runs `export` into a temporary file (mode 0600) beside the destination and renames it
    /// over the destination once it is complete and on disk; on any failure the temporary
    /// file is removed and the destination is as it was.
    fn write(
        &self,
        export: impl FnOnce(&mut dyn Write) -> chainlog::Result<()>,
    ) -> chainlog::Result<()> {
        let io = |e| chainlog::Error::io(&self.given, e);
        // `tempfile` creates the file with mode 0600 and `O_EXCL`.
        let tmp = tempfile::Builder::new()
            .prefix(".chainlog-export-")
            .suffix(".tmp")
            .tempfile_in(&self.dir)
            .map_err(|e| chainlog::Error::io(&self.dir, e))?;
        let mut w = std::io::BufWriter::new(tmp);
        // The library names the output `<output>` in its errors: name it as given.
        export(&mut w).map_err(|e| match e {
            chainlog::Error::Io { path, source } if path.as_os_str() == "<output>" => io(source),
            e => e,
        })?;
        let tmp = w.into_inner().map_err(|e| io(e.into_error()))?;
        tmp.as_file().sync_all().map_err(io)?;
        tmp.persist(self.dir.join(&self.name))
            .map_err(|e| io(e.error))?;
        Ok(())
    }
}

/// `p` made absolute without resolving anything.
fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// `p` with the links of its longest existing ancestor resolved (the rest appended as is).
fn resolved(p: &Path) -> PathBuf {
    let abs = absolute(p);
    let mut tail = Vec::new();
    let mut cur = abs.as_path();
    loop {
        if let Ok(real) = fs::canonicalize(cur) {
            return tail.iter().rev().fold(real, |acc, n| acc.join(n));
        }
        match (cur.parent(), cur.file_name()) {
            (Some(parent), Some(name)) => {
                tail.push(name.to_owned());
                cur = parent;
            }
            _ => return abs,
        }
    }
}
