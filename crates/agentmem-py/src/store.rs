//! `NativeStore`: one data directory and one agent, shared by every thread
//! of the Python program. Every call releases the interpreter while the
//! engine works, so other Python threads (and an asyncio loop) run
//! meanwhile.

use std::sync::Arc;

use agentmem::files::records::{NewFact, Provenance, Trust};
use agentmem::{AgentId, Config, Durability, Encoding, SessionId, Store};
use agentmem_server::requests;
use agentmem_server::service::{recall_request, search_filter};
use pyo3::prelude::*;
use serde_json::Value;

use crate::callables::{Callables, PyEmbedder, PyReranker, PySummarizer};
use crate::errors::{BindingError, BindingResult};
use crate::json;
use crate::session::{Access, NativeSession};

/// What `prepare` and `context` do with a model the registry does not know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnknownModels {
    /// Assume 200,000 tokens of window, as the engine does.
    Guess,
    /// Raise `UnknownModel`.
    Refuse,
}

/// The store and what every session opened from it gets.
#[derive(Debug)]
pub(crate) struct StoreShared {
    pub(crate) store: Store,
    pub(crate) agent: AgentId,
    pub(crate) callables: Callables,
    pub(crate) unknown_models: UnknownModels,
}

impl StoreShared {
    /// Checks `model` against the registry, as the store was told to.
    pub(crate) fn check_model(&self, model: &str) -> BindingResult<()> {
        match self.unknown_models {
            UnknownModels::Guess => Ok(()),
            UnknownModels::Refuse if self.store.registry().lookup(model).is_known() => Ok(()),
            UnknownModels::Refuse => Err(BindingError::UnknownModel {
                model: model.to_owned(),
            }),
        }
    }

    /// Runs `work` on this store with the interpreter released, and turns
    /// its error into the Python exception (a failing callable's own
    /// exception as its cause).
    pub(crate) fn run<T: Send>(
        self: &Arc<Self>,
        py: Python<'_>,
        work: impl FnOnce(&StoreShared) -> BindingResult<T> + Send,
    ) -> PyResult<T> {
        let shared = Arc::clone(self);
        py.detach(move || work(&shared))
            .map_err(|error| self.python_error(py, error))
    }

    /// The Python exception for `error`.
    pub(crate) fn python_error(&self, py: Python<'_>, error: BindingError) -> PyErr {
        let cause = error.seam().and_then(|seam| self.callables.raised(seam));
        let raised = error.into_pyerr(py);
        if let Some(cause) = cause {
            raised.set_cause(py, Some(cause));
        }
        raised
    }
}

impl Drop for StoreShared {
    /// The background embedder may be calling a Python embedder, which
    /// needs the interpreter this thread may hold: it is stopped with the
    /// interpreter released.
    fn drop(&mut self) {
        if self.callables.embedder.is_some() {
            Python::attach(|py| py.detach(|| self.store.stop_background_embedding()));
        }
    }
}

/// The engine's store for one agent (see the Python `agentmem.Store`).
#[pyclass(frozen, module = "agentmem._native")]
pub(crate) struct NativeStore {
    shared: Arc<StoreShared>,
}

fn session_id(id: &str) -> BindingResult<SessionId> {
    Ok(SessionId::new(id)?)
}

#[pymethods]
impl NativeStore {
    #[new]
    #[pyo3(signature = (path, agent, durability, unknown_models, summarizer, summarizer_name, summarizer_window_tokens, embedder, embedder_model, reranker, reranker_model))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: std::path::PathBuf,
        agent: &str,
        durability: Option<&str>,
        unknown_models: &str,
        summarizer: Option<Py<PyAny>>,
        summarizer_name: String,
        summarizer_window_tokens: u64,
        embedder: Option<Py<PyAny>>,
        embedder_model: String,
        reranker: Option<Py<PyAny>>,
        reranker_model: String,
    ) -> PyResult<NativeStore> {
        let opened = || -> BindingResult<StoreShared> {
            let agent = AgentId::new(agent)?;
            let unknown_models = match unknown_models {
                "guess" => UnknownModels::Guess,
                "refuse" => UnknownModels::Refuse,
                other => {
                    return Err(BindingError::Input(format!(
                        "unknown_models is \"guess\" or \"refuse\", not {other:?}"
                    )))
                }
            };
            let mut config = Config::load(&path)?;
            if let Some(durability) = durability {
                config.storage.durability = durability
                    .parse::<Durability>()
                    .map_err(BindingError::Input)?;
            }
            let callables = Callables {
                summarizer: summarizer.map(|function| {
                    Arc::new(PySummarizer::new(
                        function,
                        summarizer_name,
                        summarizer_window_tokens,
                    ))
                }),
                embedder: embedder
                    .map(|function| Arc::new(PyEmbedder::new(function, embedder_model))),
                reranker: reranker
                    .map(|function| Arc::new(PyReranker::new(function, reranker_model))),
            };
            let mut store = Store::with_config(&path, config);
            if let Some(embedder) = &callables.embedder {
                store = store.with_embedder(embedder.clone());
            }
            if let Some(reranker) = &callables.reranker {
                store = store.with_reranker(reranker.clone());
            }
            Ok(StoreShared {
                store,
                agent,
                callables,
                unknown_models,
            })
        };
        match py.detach(opened) {
            Ok(shared) => Ok(NativeStore {
                shared: Arc::new(shared),
            }),
            Err(error) => Err(error.into_pyerr(py)),
        }
    }

    /// The data directory.
    #[getter]
    fn path(&self) -> std::path::PathBuf {
        self.shared.store.root().to_path_buf()
    }

    /// The agent whose sessions and memory this store works on.
    #[getter]
    fn agent(&self) -> String {
        self.shared.agent.to_string()
    }

    /// When appends reach the disk: `always`, `batch` or `os`.
    #[getter]
    fn durability(&self) -> String {
        self.shared.store.durability().to_string()
    }

    /// A new session, open for writing.
    #[pyo3(signature = (id=None))]
    fn create_session(&self, py: Python<'_>, id: Option<String>) -> PyResult<NativeSession> {
        let session = self.shared.run(py, |shared| {
            let id = id.as_deref().map(session_id).transpose()?;
            Ok(shared.store.create_session(&shared.agent, id)?)
        })?;
        Ok(NativeSession::new(&self.shared, session, Access::Write))
    }

    /// An existing session, open for writing (its lock taken).
    fn resume_session(&self, py: Python<'_>, id: &str) -> PyResult<NativeSession> {
        let session = self.shared.run(py, |shared| {
            Ok(shared.store.open_session(&shared.agent, &session_id(id)?)?)
        })?;
        Ok(NativeSession::new(&self.shared, session, Access::Write))
    }

    /// Session `id` open for writing, created when it does not exist.
    fn open_or_create(&self, py: Python<'_>, id: &str) -> PyResult<NativeSession> {
        let session = self.shared.run(py, |shared| {
            Ok(shared
                .store
                .open_or_create(&shared.agent, &session_id(id)?)?)
        })?;
        Ok(NativeSession::new(&self.shared, session, Access::Write))
    }

    /// An existing session, open for reading only: no lock, never blocks a writer.
    fn read_session(&self, py: Python<'_>, id: &str) -> PyResult<NativeSession> {
        let session = self.shared.run(py, |shared| {
            Ok(shared.store.read_session(&shared.agent, &session_id(id)?)?)
        })?;
        Ok(NativeSession::new(&self.shared, session, Access::Read))
    }

    /// Every session's description, most recently updated first (JSON).
    fn list_sessions(&self, py: Python<'_>) -> PyResult<String> {
        self.shared.run(py, |shared| {
            json::write(&shared.store.list_sessions(&shared.agent)?)
        })
    }

    /// One session's description (JSON).
    fn session_meta(&self, py: Python<'_>, id: &str) -> PyResult<String> {
        self.shared.run(py, |shared| {
            json::write(&shared.store.session_meta(&shared.agent, &session_id(id)?)?)
        })
    }

    /// Deletes a session and its files; refused while a writer holds it.
    fn delete_session(&self, py: Python<'_>, id: &str) -> PyResult<()> {
        self.shared.run(py, |shared| {
            Ok(shared
                .store
                .delete_session(&shared.agent, &session_id(id)?)?)
        })
    }

    /// Copies a session up to and including `at_turn` into a new one; the
    /// new session's description (JSON).
    #[pyo3(signature = (id, at_turn=None, new_id=None))]
    fn fork_session(
        &self,
        py: Python<'_>,
        id: &str,
        at_turn: Option<String>,
        new_id: Option<String>,
    ) -> PyResult<String> {
        self.shared.run(py, |shared| {
            let new_id = new_id.as_deref().map(session_id).transpose()?;
            json::write(&shared.store.fork_session(
                &shared.agent,
                &session_id(id)?,
                at_turn.as_deref(),
                new_id,
            )?)
        })
    }

    /// Searches the agent's whole history; `arguments` is the HTTP API's
    /// `search` body (JSON); the hits (JSON).
    fn search(&self, py: Python<'_>, arguments: &str) -> PyResult<String> {
        self.shared.run(py, |shared| {
            let arguments: Value = json::read("the search arguments", arguments)?;
            let request: requests::Search = agentmem::base::arguments::parse("search", &arguments)?;
            let filter = search_filter(&request)?;
            json::write(
                &shared
                    .store
                    .search(&shared.agent, &request.query, &filter)?,
            )
        })
    }

    /// Waits until every document of the agent's history has a vector of
    /// the store's embedder (at once without one).
    fn embed_pending(&self, py: Python<'_>) -> PyResult<()> {
        self.shared.run(py, |shared| {
            Ok(shared.store.embed_pending(&shared.agent)?)
        })
    }

    /// What long-term memory recall finds for a question; `arguments` is
    /// the HTTP API's `recall` body (JSON); what was recalled (JSON).
    fn recall(&self, py: Python<'_>, arguments: &str) -> PyResult<String> {
        self.shared.run(py, |shared| {
            let arguments: Value = json::read("the recall arguments", arguments)?;
            let request: requests::Recall = agentmem::base::arguments::parse("recall", &arguments)?;
            json::write(&shared.store.recall(
                &shared.agent,
                &recall_request(request),
                Encoding::default().tokenizer(),
            )?)
        })
    }

    /// The agent's MEMORY.md: `{"content", "hash"}` (JSON).
    fn read_memory(&self, py: Python<'_>) -> PyResult<String> {
        self.shared.run(py, |shared| {
            json::write(&shared.store.notebook(&shared.agent).read()?)
        })
    }

    /// Appends to MEMORY.md, compare-and-swap on `expected_hash`; the new version (JSON).
    #[pyo3(signature = (content, expected_hash=None))]
    fn append_memory(
        &self,
        py: Python<'_>,
        content: &str,
        expected_hash: Option<String>,
    ) -> PyResult<String> {
        self.shared.run(py, |shared| {
            json::write(
                &shared
                    .store
                    .notebook(&shared.agent)
                    .append(content, expected_hash.as_deref())?,
            )
        })
    }

    /// Replaces `old_text` with `new_text` in MEMORY.md, compare-and-swap on
    /// `expected_hash`; the new version (JSON).
    #[pyo3(signature = (old_text, new_text, expected_hash=None))]
    fn replace_memory(
        &self,
        py: Python<'_>,
        old_text: &str,
        new_text: &str,
        expected_hash: Option<String>,
    ) -> PyResult<String> {
        self.shared.run(py, |shared| {
            json::write(&shared.store.notebook(&shared.agent).update(
                old_text,
                new_text,
                expected_hash.as_deref(),
            )?)
        })
    }

    /// The agent's current facts, or with `all`, superseded and retired ones too (JSON).
    #[pyo3(signature = (all=false))]
    fn facts(&self, py: Python<'_>, all: bool) -> PyResult<String> {
        self.shared.run(py, |shared| {
            let facts = shared.store.facts(&shared.agent);
            json::write(&match all {
                true => facts.all()?,
                false => facts.current()?,
            })
        })
    }

    /// Adds a fact the user stated; what was added (JSON).
    #[pyo3(signature = (fact, tags, session=None))]
    fn add_fact(
        &self,
        py: Python<'_>,
        fact: String,
        tags: Vec<String>,
        session: Option<String>,
    ) -> PyResult<String> {
        self.shared.run(py, |shared| {
            json::write(&shared.store.facts(&shared.agent).add(NewFact {
                fact,
                tags,
                confidence: 0.9,
                salience: 0.7,
                provenance: api_provenance(session),
                trust: Trust::User,
            })?)
        })
    }

    /// Replaces fact `id` with `text`; the new fact's id.
    fn supersede_fact(&self, py: Python<'_>, id: &str, text: &str) -> PyResult<String> {
        self.shared.run(py, |shared| {
            Ok(shared
                .store
                .facts(&shared.agent)
                .supersede(id, text, api_provenance(None))?)
        })
    }

    /// Retires fact `id`.
    fn delete_fact(&self, py: Python<'_>, id: &str) -> PyResult<()> {
        self.shared.run(py, |shared| {
            Ok(shared.store.facts(&shared.agent).delete(id)?)
        })
    }

    /// What the model registry knows of `name` (JSON): window, max
    /// output, prices, source; `UnknownModel` when it knows nothing.
    fn model(&self, py: Python<'_>, name: &str) -> PyResult<String> {
        self.shared.run(py, |shared| {
            let info = shared.store.registry().lookup(name);
            if !info.is_known() {
                return Err(BindingError::UnknownModel {
                    model: name.to_owned(),
                });
            }
            json::write(&info)
        })
    }
}

/// Facts added through this API are the user's.
fn api_provenance(session: Option<String>) -> Provenance {
    Provenance {
        session_id: session,
        extractor: "python".into(),
        ..Provenance::default()
    }
}
