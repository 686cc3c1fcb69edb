//! Human tables for a terminal: fit the width, drop empty columns, colour only on a TTY.
//!
//! One row per record, never wrapped: the flexible column (a title) takes what the fixed
//! columns leave of the width and is cut with `…`. Columns whose every cell is empty are not
//! printed. Colour follows <https://no-color.org>: off when `NO_COLOR` is set or the output is
//! not a terminal.

use std::io::{IsTerminal, Write};

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
}

impl Column {
    /// A fixed-width text column.
    pub const fn text(name: &'static str) -> Column {
        Column {
            name,
            align: Align::Left,
            flexible: false,
            dim: false,
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
    /// Total width in columns.
    pub width: usize,
    /// Whether to colour.
    pub colour: bool,
}

impl Style {
    /// For standard output: the terminal's width (or `$COLUMNS`, else 120 when piped) and
    /// colour on a terminal unless `NO_COLOR` is set.
    pub fn stdout() -> Style {
        let tty = std::io::stdout().is_terminal();
        let width = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.parse().ok())
            .or_else(|| {
                terminal_size::terminal_size().map(|(terminal_size::Width(w), _)| usize::from(w))
            })
            .filter(|&w| w >= 20)
            .unwrap_or(120);
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
    let cells = |r: &Vec<String>, c: usize| clean(r.get(c).map_or("", String::as_str));
    let shown: Vec<usize> = (0..columns.len())
        .filter(|&c| rows.iter().any(|r| !cells(r, c).is_empty()))
        .collect();
    let mut widths: Vec<usize> = shown
        .iter()
        .map(|&c| {
            rows.iter()
                .map(|r| width(&cells(r, c)))
                .chain([width(columns[c].name)])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let gaps = 2 * shown.len().saturating_sub(1);
    if let Some(flex) = shown.iter().position(|&c| columns[c].flexible) {
        let fixed: usize = widths
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != flex)
            .map(|(_, w)| w)
            .sum();
        let room = style.width.saturating_sub(fixed + gaps).max(8);
        widths[flex] = widths[flex].min(room);
    }
    let header: Vec<String> = shown.iter().map(|&c| columns[c].name.to_owned()).collect();
    line(out, style, columns, &shown, &widths, &header, true)?;
    for r in rows {
        let row: Vec<String> = shown.iter().map(|&c| cells(r, c)).collect();
        line(out, style, columns, &shown, &widths, &row, false)?;
    }
    Ok(())
}

fn line(
    out: &mut impl Write,
    style: Style,
    columns: &[Column],
    shown: &[usize],
    widths: &[usize],
    cells: &[String],
    header: bool,
) -> std::io::Result<()> {
    let mut text = String::new();
    for (i, (&c, cell)) in shown.iter().zip(cells).enumerate() {
        let last = i + 1 == shown.len();
        let cell = cut(cell, widths[i]);
        let pad = " ".repeat(widths[i] - width(&cell));
        let padded = match columns[c].align {
            Align::Right => format!("{pad}{cell}"),
            Align::Left if last => cell,
            Align::Left => format!("{cell}{pad}"),
        };
        let styled = if !style.colour {
            padded
        } else if header {
            format!("\x1b[1m{padded}\x1b[0m")
        } else if columns[c].dim {
            format!("\x1b[2m{padded}\x1b[0m")
        } else {
            padded
        };
        text.push_str(&styled);
        if !last {
            text.push_str("  ");
        }
    }
    writeln!(out, "{}", text.trim_end())
}

/// One line of printable text: control characters (escapes included) become spaces.
pub fn clean(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_owned()
}

fn width(s: &str) -> usize {
    s.chars().count()
}

/// At most `max` chars, with `…` when cut.
pub fn cut(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_owned();
    }
    let keep: String = s.chars().take(max.saturating_sub(1)).collect();
    format!("{keep}…")
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
            width: 40,
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
    fn colour_only_when_asked() {
        let rows = vec![vec!["t".into(), "i".into(), "1".into(), "x".into()]];
        let plain = Style {
            width: 80,
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
