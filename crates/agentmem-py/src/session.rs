//! `NativeSession`: one open session. The engine's session (which holds the
//! writer lock while open for writing) sits behind a mutex, so one session
//! object shared by several Python threads takes their calls one at a time,
//! each with the interpreter released. The mutex is only ever taken with
//! the interpreter released, so a thread waiting for it never holds up a
//! Python callable the session is running.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use agentmem::base::error::SchemaScope;
use agentmem::pipeline::overflow::classify_provider_error;
use agentmem::pipeline::tiers::Action;
use agentmem::{CompactOptions, Event, PrepareRequest, Session, SessionId, StatePatch};
use agentmem_import::native::Shape;
use agentmem_import::Format;
use agentmem_server::{replies, requests, service::prepare_request};
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::PyDict;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::callables::SharedSummarizer;
use crate::errors::{BindingError, BindingResult};
use crate::json;
use crate::payload::SegmentCache;
use crate::store::StoreShared;

/// How the session was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Holding the writer lock.
    Write,
    /// From its files, without a lock.
    Read,
}

/// One session of the store's agent (see the Python `agentmem.Session`).
#[pyclass(frozen, module = "agentmem._native")]
pub(crate) struct NativeSession {
    shared: Arc<StoreShared>,
    id: SessionId,
    access: Access,
    /// `None` once closed.
    open: Arc<Mutex<Option<Session>>>,
    /// Set by `close`, read without waiting for the session.
    closed: Arc<AtomicBool>,
    /// The Python objects of the latest prepared payload's segments; only
    /// ever taken with the interpreter attached.
    segments: Mutex<SegmentCache>,
}

impl NativeSession {
    /// `session`, as opened from `shared`, given the store's summarizer.
    pub(crate) fn new(
        shared: &Arc<StoreShared>,
        mut session: Session,
        access: Access,
    ) -> NativeSession {
        if let Some(summarizer) = &shared.callables.summarizer {
            session.set_summarizer(Box::new(SharedSummarizer(Arc::clone(summarizer))));
        }
        NativeSession {
            shared: Arc::clone(shared),
            id: session.id().clone(),
            access,
            open: Arc::new(Mutex::new(Some(session))),
            closed: Arc::new(AtomicBool::new(false)),
            segments: Mutex::default(),
        }
    }

    /// Runs `work` on the open session with the interpreter released.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        work: impl FnOnce(&StoreShared, &mut Session) -> BindingResult<T> + Send,
    ) -> PyResult<T> {
        let open = Arc::clone(&self.open);
        let id = self.id.clone();
        self.shared.run(py, move |shared| {
            let mut guard = open.lock().unwrap_or_else(PoisonError::into_inner);
            match guard.as_mut() {
                Some(session) => work(shared, session),
                None => Err(BindingError::Closed {
                    session: id.to_string(),
                }),
            }
        })
    }

    /// The engine's request for the HTTP API's `prepare` body `arguments`
    /// (without `session`).
    fn prepare_request(
        &self,
        shared: &StoreShared,
        mut arguments: Value,
        operation: &str,
    ) -> BindingResult<PrepareRequest> {
        if let Some(object) = arguments.as_object_mut() {
            object.insert("session".into(), Value::String(self.id.to_string()));
        }
        let request: requests::Prepare = agentmem::base::arguments::parse(operation, &arguments)?;
        shared.check_model(&request.model)?;
        prepare_request(request).map_err(|error| BindingError::Request(error.message))
    }

    /// `prepared` as Python objects (the payload dict, the stats dict),
    /// reusing the objects built for segments an earlier call had.
    fn objects<'py>(
        &self,
        py: Python<'py>,
        prepared: &agentmem::Prepared,
    ) -> PyResult<Objects<'py>> {
        let mut cache = self
            .segments
            .lock_py_attached(py)
            .unwrap_or_else(PoisonError::into_inner);
        cache.convert(py, &prepared.payload, &prepared.stats)
    }
}

/// A prepared call as Python objects: the payload dict and the stats dict.
type Objects<'py> = (Bound<'py, PyDict>, Bound<'py, PyAny>);

/// What an ingest wrote, as the HTTP API's `append` answers it.
fn appended(report: agentmem::IngestReport) -> replies::Appended {
    replies::Appended {
        appended: report.appended,
        duplicates: report.duplicates,
        evicted: report.evicted,
        compaction_due: report.compaction_due,
    }
}

/// `report` as a dict: `{"appended", "duplicates", "evicted", "compaction_due"}`.
fn appended_dict<'py>(py: Python<'py>, report: &replies::Appended) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("appended", report.appended)?;
    dict.set_item("duplicates", report.duplicates)?;
    dict.set_item("evicted", report.evicted)?;
    dict.set_item("compaction_due", report.compaction_due)?;
    Ok(dict)
}

/// A prepared call as the HTTP API answers it.
fn prepared_reply(prepared: &agentmem::Prepared) -> BindingResult<String> {
    json::write(&replies::PreparedReply {
        payload: &prepared.payload,
        stats: &prepared.stats,
        dry_run: None,
        would_compact: None,
    })
}

#[pymethods]
impl NativeSession {
    /// The session id.
    #[getter]
    fn id(&self) -> String {
        self.id.to_string()
    }

    /// Whether this object holds the session's writer lock.
    #[getter]
    fn writable(&self) -> bool {
        match self.access {
            Access::Write => true,
            Access::Read => false,
        }
    }

    /// Whether the session is closed; answered at once, even while
    /// another thread's call is using the session.
    #[getter]
    fn closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Appends agentmem events (a list of dicts); the whole batch is
    /// checked before any of it is written. What was written.
    fn ingest<'py>(
        &self,
        py: Python<'py>,
        events: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let events = events_of(py, events)?;
        let report = self.with(py, |_, session| Ok(appended(session.ingest(events)?)))?;
        appended_dict(py, &report)
    }

    /// Appends what the agent hands over in a provider's `shape`
    /// (`openai-chat`, `openai-responses`, `anthropic`): with `Handover::Messages`, messages
    /// or input items; with `Handover::Response`, a model's response, its usage kept
    /// on the last event. What was written.
    fn ingest_native<'py>(
        &self,
        py: Python<'py>,
        shape: &str,
        handover: &str,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let value = json::from_python(py, value, "the messages or response")?;
        let report = self.with(py, |_, session| {
            let shape = Shape::from_name(shape).ok_or_else(|| {
                BindingError::Input(format!(
                    "unknown format {shape:?}; use one of: {}",
                    Shape::names()
                ))
            })?;
            let events = match handover {
                "messages" => agentmem_import::native::events_from_messages(shape, &value)?,
                "response" => agentmem_import::native::events_from_response(shape, &value)?,
                other => {
                    return Err(BindingError::Input(format!(
                        "handover is \"messages\" or \"response\", not {other:?}"
                    )))
                }
            };
            Ok(appended(session.ingest(events)?))
        })?;
        appended_dict(py, &report)
    }

    /// Imports a transcript file (Claude Code, Codex CLI, SWE-agent,
    /// OpenHands, OpenAI messages, agentmem events; `format` detected when
    /// `None`) into this session: `{"format", "records", "skipped",
    /// "appended", "duplicates", "evicted", "compaction_due"}` (JSON).
    #[pyo3(signature = (path, format=None))]
    fn import_file(
        &self,
        py: Python<'_>,
        path: std::path::PathBuf,
        format: Option<String>,
    ) -> PyResult<String> {
        self.with(py, |_, session| {
            let format = match format.as_deref() {
                None => None,
                Some(name) => Some(Format::from_name(name).ok_or_else(|| {
                    BindingError::Input(format!(
                        "unknown format {name:?}; use one of: {}",
                        Format::names()
                    ))
                })?),
            };
            let (format, imported) = agentmem_import::read(&path, format)?;
            let records = imported.records;
            let skipped = imported.skipped.len();
            let report = session.ingest(imported.events)?;
            let mut value = serde_json::to_value(appended(report))
                .map_err(|error| BindingError::Input(error.to_string()))?;
            value["format"] = format.name().into();
            value["records"] = records.into();
            value["skipped"] = skipped.into();
            json::write(&value)
        })
    }

    /// The payload for the next model call and its stats (a dict each),
    /// for the HTTP API's `prepare` arguments (a dict, without `session`).
    /// The payload dict and its list are new on every call; the list's
    /// entries are shared with later calls' payloads (read-only).
    fn prepare<'py>(
        &self,
        py: Python<'py>,
        arguments: &Bound<'py, PyAny>,
    ) -> PyResult<Objects<'py>> {
        let arguments = json::from_python(py, arguments, "the prepare arguments")?;
        let prepared = self.with(py, |shared, session| {
            let request = self.prepare_request(shared, arguments, "prepare")?;
            Ok(session.prepare(&request)?)
        })?;
        self.objects(py, &prepared)
    }

    /// `prepare`, answered as the HTTP API's reply body (JSON text), for a
    /// caller that forwards it as it is.
    fn prepare_json(&self, py: Python<'_>, arguments: &Bound<'_, PyAny>) -> PyResult<String> {
        let arguments = json::from_python(py, arguments, "the prepare arguments")?;
        self.with(py, |shared, session| {
            let request = self.prepare_request(shared, arguments, "prepare")?;
            prepared_reply(&session.prepare(&request)?)
        })
    }

    /// A prepare after the provider refused the last call as too long:
    /// compacts and trims until the context fits (as `prepare` answers).
    fn recover_overflow<'py>(
        &self,
        py: Python<'py>,
        arguments: &Bound<'py, PyAny>,
        status: u16,
        error_body: &str,
    ) -> PyResult<Objects<'py>> {
        let arguments = json::from_python(py, arguments, "the prepare arguments")?;
        let prepared = self.with(py, |shared, session| {
            let request = self.prepare_request(shared, arguments, "recover_overflow")?;
            let error = classify_provider_error(status, error_body);
            Ok(session.recover_from_overflow(&error, &request)?)
        })?;
        self.objects(py, &prepared)
    }

    /// Where the session stands against a model's budget, as `agentmem
    /// context` shows it: the stats of the call it would prepare now, read
    /// from its files and changing nothing, with `would_compact` (JSON).
    fn context(&self, py: Python<'_>, arguments: &Bound<'_, PyAny>) -> PyResult<String> {
        let arguments = json::from_python(py, arguments, "the prepare arguments")?;
        let id = self.id.clone();
        self.shared.run(py, |shared| {
            let request = self.prepare_request(shared, arguments, "context")?;
            let mut reader = shared.store.read_session(&shared.agent, &id)?;
            let stats = reader.prepare(&request)?.stats;
            let would_compact = stats
                .actions
                .iter()
                .any(|action| matches!(action, Action::CompactionWouldRun));
            let mut value = serde_json::to_value(&stats)
                .map_err(|error| BindingError::Input(error.to_string()))?;
            value["would_compact"] = Value::Bool(would_compact);
            value["compactions"] = reader.current_meta().compactions_finished.into();
            json::write(&value)
        })
    }

    /// Compacts now, whatever the context's size; the report (JSON).
    #[pyo3(signature = (focus=None))]
    fn compact(&self, py: Python<'_>, focus: Option<String>) -> PyResult<String> {
        self.with(py, |_, session| {
            let options = CompactOptions {
                focus,
                ..CompactOptions::default()
            };
            json::write(&session.compact(&options)?)
        })
    }

    /// Waits until the compaction drafted in the background, if any, is
    /// ready (the next `prepare` applies it); how many events it folds.
    fn wait_for_draft(&self, py: Python<'_>) -> PyResult<Option<usize>> {
        self.with(py, |_, session| Ok(session.wait_for_draft()))
    }

    /// The whole history, archive included, after `after_seq`, at most `limit` events (JSON).
    #[pyo3(signature = (after_seq=None, limit=None))]
    fn events(
        &self,
        py: Python<'_>,
        after_seq: Option<u64>,
        limit: Option<usize>,
    ) -> PyResult<String> {
        self.with(py, |_, session| {
            let history = session.full_history()?;
            let events: Vec<&Event> = history
                .iter()
                .filter(|e| after_seq.is_none_or(|after| e.seq > after))
                .take(limit.unwrap_or(usize::MAX))
                .collect();
            json::write(&events)
        })
    }

    /// Every tool call with its result and status (JSON).
    fn tool_interactions(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |_, session| json::write(&session.tool_interactions()))
    }

    /// The session's description (JSON).
    fn meta(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |_, session| json::write(&session.current_meta()))
    }

    /// The working memory with its schema (JSON).
    fn state(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |_, session| {
            let schema = session.working_memory_schema()?;
            let state = session.working_memory();
            json::write(&replies::State {
                version: state.version,
                hash: state.hash.clone(),
                document: state.document.clone(),
                schema: schema.map_or(Value::Null, |s| s.json().clone()),
            })
        })
    }

    /// Applies a merge patch (object) or JSON Patch (list), compare-and-swap
    /// on `expected_version`; the new state (JSON).
    #[pyo3(signature = (patch, expected_version=None))]
    fn update_state(
        &self,
        py: Python<'_>,
        patch: &str,
        expected_version: Option<u64>,
    ) -> PyResult<String> {
        self.with(py, |_, session| {
            let patch = StatePatch::from_json(json::read("the patch", patch)?)?;
            json::write(&replies::Versioned::from(
                session.update_working_memory(patch, expected_version)?,
            ))
        })
    }

    /// Sets (a JSON Schema) or removes (`null`) the working-memory schema
    /// of the session (`scope="session"`) or of the agent (`"agent"`).
    fn set_state_schema(&self, py: Python<'_>, schema: &str, scope: &str) -> PyResult<()> {
        self.with(py, |_, session| {
            let scope = match scope {
                "session" => SchemaScope::Session,
                "agent" => SchemaScope::Agent,
                other => {
                    return Err(BindingError::Input(format!(
                        "scope is \"session\" or \"agent\", not {other:?}"
                    )))
                }
            };
            let schema: Value = json::read("the schema", schema)?;
            Ok(session.set_working_memory_schema(scope, (!schema.is_null()).then_some(schema))?)
        })
    }

    /// Every working-memory version with the event that made it (JSON).
    fn state_history(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |_, session| {
            json::write(&session.working_memory_history()?)
        })
    }

    /// A page of lines of an evicted tool output (JSON).
    fn evicted(
        &self,
        py: Python<'_>,
        call_id: &str,
        offset: usize,
        limit: usize,
    ) -> PyResult<String> {
        self.with(py, |_, session| {
            json::write(&agentmem::files::evicted::read_evicted(
                &session.paths().evicted(),
                call_id,
                offset,
                limit,
            )?)
        })
    }

    /// Ends the session: its summary becomes an episodic memory (JSON, or
    /// null when there was nothing to summarize). The session stays open.
    fn end(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |_, session| json::write(&session.end()?))
    }

    /// Closes the session: pending metadata written, the writer lock released.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let open = Arc::clone(&self.open);
        let closed = Arc::clone(&self.closed);
        self.shared.run(py, move |_| {
            let session = open.lock().unwrap_or_else(PoisonError::into_inner).take();
            closed.store(true, Ordering::Release);
            match session {
                Some(session) => Ok(session.close()?),
                None => Ok(()),
            }
        })
    }
}

/// The agentmem events of the list `events`, read straight from its dicts
/// when every one reads as the event model with no field the model does not
/// know. Otherwise they are read from the list's JSON text
/// ([`read_events`]), so an unknown field's value is kept as it was written
/// (a number beyond 64 bits, an object's key order) and a bad event is
/// refused in the same words whichever path it takes.
fn events_of(py: Python<'_>, events: &Bound<'_, PyAny>) -> PyResult<Vec<Event>> {
    if let Some(Value::Array(items)) = json::plain(events) {
        let read: Result<Vec<Event>, _> = items.into_iter().map(serde_json::from_value).collect();
        if let Ok(read) = read {
            if read.iter().all(|event: &Event| event.extra.is_empty()) {
                return Ok(read);
            }
        }
    }
    read_events(&json::dumps(py, events)?).map_err(|error| error.into_pyerr(py))
}

/// The events of a JSON list, each read from its own text (so a number
/// beyond 64 bits in an unknown field stays as written); an event that does
/// not read fails the whole batch, naming its position.
pub(crate) fn read_events(text: &str) -> BindingResult<Vec<Event>> {
    let items: Vec<Box<RawValue>> = json::read("the events (a list of event dicts)", text)?;
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            serde_json::from_str::<Event>(item.get()).map_err(|error| {
                BindingError::Engine(agentmem::Error::InvalidEvent {
                    index,
                    reason: error.to_string(),
                })
            })
        })
        .collect()
}
