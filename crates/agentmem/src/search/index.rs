//! The agent's search index: one SQLite database with an FTS5 table
//! (porter-stemmed, BM25-ranked) over every event of every session — archive
//! included, since compaction never removes an indexed event — and over the
//! agent's facts and episodic items.
//!
//! The index is derived data. Events are added when they are ingested;
//! `HistoryIndex::catch_up` adds whatever a session's log holds that the
//! index lacks (events written before the index existed, or by a writer
//! that crashed between its log and its index), so the index is never
//! rebuilt from scratch. Losing the file loses nothing: it is rebuilt from
//! the logs on the next search.

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OptionalExtension};

use super::excerpt::{excerpt, MATCH_CLOSE, MATCH_OPEN};
use super::{ContextLine, SearchFilter, SearchHit, SearchRole};
use crate::base::error::{Error, Result};
use crate::base::event::{Event, TraceType};

/// The index's file name, in the agent's folder.
pub const INDEX_FILE: &str = "search.sqlite";
/// The most of one event's text that is indexed (half head, half tail): a
/// huge tool output is found by its start and end, and stays in the log whole.
pub const MAX_INDEXED_BYTES: usize = 64 * 1024;
/// Events shown before and after a hit.
pub const CONTEXT_EVENTS: u32 = 2;
/// The longest context line, in characters.
const CONTEXT_LINE_CHARS: usize = 240;
/// Bumped when the schema changes; an index of another version is rebuilt.
const SCHEMA_VERSION: i32 = 6;
/// How long a write waits for another process's write to finish.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS docs(
    id INTEGER PRIMARY KEY,
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
    UNIQUE(kind, session, ref)
);
CREATE INDEX IF NOT EXISTS docs_by_position ON docs(session, ord);
CREATE INDEX IF NOT EXISTS docs_by_kind ON docs(kind);
CREATE VIRTUAL TABLE IF NOT EXISTS events_fts USING fts5(
    speaker, text, content='docs', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    speaker, text, content='docs', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TABLE IF NOT EXISTS speakers(name TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS event_added AFTER INSERT ON docs WHEN new.kind = 'event' BEGIN
    INSERT INTO events_fts(rowid, speaker, text) VALUES (new.id, new.speaker, new.text);
    INSERT OR IGNORE INTO speakers(name) SELECT new.speaker WHERE new.speaker <> '';
END;
CREATE TRIGGER IF NOT EXISTS event_removed AFTER DELETE ON docs WHEN old.kind = 'event' BEGIN
    INSERT INTO events_fts(events_fts, rowid, speaker, text)
        VALUES ('delete', old.id, old.speaker, old.text);
END;
CREATE TRIGGER IF NOT EXISTS memory_added AFTER INSERT ON docs WHEN new.kind <> 'event' BEGIN
    INSERT INTO memories_fts(rowid, speaker, text) VALUES (new.id, new.speaker, new.text);
END;
CREATE TRIGGER IF NOT EXISTS memory_removed AFTER DELETE ON docs WHEN old.kind <> 'event' BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, speaker, text)
        VALUES ('delete', old.id, old.speaker, old.text);
END;
CREATE TABLE IF NOT EXISTS stamps(name TEXT PRIMARY KEY, stamp TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions(session TEXT PRIMARY KEY, events INTEGER NOT NULL);
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

/// An open index. Cheap to keep open; several processes may share the file.
#[derive(Debug)]
pub struct HistoryIndex {
    pub(super) conn: Connection,
    path: PathBuf,
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
        Ok(HistoryIndex { conn, path })
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
        Ok(Some(HistoryIndex { conn, path }))
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
        let mut statement = self
            .conn
            .prepare_cached("SELECT session, events FROM sessions")
            .map_err(|e| self.error(e))?;
        let rows = statement
            .query_map([], |row| Ok((row.get(0)?, row.get::<_, i64>(1)? as u64)))
            .map_err(|e| self.error(e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.error(e))
    }

    /// Removes a session's events from the index.
    pub(crate) fn remove_session(&mut self, session: &str) -> Result<()> {
        let path = self.path.clone();
        let fail = |e: rusqlite::Error| index_error(&path, e);
        let tx = self.write_transaction().map_err(fail)?;
        tx.execute(
            "DELETE FROM docs WHERE kind = 'event' AND session = ?1",
            [session],
        )
        .map_err(fail)?;
        tx.execute("DELETE FROM sessions WHERE session = ?1", [session])
            .map_err(fail)?;
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
        let tx = self.write_transaction().map_err(fail)?;
        tx.execute("DELETE FROM docs WHERE kind IN ('fact', 'episode')", [])
            .map_err(fail)?;
        {
            let mut insert = tx.prepare_cached(INSERT_DOC).map_err(fail)?;
            for memory in &memories {
                let role = match memory.kind {
                    DocKind::Fact => SearchRole::Fact,
                    DocKind::Episode | DocKind::Event => SearchRole::Episode,
                };
                insert
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
                    ])
                    .map_err(fail)?;
            }
        }
        tx.execute(
            "INSERT OR REPLACE INTO stamps(name, stamp) VALUES ('memories', ?1)",
            [stamp],
        )
        .map_err(fail)?;
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
        let mut found = Vec::new();
        let memories: Vec<DocKind> = kinds
            .iter()
            .copied()
            .filter(|k| *k != DocKind::Event)
            .collect();
        if let (false, Some(expression)) = (
            memories.is_empty(),
            self.plan("memories_fts", query)?.for_ranking(),
        ) {
            found.extend(self.matches(
                "memories_fts",
                &expression,
                &memories,
                exclude_session,
                limit,
            )?);
        }
        let other_events = match exclude_session {
            Some(session) => self.has_other_sessions(session)?,
            None => true,
        };
        if kinds.contains(&DocKind::Event) && other_events {
            if let Some(expression) = self.plan("events_fts", query)?.for_ranking() {
                found.extend(self.matches(
                    "events_fts",
                    &expression,
                    &[DocKind::Event],
                    exclude_session,
                    limit,
                )?);
            }
        }
        Ok(found)
    }

    /// Runs `query` on the newest [`FIRST_WINDOW_DOCS`] documents (by row
    /// id, i.e. by indexing order), then on four times as many, and so on,
    /// until it returns `wanted` rows or has seen the whole index. A query
    /// whose words are everywhere is then answered from recent history at
    /// the cost of a window, not of the whole index; a query with rare words
    /// widens quickly, each step cheap.
    fn newest_first<T>(
        &self,
        wanted: usize,
        mut query: impl FnMut(i64) -> Result<Vec<T>>,
    ) -> Result<Vec<T>> {
        self.widening_from(FIRST_WINDOW_DOCS, wanted, &mut query)
    }

    fn widening_from<T>(
        &self,
        first_window: i64,
        wanted: usize,
        query: &mut impl FnMut(i64) -> Result<Vec<T>>,
    ) -> Result<Vec<T>> {
        let newest = self.newest_id()?;
        let mut window = first_window;
        loop {
            let lowest_id = newest.saturating_sub(window).max(0);
            let found = query(lowest_id)?;
            if found.len() >= wanted || lowest_id == 0 {
                return Ok(found);
            }
            window = window.saturating_mul(4);
        }
    }

    fn newest_id(&self) -> Result<i64> {
        self.conn
            .prepare_cached("SELECT coalesce(max(id), 0) FROM docs")
            .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
            .map_err(|e| self.error(e))
    }

    /// How `text` is best asked of `table`: all its terms together, and
    /// its terms that are not common in the index (see [`COMMON_TERM_SHARE`]).
    fn plan(&self, table: &str, text: &str) -> Result<QueryPlan> {
        let terms = super::query::terms(text);
        let docs = self.newest_id()?;
        let cap = ((docs as f64 * COMMON_TERM_SHARE) as i64).max(COMMON_TERM_MIN_DOCS);
        let mut rare = Vec::new();
        for term in &terms {
            if docs <= cap || self.documents_with(table, term, cap)? < cap {
                rare.push(term.clone());
            }
        }
        Ok(QueryPlan {
            all: super::query::all_of(&terms),
            rare: super::query::any_of(&rare),
        })
    }

    /// How many documents of `table` hold `term`, counting up to `cap` only.
    fn documents_with(&self, table: &str, term: &str, cap: i64) -> Result<i64> {
        self.conn
            .prepare_cached(&format!(
                "SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ?1 LIMIT ?2)"
            ))
            .and_then(|mut statement| {
                statement.query_row(params![format!("\"{term}\""), cap], |row| row.get(0))
            })
            .map_err(|e| self.error(e))
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

    fn matches(
        &self,
        table: &str,
        expression: &str,
        kinds: &[DocKind],
        exclude_session: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Candidate>> {
        let kinds: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
        self.newest_first(limit, |lowest_id| {
            self.matches_from(table, expression, &kinds, exclude_session, limit, lowest_id)
        })
    }

    fn matches_from(
        &self,
        table: &str,
        expression: &str,
        kinds: &[&str],
        exclude_session: Option<&str>,
        limit: usize,
        lowest_id: i64,
    ) -> Result<Vec<Candidate>> {
        let mut statement = self
            .conn
            .prepare_cached(&format!(
                "WITH top AS (
                     SELECT {table}.rowid AS id, bm25({table}) AS score
                     FROM {table} JOIN docs d ON d.id = {table}.rowid
                     WHERE {table} MATCH ?1 AND {table}.rowid >= ?5
                       AND instr(?2, ',' || d.kind || ',') > 0
                       AND (?3 IS NULL OR d.session <> ?3)
                     ORDER BY score LIMIT ?4)
                 SELECT d.kind, d.ref, d.session, d.turn, d.ord, d.role, d.ts, d.salience,
                        d.speaker, d.text, top.score, d.id
                 FROM top JOIN docs d ON d.id = top.id ORDER BY top.score"
            ))
            .map_err(|e| self.error(e))?;
        let rows = statement
            .query_map(
                params![
                    expression,
                    format!(",{},", kinds.join(",")),
                    exclude_session,
                    limit as i64,
                    lowest_id
                ],
                // FTS5's bm25() is negated so that ascending order ranks best first.
                |row| candidate_from_row(row, -row.get::<_, f64>(10)?),
            )
            .map_err(|e| self.error(e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.error(e))
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
        let plan = self.plan("events_fts", query)?;
        let mut ranked = Vec::new();
        // Events with every word first; then, if too few, those with the rarer words.
        for expression in [plan.all, plan.rare].into_iter().flatten() {
            if ranked.len() >= filter.limit {
                break;
            }
            let found = self.newest_first(filter.limit, |lowest_id| {
                self.ranked_events(&expression, filter, lowest_id)
            })?;
            for (id, hit) in found {
                if ranked.len() < filter.limit && !ranked.iter().any(|(seen, _, _)| *seen == id) {
                    ranked.push((id, hit, expression.clone()));
                }
            }
        }
        let mut hits = Vec::with_capacity(ranked.len());
        for (id, mut hit, expression) in ranked {
            hit.excerpt = self.snippet(&expression, id)?;
            hit.context = self.around(&hit.session, hit.ord, CONTEXT_EVENTS)?;
            hits.push(hit);
        }
        Ok(hits)
    }

    /// The best `filter.limit` events matching `expression` within `filter`, with their row ids.
    fn ranked_events(
        &self,
        expression: &str,
        filter: &SearchFilter,
        lowest_id: i64,
    ) -> Result<Vec<(i64, SearchHit)>> {
        let filtered = filter.session.is_some()
            || filter.role.is_some()
            || filter.since.is_some()
            || filter.until.is_some();
        // Without filters, matches are ranked without reading their rows.
        let filters = if filtered {
            "JOIN docs d ON d.id = events_fts.rowid
             WHERE events_fts MATCH ?1 AND events_fts.rowid >= ?7
               AND (?2 IS NULL OR d.session = ?2)
               AND (?3 IS NULL OR d.role = ?3)
               AND (?4 IS NULL OR d.ts >= ?4)
               AND (?5 IS NULL OR d.ts < ?5)"
        } else {
            "WHERE events_fts MATCH ?1 AND events_fts.rowid >= ?7
               AND coalesce(?2, ?3, ?4, ?5) IS NULL"
        };
        // Ranked on ids and scores alone; the rows' columns are read for the
        // top few only (a sort over every match's text is slow).
        let mut statement = self
            .conn
            .prepare_cached(&format!(
                "WITH top AS (
                     SELECT events_fts.rowid AS id, bm25(events_fts) AS score
                     FROM events_fts {filters}
                     ORDER BY score LIMIT ?6)
                 SELECT d.id, d.session, d.ref, d.turn, d.ord, d.role, d.ts, top.score
                 FROM top JOIN docs d ON d.id = top.id ORDER BY top.score"
            ))
            .map_err(|e| self.error(e))?;
        let rows = statement
            .query_map(
                params![
                    expression,
                    filter.session,
                    filter.role.map(SearchRole::as_str),
                    filter.since,
                    filter.until,
                    filter.limit as i64,
                    lowest_id
                ],
                |row| {
                    let id: i64 = row.get(0)?;
                    let hit = SearchHit {
                        session: row.get(1)?,
                        event_id: row.get(2)?,
                        turn_id: row.get(3)?,
                        ord: row.get::<_, i64>(4)? as u64,
                        role: SearchRole::parse_stored(&row.get::<_, String>(5)?),
                        ts: row.get(6)?,
                        score: -row.get::<_, f64>(7)?,
                        excerpt: String::new(),
                        context: Vec::new(),
                    };
                    Ok((id, hit))
                },
            )
            .map_err(|e| self.error(e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.error(e))
    }

    /// The part of document `id` around what matches `expression`,
    /// matched words in brackets.
    fn snippet(&self, expression: &str, id: i64) -> Result<String> {
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT highlight(events_fts, 1, ?3, ?4) FROM events_fts
                 WHERE events_fts MATCH ?1 AND rowid = ?2",
            )
            .map_err(|e| self.error(e))?;
        let marks = (MATCH_OPEN.to_string(), MATCH_CLOSE.to_string());
        let highlighted: Option<String> = statement
            .query_row(params![expression, id, marks.0, marks.1], |row| row.get(0))
            .optional()
            .map_err(|e| self.error(e))?;
        Ok(excerpt(&highlighted.unwrap_or_default()))
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
        let tx = self.write_transaction().map_err(fail)?;
        let mut added = 0;
        {
            let mut insert = tx.prepare_cached(INSERT_DOC).map_err(fail)?;
            for (ord, event) in events {
                // Every event gets a row, even a textless one: the row count
                // per session is how a lagging index is recognised.
                let text = indexed_text(event);
                added += insert
                    .execute(params![
                        DocKind::Event.as_str(),
                        event.id,
                        session,
                        ord as i64,
                        event.turn_id,
                        SearchRole::of(event.trace_type).as_str(),
                        event.ts,
                        EVENT_SALIENCE,
                        speaker(event).unwrap_or_default(),
                        text,
                    ])
                    .map_err(fail)?;
            }
        }
        tx.execute(
            "INSERT INTO sessions(session, events) VALUES (?1, ?2)
             ON CONFLICT(session) DO UPDATE SET events = events + excluded.events",
            params![session, added as i64],
        )
        .map_err(fail)?;
        tx.commit().map_err(fail)?;
        Ok(added)
    }

    /// A transaction that takes the write lock when it begins, waiting for
    /// another writer (the session's indexing thread, another process) as
    /// long as the busy timeout allows. A deferred one would take a read
    /// snapshot first, and upgrading it after another writer committed fails
    /// at once with "database is locked" instead of waiting.
    fn write_transaction(&mut self) -> rusqlite::Result<rusqlite::Transaction<'_>> {
        self.conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
    }

    pub(super) fn error(&self, error: rusqlite::Error) -> Error {
        index_error(&self.path, error)
    }
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
             DROP TABLE IF EXISTS speakers; DROP TABLE IF EXISTS vectors;",
        )?;
    }
    tx.execute_batch(SCHEMA)?;
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
/// Documents a query looks at first, newest first (see `newest_first`).
pub const FIRST_WINDOW_DOCS: i64 = 50_000;
/// Below this many documents, no term counts as common.
pub const COMMON_TERM_MIN_DOCS: i64 = 2_000;

/// The ways one query is asked of a table.
struct QueryPlan {
    /// Every term (AND).
    all: Option<String>,
    /// The terms that are not common (OR).
    rare: Option<String>,
}

impl QueryPlan {
    /// What ranks candidates: the rarer terms, else all terms together.
    fn for_ranking(self) -> Option<String> {
        self.rare.or(self.all)
    }
}

/// The salience of a raw event (facts and episodes carry their own).
pub const EVENT_SALIENCE: f64 = 0.5;

const INSERT_DOC: &str =
    "INSERT OR IGNORE INTO docs(kind, ref, session, ord, turn, role, ts, salience, speaker, text)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";

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
        let plan = index.plan("events_fts", "cargo parser").unwrap();
        assert_eq!(plan.rare.as_deref(), Some("\"parser\""));
        assert_eq!(plan.all.as_deref(), Some("\"cargo\" AND \"parser\""));
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

    #[test]
    fn queries_widen_from_the_newest_documents_until_they_have_enough() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = HistoryIndex::open(dir.path()).unwrap();
        let events: Vec<Event> = (0..2_500)
            .map(|i| Event::user(format!("event {i}")).with_id(format!("e{i}")))
            .collect();
        index.add_events("s", 0, &events).unwrap();
        let mut windows = Vec::new();
        let found: Vec<i64> = index
            .widening_from(100, 3, &mut |lowest| {
                windows.push(lowest);
                Ok((lowest..2_500).filter(|id| id % 500 == 0).collect())
            })
            .unwrap();
        assert_eq!(windows, [2_400, 2_100, 900]);
        assert_eq!(found, [1_000, 1_500, 2_000]);
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
