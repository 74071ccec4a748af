//! The operations every transport offers (HTTP, JSON lines on stdio), over
//! one store and one agent.
//!
//! Sessions a request writes to stay open, their writer lock held, so an
//! agent loop pays for opening a session once. Each open session sits behind
//! its own mutex: requests on one session run one after another and never
//! interleave their writes, while requests on different sessions run in
//! parallel.
//!
//! The sessions are kept by the store's files, or by another backend behind
//! the engine's storage seam ([`Service::with_storage`], e.g. PostgreSQL,
//! which several services on several hosts share). There every operation
//! runs as on files — the sessions, working memory, the agent's long-term
//! memory, search and recall, the memory tools, ending a session into
//! episodic memory — each reading and writing the backend, never files.
//!
//! ```
//! use agentmem::{Store, Durability};
//! use agentmem_server::service::{Op, Service};
//! use serde_json::json;
//! let dir = tempfile::tempdir().unwrap();
//! let service = Service::new(Store::open(dir.path(), Durability::Batch).unwrap(), Default::default());
//! service.execute(Op::CreateSession, &json!({"session": "s1"})).unwrap();
//! let events = json!([{"trace_type": "user", "content": "fix the build"}]);
//! let appended = service.execute(Op::Append, &json!({"session": "s1", "events": events})).unwrap();
//! let appended: serde_json::Value = serde_json::from_str(appended.get()).unwrap();
//! assert_eq!(appended["appended"], 1);
//! let prepared = service.execute(Op::Prepare, &json!({"session": "s1", "model": "gpt-4o"})).unwrap();
//! let prepared: serde_json::Value = serde_json::from_str(prepared.get()).unwrap();
//! assert_eq!(prepared["payload"]["messages"][0]["content"], "fix the build");
//! ```

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};

use agentmem::files::records::{NewFact, Provenance, Trust};
use agentmem::pipeline::overflow::classify_provider_error;
use agentmem::pipeline::tiers::Action;
use agentmem::tools::{self, ToolContext, ToolsOn};
use agentmem::{
    AgentId, BudgetSettings, CompactOptions, Encoding, Event, PrepareRequest, Prepared,
    RecallRequest, SearchFilter, SearchRole, Session, SessionId, Store, Target, ToolSchema,
};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use agentmem::base::error::SchemaScope;
use agentmem::memory::facts::FactStore;
use agentmem::memory::notebook::Notebook;
use agentmem::session::Access;
use agentmem::storage::{Backend, Storage};
use agentmem::MemoryStorage;
use agentmem::StatePatch;

use crate::error::{ErrorKind, ServiceError};
use crate::mcp::ToolHost;
use crate::metrics::Metrics;
use crate::replies;
use crate::requests::{self, Request};

/// Tokens recall fills when the request does not say.
pub const DEFAULT_RECALL_BUDGET_TOKENS: u64 = 2_000;
/// HTTP status assumed for an overflow error reported without one.
const DEFAULT_OVERFLOW_STATUS: u16 = 400;

/// An operation, as JSON lines name it in `op` ([`Op::name`]); each HTTP
/// route but `/healthz`, `/metrics`, `/openapi.json` and `/mcp` leads to one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    CreateSession,
    Sessions,
    ResumeSession,
    Fork,
    DeleteSession,
    Append,
    Events,
    Prepare,
    Compact,
    RecoverOverflow,
    EndSession,
    State,
    UpdateState,
    StateHistory,
    SetStateSchema,
    Search,
    Recall,
    ReadMemory,
    AppendMemory,
    ReplaceMemory,
    Facts,
    RememberFact,
    Tool,
    Tools,
}

impl Op {
    /// Every operation, in the order the documentation lists them.
    pub const ALL: [Op; 24] = [
        Op::CreateSession,
        Op::Sessions,
        Op::ResumeSession,
        Op::Fork,
        Op::DeleteSession,
        Op::Append,
        Op::Events,
        Op::Prepare,
        Op::Compact,
        Op::RecoverOverflow,
        Op::EndSession,
        Op::State,
        Op::UpdateState,
        Op::StateHistory,
        Op::SetStateSchema,
        Op::Search,
        Op::Recall,
        Op::ReadMemory,
        Op::AppendMemory,
        Op::ReplaceMemory,
        Op::Facts,
        Op::RememberFact,
        Op::Tool,
        Op::Tools,
    ];

    /// The name in `op` and in metrics labels.
    pub fn name(self) -> &'static str {
        match self {
            Op::CreateSession => "create_session",
            Op::Sessions => "sessions",
            Op::ResumeSession => "resume_session",
            Op::Fork => "fork",
            Op::DeleteSession => "delete_session",
            Op::Append => "append",
            Op::Events => "events",
            Op::Prepare => "prepare",
            Op::Compact => "compact",
            Op::RecoverOverflow => "recover_overflow",
            Op::EndSession => "end_session",
            Op::State => "state",
            Op::UpdateState => "update_state",
            Op::StateHistory => "state_history",
            Op::SetStateSchema => "set_state_schema",
            Op::Search => "search",
            Op::Recall => "recall",
            Op::ReadMemory => "read_memory",
            Op::AppendMemory => "append_memory",
            Op::ReplaceMemory => "replace_memory",
            Op::Facts => "facts",
            Op::RememberFact => "remember_fact",
            Op::Tool => "tool",
            Op::Tools => "tools",
        }
    }
}

impl FromStr for Op {
    type Err = ServiceError;

    fn from_str(name: &str) -> Result<Op, ServiceError> {
        Op::ALL
            .into_iter()
            .find(|op| op.name() == name)
            .ok_or_else(|| {
                let known: Vec<&str> = Op::ALL.iter().map(|op| op.name()).collect();
                ServiceError::new(
                    ErrorKind::UnknownOperation,
                    format!("unknown op {name:?}; use one of: {}", known.join(", ")),
                )
            })
    }
}

/// A session slot: empty until a request opens the session for writing.
type Slot = Arc<Mutex<Option<Session>>>;

/// What is done to every session the service opens or creates, before any
/// request uses it: e.g. giving it an LLM summarizer.
pub type SessionSetup = Box<dyn Fn(&mut Session) + Send + Sync>;

/// The engine behind every transport: one store, one agent, open sessions.
pub struct Service {
    store: Store,
    /// Where the sessions are kept: the store's files unless
    /// [`Service::with_storage`] said otherwise.
    storage: Arc<dyn Storage>,
    /// Where the agent's memory is kept: the store's files unless
    /// [`Service::with_memory`] said otherwise.
    memory: Arc<dyn MemoryStorage>,
    agent: AgentId,
    open: Mutex<HashMap<SessionId, Slot>>,
    metrics: Metrics,
    setup: Option<SessionSetup>,
}

impl Service {
    /// A service over `store` for `agent`; nothing is opened yet.
    pub fn new(store: Store, agent: AgentId) -> Service {
        Service {
            storage: Arc::new(store.storage()),
            memory: Arc::new(store.memory()),
            store,
            agent,
            open: Mutex::new(HashMap::new()),
            metrics: Metrics::default(),
            setup: None,
        }
    }

    /// The same service, its sessions kept by `storage` (the store still
    /// gives their settings).
    pub fn with_storage(mut self, storage: Arc<dyn Storage>) -> Service {
        self.storage = storage;
        self
    }

    /// The same service, the agent's memory kept by `memory`.
    pub fn with_memory(mut self, memory: Arc<dyn MemoryStorage>) -> Service {
        self.memory = memory;
        self
    }

    /// The agent's notebook, where the memory is kept.
    fn notebook(&self) -> Notebook {
        Notebook::on(Arc::clone(&self.memory), &self.agent, self.redaction())
    }

    /// The agent's facts, where the memory is kept.
    fn fact_store(&self) -> FactStore {
        FactStore::on(Arc::clone(&self.memory), &self.agent, self.redaction())
    }

    fn redaction(&self) -> agentmem::redact::RedactionPolicy {
        self.store.config().redaction.unwrap_or_default()
    }

    /// Where the memory tools find the agent's memory and history: the
    /// store's files, or the service's backend behind the storage seam.
    fn tools_on(&self) -> ToolsOn<'_> {
        match self.storage.backend() {
            Backend::Files => ToolsOn::StoreFiles,
            Backend::Postgres => ToolsOn::Seam(&self.storage),
        }
    }

    /// Runs `setup` on every session opened or created from now on.
    pub fn with_session_setup(mut self, setup: SessionSetup) -> Service {
        self.setup = Some(setup);
        self
    }

    /// `session`, set up for service.
    fn set_up(&self, mut session: Session) -> Session {
        if let Some(setup) = &self.setup {
            setup(&mut session);
        }
        session
    }

    /// The store the service works on.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The agent whose sessions and memory the service serves.
    pub fn agent(&self) -> &AgentId {
        &self.agent
    }

    /// Request counts, latencies and what the pipeline saved.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Runs `op` with the arguments of the JSON object `args`; a field `op`
    /// does not take is refused (see [`Request::read`]).
    pub fn execute(&self, op: Op, args: &Value) -> Result<Answer, ServiceError> {
        self.run(Request::read(op, args)?)
    }

    /// Runs an operation whose arguments are read.
    pub fn run(&self, request: Request) -> Result<Answer, ServiceError> {
        match request {
            Request::CreateSession(request) => self.create_session(request),
            Request::Sessions => reply(self.storage.list_sessions(&self.agent)?),
            Request::ResumeSession(request) => self.resume_session(request),
            Request::Fork(request) => self.fork(request),
            Request::DeleteSession(request) => self.delete_session(request),
            Request::Append(request) => self.append(request),
            Request::Events(request) => self.events(request),
            Request::Prepare(request, dry_run) => self.prepare(request, dry_run),
            Request::Compact(request) => self.compact(request),
            Request::RecoverOverflow(request, overflow) => self.recover_overflow(request, overflow),
            Request::EndSession(on) => self
                .with_session_id(&SessionId::new(on.session)?, |session| {
                    reply(session.end()?)
                }),
            Request::State(request) => self.state(request),
            Request::UpdateState(request) => self.update_state(request),
            Request::StateHistory(on) => reply(replies::StateHistory {
                versions: self
                    .read_only(&SessionId::new(on.session)?)?
                    .working_memory_history()?,
            }),
            Request::SetStateSchema(request) => self.set_state_schema(request),
            Request::Search(request) => self.search(request),
            Request::Recall(request) => self.recall(request),
            Request::ReadMemory => reply(self.notebook().read()?),
            Request::AppendMemory(request) => self.append_memory(request),
            Request::ReplaceMemory(request) => self.replace_memory(request),
            Request::Facts(request) => self.facts(request),
            Request::RememberFact(request) => self.remember_fact(request),
            Request::Tool(request) => self.tool(request),
            Request::Tools(tools) => {
                let host = self.tool_host(tools.session.map(SessionId::new).transpose()?);
                let schemas: Vec<Value> = host.schemas().iter().map(ToolSchema::to_json).collect();
                reply(schemas)
            }
        }
    }

    /// Sessions held open for writing. A session busy with a request counts
    /// as open: `/metrics` does not wait behind a long compaction.
    pub fn open_sessions(&self) -> usize {
        let slots: Vec<Slot> = lock(&self.open).values().cloned().collect();
        slots
            .iter()
            .filter(|slot| match slot.try_lock() {
                Ok(session) => session.is_some(),
                Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner().is_some(),
                Err(TryLockError::WouldBlock) => true,
            })
            .count()
    }

    /// Sessions the service keeps a slot for (open, or being opened).
    pub fn known_slots(&self) -> usize {
        lock(&self.open).len()
    }

    /// Closes every open session, writing pending metadata and releasing locks.
    pub fn close(&self) -> Result<(), ServiceError> {
        let slots: Vec<Slot> = lock(&self.open).drain().map(|(_, slot)| slot).collect();
        for slot in slots {
            if let Some(session) = lock(&slot).take() {
                session.close()?;
            }
        }
        Ok(())
    }

    fn create_session(&self, request: requests::CreateSession) -> Result<Answer, ServiceError> {
        let id = request.session.map(SessionId::new).transpose()?;
        let session = self.set_up(
            self.store
                .create_session_in(&self.storage, &self.agent, id)?,
        );
        let id = session.id().clone();
        let meta = session.current_meta();
        *lock(&self.slot(&id)) = Some(session);
        reply(replies::Created {
            session: id.as_str().to_owned(),
            meta,
        })
    }

    /// Opens the session (replaying its log from the last checkpoint) and
    /// says where it stands. While another process writes to it, where it
    /// stands is read from its files: asking is a read.
    fn resume_session(&self, request: requests::OnSession) -> Result<Answer, ServiceError> {
        let id = SessionId::new(request.session)?;
        match self.with_session_id(&id, |session| reply(standing(session))) {
            Err(locked) if locked.kind == ErrorKind::Locked => {
                reply(standing(&self.read_only(&id)?))
            }
            answered => answered,
        }
    }

    /// The payload for the next call; with `dry_run`, what the call would
    /// send and do, from the session's files, changing nothing.
    fn prepare(
        &self,
        request: requests::Prepare,
        dry_run: requests::DryRun,
    ) -> Result<Answer, ServiceError> {
        let id = SessionId::new(request.session.clone())?;
        let prepare = prepare_request(request)?;
        if dry_run.dry_run {
            let prepared = self.read_only(&id)?.prepare(&prepare)?;
            return dry_run_report(prepared);
        }
        self.with_session_id(&id, |session| self.prepared(session.prepare(&prepare)?))
    }

    /// The working memory, with the schema it keeps to (or null).
    /// Read from the session's files, as [`Service::events`] reads.
    fn state(&self, request: requests::OnSession) -> Result<Answer, ServiceError> {
        let session = self.read_only(&SessionId::new(request.session)?)?;
        let schema = session.working_memory_schema()?;
        let state = session.working_memory();
        reply(replies::State {
            version: state.version,
            hash: state.hash.clone(),
            document: state.document.clone(),
            schema: schema.map_or(Value::Null, |s| s.json().clone()),
        })
    }

    fn append_memory(&self, request: requests::AppendMemory) -> Result<Answer, ServiceError> {
        let version = self
            .notebook()
            .append(&request.content, request.expected_hash.as_deref())?;
        reply(version)
    }

    fn replace_memory(&self, request: requests::ReplaceMemory) -> Result<Answer, ServiceError> {
        let version = self.notebook().update(
            &request.old_text,
            &request.new_text,
            request.expected_hash.as_deref(),
        )?;
        reply(version)
    }

    /// Current facts, or with `all`, superseded and retired ones too.
    fn facts(&self, request: requests::Facts) -> Result<Answer, ServiceError> {
        let facts = self.fact_store();
        let listed = match request.all {
            Some(requests::Flag(true)) => facts.all()?,
            Some(requests::Flag(false)) | None => facts.current()?,
        };
        reply(listed)
    }

    fn fork(&self, request: requests::Fork) -> Result<Answer, ServiceError> {
        let source = SessionId::new(request.session)?;
        let new_id = request.new_session.map(SessionId::new).transpose()?;
        // Held so no write to the source lands halfway through the copy.
        let slot = self.slot(&source);
        let _source = lock(&slot);
        let new_id = new_id.unwrap_or_else(SessionId::generate);
        let meta =
            self.storage
                .fork_session(&self.agent, &source, request.at_turn.as_deref(), &new_id)?;
        reply(meta)
    }

    fn delete_session(&self, request: requests::OnSession) -> Result<Answer, ServiceError> {
        let id = SessionId::new(request.session)?;
        let slot = self.slot(&id);
        let mut open = lock(&slot);
        if let Some(session) = open.take() {
            session.close()?;
        }
        self.storage.delete_session(&self.agent, &id)?;
        lock(&self.open).remove(&id);
        reply(replies::Deleted {
            deleted: id.as_str().to_owned(),
        })
    }

    /// Runs `op` with `args`, the request `text` read as JSON: the events of
    /// an append are read from the text itself, so their unknown fields keep
    /// their numbers as written (a JSON value would round one beyond 64 bits
    /// to a float).
    pub fn execute_text(&self, op: Op, args: &Value, text: &[u8]) -> Result<Answer, ServiceError> {
        #[derive(serde::Deserialize)]
        struct Appended {
            events: Vec<Event>,
        }
        match (op, serde_json::from_slice::<Appended>(text)) {
            (Op::Append, Ok(appended)) if args.is_object() => {
                let requests::AppendFields { session, .. } = requests::read(op, args)?;
                self.run(Request::Append(requests::Append {
                    session,
                    events: appended.events,
                }))
            }
            // Anything amiss is reported as the value's reading reports it.
            _ => self.execute(op, args),
        }
    }

    fn append(&self, request: requests::Append) -> Result<Answer, ServiceError> {
        let id = SessionId::new(request.session)?;
        let report = self.with_session_id(&id, |session| Ok(session.ingest(request.events)?))?;
        self.metrics
            .count_events(report.appended, report.duplicates);
        reply(replies::Appended {
            appended: report.appended,
            duplicates: report.duplicates,
            evicted: report.evicted,
            compaction_due: report.compaction_due,
        })
    }

    /// The session's whole history, archive included, from `after_seq` on,
    /// read from its files: a reader never waits for a writer, this
    /// service's or another process's.
    fn events(&self, request: requests::Events) -> Result<Answer, ServiceError> {
        let after = request.after_seq.map(|count| count.0);
        let limit = request.limit.map_or(usize::MAX, |count| {
            usize::try_from(count.0).unwrap_or(usize::MAX)
        });
        let history = self
            .read_only(&SessionId::new(request.session)?)?
            .full_history()?;
        let events: Vec<&Event> = history
            .iter()
            .filter(|e| after.is_none_or(|after| e.seq > after))
            .take(limit)
            .collect();
        reply(replies::EventPage { events })
    }

    /// The session opened read-only from its files: no lock taken, no wait
    /// for the request that holds it open, nothing written.
    fn read_only(&self, id: &SessionId) -> Result<Session, ServiceError> {
        Ok(self
            .store
            .open_session_in(&self.storage, &self.agent, id, Access::Read)?)
    }

    fn compact(&self, request: requests::Compact) -> Result<Answer, ServiceError> {
        let options = CompactOptions {
            focus: request.focus,
            ..CompactOptions::default()
        };
        let id = SessionId::new(request.session)?;
        let report = self.with_session_id(&id, |session| Ok(session.compact(&options)?))?;
        if report.applied {
            self.metrics.count_compaction(report.tokens_saved);
        }
        reply(report)
    }

    /// A prepare after the provider refused the last one as too long.
    fn recover_overflow(
        &self,
        request: requests::Prepare,
        overflow: requests::Overflow,
    ) -> Result<Answer, ServiceError> {
        let id = SessionId::new(request.session.clone())?;
        let prepare = prepare_request(request)?;
        let status = overflow.status.unwrap_or(DEFAULT_OVERFLOW_STATUS);
        let error = classify_provider_error(status, &overflow.error_body);
        self.with_session_id(&id, |session| {
            self.prepared(session.recover_from_overflow(&error, &prepare)?)
        })
    }

    fn search(&self, request: requests::Search) -> Result<Answer, ServiceError> {
        let filter = search_filter(&request)?;
        let hits = self
            .store
            .search_on(&*self.storage, &self.agent, &request.query, &filter)?;
        reply(hits)
    }

    fn recall(&self, request: requests::Recall) -> Result<Answer, ServiceError> {
        let recalled = self.store.recall_on(
            &*self.storage,
            &self.agent,
            &recall_request(request),
            Encoding::default().tokenizer(),
        )?;
        reply(recalled)
    }

    fn remember_fact(&self, request: requests::RememberFact) -> Result<Answer, ServiceError> {
        let added = self.fact_store().add(NewFact {
            fact: request.fact,
            tags: request.tags,
            confidence: 0.9,
            salience: 0.7,
            provenance: Provenance {
                session_id: request.session,
                extractor: "api".into(),
                ..Provenance::default()
            },
            trust: Trust::User,
        })?;
        reply(added)
    }

    fn tool(&self, request: requests::Tool) -> Result<Answer, ServiceError> {
        let arguments = request.arguments.unwrap_or(json!({}));
        let session = request.session.map(SessionId::new).transpose()?;
        let text = self
            .tool_host(session)
            .run(&request.name, &arguments)
            .ok_or_else(|| {
                ServiceError::new(
                    ErrorKind::UnknownOperation,
                    format!(
                        "unknown tool {:?}; the tools operation lists them",
                        request.name
                    ),
                )
            })?;
        reply(replies::ToolAnswer { text })
    }

    /// The memory tools for the model of `session` (with the working-memory
    /// tools, which change that session), or for no session.
    pub fn tool_host(&self, session: Option<SessionId>) -> ServiceTools<'_> {
        ServiceTools {
            service: self,
            session,
        }
    }

    fn update_state(&self, request: requests::UpdateState) -> Result<Answer, ServiceError> {
        let patch = StatePatch::from_json(request.patch)?;
        let expected = request.expected_version.map(|count| count.0);
        self.with_session_id(&SessionId::new(request.session)?, |session| {
            reply(replies::Versioned::from(
                session.update_working_memory(patch, expected)?,
            ))
        })
    }

    fn set_state_schema(&self, request: requests::SetStateSchema) -> Result<Answer, ServiceError> {
        let scope = match request.scope.as_deref() {
            None | Some("session") => SchemaScope::Session,
            Some("agent") => SchemaScope::Agent,
            Some(other) => {
                return Err(ServiceError::bad_request(format!(
                    "\"scope\" is session or agent, not {other:?}"
                )))
            }
        };
        let schema = (!request.schema.is_null()).then_some(request.schema);
        self.with_session_id(&SessionId::new(request.session)?, |session| {
            session.set_working_memory_schema(scope, schema)?;
            reply(replies::ScopeSet {
                scope: scope.as_str(),
            })
        })
    }

    fn prepared(&self, prepared: Prepared) -> Result<Answer, ServiceError> {
        self.metrics.count_prepare(&prepared.stats);
        reply(replies::PreparedReply {
            payload: &prepared.payload,
            stats: &prepared.stats,
            dry_run: None,
            would_compact: None,
        })
    }

    /// Runs `work` on session `id`, opened for writing once and locked for
    /// the duration, so its writes never interleave with another request's.
    fn with_session_id<T>(
        &self,
        id: &SessionId,
        work: impl FnOnce(&mut Session) -> Result<T, ServiceError>,
    ) -> Result<T, ServiceError> {
        let slot = self.slot(id);
        let mut open = lock(&slot);
        let session = match open.as_mut() {
            Some(session) => session,
            None => match self.store.open_session_in(
                &self.storage,
                &self.agent,
                id,
                Access::Write(self.store.durability()),
            ) {
                Ok(session) => open.insert(self.set_up(session)),
                Err(error) => {
                    drop(open);
                    self.forget_if_unused(id, slot);
                    return Err(error.into());
                }
            },
        };
        work(session)
    }

    /// Drops the empty slot of a session that could not be opened, so
    /// requests for sessions that do not exist leave nothing behind.
    fn forget_if_unused(&self, id: &SessionId, slot: Slot) {
        let mut open = lock(&self.open);
        // Slots are handed out under this lock: two owners (the map and
        // this caller) means no other request holds it.
        if Arc::strong_count(&slot) == 2 && lock(&slot).is_none() {
            open.remove(id);
        }
    }

    /// The slot of session `id`, made on first use.
    fn slot(&self, id: &SessionId) -> Slot {
        lock(&self.open).entry(id.clone()).or_default().clone()
    }
}

/// The memory tools as the service runs them: with a session, the
/// working-memory tools change it under its lock like any other request.
pub struct ServiceTools<'a> {
    service: &'a Service,
    session: Option<SessionId>,
}

impl ToolHost for ServiceTools<'_> {
    fn schemas(&self) -> Vec<ToolSchema> {
        match self.session {
            Some(_) => tools::session_schemas(),
            None => tools::schemas(),
        }
    }

    fn run(&self, name: &str, arguments: &Value) -> Option<String> {
        let service = self.service;
        let Some(id) = &self.session else {
            let context = ToolContext {
                store: &service.store,
                agent: &service.agent,
                session: None,
                on: service.tools_on(),
            };
            return tools::run(&context, name, arguments);
        };
        service
            .with_session_id(id, |session| {
                Ok(tools::run_in_session(
                    &service.store,
                    &service.agent,
                    service.tools_on(),
                    session,
                    name,
                    arguments,
                ))
            })
            .unwrap_or_else(|error| Some(format!("error: {error}")))
    }
}

/// Where `session` stands: its description, its turn, its calibration.
fn standing(session: &Session) -> replies::Resumed {
    let calibration = session
        .calibration()
        .all()
        .map(|(model, c)| replies::ModelCalibration {
            model: model.to_string(),
            factor: c.factor,
            samples: c.samples,
        })
        .collect();
    replies::Resumed {
        meta: session.current_meta(),
        turn: session.current_turn().to_owned(),
        calibration,
    }
}

/// A poisoned lock only means another request panicked mid-way; the
/// session's own files stay consistent (appends are atomic), so go on.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An operation's result, written as JSON text: numbers an event's
/// unknown fields hold (beyond 64 bits, beyond a float's range) stay as
/// they were written, as a [`Value`] could not keep them.
pub type Answer = Box<RawValue>;

/// A result as the JSON it answers with.
fn reply(result: impl serde::Serialize) -> Result<Answer, ServiceError> {
    Ok(serde_json::value::to_raw_value(&result)?)
}

/// The engine's filter for a [`requests::Search`] (its query aside).
pub fn search_filter(request: &requests::Search) -> Result<SearchFilter, agentmem::Error> {
    let date = |text: &Option<String>| {
        text.as_deref()
            .map(agentmem::search::parse_date)
            .transpose()
    };
    Ok(SearchFilter {
        session: request.session.clone(),
        role: request.role.as_deref().map(SearchRole::parse).transpose()?,
        since: date(&request.since)?,
        until: date(&request.until)?,
        limit: request
            .limit
            .map_or(agentmem::search::DEFAULT_SEARCH_LIMIT, |count| {
                usize::try_from(count.0).unwrap_or(usize::MAX)
            }),
    })
}

/// The engine's request for a [`requests::Recall`].
pub fn recall_request(request: requests::Recall) -> RecallRequest {
    let budget = request
        .budget
        .map_or(DEFAULT_RECALL_BUDGET_TOKENS, |count| count.0);
    let mut recall = RecallRequest::new(&request.query, budget);
    recall.exclude_session = request.session;
    recall
}

/// The engine's request for a [`requests::Prepare`]: this call's settings
/// as the top layer, over the session's and the agent's.
pub fn prepare_request(request: requests::Prepare) -> Result<PrepareRequest, ServiceError> {
    let target = match &request.target {
        Some(name) => name.parse::<Target>().map_err(ServiceError::bad_request)?,
        None => Target::for_model(&request.model),
    };
    let mut prepare = PrepareRequest::new(request.model, target);
    prepare.system = request.system;
    prepare.live_context = request.live_context;
    if let Some(cache) = &request.prompt_cache {
        prepare.cache = cache.parse().map_err(ServiceError::bad_request)?;
    }
    prepare.tools = request
        .tools
        .unwrap_or_default()
        .iter()
        .map(|tool| ToolSchema::from_json(tool).map_err(ServiceError::bad_request))
        .collect::<Result<_, _>>()?;
    prepare.context.strategy = request.strategy;
    prepare.context.compaction_timing = request.compaction_timing;
    prepare.context.memory = request.memory;
    prepare.budget = BudgetSettings {
        context_window: request.context_window.map(|count| count.0),
        max_output_tokens: request.max_output_tokens.map(|count| count.0),
        safety_margin: request.safety_margin.map(|count| count.0),
        trigger_ratio: request.trigger_ratio,
    };
    Ok(prepare)
}

/// What a dry run answers: the payload the call would send, its stats, and
/// whether a writer's call would have compacted.
fn dry_run_report(prepared: Prepared) -> Result<Answer, ServiceError> {
    let would_compact = prepared
        .stats
        .actions
        .iter()
        .any(|action| matches!(action, Action::CompactionWouldRun));
    reply(replies::PreparedReply {
        payload: &prepared.payload,
        stats: &prepared.stats,
        dry_run: Some(true),
        would_compact: Some(would_compact),
    })
}
