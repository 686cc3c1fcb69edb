//! `chainlog usage`: tokens and estimated cost by day, project, model or session.
//!
//! Every project by default (a usage report is about what was spent, wherever); `--project`
//! narrows it to one. The cost is an estimate from the price table shipped with chainlog
//! (or `--prices FILE`), and every output says so.

use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use chainlog::usage::{DayRange, GroupBy, PriceTable, UsageLine, UsageReport, parse_day, report};

use super::{Cli, CliError, CliResult};

/// What the rows of `usage` are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ByArg {
    /// UTC days, oldest first, a line per model.
    Day,
    /// Project directories, the costliest first.
    Project,
    /// Models, the costliest first.
    Model,
    /// Sessions (with their sub-agents), the costliest first.
    Session,
}

#[derive(Debug, clap::Args)]
pub struct UsageArgs {
    /// The first day counted (UTC, YYYY-MM-DD).
    #[arg(long, value_name = "YYYY-MM-DD")]
    pub since: Option<String>,
    /// The last day counted (UTC, YYYY-MM-DD).
    #[arg(long, value_name = "YYYY-MM-DD")]
    pub until: Option<String>,
    /// Only this project: a working directory, a project directory, or a project key
    /// (default: every project).
    #[arg(
        long,
        value_name = "DIR",
        conflicts_with = "all",
        allow_hyphen_values = true
    )]
    pub project: Option<PathBuf>,
    /// Every project (the default).
    #[arg(long)]
    pub all: bool,
    /// What the rows are.
    #[arg(long, value_enum, default_value_t = ByArg::Day)]
    pub by: ByArg,
    /// A price table (JSON, the format of the shipped one: `{"checked":"YYYY-MM-DD",
    /// "models":[{"model":"claude-sonnet-4-5","input":3,"output":15,"cacheWrite":3.75,
    /// "cacheRead":0.3}]}`, USD per million tokens) whose entries replace or extend the
    /// shipped table's.
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
}

/// `--since`/`--until` as a range of days (`usage` and `ls`); a day that does not parse, or
/// a range that ends before it starts, is a usage error (exit 2).
pub fn day_range(since: Option<&str>, until: Option<&str>) -> Result<DayRange, CliError> {
    let day = |d: Option<&str>| d.map(parse_day).transpose().map_err(CliError::usage);
    let days = DayRange {
        since: day(since)?,
        until: day(until)?,
    };
    if let (Some(s), Some(u)) = (&days.since, &days.until)
        && s > u
    {
        return Err(CliError::usage(format!("--since {s} is after --until {u}")));
    }
    Ok(days)
}

pub fn run(cli: &Cli, a: &UsageArgs, out: &mut impl Write) -> CliResult {
    let days = day_range(a.since.as_deref(), a.until.as_deref())?;
    let prices = match &a.prices {
        None => PriceTable::builtin(),
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                CliError::usage(format!(
                    "{}: cannot read the price table: {e}",
                    path.display()
                ))
            })?;
            let table = PriceTable::parse(&text).map_err(|e| {
                CliError::usage(format!("{}: not a price table: {e}", path.display()))
            })?;
            PriceTable::builtin().extended(table)
        }
    };
    let by = match a.by {
        ByArg::Day => GroupBy::Day,
        ByArg::Project => GroupBy::Project,
        ByArg::Model => GroupBy::Model,
        ByArg::Session => GroupBy::Session,
    };
    let all = a.project.is_none();
    let usage = super::reading_store(cli)?.usage(a.project.as_deref(), all)?;
    super::report_skipped(&usage.skipped);
    let r = report(&usage.sessions, &days, by, &prices);
    if cli.json {
        write_json(out, &r)?;
        return Ok(ExitCode::SUCCESS);
    }
    if r.rows.is_empty() {
        eprintln!("chainlog: no token usage in the range");
        return Ok(ExitCode::SUCCESS);
    }
    let source = match &a.prices {
        Some(p) => format!("chainlog's price table with {}", p.display()),
        None => "chainlog's price table".to_owned(),
    };
    write_table(out, &r, &source)?;
    Ok(ExitCode::SUCCESS)
}

/// One JSON line per row (the key named after the grouping), then the total with what the
/// cost rests on; every line carries `schema`, last.
fn write_json(out: &mut impl Write, r: &UsageReport) -> std::io::Result<()> {
    let line = |l: &UsageLine| -> serde_json::Value {
        let mut v = serde_json::to_value(l).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            let key = o.shift_remove("key").unwrap_or_default();
            let title = o.shift_remove("title");
            o.shift_insert(0, r.by.as_str().to_owned(), key);
            if r.by == GroupBy::Session {
                o.shift_insert(1, "title".to_owned(), title.unwrap_or_default());
            }
        }
        v
    };
    for l in &r.rows {
        super::write_json_row(out, line(l))?;
    }
    let mut total = serde_json::to_value(&r.total).unwrap_or_default();
    if let Some(o) = total.as_object_mut() {
        o.shift_remove("key");
        o.shift_remove("title");
        o.shift_insert(0, "total".to_owned(), true.into());
        o.insert("estimate".to_owned(), true.into());
        o.insert("pricesChecked".to_owned(), r.prices_checked.clone().into());
        o.insert(
            "unpricedModels".to_owned(),
            serde_json::to_value(&r.unpriced_models).unwrap_or_default(),
        );
    }
    super::write_json_row(out, total)
}

/// The widths of the token columns and the cost column.
const NUM: usize = 6;
const COST: usize = 11;
/// The widest line the table aims at.
const WIDTH: usize = 80;

/// The human table: a line per group (per day and model with `--by day`), a total line and
/// what the costs rest on.
fn write_table(out: &mut impl Write, r: &UsageReport, source: &str) -> std::io::Result<()> {
    let numbers = |l: &[u64; 5]| {
        l.iter().fold(String::new(), |mut s, &n| {
            let _ = write!(s, "  {:>NUM$}", human(n));
            s
        })
    };
    let counts = |t: &chainlog::usage::Tokens| {
        [
            t.input_tokens,
            t.output_tokens,
            t.cache_creation_input_tokens,
            t.cache_read_input_tokens,
            t.total(),
        ]
    };
    let header_numbers = ["input", "output", "cache+", "cache>", "total"]
        .iter()
        .fold(String::new(), |mut s, h| {
            let _ = write!(s, "  {h:>NUM$}");
            s
        });
    if r.by == GroupBy::Day {
        const MODEL: usize = 15;
        writeln!(
            out,
            "{:<10}  {:<MODEL$}{header_numbers}  {:>COST$}",
            "day", "model", "cost (est.)"
        )?;
        for l in &r.rows {
            for (i, m) in l.models.iter().enumerate() {
                let day = if i == 0 { l.key.as_str() } else { "" };
                writeln!(
                    out,
                    "{day:<10}  {:<MODEL$}{}  {:>COST$}",
                    cut(&short_model(&m.model), MODEL),
                    numbers(&counts(&m.tokens)),
                    m.cost_usd.map_or_else(|| "?".to_owned(), dollars),
                )?;
            }
        }
        writeln!(
            out,
            "{:<10}  {:<MODEL$}{}  {:>COST$}",
            "total",
            "",
            numbers(&counts(&r.total.tokens)),
            line_cost(&r.total)
        )?;
    } else {
        let label = WIDTH - 5 * (NUM + 2) - (COST + 2);
        let name = |l: &UsageLine| match (r.by, &l.title) {
            (GroupBy::Session, Some(t)) => {
                format!("{} {t}", l.key.get(..8).unwrap_or(&l.key))
            }
            (GroupBy::Session, None) => l.key.get(..8).unwrap_or(&l.key).to_owned(),
            (GroupBy::Project, _) => cut_left(&l.key, label),
            _ => l.key.clone(),
        };
        writeln!(
            out,
            "{:<label$}{header_numbers}  {:>COST$}",
            r.by.as_str(),
            "cost (est.)"
        )?;
        for l in &r.rows {
            writeln!(
                out,
                "{:<label$}{}  {:>COST$}",
                cut(&name(l), label),
                numbers(&counts(&l.tokens)),
                line_cost(l)
            )?;
        }
        writeln!(
            out,
            "{:<label$}{}  {:>COST$}",
            "total",
            numbers(&counts(&r.total.tokens)),
            line_cost(&r.total)
        )?;
    }
    writeln!(out, "cache+ = cache writes, cache> = cache reads.")?;
    writeln!(
        out,
        "Costs (USD) are estimates from {source}, checked {}.",
        r.prices_checked
    )?;
    if !r.unpriced_models.is_empty() {
        writeln!(
            out,
            "No price for {} (tokens counted, no cost: add it with --prices FILE).",
            r.unpriced_models.join(", ")
        )?;
    }
    Ok(())
}

/// The picker's one-line summary of a session file's tokens (its own file: sub-agents are
/// in `chainlog usage --by session`), with the estimated cost; `None` without usage.
pub fn summary(f: &chainlog::SessionFacts) -> Option<String> {
    static PRICES: std::sync::OnceLock<PriceTable> = std::sync::OnceLock::new();
    let prices = PRICES.get_or_init(PriceTable::builtin);
    if f.usage.is_empty() {
        return None;
    }
    let mut tokens = chainlog::usage::Tokens::default();
    let mut by_model: Vec<(&str, u64)> = Vec::new();
    let (mut usd, mut unpriced) = (0.0, false);
    for r in &f.usage {
        tokens.add(&r.tokens);
        match prices.cost(&r.model, &r.tokens) {
            Some(c) => usd += c,
            None => unpriced = true,
        }
        match by_model.iter_mut().find(|(m, _)| *m == r.model) {
            Some((_, n)) => *n += r.tokens.total(),
            None => by_model.push((&r.model, r.tokens.total())),
        }
    }
    by_model.sort_by_key(|m| std::cmp::Reverse(m.1));
    let models: Vec<String> = by_model.iter().map(|(m, _)| short_model(m)).collect();
    Some(format!(
        "{} tokens (in {}, out {}, cache {} + {}) · {} · ~{}{} est.",
        human(tokens.total()),
        human(tokens.input_tokens),
        human(tokens.output_tokens),
        human(tokens.cache_creation_input_tokens),
        human(tokens.cache_read_input_tokens),
        models.join(", "),
        dollars(usd),
        if unpriced { "+?" } else { "" },
    ))
}

/// `$12.34`; `?` when nothing of the line is priced, `+?` after the sum when part of it is not.
fn line_cost(l: &UsageLine) -> String {
    let priced = l.tokens.total() > l.unpriced_tokens;
    match (priced, l.unpriced_tokens > 0) {
        (false, true) => "?".to_owned(),
        (_, true) => format!("{}+?", dollars(l.cost_usd)),
        _ => dollars(l.cost_usd),
    }
}

fn dollars(usd: f64) -> String {
    format!("${usd:.2}")
}

/// A token count in at most six characters: `999`, `12.3k`, `456.7M`, `1.2B`.
pub fn human(n: u64) -> String {
    #[expect(clippy::cast_precision_loss, reason = "shown with one decimal")]
    let f = n as f64;
    match n {
        0..1_000 => n.to_string(),
        1_000..999_950 => format!("{:.1}k", f / 1e3),
        999_950..999_950_000 => format!("{:.1}M", f / 1e6),
        _ => format!("{:.1}B", f / 1e9),
    }
}

/// `claude-sonnet-4-5-20250929` → `sonnet-4-5`: the table's model column.
fn short_model(model: &str) -> String {
    let m = model.strip_prefix("claude-").unwrap_or(model);
    match m.rsplit_once('-') {
        Some((head, date)) if date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()) => {
            head.to_owned()
        }
        _ if m.is_empty() => "(none)".to_owned(),
        _ => m.to_owned(),
    }
}

/// `s` cut to `width` characters with `…` at the end.
fn cut(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `s` cut to `width` characters with `…` at the start (project keys differ at the end).
fn cut_left(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n <= width {
        return s.to_owned();
    }
    let mut out = String::from("…");
    out.extend(s.chars().skip(n - width.saturating_sub(1)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_models_fit_their_columns() {
        assert_eq!(human(999), "999");
        assert_eq!(human(12_345), "12.3k");
        assert_eq!(human(999_960), "1.0M");
        assert_eq!(human(456_700_000), "456.7M");
        assert_eq!(human(1_234_000_000), "1.2B");
        assert_eq!(short_model("claude-sonnet-4-5-20250929"), "sonnet-4-5");
        assert_eq!(short_model("claude-opus-4-5"), "opus-4-5");
        assert_eq!(short_model(""), "(none)");
        assert_eq!(cut_left("-home-me-src-project", 8), "…project");
        assert_eq!(cut("abcdef", 4), "abc…");
    }

    #[test]
    fn the_pickers_summary_names_tokens_models_and_cost() {
        let row = |model: &str, input| chainlog::usage::UsageRow {
            day: "2025-01-01".into(),
            model: model.into(),
            responses: 1,
            tokens: chainlog::usage::Tokens {
                input_tokens: input,
                output_tokens: 1_000_000,
                ..Default::default()
            },
        };
        let mut f = chainlog::SessionFacts::default();
        assert_eq!(summary(&f), None);
        f.usage = vec![
            row("claude-sonnet-4-5-20250929", 2_000_000),
            row("claude-opus-4-5-20251101", 0),
        ];
        assert_eq!(
            summary(&f).unwrap(),
            "4.0M tokens (in 2.0M, out 2.0M, cache 0 + 0) · sonnet-4-5, opus-4-5 · ~$46.00 est."
        );
        f.usage.push(row("mystery", 0));
        assert!(summary(&f).unwrap().ends_with("~$46.00+? est."));
    }
}
