//! The binding's error, and the Python exception each kind of it becomes.
//!
//! Every engine error variant has its own exception class (or shares one
//! with the variants a caller handles alike), under one base,
//! `agentmem.AgentmemError`; the message is the engine's own wording,
//! which says what to do.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyModule;
use pyo3::BoundObject;

use agentmem::Error as EngineError;

/// What a call into the binding can fail with.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BindingError {
    /// The engine refused or failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A request the service's vocabulary cannot read (a bad target, tool
    /// schema or cache setting).
    #[error("{0}")]
    Request(String),
    /// The model is not in the registry and the caller asked for known models only.
    #[error("model {model:?} is not in the model registry; check its spelling (agentmem.Store.model lists what a name resolves to), or add it under [[models]] in the data directory's config.toml")]
    UnknownModel {
        /// The name asked for.
        model: String,
    },
    /// The session was closed (or ended) by an earlier call.
    #[error("session {session} is closed; resume it from the store to use it again")]
    Closed {
        /// The session's id.
        session: String,
    },
    /// A value passed from Python is not what the call takes.
    #[error("{0}")]
    Input(String),
    /// Messages, a response or a transcript file that cannot be read in
    /// the shape or format named.
    #[error(transparent)]
    Import(#[from] agentmem_import::ImportError),
}

pub(crate) type BindingResult<T> = Result<T, BindingError>;

create_exception!(
    agentmem,
    AgentmemError,
    PyException,
    "Base class of every error agentmem raises; the message says what went wrong and what to do."
);
create_exception!(
    agentmem,
    InvalidInput,
    AgentmemError,
    "The call's arguments are not usable: fix them and call again. Nothing was written."
);
create_exception!(
    agentmem,
    InvalidId,
    InvalidInput,
    "An agent, session or tool call id that cannot name a folder."
);
create_exception!(
    agentmem,
    InvalidEvent,
    InvalidInput,
    "An event of a batch is malformed; none of the batch was written."
);
create_exception!(
    agentmem,
    InvalidPatch,
    InvalidInput,
    "A working-memory patch does not apply to the current state; nothing was changed."
);
create_exception!(
    agentmem,
    SchemaViolation,
    InvalidInput,
    "A working-memory update would leave the state outside its schema; nothing was changed."
);
create_exception!(
    agentmem,
    InvalidSchema,
    InvalidInput,
    "A working-memory schema that cannot be used."
);
create_exception!(
    agentmem,
    BadQuery,
    InvalidInput,
    "A search or recall query that cannot be run."
);
create_exception!(
    agentmem,
    EditRefused,
    InvalidInput,
    "An edit of MEMORY.md or of the facts that cannot be made."
);
create_exception!(
    agentmem,
    NotAnOverflow,
    InvalidInput,
    "A provider error given for overflow recovery is not a context overflow."
);
create_exception!(
    agentmem,
    UnknownModel,
    InvalidInput,
    "A model name the registry does not know, where a known model was required."
);
create_exception!(
    agentmem,
    BadShape,
    InvalidInput,
    "Messages, a response or a transcript that are not of the provider shape or file format named; nothing was written."
);
create_exception!(
    agentmem,
    NotFound,
    AgentmemError,
    "What the call names does not exist."
);
create_exception!(
    agentmem,
    SessionNotFound,
    NotFound,
    "No session of the agent has that id."
);
create_exception!(
    agentmem,
    TurnNotFound,
    NotFound,
    "No turn of the session has that id."
);
create_exception!(
    agentmem,
    EvictedNotFound,
    NotFound,
    "No evicted tool output has that call id in the session."
);
create_exception!(
    agentmem,
    Conflict,
    AgentmemError,
    "What the call works on changed or exists already: read it again and redo the change."
);
create_exception!(
    agentmem,
    SessionExists,
    Conflict,
    "A session with that id exists already: choose another id or resume it."
);
create_exception!(
    agentmem,
    StaleVersion,
    Conflict,
    "The working memory changed since the version the update expected; `expected` and `actual` hold both versions. Nothing was changed."
);
create_exception!(
    agentmem,
    MemoryConflict,
    Conflict,
    "MEMORY.md changed since the hash the edit expected; `expected` and `actual` hold both hashes. Nothing was changed."
);
create_exception!(
    agentmem,
    SessionLocked,
    AgentmemError,
    "Another process (or another Session object) holds the session's writer lock; `session` and `pid` say which. Retry later, or read it without writing."
);
create_exception!(
    agentmem,
    ReadOnlySession,
    AgentmemError,
    "The session was opened read-only, or closed, and cannot be written to."
);
create_exception!(
    agentmem,
    ContextOverflow,
    AgentmemError,
    "The context still overflows the model's window after every recovery attempt."
);
create_exception!(
    agentmem,
    ConfigError,
    AgentmemError,
    "A configuration file (config.toml) is invalid."
);
create_exception!(
    agentmem,
    CorruptData,
    AgentmemError,
    "A file on disk (a log line, the search index) cannot be read."
);
create_exception!(
    agentmem,
    StorageError,
    AgentmemError,
    "A file operation failed (permissions, a full disk)."
);
create_exception!(
    agentmem,
    CallbackError,
    AgentmemError,
    "A summarizer, embedder or reranker failed; nothing was written. A Python callable's own exception is the `__cause__`."
);
create_exception!(
    agentmem,
    SummarizerError,
    CallbackError,
    "The summarizer failed; the history is untouched."
);
create_exception!(
    agentmem,
    EmbedderError,
    CallbackError,
    "The embedder failed or answered wrongly."
);
create_exception!(
    agentmem,
    RerankerError,
    CallbackError,
    "The reranker failed or answered wrongly."
);

/// Adds every exception class to the module.
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    macro_rules! add {
        ($($name:ident),* $(,)?) => {
            $(module.add(stringify!($name), py.get_type::<$name>())?;)*
        };
    }
    add!(
        AgentmemError,
        InvalidInput,
        InvalidId,
        InvalidEvent,
        InvalidPatch,
        SchemaViolation,
        InvalidSchema,
        BadQuery,
        EditRefused,
        NotAnOverflow,
        UnknownModel,
        BadShape,
        NotFound,
        SessionNotFound,
        TurnNotFound,
        EvictedNotFound,
        Conflict,
        SessionExists,
        StaleVersion,
        MemoryConflict,
        SessionLocked,
        ReadOnlySession,
        ContextOverflow,
        ConfigError,
        CorruptData,
        StorageError,
        CallbackError,
        SummarizerError,
        EmbedderError,
        RerankerError,
    );
    Ok(())
}

/// Which seam failed, when an error says a plugged-in component did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seam {
    Summarizer,
    Embedder,
    Reranker,
}

impl BindingError {
    /// The seam whose failure this is, if any.
    pub(crate) fn seam(&self) -> Option<Seam> {
        match self {
            BindingError::Engine(EngineError::Summarizer { .. }) => Some(Seam::Summarizer),
            BindingError::Engine(EngineError::Embedder { .. }) => Some(Seam::Embedder),
            BindingError::Engine(EngineError::Reranker { .. }) => Some(Seam::Reranker),
            _ => None,
        }
    }

    /// The Python exception for this error, with its fields as attributes
    /// where a caller acts on them.
    pub(crate) fn into_pyerr(self, py: Python<'_>) -> PyErr {
        let message = self.to_string();
        let error = match &self {
            BindingError::Engine(engine) => engine_exception(engine, message),
            BindingError::Request(_) | BindingError::Input(_) => InvalidInput::new_err(message),
            BindingError::UnknownModel { .. } => UnknownModel::new_err(message),
            BindingError::Closed { .. } => ReadOnlySession::new_err(message),
            BindingError::Import(error) => import_exception(error, message),
        };
        let attributes: Vec<(&str, Py<PyAny>)> = match &self {
            BindingError::Engine(EngineError::WorkingMemoryConflict { expected, actual }) => {
                vec![
                    ("expected", into_object(py, *expected)),
                    ("actual", into_object(py, *actual)),
                ]
            }
            BindingError::Engine(EngineError::MemoryConflict { expected, actual }) => vec![
                ("expected", into_object(py, expected.as_str())),
                ("actual", into_object(py, actual.as_str())),
            ],
            BindingError::Engine(EngineError::SessionLocked { session, pid }) => vec![
                ("session", into_object(py, session.as_str())),
                ("pid", into_object(py, pid.as_str())),
            ],
            BindingError::UnknownModel { model } => {
                vec![("model", into_object(py, model.as_str()))]
            }
            _ => Vec::new(),
        };
        let value = error.value(py);
        for (name, attribute) in attributes {
            // Setting an attribute on a fresh exception instance cannot fail.
            let _ = value.setattr(name, attribute);
        }
        error
    }
}

fn into_object<'py, T>(py: Python<'py>, value: T) -> Py<PyAny>
where
    T: IntoPyObject<'py>,
{
    value
        .into_pyobject(py)
        .map(|bound| bound.into_any().unbind())
        .unwrap_or_else(|_| py.None())
}

/// The exception class of each import error.
fn import_exception(error: &agentmem_import::ImportError, message: String) -> PyErr {
    use agentmem_import::ImportError;
    match error {
        ImportError::BadInput { .. }
        | ImportError::BadShape { .. }
        | ImportError::UnknownFormat { .. } => BadShape::new_err(message),
        ImportError::Io { .. } => StorageError::new_err(message),
    }
}

/// The exception class of each engine error: every variant decides here,
/// so a new one must too.
fn engine_exception(error: &EngineError, message: String) -> PyErr {
    match error {
        EngineError::InvalidId { .. } => InvalidId::new_err(message),
        EngineError::InvalidEvent { .. } => InvalidEvent::new_err(message),
        EngineError::InvalidArguments { .. } => InvalidInput::new_err(message),
        EngineError::WorkingMemoryPatch { .. } => InvalidPatch::new_err(message),
        EngineError::WorkingMemoryInvalid { .. } => SchemaViolation::new_err(message),
        EngineError::WorkingMemorySchema { .. } => InvalidSchema::new_err(message),
        EngineError::BadQuery { .. } => BadQuery::new_err(message),
        EngineError::MemoryEdit { .. } | EngineError::FactEdit { .. } => {
            EditRefused::new_err(message)
        }
        EngineError::NotAnOverflow { .. } => NotAnOverflow::new_err(message),
        EngineError::SessionNotFound { .. } => SessionNotFound::new_err(message),
        EngineError::TurnNotFound { .. } => TurnNotFound::new_err(message),
        EngineError::EvictedNotFound { .. } => EvictedNotFound::new_err(message),
        EngineError::SessionExists { .. } => SessionExists::new_err(message),
        EngineError::WorkingMemoryConflict { .. } => StaleVersion::new_err(message),
        EngineError::MemoryConflict { .. } => MemoryConflict::new_err(message),
        EngineError::SessionLocked { .. } => SessionLocked::new_err(message),
        EngineError::ReadOnly { .. } => ReadOnlySession::new_err(message),
        EngineError::OverflowUnrecoverable { .. } => ContextOverflow::new_err(message),
        EngineError::Config { .. } | EngineError::NotOnBackend { .. } => {
            ConfigError::new_err(message)
        }
        EngineError::BadLine { .. } | EngineError::Index { .. } => CorruptData::new_err(message),
        EngineError::Io { .. } | EngineError::Storage { .. } => StorageError::new_err(message),
        EngineError::Summarizer { .. } => SummarizerError::new_err(message),
        EngineError::Embedder { .. } | EngineError::EmbeddingBehind { .. } => {
            EmbedderError::new_err(message)
        }
        EngineError::Reranker { .. } => RerankerError::new_err(message),
    }
}
