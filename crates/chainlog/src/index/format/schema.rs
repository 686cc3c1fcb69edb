//! The index schema: one redb database per project directory.
//!
//! Every table is keyed by a `file` id first (a project holds many transcripts); a file's
//! rows can be dropped with one range delete. Values are rmp-serde blobs, their own layouts
//! (`row`, `ids`) or fixed bytes; all but fixed ones carry a checksum over the value and its
//! key (`codec`).
//!
//! | table | key | value | what |
//! |---|---|---|---|
//! | `meta` | name | bytes | `schema` version, `next_file` id |
//! | `files` | path | [`FileState`] | identity, indexed length, lines, fingerprint, derived scalars |
//! | `chunks` | (file, chunk no.) | XXH3-128 | fingerprint of each complete 64 KiB chunk |
//! | `rows` | (file, seq) | [`MessageRow`](crate::chain::MessageRow) ([`crate::index::format::row`]) | one per uuid, in map order |
//! | `ids` | (file, id) | [`IdEntry`](crate::index::format::ids::IdEntry) | uuid → row, and the rows naming the id as their on-disk parent |
//! | `responses` | (file, `message.id` hash) | rows ([`crate::index::format::ids::encode_response`]) | assistant lines of one response |
//! | `progress` | (file, uuid) | parent | legacy progress entries |
//! | `names` | (file, uuid) | text | ids that are not UUIDs |
//! | `bad_lines` | (file, line) | [`BadLine`](crate::chain::BadLine) | skipped lines |
//! | `derived` | (file, kind, uuid) | parent | the projections: re-pointed parents, dead rows, leaves, zeroed usage |
//! | `reparented` | (file, effective parent, seq) | () | reverse of re-pointed parents |
//! | `leaf_times` | (file, sidechain, timestamp, seq) | () | leaves by time: the newest is the last key |
//! | `forward` | (file, uuid) | () | ids named (snip, preserved segment, parent) before any row had them |
//! | `listing` | path | header + bytes | what `ls` shows of a session, with the stat it is valid for (`catalog::cache`) |
//! | `sidechains` | (file, first seq) | last seq | runs of rows of `isSidechain` messages (inline sub-agents), counted in [`FileState::sidechain_rows`] |
//! | `view` | (file, n) | head, then blocks of link records | the materialised resume view ([`crate::index::read::view`]) |

use redb::TableDefinition;

/// The index layout version. An index with another version is rebuilt.
///
/// History:
/// - 1: first layout.
/// - 2: `forward` table (ids named before they arrive: an append that brings one re-derives).
/// - 3: lines with unreadable field types are kept (envelope read tolerantly) and noted in
///   `bad_lines` as `LineProblem::Fields`.
/// - 4: `FileState` and the cached facts record the status-change time (ctime) and when
///   the file was last checked (racy-mtime rule).
/// - 5: no `meta_entries` table (metadata lines were stored but never read: resume needs only
///   `FileState::checkpoint`, titles come from `facts`).
/// - 6: checksums cover the key a value is stored under (`codec`): `rows`, `files`,
///   `bad_lines`, `facts` values, and `derived` and `progress` values (raw bytes plus a
///   checksum, `codec::tag`); `FileState` counts `bad_lines` and `names`
///   entries (their scans check the count); `counts` table (entries per `children` parent
///   and per `msg_ids` hash), `derived` counts of `reparented` edges, and `FileState` counts
///   of `DEAD`, `PRESERVED` and `ZEROED` facts.
/// - 7: `sidechains` table and `FileState::sidechain_rows`: inline sub-agents (`chainlog
///   agents`, agent targets) are read from the index instead of a scan of the session.
/// - 8: `view` table: the default resume answer materialised by the resume that walked it (a
///   warm resume is one range read, not a walk).
/// - 9: `listing` table replaces `facts`: a fixed header (the file's stat and when it was
///   read) before the facts, so a listing checks a row without decoding it; read with one
///   range scan per sidecar, and filled by `chainlog index`.
/// - 10: the `view` head holds the tool ids of the view's lines, so a catch-up after a plain
///   append extends the view instead of leaving the next resume to walk.
/// - 11: value checksums are CRC-32 (`codec`) instead of truncated blake3: a checksum per row
///   read was 7 % of a warm `ls`.
/// - 12: `view` links are stored 256 records per value (`view::BLOCK`): redb's work per
///   entry was most of a warm resume of 10,000 messages.
/// - 13: `ids` replaces `uuids`, `children` and their `counts`: one value per id holds its row
///   and the rows naming it as their parent (`ids`): three B-tree entries per message were
///   half of a large index. Rows are stored in their
///   own layout (`row`): 73 bytes a row of a 1 GiB generated transcript instead of a 100-byte
///   `MessagePack` array; the session is an index into `FileState::sessions`.
/// - 14: `responses` replaces `msg_ids` and `counts` (13 was first written without it: the
///   version tells such sidecars apart, and they are rebuilt).
/// - 15: chunk fingerprints (`chunks`, `FileState::tail_hash`) are XXH3-128 and the 64-bit
///   hashes of message, session and tool ids (`hash64`) XXH3-64, instead of truncated
///   blake3: blake3 was a sixth of the parsing thread of a first index.
/// - 16: varints: a `view` link is written as its difference to the link before it (~22
///   bytes on a chain instead of 74), `ids` and `responses` rows as differences (6 to 8 bytes
///   an id instead of 12), a row's line position as LEB128.
/// - 17: `sidechains` holds runs of rows (first → last): a sub-agent's transcript is one
///   entry instead of one per message.
/// - 18: a row whose parent is the uuid of the row before it leaves the parent out (a bit
///   of the kind byte says so): 16 bytes less on 95 % of the real transcripts' messages.
/// - 19: `rows` holds blocks of 32 rows (`row::PER_BLOCK`), each row written against the one
///   before it (timestamp, line and offset as differences; parent and `message.id` hash as a
///   bit when they are that row's): a key, an offset and a checksum per block, not per row.
/// - 20: the facts' title passes over a last prompt that is a system text
///   (`<task-notification>`…): stored titles of 19 may hold one.
/// - 21: a stored `view`'s head says whether its links are in file order (`ordered`), so
///   search asks whether a line is on the view by a binary search over its blocks.
pub const INDEX_SCHEMA_VERSION: u32 = 21;

/// The lowest and highest 16-byte ids, for range scans over one file's rows.
pub const ID_FIRST: [u8; 16] = [0; 16];
/// See [`ID_FIRST`].
pub const ID_LAST: [u8; 16] = [0xff; 16];

/// Size of a fingerprint chunk.
pub const CHUNK_SIZE: u64 = 64 * 1024;

pub const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
pub const FILES: TableDefinition<&str, &[u8]> = TableDefinition::new("files");
pub const CHUNKS: TableDefinition<(u32, u64), [u8; 16]> = TableDefinition::new("chunks");
pub const ROWS: TableDefinition<(u32, u32), &[u8]> = TableDefinition::new("rows");
pub const IDS: TableDefinition<(u32, [u8; 16]), &[u8]> = TableDefinition::new("ids");
pub const RESPONSES: TableDefinition<(u32, u64), &[u8]> = TableDefinition::new("responses");
pub const PROGRESS: TableDefinition<(u32, [u8; 16]), &[u8]> = TableDefinition::new("progress");
pub const NAMES: TableDefinition<(u32, [u8; 16]), &str> = TableDefinition::new("names");
pub const BAD_LINES: TableDefinition<(u32, u64), &[u8]> = TableDefinition::new("bad_lines");
pub const DERIVED: TableDefinition<(u32, u8, [u8; 16]), &[u8]> = TableDefinition::new("derived");
pub const REPARENTED: TableDefinition<(u32, [u8; 16], u32), ()> =
    TableDefinition::new("reparented");
pub const LEAF_TIMES: TableDefinition<(u32, u8, u64, u32), ()> = TableDefinition::new("leaf_times");
pub const LISTING: TableDefinition<&str, &[u8]> = TableDefinition::new("listing");
pub const FORWARD: TableDefinition<(u32, [u8; 16]), ()> = TableDefinition::new("forward");
pub const SIDECHAINS: TableDefinition<(u32, u32), u32> = TableDefinition::new("sidechains");
pub const VIEW: TableDefinition<(u32, u32), &[u8]> = TableDefinition::new("view");

/// The name of every table [`create_all`] creates: a sidecar of the current version that
/// lacks one of them is foreign or damaged, and is rebuilt (`open`).
pub const TABLES: [&str; 16] = [
    "meta",
    "files",
    "chunks",
    "rows",
    "ids",
    "responses",
    "progress",
    "names",
    "bad_lines",
    "derived",
    "reparented",
    "leaf_times",
    "listing",
    "forward",
    "sidechains",
    "view",
];

/// Creates every table, so readers never meet a missing one.
pub fn create_all(txn: &redb::WriteTransaction) -> Result<(), redb::TableError> {
    txn.open_table(META)?;
    txn.open_table(FILES)?;
    txn.open_table(CHUNKS)?;
    txn.open_table(ROWS)?;
    txn.open_table(IDS)?;
    txn.open_table(RESPONSES)?;
    txn.open_table(PROGRESS)?;
    txn.open_table(NAMES)?;
    txn.open_table(BAD_LINES)?;
    txn.open_table(DERIVED)?;
    txn.open_table(REPARENTED)?;
    txn.open_table(LEAF_TIMES)?;
    txn.open_table(LISTING)?;
    txn.open_table(FORWARD)?;
    txn.open_table(SIDECHAINS)?;
    txn.open_table(VIEW)?;
    Ok(())
}

/// A timestamp as a key that sorts like the signed value.
pub fn sortable_ts(ts: i64) -> u64 {
    ts.cast_unsigned() ^ (1 << 63)
}

/// Kinds of rows in [`DERIVED`].
pub mod derived {
    /// The effective parent differs from the line's `parentUuid` (value: 0 or 16 bytes).
    pub const PARENT: u8 = 1;
    /// The row was removed by a snip (rows dropped before the last compact boundary are
    /// implied by [`crate::index::FileState::drop_before`] and [`PRESERVED`] instead).
    pub const DEAD: u8 = 2;
    /// A row of the live preserved segment: kept although it precedes `drop_before`.
    pub const PRESERVED: u8 = 5;
    /// The row is a leaf (format.md §A5 step 7). Value: seq (4 bytes LE).
    pub const LEAF: u8 = 3;
    /// A preserved assistant whose usage is zeroed.
    pub const ZEROED: u8 = 4;
    /// How many `reparented` edges an effective parent has (value: count, 4 bytes LE), so a
    /// scan that finds fewer (a key changed by damage) is caught.
    pub const REPARENTS: u8 = 6;
}

/// Per-file state: what was indexed and how to check it is still the same file.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileState {
    /// Id used in every other table.
    pub file: u32,
    /// Device and inode of the indexed file.
    pub dev: u64,
    /// Inode.
    pub ino: u64,
    /// Bytes indexed: up to the last complete line.
    pub indexed_len: u64,
    /// Modification time (ns) when last indexed.
    pub mtime_ns: i128,
    /// Status-change time (ns) when last indexed: a write followed by `touch -r` changes it.
    pub ctime_ns: i128,
    /// Wall-clock time (ns) when the bytes were last read to check or index them. A file whose
    /// modification time is not clearly before it may have changed again within the same
    /// timestamp tick: its stat proves nothing ([`crate::index::write::ingest::Stat::unchanged`]).
    pub checked_at_ns: i128,
    /// Lines framed so far (blank ones included).
    pub lines: u64,
    /// Rows (messages) in map order.
    pub rows: u32,
    /// XXH3-128 of the bytes from the last complete chunk boundary to `indexed_len` (not set
    /// while nothing is indexed: an empty prefix matches without it, `prefix_matches`).
    pub tail_hash: [u8; 16],
    /// Rows that are not sidechain (an all-sidechain file is an agent transcript).
    pub main_rows: u32,
    /// Entries of `sidechains`: rows that are sidechain (a scan that finds another number read
    /// damaged keys).
    pub sidechain_rows: u32,
    /// Live rows after the projections.
    pub live_rows: u32,
    /// `DEAD` facts in `derived` (checked by the scan that reads them).
    pub dead_facts: u32,
    /// `PRESERVED` facts in `derived` (likewise).
    pub preserved_facts: u32,
    /// `ZEROED` facts in `derived` (likewise).
    pub zeroed_facts: u32,
    /// Entries of `bad_lines` (a scan that finds another number read damaged keys).
    pub bad_lines: u64,
    /// Entries of `names` (likewise).
    pub names: u64,
    /// Unterminated tail seen at the last catch-up: `(offset, len)`.
    pub torn_tail: Option<(u64, u64)>,
    /// `leafUuid` of the newest `last-prompt` that carries one (format.md §A5 step 8a).
    pub checkpoint: Option<crate::id::Id>,
    /// Rows before this map position are dropped unless preserved (format.md §A5 step 5).
    pub drop_before: Option<u32>,
    /// The anchor of the live preserved segment: its children are re-pointed (step 5).
    pub segment_anchor: Option<crate::id::Id>,
    /// The session hashes the file's rows name by index (`row`), in order of appearance.
    pub sessions: Vec<u64>,
    /// `LEAF` facts in `derived` (a scan of them checks the count).
    pub leaf_facts: u32,
}

#[cfg(test)]
mod tests {
    use redb::{ReadableDatabase, TableHandle};

    /// `TABLES` names exactly the tables `create_all` creates (the rebuild of a sidecar that
    /// lacks one relies on it).
    #[test]
    fn tables_names_what_create_all_creates() {
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("t.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        super::create_all(&txn).unwrap();
        txn.commit().unwrap();
        let mut made: Vec<String> = db
            .begin_read()
            .unwrap()
            .list_tables()
            .unwrap()
            .map(|h| h.name().to_owned())
            .collect();
        made.sort();
        let mut want: Vec<String> = super::TABLES.iter().map(|s| (*s).to_owned()).collect();
        want.sort();
        assert_eq!(made, want);
    }
}
