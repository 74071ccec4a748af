//! The engine's error type: every variant says what went wrong and what to do.

use std::path::PathBuf;

use serde::Serialize;

/// Result alias used throughout the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything the engine can refuse or fail at.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid {kind} {id:?}: {reason}; use letters, digits, '-', '_' or '.' (not leading), at most 128 bytes")]
    InvalidId {
        kind: IdKind,
        id: String,
        reason: &'static str,
    },

    #[error("session {session} is locked by pid {pid}: another agentmem process is writing to it; wait for it to finish, or read it without writing")]
    SessionLocked { session: String, pid: String },

    #[error("session {session} of agent {agent} does not exist; list the agent's sessions to see the ids there are")]
    SessionNotFound { agent: String, session: String },

    #[error("session {session} of agent {agent} already exists; choose another id or resume it")]
    SessionExists { agent: String, session: String },

    #[error("session {session} is open read-only; open it for writing to add events")]
    ReadOnly { session: String },

    #[error("event {index} of the batch is invalid: {reason}; nothing in the batch was written")]
    InvalidEvent { index: usize, reason: String },

    #[error(
        "turn {turn} does not exist in session {session}; its turns run from turn_0001 to {last}"
    )]
    TurnNotFound {
        session: String,
        turn: String,
        last: String,
    },

    #[error("{path}, line {line}: {message}")]
    BadLine {
        path: String,
        line: usize,
        message: String,
    },

    #[error("invalid configuration in {path}: {message}")]
    Config { path: String, message: String },

    #[error("the summarizer failed ({failures} in a row): {message}; history is untouched, and after 3 failures compaction falls back to trimming")]
    Summarizer { message: String, failures: u32 },

    #[error(
        "not a context-overflow error ({message}); only overflows are recovered by compaction"
    )]
    NotAnOverflow { message: String },

    #[error("the context still overflows after {attempts} recovery attempts: {message}; shorten the latest request or raise the model's context window")]
    OverflowUnrecoverable { attempts: u32, message: String },

    #[error("MEMORY.md changed since you read it (expected version {expected}, found {actual}); read it again and redo the change")]
    MemoryConflict { expected: String, actual: String },

    #[error("cannot edit MEMORY.md: {message}")]
    MemoryEdit { message: String },

    #[error("cannot change the facts: {message}")]
    FactEdit { message: String },

    #[error("the working memory changed since you read it (expected version {expected}, found {actual}); nothing was changed: read the state again and redo the change against version {actual}")]
    WorkingMemoryConflict { expected: u64, actual: u64 },

    #[error("cannot apply the patch to the working memory: {message}; nothing was changed: check the patch against the current state")]
    WorkingMemoryPatch { message: String },

    #[error("the update leaves the working memory invalid at {}: {message}{}; nothing was changed: fix the patch so the state keeps to the {} schema", shown_path(path), more_errors(*others), scope.as_str())]
    WorkingMemoryInvalid {
        /// The JSON Pointer of the failing value (`""` is the whole document).
        path: String,
        message: String,
        /// Further violations beyond the first.
        others: usize,
        scope: SchemaScope,
    },

    #[error("not a usable {} working-memory schema: {message}; give a JSON Schema (draft 2020-12 or 7) whose references stay inside it", scope.as_str())]
    WorkingMemorySchema { scope: SchemaScope, message: String },

    #[error("{action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("{message}")]
    BadQuery { message: String },

    #[error(
        "invalid arguments for {operation}: {message}; its schema lists the arguments it takes"
    )]
    InvalidArguments { operation: String, message: String },

    #[error("embedder {model}: {message}; recall works without an embedder, on BM25 alone")]
    Embedder { model: String, message: String },

    #[error("reranker {model}: {message}; recall works without a reranker, in the hybrid's order")]
    Reranker { model: String, message: String },

    #[error("search index {}: {message}; delete the file to rebuild it from the logs", path.display())]
    Index { path: PathBuf, message: String },

    #[error("no evicted output for tool call {call_id:?} in this session: it was never evicted, or it belongs to another session; the session's tool calls carry the ids there are")]
    EvictedNotFound { call_id: String },
}

/// A JSON Pointer as people read it: the empty pointer is the whole document.
fn shown_path(path: &str) -> String {
    if path.is_empty() {
        "the top level".to_owned()
    } else {
        path.to_owned()
    }
}

fn more_errors(others: usize) -> String {
    match others {
        0 => String::new(),
        1 => " (and 1 more violation)".to_owned(),
        n => format!(" (and {n} more violations)"),
    }
}

/// Attaches the action and the path to an I/O error, so the message says
/// which file failed and how.
pub(crate) trait IoContext<T> {
    fn io(self, action: &'static str, path: &std::path::Path) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn io(self, action: &'static str, path: &std::path::Path) -> Result<T> {
        self.map_err(|source| Error::Io {
            action,
            path: path.to_path_buf(),
            source,
        })
    }
}

/// What kind of id was being validated; named in the error message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdKind {
    Agent,
    Session,
    ToolCall,
}

impl std::fmt::Display for IdKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            IdKind::Agent => "agent id",
            IdKind::Session => "session id",
            IdKind::ToolCall => "tool call id",
        })
    }
}

/// Where the schema applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SchemaScope {
    /// One session: it overrides the agent's schema there.
    Session,
    /// Every session of the agent that has no schema of its own.
    Agent,
}

impl SchemaScope {
    /// The name used in messages and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            SchemaScope::Session => "session",
            SchemaScope::Agent => "agent",
        }
    }
}
