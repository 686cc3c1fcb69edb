//! `chainlog pick`: an interactive session picker in the terminal that hands off to
//! `claude --resume`.
//!
//! The list is the listing of `ls` (sessions with a message, newest first); typing filters it
//! by title and first/last prompt (any case); the preview shows the last messages of the
//! selected session's active chain, read once per session and cached. Enter replaces this
//! process with `claude --resume ID` (Ctrl-F adds `--fork-session`) in the session's working
//! directory. When that folder no longer exists (a deleted worktree, another machine's path)
//! the user is told and asked whether to resume in the current folder instead; anything but yes
//! resumes nothing (Claude Code finds a session by its folder: elsewhere it would open another
//! project's session list). `$CHAINLOG_CLAUDE` names another program to run instead of
//! `claude` (tests run a fake one).
//!
//! Left/Right switch the preview between the session's branches (its leaves, oldest first, not
//! counting parallel dead ends and sidechains). Claude Code resumes only a session's active
//! branch, so Enter on another branch first copies that branch's chain into a new session
//! (`Store::fork` with the leaf as `at`, as `--fork-session` writes it) and resumes
//! that one.
//!
//! When typing pauses, the filter is also run as a full-text search over every message (the
//! search index of `chainlog search`); sessions found only that way are added to the rows,
//! marked `(in messages)`. Results are cached per filter text. The search runs on another
//! thread (the first one of a big project catches its search index up for seconds): the list
//! keeps following the keys meanwhile, the top line says `searching messages…` (with the
//! share of bytes indexed), and the hits are applied when they arrive.
//!
//! The terminal is set up and restored by ratatui's `init`/`restore`, whose panic hook
//! restores it on a panic too; every other exit path calls `restore` before returning or
//! handing off.

use std::collections::{HashMap, HashSet};
use std::io::IsTerminal;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chainlog::reference::ResolveOptions;
use chainlog::{Block, ListOptions, Message, ResumeOptions, Role, SessionFacts, Store};
use ratatui::Frame;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout, Position};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block as Pane, Cell, Paragraph, Row, Table, TableState};

use super::{Cli, CliError, CliResult};

/// The help line at the bottom of the picker.
const HELP: &str = "type: filter  Up/Down: move  Left/Right: branch  Enter: resume  \
                        Ctrl-F: fork  Tab: project/all  Esc: clear/quit";

/// Messages kept per cached preview (the pane shows the last ones that fit).
const PREVIEW_KEEP: usize = 200;

/// How long typing must pause before the filter is run as a full-text search.
const SEARCH_PAUSE: Duration = Duration::from_millis(250);

/// How often the screen is redrawn while a search runs (its progress, its end).
const SEARCH_TICK: Duration = Duration::from_millis(100);

/// How long the loop waits for a key when nothing else is going on.
const IDLE: Duration = Duration::from_secs(1);

#[derive(Debug, clap::Args)]
pub struct PickArgs {
    #[command(flatten)]
    pub scope: super::Scope,
    /// Print the chosen session's id instead of running `claude` (for scripts); a branch that
    /// is not the active one is copied into a new session first, whose id is printed.
    #[arg(long)]
    pub print: bool,
    /// Also list the sessions only a sync remote has (`s3://…`, `file://…`); choosing one
    /// pulls just that session first (as `resume ID --remote` does).
    #[arg(long, value_name = "REMOTE")]
    pub remote: Option<String>,
    /// The key file of an encrypted remote.
    #[arg(long, value_name = "FILE", requires = "remote")]
    pub key_file: Option<PathBuf>,
    /// Start with TEXT in the filter, as if typed: the sessions whose title or prompts hold
    /// it, then those whose messages match it (`chainlog search QUERY --pick` opens this).
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub filter: Option<String>,
}

/// A session only the remote has: its facts have no path (it is not here yet).
fn is_remote(f: &SessionFacts) -> bool {
    f.path.as_os_str().is_empty()
}

pub fn run(cli: &Cli, a: &PickArgs) -> CliResult {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(CliError::Out(std::io::Error::other(
            "pick needs a terminal (use `chainlog ls` in scripts)",
        )));
    }
    let store = super::reading_store(cli)?;
    let mut picker = Picker::new(a.scope.project.clone(), a.scope.all);
    let key = a
        .key_file
        .as_ref()
        .map(|f| std::fs::read(f).map_err(|e| chainlog::Error::io(f, e)))
        .transpose()?;
    if let Some(remote) = &a.remote {
        picker.remote = store
            .remote_sessions(remote, key.as_deref())?
            .into_iter()
            .filter(|r| !r.here && !r.mine)
            .collect();
    }
    // The first listing is loaded before the screen is taken, so its errors print as usual.
    picker.load(&store)?;
    if let Some(text) = &a.filter {
        picker.filter.clone_from(text);
        picker.refilter();
    }
    // Index progress goes to the top line, not to a bar over the screen.
    let progress = picker.progress.clone();
    chainlog::sidecar::set_progress(Some(Arc::new(move |_, done, total| {
        if let Ok(mut p) = progress.lock() {
            *p = Some((done, total));
        }
    })));
    let mut terminal = ratatui::init();
    let chosen = event_loop(&mut terminal, &mut picker, &store);
    ratatui::restore();
    let Some((mut facts, fork, leaf)) = chosen? else {
        return Ok(ExitCode::SUCCESS);
    };
    if let (true, Some(remote)) = (is_remote(&facts), &a.remote) {
        facts = pull_session(&store, remote, key, &facts.session_id)?;
    }
    if a.print {
        let id = match leaf {
            None => facts.session_id.clone(),
            Some(leaf) => store.fork(&facts.path, Some(&leaf))?,
        };
        println!("{id}");
        return Ok(ExitCode::SUCCESS);
    }
    // Claude Code finds a session by the folder it runs in: never hand off elsewhere unasked.
    let Some(dir) = folder_to_resume_in(&facts)? else {
        eprintln!("chainlog: not resumed");
        return Ok(ExitCode::SUCCESS);
    };
    let (id, fork) = match leaf {
        None => (facts.session_id.clone(), fork),
        Some(leaf) => {
            // The client resumes only the active branch: copy this one into a new session.
            let id = store.fork(&facts.path, Some(&leaf))?;
            eprintln!("chainlog: the branch ending at {leaf} was copied into session {id}");
            (id, false)
        }
    };
    let mut cmd = handoff(&id, &dir, fork);
    let err = cmd.exec();
    Err(CliError::Out(std::io::Error::new(
        err.kind(),
        format!("cannot run {}: {err}", cmd.get_program().to_string_lossy()),
    )))
}

/// Pulls a session only `remote` has, and its facts once here.
fn pull_session(
    store: &Store,
    remote: &str,
    key: Option<Vec<u8>>,
    id: &str,
) -> Result<SessionFacts, CliError> {
    let opts = chainlog::SyncOptions {
        key,
        only: Some(vec![id.to_owned()]),
        ..chainlog::SyncOptions::all()
    };
    let r = store.sync(remote, &opts)?;
    eprintln!("chainlog: pulled {id} ({} file(s))", r.pulled_files);
    let all = store.sessions(&ListOptions {
        all: true,
        ..ListOptions::default()
    })?;
    all.sessions
        .into_iter()
        .find(|f| f.session_id == id)
        .ok_or_else(|| CliError::Lib(chainlog::Error::NoMatch { arg: id.to_owned() }))
}

/// The folder to run `claude` in: the session's working directory when it exists; else the
/// current folder if the user says so when asked (the terminal is the picker's), else `None`.
fn folder_to_resume_in(facts: &SessionFacts) -> Result<Option<PathBuf>, CliError> {
    if let Some(cwd) = facts.cwd.as_deref().map(Path::new).filter(|p| p.is_dir()) {
        return Ok(Some(cwd.to_path_buf()));
    }
    let here = std::env::current_dir().map_err(CliError::Out)?;
    let recorded = match facts.cwd.as_deref() {
        Some(cwd) => format!("was recorded in {cwd}, which no longer exists"),
        None => "has no recorded folder".to_owned(),
    };
    eprint!(
        "chainlog: session {} {recorded}; Claude Code finds a session by the folder it runs in.\n\
         Resume it in the current folder {} instead? [y/N] ",
        facts.session_id,
        here.display()
    );
    let mut answer = String::new();
    std::io::stdin()
        .read_line(&mut answer)
        .map_err(CliError::Out)?;
    let yes = matches!(answer.trim(), "y" | "Y" | "yes" | "Yes");
    Ok(yes.then_some(here))
}

/// The program `claude`, or the one `$CHAINLOG_CLAUDE` names, resuming (or forking) session
/// `id` in the folder `dir`.
fn handoff(id: &str, dir: &Path, fork: bool) -> Command {
    let program = std::env::var_os("CHAINLOG_CLAUDE")
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "claude".into());
    let mut cmd = Command::new(program);
    cmd.arg("--resume").arg(id);
    if fork {
        cmd.arg("--fork-session");
    }
    cmd.current_dir(dir);
    cmd
}

/// What the user picked: the session, whether to fork it, and the leaf of the branch shown
/// when it is not the active one.
type Chosen = (SessionFacts, bool, Option<String>);

/// Draws and reads keys until the user quits (`None`) or picks a session.
fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    picker: &mut Picker,
    store: &Store,
) -> std::io::Result<Option<Chosen>> {
    let now = now_ms();
    let mut last_key = Instant::now();
    loop {
        picker.collect_search();
        if picker.search.is_none() && picker.wants_search() && last_key.elapsed() >= SEARCH_PAUSE {
            picker.start_search(store);
        }
        picker.ensure_preview(store);
        terminal.draw(|f| picker.draw(f, now))?;
        let wait = if picker.search.is_some() {
            SEARCH_TICK
        } else if picker.wants_search() {
            SEARCH_PAUSE.saturating_sub(last_key.elapsed())
        } else {
            IDLE
        };
        if !event::poll(wait)? {
            continue;
        }
        let Event::Key(key) = event::read()? else {
            continue;
        };
        if key.kind != KeyEventKind::Press {
            continue;
        }
        last_key = Instant::now();
        match picker.key(key) {
            Action::None => {}
            Action::Quit => return Ok(None),
            Action::Toggle => {
                picker.all = !picker.all;
                if let Err(e) = picker.load(store) {
                    picker.status = Some(e.to_string());
                }
                picker.refilter();
            }
            Action::Resume { fork } => {
                if let Some(f) = picker.selected() {
                    let leaf = picker.shown_branch(&f.path);
                    return Ok(Some((f.clone(), fork, leaf)));
                }
            }
        }
    }
}

/// The first 8 characters of a session id (as `ls` shows it).
fn short(id: &str) -> String {
    id.chars().take(8).collect()
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// What a key asks of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    None,
    Quit,
    /// Switch between the project's sessions and every session.
    Toggle,
    /// Hand off to `claude --resume` (with `--fork-session` when `fork`).
    Resume {
        fork: bool,
    },
}

/// One row of the list.
struct Entry {
    facts: SessionFacts,
    /// Title and first/last prompt, lower case, for the filter.
    haystack: String,
}

impl Entry {
    fn new(facts: SessionFacts) -> Entry {
        let haystack = [
            Some(facts.title.as_str()),
            facts.first_prompt.as_deref(),
            facts.last_prompt.as_deref(),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("\n")
        .to_lowercase();
        Entry { facts, haystack }
    }
}

/// The last messages of a session, or why they could not be read.
type Preview = Result<Vec<(Role, String)>, String>;

/// The branches of a session: the uuids (as written) of its leaves, oldest first, without
/// parallel dead ends and sidechains; which one is active and which one the preview shows.
#[derive(Debug, Default)]
struct Branches {
    leaves: Vec<String>,
    active: usize,
    shown: usize,
}

/// A full-text search running on another thread: what it was asked, and where its answer
/// (the matching sessions, or why the search failed) arrives.
struct Running {
    key: (bool, String),
    answer: Receiver<Result<HashSet<PathBuf>, String>>,
}

/// The picker's state, apart from the terminal.
struct Picker {
    project: Option<PathBuf>,
    all: bool,
    /// The listings read so far: `[project, all]`.
    lists: [Option<Vec<Entry>>; 2],
    filter: String,
    /// Indices into the current listing that pass the filter.
    shown: Vec<usize>,
    selected: usize,
    /// Previews by session and branch (`None`: the active one).
    previews: HashMap<(PathBuf, Option<String>), Preview>,
    /// Each previewed session's branches.
    branches: HashMap<PathBuf, Branches>,
    /// Sessions whose messages match a filter (full-text search in the scope), by scope
    /// (`all`) and filter.
    hits: HashMap<(bool, String), HashSet<PathBuf>>,
    /// The full-text search running, if any.
    search: Option<Running>,
    /// Index work reported while it runs: (bytes done, bytes in all).
    progress: Arc<Mutex<Option<(u64, u64)>>>,
    /// A message for the top line (a listing that failed).
    status: Option<String>,
    /// Sessions only the sync remote has (`--remote`), listed after this machine's.
    remote: Vec<chainlog::RemoteSession>,
}

impl Picker {
    fn new(project: Option<PathBuf>, all: bool) -> Picker {
        Picker {
            project,
            all,
            lists: [None, None],
            filter: String::new(),
            shown: Vec::new(),
            selected: 0,
            previews: HashMap::new(),
            branches: HashMap::new(),
            hits: HashMap::new(),
            search: None,
            progress: Arc::default(),
            status: None,
            remote: Vec::new(),
        }
    }

    /// Reads the current scope's listing unless it was read already.
    fn load(&mut self, store: &Store) -> Result<(), chainlog::Error> {
        let slot = usize::from(self.all);
        if self.lists[slot].is_none() {
            let opts = ListOptions {
                project: self.project.clone(),
                all: self.all,
                ..ListOptions::default()
            };
            let listing = store.sessions(&opts)?;
            if !listing.skipped.is_empty() {
                self.status = Some(format!(
                    "{} unreadable transcripts skipped; `chainlog ls` names them",
                    listing.skipped.len()
                ));
            }
            self.set_list(listing.sessions);
        }
        self.refilter();
        Ok(())
    }

    fn set_list(&mut self, sessions: Vec<SessionFacts>) {
        let here: HashSet<String> = sessions.iter().map(|f| f.session_id.clone()).collect();
        // In a project's list, the remote's sessions of the same working directory.
        let folder = (!self.all)
            .then(|| {
                self.project
                    .clone()
                    .or_else(|| std::env::current_dir().ok())
            })
            .flatten();
        let remote = self.remote.iter().filter(|r| {
            !here.contains(&r.session_id)
                && folder
                    .as_deref()
                    .is_none_or(|d| r.cwd.as_deref().map(Path::new) == Some(d))
        });
        self.lists[usize::from(self.all)] = Some(
            sessions
                .into_iter()
                .chain(remote.map(chainlog::RemoteSession::facts))
                .filter(|f| f.message_count > 0)
                .map(Entry::new)
                .collect(),
        );
    }

    fn list(&self) -> &[Entry] {
        self.lists[usize::from(self.all)].as_deref().unwrap_or(&[])
    }

    /// Recomputes the rows that pass the filter, keeping the selected session when it still
    /// passes.
    fn refilter(&mut self) {
        let keep = self.selected().map(|f| f.path.clone());
        let needle = self.filter.to_lowercase();
        let hits = self.hits.get(&(self.all, self.filter.clone()));
        self.shown = self
            .list()
            .iter()
            .enumerate()
            .filter(|(_, e)| {
                e.haystack.contains(&needle) || hits.is_some_and(|h| h.contains(&e.facts.path))
            })
            .map(|(i, _)| i)
            .collect();
        self.selected = keep
            .and_then(|p| {
                self.shown
                    .iter()
                    .position(|&i| self.list()[i].facts.path == p)
            })
            .unwrap_or(0);
    }

    fn selected(&self) -> Option<&SessionFacts> {
        self.shown
            .get(self.selected)
            .and_then(|&i| self.list().get(i))
            .map(|e| &e.facts)
    }

    fn step(&mut self, by: isize) {
        let last = self.shown.len().saturating_sub(1);
        self.selected = self.selected.saturating_add_signed(by).min(last);
    }

    /// Applies a key to the state and says what the loop must do.
    fn key(&mut self, k: KeyEvent) -> Action {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        let alt = k.modifiers.contains(KeyModifiers::ALT);
        match k.code {
            KeyCode::Char('c' | 'd') if ctrl => return Action::Quit,
            KeyCode::Char('f') if ctrl => return Action::Resume { fork: true },
            KeyCode::Char('n' | 'j') if ctrl => self.step(1),
            KeyCode::Char('p' | 'k') if ctrl => self.step(-1),
            KeyCode::Char('u') if ctrl => {
                self.filter.clear();
                self.refilter();
            }
            KeyCode::Char(c) if !ctrl && !alt => {
                self.filter.push(c);
                self.refilter();
            }
            KeyCode::Backspace => {
                self.filter.pop();
                self.refilter();
            }
            KeyCode::Esc if self.filter.is_empty() => return Action::Quit,
            KeyCode::Esc => {
                self.filter.clear();
                self.refilter();
            }
            KeyCode::Left => self.switch_branch(-1),
            KeyCode::Right => self.switch_branch(1),
            KeyCode::Down => self.step(1),
            KeyCode::Up => self.step(-1),
            KeyCode::PageDown => self.step(10),
            KeyCode::PageUp => self.step(-10),
            KeyCode::Home => self.selected = 0,
            KeyCode::End => self.step(isize::MAX),
            KeyCode::Tab | KeyCode::BackTab => return Action::Toggle,
            KeyCode::Enter => return Action::Resume { fork: false },
            _ => {}
        }
        Action::None
    }

    /// Whether the filter has not been searched in the messages yet.
    fn wants_search(&self) -> bool {
        !self.filter.trim().is_empty() && !self.hits.contains_key(&(self.all, self.filter.clone()))
    }

    /// Starts the filter as a full-text search on another thread.
    fn start_search(&mut self, store: &Store) {
        let key = (self.all, self.filter.clone());
        let opts = chainlog::search::SearchOptions {
            project: self.project.clone(),
            all: self.all,
            limit: 0,
            ..Default::default()
        };
        let (tx, answer) = std::sync::mpsc::channel();
        let store = store.clone();
        let query = key.1.clone();
        std::thread::spawn(move || {
            let found = store
                .matching_sessions(&query, &opts)
                .map_err(|e| e.to_string());
            // The picker may have ended meanwhile: nobody to tell.
            let _ = tx.send(found);
        });
        self.search = Some(Running { key, answer });
    }

    /// Applies the running search's hits once they arrived (to the filter they were asked
    /// for: the rows change only if that filter is still shown).
    fn collect_search(&mut self) {
        let Some(running) = &self.search else {
            return;
        };
        let found = match running.answer.try_recv() {
            Err(TryRecvError::Empty) => return,
            Ok(found) => found,
            Err(TryRecvError::Disconnected) => Err("the search ended without an answer".into()),
        };
        let key = running.key.clone();
        self.search = None;
        if let Ok(mut p) = self.progress.lock() {
            *p = None;
        }
        let found = found.unwrap_or_else(|e| {
            self.status = Some(format!("full-text search: {e}"));
            HashSet::new()
        });
        self.hits.insert(key, found);
        self.refilter();
    }

    /// `  searching messages… 42%` while a search runs.
    fn searching_note(&self) -> String {
        if self.search.is_none() {
            return String::new();
        }
        let share = self
            .progress
            .lock()
            .ok()
            .and_then(|p| *p)
            .filter(|&(_, total)| total > 0)
            .map(|(done, total)| format!(" {}%", done.min(total) * 100 / total))
            .unwrap_or_default();
        format!("  searching messages…{share}")
    }

    /// Whether the row passes the filter only by the full-text search.
    fn only_in_messages(&self, e: &Entry) -> bool {
        !e.haystack.contains(&self.filter.to_lowercase())
    }

    /// Moves the preview of the selected session to an older (`-1`) or newer (`1`) branch.
    fn switch_branch(&mut self, by: isize) {
        let Some(path) = self.selected().map(|f| f.path.clone()) else {
            return;
        };
        if let Some(b) = self.branches.get_mut(&path) {
            let last = b.leaves.len().saturating_sub(1);
            b.shown = b.shown.saturating_add_signed(by).min(last);
        }
    }

    /// The leaf of the branch the preview shows for `path`, when it is not the active one.
    fn shown_branch(&self, path: &Path) -> Option<String> {
        let b = self.branches.get(path)?;
        (b.shown != b.active).then(|| b.leaves.get(b.shown).cloned())?
    }

    /// Reads the selected session's branches and the shown branch's preview unless cached.
    fn ensure_preview(&mut self, store: &Store) {
        let Some(path) = self
            .selected()
            .filter(|f| !is_remote(f))
            .map(|f| f.path.clone())
        else {
            return;
        };
        self.branches
            .entry(path.clone())
            .or_insert_with_key(|p| read_branches(store, p));
        let leaf = self.shown_branch(&path);
        self.previews
            .entry((path, leaf))
            .or_insert_with_key(|(p, leaf)| read_preview(store, p, leaf.as_deref()));
    }

    /// One row of the list: title, relative time of the last message, message count.
    fn row(&self, e: &Entry, now: i64) -> Row<'static> {
        let s = &e.facts;
        let when = s
            .modified
            .as_deref()
            .map_or_else(String::new, |t| super::ls::relative(t, now));
        let mut title = vec![Span::raw(s.title.clone())];
        if is_remote(s) {
            title.push(Span::styled(
                " (on another machine)",
                Style::new().add_modifier(Modifier::DIM),
            ));
        }
        if self.only_in_messages(e) {
            title.push(Span::styled(
                " (in messages)",
                Style::new().add_modifier(Modifier::DIM),
            ));
        }
        Row::new(vec![
            Cell::from(Line::from(title)),
            Cell::from(Line::from(when).right_aligned()),
            Cell::from(Line::from(format!("{} msgs", s.message_count)).right_aligned()),
        ])
    }

    fn draw(&self, f: &mut Frame, now: i64) {
        let [top, list, preview, help] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Percentage(45),
            Constraint::Fill(1),
            Constraint::Length(1),
        ])
        .areas(f.area());

        let scope = if self.all {
            "all projects".to_owned()
        } else {
            "this project".to_owned()
        };
        let counts = format!(
            "  {}/{} {scope}{}{}",
            self.shown.len(),
            self.list().len(),
            self.searching_note(),
            self.status
                .as_deref()
                .map_or_else(String::new, |s| format!("  ({s})"))
        );
        f.render_widget(
            Paragraph::new(Line::from(vec![
                Span::styled("> ", Style::new().add_modifier(Modifier::BOLD)),
                Span::raw(self.filter.clone()),
                Span::styled(counts, Style::new().add_modifier(Modifier::DIM)),
            ])),
            top,
        );
        let cursor = u16::try_from(2 + super::table::width(&self.filter)).unwrap_or(u16::MAX);
        f.set_cursor_position(Position::new(top.x.saturating_add(cursor), top.y));

        let rows: Vec<Row> = self
            .shown
            .iter()
            .map(|&i| self.row(&self.list()[i], now))
            .collect();
        let empty = rows.is_empty();
        let table = Table::new(
            rows,
            [
                Constraint::Fill(1),
                Constraint::Length(12),
                Constraint::Length(10),
            ],
        )
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED))
        .highlight_symbol("> ");
        if empty {
            let msg = if self.list().is_empty() {
                "no sessions (Tab: all projects)"
            } else {
                "no session matches"
            };
            f.render_widget(Paragraph::new(format!("  {msg}")), list);
        } else {
            let mut state = TableState::default().with_selected(Some(self.selected));
            f.render_stateful_widget(table, list, &mut state);
        }

        self.draw_preview(f, preview);
        f.render_widget(
            Paragraph::new(HELP).style(Style::new().add_modifier(Modifier::DIM)),
            help,
        );
    }

    /// The preview pane: the last messages of the selected session's shown branch.
    fn draw_preview(&self, f: &mut Frame, preview: ratatui::layout::Rect) {
        let tokens = self
            .selected()
            .and_then(super::usage::summary)
            .map_or_else(String::new, |t| format!(" {t} "));
        let (title, lines) = match self.selected() {
            None => (String::new(), Vec::new()),
            Some(s) => {
                let height = usize::from(preview.height.saturating_sub(2));
                let lines = match self
                    .previews
                    .get(&(s.path.clone(), self.shown_branch(&s.path)))
                {
                    None if is_remote(s) => vec![Line::from(
                        "Only the remote has this session: Enter pulls it here, then resumes it.",
                    )],
                    None => Vec::new(),
                    Some(Err(e)) => vec![Line::from(format!("cannot read: {e}"))],
                    Some(Ok(msgs)) => msgs[msgs.len().saturating_sub(height)..]
                        .iter()
                        .map(|(role, text)| {
                            Line::from(vec![
                                Span::styled(
                                    format!("{:>9}  ", role.as_str()),
                                    Style::new().add_modifier(Modifier::BOLD),
                                ),
                                Span::raw(text.clone()),
                            ])
                        })
                        .collect(),
                };
                let branch = self
                    .branches
                    .get(&s.path)
                    .filter(|b| b.leaves.len() > 1)
                    .map_or_else(String::new, |b| {
                        let active = if b.shown == b.active {
                            " (active)"
                        } else {
                            " (Enter copies it into a new session)"
                        };
                        format!(" · branch {}/{}{active}", b.shown + 1, b.leaves.len())
                    });
                (
                    format!(" {} · {}{branch} ", short(&s.session_id), s.title),
                    lines,
                )
            }
        };
        f.render_widget(
            Paragraph::new(lines).block(Pane::bordered().title(title).title_bottom(tokens)),
            preview,
        );
    }
}

/// The session's branches, from the index (none to switch between when it cannot answer).
fn read_branches(store: &Store, path: &Path) -> Branches {
    // The active leaf without a walk when the materialised view answers it.
    let opts = ResolveOptions {
        list_leaves: false,
        ..ResolveOptions::default()
    };
    let Ok(Some((ans, report))) = store.leaf_report_from(path, opts) else {
        return Branches::default();
    };
    let mut leaves: Vec<_> = report
        .iter()
        .filter(|l| !l.parallel && !l.sidechain)
        .collect();
    leaves.sort_by_key(|l| l.timestamp);
    let active = leaves.iter().position(|l| l.active).unwrap_or(0);
    Branches {
        leaves: leaves.iter().map(|l| ans.names.name(l.uuid)).collect(),
        active,
        shown: active,
    }
}

/// The last messages of the session's active chain (or of the branch ending at `leaf`): role
/// and first line of text (a tool call by its name); tool results, meta and non-message
/// entries are left out.
fn read_preview(store: &Store, path: &Path, leaf: Option<&str>) -> Preview {
    let opts = ResumeOptions {
        leaf: leaf.map(str::to_owned),
        ..ResumeOptions::default()
    };
    let conv = store.conversation(path, &opts).map_err(|e| e.to_string())?;
    let mut out: Vec<(Role, String)> = conv.messages().filter_map(|m| preview_line(&m)).collect();
    let cut = out.len().saturating_sub(PREVIEW_KEEP);
    out.drain(..cut);
    Ok(out)
}

fn preview_line(m: &Message) -> Option<(Role, String)> {
    if m.meta || m.sidechain || !matches!(m.role, Role::User | Role::Assistant) {
        return None;
    }
    let text = m.text();
    if let Some(line) = text.lines().map(str::trim).find(|l| !l.is_empty()) {
        return Some((m.role, line.to_owned()));
    }
    m.blocks.iter().find_map(|b| match b {
        Block::ToolUse { name, .. } => Some((m.role, format!("[{name}]"))),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(id: &str, title: &str, first: Option<&str>) -> SessionFacts {
        let v = serde_json::json!({
            "sessionId": id, "path": format!("/p/{id}.jsonl"), "projectKey": "-p",
            "cwd": null, "title": title, "customTitle": null, "aiTitle": null,
            "summary": null, "firstPrompt": first, "lastPrompt": null, "gitBranch": null,
            "tag": null, "messageCount": 2, "created": null, "modified": null,
            "fileModified": null, "bytes": 0, "forkedFrom": null, "agents": 0,
            "inlineAgents": 0, "badLines": 0, "prLink": null, "leafUuid": null,
            "sidechain": false, "teamName": null, "usage": [], "tips": [], "foreignSummaries": []
        });
        serde_json::from_value(v).unwrap()
    }

    fn picker() -> Picker {
        let mut p = Picker::new(None, true);
        p.set_list(vec![
            facts("a", "Alpha work", None),
            facts("b", "Beta", Some("fix the ZEBRA bug")),
            facts("c", "Gamma", None),
        ]);
        p.refilter();
        p
    }

    fn press(p: &mut Picker, code: KeyCode, mods: KeyModifiers) -> Action {
        p.key(KeyEvent::new(code, mods))
    }

    fn typed(p: &mut Picker, s: &str) {
        for c in s.chars() {
            assert_eq!(press(p, KeyCode::Char(c), KeyModifiers::NONE), Action::None);
        }
    }

    fn sel(p: &Picker) -> &str {
        &p.selected().unwrap().session_id
    }

    #[test]
    fn typing_filters_over_title_and_prompts_any_case() {
        let mut p = picker();
        typed(&mut p, "zeb");
        assert_eq!((p.shown.len(), sel(&p)), (1, "b"));
        press(&mut p, KeyCode::Backspace, KeyModifiers::NONE);
        typed(&mut p, "x");
        assert!(p.selected().is_none());
        assert_eq!(
            press(&mut p, KeyCode::Enter, KeyModifiers::NONE),
            Action::Resume { fork: false }
        );
        assert_eq!(
            press(&mut p, KeyCode::Esc, KeyModifiers::NONE),
            Action::None
        );
        assert_eq!(p.shown.len(), 3);
        assert_eq!(
            press(&mut p, KeyCode::Esc, KeyModifiers::NONE),
            Action::Quit
        );
    }

    #[test]
    fn moving_keeps_within_the_rows_and_survives_filtering() {
        let mut p = picker();
        press(&mut p, KeyCode::Up, KeyModifiers::NONE);
        assert_eq!(sel(&p), "a");
        press(&mut p, KeyCode::Down, KeyModifiers::NONE);
        press(&mut p, KeyCode::Char('j'), KeyModifiers::CONTROL);
        press(&mut p, KeyCode::Down, KeyModifiers::NONE);
        assert_eq!(sel(&p), "c");
        typed(&mut p, "a");
        assert_eq!(sel(&p), "c", "still shown, still selected");
        press(&mut p, KeyCode::Char('k'), KeyModifiers::CONTROL);
        assert_eq!(sel(&p), "b");
        assert_eq!(
            press(&mut p, KeyCode::Char('f'), KeyModifiers::CONTROL),
            Action::Resume { fork: true }
        );
        assert_eq!(
            press(&mut p, KeyCode::Tab, KeyModifiers::NONE),
            Action::Toggle
        );
    }

    #[test]
    fn handoff_resumes_or_forks_by_id() {
        let f = facts("b", "Beta", None);
        let args = |c: &Command| {
            c.get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
        };
        let dir = Path::new("/");
        assert_eq!(args(&handoff(&f.session_id, dir, false)), ["--resume", "b"]);
        assert_eq!(
            args(&handoff(&f.session_id, dir, true)),
            ["--resume", "b", "--fork-session"]
        );
    }

    #[test]
    fn left_and_right_switch_the_branch_that_enter_resumes() {
        let mut p = picker();
        let path = p.selected().unwrap().path.clone();
        p.branches.insert(
            path.clone(),
            Branches {
                leaves: vec!["old".into(), "mid".into(), "new".into()],
                active: 2,
                shown: 2,
            },
        );
        assert_eq!(
            p.shown_branch(&path),
            None,
            "the active branch needs no copy"
        );
        press(&mut p, KeyCode::Right, KeyModifiers::NONE);
        assert_eq!(p.shown_branch(&path), None, "there is no newer branch");
        press(&mut p, KeyCode::Left, KeyModifiers::NONE);
        assert_eq!(p.shown_branch(&path).as_deref(), Some("mid"));
        for _ in 0..5 {
            press(&mut p, KeyCode::Left, KeyModifiers::NONE);
        }
        assert_eq!(p.shown_branch(&path).as_deref(), Some("old"));
        assert_eq!(
            press(&mut p, KeyCode::Enter, KeyModifiers::NONE),
            Action::Resume { fork: false }
        );
    }
}
