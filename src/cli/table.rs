//! Human tables for a terminal: fit the width, drop empty columns, colour only on a TTY.
//!
//! One row per record, never wrapped: the flexible column (a title) takes what the fixed
//! columns leave of the width and is cut with `…`. When the width is short, columns that may
//! shrink do (down to their minimum), then the least needed ones are left out, so the title
//! keeps [`TITLE_ROOM`] columns. Widths are display columns (a CJK character takes two).
//! Columns whose every cell is empty are not printed. Output that is not a terminal is not
//! fitted at all (unless `$COLUMNS` says a width): a pipe gets every cell whole. Colour
//! follows <https://no-color.org>: off when `NO_COLOR` is set or the output is not a terminal.

use std::io::{IsTerminal, Write};

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// The room a flexible column keeps before other columns shrink or go.
pub const TITLE_ROOM: usize = 24;

/// How a column lines up and how it is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Text, padded on the right.
    Left,
    /// Numbers, padded on the left.
    Right,
}

/// One column of a table.
pub struct Column {
    /// The header.
    pub name: &'static str,
    /// Alignment.
    pub align: Align,
    /// The column takes the width left by the others (at most one per table).
    pub flexible: bool,
    /// Printed dimmed on a colour terminal.
    pub dim: bool,
    /// The narrowest this column is squeezed to when the width is short (0: never squeezed).
    pub min: usize,
    /// Left out when the width is short, the lowest first (0: always shown).
    pub drop: u8,
    /// Cut at the start rather than the end (paths: their end says most).
    pub cut_start: bool,
}

impl Column {
    /// A fixed-width text column.
    pub const fn text(name: &'static str) -> Column {
        Column {
            name,
            align: Align::Left,
            flexible: false,
            dim: false,
            min: 0,
            drop: 0,
            cut_start: false,
        }
    }

    /// A number column.
    pub const fn number(name: &'static str) -> Column {
        Column {
            align: Align::Right,
            ..Column::text(name)
        }
    }
}

/// Output settings of a table.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    /// Total width in display columns (`None`: not fitted, every cell whole).
    pub width: Option<usize>,
    /// Whether to colour.
    pub colour: bool,
}

impl Style {
    /// For standard output: `$COLUMNS`, else the terminal's width (80 when it says none),
    /// else (a pipe, a file) no fitting; colour on a terminal unless `NO_COLOR` is set.
    pub fn stdout() -> Style {
        let tty = std::io::stdout().is_terminal();
        let terminal =
            || terminal_size::terminal_size().map(|(terminal_size::Width(w), _)| usize::from(w));
        let width = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.parse().ok())
            .filter(|&w| w >= 20)
            .or_else(|| tty.then(|| terminal().filter(|&w| w >= 20).unwrap_or(80)));
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Style {
            width,
            colour: tty && !no_color,
        }
    }
}

/// Prints `rows` (one cell per column) fitted to `style.width`.
pub fn print(
    out: &mut impl Write,
    style: Style,
    columns: &[Column],
    rows: &[Vec<String>],
) -> std::io::Result<()> {
    // Each cell cleaned and measured once (a listing of thousands of sessions is mostly this).
    let cells: Vec<Vec<(String, usize)>> = rows
        .iter()
        .map(|r| {
            (0..columns.len())
                .map(|c| {
                    let cell = clean(r.get(c).map_or("", String::as_str));
                    let w = width(&cell);
                    (cell, w)
                })
                .collect()
        })
        .collect();
    let shown: Vec<usize> = (0..columns.len())
        .filter(|&c| cells.iter().any(|r| !r[c].0.is_empty()))
        .collect();
    let widths: Vec<usize> = shown
        .iter()
        .map(|&c| {
            cells
                .iter()
                .map(|r| r[c].1)
                .chain([width(columns[c].name)])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let (shown, widths) = match style.width {
        Some(width) => fit(columns, shown, widths, width),
        None => (shown, widths),
    };
    let header: Vec<(String, usize)> = columns
        .iter()
        .map(|c| (c.name.to_owned(), width(c.name)))
        .collect();
    let mut text = String::new();
    line(&mut text, style, columns, &shown, &widths, &header, true);
    writeln!(out, "{text}")?;
    for r in &cells {
        text.clear();
        line(&mut text, style, columns, &shown, &widths, r, false);
        writeln!(out, "{text}")?;
    }
    Ok(())
}

/// The columns shown and their widths within `total`: squeezable columns give up room down to
/// their minimum (the widest first); when that is not enough, the droppable column with the
/// lowest `drop` goes and the others start again from their whole width; until the flexible
/// column has [`TITLE_ROOM`] (or all it needs). It then takes what is left.
fn fit(
    columns: &[Column],
    mut shown: Vec<usize>,
    mut natural: Vec<usize>,
    total: usize,
) -> (Vec<usize>, Vec<usize>) {
    loop {
        let mut widths = natural.clone();
        let flex = shown.iter().position(|&c| columns[c].flexible);
        let gaps = 2 * shown.len().saturating_sub(1);
        let fixed: usize = (0..shown.len())
            .filter(|&i| Some(i) != flex)
            .map(|i| widths[i])
            .sum();
        let want = flex.map_or(0, |f| widths[f].min(TITLE_ROOM));
        let mut over = (fixed + gaps + want).saturating_sub(total);
        while over > 0 {
            let widest = (0..shown.len())
                .filter(|&i| Some(i) != flex && columns[shown[i]].min > 0)
                .filter(|&i| widths[i] > columns[shown[i]].min)
                .max_by_key(|&i| widths[i]);
            let Some(i) = widest else { break };
            widths[i] -= 1;
            over -= 1;
        }
        if over > 0 {
            let least = (0..shown.len())
                .filter(|&i| columns[shown[i]].drop > 0)
                .min_by_key(|&i| columns[shown[i]].drop);
            if let Some(i) = least {
                shown.remove(i);
                natural.remove(i);
                continue;
            }
        }
        if let Some(f) = flex {
            let fixed: usize = (0..shown.len())
                .filter(|&i| i != f)
                .map(|i| widths[i])
                .sum();
            let room = total.saturating_sub(fixed + gaps).max(8);
            widths[f] = widths[f].min(room);
        }
        return (shown, widths);
    }
}

/// Writes one line of the table into `text`: the `shown` columns of `cells` (a cell per
/// column, with its display width).
fn line(
    text: &mut String,
    style: Style,
    columns: &[Column],
    shown: &[usize],
    widths: &[usize],
    cells: &[(String, usize)],
    header: bool,
) {
    for (i, &c) in shown.iter().enumerate() {
        let (cell, w) = &cells[c];
        let last = i + 1 == shown.len();
        let (cell, w) = if *w <= widths[i] {
            (std::borrow::Cow::Borrowed(cell.as_str()), *w)
        } else {
            let cut = if columns[c].cut_start {
                cut_start(cell, widths[i])
            } else {
                cut(cell, widths[i])
            };
            let w = width(&cut);
            (std::borrow::Cow::Owned(cut), w)
        };
        let pad = widths[i].saturating_sub(w);
        let (open, close) = if !style.colour {
            ("", "")
        } else if header {
            ("\x1b[1m", "\x1b[0m")
        } else if columns[c].dim {
            ("\x1b[2m", "\x1b[0m")
        } else {
            ("", "")
        };
        text.push_str(open);
        match columns[c].align {
            Align::Right => {
                text.extend(std::iter::repeat_n(' ', pad));
                text.push_str(&cell);
            }
            Align::Left if last => text.push_str(&cell),
            Align::Left => {
                text.push_str(&cell);
                text.extend(std::iter::repeat_n(' ', pad));
            }
        }
        text.push_str(close);
        if !last {
            text.push_str("  ");
        }
    }
    let end = text.trim_end().len();
    text.truncate(end);
}

/// One line of printable text: control characters (escapes included) become spaces.
pub fn clean(s: &str) -> String {
    if !s.chars().any(char::is_control) {
        return s.trim().to_owned();
    }
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_owned()
}

/// Display columns of `s` (a CJK character takes two, a combining mark none).
pub fn width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

fn char_width(c: char) -> usize {
    UnicodeWidthChar::width(c).unwrap_or(0)
}

/// At most `max` display columns, ending with `…` when cut.
pub fn cut(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_owned();
    }
    let mut keep = String::new();
    let mut used = 0;
    for c in s.chars() {
        used += char_width(c);
        if used + 1 > max {
            break;
        }
        keep.push(c);
    }
    format!("{keep}…")
}

/// At most `max` display columns, starting with `…` when cut (the end kept).
pub fn cut_start(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_owned();
    }
    let mut keep = Vec::new();
    let mut used = 0;
    for c in s.chars().rev() {
        used += char_width(c);
        if used + 1 > max {
            break;
        }
        keep.push(c);
    }
    format!("…{}", keep.iter().rev().collect::<String>())
}

/// How long ago `then` (epoch milliseconds) was, from `now`: `45s`, `12m`, `3h`, `5d`, then
/// the date (`2025-03-01`).
pub fn ago(then_ms: i64, now_ms: i64, date: &str) -> String {
    let s = (now_ms - then_ms) / 1000;
    match s {
        0..60 => format!("{s}s ago"),
        60..3_600 => format!("{}m ago", s / 60),
        3_600..86_400 => format!("{}h ago", s / 3_600),
        86_400..2_592_000 => format!("{}d ago", s / 86_400),
        _ => date.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(style: Style, rows: &[Vec<String>]) -> String {
        let cols = [
            Column {
                flexible: true,
                ..Column::text("title")
            },
            Column::text("id"),
            Column::number("n"),
            Column::text("tag"),
        ];
        let mut out = Vec::new();
        print(&mut out, style, &cols, rows).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn fits_the_width_and_drops_empty_columns() {
        let long = "a very long title that would never fit in a narrow terminal window";
        let rows = vec![
            vec![long.into(), "abcd1234".into(), "12".into(), String::new()],
            vec![
                "short\x1b]0;evil\x07".into(),
                "ef567890".into(),
                "3".into(),
                String::new(),
            ],
        ];
        let style = Style {
            width: Some(40),
            colour: false,
        };
        let text = render(style, &rows);
        for l in text.lines() {
            assert!(l.chars().count() <= 40, "{l:?}");
            assert!(!l.contains('\x1b'), "{l:?}");
        }
        assert!(!text.contains("tag"), "the empty column is dropped: {text}");
        assert!(text.lines().nth(1).unwrap().contains('…'), "{text}");
        assert_eq!(text.lines().count(), 3);
    }

    #[test]
    fn wide_characters_take_two_columns() {
        assert_eq!(width("会话标题"), 8);
        assert_eq!(cut("会话标题很长", 7), "会话标…");
        assert_eq!(
            width(&cut("会话标题很长", 6)),
            5,
            "a wide char never half-shown"
        );
        assert_eq!(cut_start("/home/me/仓库/src", 9), "…仓库/src");
        assert_eq!(cut_start("/home/me/仓库/src", 8), "…库/src");
        let rows = vec![
            vec![
                "修复登录页面的错误并添加测试".into(),
                "a1".into(),
                "1".into(),
                "x".into(),
            ],
            vec!["short".into(), "b2".into(), "22".into(), "y".into()],
        ];
        let text = render(
            Style {
                width: Some(24),
                colour: false,
            },
            &rows,
        );
        let lines: Vec<&str> = text.lines().collect();
        let at = |l: &str, id: &str| width(&l[..l.find(id).unwrap()]);
        assert!(lines.iter().all(|l| width(l) <= 24), "{text}");
        assert_eq!(
            at(lines[1], "a1"),
            at(lines[2], "b2"),
            "the id column lines up: {text}"
        );
    }

    #[test]
    fn short_widths_squeeze_then_drop_columns_and_pipes_cut_nothing() {
        let cols = [
            Column {
                flexible: true,
                ..Column::text("title")
            },
            Column::text("id"),
            Column {
                drop: 1,
                ..Column::number("agents")
            },
            Column {
                min: 12,
                cut_start: true,
                ..Column::text("project")
            },
        ];
        let title = "a title of forty characters, more or les";
        let rows = vec![vec![
            title.into(),
            "abcd1234".into(),
            "3".into(),
            "/home/me/src/a-project-with-a-long-name".into(),
        ]];
        let at = |w: Option<usize>| {
            let mut out = Vec::new();
            print(
                &mut out,
                Style {
                    width: w,
                    colour: false,
                },
                &cols,
                &rows,
            )
            .unwrap();
            String::from_utf8(out).unwrap()
        };
        let wide = at(Some(200));
        assert!(wide.contains(title) && wide.contains("agents"), "{wide}");
        let narrow = at(Some(50));
        assert!(narrow.lines().all(|l| width(l) <= 50), "{narrow}");
        assert!(
            !narrow.contains("agents"),
            "the droppable column went: {narrow}"
        );
        assert!(
            narrow.lines().nth(1).unwrap().contains('…')
                && narrow.lines().nth(1).unwrap().ends_with("-long-name"),
            "the path keeps its end: {narrow}"
        );
        let row = narrow.lines().nth(1).unwrap();
        assert!(
            width(row.split("  ").next().unwrap()) >= TITLE_ROOM,
            "{narrow}"
        );
        let piped = at(None);
        assert!(piped.contains(title) && piped.contains("a-project-with-a-long-name"));
    }

    #[test]
    fn colour_only_when_asked() {
        let rows = vec![vec!["t".into(), "i".into(), "1".into(), "x".into()]];
        let plain = Style {
            width: Some(80),
            colour: false,
        };
        assert!(!render(plain, &rows).contains('\x1b'));
        assert!(
            render(
                Style {
                    colour: true,
                    ..plain
                },
                &rows
            )
            .contains("\x1b[1m")
        );
    }

    #[test]
    fn relative_times() {
        let now = 1_000_000_000_000;
        assert_eq!(ago(now - 5_000, now, "d"), "5s ago");
        assert_eq!(ago(now - 120_000, now, "d"), "2m ago");
        assert_eq!(ago(now - 7_200_000, now, "d"), "2h ago");
        assert_eq!(ago(now - 3 * 86_400_000, now, "d"), "3d ago");
        assert_eq!(ago(now - 90 * 86_400_000, now, "2020-01-01"), "2020-01-01");
        assert_eq!(ago(now + 5_000, now, "future"), "future");
    }
}
