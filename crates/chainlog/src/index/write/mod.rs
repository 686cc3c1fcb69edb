//! Catching a sidecar up: new lines framed and stored, projections derived (fully or
//! incrementally), the resume view extended after an append, the views (and listing rows) a
//! catch-up of many stores.

pub mod derive;
pub mod extension;
pub mod incremental;
pub mod ingest;
pub mod parsing;
pub mod runs;
pub mod views;
