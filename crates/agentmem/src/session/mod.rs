//! A session: one conversation's event log, opened for writing (one writer,
//! holding the lock) or for reading (any number, never blocking).
//!
//! Ingest validates a whole batch before writing any of it, drops events whose
//! id the session already has (so retries and re-imports are idempotent),
//! assigns what the events left empty (id, ts, turn, seq), appends them to the
//! durable log and only then adds them to the in-memory transcript.
//!
//! [`Session`] orchestrates parts that each own their state:
//! - the log (`log.rs`): the durable record — files, `meta.json`, the active
//!   log's events and ids, the writer and its lock, repairs on open;
//! - the model's view (`view.rs`): the compaction snapshot's base followed
//!   by the active log, as a transcript counted in one encoding;
//! - token accounting (`accounting.rs`): what the last prepare counted,
//!   paired with the usage reported for it, and the calibration learned;
//! - the memory injector (`memory/injector.rs`): what long-term
//!   memory each context gets;
//! - working memory (`working.rs`), changed only through the log;
//! - the compactor (`compaction.rs`, `drafting.rs`): [`Session::compact`]
//!   folds old history into the snapshot, moving the raw events to the
//!   archive.
//!
//! [`Session::prepare`] (in `prepare.rs`) shapes the view for a model call.
//!
//! A session is kept in its folder (the files backend) or behind the
//! storage seam ([`Session::on_seam`], a database): the core loop —
//! ingest, prepare, compact, the events, working memory — is the same on
//! both. Its long-term memory (a compaction's episode and facts, an
//! ending's episode, evicted tool outputs, what its contexts are given,
//! its working-memory schemas) goes through the backend's
//! [`crate::storage::memory::MemoryStorage`]; its working-memory state is
//! its log's updates, replayed when it is opened there.

mod accounting;
mod compaction;
mod drafting;
mod log;
mod prepare;
mod view;
mod working;

pub use crate::memory::injector::MEMORY_RECHECK_INTERVAL;
pub use compaction::CompactOptions;
pub(crate) use drafting::SharedSummarizer;
pub(crate) use log::SessionLog;

use std::sync::Arc;

use crate::base::error::Result;
use crate::base::event::{Event, TraceType};
use crate::base::id::{AgentId, SessionId};
use crate::base::tool_interaction::{tool_interactions, ToolInteraction};
use crate::files::jsonl::Durability;
use crate::files::jsonl::Recovery;
use crate::files::meta::SessionMeta;
use crate::files::paths::SessionPaths;
use crate::files::snapshot::Snapshot;
use crate::memory::injector::{IndexUse, MemoryInjector, SeamMemory};
use crate::pipeline::guard::{self, GuardPolicy};
use crate::pipeline::measure::CalibrationTable;
use crate::pipeline::strategy::ContextSettingsLayer;
use crate::pipeline::transcript::Transcript;
use crate::summarize::Summarizer;
use crate::tokens::budget::BudgetSettings;
use crate::tokens::registry::ModelRegistry;
use crate::tokens::Encoding;
use accounting::TokenAccounting;
use compaction::Compactor;
use view::ModelView;
use working::SessionWorkingMemory;

/// How a session is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Take the writer lock and repair a torn tail; appends sync per the durability.
    Write(Durability),
    /// Read what is complete on disk; no lock, no repair.
    Read,
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
    pub redaction: crate::redact::RedactionPolicy,
    /// The agent's folder (its MEMORY.md lives there).
    pub agent_dir: std::path::PathBuf,
    /// The model registry budgets are resolved from.
    pub registry: Arc<ModelRegistry>,
    /// The store's embedder, whose vectors join the recall of what earlier
    /// sessions said (see `crate::search::vectors`).
    pub embedder: Option<crate::search::vectors::SharedEmbedder>,
    /// The agent index's background embedder, for a writer when the store
    /// has an embedder.
    pub(crate) vector_feed: Option<Arc<crate::search::VectorFeed>>,
}

/// Runs after every applied compaction, with its report.
pub(crate) type CompactionHook = Box<dyn FnMut(&crate::pipeline::compact::CompactReport) + Send>;

/// Runs before every compaction, with its reason (e.g. to flush state the
/// agent keeps outside agentmem into the log first).
pub(crate) type BeforeCompactionHook =
    Box<dyn FnMut(crate::pipeline::compact::CompactReason) + Send>;

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
    settings: ContextSettings,
    /// Dropped first of the parts: its pending meta is written, then the
    /// lock released.
    log: SessionLog,
    view: ModelView,
    accounting: TokenAccounting,
    injector: MemoryInjector,
    working: SessionWorkingMemory,
    compactor: Compactor,
}

impl Session {
    /// Opens the session in `paths` (see [`crate::Store`] for the usual entry points).
    pub fn load(
        paths: SessionPaths,
        agent: AgentId,
        id: SessionId,
        access: Access,
        settings: ContextSettings,
    ) -> Result<Session> {
        let agent_dir = settings.agent_dir.clone();
        let (mut log, snapshot) = SessionLog::open(
            paths,
            agent,
            id,
            access,
            settings.redaction,
            agent_dir.clone(),
        )?;
        let (working, replay_recoveries) = SessionWorkingMemory::load(
            log.paths(),
            agent_dir.clone(),
            snapshot.as_ref(),
            log.events(),
            log.is_writer(),
        )?;
        log.add_recoveries(replay_recoveries);
        Session::assemble(log, snapshot, working, settings)
    }

    /// Opens a session kept behind the storage seam: as its writer with
    /// the `writer` [`Storage::create_session`] or [`Storage::lock_session`]
    /// gave (it holds the session's lock), else as a reader. `paths` names
    /// where the files backend would keep it; nothing is written there.
    ///
    /// [`Storage::create_session`]: crate::storage::Storage::create_session
    /// [`Storage::lock_session`]: crate::storage::Storage::lock_session
    pub fn on_seam(
        storage: Arc<dyn crate::storage::Storage>,
        writer: Option<Box<dyn crate::storage::SessionWriter>>,
        paths: SessionPaths,
        agent: AgentId,
        id: SessionId,
        settings: ContextSettings,
    ) -> Result<Session> {
        let memory = Arc::clone(&storage).memory();
        let (mut log, snapshot) =
            SessionLog::on_seam(storage, writer, paths, agent, id, settings.redaction)?;
        let (working, replay_recoveries) = SessionWorkingMemory::on_seam(
            memory,
            log.agent().clone(),
            log.id().clone(),
            snapshot.as_ref(),
            log.events(),
            || log.archived_events(),
        )?;
        log.add_recoveries(replay_recoveries);
        Session::assemble(log, snapshot, working, settings)
    }

    /// The session of `log`'s record, its parts built around it.
    fn assemble(
        log: SessionLog,
        snapshot: Option<Snapshot>,
        working: SessionWorkingMemory,
        settings: ContextSettings,
    ) -> Result<Session> {
        let agent_dir = settings.agent_dir.clone();
        let mut log = log;
        log.feed_vectors(settings.vector_feed.clone());
        let mut accounting = TokenAccounting::new(Arc::clone(&settings.registry));
        accounting.observe(log.events());
        let injector = MemoryInjector::new(
            agent_dir,
            log.id().to_string(),
            settings.memory.clone(),
            settings.redaction,
            settings.embedder.clone(),
            if log.is_writer() {
                IndexUse::Maintain
            } else {
                IndexUse::ReadAsIs
            },
        )
        .on_seam(log.seam_storage().map(|storage| SeamMemory {
            memory: Arc::clone(&storage).memory(),
            storage,
            agent: log.agent().clone(),
        }));
        let mut session = Session {
            view: ModelView::new(snapshot, settings.guard.clone()),
            settings,
            log,
            accounting,
            injector,
            working,
            compactor: Compactor::default(),
        };
        if session.log.is_writer() {
            session.leave_compaction_in_memory()?;
            session.log.write_meta_if_stale()?;
        }
        Ok(session)
    }

    /// The session id.
    pub fn id(&self) -> &SessionId {
        self.log.id()
    }

    /// The agent the session belongs to.
    pub fn agent(&self) -> &AgentId {
        self.log.agent()
    }

    /// The session's files.
    pub fn paths(&self) -> &SessionPaths {
        self.log.paths()
    }

    /// The events of the active log, in order, shared with the model's view
    /// (held once in memory).
    pub fn events(&self) -> &[Arc<Event>] {
        self.log.events()
    }

    /// The whole raw history: archived events first, then the active log.
    /// An event found twice (a compaction interrupted after archiving) is given once.
    pub fn full_history(&self) -> Result<Vec<Event>> {
        self.log.full_history()
    }

    /// The compaction snapshot, if the session was ever compacted.
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.view.snapshot()
    }

    /// The model's view before any shaping: the snapshot base, then the active log.
    pub fn view_events(&self) -> Vec<Event> {
        self.view.events(self.log.events())
    }

    /// Replaces the summarizer compaction uses (the extractive one by
    /// default). It is shared with the thread a background compaction is
    /// drafted on, so it is `Sync`.
    pub fn set_summarizer(&mut self, summarizer: Box<dyn Summarizer + Send + Sync>) {
        self.compactor.set_summarizer(Arc::from(summarizer));
    }

    /// Adds a hook that runs before every compaction with its reason.
    pub fn before_compaction(&mut self, hook: BeforeCompactionHook) {
        self.compactor.add_before_hook(hook);
    }

    /// Adds a hook that runs after every compaction with its report.
    pub fn on_compaction(&mut self, hook: CompactionHook) {
        self.compactor.add_after_hook(hook);
    }

    /// Adds the ids of archived events to the ids the session knows, so an
    /// event sent again after a compaction moved it to the archive (a
    /// retry, a re-import) is not appended twice. Ingest does this the first
    /// time a batch brings an id the active log lacks; it reads only the
    /// archive's ids, once per open session.
    pub fn learn_archived_ids(&mut self) -> Result<()> {
        self.log.learn_archived_ids()
    }

    /// Each tool call with its result and status.
    pub fn tool_interactions(&self) -> Vec<ToolInteraction> {
        tool_interactions(self.log.events().iter().map(|e| &**e))
    }

    /// Whether this handle writes the session (holds its lock), rather than
    /// reading it.
    pub(crate) fn is_writer(&self) -> bool {
        self.log.is_writer()
    }

    /// What was repaired or skipped when the session was opened.
    pub fn recoveries(&self) -> &[Recovery] {
        self.log.recoveries()
    }

    /// The session's description with counts as of now.
    pub fn current_meta(&self) -> SessionMeta {
        self.log.meta().clone()
    }

    /// The turn the next non-user event joins.
    pub fn current_turn(&self) -> &str {
        self.log.current_turn()
    }

    /// Appends `events` to the log. See the module docs for the rules.
    ///
    /// ```
    /// # use agentmem::{Event, Store, Durability};
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let store = Store::open(dir.path(), Durability::Batch).unwrap();
    /// let mut session = store.create_session(&Default::default(), None).unwrap();
    /// let first = Event::user("hello").with_id("e1");
    /// assert_eq!(session.ingest(vec![first.clone()]).unwrap().appended, 1);
    /// // A retry of the same event is recognised by its id.
    /// assert_eq!(session.ingest(vec![first]).unwrap().duplicates, 1);
    /// ```
    pub fn ingest(&mut self, events: Vec<Event>) -> Result<IngestReport> {
        let admitted = self.log.admit(events)?;
        let mut fresh = admitted.fresh;
        let working = self.working.stage(&mut fresh, &admitted.batch_index)?;
        // Eviction writes files and may fail: before any state changes.
        let evicted = match self.log.seam_memory() {
            None => {
                let flush = self
                    .log
                    .folder_durability()
                    .map_or(crate::base::fs::Flush::ToDisk, Durability::flush);
                let place = EvictTo::Folder {
                    paths: self.log.paths(),
                    flush,
                };
                evict_large_outputs(&mut fresh, place, &self.settings.guard)?
            }
            Some(memory) => {
                let place = EvictTo::Seam {
                    memory: memory.as_ref(),
                    agent: self.log.agent(),
                    id: self.log.id(),
                };
                evict_large_outputs(&mut fresh, place, &self.settings.guard)?
            }
        };
        self.accounting.pair_usage_with_last_prepare(
            &mut fresh,
            self.log.events().len(),
            self.view.built_mut(),
        );
        let appended = fresh.len();
        let added = self.log.append(fresh)?;
        self.view.extend(added);
        self.accounting.observe(added);
        if let Some(state) = working {
            self.working.settle(state)?;
        }
        self.log.refresh_meta_if_due()?;
        Ok(IngestReport {
            appended,
            duplicates: admitted.duplicates,
            evicted,
            compaction_due: self.accounting.passes_last_trigger(self.view.built_mut()),
        })
    }

    /// Waits until the events ingested so far are in the search index.
    pub fn flush_index(&self) {
        self.log.flush_index();
    }

    /// Per-model calibration factors learned so far.
    pub fn calibration(&self) -> &CalibrationTable {
        self.accounting.calibration()
    }

    /// The calibration learned for `model`, or for any other name of the
    /// model it resolves to (`claude-sonnet-4-5`, `claude-sonnet-4-5-20250929`).
    pub fn calibration_for(
        &mut self,
        model: &str,
    ) -> Option<crate::pipeline::measure::Calibration> {
        self.accounting.calibration_for(model)
    }

    /// Records that `events_added` events came from an import of `path`.
    pub fn record_import(&mut self, path: &str, format: &str, events_added: usize) -> Result<()> {
        self.log.record_import(path, format, events_added)
    }

    /// Writes pending meta changes and releases the writer lock.
    pub fn close(self) -> Result<()> {
        self.log.close()
    }

    /// The transcript counted in `encoding`, built on first use, every
    /// event in it counted.
    pub fn transcript_in(&mut self, encoding: Encoding) -> &Transcript {
        self.transcript_in_mut(encoding)
    }

    fn transcript_in_mut(&mut self, encoding: Encoding) -> &mut Transcript {
        self.view.counted_in(encoding, self.log.events())
    }

    /// The transcript in `encoding`, events appended since the last check
    /// maybe not counted yet (see [`Transcript::extend_counting_later`]).
    fn view_in(&mut self, encoding: Encoding) -> &mut Transcript {
        self.view.in_encoding(encoding, self.log.events())
    }
}

/// Where a session's evicted tool outputs go.
enum EvictTo<'a> {
    /// Its folder's `evicted/<name>.txt`, reaching the disk as its log's
    /// appends do.
    Folder {
        paths: &'a SessionPaths,
        flush: crate::base::fs::Flush,
    },
    /// The backend behind the storage seam that keeps the session.
    Seam {
        memory: &'a dyn crate::storage::memory::MemoryStorage,
        agent: &'a AgentId,
        id: &'a SessionId,
    },
}

/// Writes tool outputs over the eviction threshold of `guard` to
/// `evicted/<call id>.txt` and points their events at the file; the log
/// keeps the full text too.
fn evict_large_outputs(fresh: &mut [Event], to: EvictTo, guard: &GuardPolicy) -> Result<usize> {
    let mut evicted = 0;
    // Behind the seam, the names taken are listed once, at the first eviction.
    let mut taken: Option<Vec<String>> = None;
    for event in fresh
        .iter_mut()
        .filter(|e| e.trace_type == TraceType::ToolResult)
    {
        let call_id = event.tool_call_id.clone().unwrap_or_default();
        // An id that cannot be a file name is not evicted; the guard still
        // cuts what the model sees.
        let nameable =
            crate::base::id::validate_path_id(crate::base::error::IdKind::ToolCall, &call_id)
                .is_ok();
        let text = event.text();
        if nameable && guard::should_evict(&text, guard, Encoding::default().tokenizer()) {
            let name = match &to {
                EvictTo::Folder { paths, flush } => {
                    let dir = paths.evicted();
                    let name = crate::files::evicted::unused_evicted_name(&dir, &call_id)?;
                    crate::files::evicted::write_evicted_flushed(&dir, &name, &text, *flush)?;
                    name
                }
                EvictTo::Seam { memory, agent, id } => {
                    let taken = match &mut taken {
                        Some(taken) => taken,
                        None => taken.insert(memory.evicted_names(agent, id)?),
                    };
                    let name = crate::files::evicted::unused_name(&call_id, |name| {
                        taken.iter().any(|t| t == name)
                    })?;
                    memory.put_evicted(agent, id, &name, &text)?;
                    taken.push(name.clone());
                    name
                }
            };
            event.tool_result_ref = Some(crate::pipeline::guard::evicted_reference(&name));
            evicted += 1;
        }
    }
    Ok(evicted)
}
