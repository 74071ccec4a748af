//! A session: one conversation's event log, opened for writing (one writer,
//! holding the lock) or for reading (any number, never blocking).
//!
//! Ingest validates a whole batch before writing any of it, drops events whose
//! id the session already has (so retries and re-imports are idempotent),
//! assigns what the events left empty (id, ts, turn, seq), appends them to the
//! durable log and only then adds them to the in-memory transcript.
//!
//! The model's view of a session is its compaction snapshot's base followed by
//! the active log; [`Session::prepare`] (in `prepare.rs`) shapes that view for a
//! model call, and [`Session::compact`] (in `compaction.rs`) folds old history
//! into the snapshot, moving the raw events to the archive. The session's
//! working memory (in `working.rs`) is changed only through its log.

mod compaction;
mod drafting;
mod prepare;
mod working;

pub use compaction::CompactOptions;
pub use prepare::MEMORY_RECHECK_INTERVAL;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::Durability;
use crate::context::guard::{self, GuardPolicy};
use crate::context::strategy::ContextSettingsLayer;
use crate::error::{Error, Result};
use crate::event::{now_millis, now_ts, Event, TraceType};
use crate::id::{AgentId, EventIds, SessionId};
use crate::prepare::CalibrationTable;
use crate::search::{HistoryIndex, IndexFeeder};
use crate::store::archive;
use crate::store::jsonl::{self, AppendLog, Recovery};
use crate::store::lock::SessionLock;
use crate::store::meta::{title_from, ImportRecord, SessionMeta};
use crate::store::snapshot::Snapshot;
use crate::store::SessionPaths;
use crate::summarize::{ExtractiveSummarizer, Summarizer};
use crate::tokens::budget::BudgetSettings;
use crate::tokens::registry::ModelRegistry;
use crate::tokens::Encoding;
use crate::tool_interaction::{tool_interactions, ToolInteraction};
use crate::transcript::Transcript;
use crate::turn::TurnTracker;
pub use drafting::SharedSummarizer;

/// How often, at most, ingest refreshes `meta.json` (it is also written on close).
const META_REFRESH_INTERVAL: Duration = Duration::from_secs(2);

/// How a session is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Take the writer lock and repair a torn tail; appends sync per the durability.
    Write(Durability),
    /// Read what is complete on disk; no lock, no repair.
    Read,
}

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

/// What a session needs to prepare contexts: its layered settings and the
/// model registry.
#[derive(Debug, Clone)]
pub struct ContextSettings {
    /// Session over agent over data-directory settings (a request adds the top layer).
    pub budget: BudgetSettings,
    /// Strategy and pipeline settings, layered the same way.
    pub context: ContextSettingsLayer,
    /// How tool outputs are cut and evicted when they are written.
    pub guard: GuardPolicy,
    /// What long-term memory is injected into every context.
    pub memory: crate::memory::project::MemorySettings,
    /// Personal data redacted from what a session keeps beyond its raw
    /// record (summaries, episodic items, facts, its title) and from what
    /// recall shows of other sessions.
    pub redaction: crate::memory::redact::RedactionPolicy,
    /// The agent's folder (its MEMORY.md lives there).
    pub agent_dir: std::path::PathBuf,
    pub registry: Arc<ModelRegistry>,
    /// The store's embedder, whose vectors join the recall of what earlier
    /// sessions said (see [`crate::search::vectors`]).
    pub embedder: Option<crate::search::vectors::SharedEmbedder>,
}

/// Runs after every applied compaction, with its report.
pub type CompactionHook = Box<dyn FnMut(&crate::context::compact::CompactReport) + Send>;

/// Runs before every compaction, with its reason (e.g. to flush state the
/// agent keeps outside agentmem into the log first).
pub type BeforeCompactionHook = Box<dyn FnMut(crate::context::compact::CompactReason) + Send>;

/// The summarizer and what compaction remembers between runs.
struct Compactor {
    summarizer: SharedSummarizer,
    consecutive_failures: u32,
    /// After a compaction that freed nothing: no automatic one until the
    /// context grows past this many tokens (no compaction loops).
    blocked_below: Option<u64>,
    after_hooks: Vec<CompactionHook>,
    before_hooks: Vec<BeforeCompactionHook>,
    /// While a compaction from the raw log runs: how many of the session's
    /// events, from the first, the archive holds (the active log the rest).
    archived_prefix: usize,
}

impl std::fmt::Debug for Compactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compactor")
            .field("summarizer", &self.summarizer.name())
            .field("consecutive_failures", &self.consecutive_failures)
            .field("blocked_below", &self.blocked_below)
            .finish()
    }
}

/// The last prepared context, so the usage reported for it can be paired with our count.
#[derive(Debug, Clone)]
struct LastPrepare {
    model: String,
    counted_tokens: u64,
    /// The part of `counted_tokens` that was the messages sent.
    view_tokens: u64,
    events: usize,
    /// Tokens the provider sees that the view does not hold (a measured offset).
    offset_tokens: u64,
    trigger_tokens: u64,
    /// Whether the counts held estimates of events not counted yet.
    estimated: bool,
}

/// What one ingest call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IngestReport {
    /// Events appended to the log.
    pub appended: usize,
    /// Events skipped because the session already had their id.
    pub duplicates: usize,
    /// Tool outputs written to `evicted/` (the model sees a preview).
    pub evicted: usize,
    /// The context passed the trigger of the last prepare with these events:
    /// prepare again before the next model call. Checked after every
    /// ingest, so a run of tool results cannot overflow unnoticed.
    pub compaction_due: bool,
}

/// An open session.
#[derive(Debug)]
pub struct Session {
    paths: SessionPaths,
    agent: AgentId,
    id: SessionId,
    meta: SessionMeta,
    /// Shared with the transcript's view: the active context is held once.
    events: Vec<Arc<Event>>,
    /// The ids of the active log's events, and once read (see
    /// [`Session::learn_archived_ids`]) of the archive's.
    ids: foldhash::HashSet<String>,
    archived_ids_known: bool,
    turns: TurnTracker,
    event_ids: EventIds,
    writer: Option<Writer>,
    recoveries: Vec<Recovery>,
    meta_dirty: bool,
    meta_written: Instant,
    settings: ContextSettings,
    snapshot: Option<Snapshot>,
    transcript: Option<Transcript>,
    calibration: CalibrationTable,
    last_prepare: Option<LastPrepare>,
    /// What the latest prepare counted beside the messages (system prompt,
    /// memory, tools, framing)...
    latest_overhead_tokens: Option<u64>,
    /// ...taken as what a call agentmem did not prepare sent beside them,
    /// when such a call reported its usage.
    unprepared_call_overhead_tokens: Option<u64>,
    compactor: Compactor,
    /// Overflow recoveries since the last successful model call.
    overflow_attempts: u32,
    /// The memory block and what it was built from.
    memory_cache: Option<MemoryCache>,
    /// The request overhead and what it was counted for.
    overhead_cache: Option<OverheadCache>,
    /// The registry's entries for the models last asked for, by name.
    recent_models: Vec<(String, crate::tokens::registry::ModelInfo)>,
    /// The latest view's rendered segments, reused while their items stay.
    renders: crate::segments::RenderCache,
    /// Indexes what ingest appends, in the background.
    feeder: Option<IndexFeeder>,
    /// The agent's search index, read by recall.
    index: IndexReader,
    /// The current working memory, as the log's updates made it.
    working: crate::working::WorkingMemory,
    /// The working-memory section as last rendered.
    working_section: Option<working::SectionCache>,
    /// An automatic compaction being drafted in the background, applied by
    /// the next prepare.
    drafting: Option<compaction::Drafting>,
}

/// The session's read handle on the agent's search index.
#[derive(Debug)]
enum IndexReader {
    /// Opened at the first recall.
    Unopened,
    Open(Box<HistoryIndex>),
    /// Opening failed: recall falls back to the salience-ordered block.
    Failed,
}

/// The modification stamps of the files the memory block is made of.
type MemoryStamp = Vec<Option<(std::time::SystemTime, u64)>>;

/// A request's overhead, and the parts of the request it was counted from.
#[derive(Debug)]
struct OverheadCache {
    system: Option<String>,
    live_context: Option<String>,
    tools: Vec<crate::render::ToolSchema>,
    encoding: Encoding,
    sections: crate::prepare::Sections,
}

/// The memory block, kept while its files, the encoding and the query that
/// recalled its cross-session part are unchanged.
#[derive(Debug)]
struct MemoryCache {
    stamp: MemoryStamp,
    /// When the files were last looked at for `stamp`.
    looked_at: std::time::Instant,
    /// [`crate::memory::writes`] just before that look.
    writes: u64,
    encoding: Encoding,
    query: Option<String>,
    /// Project files and MEMORY.md.
    own: Option<String>,
    /// The agent's best facts and latest summaries of its other sessions.
    cross_session: Option<String>,
    /// What is injected: `own`, with what was recalled or `cross_session`.
    blocks: MemoryBlocks,
    tokens: u64,
}

/// Long-term memory as it is injected: what stays the same from call to
/// call in the system prompt, what follows the latest question in the live
/// context, so a new question does not change the prefix a provider cached.
#[derive(Debug, Clone, Default, PartialEq)]
struct MemoryBlocks {
    /// Project files and MEMORY.md.
    lasting: Option<String>,
    /// What was recalled for the latest question, or else the agent's best
    /// facts and latest summaries.
    recalled: Option<String>,
}

impl Session {
    /// Opens the session in `paths` (see [`crate::store::Store`] for the usual entry points).
    pub fn load(
        paths: SessionPaths,
        agent: AgentId,
        id: SessionId,
        access: Access,
        settings: ContextSettings,
    ) -> Result<Session> {
        let lock = match access {
            Access::Write(_) => Some(SessionLock::acquire(&paths.dir, id.as_str())?),
            Access::Read => None,
        };
        let (events, mut recoveries) = read_log(&paths, lock.as_ref())?;
        let mut meta = SessionMeta::read(&paths.dir)
            .unwrap_or_else(|_| crate::store::meta_for(&events, &agent, &id, settings.redaction));
        let snapshot = Snapshot::read(&paths.dir)?;
        let events = match &snapshot {
            Some(snapshot) => compaction::finish_interrupted(
                &paths,
                snapshot,
                events,
                meta.compactions,
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
        let (working, replay_recoveries) =
            working::load_state(&paths, snapshot.as_ref(), &events, writer.is_some())?;
        recoveries.extend(replay_recoveries);
        let mut session = Session {
            settings,
            snapshot,
            compactor: Compactor {
                summarizer: Arc::new(ExtractiveSummarizer::default()),
                consecutive_failures: 0,
                blocked_below: None,
                after_hooks: Vec::new(),
                before_hooks: Vec::new(),
                archived_prefix: 0,
            },
            overflow_attempts: 0,
            memory_cache: None,
            overhead_cache: None,
            recent_models: Vec::new(),
            renders: Default::default(),
            feeder: None,
            index: IndexReader::Unopened,
            working,
            working_section: None,
            drafting: None,
            transcript: None,
            calibration: CalibrationTable::default(),
            last_prepare: None,
            latest_overhead_tokens: None,
            unprepared_call_overhead_tokens: None,
            ids,
            archived_ids_known: false,
            turns: TurnTracker::from_events(&events),
            event_ids: EventIds::new(),
            paths,
            agent,
            id,
            meta,
            events: events.into_iter().map(Arc::new).collect(),
            writer,
            recoveries,
            meta_dirty: false,
            meta_written: Instant::now(),
        };
        let reported: Vec<Arc<Event>> = session
            .events
            .iter()
            .filter(|e| e.usage.is_some())
            .cloned()
            .collect();
        session.calibrate(&reported);
        session.refresh_meta_counts();
        if session.writer.is_some() {
            session.leave_compaction_in_memory()?;
            if session.meta_is_stale() {
                session.write_meta()?;
            }
        }
        Ok(session)
    }

    /// The session id.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// The agent the session belongs to.
    pub fn agent(&self) -> &AgentId {
        &self.agent
    }

    /// The session's files.
    pub fn paths(&self) -> &SessionPaths {
        &self.paths
    }

    /// The events of the active log, in order, shared with the model's view
    /// (held once in memory).
    pub fn events(&self) -> &[Arc<Event>] {
        &self.events
    }

    /// The whole raw history: archived events first, then the active log.
    /// An event found twice (a compaction interrupted after archiving) is given once.
    pub fn full_history(&self) -> Result<Vec<Event>> {
        let mut history = jsonl::read_log(&self.paths.archive())?.events;
        history.extend(self.events.iter().map(|e| Event::clone(e)));
        let mut seen = HashSet::with_capacity(history.len());
        history.retain(|e| seen.insert(e.id.clone()));
        Ok(history)
    }

    /// The compaction snapshot, if the session was ever compacted.
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.snapshot.as_ref()
    }

    /// The model's view before any shaping: the snapshot base, then the active log.
    pub fn view_events(&self) -> Vec<Event> {
        let base = self.snapshot.iter().flat_map(|s| s.base.iter());
        base.chain(self.events.iter().map(|e| &**e))
            .cloned()
            .collect()
    }

    /// Replaces the summarizer compaction uses (the extractive one by
    /// default). It is shared with the thread a background compaction is
    /// drafted on, so it is `Sync`.
    pub fn set_summarizer(&mut self, summarizer: Box<dyn Summarizer + Send + Sync>) {
        self.compactor.summarizer = Arc::from(summarizer);
        self.compactor.consecutive_failures = 0;
    }

    /// Adds a hook that runs before every compaction with its reason.
    pub fn before_compaction(&mut self, hook: BeforeCompactionHook) {
        self.compactor.before_hooks.push(hook);
    }

    /// Adds a hook that runs after every compaction with its report.
    pub fn on_compaction(&mut self, hook: CompactionHook) {
        self.compactor.after_hooks.push(hook);
    }

    /// Adds the ids of archived events to the ids the session knows, so an
    /// event sent again after a compaction moved it to the archive (a
    /// retry, a re-import) is not appended twice. Ingest does this the first
    /// time a batch brings an id the active log lacks; it reads only the
    /// archive's ids, once per open session.
    pub fn learn_archived_ids(&mut self) -> Result<()> {
        if self.archived_ids_known {
            return Ok(());
        }
        self.ids
            .extend(archive::archived_ids(&self.paths.archive())?);
        self.archived_ids_known = true;
        Ok(())
    }

    /// Each tool call with its result and status.
    pub fn tool_interactions(&self) -> Vec<ToolInteraction> {
        tool_interactions(self.events.iter().map(|e| &**e))
    }

    /// Whether this handle writes the session (holds its lock), rather than
    /// reading it.
    pub fn is_writer(&self) -> bool {
        self.writer.is_some()
    }

    /// What was repaired or skipped when the session was opened.
    pub fn recoveries(&self) -> &[Recovery] {
        &self.recoveries
    }

    /// The session's description with counts as of now.
    pub fn current_meta(&self) -> SessionMeta {
        self.meta.clone()
    }

    /// The turn the next non-user event joins.
    pub fn current_turn(&self) -> &str {
        self.turns.current_turn()
    }

    /// Appends `events` to the log. See the module docs for the rules.
    ///
    /// ```
    /// # use agentmem::{event::Event, store::Store, Durability};
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let store = Store::open(dir.path(), Durability::Batch).unwrap();
    /// let mut session = store.create_session(&Default::default(), None).unwrap();
    /// let first = Event::user("hello").with_id("e1");
    /// assert_eq!(session.ingest(vec![first.clone()]).unwrap().appended, 1);
    /// // A retry of the same event is recognised by its id.
    /// assert_eq!(session.ingest(vec![first]).unwrap().duplicates, 1);
    /// ```
    pub fn ingest(&mut self, events: Vec<Event>) -> Result<IngestReport> {
        if self.writer.is_none() {
            return Err(Error::ReadOnly {
                session: self.id.to_string(),
            });
        }
        for (index, event) in events.iter().enumerate() {
            event
                .validate()
                .map_err(|reason| Error::InvalidEvent { index, reason })?;
        }
        if events
            .iter()
            .any(|e| !e.id.is_empty() && !self.ids.contains(&e.id))
        {
            self.learn_archived_ids()?;
        }
        let mut report = IngestReport::default();
        let mut fresh = Vec::with_capacity(events.len());
        let mut batch_index = Vec::with_capacity(events.len());
        let mut batch_ids = foldhash::HashSet::default();
        for (index, event) in events.into_iter().enumerate() {
            if !event.id.is_empty()
                && (self.ids.contains(&event.id) || !batch_ids.insert(event.id.clone()))
            {
                report.duplicates += 1;
                continue;
            }
            fresh.push(event);
            batch_index.push(index);
        }
        let working = self.stage_working_memory(&mut fresh, &batch_index)?;
        // Eviction writes files and may fail: before any state changes.
        report.evicted = self.evict_large_outputs(&mut fresh)?;
        for event in &mut fresh {
            self.assign(event);
        }
        self.pair_usage_with_last_prepare(&mut fresh);
        let writer = self.writer.as_mut().expect("checked above");
        if let Err(error) = writer.append(&fresh) {
            // None of the batch is in the log: the turns are as they were.
            self.turns = TurnTracker::from_events(self.events.iter().map(|e| &**e));
            return Err(error);
        }
        report.appended = fresh.len();
        self.feed_index();
        self.remember(fresh);
        if let Some(state) = working {
            self.settle_working_memory(state)?;
        }
        self.maybe_refresh_meta()?;
        report.compaction_due = self.compaction_due();
        Ok(report)
    }

    /// Hands the lines the log just appended, the events not yet
    /// remembered, to the background indexer.
    fn feed_index(&mut self) {
        let Some(writer) = &self.writer else {
            return;
        };
        let lines = writer.log.appended();
        if lines.is_empty() {
            return;
        }
        let lines = lines.to_vec();
        let first_ord = (self.meta.archived_events + self.events.len()) as u64;
        let agent_dir = &self.settings.agent_dir;
        self.feeder
            .get_or_insert_with(|| IndexFeeder::start(agent_dir.clone()))
            .add(self.id.as_str(), first_ord, lines);
    }

    /// Waits until the events ingested so far are in the search index.
    pub fn flush_index(&self) {
        if let Some(feeder) = &self.feeder {
            feeder.flush();
        }
    }

    /// The agent's search index for reading, opened on first use; `None` once it failed.
    fn index_mut(&mut self) -> Option<&mut HistoryIndex> {
        if let IndexReader::Unopened = self.index {
            self.index = match HistoryIndex::open(&self.settings.agent_dir) {
                Ok(index) => IndexReader::Open(Box::new(index)),
                Err(_) => IndexReader::Failed,
            };
        }
        match &mut self.index {
            IndexReader::Open(index) => Some(index),
            IndexReader::Unopened | IndexReader::Failed => None,
        }
    }

    /// Per-model calibration factors learned so far.
    pub fn calibration(&self) -> &CalibrationTable {
        &self.calibration
    }

    /// The calibration learned for `model`, or for any other name of the
    /// model it resolves to (`claude-sonnet-4-5`, `claude-sonnet-4-5-20250929`).
    pub fn calibration_for(&mut self, model: &str) -> Option<crate::prepare::Calibration> {
        let family = self.model_info(model).family();
        self.calibration.get(&family)
    }

    /// Learns from the usage `events` report, each under the model it resolves to.
    fn calibrate(&mut self, events: &[Arc<Event>]) {
        for usage in events.iter().filter_map(|e| e.usage.as_ref()) {
            let Some(model) = &usage.model else { continue };
            let family = self.model_info(model).family();
            self.calibration.observe(&family, usage);
        }
    }

    /// Gives the first reported usage in `fresh` our count of the prompt it
    /// measured, when that prompt is the context prepared last.
    fn pair_usage_with_last_prepare(&mut self, fresh: &mut [Event]) {
        let Some(usage) = fresh.iter_mut().find_map(|e| e.usage.as_mut()) else {
            return;
        };
        let paired = self
            .last_prepare
            .take_if(|last| last.events == self.events.len()); // else events arrived in between
        match paired {
            Some(last) if usage.estimated_prompt_tokens.is_none() => {
                // Calibration and anchors learn from counts, not estimates:
                // the view is as it was sent, so counting it now corrects them.
                let transcript = self.transcript.as_mut().filter(|_| last.estimated);
                let (before, after) = transcript.map_or((0, 0), |transcript| {
                    let before = transcript.totals().total;
                    transcript.count_now();
                    (before, transcript.totals().total)
                });
                let correct = |n: u64| n.saturating_sub(before).saturating_add(after);
                usage.estimated_prompt_tokens = Some(correct(last.counted_tokens));
                usage.estimated_view_tokens = Some(correct(last.view_tokens));
                usage.model.get_or_insert(last.model);
            }
            Some(_) => {}
            None => self.unprepared_call_overhead_tokens = self.latest_overhead_tokens,
        }
    }

    /// Writes tool outputs over the eviction threshold to `evicted/<call id>.txt`
    /// and points their events at the file; the log keeps the full text too.
    fn evict_large_outputs(&mut self, fresh: &mut [Event]) -> Result<usize> {
        let mut evicted = 0;
        for event in fresh
            .iter_mut()
            .filter(|e| e.trace_type == TraceType::ToolResult)
        {
            let call_id = event.tool_call_id.clone().unwrap_or_default();
            // An id that cannot be a file name is not evicted; the guard still
            // cuts what the model sees.
            let nameable =
                crate::id::validate_path_id(crate::id::IdKind::ToolCall, &call_id).is_ok();
            let text = event.text();
            if nameable
                && guard::should_evict(&text, &self.settings.guard, Encoding::default().tokenizer())
            {
                let dir = self.paths.evicted();
                let name = guard::unused_evicted_name(&dir, &call_id)?;
                guard::write_evicted(&dir, &name, &text)?;
                event.tool_result_ref = Some(format!("{}/{name}.txt", crate::store::EVICTED_DIR));
                evicted += 1;
            }
        }
        Ok(evicted)
    }

    /// Whether the context now passes the trigger of the last prepare.
    fn compaction_due(&mut self) -> bool {
        match (&mut self.transcript, &self.last_prepare) {
            (Some(transcript), Some(last)) => {
                let trigger = last.trigger_tokens.saturating_sub(last.offset_tokens);
                !transcript.is_below(trigger, crate::transcript::Bound::Calibrated)
            }
            _ => false,
        }
    }

    /// Records that `events_added` events came from an import of `path`.
    pub fn record_import(&mut self, path: &str, format: &str, events_added: usize) -> Result<()> {
        self.meta.imports.push(ImportRecord {
            path: path.to_owned(),
            format: format.to_owned(),
            ts: now_ts(),
            events_added,
        });
        self.write_meta()
    }

    /// Writes pending meta changes and releases the writer lock.
    pub fn close(mut self) -> Result<()> {
        if self.meta_dirty {
            self.write_meta()?;
        }
        Ok(())
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
        if let Some(transcript) = &mut self.transcript {
            transcript.extend_counting_later(&events);
        }
        self.calibrate(&events);
        let answered = |e: &Arc<Event>| e.usage.is_some() || e.trace_type.is_model_output();
        if events.iter().any(answered) {
            self.overflow_attempts = 0; // a model call went through
        }
        for event in &events {
            self.ids.insert(event.id.clone());
            if event.trace_type == TraceType::User {
                self.meta.turns = self.meta.turns.max(self.turns.last_turn_number() as usize);
                if self.meta.title.is_none() {
                    self.meta.title = Some(title_from(&event.content, self.settings.redaction));
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

    fn refresh_meta_counts(&mut self) {
        let fresh =
            crate::store::meta_for(&self.events, &self.agent, &self.id, self.settings.redaction);
        self.meta.events = self.meta.archived_events + fresh.events;
        // Turn numbers keep counting across compactions.
        self.meta.turns = fresh.turns.max(self.turns.last_turn_number() as usize);
        if self.meta.title.is_none() {
            self.meta.title = fresh.title;
        }
        if let Some(last) = self.events.last() {
            self.meta.updated = self.meta.updated.max(last.ts);
        }
    }

    fn log_bytes(&self) -> u64 {
        match &self.writer {
            Some(writer) => writer.log.len(),
            None => std::fs::metadata(self.paths.raw_traces()).map_or(0, |m| m.len()),
        }
    }

    fn meta_is_stale(&self) -> bool {
        self.meta.log_bytes != self.log_bytes()
    }

    fn maybe_refresh_meta(&mut self) -> Result<()> {
        if self.meta_dirty && self.meta_written.elapsed() >= META_REFRESH_INTERVAL {
            self.write_meta()?;
        }
        Ok(())
    }

    fn write_meta(&mut self) -> Result<()> {
        self.meta.log_bytes = self.log_bytes();
        self.meta.write(&self.paths.dir)?;
        self.meta_dirty = false;
        self.meta_written = Instant::now();
        Ok(())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.writer.is_some() && self.meta_dirty {
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
    lock: Option<&SessionLock>,
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
    Ok((events, recoveries))
}

/// Removes what writers killed mid-write left: temporary files in the
/// session's folder and its evicted outputs. Only the lock holder writes
/// there, so under the lock every such file is stale.
fn remove_stale_temporaries(paths: &SessionPaths) -> Result<()> {
    let every = |_: &str| true;
    crate::store::atomic::remove_stale_temporaries(&paths.dir, every)?;
    crate::store::atomic::remove_stale_temporaries(&paths.evicted(), every)
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
