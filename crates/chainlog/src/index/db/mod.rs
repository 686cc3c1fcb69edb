//! The database plumbing: opening redb in multi-writer mode, markers and unsynced writes,
//! liveness of other processes, guarded reads of unchecked pages, bounded lock waits, progress.

pub mod guard;
pub mod listing;
pub mod live;
pub mod open;
pub mod progress;
pub mod unsynced;
pub mod wait;
