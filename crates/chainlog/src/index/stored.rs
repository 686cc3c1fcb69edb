//! Stored forms of entries that need more than a row.

use crate::transcript::envelope::MetaEntry;
use crate::transcript::frame::LinePos;

/// A line of the `meta_entries` table: a metadata entry, or a compact boundary marker (which
/// clears context-collapse state when the metadata is merged again in file order).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum StoredMeta {
    /// A metadata entry and its position.
    Entry(MetaEntry, LinePos),
    /// A compact boundary was here.
    Boundary,
}
