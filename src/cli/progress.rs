//! A progress bar on stderr for long index work (the library reports catch-ups of more than
//! `chainlog::sidecar::REPORT_ABOVE` bytes: a first resume of a big transcript, a rebuild).

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};

/// Shows a bar by bytes while the library reads a large transcript, when stderr is a terminal.
pub fn install() {
    if !std::io::stderr().is_terminal() {
        return;
    }
    let bar: Mutex<Option<indicatif::ProgressBar>> = Mutex::new(None);
    chainlog::sidecar::set_progress(Some(Arc::new(move |path, done, total| {
        let Ok(mut slot) = bar.lock() else { return };
        let b = slot.get_or_insert_with(|| {
            let b = indicatif::ProgressBar::new(total);
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "indexing {wide_msg} {bar:30} {bytes}/{total_bytes} {eta}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            b.set_message(
                path.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            );
            b
        });
        b.set_length(total);
        b.set_position(done);
        if done >= total {
            b.finish_and_clear();
            *slot = None;
        }
    })));
}

/// A bar by bytes for a push of more than 32 MiB (a first sync), when stderr is a terminal.
pub fn sync_bar() -> Option<chainlog::SyncProgress> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar: Mutex<Option<indicatif::ProgressBar>> = Mutex::new(None);
    Some(Arc::new(move |done, total| {
        if total < 32 << 20 {
            return;
        }
        let Ok(mut slot) = bar.lock() else { return };
        let b = slot.get_or_insert_with(|| {
            let b = indicatif::ProgressBar::new(total);
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "syncing {bar:30} {bytes}/{total_bytes} {bytes_per_sec} {eta}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            b
        });
        b.set_length(total);
        b.set_position(done);
        if done >= total {
            b.finish_and_clear();
        }
    }))
}
