//! `chainlog man`: the manual pages, generated from the clap definitions — `chainlog(1)` with
//! ENVIRONMENT, EXIT STATUS and EXAMPLES, and a `chainlog-<command>(1)` page per subcommand,
//! printed one at a time or written into a folder for `MANPATH`.

use std::fmt::Write as _;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::ExitCode;

use super::{Cli, CliError, CliResult};

#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// The page of this subcommand (`chainlog-COMMAND(1)`) instead of `chainlog(1)`.
    pub command: Option<String>,
    /// Write every page (`chainlog.1`, `chainlog-resume.1`, …) into DIR (created if missing)
    /// and print their paths, e.g. `chainlog man --dir ~/.local/share/man/man1`. Each page is
    /// written whole, then renamed into place (a link named like a page is replaced, not
    /// followed).
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub dir: Option<PathBuf>,
}

/// Environment variables the command reads: name, what for.
const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "CLAUDE_CONFIG_DIR",
        "The claude directory when --claude-dir is not given (else ~/.claude).",
    ),
    (
        "XDG_CACHE_HOME",
        "The index sidecars live in $XDG_CACHE_HOME/chainlog (else ~/.cache/chainlog) when --index-dir is not given.",
    ),
    (
        "HOME",
        "The default claude directory and cache, and the ~ of the folders ls shows.",
    ),
    (
        "CHAINLOG_CLAUDE",
        "The client pick hands a session to (default: claude on the PATH).",
    ),
    (
        "PAGER",
        "The pager of resume's text on a terminal (default: less -FRX).",
    ),
    (
        "COLUMNS",
        "The width ls fits its table to (default: the terminal's; piped output is not cut).",
    ),
    ("NO_COLOR", "When set and not empty, no colour."),
    (
        "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL, AWS_PROFILE",
        "The credentials, region and endpoint of an s3:// sync remote (as the AWS tools read them, ~/.aws/credentials and ~/.aws/config included).",
    ),
];

/// Exit statuses: code, meaning.
const EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "Success."),
    (
        "1",
        "Not found: no such session, message or claude directory, or search matched nothing.",
    ),
    (
        "2",
        "Usage and data errors: bad arguments, an ambiguous or too short session id, input append refuses, verify finding a difference from a full scan, a transcript or index that cannot be read or written. Errors name the file, and the line and byte offset when there is one.",
    ),
];

/// Examples: what it does, the command.
const EXAMPLES: &[(&str, &str)] = &[
    ("List this project's sessions, newest first:", "chainlog ls"),
    (
        "Pick a session in a list and resume it with claude:",
        "chainlog pick --all",
    ),
    (
        "What the model gets on resume, as the request Claude Code sends:",
        "chainlog resume 3f2a --format api",
    ),
    (
        "Find a message in every project, then open the picker on the hits:",
        "chainlog search \"rsync photos\" --all --pick",
    ),
    (
        "The whole conversation as one HTML file:",
        "chainlog export 3f2a --format html -o session.html",
    ),
    (
        "Catch the index up, then check it against a full scan:",
        "chainlog index && chainlog verify",
    ),
    (
        "Install the manual pages:",
        "chainlog man --dir ~/.local/share/man/man1",
    ),
];

pub fn run(a: &ManArgs, out: &mut impl Write) -> CliResult {
    let mut cmd = <Cli as clap::CommandFactory>::command().disable_help_subcommand(true);
    cmd.build();
    if let Some(dir) = &a.dir {
        std::fs::create_dir_all(dir).map_err(|e| chainlog::Error::io(dir, e))?;
        for page in pages(&cmd) {
            let path = dir.join(page.get_filename());
            let mut bytes = Vec::new();
            render(&page, &cmd, &mut bytes)?;
            // Written whole beside it, then renamed over it: a kill leaves no half page, and a
            // link in its place is replaced, not written through.
            let io = |e: std::io::Error| chainlog::Error::io(&path, e);
            let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
            tmp.write_all(&bytes).map_err(io)?;
            std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644))
                .map_err(io)?;
            tmp.persist(&path).map_err(|e| io(e.error))?;
            writeln!(out, "{}", path.display())?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let page = match &a.command {
        None => clap_mangen::Man::new(cmd.clone()),
        Some(name) => {
            let sub = cmd
                .get_subcommands()
                .find(|s| s.get_name() == name && !s.is_hide_set())
                .ok_or_else(|| {
                    CliError::usage(format!("no command {name:?} (chainlog --help lists them)"))
                })?;
            clap_mangen::Man::new(sub.clone())
        }
    };
    render(&page, &cmd, out)?;
    Ok(ExitCode::SUCCESS)
}

/// `chainlog(1)` and one page per subcommand that is not hidden.
fn pages(cmd: &clap::Command) -> Vec<clap_mangen::Man> {
    std::iter::once(clap_mangen::Man::new(cmd.clone()))
        .chain(
            cmd.get_subcommands()
                .filter(|s| !s.is_hide_set())
                .map(|s| clap_mangen::Man::new(s.clone())),
        )
        .collect()
}

/// One page: clap's sections, then for `chainlog(1)` ENVIRONMENT, EXIT STATUS, EXAMPLES and
/// SEE ALSO, for a subcommand's page SEE ALSO `chainlog(1)`.
fn render(page: &clap_mangen::Man, cmd: &clap::Command, out: &mut dyn Write) -> CliResult {
    page.render(out).map_err(CliError::Out)?;
    let main = page.get_filename() == format!("{}.1", cmd.get_name());
    let mut roff = String::new();
    if main {
        roff.push_str(".SH ENVIRONMENT\n");
        for (name, what) in ENVIRONMENT {
            let _ = write!(roff, ".TP\n\\fB{}\\fR\n{}\n", text(name), text(what));
        }
        roff.push_str(".SH \"EXIT STATUS\"\n");
        for (code, what) in EXIT_STATUS {
            let _ = write!(roff, ".TP\n\\fB{code}\\fR\n{}\n", text(what));
        }
        roff.push_str(".SH EXAMPLES\n");
        for (what, example) in EXAMPLES {
            let _ = write!(
                roff,
                ".PP\n{}\n.PP\n.RS 4\n\\fB{}\\fR\n.RE\n",
                text(what),
                text(example)
            );
        }
    }
    roff.push_str(".SH \"SEE ALSO\"\n");
    let mut see: Vec<String> = if main {
        cmd.get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(|s| format!("{}\\-{}(1)", cmd.get_name(), text(s.get_name())))
            .collect()
    } else {
        vec![format!("{}(1)", cmd.get_name())]
    };
    see.push("claude(1)".to_owned());
    roff.push_str(&see.join(", "));
    roff.push('\n');
    out.write_all(roff.as_bytes()).map_err(CliError::Out)?;
    Ok(ExitCode::SUCCESS)
}

/// Text for a roff line: backslashes and hyphens escaped, and a leading `.` or `'` (a roff
/// request) behind a zero-width `\&`.
fn text(s: &str) -> String {
    let escaped = s.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with(['.', '\'']) {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}
