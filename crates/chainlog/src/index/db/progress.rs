//! Progress of long index work (a first catch-up of a large transcript, a rebuild, a first
//! search index build): a
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

/// Progress of one piece of work, reported to the observer (when there is one and the work
/// is large enough): a catch-up of one transcript, or a search index build over many.
pub(crate) struct Tracker {
    observer: Option<(ProgressFn, PathBuf)>,
    done: u64,
    total: u64,
    next: u64,
}

impl Tracker {
    /// Work of `total` bytes on `path` (a transcript, or a project folder); reports 0.
    pub(crate) fn new(path: &Path, total: u64) -> Tracker {
        let observer = (total >= REPORT_ABOVE)
            .then(|| OBSERVER.read().ok().and_then(|o| o.clone()))
            .flatten()
            .map(|f| (f, path.to_path_buf()));
        if let Some((f, p)) = &observer {
            f(p, 0, total);
        }
        Tracker {
            observer,
            done: 0,
            total,
            next: EVERY,
        }
    }

    /// `n` more bytes done; reported every [`EVERY`] bytes.
    pub(crate) fn add(&mut self, n: u64) {
        self.done += n;
        if let Some((f, p)) = &self.observer
            && self.done >= self.next
        {
            f(p, self.done.min(self.total), self.total);
            self.next = self.done + EVERY;
        }
    }

    /// The work ended: reported once, as complete.
    pub(crate) fn finish(&mut self) {
        if let Some((f, p)) = self.observer.take() {
            f(&p, self.total, self.total);
        }
    }
}

/// A reader that reports its progress to the observer (when there is one and the work is
/// large enough), as complete at its end.
pub(crate) struct Reporting<R> {
    inner: R,
    tracker: Tracker,
}

impl<R: Read> Reporting<R> {
    pub(crate) fn new(inner: R, path: &Path, total: u64) -> Self {
        Reporting {
            inner,
            tracker: Tracker::new(path, total),
        }
    }
}

impl<R: Read> Read for Reporting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 && !buf.is_empty() {
            self.tracker.finish();
        } else {
            self.tracker.add(n as u64);
        }
        Ok(n)
    }
}

/// A reader that adds what it reads to a [`Tracker`] shared by several readers (the search
/// index's catch-up of a whole project).
#[cfg(feature = "search")]
pub(crate) struct Counted<'t, R> {
    pub(crate) inner: R,
    pub(crate) tracker: &'t mut Tracker,
}

#[cfg(feature = "search")]
impl<R: Read> Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.tracker.add(n as u64);
        Ok(n)
    }
}
