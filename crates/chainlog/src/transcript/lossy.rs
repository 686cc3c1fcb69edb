//! Lossy repair of lines `serde_json` refuses but Claude Code (JavaScript) accepts.
//!
//! Real transcripts contain lone UTF-16 surrogate escapes (`"\ud83d"` alone, a truncation that
//! split an emoji) and, rarely, invalid UTF-8. JavaScript's `JSON.parse` accepts both (the
//! bytes were decoded lossily when the file was read). `serde_json` rejects them, so instead of
//! dropping the message we rewrite the line: a lone surrogate escape becomes `\ufffd` and an
//! invalid UTF-8 sequence becomes U+FFFD. The repaired line is only used for parsing; the
//! file is never changed.

/// Returns a repaired copy of `line` if it contains invalid UTF-8 or lone surrogate escapes.
pub fn repair(line: &[u8]) -> Option<Vec<u8>> {
    let text = String::from_utf8_lossy(line);
    let mut changed = matches!(text, std::borrow::Cow::Owned(_));
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\\' && i + 1 < bytes.len() {
            if bytes[i + 1] == b'u'
                && let Some(cu) = hex4(bytes, i + 2)
            {
                if (0xD800..0xDC00).contains(&cu) {
                    // A high surrogate must be followed by an escaped low surrogate.
                    let paired = bytes.get(i + 6) == Some(&b'\\')
                        && bytes.get(i + 7) == Some(&b'u')
                        && hex4(bytes, i + 8).is_some_and(|lo| (0xDC00..0xE000).contains(&lo));
                    if paired {
                        out.extend_from_slice(&bytes[i..i + 12]);
                        i += 12;
                    } else {
                        out.extend_from_slice(b"\\ufffd");
                        changed = true;
                        i += 6;
                    }
                    continue;
                }
                if (0xDC00..0xE000).contains(&cu) {
                    out.extend_from_slice(b"\\ufffd");
                    changed = true;
                    i += 6;
                    continue;
                }
            }
            // Any other escape: copy both bytes so `\\u` is never misread.
            out.extend_from_slice(&bytes[i..i + 2]);
            i += 2;
            continue;
        }
        out.push(b);
        i += 1;
    }
    changed.then_some(out)
}

fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    let s = bytes.get(at..at + 4)?;
    let s = std::str::from_utf8(s).ok()?;
    u32::from_str_radix(s, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_become_replacement_chars() {
        let line = br#"{"t":"a\ud83d","u":"\udc00x","ok":"\ud83d\ude00","lit":"\\ud83d"}"#;
        let fixed = repair(line).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&fixed).unwrap();
        assert_eq!(v["t"], "a\u{fffd}");
        assert_eq!(v["u"], "\u{fffd}x");
        assert_eq!(v["ok"], "\u{1f600}");
        assert_eq!(v["lit"], "\\ud83d");
    }

    #[test]
    fn invalid_utf8_is_replaced_and_clean_lines_untouched() {
        let fixed = repair(b"{\"t\":\"a\xff\"}").unwrap();
        let v: serde_json::Value = serde_json::from_slice(&fixed).unwrap();
        assert_eq!(v["t"], "a\u{fffd}");
        assert!(repair(br#"{"t":"fine \u00e9"}"#).is_none());
    }
}
