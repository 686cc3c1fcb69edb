//! The on-disk layout: tables and their keys, value codecs, row blocks, id entries and the
//! derived state of a file.

pub mod codec;
pub mod ids;
pub mod row;
pub mod schema;
pub mod state;
