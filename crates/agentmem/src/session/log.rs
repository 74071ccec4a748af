//! One session's durable record: its description, the active log's events
//! and every id the session holds, the writer that appends to the log
//! (holding the lock), what was repaired when it was opened, and the
//! indexer fed as the log grows.
//!
//! The record is kept in one of two places ([`Keeping`]): the session's
//! folder, written by this module (`meta.json` and the JSONL logs), or a
//! backend behind the storage seam ([`crate::storage`]), written through
//! its [`SessionWriter`] and read through its [`Storage`].
//!
//! Opening a folder repairs what a crash left (a batch cut short, a torn
//! last line, bad lines, a compaction interrupted after its commit, archive
//! lines of one interrupted before it); appending takes a batch all or
//! nothing, on either keeping.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Access;
use crate::base::error::{Error, IoContext, Result};
use crate::base::event::{now_millis, now_ts, Event, TraceType};
use crate::base::fs::write_atomic;
use crate::base::id::{AgentId, EventIds, SessionId};
use crate::base::turn::TurnTracker;
use crate::files::archive;
use crate::files::jsonl::Durability;
use crate::files::jsonl::{self, AppendLog, Recovery};
use crate::files::lock::SessionLock;
use crate::files::meta::{title_from, ImportRecord, SessionMeta};
use crate::files::paths::SessionPaths;
use crate::files::snapshot::Snapshot;
use crate::redact::RedactionPolicy;
use crate::search::{IndexFeeder, VectorFeed};
use crate::storage::{
    CommitMemory, CompactionCommit, EventRange, SessionWriter, SnapshotFields, Storage,
};

/// How often, at most, appends refresh `meta.json` (it is also written on close).
const META_REFRESH_INTERVAL: Duration = Duration::from_secs(2);

/// The log of one open session (see the module docs).
#[derive(Debug)]
pub(crate) struct SessionLog {
    paths: SessionPaths,
    agent: AgentId,
    id: SessionId,
    /// Personal data kept out of the title.
    redaction: RedactionPolicy,
    meta: SessionMeta,
    meta_dirty: bool,
    meta_written: Instant,
    /// Shared with the transcript's view: the active context is held once.
    events: Vec<Arc<Event>>,
    ids: KnownIds,
    turns: TurnTracker,
    event_ids: EventIds,
    keeping: Keeping,
    recoveries: Vec<Recovery>,
    /// The agent index's background embedder, woken as events are indexed.
    vectors: Option<Arc<VectorFeed>>,
}

/// Where the session's record is kept, and this handle's hold on it.
#[derive(Debug)]
enum Keeping {
    /// The session's folder, in today's files (see [`crate::files`]).
    Folder {
        /// A writer's append handle and lock; `None` for a reader.
        writer: Option<Writer>,
        indexing: Indexing,
    },
    /// A backend behind the storage seam (a database).
    Seam {
        storage: Arc<dyn Storage>,
        /// The session's one writer; `None` for a reader.
        writer: Option<Box<dyn SessionWriter>>,
    },
}

/// The writer's hold on the session: the append handle and the lock.
#[derive(Debug)]
struct Writer {
    log: AppendLog,
    lock: SessionLock,
}

impl Writer {
    /// Appends `events` all or nothing: a batch of several is recorded in
    /// the lock file before its lines are written, so one a crash cuts
    /// short is taken out of the log on the next open.
    fn append(&mut self, events: &[Event]) -> Result<()> {
        self.log.encode(events);
        if events.len() > 1 {
            let batch = self.log.pending();
            self.lock.record_batch(batch, self.log.durability())?;
        }
        self.log.write_encoded()
    }
}

/// The ids of the events the session holds: the active log's, and once
/// read (see [`SessionLog::learn_archived_ids`]) the archive's.
#[derive(Debug)]
struct KnownIds {
    ids: foldhash::HashSet<String>,
    archive: ArchivedIds,
}

/// Whether the archive's ids are among the known ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArchivedIds {
    Unread,
    Read,
}

/// Where the log's appends go to be indexed.
#[derive(Debug)]
enum Indexing {
    /// Nothing appended yet: the indexer of the agent's index in this
    /// folder starts with the first append.
    Idle {
        agent_dir: PathBuf,
    },
    Feeding(IndexFeeder),
}

/// A batch checked for appending: the events new to the session, each
/// with its place in the batch, and how many it already held.
#[derive(Debug)]
pub(crate) struct Admitted {
    pub(crate) fresh: Vec<Event>,
    /// Where each of `fresh` stood in the batch (errors name that place).
    pub(crate) batch_index: Vec<usize>,
    pub(crate) duplicates: usize,
}

/// A compaction's span taken into the archive: how many of its events the
/// archive lacked, and the lines of the tail that stays.
#[derive(Debug)]
pub(crate) struct ArchivedSpan {
    pub(crate) fresh: usize,
    pub(crate) tail_lines: Vec<u8>,
}

impl SessionLog {
    /// Opens the log in `paths`, repairing it when `access` writes, and
    /// reads the compaction snapshot with it (an interrupted compaction is
    /// finished first). `agent_dir` holds the agent's search index.
    pub(crate) fn open(
        paths: SessionPaths,
        agent: AgentId,
        id: SessionId,
        access: Access,
        redaction: RedactionPolicy,
        agent_dir: PathBuf,
    ) -> Result<(SessionLog, Option<Snapshot>)> {
        let mut lock = match access {
            Access::Write(_) => Some(SessionLock::acquire(&paths.dir, id.as_str())?),
            Access::Read => None,
        };
        let (events, mut recoveries) = read_log(&paths, lock.as_mut())?;
        let mut meta = SessionMeta::read(&paths.dir)
            .unwrap_or_else(|_| crate::files::meta::meta_for(&events, &agent, &id, redaction));
        let snapshot = Snapshot::read(&paths.dir)?;
        let events = match &snapshot {
            Some(snapshot) => finish_interrupted(
                &paths,
                snapshot,
                events,
                meta.compactions_finished,
                lock.is_some(),
            )?,
            None => events,
        };
        if let Some(archived) = snapshot.as_ref().and_then(|s| s.archived_events) {
            meta.archived_events = archived;
        }
        let ids: foldhash::HashSet<String> = events.iter().map(|e| e.id.clone()).collect();
        let writer = match (access, lock) {
            (Access::Write(durability), Some(lock)) => {
                let cut = archive::cut_unfinished_append(&paths.archive(), |id| ids.contains(id))?;
                if cut > 0 {
                    recoveries.push(Recovery::UnfinishedArchiveAppend {
                        archive: paths.archive(),
                        lines: cut,
                    });
                }
                remove_stale_temporaries(&paths)?;
                // Opened once every repair above has replaced the log.
                let log = AppendLog::open(&paths.raw_traces(), durability)?;
                Some(Writer { log, lock })
            }
            (Access::Write(_) | Access::Read, _) => None,
        };
        let keeping = Keeping::Folder {
            writer,
            indexing: Indexing::Idle { agent_dir },
        };
        let mut log =
            SessionLog::holding(events, ids, paths, (agent, id), redaction, meta, keeping);
        log.recoveries = recoveries;
        log.refresh_meta_counts();
        Ok((log, snapshot))
    }

    /// The log of `events` (their ids `ids`) of the session `(agent, id)`,
    /// kept as `keeping` says.
    fn holding(
        events: Vec<Event>,
        ids: foldhash::HashSet<String>,
        paths: SessionPaths,
        (agent, id): (AgentId, SessionId),
        redaction: RedactionPolicy,
        meta: SessionMeta,
        keeping: Keeping,
    ) -> SessionLog {
        SessionLog {
            turns: TurnTracker::from_events(&events),
            events: events.into_iter().map(Arc::new).collect(),
            ids: KnownIds {
                ids,
                archive: ArchivedIds::Unread,
            },
            event_ids: EventIds::new(),
            paths,
            agent,
            id,
            redaction,
            meta,
            meta_dirty: false,
            meta_written: Instant::now(),
            keeping,
            recoveries: Vec::new(),
            vectors: None,
        }
    }

    /// Wakes `feed` whenever appended events are indexed.
    pub(crate) fn feed_vectors(&mut self, feed: Option<Arc<VectorFeed>>) {
        self.vectors = feed;
    }

    /// Opens the log of a session kept behind the storage seam: as its
    /// writer when `writer` is given (it holds the session's lock), else as
    /// a reader. `paths` names where the files backend would keep it; on
    /// the seam nothing is read or written there.
    pub(crate) fn on_seam(
        storage: Arc<dyn Storage>,
        writer: Option<Box<dyn SessionWriter>>,
        paths: SessionPaths,
        agent: AgentId,
        id: SessionId,
        redaction: RedactionPolicy,
    ) -> Result<(SessionLog, Option<Snapshot>)> {
        // The events before the snapshot: a compaction committed between
        // the two reads shows as events the snapshot already moved, which
        // are left out below, never as events missing.
        let events = storage.read_events(&agent, &id, EventRange::All)?;
        let snapshot = storage.snapshot(&agent, &id)?;
        let events = match snapshot.as_ref().and_then(|s| s.active_first_id.as_ref()) {
            Some(first) => match events.iter().position(|e| &e.id == first) {
                Some(start) => events[start..].to_vec(),
                None => events,
            },
            None => events,
        };
        let meta = match &writer {
            Some(writer) => writer.meta(),
            None => storage.session_meta(&agent, &id)?,
        };
        let ids = events.iter().map(|e| e.id.clone()).collect();
        let keeping = Keeping::Seam { storage, writer };
        let log = SessionLog::holding(events, ids, paths, (agent, id), redaction, meta, keeping);
        Ok((log, snapshot))
    }

    /// The session id.
    pub(crate) fn id(&self) -> &SessionId {
        &self.id
    }

    /// The agent the session belongs to.
    pub(crate) fn agent(&self) -> &AgentId {
        &self.agent
    }

    /// The session's files.
    pub(crate) fn paths(&self) -> &SessionPaths {
        &self.paths
    }

    /// When this writer's appends to the session's folder reach the disk;
    /// `None` for a reader, or a session behind the storage seam.
    pub(crate) fn folder_durability(&self) -> Option<Durability> {
        match &self.keeping {
            Keeping::Folder {
                writer: Some(writer),
                ..
            } => Some(writer.log.durability()),
            Keeping::Folder { writer: None, .. } | Keeping::Seam { .. } => None,
        }
    }

    /// The events of the active log, in order.
    pub(crate) fn events(&self) -> &[Arc<Event>] {
        &self.events
    }

    /// The session's description with counts as of now.
    pub(crate) fn meta(&self) -> &SessionMeta {
        &self.meta
    }

    /// What was repaired or skipped when the log was opened.
    pub(crate) fn recoveries(&self) -> &[Recovery] {
        &self.recoveries
    }

    /// Adds what opening the session's other parts repaired or skipped.
    pub(crate) fn add_recoveries(&mut self, more: impl IntoIterator<Item = Recovery>) {
        self.recoveries.extend(more);
    }

    /// The turn the next non-user event joins.
    pub(crate) fn current_turn(&self) -> &str {
        self.turns.current_turn()
    }

    /// Whether this handle writes the log (holds its lock).
    pub(crate) fn is_writer(&self) -> bool {
        match &self.keeping {
            Keeping::Folder { writer, .. } => writer.is_some(),
            Keeping::Seam { writer, .. } => writer.is_some(),
        }
    }

    /// `Ok` for a writer; a reader may not change the session.
    pub(crate) fn require_writer(&self) -> Result<()> {
        if self.is_writer() {
            Ok(())
        } else {
            Err(Error::ReadOnly {
                session: self.id.to_string(),
            })
        }
    }

    /// The agent memory of the backend the session is kept on, when that
    /// is behind the storage seam; `None` in its folder, where the agent's
    /// files beside it hold the memory.
    pub(crate) fn seam_memory(&self) -> Option<Arc<dyn crate::storage::memory::MemoryStorage>> {
        match &self.keeping {
            Keeping::Folder { .. } => None,
            Keeping::Seam { storage, .. } => Some(Arc::clone(storage).memory()),
        }
    }

    /// The backend the session is kept on, when that is behind the
    /// storage seam; `None` in its folder.
    pub(crate) fn seam_storage(&self) -> Option<Arc<dyn crate::storage::Storage>> {
        match &self.keeping {
            Keeping::Folder { .. } => None,
            Keeping::Seam { storage, .. } => Some(Arc::clone(storage)),
        }
    }

    /// Whether the session is kept in its folder (not behind the storage seam).
    pub(crate) fn in_folder(&self) -> bool {
        matches!(self.keeping, Keeping::Folder { .. })
    }

    /// The archive: every event compactions moved out of the active log.
    pub(crate) fn archived_events(&self) -> Result<Vec<Event>> {
        match &self.keeping {
            Keeping::Folder { .. } => Ok(jsonl::read_log(&self.paths.archive())?.events),
            Keeping::Seam { storage, .. } => storage.archived_events(&self.agent, &self.id),
        }
    }

    /// The whole raw history: archived events first, then the active log.
    /// An event found twice (a compaction interrupted after archiving) is given once.
    pub(crate) fn full_history(&self) -> Result<Vec<Event>> {
        let mut history = self.archived_events()?;
        history.extend(self.events.iter().map(|e| Event::clone(e)));
        let mut seen = HashSet::with_capacity(history.len());
        history.retain(|e| seen.insert(e.id.clone()));
        Ok(history)
    }

    /// Adds the ids of archived events to the ids the session knows; reads
    /// the archive once per open log.
    pub(crate) fn learn_archived_ids(&mut self) -> Result<()> {
        if self.ids.archive == ArchivedIds::Read {
            return Ok(());
        }
        match &self.keeping {
            Keeping::Folder { .. } => self
                .ids
                .ids
                .extend(archive::archived_ids(&self.paths.archive())?),
            Keeping::Seam { storage, .. } => self.ids.ids.extend(
                storage
                    .archived_events(&self.agent, &self.id)?
                    .into_iter()
                    .map(|e| e.id),
            ),
        }
        self.ids.archive = ArchivedIds::Read;
        Ok(())
    }

    /// Checks a batch before anything is written: a writer's, every event
    /// valid, and those whose id the session already holds (the archive's
    /// included, or earlier in the batch) set aside as duplicates.
    pub(crate) fn admit(&mut self, events: Vec<Event>) -> Result<Admitted> {
        self.require_writer()?;
        for (index, event) in events.iter().enumerate() {
            event
                .validate()
                .map_err(|reason| Error::InvalidEvent { index, reason })?;
        }
        if events
            .iter()
            .any(|e| !e.id.is_empty() && !self.ids.ids.contains(&e.id))
        {
            self.learn_archived_ids()?;
        }
        let mut admitted = Admitted {
            fresh: Vec::with_capacity(events.len()),
            batch_index: Vec::with_capacity(events.len()),
            duplicates: 0,
        };
        let mut batch_ids = foldhash::HashSet::default();
        for (index, event) in events.into_iter().enumerate() {
            if !event.id.is_empty()
                && (self.ids.ids.contains(&event.id) || !batch_ids.insert(event.id.clone()))
            {
                admitted.duplicates += 1;
                continue;
            }
            admitted.fresh.push(event);
            admitted.batch_index.push(index);
        }
        Ok(admitted)
    }

    /// Gives `fresh` what it left empty (id, time, turn, seq), appends it
    /// all or nothing, hands its lines to the indexer and remembers it.
    /// Returns the events appended, as the log now holds them.
    pub(crate) fn append(&mut self, mut fresh: Vec<Event>) -> Result<&[Arc<Event>]> {
        self.require_writer()?;
        if let Keeping::Seam {
            writer: Some(writer),
            ..
        } = &mut self.keeping
        {
            // The backend assigns what the events left empty, as the engine does.
            let mut stored = writer.append(fresh)?.events;
            // The backend indexes them in the background; its embedder
            // looks again shortly after.
            if let Some(vectors) = &self.vectors {
                vectors.wake();
            }
            let meta = writer.meta();
            for event in &mut stored {
                self.turns.assign(event);
            }
            let before = self.events.len();
            self.remember(stored);
            // The backend stored the description with the events.
            self.meta = meta;
            self.meta_dirty = false;
            return Ok(&self.events[before..]);
        }
        for event in &mut fresh {
            self.assign(event);
        }
        let Keeping::Folder {
            writer: Some(writer),
            ..
        } = &mut self.keeping
        else {
            unreachable!("a writer, checked above, not on the seam");
        };
        if let Err(error) = writer.append(&fresh) {
            // None of the batch is in the log: the turns are as they were.
            self.turns = TurnTracker::from_events(self.events.iter().map(|e| &**e));
            return Err(error);
        }
        self.feed_index();
        let before = self.events.len();
        self.remember(fresh);
        Ok(&self.events[before..])
    }

    /// Hands the lines the log just appended, the events not yet
    /// remembered, to the background indexer.
    fn feed_index(&mut self) {
        let first_ord = (self.meta.archived_events + self.events.len()) as u64;
        let Keeping::Folder {
            writer: Some(writer),
            indexing,
        } = &mut self.keeping
        else {
            return;
        };
        let lines = writer.log.appended();
        if lines.is_empty() {
            return;
        }
        let lines = lines.to_vec();
        if let Indexing::Idle { agent_dir } = indexing {
            let vectors = self.vectors.clone();
            *indexing = Indexing::Feeding(IndexFeeder::start(agent_dir.clone(), vectors));
        }
        if let Indexing::Feeding(feeder) = indexing {
            feeder.add(self.id.as_str(), first_ord, lines);
        }
    }

    /// The indexer the log feeds, once something was appended (never on
    /// the seam: the search index is not behind it yet).
    pub(crate) fn feeder(&self) -> Option<&IndexFeeder> {
        match &self.keeping {
            Keeping::Folder {
                indexing: Indexing::Feeding(feeder),
                ..
            } => Some(feeder),
            Keeping::Folder {
                indexing: Indexing::Idle { .. },
                ..
            }
            | Keeping::Seam { .. } => None,
        }
    }

    /// Waits until the events appended so far are in the search index.
    pub(crate) fn flush_index(&self) {
        if let Some(feeder) = self.feeder() {
            feeder.flush();
        }
    }

    fn assign(&mut self, event: &mut Event) {
        if event.ts == 0.0 {
            event.ts = now_ts();
        }
        if event.id.is_empty() {
            event.id = self.event_ids.next_id(now_millis());
        }
        self.turns.assign(event);
    }

    fn remember(&mut self, events: Vec<Event>) {
        if events.is_empty() {
            return;
        }
        let events: Vec<Arc<Event>> = events.into_iter().map(Arc::new).collect();
        for event in &events {
            self.ids.ids.insert(event.id.clone());
            if event.trace_type == TraceType::User {
                self.meta.turns = self.meta.turns.max(self.turns.last_turn_number() as usize);
                if self.meta.title.is_none() {
                    self.meta.title = Some(title_from(&event.content, self.redaction));
                    self.meta_written = Instant::now() - META_REFRESH_INTERVAL;
                }
            }
        }
        // Imported history can predate the session: it started when its first event did.
        self.meta.created = self.meta.created.min(events[0].ts);
        self.meta.updated = self.meta.updated.max(events.last().map_or(0.0, |e| e.ts));
        self.events.extend(events);
        self.meta.events = self.meta.archived_events + self.events.len();
        self.meta_dirty = true;
    }

    /// Commits a compaction: `span` (the first of the active log's events,
    /// after the `archived_prefix` the archive already holds) moves to the
    /// archive, the active log becomes `tail`, and the snapshot `make`
    /// builds (given how many events the archive then holds) becomes the
    /// session's, which is returned. In the folder these are the
    /// crash-safe steps of `compaction.rs`; on the seam, the writer's one
    /// commit ([`SessionWriter::commit_compaction`]).
    pub(crate) fn commit_compaction(
        &mut self,
        span: &[Event],
        tail: Vec<Arc<Event>>,
        archived_prefix: usize,
        make: impl FnOnce(usize) -> Snapshot,
    ) -> Result<Snapshot> {
        self.require_writer()?;
        if let Keeping::Seam {
            writer: Some(writer),
            ..
        } = &mut self.keeping
        {
            let moved = span.len() - archived_prefix.min(span.len());
            let snapshot = make(self.meta.archived_events.saturating_add(moved));
            let memory = match &snapshot.memory {
                Some(memory) => CommitMemory::Keep(memory.clone()),
                None => CommitMemory::Elsewhere,
            };
            writer.commit_compaction(CompactionCommit {
                archived: moved,
                snapshot: snapshot.clone(),
                fields: SnapshotFields::AsGiven,
                memory,
            })?;
            self.meta = writer.meta();
            self.events = tail;
            return Ok(snapshot);
        }
        let archived = self.archive_span(span, &tail, archived_prefix)?;
        let archived_events = self.meta.archived_events.saturating_add(archived.fresh);
        let snapshot = make(archived_events);
        snapshot.write(&self.paths.dir)?;
        self.replace_with_tail(&archived.tail_lines, tail, archived_events)?;
        Ok(snapshot)
    }

    /// Takes `span` (the first of the active log's events, after the
    /// `archived_prefix` the archive already holds) into the archive.
    /// The lines are the log's own, encoded afresh only when the log does
    /// not hold the active events one a line (it always does unless edited
    /// by hand).
    fn archive_span(
        &self,
        span: &[Event],
        tail: &[Arc<Event>],
        archived_prefix: usize,
    ) -> Result<ArchivedSpan> {
        let path = self.paths.raw_traces();
        let log = std::fs::read(&path).io("read", &path)?;
        let fresh = &span[archived_prefix.min(span.len())..];
        let (span_lines, tail_lines) = match jsonl::lines_for(&log, &self.events[archived_prefix..])
        {
            Some(lines) => {
                let (span_lines, tail_lines) = lines.split_at(fresh.len());
                (span_lines.concat(), tail_lines.concat())
            }
            None => (
                jsonl::encode_lines(fresh),
                jsonl::encode_lines(tail.iter().map(|e| &**e)),
            ),
        };
        let mut archive = AppendLog::open(&self.paths.archive(), Durability::Batch)?;
        archive.append_encoded(&span_lines)?;
        Ok(ArchivedSpan {
            fresh: fresh.len(),
            tail_lines,
        })
    }

    /// Replaces the active log by `tail` (its lines `tail_lines`) once a
    /// compaction committed, the archive now holding `archived_events`.
    fn replace_with_tail(
        &mut self,
        tail_lines: &[u8],
        tail: Vec<Arc<Event>>,
        archived_events: usize,
    ) -> Result<()> {
        write_atomic(&self.paths.raw_traces(), tail_lines)?;
        self.reopen()?;
        self.meta.archived_events = archived_events;
        self.events = tail;
        self.meta_dirty = true;
        Ok(())
    }

    /// Reopens the append handle after the log file was replaced; no batch
    /// is under way in the new one.
    fn reopen(&mut self) -> Result<()> {
        let Keeping::Folder {
            writer: Some(writer),
            ..
        } = &mut self.keeping
        else {
            unreachable!("callers check for a writer in the folder");
        };
        let durability = writer.log.durability();
        writer.log = AppendLog::open(&self.paths.raw_traces(), durability)?;
        writer.lock.clear_batch()
    }

    /// Puts `events` in the place of the active log's events, in memory
    /// only, and returns those it held: a compaction from the raw log
    /// works on the whole history this way, and puts them back when it is
    /// not applied.
    pub(crate) fn swap_events(&mut self, events: Vec<Arc<Event>>) -> Vec<Arc<Event>> {
        std::mem::replace(&mut self.events, events)
    }

    /// Records that `events_added` events came from an import of `path`.
    pub(crate) fn record_import(
        &mut self,
        path: &str,
        format: &str,
        events_added: usize,
    ) -> Result<()> {
        self.meta.imports.push(ImportRecord {
            path: path.to_owned(),
            format: format.to_owned(),
            ts: now_ts(),
            events_added,
        });
        self.write_meta()
    }

    /// Records that the first `compactions` compactions are done, every step.
    pub(crate) fn record_compactions_done(&mut self, compactions: u64) -> Result<()> {
        self.meta.compactions_finished = compactions;
        self.write_meta()
    }

    /// Takes what the log does not tell from `source` (see [`SessionMeta::adopt`]).
    pub(crate) fn adopt_meta(&mut self, source: &SessionMeta) -> Result<()> {
        self.require_writer()?;
        self.meta.adopt(source);
        self.write_meta()
    }

    /// Writes pending meta changes and releases the writer lock.
    pub(crate) fn close(mut self) -> Result<()> {
        if self.meta_dirty {
            self.write_meta()?;
        }
        Ok(())
    }

    fn refresh_meta_counts(&mut self) {
        let users = self
            .events
            .iter()
            .filter(|e| e.trace_type == crate::base::event::TraceType::User)
            .count();
        self.meta.events = self.meta.archived_events + self.events.len();
        // Turn numbers keep counting across compactions.
        self.meta.turns = users.max(self.turns.last_turn_number() as usize);
        if self.meta.title.is_none() {
            // Only a title not made yet is worth its redaction.
            self.meta.title =
                crate::files::meta::meta_for(&self.events, &self.agent, &self.id, self.redaction)
                    .title;
        }
        if let Some(last) = self.events.last() {
            self.meta.updated = self.meta.updated.max(last.ts);
        }
    }

    fn log_bytes(&self) -> u64 {
        match &self.keeping {
            Keeping::Folder {
                writer: Some(writer),
                ..
            } => writer.log.len(),
            Keeping::Folder { writer: None, .. } => {
                std::fs::metadata(self.paths.raw_traces()).map_or(0, |m| m.len())
            }
            Keeping::Seam { .. } => 0,
        }
    }

    /// Writes `meta.json` when its counts are not those of the log as it
    /// is (on the seam the backend keeps them with every write).
    pub(crate) fn write_meta_if_stale(&mut self) -> Result<()> {
        if self.in_folder() && self.meta.log_bytes != self.log_bytes() {
            self.write_meta()?;
        }
        Ok(())
    }

    /// Writes pending meta changes when the last write is
    /// [`META_REFRESH_INTERVAL`] old.
    pub(crate) fn refresh_meta_if_due(&mut self) -> Result<()> {
        if self.meta_dirty && self.meta_written.elapsed() >= META_REFRESH_INTERVAL {
            self.write_meta()?;
        }
        Ok(())
    }

    fn write_meta(&mut self) -> Result<()> {
        match &mut self.keeping {
            Keeping::Folder { .. } => {
                self.meta.log_bytes = self.log_bytes();
                self.meta.write(&self.paths.dir)?;
            }
            Keeping::Seam {
                writer: Some(writer),
                ..
            } => {
                writer.adopt_meta(&self.meta)?;
                self.meta = writer.meta();
            }
            Keeping::Seam { writer: None, .. } => return self.require_writer(),
        }
        self.meta_dirty = false;
        self.meta_written = Instant::now();
        Ok(())
    }
}

impl Drop for SessionLog {
    fn drop(&mut self) {
        if self.is_writer() && self.meta_dirty {
            // Best effort: a stale meta is detected by its log size and re-derived.
            let _ = self.write_meta();
        }
    }
}

/// The active log's events and what was wrong with it. A writer (holding
/// `lock`) repairs it: a batch a crash cut short is taken out, a torn tail
/// and bad lines are moved aside. A reader skips them, and the lines of a
/// batch its writer has under way.
fn read_log(
    paths: &SessionPaths,
    lock: Option<&mut SessionLock>,
) -> Result<(Vec<Event>, Vec<Recovery>)> {
    let Some(lock) = lock else {
        let contents = jsonl::read_log_as_reader(&paths.raw_traces(), &paths.dir)?;
        let recoveries = read_only_recoveries(paths, &contents);
        return Ok((contents.events, recoveries));
    };
    let unfinished = match lock.previous_batch() {
        Some(batch) => jsonl::cut_unfinished_batch(&paths.raw_traces(), batch)?,
        None => None,
    };
    let (events, mut recoveries) = jsonl::read_and_repair(&paths.raw_traces())?;
    recoveries.splice(0..0, unfinished);
    lock.clear_batch()?;
    Ok((events, recoveries))
}

/// Removes what writers killed mid-write left: temporary files in the
/// session's folder and its evicted outputs. Only the lock holder writes
/// there, so under the lock every such file is stale.
fn remove_stale_temporaries(paths: &SessionPaths) -> Result<()> {
    let every = |_: &str| true;
    crate::base::fs::remove_stale_temporaries(&paths.dir, every)?;
    crate::base::fs::remove_stale_temporaries(&paths.evicted(), every)
}

fn read_only_recoveries(paths: &SessionPaths, contents: &jsonl::LogContents) -> Vec<Recovery> {
    let log = paths.raw_traces();
    let mut recoveries: Vec<Recovery> = contents
        .bad_lines
        .iter()
        .map(|(line, error, _)| Recovery::BadLine {
            log: log.clone(),
            line: *line,
            error: error.clone(),
            moved_to: None,
        })
        .collect();
    if !contents.torn_tail.is_empty() {
        recoveries.push(Recovery::TornTail {
            log,
            bytes: contents.torn_tail.len(),
            moved_to: None,
        });
    }
    recoveries
}

/// Finishes a compaction a crash interrupted after its snapshot was written
/// but before the active log was cut to the tail: the span's events the
/// archive lacks are archived, and (for a writer) the log is rewritten as
/// the tail. Returns the tail. `finished` is the compactions `meta.json`
/// counts as done.
fn finish_interrupted(
    paths: &SessionPaths,
    snapshot: &Snapshot,
    events: Vec<Event>,
    finished: u64,
    writable: bool,
) -> Result<Vec<Event>> {
    let committed_lately = snapshot.archived_events.is_some() && snapshot.compactions > finished;
    let tail_start = match &snapshot.active_first_id {
        Some(first) if events.first().is_some_and(|e| &e.id == first) => return Ok(events),
        Some(first) => events.iter().position(|e| &e.id == first),
        // No tail was kept, so the log holds only what came after, unless
        // the compaction is not finished (or, for a snapshot that does not
        // say, unless the log still holds the latest user message the base
        // kept of what it compacted, under its own id).
        None if events.is_empty() => return Ok(events),
        None if committed_lately => Some(events.len()),
        None => {
            let base: HashSet<&str> = snapshot.base.iter().map(|e| e.id.as_str()).collect();
            if !events.iter().any(|e| base.contains(e.id.as_str())) {
                return Ok(events);
            }
            None
        }
    };
    let archived: HashSet<String> = archive::archived_ids(&paths.archive())?
        .into_iter()
        .collect();
    let (span, tail): (Vec<Event>, Vec<Event>) = match tail_start {
        Some(start) => {
            let mut span = events;
            let tail = span.split_off(start);
            (span, tail)
        }
        // A snapshot of an older version, or a log edited by hand: the
        // archive says what was compacted.
        None => events.into_iter().partition(|e| archived.contains(&e.id)),
    };
    if writable {
        let missing: Vec<&Event> = span.iter().filter(|e| !archived.contains(&e.id)).collect();
        let mut archive = AppendLog::open(&paths.archive(), Durability::Batch)?;
        archive.append_encoded(&jsonl::encode_lines(missing))?;
        write_atomic(&paths.raw_traces(), &jsonl::encode_lines(&tail))?;
    }
    Ok(tail)
}

#[cfg(test)]
#[path = "log_tests.rs"]
mod tests;
