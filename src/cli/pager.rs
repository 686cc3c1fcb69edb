//! Long human output on a terminal goes through a pager (`$PAGER`, else `less -FRX`), as git
//! does; piped output and short output are written directly.

use std::io::{IsTerminal, Write};
use std::process::{Command, Stdio};

/// Writes `text` to `out`, or through the pager when stdout is a terminal and `text` has more
/// lines than the terminal. `PAGER=` (empty) or `PAGER=cat` turns paging off.
pub fn show(text: &[u8], out: &mut impl Write) -> std::io::Result<()> {
    let lines = memchr::memchr_iter(b'\n', text).count();
    let height = terminal_size::terminal_size().map_or(usize::MAX, |(_, h)| usize::from(h.0));
    if !std::io::stdout().is_terminal() || lines < height {
        return out.write_all(text);
    }
    let pager = std::env::var("PAGER").unwrap_or_else(|_| "less -FRX".into());
    let mut words = pager.split_whitespace();
    let Some(program) = words.next().filter(|p| *p != "cat") else {
        return out.write_all(text);
    };
    let child = Command::new(program)
        .args(words)
        .stdin(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        // No pager installed: print directly.
        return out.write_all(text);
    };
    out.flush()?;
    if let Some(mut stdin) = child.stdin.take() {
        // The reader may quit early (`q` in less): a broken pipe is not an error.
        match stdin.write_all(text) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            r => r?,
        }
    }
    child.wait()?;
    Ok(())
}
