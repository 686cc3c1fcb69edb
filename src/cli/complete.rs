//! Shell completion that knows the sessions: `chainlog completions SHELL` prints a script that
//! asks `chainlog` itself what to offer (the dynamic completion of `clap_complete`), so `resume <TAB>`
//! offers the current project's session ids, newest first, each with its title where the shell
//! shows one (zsh, fish), beside the subcommands and options of the clap definitions.

use std::io::Write;

use clap::CommandFactory;
use clap_complete::engine::{ArgValueCandidates, CompletionCandidate};
use clap_complete::env::Shells;

use super::Cli;

/// At most this many sessions are offered (the newest).
const OFFERED: usize = 200;

/// The variable the script sets when it asks for completions (not clap's generic `COMPLETE`,
/// which a user's environment may hold for another program).
const VAR: &str = "_CHAINLOG_COMPLETE";

/// Answers a completion request from the script and exits, when this run is one ([`VAR`]
/// is set); else returns and the command runs.
pub fn answer_if_asked() {
    clap_complete::CompleteEnv::with_factory(Cli::command)
        .var(VAR)
        .complete();
}

/// The candidates of an argument naming a session: the current directory's sessions.
pub fn sessions() -> ArgValueCandidates {
    ArgValueCandidates::new(session_candidates)
}

/// The sessions of the current directory's project, newest first, from the index (a current
/// index reads no transcript); nothing when anything fails: completion never prints an error.
fn session_candidates() -> Vec<CompletionCandidate> {
    let words: Vec<String> = std::env::args().skip_while(|a| a != "--").skip(1).collect();
    let Ok(claude) = chainlog::claude_dir(typed(&words, "--claude-dir").as_deref()) else {
        return Vec::new();
    };
    let index = typed(&words, "--index-dir").unwrap_or_else(chainlog::Store::default_index_dir);
    let Ok(store) = chainlog::Store::open(claude, index) else {
        return Vec::new();
    };
    let opts = chainlog::ListOptions {
        limit: Some(OFFERED),
        ..chainlog::ListOptions::default()
    };
    let Ok(listing) = store.sessions(&opts) else {
        return Vec::new();
    };
    listing
        .sessions
        .into_iter()
        .filter(|f| f.message_count > 0)
        .map(|f| {
            let title = super::table::clean(&f.title);
            CompletionCandidate::new(f.session_id).help(Some(title.into()))
        })
        .collect()
}

/// The value given to `flag` (`--flag VALUE` or `--flag=VALUE`, the last one) among `words`,
/// the command line being completed (the script passes it after `--`), so `chainlog
/// --claude-dir X resume <TAB>` offers X's sessions. A leading `~/` is the home folder (the
/// shell has not expanded the words it completes).
fn typed(words: &[String], flag: &str) -> Option<std::path::PathBuf> {
    let mut value = None;
    for (i, w) in words.iter().enumerate() {
        if w == flag {
            value = words.get(i + 1).cloned();
        } else if let Some(v) = w.strip_prefix(flag).and_then(|v| v.strip_prefix('=')) {
            value = Some(v.to_owned());
        }
    }
    let value = value.filter(|v| !v.is_empty())?;
    match (value.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Some(std::path::PathBuf::from(home).join(rest)),
        _ => Some(value.into()),
    }
}

/// Writes the completion script of `shell`: it runs this program to complete.
pub fn write_script(shell: clap_complete::Shell, out: &mut impl Write) -> std::io::Result<()> {
    let name = shell.to_string();
    let shells = Shells::builtins();
    let completer = shells
        .completer(&name)
        .ok_or_else(|| std::io::Error::other(format!("no completion for {name}")))?;
    let program = std::env::current_exe()
        .ok()
        .and_then(|p| p.to_str().map(str::to_owned))
        .unwrap_or_else(|| "chainlog".to_owned());
    let mut script = Vec::new();
    completer.write_registration(VAR, "chainlog", "chainlog", &program, &mut script)?;
    out.write_all(&script)
}
