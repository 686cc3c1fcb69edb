//! Full-text search over every message of a project's transcripts (`chainlog search`).
//!
//! # Design
//! One [tantivy](https://docs.rs/tantivy) index per project directory, beside the redb
//! sidecar (`<index dir>/search/<project>-<hash>/`). It is a derived, disposable cache like
//! the redb index: delete it and the next search rebuilds it.
//!
//! - **A document per message** (user, assistant, and `local_command` system entries): its
//!   searchable text (`search/text.rs`: texts, thinking, tool names and inputs, tool
//!   results, read from the line in one pass) indexed as words and their frequencies, and where its line is (the
//!   transcript's number, offset and length, as fast fields). Nothing is stored and no
//!   position is kept (they were 85 % of the index): the transcript is the store, and a hit's
//!   uuid, role, time and snippet are read from its line. A phrase is asked as its words and
//!   the messages found are checked with the phrase itself (`search/query.rs`).
//! - **Kept current by tailing**, as the redb index is: the commit payload records, per
//!   transcript, its identity, the indexed length and a hash of the bytes just before it, in
//!   the same atomic commit as the documents. A grown file adds only its new lines; any other
//!   change (rewrite, truncation, another file at the path) deletes the file's documents and
//!   indexes it again; a vanished file's documents are deleted.
//! - **Progress**: a catch-up reports the bytes it reads in all the project's transcripts as one
//!   piece of work to the observer of [`crate::sidecar::set_progress`] (a first build over a big
//!   tree takes seconds; the command shows a bar).
//! - **Ranking** is BM25 over the text. Each hit says whether its message is on the session's
//!   resume view or off it (a dead branch, before a compaction): read from the view the
//!   redb index stores (`Sidecars::on_view`: the few blocks whose lines may hold the hits),
//!   which a search stores when none is stored for the file as it is.
//! - **Damage** is never a failure: an index not closed by us is checked before it is read,
//!   a tantivy error or panic starts it over, and the query is answered in the same call
//!   (`search/repair.rs`). `chainlog rebuild` drops and builds again the indexes it finds ([`Store::search_rebuild`](crate::Store::search_rebuild)).

mod query;
mod repair;
mod tail;
mod text;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Bound;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, RangeQuery};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STRING, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::snippet::SnippetGenerator;
use tantivy::{Index, IndexWriter, ReloadPolicy, Searcher, TantivyError, Term, doc};

use crate::catalog::discover::list_project;
use crate::catalog::list::resolve_scope;
use crate::error::{Error, Result};
use crate::id::Id;
use crate::index::Sidecars;
use crate::index::db::progress::Tracker;
use crate::transcript::time::parse_millis;
use crate::transcript::usage::{DayRange, day_of};
use query::Relaxed;
use repair::{Fault, guarded};

/// The bytes to index from which a catch-up uses two indexing threads.
const BIG_CATCH_UP: u64 = 16 << 20;

/// The tantivy indexing threads for a catch-up of `bytes`: tokenising is most of a build, so
/// a big one gets a second thread beside the one reading the lines (a segment each); a small
/// one keeps one thread and one segment.
fn indexing_threads(bytes: u64) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    if bytes >= BIG_CATCH_UP && cores > 1 {
        2
    } else {
        1
    }
}

/// How long a catch-up waits for the index's writer lock held by another writer.
const WRITER_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

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
    /// Where the message's line starts in the transcript.
    pub offset: u64,
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
    /// Only messages of these UTC days (`search --since/--until`): a condition of the query
    /// itself, so the limit counts only messages in range.
    pub days: DayRange,
}

/// What each indexed transcript looked like when its documents were committed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FileMark {
    /// The transcript's number in this index: its documents' `file`.
    pub id: u64,
    pub dev: u64,
    pub ino: u64,
    /// Modification and status-change times (ns) when indexed: an in-place edit moves them.
    pub mtime_ns: i128,
    pub ctime_ns: i128,
    /// Bytes indexed (up to the last complete line).
    pub len: u64,
    /// blake3 of up to 4 KiB before `len`, hex.
    pub tail_hash: String,
    /// When the file was opened to be read (ns since the epoch): times that had settled
    /// by then prove a file with the same stat unchanged without reading it.
    #[serde(default)]
    pub checked_at_ns: i128,
}

/// The commit payload: transcript path → its mark.
type Marks = BTreeMap<String, FileMark>;

struct Fields {
    /// The transcript's number ([`FileMark::id`]), indexed to delete its documents.
    file: Field,
    /// The message's UTC day (`YYYY-MM-DD`), indexed for `--since/--until`.
    day: Field,
    /// Where the message's line is: everything a hit shows is read from it.
    offset: Field,
    len: Field,
    /// The searchable text: words and their frequencies, no positions (phrases are checked
    /// on the messages found, [`query::Relaxed`]), nothing stored.
    text: Field,
}

/// Messages read and checked together when a widened query's answers are checked.
const CHECKED_AT_ONCE: usize = 1024;

/// Names of the fast fields read for each hit.
const FILE: &str = "file";
const OFFSET: &str = "offset";
const LEN: &str = "len";

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let words = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer("default")
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let f = Fields {
        file: b.add_u64_field(FILE, INDEXED | FAST),
        day: b.add_text_field("day", STRING),
        offset: b.add_u64_field(OFFSET, FAST),
        len: b.add_u64_field(LEN, FAST),
        text: b.add_text_field("text", words),
    };
    (b.build(), f)
}

/// The search index of one project directory.
struct ProjectIndex {
    dir: PathBuf,
    index: Index,
    fields: Fields,
    /// Deleted and created empty when opened (damaged, or dropped by a rebuild).
    started_over: bool,
    /// The marks of the last commit, once read (or written by this catch-up): the payload of
    /// a project of many transcripts is megabytes of JSON.
    read_marks: std::cell::RefCell<Option<Marks>>,
}

impl ProjectIndex {
    /// Opens the index of `project_dir`, checked unless its clean mark matches its files; a
    /// damaged one (or one of another schema) is started over.
    fn open(store: &Sidecars, project_dir: &Path) -> Result<ProjectIndex> {
        let dir = store.search_dir(project_dir);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let check = !repair::is_clean(&dir);
        match guarded(|| Self::load(&dir, check)) {
            Ok(pi) => Ok(pi),
            Err(Fault::Other(e)) => Err(e),
            Err(Fault::Index(_)) => Self::start_over(&dir, false),
        }
    }

    /// Opens (or creates) the index in `dir`; `check`: [`repair::check`]s it first, and marks
    /// it clean if sound.
    fn load(dir: &Path, check: bool) -> std::result::Result<ProjectIndex, Fault> {
        let (schema, fields) = schema();
        let mmap = tantivy::directory::MmapDirectory::open(dir)
            .map_err(|e| Fault::Other(repair::error(dir, e)))?;
        let index = Index::open_or_create(mmap, schema)?;
        if check {
            repair::check(&index)?;
            repair::mark_clean(dir, &index)?;
        }
        Ok(ProjectIndex {
            dir: dir.to_path_buf(),
            index,
            fields,
            started_over: false,
            read_marks: std::cell::RefCell::default(),
        })
    }

    /// Starts the index in `dir` over after a fault, holding its writer lock: checks it again
    /// (a fault may be another process's commit seen half-way) and, if damaged or `force`,
    /// deletes it and creates it empty.
    fn start_over(dir: &Path, force: bool) -> Result<ProjectIndex> {
        let lock = repair::writer_lock(dir).map_err(|f| fault_error(dir, f))?;
        if !force && let Ok(pi) = guarded(|| Self::load(dir, true)) {
            return Ok(pi);
        }
        repair::wipe(dir)?;
        let pi = guarded(|| Self::load(dir, false)).map_err(|f| fault_error(dir, f));
        drop(lock);
        let mut pi = pi?;
        pi.started_over = true;
        Ok(pi)
    }

    fn marks(&self) -> Marks {
        self.with_marks(Marks::clone)
    }

    /// `read` of the marks of the last commit, read from its payload once.
    fn with_marks<T>(&self, read: impl FnOnce(&Marks) -> T) -> T {
        read(self.read_marks.borrow_mut().get_or_insert_with(|| {
            self.index
                .load_metas()
                .ok()
                .and_then(|m| m.payload)
                .and_then(|p| serde_json::from_str(&p).ok())
                .unwrap_or_default()
        }))
    }

    /// Brings the documents up to date with `sessions` (the transcripts of `project_dir`),
    /// reporting the bytes read as one piece of work on `project_dir`
    /// ([`crate::sidecar::set_progress`]).
    fn catch_up(
        &self,
        project_dir: &Path,
        sessions: &[PathBuf],
    ) -> std::result::Result<SearchCatchUp, Fault> {
        let mut marks = self.marks();
        let mut plan = Vec::new();
        let live: HashSet<String> = sessions.iter().map(|p| key(p)).collect();
        let gone: Vec<String> = marks
            .keys()
            .filter(|k| !live.contains(*k))
            .cloned()
            .collect();
        let mut done = SearchCatchUp {
            files: sessions.len(),
            dropped: gone.len(),
            ..SearchCatchUp::default()
        };
        for p in sessions {
            match tail::plan(p, marks.get(&key(p))) {
                Ok(tail::Plan::Unchanged { compared }) => done.compared += usize::from(compared),
                Ok(step) => plan.push((p, step)),
                // Unreadable now: keep what was indexed, try again next time.
                Err(e) => done.skipped.push(Error::io(p, e)),
            }
        }
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
        // The writer reads the old segments on its own threads (to apply deletes, to merge),
        // where a panic aborts the process: open them here first, where one is caught.
        drop(self.searcher()?);
        let mut progress = Tracker::new(project_dir, total);
        // Not clean until committed.
        repair::unmark(&self.dir)?;
        done.threads = indexing_threads(total);
        let mut writer: IndexWriter = self.writer(done.threads)?;
        let file_term = |id: u64| Term::from_field_u64(self.fields.file, id);
        let mut next = self.drop_gone(&writer, &mut marks, &gone);
        for (p, step) in &plan {
            let k = key(p);
            let old = marks.get(&k).map(|m| m.id);
            let from = if let tail::Plan::Append { from } = step {
                done.appended += 1;
                *from
            } else {
                done.reindexed += 1;
                if let Some(id) = old {
                    writer.delete_term(file_term(id));
                }
                0
            };
            let id = old.unwrap_or_else(|| {
                next += 1;
                next - 1
            });
            let f = &self.fields;
            let mut failed = None;
            let mark = tail::read_messages(p, from, &mut progress, |m| {
                writer
                    .add_document(doc!(
                        f.file => id,
                        f.day => day_of(parse_millis(m.timestamp.as_deref())),
                        f.offset => m.offset,
                        f.len => m.len,
                        f.text => m.text,
                    ))
                    .map(|_| ())
                    .map_err(|e| {
                        let said = repair::error(&self.dir, e.to_string());
                        failed = Some(e);
                        said
                    })
            });
            if let Some(e) = failed {
                return Err(e.into());
            }
            match mark {
                Ok(mark) => {
                    marks.insert(k, FileMark { id, ..mark });
                }
                // Unreadable (permissions, I/O): what was added of it goes, and it is indexed
                // from zero once it can be read; the search goes on without it.
                Err(e) => {
                    writer.delete_term(file_term(id));
                    marks.remove(&k);
                    done.skipped.push(e);
                }
            }
        }
        let payload = serde_json::to_string(&marks).unwrap_or_default();
        let mut prepared = writer.prepare_commit()?;
        prepared.set_payload(&payload);
        prepared.commit()?;
        *self.read_marks.borrow_mut() = Some(marks);
        writer.wait_merging_threads()?;
        repair::mark_clean(&self.dir, &self.index)?;
        progress.finish();
        Ok(done)
    }
}

impl ProjectIndex {
    /// Deletes the documents of the transcripts `gone` and their marks; returns the number
    /// the next new transcript gets.
    fn drop_gone(&self, writer: &IndexWriter, marks: &mut Marks, gone: &[String]) -> u64 {
        for k in gone {
            if let Some(m) = marks.remove(k) {
                writer.delete_term(Term::from_field_u64(self.fields.file, m.id));
            }
        }
        marks.values().map(|m| m.id + 1).max().unwrap_or(0)
    }
}

fn key(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// What bringing the search index up to date did.
#[derive(Debug, Default)]
pub struct SearchCatchUp {
    /// Transcripts in scope.
    pub files: usize,
    /// Transcripts indexed from zero (new, rewritten, replaced).
    pub reindexed: usize,
    /// Transcripts whose new lines only were indexed.
    pub appended: usize,
    /// Unchanged transcripts opened to compare the bytes before their indexed end (their
    /// times had not settled when they were indexed); the others were proved unchanged by
    /// their `stat` alone.
    pub compared: usize,
    /// Transcripts gone from disk whose documents were deleted.
    pub dropped: usize,
    /// Projects whose search index was deleted and built again from zero: found damaged (or
    /// unreadable by this version), or dropped by [`Store::search_rebuild`](crate::Store::search_rebuild).
    pub started_over: usize,
    /// Transcripts that could not be read: left out of this answer (their documents too),
    /// indexed once they can be read.
    pub skipped: Vec<Error>,
    /// The most tantivy indexing threads a project's catch-up used: two when it had 16 MiB or
    /// more to index and the machine two cores or more, else one; 0 when nothing was indexed.
    pub threads: usize,
}

impl SearchCatchUp {
    fn add(&mut self, c: SearchCatchUp) {
        self.files += c.files;
        self.reindexed += c.reindexed;
        self.appended += c.appended;
        self.compared += c.compared;
        self.dropped += c.dropped;
        self.started_over += c.started_over;
        self.skipped.extend(c.skipped);
        self.threads = self.threads.max(c.threads);
    }
}

/// The answer of [`Store::search`](crate::Store::search): the hits, best first, and the
/// transcripts that could not be read (the search went on without them).
#[derive(Debug, Default)]
pub struct Found {
    /// The hits, best first.
    pub hits: Vec<SearchHit>,
    /// Transcripts left out: unreadable now.
    pub skipped: Vec<Error>,
    /// Sessions of the hits whose resume view was resolved to tell which hits are on it (no
    /// view was stored for their current state; it is now): the others were answered by a
    /// few reads of the stored view.
    pub resolved: usize,
}

/// The error a fault of the index in `dir` is said as.
fn fault_error(dir: &Path, f: Fault) -> Error {
    match f {
        Fault::Index(why) => repair::error(dir, why),
        Fault::Other(e) => e,
    }
}

/// Catches the search index of `project_dir` up with `sessions` (its transcripts), then reads
/// it with `read`. A fault of the index starts it over and asks again: the answer comes from a
/// sound index in the same call.
fn answer<T>(
    store: &Sidecars,
    project_dir: &Path,
    sessions: &[PathBuf],
    read: &mut impl FnMut(&ProjectIndex) -> std::result::Result<T, Fault>,
) -> Result<(T, SearchCatchUp)> {
    let mut pi = ProjectIndex::open(store, project_dir)?;
    let mut started_over = pi.started_over;
    let mut attempt = 0;
    loop {
        let r = guarded(|| {
            let done = pi.catch_up(project_dir, sessions)?;
            Ok((read(&pi)?, done))
        });
        match r {
            Ok((t, mut done)) => {
                done.started_over = usize::from(started_over);
                return Ok((t, done));
            }
            Err(Fault::Other(e)) => return Err(e),
            Err(Fault::Index(why)) if attempt == 2 => return Err(repair::error(&pi.dir, why)),
            Err(Fault::Index(_)) => {
                let dir = pi.dir.clone();
                drop(pi);
                // The second time, whatever a check says.
                pi = ProjectIndex::start_over(&dir, attempt > 0)?;
                started_over |= pi.started_over;
                attempt += 1;
            }
        }
    }
}

/// Opens and catches up the search index of every project in scope, and reads each with
/// `read` ([`answer`]).
fn each_project<T>(
    store: &Sidecars,
    claude_dir: &Path,
    opts: &SearchOptions,
    mut read: impl FnMut(&ProjectIndex) -> std::result::Result<T, Fault>,
) -> Result<Vec<(T, SearchCatchUp)>> {
    let scope = resolve_scope(claude_dir, opts.project.as_deref(), opts.all)?;
    let mut out = Vec::new();
    for d in &scope.dirs {
        // An unreadable project folder is skipped, as listings skip it.
        let Ok(listing) = list_project(&d.path) else {
            continue;
        };
        out.push(answer(store, &d.path, &listing.sessions, &mut read)?);
    }
    Ok(out)
}

/// Drops the search index of each of `project_dirs` that has one and builds it again from the
/// project's transcripts (`chainlog rebuild`); a project never searched gets none.
pub(crate) fn rebuild(store: &Sidecars, project_dirs: &[PathBuf]) -> Result<SearchCatchUp> {
    let mut total = SearchCatchUp::default();
    let mut seen = HashSet::new();
    for d in project_dirs {
        let dir = store.search_dir(d);
        if !dir.is_dir() || !seen.insert(dir.clone()) {
            continue;
        }
        let listing = list_project(d)?;
        drop(ProjectIndex::start_over(&dir, true)?);
        let ((), mut done) = answer(store, d, &listing.sessions, &mut |_| Ok(()))?;
        done.started_over = 1;
        total.add(done);
    }
    Ok(total)
}

/// Brings the search index of every project in scope up to date with its transcripts
/// (`search` does this first).
pub(crate) fn search_catch_up(
    store: &Sidecars,
    claude_dir: &Path,
    opts: &SearchOptions,
) -> Result<SearchCatchUp> {
    let mut total = SearchCatchUp::default();
    for ((), c) in each_project(store, claude_dir, opts, |_| Ok(()))? {
        total.add(c);
    }
    Ok(total)
}

/// Searches the messages of the sessions in scope for `query` (tantivy query syntax: words,
/// `"phrases"`, `AND`/`OR`, `-excluded`), catching the search index up first.
pub(crate) fn search(
    store: &Sidecars,
    claude_dir: &Path,
    query: &str,
    opts: &SearchOptions,
) -> Result<Found> {
    let limit = if opts.limit == 0 { 20 } else { opts.limit };
    let mut hits = Vec::new();
    let mut skipped = Vec::new();
    for (found, done) in each_project(store, claude_dir, opts, |pi| {
        pi.query(query, &opts.days, limit)
    })? {
        hits.extend(found);
        skipped.extend(done.skipped);
    }
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    hits.truncate(limit);
    let resolved = mark_chains(store, &mut hits);
    Ok(Found {
        hits,
        skipped,
        resolved,
    })
}

/// The sessions with at least one message matching `query` (for `ls --search`).
pub(crate) fn matching_sessions(
    store: &Sidecars,
    claude_dir: &Path,
    query: &str,
    opts: &SearchOptions,
) -> Result<HashSet<PathBuf>> {
    let mut out = HashSet::new();
    for (found, _) in each_project(store, claude_dir, opts, |pi| {
        pi.paths_matching(query, &opts.days, 100_000)
    })? {
        out.extend(found);
    }
    Ok(out)
}

impl ProjectIndex {
    /// Parses leniently: a stray quote or operator is read as text, never an error; widened
    /// when it holds a phrase ([`Relaxed`]). Messages outside `days` do not match.
    fn parse(&self, query: &str, days: &DayRange) -> Relaxed {
        let mut r = Relaxed::parse(&self.index, self.fields.text, query);
        if days.since.is_none() && days.until.is_none() {
            return r;
        }
        let bound = |day: &Option<String>| {
            day.as_deref().map_or(Bound::Unbounded, |d| {
                Bound::Included(Term::from_field_text(self.fields.day, d))
            })
        };
        let range = RangeQuery::new(bound(&days.since), bound(&days.until));
        r.query = Box::new(BooleanQuery::new(vec![
            (Occur::Must, r.query),
            (Occur::Must, Box::new(range)),
        ]));
        r
    }

    /// The index's writer, indexing on `threads` threads. Its lock is held by another
    /// writer (another process, or one of this process's being dropped): waited for up to
    /// [`WRITER_WAIT`], then busy, not damaged.
    fn writer(&self, threads: usize) -> std::result::Result<IndexWriter, Fault> {
        let started = std::time::Instant::now();
        loop {
            match self.index.writer_with_num_threads(threads, 50_000_000) {
                Ok(w) => return Ok(w),
                Err(TantivyError::LockFailure(..)) if started.elapsed() < WRITER_WAIT => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(e @ TantivyError::LockFailure(..)) => {
                    return Err(Fault::Other(repair::error(&self.dir, e)));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// A searcher on the last commit. Searches run on the calling thread (the index's default
    /// executor), where a panic is caught ([`guarded`]); nothing watches for new commits.
    fn searcher(&self) -> std::result::Result<Searcher, Fault> {
        let reader = self
            .index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        Ok(reader.searcher())
    }

    /// The best `limit` documents `q` finds: score, transcript number and line.
    fn docs(
        searcher: &Searcher,
        q: &dyn Query,
        limit: usize,
    ) -> std::result::Result<Vec<(f32, u64, u64, u64)>, Fault> {
        let top = searcher.search(q, &TopDocs::with_limit(limit).order_by_score())?;
        let mut columns = HashMap::new();
        let mut out = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let cols = match columns.entry(addr.segment_ord) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    let ff = searcher.segment_reader(addr.segment_ord).fast_fields();
                    e.insert((ff.u64(FILE)?, ff.u64(OFFSET)?, ff.u64(LEN)?))
                }
            };
            let at = |c: &tantivy::columnar::Column<u64>| c.first(addr.doc_id).unwrap_or_default();
            out.push((score, at(&cols.0), at(&cols.1), at(&cols.2)));
        }
        Ok(out)
    }

    /// The best `limit` messages `r` finds, each read from its line (what a hit shows), those
    /// a widened query found checked with the user's query ([`Relaxed::keep`]), a chunk of
    /// [`CHECKED_AT_ONCE`] at a time (memory follows the chunk, not the matches). With
    /// `one_per_file`, a transcript that has a message kept is not read again.
    fn messages(
        &self,
        searcher: &Searcher,
        r: &Relaxed,
        limit: usize,
        one_per_file: bool,
    ) -> std::result::Result<Vec<(f32, PathBuf, tail::Found)>, Fault> {
        // The marks are read in place: a project of many transcripts copies none of its paths.
        self.with_marks(|marks| {
            let paths: HashMap<u64, &str> = marks.iter().map(|(k, m)| (m.id, k.as_str())).collect();
            Self::messages_of(searcher, r, limit, one_per_file, &paths)
        })
    }

    /// [`Self::messages`] with the transcripts' paths by number.
    fn messages_of(
        searcher: &Searcher,
        r: &Relaxed,
        limit: usize,
        one_per_file: bool,
        paths: &HashMap<u64, &str>,
    ) -> std::result::Result<Vec<(f32, PathBuf, tail::Found)>, Fault> {
        let mut files: HashMap<u64, Option<std::fs::File>> = HashMap::new();
        // A widened query asks for more than it keeps, and for more again until it has
        // `limit` or the index has no more.
        let mut asked = if r.widened() { limit * 4 + 16 } else { limit };
        let mut seen = 0;
        let mut kept = Vec::new();
        let mut kept_files = HashSet::new();
        loop {
            let docs = Self::docs(searcher, &*r.query, asked)?;
            for chunk in docs[seen.min(docs.len())..].chunks(CHECKED_AT_ONCE) {
                let mut read = Vec::with_capacity(chunk.len());
                for &(score, id, offset, len) in chunk {
                    let Some(path) = paths.get(&id) else { continue };
                    if one_per_file && kept_files.contains(&id) {
                        continue;
                    }
                    let file = files
                        .entry(id)
                        .or_insert_with(|| std::fs::File::open(path).ok());
                    // A line that no longer reads as a message (the file changed since the
                    // catch-up) is no hit.
                    if let Some(m) = file.as_ref().and_then(|f| tail::message_at(f, offset, len)) {
                        read.push((score, id, *path, m));
                    }
                }
                let texts: Vec<&str> = read.iter().map(|(.., m)| m.text.as_str()).collect();
                // When the check cannot run, what the index found is the answer.
                let keep = r.keep(&texts).unwrap_or_else(|| vec![true; texts.len()]);
                for ((score, id, path, m), k) in read.into_iter().zip(keep) {
                    if k && kept.len() < limit && (!one_per_file || kept_files.insert(id)) {
                        kept.push((score, PathBuf::from(path), m));
                    }
                }
            }
            seen = docs.len();
            if kept.len() >= limit || docs.len() < asked {
                return Ok(kept);
            }
            asked = asked.saturating_mul(4);
        }
    }

    fn query(
        &self,
        query: &str,
        days: &DayRange,
        limit: usize,
    ) -> std::result::Result<Vec<SearchHit>, Fault> {
        let searcher = self.searcher()?;
        let r = self.parse(query, days);
        let snippets = SnippetGenerator::create(&searcher, &*r.query, self.fields.text)?;
        let mut out = Vec::new();
        for (score, path, m) in self.messages(&searcher, &r, limit, false)? {
            out.push(SearchHit {
                session_id: path
                    .file_stem()
                    .map(|x| x.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                snippet: marked(&snippets.snippet(&m.text)),
                uuid: m.uuid,
                role: m.role.to_owned(),
                timestamp: m.timestamp,
                score,
                on_chain: false,
                sidechain: m.sidechain,
                offset: m.offset,
                path,
            });
        }
        Ok(out)
    }

    fn paths_matching(
        &self,
        query: &str,
        days: &DayRange,
        limit: usize,
    ) -> std::result::Result<HashSet<PathBuf>, Fault> {
        let searcher = self.searcher()?;
        let r = self.parse(query, days);
        if r.widened() {
            return Ok(self
                .messages(&searcher, &r, limit, true)?
                .into_iter()
                .map(|(_, p, _)| p)
                .collect());
        }
        let ids: HashSet<u64> = Self::docs(&searcher, &*r.query, limit)?
            .into_iter()
            .map(|(_, id, _, _)| id)
            .collect();
        Ok(self.with_marks(|marks| {
            marks
                .iter()
                .filter(|(_, m)| ids.contains(&m.id))
                .map(|(k, _)| PathBuf::from(k))
                .collect()
        }))
    }
}

/// Marks each hit on or off its session's resume view, one question per session
/// ([`Sidecars::on_view`]: the stored view answers); returns how many sessions had no view
/// stored for their current state (resolved, and stored for the next search).
fn mark_chains(store: &Sidecars, hits: &mut [SearchHit]) -> usize {
    let mut sessions: BTreeMap<PathBuf, Vec<usize>> = BTreeMap::new();
    for (i, h) in hits.iter().enumerate() {
        sessions.entry(h.path.clone()).or_default().push(i);
    }
    let mut resolved = 0;
    for (path, at) in sessions {
        let lines: Vec<(u64, Id)> = at
            .iter()
            .map(|&i| (hits[i].offset, Id::from_text(&hits[i].uuid)))
            .collect();
        let (on, stored) = store
            .on_view(&path, &lines)
            .unwrap_or_else(|_| (vec![false; lines.len()], false));
        resolved += usize::from(!stored);
        for (i, on) in at.into_iter().zip(on) {
            hits[i].on_chain = on;
        }
    }
    resolved
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

#[cfg(test)]
mod tests {
    use super::*;

    fn line(n: u32, text: &str) -> String {
        let id = |n: u32| format!("00000000-0000-4000-8000-{n:012}");
        let v = serde_json::json!({
            "parentUuid": (n > 1).then(|| id(n - 1)),
            "isSidechain": false,
            "type": "user",
            "message": {"role": "user", "content": text},
            "uuid": id(n),
            "timestamp": format!("2025-05-01T10:00:{n:02}.000Z"),
            "sessionId": "11111111-1111-4111-8111-111111111111",
            "cwd": "/work/demo",
        });
        format!("{v}\n")
    }

    fn all() -> SearchOptions {
        SearchOptions {
            all: true,
            limit: 100,
            ..SearchOptions::default()
        }
    }

    fn uuids(store: &Sidecars, claude: &Path, q: &str) -> Vec<String> {
        let mut out: Vec<String> = search(store, claude, q, &all())
            .unwrap()
            .hits
            .into_iter()
            .map(|h| h.uuid)
            .collect();
        out.sort();
        out
    }

    /// Damage no stat sees (bit rot: the clean mark still matches) is found when tantivy reads
    /// the files, by an error or a panic, and the same call answers from an index built again.
    #[test]
    fn damage_behind_a_clean_mark_is_found_by_the_read() {
        for (ext, cut) in [
            ("store", Some(4)),
            ("fast", Some(5)),
            ("term", None),
            ("idx", Some(0)),
        ] {
            let tmp = tempfile::tempdir().unwrap();
            let claude = tmp.path().join("claude");
            let project = claude.join("projects/-work-demo");
            std::fs::create_dir_all(&project).unwrap();
            let text: String = (1..=30)
                .map(|n| line(n, &format!("back up photo {n} with rsync")))
                .collect();
            std::fs::write(
                project.join("11111111-1111-4111-8111-111111111111.jsonl"),
                text,
            )
            .unwrap();
            let store = Sidecars::new(tmp.path().join("index"));
            let want = uuids(&store, &claude, "rsync");
            assert_eq!(want.len(), 30);
            let dir = store.search_dir(&project);
            assert!(repair::is_clean(&dir));
            let file = std::fs::read_dir(&dir)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .find(|p| p.extension().is_some_and(|x| x == ext))
                .unwrap();
            match cut {
                Some(len) => std::fs::OpenOptions::new()
                    .write(true)
                    .open(&file)
                    .unwrap()
                    .set_len(len)
                    .unwrap(),
                None => std::fs::remove_file(&file).unwrap(),
            }
            // As bit rot would: the mark matches the damaged files.
            let index = Index::open_in_dir(&dir).unwrap();
            repair::mark_clean(&dir, &index).unwrap();
            drop(index);
            assert!(repair::is_clean(&dir), "{ext}");
            assert_eq!(uuids(&store, &claude, "rsync"), want, "{ext}");
            // Sound again: checked, and nothing to read again.
            let index = Index::open_in_dir(&dir).unwrap();
            assert!(repair::check(&index).is_ok(), "{ext}");
            let again = search_catch_up(&store, &claude, &all()).unwrap();
            assert_eq!((again.reindexed, again.started_over), (0, 0), "{ext}");
        }
    }
}
