//! The command line: clap definitions and dispatch. Each verb lives in its own module and
//! only formats what the library returns.

mod agents;
mod complete;
mod continue_;
mod export;
mod index_cmd;
mod leaves;
mod ls;
mod man;
mod pager;
mod pick;
mod progress;
mod resume;
mod search;
mod sync;
mod table;
mod usage;
mod write;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// chainlog: fast resume and listing for Claude Code session transcripts.
#[derive(Debug, Parser)]
#[command(name = "chainlog", version, about)]
pub struct Cli {
    #[arg(
        long,
        global = true,
        value_name = "DIR",
        help = "Claude config directory (default: $CLAUDE_CONFIG_DIR, else ~/.claude)"
    )]
    pub claude_dir: Option<PathBuf>,
    /// Where index sidecars live (default: a `chainlog` folder in the user cache directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub index_dir: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the chain a resume hands to the model, root first.
    Resume(resume::ResumeArgs),
    /// List every leaf of a transcript and why the active one was picked.
    Leaves(leaves::LeavesArgs),
    /// List sessions of a project (or all), newest first.
    Ls(ls::LsArgs),
    /// Pick a session in an interactive list (filter, preview; Tab switches between the
    /// project and all) and resume it with `claude`.
    Pick(pick::PickArgs),
    /// Resume the newest session of a project.
    Continue(continue_::ContinueArgs),
    /// List the sub-agents of a session.
    Agents(agents::AgentsArgs),
    /// Catch the index up with the transcripts (all projects by default).
    Index(index_cmd::PathsArgs),
    /// Drop the index of the given transcripts and build it again.
    Rebuild(index_cmd::PathsArgs),
    /// Compare the index with a full scan; exit 2 on any difference.
    Verify(index_cmd::PathsArgs),
    /// Search the text of every message (prompts, answers, tool calls and results).
    Search(search::SearchArgs),
    /// Write a session as Markdown, self-contained HTML or JSONL.
    Export(export::ExportArgs),
    /// Tokens and estimated cost (USD, from a price table) by day, project, model or session;
    /// every project unless `--project` is given.
    Usage(usage::UsageArgs),
    /// Push this machine's sessions to S3-compatible storage or a folder and pull the other
    /// machines' (sessions on every machine).
    Sync(sync::SyncArgs),
    /// Write a generated transcript (for demos, tests and benchmarks).
    Gen(GenArgs),
    /// Append JSONL entries from stdin to a session; prints the uuids written.
    Append(write::AppendArgs),
    /// Copy a session's resume view into a new session (as `--fork-session`); prints its id.
    Fork(write::ForkArgs),
    /// Copy a session's active chain into a new titled branch session; prints its id.
    Branch(write::BranchArgs),
    /// Set a session's title (a `custom-title` entry).
    Title(write::MetaArgs),
    /// Set a session's tag (`""` clears it).
    Tag(write::MetaArgs),
    /// Print a shell completion script (e.g. `chainlog completions bash > ~/.local/share/bash-completion/completions/chainlog`);
    /// it asks chainlog what to offer, session ids of the current project included.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print a manual page (roff), e.g. `chainlog man resume | man -l -`, or write them all
    /// with `--dir`.
    Man(man::ManArgs),
}

#[derive(Debug, clap::Args)]
pub struct GenArgs {
    /// Output file.
    pub out: PathBuf,
    /// Approximate size in bytes.
    #[arg(long, default_value_t = 200_000)]
    pub bytes: u64,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Turn on every feature (branches, compactions, snips, progress, corruption...).
    #[arg(long)]
    pub everything: bool,
}

/// Which sessions a listing verb looks at (`ls`, `search`, `pick`).
#[derive(Debug, clap::Args)]
pub struct Scope {
    /// The project: a working directory, a project directory, or a project key (the folder
    /// name under `projects/`; default: the current directory).
    #[arg(
        long,
        value_name = "DIR",
        conflicts_with = "all",
        allow_hyphen_values = true
    )]
    pub project: Option<PathBuf>,
    /// Every project.
    #[arg(long)]
    pub all: bool,
}

/// Runs the CLI and maps errors to exit codes (format.md §B3).
/// The process's panic hook stays silent for the redb panics the library catches and answers
/// as index damage (`chainlog::sidecar::isolating`); every other panic is printed as before.
fn quiet_isolated_panics() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !chainlog::sidecar::isolating() {
            previous(info);
        }
    }));
}

pub fn main() -> ExitCode {
    complete::answer_if_asked();
    let cli = Cli::parse();
    quiet_isolated_panics();
    progress::install();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let result = match &cli.command {
        Command::Resume(a) => resume::run(&cli, a, &mut out),
        Command::Leaves(a) => leaves::run(&cli, a, &mut out),
        Command::Ls(a) => ls::run(&cli, a, &mut out),
        Command::Pick(a) => pick::run(&cli, a),
        Command::Continue(a) => continue_::run(&cli, a, &mut out),
        Command::Agents(a) => agents::run(&cli, a, &mut out),
        Command::Index(a) => index_cmd::run(&cli, a, index_cmd::Verb::Index, &mut out),
        Command::Rebuild(a) => index_cmd::run(&cli, a, index_cmd::Verb::Rebuild, &mut out),
        Command::Verify(a) => index_cmd::run(&cli, a, index_cmd::Verb::Verify, &mut out),
        Command::Export(a) => export::run(&cli, a, &mut out),
        Command::Search(a) => search::run(&cli, a, &mut out),
        Command::Usage(a) => usage::run(&cli, a, &mut out),
        Command::Sync(a) => sync::run(&cli, a, &mut out),
        Command::Gen(a) => gen_cmd(a),
        Command::Append(a) => write::append(&cli, a, &mut out),
        Command::Fork(a) => write::fork(&cli, a, &mut out),
        Command::Branch(a) => write::branch(&cli, a, &mut out),
        Command::Title(a) => write::meta(&cli, a, write::Meta::Title),
        Command::Tag(a) => write::meta(&cli, a, write::Meta::Tag),
        Command::Completions { shell } => complete::write_script(*shell, &mut out)
            .map(|()| ExitCode::SUCCESS)
            .map_err(CliError::Out),
        Command::Man(a) => man::run(a, &mut out),
    };
    let flushed = out.flush();
    match result {
        Ok(code) => {
            if let Err(e) = flushed
                && e.kind() != std::io::ErrorKind::BrokenPipe
            {
                eprintln!("chainlog: {e}");
                return ExitCode::from(2);
            }
            code
        }
        Err(CliError::Lib(e)) => said(&cli, &e.to_string(), e.exit_code()),
        Err(CliError::Said { text, code }) => said(&cli, &text, code),
        Err(CliError::Out(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(CliError::Out(e)) => {
            eprintln!("chainlog: {e}");
            ExitCode::from(2)
        }
    }
}

/// Prints an error the way the user asked (`--json`: one JSON object on stderr, as scripts
/// read answers); its exit code.
fn said(cli: &Cli, text: &str, code: u8) -> ExitCode {
    if cli.json {
        let v = serde_json::json!({
            "schema": JSON_SCHEMA,
            "error": text,
            "exitCode": code,
        });
        eprintln!("{v}");
    } else {
        eprintln!("chainlog: {text}");
    }
    ExitCode::from(code)
}

/// What a verb can fail with.
pub enum CliError {
    Lib(chainlog::Error),
    Out(std::io::Error),
    /// A refusal of the command's own, with its exit code (format.md §B3: 1 not found, 2 usage).
    Said {
        text: String,
        code: u8,
    },
}

impl CliError {
    /// Nothing matches what the user named (exit 1).
    pub fn not_found(text: impl Into<String>) -> CliError {
        CliError::Said {
            text: text.into(),
            code: 1,
        }
    }

    /// The command cannot be done as asked (exit 2).
    pub fn usage(text: impl Into<String>) -> CliError {
        CliError::Said {
            text: text.into(),
            code: 2,
        }
    }
}

impl From<chainlog::Error> for CliError {
    fn from(e: chainlog::Error) -> Self {
        CliError::Lib(e)
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        CliError::Out(e)
    }
}

pub type CliResult = Result<ExitCode, CliError>;

fn gen_cmd(a: &GenArgs) -> CliResult {
    use chainlog_gen::GenOptions;
    let opts = if a.everything {
        GenOptions::everything(a.seed, a.bytes)
    } else {
        GenOptions::plain(a.seed, a.bytes)
    };
    let (len, expected) =
        chainlog_gen::write_file(&opts, &a.out).map_err(|e| chainlog::Error::io(&a.out, e))?;
    eprintln!(
        "wrote {} ({len} bytes, {} messages on the resume view)",
        a.out.display(),
        expected.resume_uuids.len()
    );
    Ok(ExitCode::SUCCESS)
}

/// Resolves a user's SESSION|PATH|AGENT|TITLE argument; titles are compared using facts
/// cached in the index (an unchanged transcript is not read again).
pub fn target(
    cli: &Cli,
    project: Option<&std::path::Path>,
    arg: &str,
) -> Result<chainlog::Target, chainlog::Error> {
    store(cli)?.target(project, arg)
}

/// The store of a command that reads sessions: a `--claude-dir` that does not exist is an
/// error (exit 1) rather than an empty listing, so a mistyped folder is not taken for one
/// without sessions.
pub fn reading_store(cli: &Cli) -> Result<chainlog::Store, chainlog::Error> {
    if let Some(dir) = cli.claude_dir.as_deref().filter(|d| !d.exists()) {
        return Err(chainlog::Error::io(
            dir,
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no such folder (given as --claude-dir)",
            ),
        ));
    }
    store(cli)
}

/// The store: `--claude-dir` (else the default claude dir) and `--index-dir` (else the
/// default cache folder).
pub fn store(cli: &Cli) -> Result<chainlog::Store, chainlog::Error> {
    chainlog::Store::open(
        chainlog::claude_dir(cli.claude_dir.as_deref())?,
        index_dir(cli),
    )
}

/// Where the index sidecars live: `--index-dir`, else the default.
pub fn index_dir(cli: &Cli) -> std::path::PathBuf {
    cli.index_dir
        .clone()
        .unwrap_or_else(chainlog::Store::default_index_dir)
}

/// Loads a transcript given as a path, with a readable error.
pub fn scan_path(
    path: &std::path::Path,
) -> Result<chainlog::reference::Transcript, chainlog::Error> {
    if !path.is_file() {
        return Err(chainlog::Error::NoTranscript { path: path.into() });
    }
    chainlog::reference::Transcript::open(path).map_err(|e| chainlog::Error::io(path, e))
}

/// Bad lines reported one by one; the rest are counted (a file can hold millions).
const BAD_LINES_SHOWN: usize = 10;

/// Prints skipped lines (the first few, then a count), kept lines with unreadable fields and a
/// torn tail on stderr, with their position.
pub fn report_problems(path: &std::path::Path, ans: &chainlog::Answer) {
    for b in ans.bad_lines.iter().take(BAD_LINES_SHOWN) {
        eprintln!(
            "chainlog: warning: {}:{} (byte {}): {} line: {}",
            path.display(),
            b.pos.line,
            b.pos.offset,
            if b.problem.skipped() {
                "skipped"
            } else {
                "kept"
            },
            b.problem
        );
    }
    let shown = ans.bad_lines.len().min(BAD_LINES_SHOWN) as u64;
    if ans.bad_line_count > shown {
        eprintln!(
            "chainlog: warning: {}: … and {} more lines with problems (skipped, or kept with unreadable fields) not shown",
            path.display(),
            ans.bad_line_count - shown
        );
    }
    if let Some((off, len)) = ans.torn_tail {
        eprintln!(
            "chainlog: note: {}: unterminated last line at byte {off} ({len} bytes) not read yet",
            path.display()
        );
    }
}

/// Prints the items a listing left out because they could not be read (the first few, then a
/// count).
pub fn report_skipped(skipped: &[chainlog::Error]) {
    for e in skipped.iter().take(BAD_LINES_SHOWN) {
        eprintln!("chainlog: warning: skipped (cannot be read): {e}");
    }
    if skipped.len() > BAD_LINES_SHOWN {
        eprintln!(
            "chainlog: warning: {} more unreadable items skipped",
            skipped.len() - BAD_LINES_SHOWN
        );
    }
}

/// The version of the `--json` rows of `ls`, `search`, `leaves`, `agents` and errors: each row
/// carries it as `"schema"`, raised when a field changes meaning or goes away.
pub const JSON_SCHEMA: u32 = 1;

/// Writes `value`, an object, as one `--json` row carrying [`JSON_SCHEMA`].
pub fn write_json_row(out: &mut impl Write, mut value: serde_json::Value) -> std::io::Result<()> {
    if let Some(o) = value.as_object_mut() {
        o.insert("schema".into(), JSON_SCHEMA.into());
    }
    write_json(out, &value)
}

/// Writes `value` as one JSON line.
pub fn write_json(out: &mut impl Write, value: &serde_json::Value) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    out.write_all(b"\n")
}
