//! Answering from a sidecar: the chain graph row by row, point lookups, the materialised view
//! and its in-memory overlay, sidechain rows.

pub mod lookup;
pub mod overlay;
pub mod query;
pub mod sidechains;
pub mod view;
