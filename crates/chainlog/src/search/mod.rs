//! Full-text search over every message of a project's transcripts (`chainlog search`).
//!
//! # Design
//! One [tantivy](https://docs.rs/tantivy) index per project directory, beside the redb
//! sidecar (`<index dir>/search/<project>-<hash>/`). It is a derived, disposable cache like
//! the redb index: delete it and the next search rebuilds it.
//!
//! - **A document per message** (user, assistant, and `local_command` system entries): its
//!   searchable text ([`Message::searchable_text`](crate::Message::searchable_text): texts, thinking, tool names and inputs, tool
//!   results), and where its line is (path, offset, length). The text is indexed, not stored:
//!   the few lines a query returns are read again from the transcript to cut their snippets.
//! - **Kept current by tailing**, as the redb index is: the commit payload records, per
//!   transcript, its identity, the indexed length and a hash of the bytes just before it, in
//!   the same atomic commit as the documents. A grown file adds only its new lines; any other
//!   change (rewrite, truncation, another file at the path) deletes the file's documents and
//!   indexes it again; a vanished file's documents are deleted.
//! - **Progress**: a catch-up reports the bytes it reads in all the project's transcripts as one
//!   piece of work to the observer of [`crate::sidecar::set_progress`] (a first build over a big
//!   tree takes seconds; the command shows a bar).
//! - **Ranking** is BM25 over the text. Each hit says whether its message is on the session's
//!   resumed chain (answered by [`Store::resolve`]) or on a dead branch.

mod tail;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tantivy::collector::TopDocs;
use tantivy::query::QueryParser;
use tantivy::schema::{Field, INDEXED, STORED, STRING, Schema, TEXT, TantivyDocument, Value as _};
use tantivy::snippet::SnippetGenerator;
use tantivy::{Index, IndexWriter, Term, doc};

use crate::catalog::discover::list_project;
use crate::catalog::list::resolve_scope;
use crate::chain::ResolveOptions;
use crate::error::{Error, Result};
use crate::index::Store;
use crate::index::progress::Tracker;
use crate::transcript::id::Id;

/// One message that matches a query.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    /// The session (file stem).
    pub session_id: String,
    /// The transcript.
    pub path: PathBuf,
    /// The message's uuid: `resume <session> --at <uuid>` resumes there.
    pub uuid: String,
    /// `user`, `assistant` or `system`.
    pub role: String,
    /// `timestamp` of the message.
    pub timestamp: Option<String>,
    /// BM25 score (higher is better).
    pub score: f32,
    /// Whether the message is on the session's resumed chain (else on a dead branch, or a
    /// sub-agent's message when `sidechain`).
    pub on_chain: bool,
    /// A sub-agent's message (inline in the session file).
    pub sidechain: bool,
    /// A fragment around the matches, with matches between `[` and `]`.
    pub snippet: String,
}

/// Where to search and how many hits to return.
#[derive(Debug, Clone, Default)]
pub struct SearchOptions {
    /// A project (working directory, project directory or key); `None` with `all == false`
    /// means the current directory's project.
    pub project: Option<PathBuf>,
    /// Every project.
    pub all: bool,
    /// At most this many hits (0: 20).
    pub limit: usize,
}

/// What each indexed transcript looked like when its documents were committed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FileMark {
    pub dev: u64,
    pub ino: u64,
    /// Modification and status-change times (ns) when indexed: an in-place edit moves them.
    pub mtime_ns: i128,
    pub ctime_ns: i128,
    /// Bytes indexed (up to the last complete line).
    pub len: u64,
    /// blake3 of up to 4 KiB before `len`, hex.
    pub tail_hash: String,
}

/// The commit payload: transcript path → its mark.
type Marks = BTreeMap<String, FileMark>;

struct Fields {
    path: Field,
    uuid: Field,
    role: Field,
    timestamp: Field,
    offset: Field,
    len: Field,
    sidechain: Field,
    text: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let f = Fields {
        path: b.add_text_field("path", STRING | STORED),
        uuid: b.add_text_field("uuid", STORED),
        role: b.add_text_field("role", STORED),
        timestamp: b.add_text_field("timestamp", STORED),
        offset: b.add_u64_field("offset", STORED | INDEXED),
        len: b.add_u64_field("len", STORED),
        sidechain: b.add_u64_field("sidechain", STORED),
        text: b.add_text_field("text", TEXT),
    };
    (b.build(), f)
}

fn search_err(dir: &Path, e: impl std::fmt::Display) -> Error {
    Error::Index {
        path: dir.to_path_buf(),
        source: crate::index::state::IndexFault::Other(format!("search index: {e}")),
    }
}

/// The search index of one project directory.
struct ProjectIndex {
    dir: PathBuf,
    index: Index,
    fields: Fields,
}

impl ProjectIndex {
    fn open(store: &Store, project_dir: &Path) -> Result<ProjectIndex> {
        let dir = store.search_dir(project_dir);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let (schema, fields) = schema();
        let mmap =
            tantivy::directory::MmapDirectory::open(&dir).map_err(|e| search_err(&dir, e))?;
        let index = if let Ok(i) = Index::open_or_create(mmap, schema.clone()) {
            i
        } else {
            // Another schema or a damaged index: it is a cache, start over.
            std::fs::remove_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
            std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
            Index::create_in_dir(&dir, schema).map_err(|e| search_err(&dir, e))?
        };
        Ok(ProjectIndex { dir, index, fields })
    }

    fn marks(&self) -> Marks {
        self.index
            .load_metas()
            .ok()
            .and_then(|m| m.payload)
            .and_then(|p| serde_json::from_str(&p).ok())
            .unwrap_or_default()
    }

    /// Brings the documents up to date with `sessions` (the transcripts of `project_dir`),
    /// reporting the bytes read as one piece of work on `project_dir`
    /// ([`crate::sidecar::set_progress`]).
    fn catch_up(&self, project_dir: &Path, sessions: &[PathBuf]) -> Result<SearchCatchUp> {
        let mut marks = self.marks();
        let mut plan = Vec::new();
        let live: HashSet<String> = sessions.iter().map(|p| key(p)).collect();
        let gone: Vec<String> = marks
            .keys()
            .filter(|k| !live.contains(*k))
            .cloned()
            .collect();
        for p in sessions {
            // Unreadable now: keep what was indexed, try again next time.
            if let Ok(step) = tail::plan(p, marks.get(&key(p)))
                && !matches!(step, tail::Plan::Unchanged)
            {
                plan.push((p, step));
            }
        }
        let mut done = SearchCatchUp {
            files: sessions.len(),
            dropped: gone.len(),
            ..SearchCatchUp::default()
        };
        if plan.is_empty() && gone.is_empty() {
            return Ok(done);
        }
        let total = plan
            .iter()
            .map(|(p, step)| {
                let from = match step {
                    tail::Plan::Append { from } => *from,
                    _ => 0,
                };
                std::fs::metadata(p).map_or(0, |m| m.len().saturating_sub(from))
            })
            .sum();
        let mut progress = Tracker::new(project_dir, total);
        let mut writer: IndexWriter = self
            .index
            .writer_with_num_threads(1, 50_000_000)
            .map_err(|e| search_err(&self.dir, e))?;
        for k in &gone {
            writer.delete_term(Term::from_field_text(self.fields.path, k));
            marks.remove(k);
        }
        for (p, step) in &plan {
            let k = key(p);
            let from = if let tail::Plan::Append { from } = step {
                done.appended += 1;
                *from
            } else {
                done.reindexed += 1;
                writer.delete_term(Term::from_field_text(self.fields.path, &k));
                0
            };
            let f = &self.fields;
            let mark = tail::read_messages(p, from, &mut progress, |m| {
                writer
                    .add_document(doc!(
                        f.path => k.as_str(),
                        f.uuid => m.uuid.as_str(),
                        f.role => m.role,
                        f.timestamp => m.timestamp.clone().unwrap_or_default(),
                        f.offset => m.offset,
                        f.len => m.len,
                        f.sidechain => u64::from(m.sidechain),
                        f.text => m.text.as_str(),
                    ))
                    .map(|_| ())
                    .map_err(|e| search_err(&self.dir, e))
            })?;
            marks.insert(k, mark);
        }
        let payload = serde_json::to_string(&marks).unwrap_or_default();
        let mut prepared = writer
            .prepare_commit()
            .map_err(|e| search_err(&self.dir, e))?;
        prepared.set_payload(&payload);
        prepared.commit().map_err(|e| search_err(&self.dir, e))?;
        writer
            .wait_merging_threads()
            .map_err(|e| search_err(&self.dir, e))?;
        progress.finish();
        Ok(done)
    }
}

fn key(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// What bringing the search index up to date did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SearchCatchUp {
    /// Transcripts in scope.
    pub files: usize,
    /// Transcripts indexed from zero (new, rewritten, replaced).
    pub reindexed: usize,
    /// Transcripts whose new lines only were indexed.
    pub appended: usize,
    /// Transcripts gone from disk whose documents were deleted.
    pub dropped: usize,
}

/// Opens and catches up the search index of every project in scope, then calls `each`.
fn each_project(
    store: &Store,
    claude_dir: &Path,
    opts: &SearchOptions,
    mut each: impl FnMut(&ProjectIndex, SearchCatchUp) -> Result<()>,
) -> Result<()> {
    let scope = resolve_scope(claude_dir, opts.project.as_deref(), opts.all)?;
    for d in &scope.dirs {
        // An unreadable project folder is skipped, as listings skip it.
        let Ok(listing) = list_project(&d.path) else {
            continue;
        };
        let pi = ProjectIndex::open(store, &d.path)?;
        let done = pi.catch_up(&d.path, &listing.sessions)?;
        each(&pi, done)?;
    }
    Ok(())
}

/// Brings the search index of every project in scope up to date with its transcripts
/// (`search` does this first).
pub fn search_catch_up(
    store: &Store,
    claude_dir: &Path,
    opts: &SearchOptions,
) -> Result<SearchCatchUp> {
    let mut total = SearchCatchUp::default();
    each_project(store, claude_dir, opts, |_, c| {
        total.files += c.files;
        total.reindexed += c.reindexed;
        total.appended += c.appended;
        total.dropped += c.dropped;
        Ok(())
    })?;
    Ok(total)
}

/// Searches the messages of the sessions in scope for `query` (tantivy query syntax: words,
/// `"phrases"`, `AND`/`OR`, `-excluded`), catching the search index up first.
pub fn search(
    store: &Store,
    claude_dir: &Path,
    query: &str,
    opts: &SearchOptions,
) -> Result<Vec<SearchHit>> {
    let limit = if opts.limit == 0 { 20 } else { opts.limit };
    let mut hits = Vec::new();
    each_project(store, claude_dir, opts, |pi, _| {
        hits.extend(pi.query(query, limit)?);
        Ok(())
    })?;
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    hits.truncate(limit);
    mark_chains(store, &mut hits);
    Ok(hits)
}

/// The sessions with at least one message matching `query` (for `ls --search`).
pub fn matching_sessions(
    store: &Store,
    claude_dir: &Path,
    query: &str,
    opts: &SearchOptions,
) -> Result<HashSet<PathBuf>> {
    let mut out = HashSet::new();
    each_project(store, claude_dir, opts, |pi, _| {
        out.extend(pi.paths_matching(query, 100_000)?);
        Ok(())
    })?;
    Ok(out)
}

impl ProjectIndex {
    /// Parses leniently: a stray quote or operator is read as text, never an error.
    fn parse(&self, query: &str) -> Box<dyn tantivy::query::Query> {
        let mut parser = QueryParser::for_index(&self.index, vec![self.fields.text]);
        parser.set_conjunction_by_default();
        parser.parse_query_lenient(query).0
    }

    fn query(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>> {
        let err = |e| search_err(&self.dir, e);
        let reader = self.index.reader().map_err(err)?;
        let searcher = reader.searcher();
        let q = self.parse(query);
        let top = searcher
            .search(&q, &TopDocs::with_limit(limit).order_by_score())
            .map_err(err)?;
        let snippets = SnippetGenerator::create(&searcher, &*q, self.fields.text).map_err(err)?;
        let mut out = Vec::new();
        for (score, addr) in top {
            let d: TantivyDocument = searcher.doc(addr).map_err(err)?;
            let s = |f: Field| {
                d.get_first(f)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_owned()
            };
            let n = |f: Field| d.get_first(f).and_then(|v| v.as_u64()).unwrap_or_default();
            let path = PathBuf::from(s(self.fields.path));
            // Snippets are cut from the line itself, read again by offset.
            let text = tail::message_text(&path, n(self.fields.offset), n(self.fields.len))
                .unwrap_or_default();
            let fragment = marked(&snippets.snippet(&text));
            out.push(SearchHit {
                session_id: path
                    .file_stem()
                    .map(|x| x.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                uuid: s(self.fields.uuid),
                role: s(self.fields.role),
                timestamp: Some(s(self.fields.timestamp)).filter(|t| !t.is_empty()),
                score,
                on_chain: false,
                sidechain: n(self.fields.sidechain) == 1,
                snippet: fragment,
                path,
            });
        }
        Ok(out)
    }

    fn paths_matching(&self, query: &str, limit: usize) -> Result<HashSet<PathBuf>> {
        let err = |e| search_err(&self.dir, e);
        let reader = self.index.reader().map_err(err)?;
        let searcher = reader.searcher();
        let q = self.parse(query);
        let top = searcher
            .search(&q, &TopDocs::with_limit(limit).order_by_score())
            .map_err(err)?;
        let mut out = HashSet::new();
        for (_, addr) in top {
            let d: TantivyDocument = searcher.doc(addr).map_err(err)?;
            if let Some(p) = d.get_first(self.fields.path).and_then(|v| v.as_str()) {
                out.insert(PathBuf::from(p));
            }
        }
        Ok(out)
    }
}

/// Marks each hit on or off its session's resumed chain (one resolve per session).
fn mark_chains(store: &Store, hits: &mut [SearchHit]) {
    let mut chains: HashMap<PathBuf, HashSet<Id>> = HashMap::new();
    for h in hits.iter_mut() {
        let chain = chains.entry(h.path.clone()).or_insert_with(|| {
            store
                .resolve(&h.path, ResolveOptions::default())
                .map(|a| a.resolution.chain.iter().map(|l| l.uuid).collect())
                .unwrap_or_default()
        });
        h.on_chain = chain.contains(&Id::from_text(&h.uuid));
    }
}

/// A snippet's fragment with its matches between `[` and `]`, on one line.
fn marked(snip: &tantivy::snippet::Snippet) -> String {
    let frag = snip.fragment();
    let mut out = String::with_capacity(frag.len() + 8);
    let mut last = 0;
    for r in snip.highlighted() {
        if r.start < last || r.end > frag.len() {
            continue;
        }
        out.push_str(&frag[last..r.start]);
        out.push('[');
        out.push_str(&frag[r.clone()]);
        out.push(']');
        last = r.end;
    }
    out.push_str(&frag[last..]);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}
