//! The price table: USD per million tokens by model, shipped with chainlog
//! (`prices.json`, embedded) and overridable by a file of the same format.
//!
//! Costs computed from it are estimates: the table is typed in from Anthropic's published
//! prices on the date it names (`checked`), and knows nothing of discounts, batch pricing,
//! long-context surcharges or 1-hour cache writes (all cache writes are priced as 5-minute
//! ones).
//!
//! A model id matches an entry when it *is* the entry's model, or the entry's model followed by
//! a release date (`claude-sonnet-4-5-20250929`, `claude-sonnet-4-5@20250929`; a provider
//! prefix such as `us.anthropic.` before `claude-` is ignored). This is the longest matching
//! prefix, restricted so that a model the table does not know is never priced as an older
//! one: `claude-opus-4-7-20270101` does not match `claude-opus-4`. A model no entry matches
//! has no cost (its tokens are counted and reported as unpriced), never a guess.

use serde::{Deserialize, Serialize};

/// The table shipped with chainlog.
pub const BUILTIN: &str = include_str!("prices.json");

/// One model's prices, USD per million tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelPrice {
    /// The model id without release date (`claude-sonnet-4-5`).
    pub model: String,
    /// Uncached input.
    pub input: f64,
    /// Output.
    pub output: f64,
    /// Input written to the prompt cache (5-minute writes).
    pub cache_write: f64,
    /// Input read from the prompt cache.
    pub cache_read: f64,
}

/// Prices by model, and when they were checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PriceTable {
    /// When the prices were checked against the published ones (`YYYY-MM-DD`).
    pub checked: String,
    /// Where they come from.
    #[serde(default)]
    pub source: Option<String>,
    /// A remark for readers of the file.
    #[serde(default)]
    pub note: Option<String>,
    /// The entries.
    pub models: Vec<ModelPrice>,
}

impl PriceTable {
    /// The table shipped with chainlog.
    pub fn builtin() -> PriceTable {
        PriceTable::parse(BUILTIN).expect("the shipped price table parses")
    }

    /// A table from JSON text in the shipped table's format; the error says what is wrong.
    pub fn parse(text: &str) -> Result<PriceTable, String> {
        let table: PriceTable = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if chrono::NaiveDate::parse_from_str(&table.checked, "%Y-%m-%d").is_err() {
            return Err(format!(
                "\"checked\" must be a date (YYYY-MM-DD), not {:?}",
                table.checked
            ));
        }
        for m in &table.models {
            let prices = [m.input, m.output, m.cache_write, m.cache_read];
            if m.model.is_empty() || prices.iter().any(|p| !p.is_finite() || *p < 0.0) {
                return Err(format!(
                    "model {:?}: a model id and prices of 0 or more are needed",
                    m.model
                ));
            }
        }
        Ok(table)
    }

    /// This table with `other`'s entries: an entry for a model this table has replaces it,
    /// the others are added; `checked` and `source` become `other`'s.
    #[must_use]
    pub fn extended(mut self, other: PriceTable) -> PriceTable {
        for m in other.models {
            match self.models.iter_mut().find(|e| e.model == m.model) {
                Some(e) => *e = m,
                None => self.models.push(m),
            }
        }
        self.checked = other.checked;
        self.source = other.source;
        self.note = other.note;
        self
    }

    /// The prices of `model` (see the module's matching rule).
    pub fn price(&self, model: &str) -> Option<&ModelPrice> {
        let bare = model.find("claude-").map_or(model, |i| &model[i..]);
        self.models
            .iter()
            .filter(|e| matches(model, &e.model) || matches(bare, &e.model))
            .max_by_key(|e| e.model.len())
    }

    /// The estimated cost in USD of `tokens` of `model`; `None` when the model has no price.
    pub fn cost(&self, model: &str, tokens: &crate::transcript::usage::Tokens) -> Option<f64> {
        let p = self.price(model)?;
        Some(cost_of(p, tokens))
    }
}

/// USD of `tokens` at `p`.
pub fn cost_of(p: &ModelPrice, t: &crate::transcript::usage::Tokens) -> f64 {
    #[expect(
        clippy::cast_precision_loss,
        reason = "token counts stay far below 2^52"
    )]
    let m = |n: u64| n as f64 / 1_000_000.0;
    m(t.input_tokens) * p.input
        + m(t.output_tokens) * p.output
        + m(t.cache_creation_input_tokens) * p.cache_write
        + m(t.cache_read_input_tokens) * p.cache_read
}

/// `id` is `entry`, or `entry` followed by `-` or `@` and an eight-digit release date (and
/// perhaps a provider's version suffix).
fn matches(id: &str, entry: &str) -> bool {
    let Some(rest) = id.strip_prefix(entry) else {
        return false;
    };
    if rest.is_empty() {
        return true;
    }
    let Some(date) = rest.strip_prefix(['-', '@']) else {
        return false;
    };
    let digits = date.bytes().take_while(u8::is_ascii_digit).count();
    // After the date, only a provider's version suffix (`-v1:0`), never more of a name.
    digits == 8 && !date[8..].starts_with(|c: char| c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::usage::Tokens;

    #[test]
    fn models_match_their_entry_or_none() {
        let t = PriceTable::builtin();
        let model = |id: &str| t.price(id).map(|p| p.model.as_str());
        assert_eq!(
            model("claude-sonnet-4-5-20250929"),
            Some("claude-sonnet-4-5")
        );
        assert_eq!(model("claude-sonnet-4-20250514"), Some("claude-sonnet-4"));
        assert_eq!(model("claude-opus-4-5-20251101"), Some("claude-opus-4-5"));
        assert_eq!(model("claude-opus-4-1-20250805"), Some("claude-opus-4-1"));
        assert_eq!(model("claude-opus-4-20250514"), Some("claude-opus-4"));
        assert_eq!(model("claude-3-5-haiku-20241022"), Some("claude-3-5-haiku"));
        assert_eq!(model("claude-haiku-4-5"), Some("claude-haiku-4-5"));
        assert_eq!(
            model("us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
            Some("claude-sonnet-4-5")
        );
        assert_eq!(
            model("claude-sonnet-4-5@20250929"),
            Some("claude-sonnet-4-5")
        );
        // Unknown models are not priced as a shorter entry.
        assert_eq!(model("claude-opus-4-7-20270101"), None);
        assert_eq!(model("claude-opus-4x"), None);
        assert_eq!(model("gpt-5"), None);
        assert_eq!(model(""), None);
    }

    #[test]
    fn cost_is_tokens_times_prices_and_files_override() {
        let t = PriceTable::builtin();
        let tokens = Tokens {
            input_tokens: 2_000_000,
            output_tokens: 1_000_000,
            cache_creation_input_tokens: 4_000_000,
            cache_read_input_tokens: 10_000_000,
        };
        let c = t.cost("claude-sonnet-4-5-20250929", &tokens).unwrap();
        assert!((c - (2.0 * 3.0 + 15.0 + 4.0 * 3.75 + 10.0 * 0.3)).abs() < 1e-9);
        let over = PriceTable::parse(
            r#"{"checked":"2030-01-02","models":[{"model":"claude-sonnet-4-5","input":1,"output":1,"cacheWrite":1,"cacheRead":1},{"model":"my-model","input":2,"output":0,"cacheWrite":0,"cacheRead":0}]}"#,
        )
        .unwrap();
        let both = t.clone().extended(over);
        assert_eq!(both.checked, "2030-01-02");
        let c = both.cost("claude-sonnet-4-5-20250929", &tokens).unwrap();
        assert!((c - 17.0).abs() < 1e-9);
        assert!((both.cost("my-model", &tokens).unwrap() - 4.0).abs() < 1e-9);
        assert_eq!(both.models.len(), t.models.len() + 1);
        for bad in [
            "",
            "{}",
            r#"{"checked":"soon","models":[]}"#,
            r#"{"checked":"2030-01-02","models":[{"model":"m","input":-1,"output":0,"cacheWrite":0,"cacheRead":0}]}"#,
            r#"{"checked":"2030-01-02","models":[{"model":"m","input":1,"output":0,"cache_write":0,"cacheRead":0}]}"#,
        ] {
            assert!(PriceTable::parse(bad).is_err(), "{bad}");
        }
    }
}
