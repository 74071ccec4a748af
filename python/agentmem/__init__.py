"""agentmem: a memory and context engine for LLM agents, in process.

Keep every event of an agent's conversations durably on disk, and get the
context for each model call built from them: inside the model's budget, tool
calls and results paired, huge outputs cut, old turns compacted into a
summary, long-term memory recalled, working memory kept.

>>> import agentmem
>>> store = agentmem.Store(".agentmem")
>>> with store.create_session() as session:
...     session.ingest([{"trace_type": "user", "content": "list the files"}])
...     payload = session.prepare(model="gpt-4.1")   # client.chat.completions.create(**payload)

:class:`Store` and :class:`Session` are synchronous and safe to share across
threads; :class:`AsyncStore` and :class:`AsyncSession` are their asyncio
twins. Every error is an :class:`AgentmemError`, one subclass per kind.
"""

from agentmem._aio import AsyncSession, AsyncStore
from agentmem._native import (
    AgentmemError,
    BadQuery,
    BadShape,
    CallbackError,
    ConfigError,
    Conflict,
    ContextOverflow,
    CorruptData,
    EditRefused,
    EmbedderError,
    EvictedNotFound,
    InvalidEvent,
    InvalidId,
    InvalidInput,
    InvalidPatch,
    InvalidSchema,
    MemoryConflict,
    NotAnOverflow,
    NotFound,
    ReadOnlySession,
    RerankerError,
    SchemaViolation,
    SessionExists,
    SessionLocked,
    SessionNotFound,
    StaleVersion,
    StorageError,
    SummarizerError,
    TurnNotFound,
    UnknownModel,
    __version__,
)
from agentmem._sync import (
    Durability,
    Embedder,
    Format,
    Prepared,
    ProviderFormat,
    Reranker,
    Session,
    Store,
    Summarizer,
    Target,
)

__all__ = [
    "Store",
    "Session",
    "Prepared",
    "AsyncStore",
    "AsyncSession",
    "Target",
    "Format",
    "ProviderFormat",
    "Durability",
    "Summarizer",
    "Embedder",
    "Reranker",
    "AgentmemError",
    "InvalidInput",
    "InvalidId",
    "InvalidEvent",
    "InvalidPatch",
    "SchemaViolation",
    "InvalidSchema",
    "BadQuery",
    "BadShape",
    "EditRefused",
    "NotAnOverflow",
    "UnknownModel",
    "NotFound",
    "SessionNotFound",
    "TurnNotFound",
    "EvictedNotFound",
    "Conflict",
    "SessionExists",
    "StaleVersion",
    "MemoryConflict",
    "SessionLocked",
    "ReadOnlySession",
    "ContextOverflow",
    "ConfigError",
    "CorruptData",
    "StorageError",
    "CallbackError",
    "SummarizerError",
    "EmbedderError",
    "RerankerError",
    "__version__",
]
