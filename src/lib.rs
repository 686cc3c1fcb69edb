//! chainlog — an embedded event store for AI coding-agent session transcripts.
//!
//! Claude Code keeps each session as an append-only JSONL file whose entries form a tree
//! through `uuid`/`parentUuid`. chainlog reads those files in place (the JSONL stays the
//! truth), resolves the chain a resume hands to the model (SPEC A5), and lists sessions.
//!
//! ```
//! use chainlog::{Transcript, ResolveOptions, resolve};
//!
//! let jsonl = concat!(
//!     r#"{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"hi"},"uuid":"00000000-0000-4000-8000-000000000001","timestamp":"2025-01-01T00:00:00.000Z","sessionId":"s"}"#, "\n",
//!     r#"{"parentUuid":"00000000-0000-4000-8000-000000000001","isSidechain":false,"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"hello"}]},"uuid":"00000000-0000-4000-8000-000000000002","timestamp":"2025-01-01T00:00:01.000Z","sessionId":"s"}"#, "\n",
//! );
//! let t = Transcript::scan_bytes(jsonl.as_bytes());
//! let r = resolve(&t, ResolveOptions::default()).unwrap();
//! let uuids: Vec<String> = r.chain.iter().map(|l| l.uuid.to_string()).collect();
//! assert_eq!(uuids, ["00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002"]);
//! ```

mod chain;
mod error;
pub mod generate;
mod index;
mod resume;
mod transcript;

pub use chain::{
    BadLine, ChainBreak, LeafInfo, LeafRule, Link, MessageRow, Resolution, ResolveOptions, Stop,
    Transcript, UnknownLeaf, View, leaf_report, resolve,
};
pub use error::{Error, Position, Result, check_id};
pub use index::ingest::CatchUp;
pub use index::schema::INDEX_SCHEMA_VERSION;
pub use index::verify::{Difference, verify};
pub use index::{Answer, Source, Store};
pub use resume::{
    Interrupt, ViewEntry, detect as detect_interrupt, read_view, text::render as render_text,
};
pub use transcript::envelope::{Flags, Kind, LineProblem, hash64};
pub use transcript::frame::LinePos;
pub use transcript::id::{Id, IdNames};
