//! The storage seam: what a session's durable record needs from wherever it
//! is kept — plain files under a data directory (the files backend, today's
//! on-disk format) or a database that many agent servers share (the
//! PostgreSQL backend of the `agentmem-postgres` crate).
//!
//! # Behind the seam
//!
//! [`Storage`] is the store's side: create, list, describe, read, fork and
//! delete sessions, and take a session's one-writer lock, which yields a
//! [`SessionWriter`], the writer's side: append a batch, commit a
//! compaction, record the session's description. Both are synchronous and
//! object safe (`Box<dyn Storage>`): the engine stays synchronous, and a
//! backend that talks to a server owns its connections (a pool, or one
//! connection a writer holds its lock on).
//!
//! What every backend promises, and what `agentmem-postgres`'s conformance
//! suite checks against both backends from one source:
//!
//! - **Appends are all or nothing and idempotent by event id.** A batch is
//!   validated, events whose id the session already holds (in its active
//!   log, in its archive, or earlier in the batch) are dropped as
//!   duplicates, what the events left empty (id, time, turn, seq) is
//!   assigned as the engine does, and the rest is stored in one step: a
//!   failure or a crash leaves none of the batch.
//! - **Order is the append order**: the active log reads back in the order
//!   its events were appended, by position ([`EventRange`]).
//! - **A compaction commits in one step** ([`CompactionCommit`]): the
//!   snapshot is stored and the first events of the active log move to the
//!   archive together, with the episode and facts the compaction produced
//!   on a database ([`CommitMemory`]); a crash leaves the previous state or
//!   the new one. (On files the episode and facts follow the commit, each
//!   once, and a session opened after a crash between them finishes it.)
//! - **One writer per session**: a second writer, in this process or on
//!   another host, gets [`crate::Error::SessionLocked`]; the lock goes with
//!   the writer (dropping it releases the lock) and with the writer's
//!   process or connection when that dies. Readers never take it and never
//!   wait.
//! - **Fork and delete are all or nothing**: a fork appears whole or not at
//!   all; a delete is refused while a writer holds the session.
//!
//! # What stays in the engine
//!
//! Everything that decides rather than stores: validation, turn and seq
//! assignment, the write-time guard, token accounting, the context
//! pipeline, what a compaction keeps and summarizes, recall's scoring.
//! Those run the same over every backend.
//!
//! # The live session on the seam
//!
//! A [`crate::Session`] opened on a backend ([`crate::Store::open_session_in`],
//! [`crate::Store::create_session_in`]) keeps its log through the backend's
//! [`SessionWriter`] and reads through its [`Storage`]: ingest, prepare,
//! compaction (its snapshot and archive move are one
//! [`SessionWriter::commit_compaction`]) and the events work the same on
//! every backend. On files the session keeps writing its folder with the
//! log code it always had, so the format, the crash recovery and the cost
//! of a turn there are unchanged.
//!
//! # The agent's memory on the seam
//!
//! [`memory::MemoryStorage`] is the agent-level side: `MEMORY.md` (read,
//! and replaced by compare-and-swap on its hash), the semantic facts
//! (changed under the agent's memory lock, read and written as one
//! step), the episodic items (appended once by id), the key redacted
//! facts' fingerprints are made with, each session's evicted tool
//! outputs, and the working-memory schemas (the agent's, and a
//! session's own, which a fork copies and a delete removes). The engine's
//! [`crate::memory::notebook::Notebook`] and
//! [`crate::memory::facts::FactStore`] work over it
//! (`Notebook::on`, `FactStore::on`): on files they keep using their file
//! code, caches and format; elsewhere their edits (append, replace,
//! merge, supersede, delete) run the same decisions over the backend.
//! [`copy::copy_memory`], [`copy::copy_evicted`] and
//! [`copy::copy_session_schema`] copy them between backends, again
//! without duplicates after an interruption.
//!
//! A session on a backend takes that backend's memory
//! ([`Storage::memory`]): its compaction's episode and facts go with the
//! commit ([`CommitMemory`]), ending it appends an episode, the write-time
//! guard's evictions are kept there, and its contexts get the agent's
//! MEMORY.md, facts and latest summaries read through it, and recall of
//! the agent's other sessions read through the backend's history index
//! ([`Storage::search_index`]), as a session on files recalls from its
//! own.
//!
//! # Working memory on the seam
//!
//! A session's working memory is its log's working-memory events: each
//! update is checked against the current state and the schema, numbered,
//! and appended like any event, so its compare-and-swap
//! ([`crate::Error::WorkingMemoryConflict`] on a stale version) and its
//! history are the same on every backend. Opened on a backend, a session
//! replays its state from the log (from the archive too when its
//! snapshot names a state a compaction moved there); on files it keeps
//! the materialized `working_memory.json` beside its log, as before. The
//! schemas are the memory side's ([`memory::SchemaOf`]).
//!
//! # Not behind the seam
//!
//! Nothing a command or the service uses: every feature runs on every
//! backend, and one that could not would be refused with
//! [`crate::Error::NotOnBackend`], never a silent fallback to files. The
//! history index and its vectors are behind the seam ([`search`]).
//!
//! # How a backend is chosen
//!
//! `[storage] backend = "files" | "postgres"` in the data directory's
//! `config.toml` (with `url = "postgres://…"`), or the environment's
//! `AGENTMEM_DATABASE_URL`, which selects PostgreSQL at that URL (see
//! [`crate::config::StorageConfig`]). The engine's [`crate::Store`] is the
//! files backend's home and implements the seam over today's files
//! (`Store::storage`); the CLI and the server build a PostgreSQL backend
//! from the configuration, the engine holding no network code.

pub mod batch;
pub mod copy;
pub mod fork;
pub mod memory;
pub mod search;

use std::fmt;
use std::sync::Arc;

use crate::base::error::Result;
use crate::base::event::Event;
use crate::base::id::{AgentId, SessionId};
use crate::files::meta::SessionMeta;
use crate::files::snapshot::{CompactionMemory, Snapshot};
use memory::MemoryStorage;

/// Which kind of storage keeps the sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// Plain files under the data directory (the default).
    #[default]
    Files,
    /// A PostgreSQL database, shared by every host that points at it.
    Postgres,
}

impl Backend {
    /// The backend's name, as the configuration spells it.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Files => "files",
            Backend::Postgres => "postgres",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which of the active log's events to read, by position (0 is the first
/// event after the last compaction).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventRange {
    /// Every event of the active log.
    All,
    /// Positions `start..end` (clamped to the log).
    Span {
        /// The first position read.
        start: usize,
        /// One past the last position read.
        end: usize,
    },
    /// The last `n` events.
    Tail(usize),
}

impl EventRange {
    /// The positions this range covers in a log of `len` events.
    pub fn positions(self, len: usize) -> std::ops::Range<usize> {
        match self {
            EventRange::All => 0..len,
            EventRange::Span { start, end } => start.min(len)..end.min(len).max(start.min(len)),
            EventRange::Tail(n) => len.saturating_sub(n)..len,
        }
    }
}

/// How many events a session holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EventCount {
    /// In the active log.
    pub active: usize,
    /// Moved to the archive by compactions.
    pub archived: usize,
}

/// What one append did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Appended {
    /// The events stored, as stored (ids, times, turns and seqs assigned).
    pub events: Vec<Event>,
    /// Events dropped because the session already held their id.
    pub duplicates: usize,
}

/// A compaction, committed in one step: the first `archived` events of the
/// active log move to the archive and `snapshot` becomes the session's.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionCommit {
    /// How many events, from the start of the active log, move to the archive.
    pub archived: usize,
    /// The new snapshot.
    pub snapshot: Snapshot,
    /// Who sets the snapshot's fields that follow from the move.
    pub fields: SnapshotFields,
    /// The long-term memory the compaction leaves, kept with it.
    pub memory: CommitMemory,
}

/// What a compaction commit keeps of the agent's long-term memory.
#[derive(Debug, Clone, PartialEq)]
pub enum CommitMemory {
    /// The episode and facts the compaction produced: a database keeps
    /// them in the commit's transaction (the facts merged as
    /// [`crate::memory::facts::FactStore`] merges them, each once), and
    /// marks the compaction finished with them; the files backend writes
    /// them right after the commit, each once.
    Keep(CompactionMemory),
    /// Nothing: a copy of another backend's snapshot, whose agent memory
    /// is copied on its own ([`copy::copy_memory`]).
    Elsewhere,
}

/// Who sets a committed snapshot's `active_first_id`, `tail_events` and
/// `archived_events`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotFields {
    /// The backend, from the move it commits (a compaction).
    FromTheMove,
    /// Nobody: the snapshot is stored as given (a copy of another backend's).
    AsGiven,
}

/// Where sessions are kept (see the module docs for what every backend
/// promises).
pub trait Storage: fmt::Debug + Send + Sync {
    /// Which kind of storage this is.
    fn backend(&self) -> Backend;

    /// The same backend's agent memory (see [`memory`]).
    fn memory(self: Arc<Self>) -> Arc<dyn MemoryStorage>;

    /// Creates an empty session and takes its writer lock;
    /// [`crate::Error::SessionExists`] when the id is taken.
    fn create_session(&self, agent: &AgentId, id: &SessionId) -> Result<Box<dyn SessionWriter>>;

    /// Takes the writer lock of an existing session;
    /// [`crate::Error::SessionLocked`] while another writer holds it,
    /// [`crate::Error::SessionNotFound`] when there is none.
    fn lock_session(&self, agent: &AgentId, id: &SessionId) -> Result<Box<dyn SessionWriter>>;

    /// The session's description, its counts as of now.
    fn session_meta(&self, agent: &AgentId, id: &SessionId) -> Result<SessionMeta>;

    /// Every agent with a session, by id.
    fn list_agents(&self) -> Result<Vec<AgentId>>;

    /// Every session of `agent`, most recently updated first.
    fn list_sessions(&self, agent: &AgentId) -> Result<Vec<SessionMeta>>;

    /// Events of the active log, in order; never waits for a writer.
    fn read_events(&self, agent: &AgentId, id: &SessionId, range: EventRange)
        -> Result<Vec<Event>>;

    /// How many events the session holds, active and archived.
    fn event_count(&self, agent: &AgentId, id: &SessionId) -> Result<EventCount>;

    /// The archive: every event compactions moved out of the active log, in order.
    fn archived_events(&self, agent: &AgentId, id: &SessionId) -> Result<Vec<Event>>;

    /// The whole raw history, read at one moment: the archive, then the
    /// active log, each event once.
    fn full_history(&self, agent: &AgentId, id: &SessionId) -> Result<Vec<Event>>;

    /// The session's compaction snapshot, if it was ever compacted.
    fn snapshot(&self, agent: &AgentId, id: &SessionId) -> Result<Option<Snapshot>>;

    /// Copies `source`'s history through `at_turn` (`turn_0003` or `3`; all
    /// of it when `None`) into the new session `new_id`, which appears
    /// whole or not at all.
    fn fork_session(
        &self,
        agent: &AgentId,
        source: &SessionId,
        at_turn: Option<&str>,
        new_id: &SessionId,
    ) -> Result<SessionMeta>;

    /// Deletes the session and everything it holds; refused
    /// ([`crate::Error::SessionLocked`]) while a writer holds it.
    fn delete_session(&self, agent: &AgentId, id: &SessionId) -> Result<()>;

    /// The agent's history index, caught up with every session (see
    /// [`search`]): what `search` and `recall` read.
    fn search_index(&self, agent: &AgentId) -> Result<Box<dyn search::SearchIndex>>;

    /// The agent's history index as this process's indexer is leaving it,
    /// for the recall of a prepare, which must not wait on that indexer:
    /// what it was handed and has not added yet may be missing, as recall
    /// in a session on files reads its index. [`Storage::search_index`]
    /// where the backend has no such indexer.
    fn search_index_as_fed(&self, agent: &AgentId) -> Result<Box<dyn search::SearchIndex>> {
        self.search_index(agent)
    }
}

/// The one writer of a session: holds its lock until dropped.
pub trait SessionWriter: fmt::Debug + Send {
    /// The session written.
    fn id(&self) -> &SessionId;

    /// Appends `events` all or nothing, dropping those whose id the session
    /// already holds.
    fn append(&mut self, events: Vec<Event>) -> Result<Appended>;

    /// Commits a compaction in one step (see [`CompactionCommit`]).
    fn commit_compaction(&mut self, commit: CompactionCommit) -> Result<()>;

    /// The session's description as this writer keeps it.
    fn meta(&self) -> SessionMeta;

    /// Takes from `source` (the same session's description elsewhere) what
    /// the log does not tell: when it was created and last changed, its
    /// title, where it was forked from, its imports, the compactions finished.
    fn adopt_meta(&mut self, source: &SessionMeta) -> Result<()>;
}
