"""Typed stubs of the extension module ``agentmem._native``.

Its classes take and return JSON text in the HTTP API's shapes; use the
wrappers ``agentmem.Store`` and ``agentmem.Session``, which speak dicts.
"""

from typing import Any, Callable

__version__: str

def run_cli(args: list[str]) -> int:
    """Runs the ``agentmem`` command line in this process; its exit status."""

class NativeStore:
    def __init__(
        self,
        path: str,
        agent: str,
        durability: str | None,
        unknown_models: str,
        summarizer: Callable[[dict], str | dict] | None,
        summarizer_name: str,
        summarizer_window_tokens: int,
        embedder: Callable[[list[str]], list[list[float]]] | None,
        embedder_model: str,
        reranker: Callable[[str, list[str]], list[float]] | None,
        reranker_model: str,
    ) -> None: ...
    @property
    def path(self) -> str: ...
    @property
    def agent(self) -> str: ...
    @property
    def durability(self) -> str: ...
    def create_session(self, id: str | None = None) -> NativeSession: ...
    def resume_session(self, id: str) -> NativeSession: ...
    def open_or_create(self, id: str) -> NativeSession: ...
    def read_session(self, id: str) -> NativeSession: ...
    def list_sessions(self) -> str: ...
    def session_meta(self, id: str) -> str: ...
    def delete_session(self, id: str) -> None: ...
    def fork_session(self, id: str, at_turn: str | None = None, new_id: str | None = None) -> str: ...
    def search(self, arguments: str) -> str: ...
    def recall(self, arguments: str) -> str: ...
    def embed_pending(self) -> None: ...
    def read_memory(self) -> str: ...
    def append_memory(self, content: str, expected_hash: str | None = None) -> str: ...
    def replace_memory(self, old_text: str, new_text: str, expected_hash: str | None = None) -> str: ...
    def facts(self, all: bool = False) -> str: ...
    def add_fact(self, fact: str, tags: list[str], session: str | None = None) -> str: ...
    def supersede_fact(self, id: str, text: str) -> str: ...
    def delete_fact(self, id: str) -> None: ...
    def model(self, name: str) -> str: ...

class NativeSession:
    @property
    def id(self) -> str: ...
    @property
    def writable(self) -> bool: ...
    @property
    def closed(self) -> bool: ...
    def ingest(self, events: list[Any]) -> dict[str, Any]: ...
    def ingest_native(self, shape: str, handover: str, value: Any) -> dict[str, Any]: ...
    def import_file(self, path: str, format: str | None = None) -> str: ...
    def prepare(self, arguments: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]: ...
    def prepare_json(self, arguments: dict[str, Any]) -> str: ...
    def recover_overflow(self, arguments: dict[str, Any], status: int, error_body: str) -> tuple[dict[str, Any], dict[str, Any]]: ...
    def context(self, arguments: dict[str, Any]) -> str: ...
    def compact(self, focus: str | None = None) -> str: ...
    def wait_for_draft(self) -> int | None: ...
    def events(self, after_seq: int | None = None, limit: int | None = None) -> str: ...
    def tool_interactions(self) -> str: ...
    def meta(self) -> str: ...
    def state(self) -> str: ...
    def update_state(self, patch: str, expected_version: int | None = None) -> str: ...
    def set_state_schema(self, schema: str, scope: str) -> None: ...
    def state_history(self) -> str: ...
    def evicted(self, call_id: str, offset: int, limit: int) -> str: ...
    def end(self) -> str: ...
    def close(self) -> None: ...

class AgentmemError(Exception):
    """Base class of every error agentmem raises; the message says what went wrong and what to do."""

class InvalidInput(AgentmemError):
    """The call's arguments are not usable: fix them and call again. Nothing was written."""

class InvalidId(InvalidInput):
    """An agent, session or tool call id that cannot name a folder."""

class InvalidEvent(InvalidInput):
    """An event of a batch is malformed; none of the batch was written."""

class InvalidPatch(InvalidInput):
    """A working-memory patch does not apply to the current state; nothing was changed."""

class SchemaViolation(InvalidInput):
    """A working-memory update would leave the state outside its schema; nothing was changed."""

class InvalidSchema(InvalidInput):
    """A working-memory schema that cannot be used."""

class BadQuery(InvalidInput):
    """A search or recall query that cannot be run."""

class EditRefused(InvalidInput):
    """An edit of MEMORY.md or of the facts that cannot be made."""

class NotAnOverflow(InvalidInput):
    """A provider error given for overflow recovery is not a context overflow."""

class UnknownModel(InvalidInput):
    """A model name the registry does not know, where a known model was required."""
    model: str

class BadShape(InvalidInput):
    """Messages, a response or a transcript not of the provider shape or file format named; nothing was written."""

class NotFound(AgentmemError):
    """What the call names does not exist."""

class SessionNotFound(NotFound):
    """No session of the agent has that id."""

class TurnNotFound(NotFound):
    """No turn of the session has that id."""

class EvictedNotFound(NotFound):
    """No evicted tool output has that call id in the session."""

class Conflict(AgentmemError):
    """What the call works on changed or exists already: read it again and redo the change."""

class SessionExists(Conflict):
    """A session with that id exists already: choose another id or resume it."""

class StaleVersion(Conflict):
    """The working memory changed since the version the update expected; nothing was changed."""
    expected: int
    actual: int

class MemoryConflict(Conflict):
    """MEMORY.md changed since the hash the edit expected; nothing was changed."""
    expected: str
    actual: str

class SessionLocked(AgentmemError):
    """Another process (or Session object) holds the session's writer lock."""
    session: str
    pid: str

class ReadOnlySession(AgentmemError):
    """The session was opened read-only, or closed, and cannot be written to."""

class ContextOverflow(AgentmemError):
    """The context still overflows the model's window after every recovery attempt."""

class ConfigError(AgentmemError):
    """A configuration file (config.toml) is invalid."""

class CorruptData(AgentmemError):
    """A file on disk (a log line, the search index) cannot be read."""

class StorageError(AgentmemError):
    """A file operation failed (permissions, a full disk)."""

class CallbackError(AgentmemError):
    """A summarizer, embedder or reranker failed; nothing was written."""

class SummarizerError(CallbackError):
    """The summarizer failed; the history is untouched."""

class EmbedderError(CallbackError):
    """The embedder failed or answered wrongly."""

class RerankerError(CallbackError):
    """The reranker failed or answered wrongly."""

