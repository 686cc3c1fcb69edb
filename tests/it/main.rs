//! The integration tests, one binary: each file a module (compiled and linked once; the
//! tests of all of them share the test threads). `tests/progress.rs` and
//! `tests/index_catch_up_reads.rs` stay binaries of their own: they observe process-wide
//! state (the progress observer, `/proc/self/io`) that other tests would disturb.
//!
//! Run one file's tests with `cargo test --test it <file>::`, e.g. `cargo test --test it writer::`.

mod util;

mod agents;
mod architecture;
mod catalog;
mod cli_write;
mod conformance;
mod export;
mod export_safety;
mod fixtures;
mod generated;
mod ids;
mod index_damage;
mod index_equivalence;
mod index_exactness;
mod index_properties;
mod index_rebuild;
mod index_trust;
mod input_properties;
mod listing_cache;
mod migrate;
mod pick;
mod processes;
mod real_transcripts;
mod resume_api;
mod robustness;
mod search;
mod search_damage;
mod sync;
mod sync_garage;
mod sync_properties;
mod tty;
mod usage;
mod writer;
mod writer_processes;
