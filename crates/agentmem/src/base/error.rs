//! The engine's error type: every variant says what went wrong and what to do.

use std::path::PathBuf;

use serde::Serialize;

/// Result alias used throughout the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything the engine can refuse or fail at.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An id (agent, session, …) that cannot name a folder.
    #[error("invalid {kind} {id:?}: {reason}; use letters, digits, '-', '_' or '.' (not leading), at most 128 bytes")]
    InvalidId {
        /// What the id names.
        kind: IdKind,
        /// The id given.
        id: String,
        /// Why it cannot be used.
        reason: &'static str,
    },

    /// Another process holds the session for writing.
    #[error("session {session} is locked by pid {pid}: another agentmem process is writing to it; wait for it to finish, or read it without writing")]
    SessionLocked {
        /// The session's id.
        session: String,
        /// The process holding the lock.
        pid: String,
    },

    /// A storage backend (a database) failed or could not be reached.
    #[error("the {backend} storage failed to {action}: {message}; check that it is reachable and that the configured URL and credentials are right")]
    Storage {
        /// The backend's name.
        backend: &'static str,
        /// What was being done.
        action: String,
        /// What went wrong (never holding a password).
        message: String,
    },

    /// A feature that is not behind the storage seam yet, asked of a backend other than files.
    #[error("{feature} is not available on the {backend} storage backend yet; use the files backend (`[storage] backend = \"files\"`) for it")]
    NotOnBackend {
        /// What was asked for.
        feature: &'static str,
        /// The backend's name.
        backend: &'static str,
    },

    /// No session has that id.
    #[error("session {session} of agent {agent} does not exist; list the agent's sessions to see the ids there are")]
    SessionNotFound {
        /// The agent's id.
        agent: String,
        /// The session's id.
        session: String,
    },

    /// A session with that id exists already.
    #[error("session {session} of agent {agent} already exists; choose another id or resume it")]
    SessionExists {
        /// The agent's id.
        agent: String,
        /// The session's id.
        session: String,
    },

    /// The session was opened read-only and cannot take events.
    #[error("session {session} is open read-only; open it for writing to add events")]
    ReadOnly {
        /// The session's id.
        session: String,
    },

    /// An event of a batch is malformed; none of the batch was written.
    #[error("event {index} of the batch is invalid: {reason}; nothing in the batch was written")]
    InvalidEvent {
        /// The position of the event in the batch, from 0.
        index: usize,
        /// Why it cannot be used.
        reason: String,
    },

    /// No turn of the session has that id.
    #[error(
        "turn {turn} does not exist in session {session}; its turns run from turn_0001 to {last}"
    )]
    TurnNotFound {
        /// The session's id.
        session: String,
        /// The turn asked for.
        turn: String,
        /// The last turn there is.
        last: String,
    },

    /// A line of a file on disk cannot be read.
    #[error("{path}, line {line}: {message}")]
    BadLine {
        /// The file concerned.
        path: String,
        /// The line number, from 1.
        line: usize,
        /// What went wrong.
        message: String,
    },

    /// A configuration file is invalid.
    #[error("invalid configuration in {path}: {message}")]
    Config {
        /// The file concerned.
        path: String,
        /// What went wrong.
        message: String,
    },

    /// The summarizer failed; history is untouched.
    #[error("the summarizer failed ({failures} in a row): {message}; history is untouched, and after 3 failures compaction falls back to trimming")]
    Summarizer {
        /// What went wrong.
        message: String,
        /// Failures in a row so far.
        failures: u32,
    },

    /// A provider error given for overflow recovery is not a context overflow.
    #[error(
        "not a context-overflow error ({message}); only overflows are recovered by compaction"
    )]
    NotAnOverflow {
        /// What went wrong.
        message: String,
    },

    /// The context still overflows after every recovery attempt.
    #[error("the context still overflows after {attempts} recovery attempts: {message}; shorten the latest request or raise the model's context window")]
    OverflowUnrecoverable {
        /// Recovery attempts made.
        attempts: u32,
        /// What went wrong.
        message: String,
    },

    /// `MEMORY.md` changed since it was read.
    #[error("MEMORY.md changed since you read it (expected version {expected}, found {actual}); read it again and redo the change")]
    MemoryConflict {
        /// The version the change was made against.
        expected: String,
        /// The version there is now.
        actual: String,
    },

    /// An edit of `MEMORY.md` cannot be made.
    #[error("cannot edit MEMORY.md: {message}")]
    MemoryEdit {
        /// What went wrong.
        message: String,
    },

    /// A change to the facts cannot be made.
    #[error("cannot change the facts: {message}")]
    FactEdit {
        /// What went wrong.
        message: String,
    },

    /// The working memory changed since it was read.
    #[error("the working memory changed since you read it (expected version {expected}, found {actual}); nothing was changed: read the state again and redo the change against version {actual}")]
    WorkingMemoryConflict {
        /// The version the change was made against.
        expected: u64,
        /// The version there is now.
        actual: u64,
    },

    /// A patch does not apply to the working memory.
    #[error("cannot apply the patch to the working memory: {message}; nothing was changed: check the patch against the current state")]
    WorkingMemoryPatch {
        /// What went wrong.
        message: String,
    },

    /// An update would leave the working memory outside its schema.
    #[error("the update leaves the working memory invalid at {}: {message}{}; nothing was changed: fix the patch so the state keeps to the {} schema", shown_path(path), more_errors(*others), scope.as_str())]
    WorkingMemoryInvalid {
        /// The JSON Pointer of the failing value (`""` is the whole document).
        path: String,
        /// What went wrong.
        message: String,
        /// Further violations beyond the first.
        others: usize,
        /// Which schema: the built-in or the session's own.
        scope: SchemaScope,
    },

    /// A working-memory schema cannot be used.
    #[error("not a usable {} working-memory schema: {message}; give a JSON Schema (draft 2020-12 or 7) whose references stay inside it", scope.as_str())]
    WorkingMemorySchema {
        /// Which schema: the built-in or the session's own.
        scope: SchemaScope,
        /// What went wrong.
        message: String,
    },

    /// A file operation failed.
    #[error("{action} {}: {source}", path.display())]
    Io {
        /// What was being done (`read`, `write`, …).
        action: &'static str,
        /// The file concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// A search or recall query cannot be run.
    #[error("{message}")]
    BadQuery {
        /// What went wrong.
        message: String,
    },

    /// An operation's arguments do not fit its schema.
    #[error(
        "invalid arguments for {operation}: {message}; its schema lists the arguments it takes"
    )]
    InvalidArguments {
        /// The operation called.
        operation: String,
        /// What went wrong.
        message: String,
    },

    /// The embedder failed or answered wrongly.
    #[error("embedder {model}: {message}; recall works without an embedder, on BM25 alone")]
    Embedder {
        /// The model that was used.
        model: String,
        /// What went wrong.
        message: String,
    },

    /// The documents could not all be embedded: the background embedder
    /// failed, and retries.
    #[error("embedding the history with {model} is behind: {message}; until it catches up, recall ranks the documents without a vector by their words (it is retried; check the embedder)")]
    EmbeddingBehind {
        /// The model that was used.
        model: String,
        /// What went wrong.
        message: String,
    },

    /// The reranker failed or answered wrongly.
    #[error("reranker {model}: {message}; recall works without a reranker, in the hybrid's order")]
    Reranker {
        /// The model that was used.
        model: String,
        /// What went wrong.
        message: String,
    },

    /// The search index cannot be used.
    #[error("search index {}: {message}; delete the file to rebuild it from the logs", path.display())]
    Index {
        /// The file concerned.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },

    /// No evicted output has that tool call id in this session.
    #[error("no evicted output for tool call {call_id:?} in this session: it was never evicted, or it belongs to another session; the session's tool calls carry the ids there are")]
    EvictedNotFound {
        /// The tool call id asked for.
        call_id: String,
    },
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
    /// An agent id.
    Agent,
    /// A session id.
    Session,
    /// A tool call id.
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
