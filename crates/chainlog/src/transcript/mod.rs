//! Reading transcripts: framing lines, parsing envelopes, merging metadata.
//!
//! This layer knows the JSONL format (format.md §A1–A2) and nothing about chains or indexes.

pub mod batch;
pub mod envelope;
pub mod folder;
pub mod frame;
pub mod loose;
pub mod lossy;
pub mod metadata;
pub mod time;
pub mod upgrade;
pub mod usage;
