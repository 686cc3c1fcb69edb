//! `chainlog search`: full-text search over every message, ranked, with snippets and the uuid
//! to resume at.

use std::io::Write;
use std::process::ExitCode;

use chainlog::search::SearchOptions;

use super::{Cli, CliResult};

#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    /// Words (all must match), "a phrase", OR, -excluded.
    pub query: String,
    #[command(flatten)]
    pub scope: super::Scope,
    /// At most N hits.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub limit: usize,
    /// Only messages of this UTC day or later.
    #[arg(long, value_name = "YYYY-MM-DD")]
    pub since: Option<String>,
    /// Only messages of this UTC day or earlier.
    #[arg(long, value_name = "YYYY-MM-DD")]
    pub until: Option<String>,
    /// Open the picker on the sessions the query matches instead of printing hits; Enter
    /// resumes one with `claude` as `chainlog pick` does (its folder, a branch copied first).
    #[arg(long)]
    pub pick: bool,
}

pub fn run(cli: &Cli, a: &SearchArgs, out: &mut impl Write) -> CliResult {
    if a.pick {
        let pick = super::pick::PickArgs {
            scope: super::Scope {
                project: a.scope.project.clone(),
                all: a.scope.all,
            },
            print: false,
            remote: None,
            key_file: None,
            filter: Some(a.query.clone()),
        };
        return super::pick::run(cli, &pick);
    }
    let opts = SearchOptions {
        project: a.scope.project.clone(),
        all: a.scope.all,
        limit: a.limit,
        days: super::usage::day_range(a.since.as_deref(), a.until.as_deref())?,
    };
    let chainlog::search::Found { hits, skipped, .. } =
        super::reading_store(cli)?.search(&a.query, &opts)?;
    super::report_skipped(&skipped);
    if cli.json {
        for h in &hits {
            super::write_json_row(out, serde_json::to_value(h).unwrap_or_default())?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if hits.is_empty() {
        eprintln!("chainlog: no message matches {:?}", a.query);
        return Ok(ExitCode::from(1));
    }
    // The command that resumes each hit, runnable as printed: the same claude and index dirs;
    // `--at` cuts the chosen chain at a message on it, `--leaf` starts from a message on a
    // branch or of a sub-agent (the chosen chain does not hold it).
    let mut prefix = vec!["chainlog".to_owned()];
    for (flag, dir) in [
        ("--claude-dir", &cli.claude_dir),
        ("--index-dir", &cli.index_dir),
    ] {
        if let Some(d) = dir {
            prefix.extend([flag.to_owned(), shell_word(&d.to_string_lossy())]);
        }
    }
    let prefix = prefix.join(" ");
    for h in &hits {
        writeln!(
            out,
            "{}  {}  {:<9} {}  {}\n    {}\n    {prefix} resume {} {} {}",
            &h.session_id.chars().take(8).collect::<String>(),
            h.timestamp.as_deref().unwrap_or("-"),
            h.role,
            match (h.on_chain, h.sidechain) {
                (true, _) => "chain ",
                (false, true) => "agent ",
                (false, false) => "branch",
            },
            h.path.display(),
            super::table::clean(&h.snippet),
            h.session_id,
            if h.on_chain { "--at" } else { "--leaf" },
            h.uuid,
        )?;
    }
    // The hand-off to the client, runnable as printed: the picker on the same query.
    let mut pick = vec![prefix, "pick".to_owned()];
    if a.scope.all {
        pick.push("--all".to_owned());
    } else if let Some(p) = &a.scope.project {
        pick.extend(["--project".to_owned(), shell_word(&p.to_string_lossy())]);
    }
    pick.extend(["--filter".to_owned(), shell_word(&a.query)]);
    writeln!(out, "\nresume one with claude: {}", pick.join(" "))?;
    Ok(ExitCode::SUCCESS)
}

/// `word` as one word of a POSIX shell command: as it is when it holds only characters no shell
/// treats specially, else single-quoted.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-./:=@%+,".contains(&b));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}
