//! Timestamps as milliseconds since the Unix epoch, and back to the text Claude Code writes.

/// Parses an RFC 3339 timestamp (`new Date().toISOString()` in Claude Code) to epoch
/// milliseconds. Unparseable or missing timestamps sort first ([`i64::MIN`]).
pub fn parse_millis(text: Option<&str>) -> i64 {
    text.and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map_or(i64::MIN, |d| d.timestamp_millis())
}

/// Epoch milliseconds as `new Date().toISOString()` writes them (`YYYY-MM-DDTHH:MM:SS.mmmZ`);
/// `None` outside the representable range ([`i64::MIN`], the unparseable marker, included).
/// The one formatter of the library and the command (the generator, which does not depend on
/// the library, keeps its own copy in `chainlog_gen::rng::format_ms`).
pub fn format_millis(ms: i64) -> Option<String> {
    chrono::DateTime::from_timestamp_millis(ms)
        .filter(|_| ms != i64::MIN)
        .map(|d| d.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_iso_and_offsets() {
        assert_eq!(parse_millis(Some("1970-01-01T00:00:01.500Z")), 1500);
        assert_eq!(parse_millis(Some("1970-01-01T01:00:01+01:00")), 1000);
        assert_eq!(parse_millis(Some("yesterday")), i64::MIN);
        assert_eq!(parse_millis(None), i64::MIN);
    }

    #[test]
    fn formats_as_to_iso_string() {
        assert_eq!(
            format_millis(1500).as_deref(),
            Some("1970-01-01T00:00:01.500Z")
        );
        assert_eq!(
            format_millis(-1).as_deref(),
            Some("1969-12-31T23:59:59.999Z")
        );
        assert_eq!(format_millis(i64::MIN), None);
        let ms = parse_millis(Some("2025-06-01T12:34:56.789Z"));
        assert_eq!(
            format_millis(ms).as_deref(),
            Some("2025-06-01T12:34:56.789Z")
        );
    }
}
