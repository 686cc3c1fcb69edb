//! The command line: clap definitions and dispatch. Each verb lives in its own module and
//! only formats what the library returns.

mod leaves;
mod resume;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// chainlog: fast resume and listing for Claude Code session transcripts.
#[derive(Debug, Parser)]
#[command(name = "chainlog", version, about)]
pub struct Cli {
    /// Claude config directory (default: $CLAUDE_CONFIG_DIR, else ~/.claude).
    #[arg(long, global = true, value_name = "DIR")]
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
    /// Write a generated transcript (for demos, tests and benchmarks).
    Gen(GenArgs),
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

/// Runs the CLI and maps errors to exit codes (SPEC B3).
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let result = match &cli.command {
        Command::Resume(a) => resume::run(&cli, a, &mut out),
        Command::Leaves(a) => leaves::run(&cli, a, &mut out),
        Command::Gen(a) => gen_cmd(a),
    };
    let flushed = out.flush();
    match result {
        Ok(code) => {
            if let Err(e) = flushed {
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    eprintln!("chainlog: {e}");
                    return ExitCode::from(2);
                }
            }
            code
        }
        Err(CliError::Lib(e)) => {
            eprintln!("chainlog: {e}");
            ExitCode::from(e.exit_code())
        }
        Err(CliError::Out(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(CliError::Out(e)) => {
            eprintln!("chainlog: {e}");
            ExitCode::from(2)
        }
    }
}

/// What a verb can fail with.
pub enum CliError {
    Lib(chainlog::Error),
    Out(std::io::Error),
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
    let _ = a;
    Err(chainlog::Error::NotFound("gen: not built yet".into()).into())
}
#[cfg(any())]
fn gen_cmd_real(a: &GenArgs) -> CliResult {
    use chainlog::generate::{GenOptions, generate};
    let opts = if a.everything {
        GenOptions::everything(a.seed, a.bytes)
    } else {
        GenOptions::plain(a.seed, a.bytes)
    };
    let s = generate(&opts);
    std::fs::write(&a.out, &s.main).map_err(|e| chainlog::Error::io(&a.out, e))?;
    eprintln!(
        "wrote {} ({} bytes, session {})",
        a.out.display(),
        s.main.len(),
        s.session_id
    );
    Ok(ExitCode::SUCCESS)
}

/// Loads a transcript given as a path, with a readable error.
pub fn scan_path(path: &std::path::Path) -> Result<chainlog::Transcript, chainlog::Error> {
    if !path.is_file() {
        return Err(chainlog::Error::NotFound(format!(
            "{}: no such transcript file",
            path.display()
        )));
    }
    chainlog::Transcript::open(path).map_err(|e| chainlog::Error::io(path, e))
}

/// Prints the bad lines of a scan on stderr, with their position.
pub fn report_bad_lines(t: &chainlog::Transcript) {
    let path = t
        .path
        .as_deref()
        .map_or_else(|| "-".into(), |p| p.display().to_string());
    for b in &t.bad_lines {
        eprintln!(
            "chainlog: warning: {path}:{} (byte {}): skipped line: {}",
            b.pos.line, b.pos.offset, b.problem
        );
    }
    if let Some((off, len)) = t.frame.torn_tail {
        eprintln!(
            "chainlog: note: {path}: unterminated last line at byte {off} ({len} bytes) not read yet"
        );
    }
}

/// Writes `value` as one JSON line.
pub fn write_json(out: &mut impl Write, value: &serde_json::Value) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    out.write_all(b"\n")
}
