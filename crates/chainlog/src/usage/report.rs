//! The usage report: sessions' rows filtered by day, grouped by day, project, model or
//! session, each group's models with their tokens and estimated cost.

use std::collections::BTreeMap;

use serde::Serialize;

use super::gather::SessionUsage;
use super::prices::PriceTable;
use crate::transcript::usage::{DayRange, Tokens};

/// What the report's rows are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupBy {
    /// UTC days, oldest first.
    #[default]
    Day,
    /// Project directories (the costliest first).
    Project,
    /// Models (the costliest first).
    Model,
    /// Sessions with their sub-agents (the costliest first).
    Session,
}

impl GroupBy {
    /// The name of the key (`day`, `project`, `model`, `session`).
    pub fn as_str(self) -> &'static str {
        match self {
            GroupBy::Day => "day",
            GroupBy::Project => "project",
            GroupBy::Model => "model",
            GroupBy::Session => "session",
        }
    }
}

/// One model's part of a row.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelUsage {
    /// The model id as the transcripts wrote it.
    pub model: String,
    /// API responses.
    pub responses: u64,
    /// Tokens.
    pub tokens: Tokens,
    /// Estimated cost in USD; `None` when the price table has no price for the model.
    pub cost_usd: Option<f64>,
}

/// One row of the report: a day, a project, a model or a session.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageLine {
    /// The day, project key, model or session id (`""` for the total).
    pub key: String,
    /// A session's title (sessions only).
    pub title: Option<String>,
    /// Its models, the costliest first.
    pub models: Vec<ModelUsage>,
    /// API responses.
    pub responses: u64,
    /// Tokens of every model.
    pub tokens: Tokens,
    /// Estimated cost in USD of the priced models.
    pub cost_usd: f64,
    /// Tokens of models without a price (not in `cost_usd`).
    pub unpriced_tokens: u64,
}

/// The report.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageReport {
    /// What the rows are.
    pub by: GroupBy,
    /// The rows.
    pub rows: Vec<UsageLine>,
    /// Everything in the range.
    pub total: UsageLine,
    /// Models the price table has no price for.
    pub unpriced_models: Vec<String>,
    /// When the price table was checked (`YYYY-MM-DD`).
    pub prices_checked: String,
}

/// The report of `sessions` over `days`, grouped `by`, costed with `prices`.
pub fn report(
    sessions: &[SessionUsage],
    days: &DayRange,
    by: GroupBy,
    prices: &PriceTable,
) -> UsageReport {
    // group key → (title, model → (responses, tokens))
    type Models = BTreeMap<String, (u64, Tokens)>;
    let mut groups: BTreeMap<String, (Option<String>, Models)> = BTreeMap::new();
    let mut all: Models = BTreeMap::new();
    for s in sessions {
        for r in s.rows.iter().filter(|r| days.contains(&r.day)) {
            let key = match by {
                GroupBy::Day => r.day.clone(),
                GroupBy::Project => s.project_key.clone(),
                GroupBy::Model => r.model.clone(),
                GroupBy::Session => s.session_id.clone(),
            };
            let (title, models) = groups.entry(key).or_default();
            if by == GroupBy::Session {
                title.clone_from(&s.title);
            }
            for m in [
                models.entry(r.model.clone()).or_default(),
                all.entry(r.model.clone()).or_default(),
            ] {
                m.0 += r.responses;
                m.1.add(&r.tokens);
            }
        }
    }
    let line = |key: String, title: Option<String>, models: Models| {
        let mut models: Vec<ModelUsage> = models
            .into_iter()
            .map(|(model, (responses, tokens))| ModelUsage {
                cost_usd: prices.cost(&model, &tokens),
                model,
                responses,
                tokens,
            })
            .collect();
        models.sort_by(|a, b| {
            b.cost_usd
                .unwrap_or(-1.0)
                .total_cmp(&a.cost_usd.unwrap_or(-1.0))
                .then(b.tokens.total().cmp(&a.tokens.total()))
                .then_with(|| a.model.cmp(&b.model))
        });
        let mut tokens = Tokens::default();
        let (mut responses, mut cost_usd, mut unpriced_tokens) = (0, 0.0, 0);
        for m in &models {
            tokens.add(&m.tokens);
            responses += m.responses;
            match m.cost_usd {
                Some(c) => cost_usd += c,
                None => unpriced_tokens += m.tokens.total(),
            }
        }
        UsageLine {
            key,
            title,
            models,
            responses,
            tokens,
            cost_usd,
            unpriced_tokens,
        }
    };
    let mut rows: Vec<UsageLine> = groups
        .into_iter()
        .map(|(key, (title, models))| line(key, title, models))
        .collect();
    if by != GroupBy::Day {
        rows.sort_by(|a, b| {
            b.cost_usd
                .total_cmp(&a.cost_usd)
                .then(b.tokens.total().cmp(&a.tokens.total()))
                .then_with(|| a.key.cmp(&b.key))
        });
    }
    let total = line(String::new(), None, all);
    let unpriced_models = total
        .models
        .iter()
        .filter(|m| m.cost_usd.is_none())
        .map(|m| m.model.clone())
        .collect();
    UsageReport {
        by,
        rows,
        total,
        unpriced_models,
        prices_checked: prices.checked.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::usage::{UsageRow, parse_day};

    fn row(day: &str, model: &str, input: u64) -> UsageRow {
        UsageRow {
            day: day.to_owned(),
            model: model.to_owned(),
            responses: 1,
            tokens: Tokens {
                input_tokens: input,
                ..Tokens::default()
            },
        }
    }

    #[test]
    fn rows_group_filter_and_cost() {
        let sessions = vec![
            SessionUsage {
                project_key: "-a".into(),
                session_id: "s1".into(),
                title: Some("one".into()),
                rows: vec![
                    row("2025-01-01", "claude-sonnet-4-5-20250929", 1_000_000),
                    row("2025-01-02", "claude-sonnet-4-5-20250929", 2_000_000),
                    row("2025-01-02", "mystery", 5),
                ],
            },
            SessionUsage {
                project_key: "-b".into(),
                session_id: "s2".into(),
                title: None,
                rows: vec![row("2025-01-02", "claude-opus-4-5-20251101", 1_000_000)],
            },
        ];
        let prices = PriceTable::builtin();
        let open = DayRange::default();
        let r = report(&sessions, &open, GroupBy::Day, &prices);
        let keys: Vec<&str> = r.rows.iter().map(|l| l.key.as_str()).collect();
        assert_eq!(keys, ["2025-01-01", "2025-01-02"]);
        assert!((r.rows[1].cost_usd - (6.0 + 5.0)).abs() < 1e-9);
        assert_eq!(r.rows[1].unpriced_tokens, 5);
        assert_eq!(r.total.tokens.input_tokens, 4_000_005);
        assert!((r.total.cost_usd - 14.0).abs() < 1e-9);
        assert_eq!(r.unpriced_models, ["mystery"]);

        let by_project = report(&sessions, &open, GroupBy::Project, &prices);
        let keys: Vec<&str> = by_project.rows.iter().map(|l| l.key.as_str()).collect();
        assert_eq!(keys, ["-a", "-b"]);
        let since = DayRange {
            since: Some("2025-01-02".into()),
            until: Some("2025-01-02".into()),
        };
        let by_model = report(&sessions, &since, GroupBy::Model, &prices);
        let keys: Vec<&str> = by_model.rows.iter().map(|l| l.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "claude-sonnet-4-5-20250929",
                "claude-opus-4-5-20251101",
                "mystery"
            ]
        );
        assert_eq!(by_model.total.tokens.input_tokens, 3_000_005);
        let by_session = report(&sessions, &open, GroupBy::Session, &prices);
        assert_eq!(by_session.rows[0].title.as_deref(), Some("one"));
        assert_eq!(parse_day(" 2025-1-2"), Ok("2025-01-02".to_owned()));
        assert!(parse_day("yesterday").is_err());
    }
}
