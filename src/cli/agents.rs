//! `chainlog agents`: the sub-agents of a session, in every layout.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use chainlog::Target;

use super::{Cli, CliResult, write_json_row};

#[derive(Debug, clap::Args)]
pub struct AgentsArgs {
    /// A session id, a session file or an exact session title.
    #[arg(add = super::complete::sessions())]
    pub target: String,
    /// Look ids and titles up in this project: a working directory, a project directory or a
    /// project key.
    #[arg(long, value_name = "DIR", allow_hyphen_values = true)]
    pub project: Option<PathBuf>,
    /// Find inline (1.0.x) agents with a full scan of the session instead of the index.
    #[arg(long)]
    pub no_index: bool,
}

pub fn run(cli: &Cli, a: &AgentsArgs, out: &mut impl Write) -> CliResult {
    let target = super::target(cli, a.project.as_deref(), &a.target)?;
    if let Target::Agent { agent_id, .. } = &target {
        return Err(super::CliError::not_found(format!(
            "{agent_id} is an agent, not a session; `chainlog resume {agent_id}` shows it"
        )));
    }
    let agents = if a.no_index {
        chainlog::discovery::session_agents(target.path())?
    } else {
        let found = super::store(cli)?.agents(target.path())?;
        if let chainlog::Source::Transcript(why) = &found.source {
            eprintln!("chainlog: note: answered from the transcript (index not used: {why})");
        }
        found.agents
    };
    if cli.json {
        for ag in &agents {
            write_json_row(out, serde_json::to_value(ag).unwrap_or_default())?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if agents.is_empty() {
        eprintln!("chainlog: {}: no sub-agents", target.path().display());
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{:<40}  {:<9}  {:<18}  {:>5}  {:<11}  description",
        "agent", "layout", "type", "msgs", "status"
    )?;
    for ag in &agents {
        let description: String = ag
            .description
            .as_deref()
            .unwrap_or("-")
            .chars()
            .take(70)
            .collect();
        writeln!(
            out,
            "{:<40}  {:<9}  {:<18}  {:>5}  {:<11}  {description}",
            ag.agent_id,
            ag.layout.as_str(),
            ag.agent_type.as_deref().unwrap_or("-"),
            ag.message_count,
            ag.status,
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
