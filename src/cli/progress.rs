//! A progress bar on stderr for long index work (the library reports catch-ups of more than
//! `chainlog::sidecar::REPORT_ABOVE` bytes: a first resume of a big transcript, a rebuild).

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};

/// Shows a bar by bytes while the library reads a large transcript, when stderr is a terminal.
pub fn install() {
    if !std::io::stderr().is_terminal() {
        return;
    }
    let bar = Slot::default();
    chainlog::sidecar::set_progress(Some(Arc::new(move |path, done, total| {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        bar.show(
            "indexing {wide_msg} {bar:30} {bytes}/{total_bytes} {eta}",
            &name,
            done,
            total,
        );
    })));
}

/// A bar by bytes for a push of more than 32 MiB (a first sync), when stderr is a terminal.
pub fn sync_bar() -> Option<chainlog::SyncProgress> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = Slot::default();
    Some(Arc::new(move |done, total| {
        if total >= 32 << 20 {
            bar.show(
                "syncing {bar:30} {bytes}/{total_bytes} {bytes_per_sec} {eta}",
                "",
                done,
                total,
            );
        }
    }))
}

/// One bar at a time, made at the first report and cleared when the work is done.
#[derive(Default)]
struct Slot(Mutex<Option<indicatif::ProgressBar>>);

impl Slot {
    fn show(&self, template: &str, message: &str, done: u64, total: u64) {
        let Ok(mut slot) = self.0.lock() else { return };
        let b = slot.get_or_insert_with(|| {
            let b = indicatif::ProgressBar::new(total);
            b.set_style(
                indicatif::ProgressStyle::with_template(template)
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            b.set_message(message.to_owned());
            b
        });
        b.set_length(total);
        b.set_position(done);
        if done >= total {
            b.finish_and_clear();
            *slot = None;
        }
    }
}
