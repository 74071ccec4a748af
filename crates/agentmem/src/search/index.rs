//! The agent's search index over every event of every session — archive
//! included, since compaction never removes an indexed event — and over the
//! agent's facts and episodic items: one SQLite database holding the
//! documents (their text, position, speaker, vectors), and beside it a
//! tantivy index of their words ([`super::text`]) that ranks them by FTS5's
//! BM25, the best `k` found without scoring every match.
//!
//! The index is derived data. Events are added when they are ingested;
//! `HistoryIndex::catch_up` adds whatever a session's log holds that the
//! index lacks (events written before the index existed, or by a writer
//! that crashed between its log and its index), so the index is never
//! rebuilt from scratch. Losing the file loses nothing: it is rebuilt from
//! the logs on the next search.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OptionalExtension};

use super::lexemes::{excerpt_for, lexemes_of_term};
use super::text::{self, Join, Table, TextDoc, TextIndex, TextWriter, Totals, Within};
use super::{ContextLine, SearchFilter, SearchHit, SearchRole};
use crate::base::error::{Error, Result};
use crate::base::event::{Event, TraceType};

/// The index's database file name, in the agent's folder.
pub const INDEX_FILE: &str = "search.sqlite";
pub use super::text::TEXT_DIR;
/// The most of one event's text that is indexed (half head, half tail): a
/// huge tool output is found by its start and end, and stays in the log whole.
pub const MAX_INDEXED_BYTES: usize = 64 * 1024;
/// Events shown before and after a hit.
pub const CONTEXT_EVENTS: u32 = 2;
/// The longest context line, in characters.
const CONTEXT_LINE_CHARS: usize = 240;
/// Bumped when the schema changes; an index of another version is rebuilt.
const SCHEMA_VERSION: i32 = 8;
/// How long a write waits for another process's write to finish.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS docs(
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    ref TEXT NOT NULL,
    session TEXT NOT NULL,
    ord INTEGER NOT NULL,
    turn TEXT NOT NULL,
    role TEXT NOT NULL,
    ts REAL NOT NULL,
    salience REAL NOT NULL,
    speaker TEXT NOT NULL,
    text TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    UNIQUE(kind, session, ref)
);
CREATE INDEX IF NOT EXISTS docs_by_position ON docs(session, ord);
CREATE INDEX IF NOT EXISTS docs_by_kind ON docs(kind);
CREATE TABLE IF NOT EXISTS speakers(name TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS event_added AFTER INSERT ON docs
    WHEN new.kind = 'event' AND new.speaker <> '' BEGIN
    INSERT OR IGNORE INTO speakers(name) VALUES (new.speaker);
END;
CREATE TABLE IF NOT EXISTS stamps(name TEXT PRIMARY KEY, stamp TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions(session TEXT PRIMARY KEY, events INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS checked_logs(session TEXT PRIMARY KEY, log_bytes INTEGER NOT NULL)
    WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS session_numbers(num INTEGER PRIMARY KEY, session TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS totals(tab TEXT PRIMARY KEY, docs INTEGER NOT NULL, tokens INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS vectors(
    id INTEGER NOT NULL, model TEXT NOT NULL, kind TEXT NOT NULL, session TEXT NOT NULL,
    vector BLOB NOT NULL, PRIMARY KEY(id, model)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS vector_removed AFTER DELETE ON docs BEGIN
    DELETE FROM vectors WHERE id = old.id;
END;
";

/// A long-term memory as the index holds it: a fact or an episode (the
/// memory stores make these), as the text recall shows and what ranks it.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryDoc {
    /// [`DocKind::Fact`] or [`DocKind::Episode`].
    pub kind: DocKind,
    /// The fact's or the episode's id.
    pub id: String,
    /// The session it came from (empty when none).
    pub session: String,
    /// The turns it covers, comma-separated (empty for a fact).
    pub turns: String,
    /// When it happened (epoch seconds).
    pub ts: f64,
    /// How much it matters for recall.
    pub salience: f64,
    /// The text indexed.
    pub text: String,
}

/// What an indexed document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DocKind {
    /// An event of a session's raw history.
    Event,
    /// A semantic fact.
    Fact,
    /// An episodic item (a compaction's summary).
    Episode,
}

impl DocKind {
    /// The stored name, e.g. `event`.
    pub fn as_str(self) -> &'static str {
        match self {
            DocKind::Event => "event",
            DocKind::Fact => "fact",
            DocKind::Episode => "episode",
        }
    }

    /// The kind of a stored name (`as_str`); an unknown one reads as an event.
    pub fn parse(text: &str) -> DocKind {
        match text {
            "fact" => DocKind::Fact,
            "episode" => DocKind::Episode,
            _ => DocKind::Event,
        }
    }
}

/// A document that matched a query, with its raw BM25 score (higher is better).
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The document's row in the index.
    pub doc: i64,
    /// What kind of document it is.
    pub kind: DocKind,
    /// The event, fact or episode id.
    pub reference: String,
    /// The session (empty for facts).
    pub session: String,
    /// The turn (empty for facts).
    pub turn_id: String,
    /// Position in the session's full history.
    pub ord: u64,
    /// Who it came from.
    pub role: SearchRole,
    /// When it happened (epoch seconds).
    pub ts: f64,
    /// How much it matters for recall.
    pub salience: f64,
    /// The speaker's name, when the event carried one.
    pub speaker: Option<String>,
    /// The text indexed.
    pub text: String,
    /// Its BM25 relevance to the query.
    pub bm25: f64,
}

/// An open index. Cheap to keep open; several processes may share it.
#[derive(Debug)]
pub struct HistoryIndex {
    pub(super) conn: Connection,
    path: PathBuf,
    text: TextIndex,
}

impl HistoryIndex {
    /// Opens (creating if needed) the index in `agent_dir`.
    pub fn open(agent_dir: &Path) -> Result<HistoryIndex> {
        let path = agent_dir.join(INDEX_FILE);
        crate::base::fs::create_dir_all(agent_dir).map_err(|e| index_error(&path, e))?;
        // SQLite gives its journal files the mode of the database file.
        crate::base::fs::open_append(&path).map_err(|e| index_error(&path, e))?;
        let fail = |e: rusqlite::Error| index_error(&path, e);
        let mut conn = Connection::open(&path).map_err(fail)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
        retry_while_busy(|| initialize(&mut conn)).map_err(fail)?;
        // Under the database's write lock: of several opening a new index
        // at once, one makes the text index and the others find it made.
        let opening = write_transaction(&mut conn).map_err(fail)?;
        let text = TextIndex::open(agent_dir)?;
        opening.commit().map_err(fail)?;
        let mut index = HistoryIndex { conn, path, text };
        index.keep_text_in_step()?;
        Ok(index)
    }

    /// Rebuilds the text index from the documents when it is not the
    /// database's generation (lost, made anew, or a crash between the two).
    fn keep_text_in_step(&mut self) -> Result<()> {
        let generation = self.generation()?;
        if self.text.generation()?.as_deref() == Some(generation.as_str()) {
            return Ok(());
        }
        let path = self.path.clone();
        let fail = |e: rusqlite::Error| index_error(&path, e);
        let tx = write_transaction(&mut self.conn).map_err(fail)?;
        tx.execute(
            "INSERT OR IGNORE INTO session_numbers(session) SELECT DISTINCT session FROM docs",
            [],
        )
        .map_err(fail)?;
        let next = next_generation(&tx).map_err(fail)?;
        let mut writer = self.text.writer()?;
        writer.remove_all()?;
        add_newer(&tx, &mut writer)?;
        writer.commit(&next)?;
        tx.commit().map_err(fail)
    }

    /// The database's generation: what the text index was last committed with.
    fn generation(&self) -> Result<String> {
        self.conn
            .prepare_cached("SELECT stamp FROM stamps WHERE name = 'text'")
            .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
            .map_err(|e| self.error(e))
    }

    /// The text index as of the database's latest commit, its tail read.
    fn text(&self) -> Result<&TextIndex> {
        self.text.refresh(&self.generation()?)?;
        if self.text.tail_len() >= 2 * FLUSH_DOCS {
            // Another process has most likely written them to the index.
            self.text.reload()?;
        }
        let mut docs = Vec::new();
        for_each_doc_after(&self.conn, self.text.newest_seen(), |doc| {
            docs.push(doc);
            Ok(())
        })?;
        self.text.extend_tail(docs);
        Ok(&self.text)
    }

    /// How many documents queries read from the tail, and the text
    /// index's newest document.
    #[cfg(test)]
    pub(crate) fn tail_and_indexed(&self) -> (usize, i64) {
        let text = self.text().unwrap();
        text.reload().unwrap();
        let text = self.text().unwrap();
        (text.tail_len(), text.newest_indexed())
    }

    /// Writes the documents newer than the text index's to it, however
    /// few: what a writer does as it closes, so that the next process to
    /// open the index finds their words there instead of splitting them.
    pub(crate) fn write_tail(&self) -> Result<()> {
        self.flush_text(1)
    }

    /// Writes the tail to the text index once it holds `at_least`
    /// documents; another writer meanwhile waits for the text index, never
    /// for the database.
    fn flush_text(&self, at_least: usize) -> Result<()> {
        let newest = self.newest_id()?;
        if newest - self.text.newest_indexed() < at_least as i64 {
            return Ok(());
        }
        let mut writer = self.text.writer()?;
        if newest - writer.newest() < at_least as i64 {
            return Ok(());
        }
        let fail = |e: rusqlite::Error| self.error(e);
        // One snapshot for the generation and the documents.
        let read = self.conn.unchecked_transaction().map_err(fail)?;
        let current = stamp_of(&read).map_err(fail)?;
        // A removal between its two commits, or a crash there: the next
        // removal or opening puts the index back in step.
        if writer.generation()?.as_deref() != Some(current.as_str()) {
            return Ok(());
        }
        add_newer(&read, &mut writer)?;
        writer.commit(&current)
    }

    /// How many documents of `table` there are, and their tokens.
    fn totals(&self, table: Table) -> Result<Totals> {
        self.conn
            .prepare_cached("SELECT docs, tokens FROM totals WHERE tab = ?1")
            .and_then(|mut statement| {
                statement
                    .query_row([table.as_str()], |row| {
                        Ok(Totals {
                            docs: row.get::<_, i64>(0)? as u64,
                            tokens: row.get::<_, i64>(1)? as u64,
                        })
                    })
                    .optional()
            })
            .map(Option::unwrap_or_default)
            .map_err(|e| self.error(e))
    }

    /// The number the text index knows `session` by, if it has one.
    fn session_number(&self, session: &str) -> Result<Option<u64>> {
        self.conn
            .prepare_cached("SELECT num FROM session_numbers WHERE session = ?1")
            .and_then(|mut statement| {
                statement
                    .query_row([session], |row| row.get::<_, i64>(0))
                    .optional()
            })
            .map(|num| num.map(|n| n as u64))
            .map_err(|e| self.error(e))
    }

    /// Opens the index in `agent_dir` for reading only, as it is: `None`
    /// when there is none. Nothing is created or changed.
    pub(crate) fn open_read_only(agent_dir: &Path) -> Result<Option<HistoryIndex>> {
        let path = agent_dir.join(INDEX_FILE);
        if !path.is_file() {
            return Ok(None);
        }
        let fail = |e: rusqlite::Error| index_error(&path, e);
        let read_only = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
        // With no write-ahead log beside it, no writer has the index open:
        // read as immutable, SQLite makes no log or shared-memory file of
        // its own. (A writer that opens it meanwhile can make this read
        // fail; recall then does without the index.)
        let conn = if wal_path(&path).exists() {
            Connection::open_with_flags(&path, read_only)
        } else {
            let uri = format!("file:{}?immutable=1", uri_path(&path));
            Connection::open_with_flags(uri, read_only | rusqlite::OpenFlags::SQLITE_OPEN_URI)
        }
        .map_err(fail)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
        let Some(text) = TextIndex::open_read_only(agent_dir)? else {
            return Ok(None);
        };
        Ok(Some(HistoryIndex { conn, path, text }))
    }

    /// The index file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Indexes `events`, the first of which is at position `first_ord` of
    /// `session`'s full history, in one transaction. Events already indexed
    /// are skipped; returns how many were added.
    pub fn add_events(&mut self, session: &str, first_ord: u64, events: &[Event]) -> Result<usize> {
        self.add_runs(session, [(first_ord, events)])
    }

    /// Indexes runs of `session`'s events, each given with the position of
    /// its first event in the full history, in one transaction; as
    /// [`HistoryIndex::add_events`] otherwise. A transaction writes a new
    /// segment of the full-text index and merges older ones, so many small
    /// runs cost several times what they cost together.
    pub(crate) fn add_runs<'a>(
        &mut self,
        session: &str,
        runs: impl IntoIterator<Item = (u64, &'a [Event])>,
    ) -> Result<usize> {
        let positioned = runs.into_iter().flat_map(|(first_ord, events)| {
            events
                .iter()
                .enumerate()
                .map(move |(i, e)| (first_ord.saturating_add(i as u64), e))
        });
        self.insert_events(session, positioned)
    }

    /// Adds the events of `history` (a session's full history, in order) that
    /// the index lacks. Returns how many were added.
    pub(crate) fn catch_up(&mut self, session: &str, history: &[Event]) -> Result<usize> {
        self.add_events(session, 0, history)
    }

    /// How many events of each session are indexed (kept as they are added,
    /// so asking costs nothing however large the index).
    pub fn indexed_sessions(&self) -> Result<Vec<(String, u64)>> {
        self.number_by_session("SELECT session, events FROM sessions")
    }

    /// The length in bytes each session's active log had when the index was
    /// last found to hold every event of the session (see
    /// [`HistoryIndex::record_checked_logs`]).
    pub(crate) fn checked_logs(&self) -> Result<HashMap<String, u64>> {
        self.number_by_session("SELECT session, log_bytes FROM checked_logs")
    }

    /// The rows of `query`, which selects a session and a count.
    fn number_by_session<C: FromIterator<(String, u64)>>(&self, query: &str) -> Result<C> {
        let mut statement = self.conn.prepare_cached(query).map_err(|e| self.error(e))?;
        let rows = statement
            .query_map([], |row| Ok((row.get(0)?, row.get::<_, i64>(1)? as u64)))
            .map_err(|e| self.error(e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.error(e))
    }

    /// Records that the index holds every event of each session whose active
    /// log was `log_bytes` long: while the log keeps that length, a catch-up
    /// need not read the session's description again.
    pub(crate) fn record_checked_logs(&mut self, logs: &[(&str, u64)]) -> Result<()> {
        if logs.is_empty() {
            return Ok(());
        }
        let path = self.path.clone();
        let fail = |e: rusqlite::Error| index_error(&path, e);
        let tx = write_transaction(&mut self.conn).map_err(fail)?;
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO checked_logs(session, log_bytes) VALUES (?1, ?2)",
                )
                .map_err(fail)?;
            for (session, log_bytes) in logs {
                let log_bytes = i64::try_from(*log_bytes).unwrap_or(i64::MAX);
                insert.execute(params![session, log_bytes]).map_err(fail)?;
            }
        }
        tx.commit().map_err(fail)
    }

    /// Removes a session's events from the index.
    pub(crate) fn remove_session(&mut self, session: &str) -> Result<()> {
        let path = self.path.clone();
        let fail = |e: rusqlite::Error| index_error(&path, e);
        let tx = write_transaction(&mut self.conn).map_err(fail)?;
        let (docs, tokens): (i64, i64) = tx
            .query_row(
                "SELECT count(*), coalesce(sum(tokens), 0) FROM docs
                 WHERE kind = 'event' AND session = ?1",
                [session],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .map_err(fail)?;
        tx.execute(
            "DELETE FROM docs WHERE kind = 'event' AND session = ?1",
            [session],
        )
        .map_err(fail)?;
        tx.execute("DELETE FROM sessions WHERE session = ?1", [session])
            .map_err(fail)?;
        tx.execute("DELETE FROM checked_logs WHERE session = ?1", [session])
            .map_err(fail)?;
        add_to_totals(&tx, Table::Events, -docs, -tokens).map_err(fail)?;
        if let Some(number) = number_of(&tx, session).map_err(fail)? {
            commit_text(&tx, &self.text, Removal::Session(number))?;
        }
        tx.commit().map_err(fail)
    }

    /// Replaces the indexed facts and episodes when `stamp` (of the files
    /// they were read from) differs from the one indexed; `load` is called
    /// only then.
    pub(crate) fn sync_memories(
        &mut self,
        stamp: &str,
        load: impl FnOnce() -> Result<Vec<MemoryDoc>>,
    ) -> Result<()> {
        let indexed: Option<String> = self
            .conn
            .prepare_cached("SELECT stamp FROM stamps WHERE name = 'memories'")
            .and_then(|mut statement| statement.query_row([], |row| row.get(0)).optional())
            .map_err(|e| self.error(e))?;
        if indexed.as_deref() == Some(stamp) {
            return Ok(());
        }
        let memories = load()?;
        let path = self.path.clone();
        let fail = |e: rusqlite::Error| index_error(&path, e);
        let tx = write_transaction(&mut self.conn).map_err(fail)?;
        tx.execute("DELETE FROM docs WHERE kind IN ('fact', 'episode')", [])
            .map_err(fail)?;
        let (mut docs, mut tokens) = (0usize, 0usize);
        {
            let mut insert = tx.prepare_cached(INSERT_DOC).map_err(fail)?;
            for memory in &memories {
                let role = match memory.kind {
                    DocKind::Fact => SearchRole::Fact,
                    DocKind::Episode | DocKind::Event => SearchRole::Episode,
                };
                let words = TextDoc::words_of("", &memory.text);
                let added = insert
                    .execute(params![
                        memory.kind.as_str(),
                        memory.id,
                        memory.session,
                        0i64,
                        memory.turns,
                        role.as_str(),
                        memory.ts,
                        memory.salience,
                        "",
                        memory.text,
                        words.len() as i64,
                    ])
                    .map_err(fail)?;
                if added == 1 {
                    assign_number(&tx, &memory.session).map_err(fail)?;
                    docs += 1;
                    tokens += words.len();
                }
            }
        }
        tx.execute(
            "INSERT OR REPLACE INTO totals(tab, docs, tokens) VALUES (?1, ?2, ?3)",
            params![Table::Memories.as_str(), docs as i64, tokens as i64],
        )
        .map_err(fail)?;
        tx.execute(
            "INSERT OR REPLACE INTO stamps(name, stamp) VALUES ('memories', ?1)",
            [stamp],
        )
        .map_err(fail)?;
        commit_text(&tx, &self.text, Removal::Memories)?;
        tx.commit().map_err(fail)
    }

    /// Whether the index holds anything recall could return for `session`:
    /// what other sessions left, or facts given by hand. Answered from the
    /// indexes alone, so a session alone with its own history pays nothing
    /// for recall.
    pub(crate) fn has_memories_beyond(&self, session: &str) -> Result<bool> {
        // Facts given by hand name no session.
        let unattributed: bool = self
            .conn
            .prepare_cached("SELECT EXISTS(SELECT 1 FROM docs WHERE session = '')")
            .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
            .map_err(|e| self.error(e))?;
        Ok(unattributed || self.has_other_sessions(session)?)
    }

    /// The speakers of indexed events whose names `text` holds, as whole
    /// words in any case (`What does Melanie's son like?` names `Melanie`).
    pub(crate) fn speakers_named_in(&self, text: &str) -> Result<Vec<String>> {
        let mut statement = self
            .conn
            .prepare_cached("SELECT name FROM speakers")
            .map_err(|e| self.error(e))?;
        let names = statement
            .query_map([], |row| row.get::<_, String>(0))
            .map_err(|e| self.error(e))?
            .collect::<rusqlite::Result<Vec<String>>>()
            .map_err(|e| self.error(e))?;
        Ok(super::query::names_in(text, names))
    }

    /// Up to `limit` documents of each of `kinds`' tables (events; facts and
    /// episodes) matching `query`, best first within each. BM25 is computed
    /// per table, so scores compare only within one.
    /// `exclude_session` leaves out what one session left — its events,
    /// episodes and the facts drawn from it — for the session asking: its
    /// history is in its view or in its summary already.
    pub fn candidates(
        &self,
        query: &str,
        kinds: &[DocKind],
        exclude_session: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Candidate>> {
        let not_session = match exclude_session {
            Some(session) => self.session_number(session)?,
            None => None,
        };
        let mut found = Vec::new();
        let memories = kinds
            .iter()
            .filter(|k| Table::of(**k) == Table::Memories)
            .fold(0u8, |mask, k| mask | 1 << text::kind_code(*k));
        if memories != 0 {
            if let Some(ask) = self.plan(Table::Memories, query)?.for_ranking() {
                let within = Within {
                    kinds: memories,
                    not_session,
                    ..Within::default()
                };
                found.extend(self.matches(Table::Memories, &ask, &within, limit)?);
            }
        }
        let other_events = match exclude_session {
            Some(session) => self.has_other_sessions(session)?,
            None => true,
        };
        if kinds.contains(&DocKind::Event) && other_events {
            if let Some(ask) = self.plan(Table::Events, query)?.for_ranking() {
                let within = Within {
                    kinds: 1 << text::kind_code(DocKind::Event),
                    not_session,
                    ..Within::default()
                };
                found.extend(self.matches(Table::Events, &ask, &within, limit)?);
            }
        }
        Ok(found)
    }

    fn newest_id(&self) -> Result<i64> {
        self.conn
            .prepare_cached("SELECT coalesce(max(id), 0) FROM docs")
            .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
            .map_err(|e| self.error(e))
    }

    /// How `text` is best asked of `table`: all its terms together, and
    /// its terms that are not common in the index (see [`COMMON_TERM_SHARE`]).
    fn plan(&self, table: Table, text: &str) -> Result<QueryPlan> {
        let terms = super::query::terms(text);
        let docs = self.newest_id()?;
        let cap = ((docs as f64 * COMMON_TERM_SHARE) as i64).max(COMMON_TERM_MIN_DOCS);
        // Read once: each read of the text index also reads its tail.
        let text = if docs > cap { Some(self.text()?) } else { None };
        let mut all = Vec::with_capacity(terms.len());
        let mut rare = Vec::new();
        for term in terms {
            let word = lexemes_of_term(&term)?;
            let common = match text {
                Some(text) => text.documents_with(table, &word)? >= cap as u64,
                None => false,
            };
            if !common {
                rare.push((term.clone(), word.clone()));
            }
            all.push((term, word));
        }
        Ok(QueryPlan {
            all: Ask::of(all, Join::All),
            rare: Ask::of(rare, Join::Any),
        })
    }

    /// Whether any session other than `session` has indexed events or
    /// episodes (two index lookups, whatever the index's size).
    fn has_other_sessions(&self, session: &str) -> Result<bool> {
        // Cached: recall asks before each new query, and preparing the
        // statement costs more than the two index probes.
        self.conn
            .prepare_cached(
                "SELECT EXISTS(SELECT 1 FROM docs WHERE session < ?1 AND session <> '')
                     OR EXISTS(SELECT 1 FROM docs WHERE session > ?1)",
            )
            .and_then(|mut statement| statement.query_row([session], |row| row.get(0)))
            .map_err(|e| self.error(e))
    }

    /// The best `limit` documents of `table` within `within` for `ask`, as candidates.
    fn matches(
        &self,
        table: Table,
        ask: &Ask,
        within: &Within,
        limit: usize,
    ) -> Result<Vec<Candidate>> {
        let ranked = self.text()?.top(
            table,
            &ask.words,
            ask.join,
            within,
            limit,
            self.totals(table)?,
        )?;
        self.candidates_of(&ranked)
    }

    /// The documents of `scored` (each with its score) as candidates, in
    /// the same order; a document removed since it was scored is left out.
    pub(crate) fn candidates_of(&self, scored: &[(i64, f64)]) -> Result<Vec<Candidate>> {
        if scored.is_empty() {
            return Ok(Vec::new());
        }
        // One statement for all (one read transaction, not one a row),
        // reading the rows in their order, where neighbours share pages;
        // CROSS JOIN keeps the ids the outer loop whatever the planner thinks.
        let mut by_row: Vec<(i64, usize)> = scored
            .iter()
            .enumerate()
            .map(|(at, (doc, _))| (*doc, at))
            .collect();
        by_row.sort_unstable();
        let listed = format!(
            "[{}]",
            by_row
                .iter()
                .map(|(doc, _)| doc.to_string())
                .collect::<Vec<_>>()
                .join(",")
        );
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT d.kind, d.ref, d.session, d.turn, d.ord, d.role, d.ts, d.salience,
                        d.speaker, d.text, 0.0, d.id
                 FROM json_each(?1) AS j CROSS JOIN docs AS d ON d.id = j.value",
            )
            .map_err(|e| self.error(e))?;
        let mut rows = statement.query([listed]).map_err(|e| self.error(e))?;
        let mut found: Vec<Option<Candidate>> = scored.iter().map(|_| None).collect();
        while let Some(row) = rows.next().map_err(|e| self.error(e))? {
            let doc: i64 = row.get(11).map_err(|e| self.error(e))?;
            let Ok(listed_at) = by_row.binary_search_by_key(&doc, |(doc, _)| *doc) else {
                continue;
            };
            let at = by_row[listed_at].1;
            found[at] = Some(candidate_from_row(row, scored[at].1).map_err(|e| self.error(e))?);
        }
        Ok(found.into_iter().flatten().collect())
    }

    /// The events of `session` at positions `ord - radius ..= ord + radius`
    /// other than `ord` itself, as unscored candidates.
    pub(crate) fn neighbours(
        &self,
        session: &str,
        ord: u64,
        radius: u64,
    ) -> Result<Vec<Candidate>> {
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT kind, ref, session, turn, ord, role, ts, salience, speaker, text, 0.0, id
                 FROM docs
                 WHERE kind = 'event' AND session = ?1 AND ord BETWEEN ?2 AND ?3 AND ord <> ?4
                 ORDER BY ord",
            )
            .map_err(|e| self.error(e))?;
        let low = ord.saturating_sub(radius) as i64;
        let high = ord.saturating_add(radius) as i64;
        let rows = statement
            .query_map(params![session, low, high, ord as i64], |row| {
                candidate_from_row(row, 0.0)
            })
            .map_err(|e| self.error(e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.error(e))
    }

    /// The events matching `query` within `filter`, best first, each with an
    /// excerpt and the events around it.
    pub fn search(&self, query: &str, filter: &SearchFilter) -> Result<Vec<SearchHit>> {
        let session = match &filter.session {
            Some(session) => match self.session_number(session)? {
                Some(number) => Some(number),
                // A session never indexed has no events to find.
                None => return Ok(Vec::new()),
            },
            None => None,
        };
        let within = Within {
            kinds: 1 << text::kind_code(DocKind::Event),
            session,
            role: filter.role.map(text::role_code),
            since: filter.since,
            until: filter.until,
            ..Within::default()
        };
        let plan = self.plan(Table::Events, query)?;
        let totals = self.totals(Table::Events)?;
        let mut ranked: Vec<(i64, f64, String)> = Vec::new();
        // Events with every word first; then, if too few, those with the rarer words.
        for ask in [plan.all, plan.rare].into_iter().flatten() {
            if ranked.len() >= filter.limit {
                break;
            }
            let found = self.text()?.top(
                Table::Events,
                &ask.words,
                ask.join,
                &within,
                filter.limit,
                totals,
            )?;
            for (id, score) in found {
                if ranked.len() < filter.limit && !ranked.iter().any(|(seen, _, _)| *seen == id) {
                    ranked.push((id, score, ask.expression.clone()));
                }
            }
        }
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT session, ref, turn, ord, role, ts, text FROM docs WHERE id = ?1",
            )
            .map_err(|e| self.error(e))?;
        let mut hits = Vec::with_capacity(ranked.len());
        for (id, score, expression) in ranked {
            let row = statement
                .query_row([id], |row| {
                    let hit = SearchHit {
                        session: row.get(0)?,
                        event_id: row.get(1)?,
                        turn_id: row.get(2)?,
                        ord: row.get::<_, i64>(3)? as u64,
                        role: SearchRole::parse_stored(&row.get::<_, String>(4)?),
                        ts: row.get(5)?,
                        score,
                        excerpt: String::new(),
                        context: Vec::new(),
                    };
                    Ok((hit, row.get::<_, String>(6)?))
                })
                .optional()
                .map_err(|e| self.error(e))?;
            // A document removed since the text index's last commit is left out.
            let Some((mut hit, text)) = row else {
                continue;
            };
            hit.excerpt = excerpt_for(&text, &expression)?;
            hit.context = self.around(&hit.session, hit.ord, CONTEXT_EVENTS)?;
            hits.push(hit);
        }
        Ok(hits)
    }

    /// The events of `session` from `ord - around` to `ord + around`.
    pub fn around(&self, session: &str, ord: u64, around: u32) -> Result<Vec<ContextLine>> {
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT ref, turn, ord, role, speaker, text FROM docs
                 WHERE kind = 'event' AND session = ?1 AND ord BETWEEN ?2 AND ?3 ORDER BY ord",
            )
            .map_err(|e| self.error(e))?;
        let low = ord.saturating_sub(u64::from(around)) as i64;
        let high = ord.saturating_add(u64::from(around)) as i64;
        let rows = statement
            .query_map(params![session, low, high], |row| {
                Ok(ContextLine {
                    event_id: row.get(0)?,
                    turn_id: row.get(1)?,
                    is_hit: row.get::<_, i64>(2)? as u64 == ord,
                    role: SearchRole::parse_stored(&row.get::<_, String>(3)?),
                    speaker: Some(row.get::<_, String>(4)?).filter(|s| !s.is_empty()),
                    text: one_line(&row.get::<_, String>(5)?, CONTEXT_LINE_CHARS),
                })
            })
            .map_err(|e| self.error(e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.error(e))
    }

    fn insert_events<'a>(
        &mut self,
        session: &str,
        events: impl Iterator<Item = (u64, &'a Event)>,
    ) -> Result<usize> {
        let path = self.path.clone();
        let fail = |e: rusqlite::Error| index_error(&path, e);
        let tx = write_transaction(&mut self.conn).map_err(fail)?;
        assign_number(&tx, session).map_err(fail)?;
        let (mut added, mut tokens) = (0usize, 0usize);
        {
            let mut insert = tx.prepare_cached(INSERT_DOC).map_err(fail)?;
            for (ord, event) in events {
                // Every event gets a row, even a textless one: the row count
                // per session is how a lagging index is recognised.
                let text = indexed_text(event);
                let speaker = speaker(event).unwrap_or_default();
                let words = TextDoc::words_of(&speaker, &text).len();
                let role = SearchRole::of(event.trace_type);
                let inserted = insert
                    .execute(params![
                        DocKind::Event.as_str(),
                        event.id,
                        session,
                        ord as i64,
                        event.turn_id,
                        role.as_str(),
                        event.ts,
                        EVENT_SALIENCE,
                        speaker,
                        text,
                        words as i64,
                    ])
                    .map_err(fail)?;
                if inserted == 1 {
                    added += 1;
                    tokens += words;
                }
            }
        }
        if added == 0 {
            return Ok(0);
        }
        tx.execute(
            "INSERT INTO sessions(session, events) VALUES (?1, ?2)
             ON CONFLICT(session) DO UPDATE SET events = events + excluded.events",
            params![session, added as i64],
        )
        .map_err(fail)?;
        add_to_totals(&tx, Table::Events, added as i64, tokens as i64).map_err(fail)?;
        tx.commit().map_err(fail)?;
        // The documents are in and found through the tail: a batch that
        // cannot be written now (another writer held the text index past
        // the lock timeout) is written by the next insert.
        let _ = self.flush_text(FLUSH_DOCS);
        Ok(added)
    }

    pub(super) fn error(&self, error: rusqlite::Error) -> Error {
        index_error(&self.path, error)
    }
}

/// A transaction that takes the write lock when it begins, waiting for
/// another writer (the session's indexing thread, another process) as
/// long as the busy timeout allows. A deferred one would take a read
/// snapshot first, and upgrading it after another writer committed fails
/// at once with "database is locked" instead of waiting.
fn write_transaction(conn: &mut Connection) -> rusqlite::Result<rusqlite::Transaction<'_>> {
    conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
}

/// What a removal takes out of the text index.
#[derive(Debug, Clone, Copy)]
enum Removal {
    /// A session's events, by its number.
    Session(u64),
    /// Every fact and episode.
    Memories,
}

/// Writes `removal` and the tail to the text index as the next generation,
/// stamped in `tx`, which the caller then commits. A text index not at the
/// database's generation before is rebuilt from the documents instead.
fn commit_text(tx: &rusqlite::Transaction<'_>, text: &TextIndex, removal: Removal) -> Result<()> {
    let fail =
        |e: rusqlite::Error| index_error(tx.path().map(Path::new).unwrap_or(Path::new("")), e);
    let current = stamp_of(tx).map_err(fail)?;
    let next = next_generation(tx).map_err(fail)?;
    let mut writer = text.writer()?;
    if writer.generation()?.as_deref() == Some(current.as_str()) {
        match removal {
            Removal::Session(number) => writer.remove_session(number),
            Removal::Memories => writer.remove_memories(),
        }
    } else {
        writer.remove_all()?;
    }
    add_newer(tx, &mut writer)?;
    writer.commit(&next)
}

/// Adds to `writer` every document `conn` sees after the text index's newest.
fn add_newer(conn: &Connection, writer: &mut TextWriter<'_>) -> Result<()> {
    for_each_doc_after(conn, writer.newest(), |doc| writer.add(doc))
}

/// Calls `each` with every document `conn` sees after `after`, in order.
fn for_each_doc_after(
    conn: &Connection,
    after: i64,
    mut each: impl FnMut(TextDoc) -> Result<()>,
) -> Result<()> {
    let fail =
        |e: rusqlite::Error| index_error(conn.path().map(Path::new).unwrap_or(Path::new("")), e);
    let mut statement = conn
        .prepare_cached(
            "SELECT d.id, d.kind, n.num, d.role, d.ts, d.speaker, d.text
             FROM docs d JOIN session_numbers n ON n.session = d.session
             WHERE d.id > ?1 ORDER BY d.id",
        )
        .map_err(fail)?;
    let mut rows = statement.query([after]).map_err(fail)?;
    while let Some(row) = rows.next().map_err(fail)? {
        let read = |row: &rusqlite::Row<'_>| -> rusqlite::Result<TextDoc> {
            let (speaker, body): (String, String) = (row.get(5)?, row.get(6)?);
            Ok(TextDoc {
                doc: row.get(0)?,
                kind: DocKind::parse(&row.get::<_, String>(1)?),
                session: row.get::<_, i64>(2)? as u64,
                role: SearchRole::parse_stored(&row.get::<_, String>(3)?),
                ts: row.get(4)?,
                words: TextDoc::words_of(&speaker, &body),
            })
        };
        each(read(row).map_err(fail)?)?;
    }
    Ok(())
}

/// The text generation stamped in the database.
fn stamp_of(conn: &Connection) -> rusqlite::Result<String> {
    conn.query_row("SELECT stamp FROM stamps WHERE name = 'text'", [], |row| {
        row.get(0)
    })
}

/// Moves the text generation stamped in `tx` on by one; returns the new one.
fn next_generation(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<String> {
    let current = stamp_of(tx)?;
    let (epoch, count) = current.rsplit_once('.').unwrap_or((current.as_str(), "0"));
    let next = format!("{epoch}.{}", count.parse::<u64>().unwrap_or(0) + 1);
    tx.execute("UPDATE stamps SET stamp = ?1 WHERE name = 'text'", [&next])?;
    Ok(next)
}

/// Adds `docs` documents of `tokens` tokens to `table`'s totals (negative to remove).
fn add_to_totals(
    tx: &rusqlite::Transaction<'_>,
    table: Table,
    docs: i64,
    tokens: i64,
) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO totals(tab, docs, tokens) VALUES (?1, ?2, ?3)
         ON CONFLICT(tab) DO UPDATE SET docs = docs + excluded.docs, tokens = tokens + excluded.tokens",
        params![table.as_str(), docs, tokens],
    )
    .map(|_| ())
}

/// The number of `session` in the text index, if it has one.
fn number_of(tx: &rusqlite::Transaction<'_>, session: &str) -> rusqlite::Result<Option<u64>> {
    tx.query_row(
        "SELECT num FROM session_numbers WHERE session = ?1",
        [session],
        |row| row.get::<_, i64>(0),
    )
    .optional()
    .map(|num| num.map(|n| n as u64))
}

/// The number of `session` in the text index, given it one if it had none.
fn assign_number(tx: &rusqlite::Transaction<'_>, session: &str) -> rusqlite::Result<u64> {
    if let Some(number) = number_of(tx, session)? {
        return Ok(number);
    }
    tx.execute(
        "INSERT INTO session_numbers(session) VALUES (?1)",
        [session],
    )?;
    Ok(tx.last_insert_rowid() as u64)
}

/// A candidate from a row of `kind, ref, session, turn, ord, role, ts,
/// salience, speaker, text, <score>, id`, scored `bm25`.
pub(super) fn candidate_from_row(
    row: &rusqlite::Row<'_>,
    bm25: f64,
) -> rusqlite::Result<Candidate> {
    Ok(Candidate {
        doc: row.get(11)?,
        kind: DocKind::parse(&row.get::<_, String>(0)?),
        reference: row.get(1)?,
        session: row.get(2)?,
        turn_id: row.get(3)?,
        ord: row.get::<_, i64>(4)? as u64,
        role: SearchRole::parse_stored(&row.get::<_, String>(5)?),
        ts: row.get(6)?,
        salience: row.get(7)?,
        speaker: Some(row.get::<_, String>(8)?).filter(|s| !s.is_empty()),
        text: row.get(9)?,
        bm25,
    })
}

/// WAL mode, then the schema: an index of another version is dropped and
/// made anew, in one write transaction, so that two processes opening an
/// old index at once do not rebuild it over each other.
/// The write-ahead log SQLite keeps beside the index at `path`.
fn wal_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

/// `path` as the path of a `file:` URI: every byte but unreserved ones and
/// `/` percent-encoded.
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for &byte in path.as_os_str().as_encoded_bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn initialize(conn: &mut Connection) -> rusqlite::Result<()> {
    // WAL: readers never wait for the writer. NORMAL sync: the index is
    // rebuilt from the logs if the last commits are lost.
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let version: i32 = tx.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if version != SCHEMA_VERSION {
        tx.execute_batch(
            "DROP TABLE IF EXISTS docs_fts; DROP TABLE IF EXISTS events_fts;
             DROP TABLE IF EXISTS memories_fts; DROP TABLE IF EXISTS docs;
             DROP TABLE IF EXISTS stamps; DROP TABLE IF EXISTS sessions;
             DROP TABLE IF EXISTS speakers; DROP TABLE IF EXISTS vectors;
             DROP TABLE IF EXISTS session_numbers; DROP TABLE IF EXISTS totals;
             DROP TABLE IF EXISTS checked_logs;",
        )?;
    }
    tx.execute_batch(SCHEMA)?;
    // A new epoch for each database made: a text index left from another
    // one is never taken for this one's.
    tx.execute(
        "INSERT OR IGNORE INTO stamps(name, stamp) VALUES ('text', ?1)",
        [format!("{}.0", uuid::Uuid::now_v7().simple())],
    )?;
    if version != SCHEMA_VERSION {
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    }
    tx.commit()
}

/// Runs `step` again, with growing pauses, while SQLite answers "busy" in
/// a way its busy handler does not wait out — setting WAL mode while another
/// connection is creating the file, say — for up to [`BUSY_TIMEOUT`].
fn retry_while_busy<T>(mut step: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let started = std::time::Instant::now();
    let mut pause = std::time::Duration::from_millis(1);
    loop {
        match step() {
            Err(rusqlite::Error::SqliteFailure(failure, _))
                if failure.code == rusqlite::ErrorCode::DatabaseBusy
                    && started.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(50));
            }
            done => return done,
        }
    }
}

/// A term in more than this share of the indexed documents (and in at
/// least [`COMMON_TERM_MIN_DOCS`]) tells little apart, and an OR query with
/// it would score most of the index: it only narrows AND queries.
pub const COMMON_TERM_SHARE: f64 = 0.05;
/// Documents a database backend's query looks at first, newest first,
/// widening fourfold until it has enough (the files index finds the best
/// of all documents at once).
pub const FIRST_WINDOW_DOCS: i64 = 50_000;
/// Documents the text index's tail gathers before they are written to it
/// in one batch: a query reads and splits at most about this many from the
/// database beside the index, and a batch costs one commit of the index.
pub const FLUSH_DOCS: usize = 2_048;
/// Below this many documents, no term counts as common.
pub const COMMON_TERM_MIN_DOCS: i64 = 2_000;

/// The ways one query is asked of a table.
struct QueryPlan {
    /// Every term (AND).
    all: Option<Ask>,
    /// The terms that are not common (OR).
    rare: Option<Ask>,
}

impl QueryPlan {
    /// What ranks candidates: the rarer terms, else all terms together.
    fn for_ranking(self) -> Option<Ask> {
        self.rare.or(self.all)
    }
}

/// One way of asking: query words joined one way.
struct Ask {
    /// Each word's lexemes, in the query's order.
    words: Vec<Vec<String>>,
    join: Join,
    /// The same as an FTS5 expression, for excerpts.
    expression: String,
}

impl Ask {
    /// The ask of `terms` (each with its lexemes) joined by `join`; `None` without terms.
    fn of(terms: Vec<(String, Vec<String>)>, join: Join) -> Option<Ask> {
        let (terms, words): (Vec<String>, Vec<Vec<String>>) = terms.into_iter().unzip();
        let expression = match join {
            Join::All => super::query::all_of(&terms),
            Join::Any => super::query::any_of(&terms),
        }?;
        Some(Ask {
            words,
            join,
            expression,
        })
    }
}

/// The salience of a raw event (facts and episodes carry their own).
pub const EVENT_SALIENCE: f64 = 0.5;

const INSERT_DOC: &str = "INSERT OR IGNORE INTO docs(
         kind, ref, session, ord, turn, role, ts, salience, speaker, text, tokens)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";

/// What of an event is searchable: its text, or a tool call's name and
/// arguments (the speaker's name is indexed beside it).
pub fn indexed_text(event: &Event) -> String {
    let body = match event.trace_type {
        TraceType::ToolCall => {
            let args = event
                .tool_args
                .as_ref()
                .map(|a| a.to_string())
                .unwrap_or_default();
            format!(
                "{} {args} {}",
                event.tool_name.as_deref().unwrap_or(""),
                event.content
            )
        }
        TraceType::ToolResult => match (&event.tool_error, event.content.is_empty()) {
            (Some(error), false) => format!("{}\n{error}", event.content),
            // Without content, the text names the error itself.
            (Some(_) | None, true) | (None, false) => event.text().into_owned(),
        },
        TraceType::User
        | TraceType::Assistant
        | TraceType::System
        | TraceType::Reasoning
        | TraceType::Summary
        | TraceType::TurnAborted
        // The content names the version and holds the patch: searching for
        // a value finds the update that set it.
        | TraceType::WorkingMemory => event.content.clone(),
    };
    head_and_tail(body, MAX_INDEXED_BYTES)
}

/// The speaker's name an event carries, if any (`name`, as in OpenAI messages).
pub fn speaker(event: &Event) -> Option<String> {
    match event.extra.get("name")? {
        serde_json::Value::String(name) => Some(name),
        _ => None,
    }
}

fn head_and_tail(text: String, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text;
    }
    let mut head = max_bytes / 2;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - max_bytes / 2;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{}\n…\n{}", &text[..head], &text[tail..])
}

/// `text` on one line, cut to `max_chars` characters.
pub(crate) fn one_line(text: &str, max_chars: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

/// An event's text as a context line around a hit shows it: on one line, cut.
pub fn context_text(text: &str) -> String {
    one_line(text, CONTEXT_LINE_CHARS)
}

fn index_error(path: &Path, error: impl std::fmt::Display) -> Error {
    Error::Index {
        path: path.to_path_buf(),
        message: error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_terms_only_narrow_and_queries_in_a_large_index() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = HistoryIndex::open(dir.path()).unwrap();
        let events: Vec<Event> = (0..2_500)
            .map(|i| {
                let text = match i {
                    7 => "cargo build failed in the parser".to_owned(),
                    9 => "the parser module was renamed".to_owned(),
                    _ => format!("cargo build step {i} finished"),
                };
                Event::user(text).with_id(format!("e{i}"))
            })
            .collect();
        index.add_events("s", 0, &events).unwrap();
        let plan = index.plan(Table::Events, "cargo parser").unwrap();
        let expression = |ask: Option<Ask>| ask.map(|a| a.expression);
        assert_eq!(expression(plan.rare).as_deref(), Some("\"parser\""));
        assert_eq!(
            expression(plan.all).as_deref(),
            Some("\"cargo\" AND \"parser\"")
        );
        let hits = index
            .search("cargo parser", &SearchFilter::default())
            .unwrap();
        let ids: Vec<_> = hits.iter().map(|h| h.event_id.as_str()).collect();
        assert_eq!(ids, ["e7", "e9"], "both words first, then the rare one");
        let candidates = index
            .candidates("cargo parser", &[DocKind::Event], None, 10)
            .unwrap();
        assert_eq!(candidates.len(), 2);
    }

    /// FTS5's own ranking of `expression` over `table`: `(rowid, score)`, best first.
    fn fts5_top(conn: &Connection, expression: &str, limit: usize) -> Vec<(i64, f64)> {
        let mut statement = conn
            .prepare(
                "SELECT rowid, -bm25(t) FROM t WHERE t MATCH ?1 ORDER BY bm25(t), rowid LIMIT ?2",
            )
            .unwrap();
        let rows = statement
            .query_map(params![expression, limit as i64], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .unwrap();
        rows.collect::<rusqlite::Result<_>>().unwrap()
    }

    #[test]
    fn scores_and_order_are_fts5_bm25s_to_the_last_digit() {
        let texts: Vec<String> = crate::search::tokenizer::fts5::corpus()
            .into_iter()
            .step_by(11)
            .take(3_000)
            .collect();
        let speakers = ["Caroline", "Melanie", ""];
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE VIRTUAL TABLE t USING fts5(speaker, text, tokenize='porter unicode61 remove_diacritics 2')",
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut index = HistoryIndex::open(dir.path()).unwrap();
        let mut events = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            let speaker = speakers[i % speakers.len()];
            let mut event = Event::user(text.clone()).with_id(format!("e{i}"));
            if !speaker.is_empty() {
                event.extra.insert("name", serde_json::json!(speaker));
            }
            conn.execute(
                "INSERT INTO t(rowid, speaker, text) VALUES (?1, ?2, ?3)",
                params![i as i64 + 1, speaker, indexed_text(&event)],
            )
            .unwrap();
            events.push(event);
        }
        // Two sessions, the second removed below: its documents leave the statistics.
        let (kept, removed) = events.split_at(2_500);
        index.add_events("kept", 0, kept).unwrap();
        index.add_events("removed", 0, removed).unwrap();
        let compare = |index: &HistoryIndex, conn: &Connection| {
            let mut compared = 0;
            for text in texts.iter().step_by(37) {
                let question: String = crate::search::query::terms(text)
                    .into_iter()
                    .step_by(2)
                    .take(5)
                    .collect::<Vec<_>>()
                    .join(" ");
                let plan = index.plan(Table::Events, &question).unwrap();
                for ask in [plan.all, plan.rare].into_iter().flatten() {
                    let within = Within::default();
                    let ours = index
                        .text()
                        .unwrap()
                        .top(
                            Table::Events,
                            &ask.words,
                            ask.join,
                            &within,
                            10,
                            index.totals(Table::Events).unwrap(),
                        )
                        .unwrap();
                    assert_eq!(
                        ours,
                        fts5_top(conn, &ask.expression, 10),
                        "{}",
                        ask.expression
                    );
                    compared += usize::from(!ours.is_empty());
                }
            }
            assert!(compared > 50, "compared {compared}");
        };
        // Most documents in the text index, the last ones in its tail.
        assert_eq!(index.text().unwrap().newest_indexed(), 2_500);
        compare(&index, &conn);
        index.remove_session("removed").unwrap();
        conn.execute("DELETE FROM t WHERE rowid > 2500", [])
            .unwrap();
        compare(&index, &conn);
        // Documents added after a removal: numbered past every removed one,
        // in the tail again.
        let again: Vec<Event> = removed[..300]
            .iter()
            .map(|e| e.clone().with_id(format!("again-{}", e.id)))
            .collect();
        index.add_events("again", 0, &again).unwrap();
        for (j, event) in again.iter().enumerate() {
            conn.execute(
                "INSERT INTO t(rowid, speaker, text) VALUES (?1, ?2, ?3)",
                params![
                    3_001 + j as i64,
                    speaker(event).unwrap_or_default(),
                    indexed_text(event)
                ],
            )
            .unwrap();
        }
        assert_eq!(index.text().unwrap().tail_len(), 300);
        compare(&index, &conn);
    }

    #[test]
    fn a_lost_or_stale_text_index_is_rebuilt_from_the_documents() {
        let dir = tempfile::tempdir().unwrap();
        let events: Vec<Event> = ["the parser fails", "the lexer works", "parser again"]
            .iter()
            .enumerate()
            .map(|(i, text)| Event::user(*text).with_id(format!("e{i}")))
            .collect();
        let mut index = HistoryIndex::open(dir.path()).unwrap();
        index.add_events("s", 0, &events).unwrap();
        let found = |index: &HistoryIndex| {
            index
                .search("parser", &SearchFilter::default())
                .unwrap()
                .into_iter()
                .map(|h| h.event_id)
                .collect::<Vec<_>>()
        };
        assert_eq!(found(&index), ["e2", "e0"]);
        drop(index);
        std::fs::remove_dir_all(dir.path().join(text::TEXT_DIR)).unwrap();
        let index = HistoryIndex::open(dir.path()).unwrap();
        assert_eq!(found(&index), ["e2", "e0"], "rebuilt when lost");
        let in_the_index = |index: &HistoryIndex| {
            let text = index.text().unwrap();
            (text.newest_indexed(), text.tail_len())
        };
        assert_eq!(in_the_index(&index), (3, 0));
        // A database one generation behind its text index (a crash between
        // the two commits) is taken as stale too.
        index
            .conn
            .execute(
                "UPDATE stamps SET stamp = stamp || '0' WHERE name = 'text'",
                [],
            )
            .unwrap();
        drop(index);
        let index = HistoryIndex::open(dir.path()).unwrap();
        assert_eq!(
            index.text.generation().unwrap(),
            Some(index.generation().unwrap())
        );
        assert_eq!(in_the_index(&index), (3, 0));
        assert_eq!(found(&index), ["e2", "e0"]);
    }

    #[test]
    fn candidates_come_back_in_the_order_scored_and_a_removed_one_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let events: Vec<Event> = (0..40)
            .map(|i| Event::user(format!("step {i} of the build")).with_id(format!("e{i}")))
            .collect();
        let mut index = HistoryIndex::open(dir.path()).unwrap();
        index.add_events("s", 0, &events).unwrap();
        let id_of = |event: &str| -> i64 {
            index
                .conn
                .query_row("SELECT id FROM docs WHERE ref = ?1", [event], |r| r.get(0))
                .unwrap()
        };
        let (e3, e31, e17, e5) = (id_of("e3"), id_of("e31"), id_of("e17"), id_of("e5"));
        index
            .conn
            .execute("DELETE FROM docs WHERE id = ?1", [e17])
            .unwrap();
        // Scored out of the rows' order, with a row that is gone.
        let scored = [
            (e31, 4.0),
            (e3, 3.0),
            (e17, 2.5),
            (e5, 2.0),
            (e31 + 1_000, 1.0),
        ];
        let found = index.candidates_of(&scored).unwrap();
        let got: Vec<(&str, f64, &str)> = found
            .iter()
            .map(|c| (c.reference.as_str(), c.bm25, c.text.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("e31", 4.0, "step 31 of the build"),
                ("e3", 3.0, "step 3 of the build"),
                ("e5", 2.0, "step 5 of the build"),
            ]
        );
        assert_eq!(found[1].doc, e3);
        assert!(index.candidates_of(&[]).unwrap().is_empty());
        let by_id = index.candidates_by_id(&[e5, e3]).unwrap();
        let refs: Vec<&str> = by_id.iter().map(|c| c.reference.as_str()).collect();
        assert_eq!(refs, ["e5", "e3"]);
    }

    #[test]
    fn head_and_tail_cuts_on_char_boundaries() {
        let text = "é".repeat(100);
        let cut = head_and_tail(text, 41);
        assert!(cut.starts_with(&"é".repeat(10)) && cut.ends_with(&"é".repeat(10)));
    }

    #[test]
    fn stemmed_terms_match_and_context_surrounds_the_hit() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = HistoryIndex::open(dir.path()).unwrap();
        let events: Vec<Event> = ["hello", "I researched adoption agencies", "nice", "bye"]
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let mut e = Event::user(*text).with_id(format!("e{i}"));
                e.turn_id = format!("turn_{:04}", i + 1);
                e
            })
            .collect();
        assert_eq!(index.add_events("s1", 0, &events).unwrap(), 4);
        assert_eq!(index.add_events("s1", 0, &events).unwrap(), 0);
        let hits = index
            .search("research agency", &SearchFilter::default())
            .unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].event_id, "e1");
        assert!(hits[0].excerpt.contains("[researched]"));
        let ids: Vec<_> = hits[0]
            .context
            .iter()
            .map(|c| c.event_id.as_str())
            .collect();
        assert_eq!(ids, ["e0", "e1", "e2", "e3"]);
    }

    #[test]
    fn runs_added_together_keep_their_positions() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = HistoryIndex::open(dir.path()).unwrap();
        let events: Vec<Event> = ["first", "second", "the needle", "last"]
            .iter()
            .enumerate()
            .map(|(i, text)| Event::user(*text).with_id(format!("e{i}")))
            .collect();
        let (head, tail) = events.split_at(2);
        assert_eq!(index.add_runs("s1", [(2, tail), (0, head)]).unwrap(), 4);
        assert_eq!(index.indexed_sessions().unwrap(), [("s1".to_owned(), 4)]);
        let hits = index.search("needle", &SearchFilter::default()).unwrap();
        let context: Vec<_> = hits[0]
            .context
            .iter()
            .map(|c| c.event_id.as_str())
            .collect();
        assert_eq!(context, ["e0", "e1", "e2", "e3"]);
    }
}
