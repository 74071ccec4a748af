//! The operations every transport offers (HTTP, JSON lines on stdio), over
//! one store and one agent.
//!
//! Sessions a request writes to stay open, their writer lock held, so an
//! agent loop pays for opening a session once. Each open session sits behind
//! its own mutex: requests on one session run one after another and never
//! interleave their writes, while requests on different sessions run in
//! parallel.
//!
//! ```
//! use agentmem::{store::Store, Durability};
//! use agentmem_server::service::{Op, Service};
//! use serde_json::json;
//! let dir = tempfile::tempdir().unwrap();
//! let service = Service::new(Store::open(dir.path(), Durability::Batch).unwrap(), Default::default());
//! service.execute(Op::CreateSession, &json!({"session": "s1"})).unwrap();
//! let events = json!([{"trace_type": "user", "content": "fix the build"}]);
//! let appended = service.execute(Op::Append, &json!({"session": "s1", "events": events})).unwrap();
//! assert_eq!(appended["appended"], 1);
//! let prepared = service.execute(Op::Prepare, &json!({"session": "s1", "model": "gpt-4o"})).unwrap();
//! assert_eq!(prepared["payload"]["messages"][0]["content"], "fix the build");
//! ```

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};

use agentmem::context::overflow::classify_provider_error;
use agentmem::event::Event;
use agentmem::id::{AgentId, SessionId};
use agentmem::memory::facts::{NewFact, Provenance, Trust};
use agentmem::memory::tools::{self, ToolContext};
use agentmem::prepare::{PrepareRequest, Prepared};
use agentmem::recall::RecallRequest;
use agentmem::render::{Target, ToolSchema};
use agentmem::search::{Role, SearchFilter};
use agentmem::session::{CompactOptions, Session};
use agentmem::store::Store;
use agentmem::tokens::Encoding;
use serde_json::{json, Value};

use agentmem::working::schema::SchemaScope;
use agentmem::working::StatePatch;

use crate::error::{ErrorKind, ServiceError};
use crate::mcp::ToolHost;
use crate::metrics::Metrics;

/// Results a search returns when the request does not say.
pub const DEFAULT_SEARCH_LIMIT: usize = 10;
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
    agent: AgentId,
    open: Mutex<HashMap<SessionId, Slot>>,
    metrics: Metrics,
    setup: Option<SessionSetup>,
}

impl Service {
    /// A service over `store` for `agent`; nothing is opened yet.
    pub fn new(store: Store, agent: AgentId) -> Service {
        Service {
            store,
            agent,
            open: Mutex::new(HashMap::new()),
            metrics: Metrics::default(),
            setup: None,
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

    /// Runs `op` with the arguments of the JSON object `args`.
    pub fn execute(&self, op: Op, args: &Value) -> Result<Value, ServiceError> {
        if !args.is_object() {
            return Err(ServiceError::bad_request(
                "the request body must be a JSON object",
            ));
        }
        match op {
            Op::CreateSession => self.create_session(args),
            Op::Sessions => Ok(serde_json::to_value(
                self.store.list_sessions(&self.agent)?,
            )?),
            Op::ResumeSession => self.resume_session(args),
            Op::Fork => self.fork(args),
            Op::DeleteSession => self.delete_session(args),
            Op::Append => self.append(args),
            Op::Events => self.events(args),
            Op::Prepare => self.prepare(args),
            Op::Compact => self.compact(args),
            Op::RecoverOverflow => self.recover_overflow(args),
            Op::EndSession => {
                self.with_session(args, |session| Ok(serde_json::to_value(session.end()?)?))
            }
            Op::State => self.state(args),
            Op::UpdateState => self.update_state(args),
            Op::StateHistory => self.with_session(args, |session| {
                Ok(json!({"versions": session.working_memory_history()?}))
            }),
            Op::SetStateSchema => self.set_state_schema(args),
            Op::Search => self.search(args),
            Op::Recall => self.recall(args),
            Op::ReadMemory => Ok(serde_json::to_value(
                self.store.notebook(&self.agent).read()?,
            )?),
            Op::AppendMemory => self.append_memory(args),
            Op::ReplaceMemory => self.replace_memory(args),
            Op::Facts => self.facts(args),
            Op::RememberFact => self.remember_fact(args),
            Op::Tool => self.tool(args),
            Op::Tools => {
                let host = self.tool_host(optional_session_id(args)?);
                let schemas: Vec<Value> = host.schemas().iter().map(ToolSchema::to_json).collect();
                Ok(Value::Array(schemas))
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

    fn create_session(&self, args: &Value) -> Result<Value, ServiceError> {
        let id = optional_str(args, "session")?
            .map(SessionId::new)
            .transpose()?;
        let session = self.set_up(self.store.create_session(&self.agent, id)?);
        let id = session.id().clone();
        let meta = session.current_meta();
        *lock(&self.slot(&id)) = Some(session);
        Ok(json!({"session": id.as_str(), "meta": meta}))
    }

    /// Opens the session (replaying its log from the last checkpoint) and
    /// says where it stands.
    fn resume_session(&self, args: &Value) -> Result<Value, ServiceError> {
        self.with_session(args, |session| {
            let calibration: Vec<Value> = session
                .calibration()
                .all()
                .map(|(model, c)| json!({"model": model, "factor": c.factor, "samples": c.samples}))
                .collect();
            Ok(json!({
                "meta": session.current_meta(),
                "turn": session.current_turn(),
                "calibration": calibration,
            }))
        })
    }

    fn prepare(&self, args: &Value) -> Result<Value, ServiceError> {
        let request = prepare_request(args)?;
        self.with_session(args, |session| self.prepared(session.prepare(&request)?))
    }

    /// The working memory, with the schema it keeps to (or null).
    fn state(&self, args: &Value) -> Result<Value, ServiceError> {
        self.with_session(args, |session| {
            let schema = session.working_memory_schema()?;
            let mut state = serde_json::to_value(session.working_memory())?;
            state["schema"] = schema.map_or(Value::Null, |s| s.json().clone());
            Ok(state)
        })
    }

    fn append_memory(&self, args: &Value) -> Result<Value, ServiceError> {
        let version = self.store.notebook(&self.agent).append(
            required_str(args, "text")?,
            optional_str(args, "expected_hash")?,
        )?;
        Ok(serde_json::to_value(version)?)
    }

    fn replace_memory(&self, args: &Value) -> Result<Value, ServiceError> {
        let version = self.store.notebook(&self.agent).update(
            required_str(args, "old")?,
            optional_str(args, "new")?.unwrap_or_default(),
            optional_str(args, "expected_hash")?,
        )?;
        Ok(serde_json::to_value(version)?)
    }

    /// Current facts, or with `all`, superseded and retired ones too.
    fn facts(&self, args: &Value) -> Result<Value, ServiceError> {
        let facts = self.store.facts(&self.agent);
        let listed = match optional_bool(args, "all")? {
            Some(true) => facts.all()?,
            Some(false) | None => facts.current()?,
        };
        Ok(serde_json::to_value(listed)?)
    }

    fn fork(&self, args: &Value) -> Result<Value, ServiceError> {
        let source = session_id(args)?;
        let new_id = optional_str(args, "new_session")?
            .map(SessionId::new)
            .transpose()?;
        // Held so no write to the source lands halfway through the copy.
        let slot = self.slot(&source);
        let _source = lock(&slot);
        let meta = self.store.fork_session(
            &self.agent,
            &source,
            optional_str(args, "at_turn")?,
            new_id,
        )?;
        Ok(serde_json::to_value(meta)?)
    }

    fn delete_session(&self, args: &Value) -> Result<Value, ServiceError> {
        let id = session_id(args)?;
        let slot = self.slot(&id);
        let mut open = lock(&slot);
        if let Some(session) = open.take() {
            session.close()?;
        }
        self.store.delete_session(&self.agent, &id)?;
        lock(&self.open).remove(&id);
        Ok(json!({"deleted": id.as_str()}))
    }

    /// Runs `op` with `args`, the request `text` read as JSON: the events of
    /// an append are read from the text itself, so their unknown fields keep
    /// their numbers as written (a JSON value would round one beyond 64 bits
    /// to a float).
    pub fn execute_text(&self, op: Op, args: &Value, text: &[u8]) -> Result<Value, ServiceError> {
        #[derive(serde::Deserialize)]
        struct Appended {
            events: Vec<Event>,
        }
        match (op, serde_json::from_slice::<Appended>(text)) {
            (Op::Append, Ok(appended)) if args.is_object() => {
                self.append_events(args, appended.events)
            }
            // Anything amiss is reported as the value's reading reports it.
            _ => self.execute(op, args),
        }
    }

    fn append(&self, args: &Value) -> Result<Value, ServiceError> {
        let events = args
            .get("events")
            .ok_or_else(|| ServiceError::bad_request("\"events\": a list of events is needed"))?;
        let events: Vec<Event> = serde_json::from_value(events.clone()).map_err(|e| {
            ServiceError::bad_request(format!("\"events\" are not agentmem events: {e}"))
        })?;
        self.append_events(args, events)
    }

    fn append_events(&self, args: &Value, events: Vec<Event>) -> Result<Value, ServiceError> {
        let report = self.with_session(args, |session| Ok(session.ingest(events)?))?;
        self.metrics
            .count_events(report.appended, report.duplicates);
        Ok(json!({
            "appended": report.appended,
            "duplicates": report.duplicates,
            "evicted": report.evicted,
            "compaction_due": report.compaction_due,
        }))
    }

    /// The session's whole history, archive included, from `after_seq` on.
    fn events(&self, args: &Value) -> Result<Value, ServiceError> {
        let after = optional_u64(args, "after_seq")?;
        let limit = optional_u64(args, "limit")?.map_or(usize::MAX, |n| n as usize);
        let history = self.with_session(args, |session| Ok(session.full_history()?))?;
        let events: Vec<&Event> = history
            .iter()
            .filter(|e| after.is_none_or(|after| e.seq > after))
            .take(limit)
            .collect();
        Ok(json!({"events": events}))
    }

    fn compact(&self, args: &Value) -> Result<Value, ServiceError> {
        let options = CompactOptions {
            focus: optional_str(args, "focus")?.map(str::to_owned),
            ..CompactOptions::default()
        };
        let report = self.with_session(args, |session| Ok(session.compact(&options)?))?;
        if report.applied {
            self.metrics.count_compaction(report.tokens_saved);
        }
        Ok(serde_json::to_value(report)?)
    }

    fn recover_overflow(&self, args: &Value) -> Result<Value, ServiceError> {
        let request = prepare_request(args)?;
        let status = match args.get("status").and_then(Value::as_u64) {
            Some(status) => u16::try_from(status)
                .map_err(|_| ServiceError::bad_request("\"status\" is an HTTP status code"))?,
            None => DEFAULT_OVERFLOW_STATUS,
        };
        let error = classify_provider_error(status, required_str(args, "error_body")?);
        self.with_session(args, |session| {
            self.prepared(session.recover_from_overflow(&error, &request)?)
        })
    }

    fn search(&self, args: &Value) -> Result<Value, ServiceError> {
        let date = |key| -> Result<_, ServiceError> {
            Ok(optional_str(args, key)?
                .map(agentmem::search::parse_date)
                .transpose()?)
        };
        let filter = SearchFilter {
            session: optional_str(args, "session")?.map(str::to_owned),
            role: optional_str(args, "role")?.map(Role::parse).transpose()?,
            since: date("since")?,
            until: date("until")?,
            limit: optional_u64(args, "limit")?.map_or(DEFAULT_SEARCH_LIMIT, |n| n as usize),
        };
        let hits = self
            .store
            .search(&self.agent, required_str(args, "query")?, &filter)?;
        Ok(serde_json::to_value(hits)?)
    }

    fn recall(&self, args: &Value) -> Result<Value, ServiceError> {
        let budget = optional_u64(args, "budget")?.unwrap_or(DEFAULT_RECALL_BUDGET_TOKENS);
        let mut request = RecallRequest::new(required_str(args, "query")?, budget);
        request.exclude_session = optional_str(args, "session")?.map(str::to_owned);
        let recalled = self
            .store
            .recall(&self.agent, &request, Encoding::default().tokenizer())?;
        Ok(serde_json::to_value(recalled)?)
    }

    fn remember_fact(&self, args: &Value) -> Result<Value, ServiceError> {
        let tags = match args.get("tags") {
            None => Vec::new(),
            Some(tags) => serde_json::from_value(tags.clone())
                .map_err(|_| ServiceError::bad_request("\"tags\" must be a list of strings"))?,
        };
        let added = self.store.facts(&self.agent).add(NewFact {
            fact: required_str(args, "fact")?.to_owned(),
            tags,
            confidence: 0.9,
            salience: 0.7,
            provenance: Provenance {
                session_id: optional_str(args, "session")?.map(str::to_owned),
                extractor: "api".into(),
                ..Provenance::default()
            },
            trust: Trust::User,
        })?;
        Ok(serde_json::to_value(added)?)
    }

    fn tool(&self, args: &Value) -> Result<Value, ServiceError> {
        let name = required_str(args, "name")?;
        let arguments = args.get("arguments").cloned().unwrap_or(json!({}));
        let text = self
            .tool_host(optional_session_id(args)?)
            .run(name, &arguments)
            .ok_or_else(|| {
                ServiceError::new(
                    ErrorKind::UnknownOperation,
                    format!("unknown tool {name:?}; the tools operation lists them"),
                )
            })?;
        Ok(json!({"text": text}))
    }

    /// The memory tools for the model of `session` (with the working-memory
    /// tools, which change that session), or for no session.
    pub fn tool_host(&self, session: Option<SessionId>) -> ServiceTools<'_> {
        ServiceTools {
            service: self,
            session,
        }
    }

    fn update_state(&self, args: &Value) -> Result<Value, ServiceError> {
        let patch = args.get("patch").cloned().ok_or_else(|| {
            ServiceError::bad_request(
                "\"patch\": a JSON Merge Patch object or a JSON Patch list is needed",
            )
        })?;
        let patch = StatePatch::from_json(patch)?;
        let expected = optional_u64(args, "expected_version")?;
        self.with_session(args, |session| {
            Ok(serde_json::to_value(
                session.update_working_memory(patch, expected)?,
            )?)
        })
    }

    fn set_state_schema(&self, args: &Value) -> Result<Value, ServiceError> {
        let scope = match optional_str(args, "scope")? {
            None | Some("session") => SchemaScope::Session,
            Some("agent") => SchemaScope::Agent,
            Some(other) => {
                return Err(ServiceError::bad_request(format!(
                    "\"scope\" is session or agent, not {other:?}"
                )))
            }
        };
        let schema = args
            .get("schema")
            .ok_or_else(|| {
                ServiceError::bad_request(
                    "\"schema\": a JSON Schema is needed (null removes the schema)",
                )
            })?
            .clone();
        let schema = (!schema.is_null()).then_some(schema);
        self.with_session(args, |session| {
            session.set_working_memory_schema(scope, schema)?;
            Ok(json!({"scope": scope.as_str()}))
        })
    }

    fn prepared(&self, prepared: Prepared) -> Result<Value, ServiceError> {
        self.metrics.count_prepare(&prepared.stats);
        Ok(json!({"payload": prepared.payload, "stats": serde_json::to_value(&prepared.stats)?}))
    }

    /// Runs `work` on the session `args` names, opened for writing once and
    /// locked for the duration, so its writes never interleave with another
    /// request's.
    fn with_session<T>(
        &self,
        args: &Value,
        work: impl FnOnce(&mut Session) -> Result<T, ServiceError>,
    ) -> Result<T, ServiceError> {
        self.with_session_id(&session_id(args)?, work)
    }

    fn with_session_id<T>(
        &self,
        id: &SessionId,
        work: impl FnOnce(&mut Session) -> Result<T, ServiceError>,
    ) -> Result<T, ServiceError> {
        let slot = self.slot(id);
        let mut open = lock(&slot);
        let session = match open.as_mut() {
            Some(session) => session,
            None => match self.store.open_session(&self.agent, id) {
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
            };
            return tools::run(&context, name, arguments);
        };
        service
            .with_session_id(id, |session| {
                Ok(tools::run_in_session(
                    &service.store,
                    &service.agent,
                    session,
                    name,
                    arguments,
                ))
            })
            .unwrap_or_else(|error| Some(format!("error: {error}")))
    }
}

/// A poisoned lock only means another request panicked mid-way; the
/// session's own files stay consistent (appends are atomic), so go on.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn prepare_request(args: &Value) -> Result<PrepareRequest, ServiceError> {
    let model = required_str(args, "model")?;
    let target = match optional_str(args, "target")? {
        Some(name) => name.parse::<Target>().map_err(ServiceError::bad_request)?,
        None => Target::for_model(model),
    };
    let mut request = PrepareRequest::new(model, target);
    request.system = optional_str(args, "system")?.map(str::to_owned);
    request.live_context = optional_str(args, "live_context")?.map(str::to_owned);
    if let Some(cache) = optional_str(args, "prompt_cache")? {
        request.cache = cache.parse().map_err(ServiceError::bad_request)?;
    }
    if let Some(tools) = args.get("tools") {
        request.tools = tools
            .as_array()
            .ok_or_else(|| ServiceError::bad_request("\"tools\": a list of tool schemas"))?
            .iter()
            .map(|tool| ToolSchema::from_json(tool).map_err(ServiceError::bad_request))
            .collect::<Result<_, _>>()?;
    }
    Ok(request)
}

fn optional_session_id(args: &Value) -> Result<Option<SessionId>, ServiceError> {
    Ok(optional_str(args, "session")?
        .map(SessionId::new)
        .transpose()?)
}

fn session_id(args: &Value) -> Result<SessionId, ServiceError> {
    Ok(SessionId::new(required_str(args, "session")?)?)
}

fn required_str<'a>(args: &'a Value, key: &str) -> Result<&'a str, ServiceError> {
    optional_str(args, key)?
        .ok_or_else(|| ServiceError::bad_request(format!("the request needs a \"{key}\" string")))
}

/// A string field; left out (or null) is `None`, any other type an error:
/// a misspelt `expected_hash` must not quietly turn compare-and-swap off.
fn optional_str<'a>(args: &'a Value, key: &str) -> Result<Option<&'a str>, ServiceError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(ServiceError::bad_request(format!(
            "\"{key}\" must be a string"
        ))),
    }
}

/// The largest count a request may carry: the largest integer every JSON
/// client (JavaScript's included) reads exactly.
const MAX_COUNT: u64 = (1 << 53) - 1;

/// A count: an integer from 0 to [`MAX_COUNT`], also when written as `12.0`
/// or, from a query string, as `"12"`.
fn optional_u64(args: &Value, key: &str) -> Result<Option<u64>, ServiceError> {
    let count = |value: &Value| {
        let count = match value {
            Value::String(text) => text.parse::<u64>().ok(),
            other => other.as_u64().or_else(|| {
                let float = other.as_f64()?;
                (float >= 0.0 && float.fract() == 0.0 && float <= MAX_COUNT as f64)
                    .then_some(float as u64)
            }),
        }?;
        (count <= MAX_COUNT).then_some(count)
    };
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => count(value).map(Some).ok_or_else(|| {
            ServiceError::bad_request(format!(
                "\"{key}\" must be an integer from 0 to {MAX_COUNT}"
            ))
        }),
    }
}

/// A flag: `true` or `false`, also as a query string's text.
fn optional_bool(args: &Value, key: &str) -> Result<Option<bool>, ServiceError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(flag)) => Ok(Some(*flag)),
        Some(Value::String(text)) if text == "true" || text == "false" => Ok(Some(text == "true")),
        Some(_) => Err(ServiceError::bad_request(format!(
            "\"{key}\" must be true or false"
        ))),
    }
}
