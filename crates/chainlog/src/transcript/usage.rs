//! Token usage of API responses: what one assistant line says it cost, and a file's responses
//! summed by UTC day and model.
//!
//! # Context
//! Claude Code writes one assistant line per content block of a response, every one with the
//! same `message.id` (and `requestId`), `message.model` and a `message.usage`. The usage of
//! the lines of one response is not always the same: `output_tokens` grows from the first
//! line to the last (the real transcripts hold responses whose first line says 2 output tokens
//! and the last 94). ccusage counts the first line of each response; chainlog counts each
//! response once with the largest value of each count among its lines (the last line's, in
//! practice), so the output tokens are the ones billed.
//!
//! # What is counted
//! Every response in the file, on every branch (what was paid for, not only what the resumed
//! chain holds), inline sidechains included. Left out:
//! - lines a copy brought from another session: `/branch` copies carry `forkedFrom`, and
//!   `--fork-session` copies (2.1.x) carry a `requestSessionId` naming the source session
//!   rather than the file's `sessionId` (format.md §A8). `--fork-session` copies written by
//!   clients that did not write `requestSessionId` are counted again in the copy;
//! - `<synthetic>` responses (written by the client itself, no API call);
//! - assistant lines without `message.usage`.
//!
//! A response without `message.id` is counted once per uuid (nothing else to deduplicate it by).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// Token counts, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tokens {
    /// `input_tokens`: uncached input.
    pub input_tokens: u64,
    /// `output_tokens`.
    pub output_tokens: u64,
    /// `cache_creation_input_tokens`: input written to the prompt cache.
    pub cache_creation_input_tokens: u64,
    /// `cache_read_input_tokens`: input read from the prompt cache.
    pub cache_read_input_tokens: u64,
}

impl Tokens {
    /// Every count summed.
    pub fn total(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.output_tokens)
            .saturating_add(self.cache_creation_input_tokens)
            .saturating_add(self.cache_read_input_tokens)
    }

    /// Adds `other` (saturating).
    pub fn add(&mut self, other: &Tokens) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_creation_input_tokens = self
            .cache_creation_input_tokens
            .saturating_add(other.cache_creation_input_tokens);
        self.cache_read_input_tokens = self
            .cache_read_input_tokens
            .saturating_add(other.cache_read_input_tokens);
    }

    /// The larger of each count.
    fn max(&mut self, other: &Tokens) {
        self.input_tokens = self.input_tokens.max(other.input_tokens);
        self.output_tokens = self.output_tokens.max(other.output_tokens);
        self.cache_creation_input_tokens = self
            .cache_creation_input_tokens
            .max(other.cache_creation_input_tokens);
        self.cache_read_input_tokens = self
            .cache_read_input_tokens
            .max(other.cache_read_input_tokens);
    }
}

/// What one assistant line says about its response (from `parse_line`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineUsage {
    /// `message.model` (`""` when absent).
    pub model: String,
    /// `message.usage`.
    pub tokens: Tokens,
    /// The line was copied from another session (`forkedFrom`, or a `requestSessionId` that is
    /// not the line's `sessionId`): not counted.
    pub copied: bool,
}

/// The usage of one file's responses on one UTC day with one model.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageRow {
    /// The UTC day of the response's first line (`YYYY-MM-DD`; `""` without a timestamp).
    pub day: String,
    /// `message.model` (`""` when absent).
    pub model: String,
    /// API responses counted.
    pub responses: u64,
    /// Their tokens.
    pub tokens: Tokens,
}

/// One response being summed.
#[derive(Debug, Clone)]
struct Response {
    /// Epoch ms of its first line.
    timestamp: i64,
    model: String,
    tokens: Tokens,
    copied: bool,
}

/// The responses of one file, in the order they first appear, deduplicated by `message.id`:
/// every response once (all branches), each count the largest among its lines; copies from
/// other sessions (`forkedFrom`, a `requestSessionId` other than the line's `sessionId`) and
/// `<synthetic>` replies are not counted. A line without `message.id` is its own response
/// (keyed by its uuid).
#[derive(Debug, Clone, Default)]
pub struct UsageTally {
    responses: Vec<Response>,
    /// `message.id` hash → index in `responses`.
    by_id: HashMap<u64, usize>,
}

/// The model name Claude Code gives responses it made up itself (no API call).
pub const SYNTHETIC_MODEL: &str = "<synthetic>";

impl UsageTally {
    /// Adds one assistant line: `id` identifies its response (the `message.id` hash),
    /// `timestamp` is its epoch ms.
    pub fn add(&mut self, id: u64, timestamp: i64, usage: &LineUsage) {
        if let Some(&i) = self.by_id.get(&id) {
            self.responses[i].tokens.max(&usage.tokens);
            return;
        }
        self.by_id.insert(id, self.responses.len());
        self.responses.push(Response {
            timestamp,
            model: usage.model.clone(),
            tokens: usage.tokens,
            copied: usage.copied,
        });
    }

    /// The counted responses summed by (day, model), sorted by day then model.
    pub fn rows(&self) -> Vec<UsageRow> {
        let mut by: HashMap<(String, &str), UsageRow> = HashMap::new();
        for r in &self.responses {
            if r.copied || r.model == SYNTHETIC_MODEL {
                continue;
            }
            let day = day_of(r.timestamp);
            let row = by
                .entry((day.clone(), r.model.as_str()))
                .or_insert_with(|| UsageRow {
                    day,
                    model: r.model.clone(),
                    ..UsageRow::default()
                });
            row.responses += 1;
            row.tokens.add(&r.tokens);
        }
        let mut rows: Vec<UsageRow> = by.into_values().collect();
        rows.sort_by(|a, b| a.day.cmp(&b.day).then_with(|| a.model.cmp(&b.model)));
        rows
    }
}

/// The UTC day (`YYYY-MM-DD`) of an epoch-ms timestamp; `""` for none ([`i64::MIN`]).
pub fn day_of(ms: i64) -> String {
    if ms == i64::MIN {
        return String::new();
    }
    chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d").to_string())
        .unwrap_or_default()
}

/// Days a report or listing covers (inclusive, UTC, `YYYY-MM-DD`); `None` is open.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DayRange {
    /// The first day.
    pub since: Option<String>,
    /// The last day.
    pub until: Option<String>,
}

impl DayRange {
    /// Whether `day` is in the range; a response without a day is only in an open range.
    pub fn contains(&self, day: &str) -> bool {
        if day.is_empty() {
            return self.since.is_none() && self.until.is_none();
        }
        self.since.as_deref().is_none_or(|s| day >= s)
            && self.until.as_deref().is_none_or(|u| day <= u)
    }
}

/// `text` as a day (`YYYY-MM-DD`), normalised; the error says what was expected.
pub fn parse_day(text: &str) -> Result<String, String> {
    chrono::NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d")
        .map(|d| d.format("%Y-%m-%d").to_string())
        .map_err(|_| format!("{text:?} is not a day (YYYY-MM-DD)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(model: &str, input: u64, output: u64, copied: bool) -> LineUsage {
        LineUsage {
            model: model.to_owned(),
            tokens: Tokens {
                input_tokens: input,
                output_tokens: output,
                cache_creation_input_tokens: 10,
                cache_read_input_tokens: 100,
            },
            copied,
        }
    }

    #[test]
    fn a_response_counts_once_with_its_largest_counts() {
        let mut t = UsageTally::default();
        let day1 = 1_735_689_600_000; // 2025-01-01T00:00:00Z
        t.add(1, day1, &line("m", 5, 2, false));
        t.add(1, day1 + 1, &line("m", 5, 94, false));
        t.add(1, day1 + 2, &line("m", 5, 3, false));
        t.add(2, day1 + 86_400_000, &line("m", 1, 1, false));
        t.add(3, day1, &line("m", 1000, 1000, true));
        t.add(4, day1, &line(SYNTHETIC_MODEL, 7, 7, false));
        t.add(5, day1, &line("n", 1, 1, false));
        t.add(6, day1, &line("n", 1, 1, false));
        let rows = t.rows();
        let got: Vec<(&str, &str, u64, u64, u64)> = rows
            .iter()
            .map(|r| {
                (
                    r.day.as_str(),
                    r.model.as_str(),
                    r.responses,
                    r.tokens.input_tokens,
                    r.tokens.output_tokens,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("2025-01-01", "m", 1, 5, 94),
                ("2025-01-01", "n", 2, 2, 2),
                ("2025-01-02", "m", 1, 1, 1),
            ]
        );
        assert_eq!(rows[0].tokens.total(), 5 + 94 + 10 + 100);
        assert_eq!(day_of(i64::MIN), "");
    }
}
