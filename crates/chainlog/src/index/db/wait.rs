//! Bounded waits on other processes' index locks.
//!
//! # Context
//! redb 4.6 in [`redb::ConcurrencyMode::MultiWriter`] takes its file locks with
//! `fcntl(F_OFD_SETLKW)`, which waits without a bound: a read-write open and `begin_write` wait
//! for the process holding the writer byte (for its whole write transaction), and `begin_read`
//! waits for a header lock held exclusively during a commit. A chainlog process stopped with
//! SIGSTOP (Ctrl-Z, a debugger, a stalled disk) while it holds one of them would block every
//! other command on the project forever.
//!
//! # Design
//! Index work runs on a worker thread ([`bounded`]). Each redb call that can wait on another
//! process is wrapped in [`waiting`], which records on a gate shared with the caller when the
//! wait began. The caller polls the gate: a wait longer than [`LOCK_WAIT`] gives up, and the
//! caller answers from the transcript instead. Only waiting is bounded, never work: a long
//! catch-up of a large transcript holding the lock runs to its end. The abandoned worker stays
//! blocked in the kernel until the other process resumes (then it finishes or fails on its own)
//! or this process exits.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The longest a command waits for another process's index lock before answering without it.
pub const LOCK_WAIT: Duration = Duration::from_secs(2);

/// [`LOCK_WAIT`], or `CHAINLOG_LOCK_WAIT_MS` milliseconds when that is set (tests that stop a
/// process on purpose shorten every other command's wait; read once per process).
pub fn lock_wait() -> Duration {
    static WAIT: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *WAIT.get_or_init(|| {
        std::env::var("CHAINLOG_LOCK_WAIT_MS")
            .ok()
            .and_then(|ms| ms.parse().ok())
            .map_or(LOCK_WAIT, Duration::from_millis)
    })
}

/// How often the caller looks at the gate.
const POLL: Duration = Duration::from_millis(20);

/// When the worker began waiting, in µs since `epoch` plus one; 0 while it is not waiting.
struct Gate {
    epoch: Instant,
    since: AtomicU64,
}

thread_local! {
    static GATE: RefCell<Option<Arc<Gate>>> = const { RefCell::new(None) };
}

/// Runs `f`, a call that may wait on another process's lock, recording the wait on this
/// thread's gate (if it runs under [`bounded`]).
pub fn waiting<T>(f: impl FnOnce() -> T) -> T {
    let gate = GATE.with(|g| g.borrow().clone());
    if let Some(g) = &gate {
        let now = u64::try_from(g.epoch.elapsed().as_micros()).unwrap_or(u64::MAX - 1);
        g.since.store(now + 1, Ordering::Release);
    }
    let out = f();
    if let Some(g) = &gate {
        g.since.store(0, Ordering::Release);
    }
    out
}

/// Runs `f` on a worker thread; `None` when it waited on a lock for more than [`lock_wait`]
/// (the worker is then left behind). A panic of the worker is resumed on the caller.
pub fn bounded<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let gate = Arc::new(Gate {
        epoch: Instant::now(),
        since: AtomicU64::new(0),
    });
    let (tx, rx) = std::sync::mpsc::channel();
    let worker_gate = gate.clone();
    let handle = std::thread::Builder::new()
        .name("chainlog-index".into())
        .spawn(move || {
            GATE.with(|g| *g.borrow_mut() = Some(worker_gate));
            let _ = tx.send(f());
        })
        .ok()?;
    loop {
        match rx.recv_timeout(POLL) {
            Ok(v) => {
                let _ = handle.join();
                return Some(v);
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                // The worker ended without an answer: it panicked.
                if let Err(panic) = handle.join() {
                    std::panic::resume_unwind(panic);
                }
                return None;
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                let since = gate.since.load(Ordering::Acquire);
                if since != 0 {
                    let began = Duration::from_micros(since - 1);
                    if gate.epoch.elapsed().saturating_sub(began) > lock_wait() {
                        return None;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_wait_gives_up_and_long_work_does_not() {
        let r = bounded(|| waiting(|| std::thread::sleep(LOCK_WAIT * 3)));
        assert!(r.is_none(), "a wait past the bound is abandoned");
        let r = bounded(|| {
            std::thread::sleep(LOCK_WAIT + Duration::from_millis(300));
            7
        });
        assert_eq!(r, Some(7));
    }
}
