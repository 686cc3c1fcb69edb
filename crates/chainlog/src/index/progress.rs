//! Progress of long index work (a first catch-up of a large transcript, a rebuild): a
//! process-wide observer, as a logger is, so a program can show a bar without threading a
//! callback through every call. Work below [`REPORT_ABOVE`] bytes is not reported.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// Called with the transcript, the bytes read so far and the bytes to read in all.
pub type ProgressFn = Arc<dyn Fn(&Path, u64, u64) + Send + Sync>;

/// Catch-ups reading fewer bytes than this are not reported (they take well under a second).
pub const REPORT_ABOVE: u64 = 32 << 20;

/// How often a catch-up reports.
const EVERY: u64 = 4 << 20;

static OBSERVER: RwLock<Option<ProgressFn>> = RwLock::new(None);

/// Sets (or with `None` removes) the observer of index work in this process.
pub fn set_progress(f: Option<ProgressFn>) {
    if let Ok(mut o) = OBSERVER.write() {
        *o = f;
    }
}

/// A reader that reports its progress to the observer (when there is one and the work is
/// large enough).
pub(crate) struct Reporting<R> {
    inner: R,
    observer: Option<(ProgressFn, PathBuf)>,
    done: u64,
    total: u64,
    next: u64,
}

impl<R: Read> Reporting<R> {
    pub(crate) fn new(inner: R, path: &Path, total: u64) -> Self {
        let observer = (total >= REPORT_ABOVE)
            .then(|| OBSERVER.read().ok().and_then(|o| o.clone()))
            .flatten()
            .map(|f| (f, path.to_path_buf()));
        if let Some((f, p)) = &observer {
            f(p, 0, total);
        }
        Reporting {
            inner,
            observer,
            done: 0,
            total,
            next: EVERY,
        }
    }
}

impl<R: Read> Read for Reporting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.done += n as u64;
        if let Some((f, p)) = &self.observer
            && (self.done >= self.next || n == 0)
        {
            f(p, self.done.min(self.total), self.total);
            // At the end, once.
            self.next = if n == 0 { u64::MAX } else { self.done + EVERY };
        }
        Ok(n)
    }
}
