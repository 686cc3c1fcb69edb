//! Timestamps as milliseconds since the Unix epoch.

/// Parses an RFC 3339 timestamp (`new Date().toISOString()` in Claude Code) to epoch
/// milliseconds. Unparseable or missing timestamps sort first ([`i64::MIN`]).
pub fn parse_millis(text: Option<&str>) -> i64 {
    text.and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map_or(i64::MIN, |d| d.timestamp_millis())
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
}
