//! Deterministic randomness: ids, choices and the session clock.
//!
//! Everything the generator draws goes through [`Gen`] (`ChaCha8`, stable across platforms and
//! crate versions), so one seed always gives the same bytes.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const HEX: &[u8] = b"0123456789abcdef";

/// The generator's random source.
pub(crate) struct Gen {
    rng: ChaCha8Rng,
}

impl Gen {
    pub(crate) fn new(seed: u64) -> Self {
        Self {
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// A uniform index in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.rng.random_range(0..n)
    }

    /// A uniform value in `lo..hi` (`lo < hi`).
    pub(crate) fn range(&mut self, lo: u64, hi: u64) -> u64 {
        self.rng.random_range(lo..hi)
    }

    /// A uniform value in `lo..=hi`.
    pub(crate) fn between(&mut self, lo: usize, hi: usize) -> usize {
        self.rng.random_range(lo..=hi)
    }

    pub(crate) fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p.clamp(0.0, 1.0))
    }

    /// A uniform float in `lo..hi`.
    pub(crate) fn float(&mut self, lo: f64, hi: f64) -> f64 {
        self.rng.random_range(lo..hi)
    }

    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// Log-uniform integer in `lo..=hi`: many small values, a few large ones, like real tool
    /// outputs.
    pub(crate) fn log_uniform(&mut self, lo: u64, hi: u64) -> u64 {
        let (lo, hi) = (lo.max(1), hi.max(lo.max(1)));
        #[allow(clippy::cast_precision_loss)]
        let (a, b) = ((lo as f64).ln(), (hi as f64).ln());
        if b <= a {
            return lo;
        }
        let x = self.float(a, b).exp();
        #[allow(clippy::cast_sign_loss)]
        let v = x as u64;
        v.clamp(lo, hi)
    }

    /// A random (version 4) UUID, lowercase 8-4-4-4-12.
    pub(crate) fn uuid(&mut self) -> String {
        let bytes: [u8; 16] = self.rng.random();
        uuid::Builder::from_random_bytes(bytes)
            .into_uuid()
            .hyphenated()
            .to_string()
    }

    pub(crate) fn base62(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| char::from(BASE62[self.below(BASE62.len())]))
            .collect()
    }

    pub(crate) fn hex(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| char::from(HEX[self.below(HEX.len())]))
            .collect()
    }

    /// `msg_01…` as the Messages API returns.
    pub(crate) fn message_id(&mut self) -> String {
        format!("msg_01{}", self.base62(22))
    }

    /// `req_011C…` request ids.
    pub(crate) fn request_id(&mut self) -> String {
        format!("req_011C{}", self.base62(20))
    }

    /// `toolu_01…` tool-use ids.
    pub(crate) fn tool_use_id(&mut self) -> String {
        format!("toolu_01{}", self.base62(22))
    }
}

/// The session clock: strictly increasing milliseconds, formatted like JavaScript's
/// `Date.prototype.toISOString()`.
pub(crate) struct Clock {
    ms: i64,
}

impl Clock {
    /// 2026-03-01T00:00:00Z.
    const BASE_MS: i64 = 1_772_323_200_000;

    /// A start time within ~60 days after [`Self::BASE_MS`], drawn from `g`.
    pub(crate) fn new(g: &mut Gen) -> Self {
        let offset = g.range(0, 60 * 86_400_000);
        Self {
            ms: Self::BASE_MS + i64::try_from(offset).unwrap_or(0),
        }
    }

    /// Advance by `lo..hi` milliseconds (at least 1) and return the new time.
    pub(crate) fn tick(&mut self, g: &mut Gen, lo: u64, hi: u64) -> String {
        let step = g.range(lo.max(1), hi.max(lo.max(1) + 1));
        self.ms += i64::try_from(step).unwrap_or(1);
        format_ms(self.ms)
    }

    pub(crate) fn now_ms(&self) -> i64 {
        self.ms
    }
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`. A copy of `chainlog::format_millis`: this crate does not
/// depend on the library.
pub(crate) fn format_ms(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(
        || "1970-01-01T00:00:00.000Z".to_owned(),
        |t| t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
    )
}
