//! Long string literals of a JSON line cut before the line is parsed for the listing.
//!
//! A listing reads a few fields of a few chain lines (`cwd`, `gitBranch`, the first prompt,
//! shown cut at 200 chars). A line may hold a 100 MB prompt or tool result: parsed whole, the
//! line and its parsed copy are both in memory (and the prompt's one-line copy). A line longer
//! than [`LONG_LINE`] is parsed from a copy whose string literals keep their first [`KEEP`]
//! bytes: every field the listing reads comes out the same, in a few KiB.

/// Lines longer than this are shortened before they are parsed.
pub const LONG_LINE: usize = 1 << 20;

/// Bytes of each string literal kept (escapes and UTF-8 characters are never split).
pub const KEEP: usize = 64 << 10;

/// `json` with every string literal (keys too: none is that long) cut to its first `keep`
/// bytes as written (whole escape sequences and UTF-8 characters only; a surrogate pair stays
/// whole). Bytes outside string literals are copied unchanged, so a line that parsed still
/// parses.
pub fn shorten_strings(json: &[u8], keep: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(json.len().min(LONG_LINE));
    let mut i = 0;
    while i < json.len() {
        let b = json[i];
        out.push(b);
        i += 1;
        if b != b'"' {
            continue;
        }
        // Inside a string literal: copy up to `keep` bytes of it, skip the rest (once a piece
        // does not fit, no shorter piece after it is kept either).
        let mut room = keep;
        while i < json.len() && json[i] != b'"' {
            let len = piece_len(&json[i..]);
            if len <= room {
                out.extend_from_slice(&json[i..i + len]);
                room -= len;
            } else {
                room = 0;
            }
            i += len;
        }
        if i < json.len() {
            out.push(b'"');
            i += 1;
        }
    }
    out
}

/// Length of the piece of a string literal at the start of `s` that must stay whole: an
/// escape (`\uD83D\uDE00` as one), a UTF-8 character, or one stray byte.
fn piece_len(s: &[u8]) -> usize {
    let len = match s[0] {
        b'\\' => match s.get(1) {
            Some(b'u') => {
                let high = s.get(2..6).is_some_and(|h| {
                    u16::from_str_radix(std::str::from_utf8(h).unwrap_or(""), 16)
                        .is_ok_and(|u| (0xD800..0xDC00).contains(&u))
                });
                if high && s.get(6..8) == Some(b"\\u") {
                    12
                } else {
                    6
                }
            }
            _ => 2,
        },
        b if b >= 0xF0 => 4,
        b if b >= 0xE0 => 3,
        b if b >= 0xC0 => 2,
        _ => 1,
    };
    len.min(s.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn short_strings_are_copied_as_they_are() {
        let line = br#"{"a":"b\"c","n":[1,2.50,{"k":"\u00e9t\u00e9 \ud83d\ude00"}],"t":true}"#;
        assert_eq!(shorten_strings(line, 64), line);
    }

    #[test]
    fn long_strings_keep_whole_pieces_and_the_line_still_parses() {
        let text = "ab\\\"c\u{e9}\u{1F600}\\ud83d\\ude00\\n".repeat(50);
        let line = format!(r#"{{"cwd":"/w","message":{{"content":"{text}"}},"x":[1,"{text}"]}}"#);
        // Keys are string literals too: `keep` leaves the keys of this line (≤ 7 bytes) whole.
        for keep in 8..48 {
            let short = shorten_strings(line.as_bytes(), keep);
            let v: Value = serde_json::from_slice(&short).unwrap_or_else(|e| {
                panic!("keep {keep}: {e}: {}", String::from_utf8_lossy(&short))
            });
            assert_eq!(v["cwd"], "/w");
            let full: Value = serde_json::from_str(&line).unwrap();
            let got = v["message"]["content"].as_str().unwrap();
            let want = full["message"]["content"].as_str().unwrap();
            assert!(want.starts_with(got), "keep {keep}: {got:?}");
            assert!(got.len() <= keep, "keep {keep}: {} bytes", got.len());
            assert_eq!(v["x"][1], v["message"]["content"]);
        }
    }
}
