"""The asyncio API: :class:`AsyncStore` and :class:`AsyncSession`.

Each coroutine runs its synchronous twin on a worker thread
(``asyncio.to_thread``); the engine releases the interpreter while it
works, so the event loop keeps serving other tasks while a context is
prepared or a session compacted.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Iterable, Literal, Mapping, Sequence

from agentmem._sync import Format, Prepared, ProviderFormat, Session, Store, Target

__all__ = ["AsyncStore", "AsyncSession"]


class AsyncSession:
    """The asyncio face of a :class:`Session`; every method is a coroutine doing what the same method of :class:`Session` does."""

    def __init__(self, session: Session) -> None:
        self.sync = session
        """The synchronous session behind this one."""

    def __repr__(self) -> str:
        return f"<agentmem.AsyncSession {self.id!r}>"

    async def __aenter__(self) -> "AsyncSession":
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def id(self) -> str:
        """The session id."""
        return self.sync.id

    @property
    def writable(self) -> bool:
        """Whether this object holds the session's writer lock."""
        return self.sync.writable

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self.sync.closed

    async def ingest(self, items: Iterable[Any] | Mapping[str, Any], format: Format = "agentmem") -> dict:
        """See :meth:`Session.ingest`."""
        plain = items if isinstance(items, Mapping) else list(items)
        return await asyncio.to_thread(self.sync.ingest, plain, format)

    async def record(self, response: Any, format: ProviderFormat | None = None) -> dict:
        """See :meth:`Session.record`."""
        return await asyncio.to_thread(self.sync.record, response, format)

    async def import_file(self, path: str | os.PathLike[str], format: str | None = None) -> dict:
        """See :meth:`Session.import_file`."""
        return await asyncio.to_thread(self.sync.import_file, path, format)

    async def prepare(self, model: str, target: Target | None = None, **settings: Any) -> Prepared:
        """See :meth:`Session.prepare` (the same keyword settings)."""
        return await asyncio.to_thread(self.sync.prepare, model, target, **settings)

    async def recover_overflow(self, error_body: str, model: str, target: Target | None = None, **settings: Any) -> Prepared:
        """See :meth:`Session.recover_overflow`."""
        return await asyncio.to_thread(self.sync.recover_overflow, error_body, model, target, **settings)

    async def context(self, model: str, target: Target | None = None, **settings: Any) -> dict:
        """See :meth:`Session.context`."""
        return await asyncio.to_thread(self.sync.context, model, target, **settings)

    async def compact(self, focus: str | None = None) -> dict:
        """See :meth:`Session.compact`."""
        return await asyncio.to_thread(self.sync.compact, focus)

    async def wait_for_draft(self) -> int | None:
        """See :meth:`Session.wait_for_draft`."""
        return await asyncio.to_thread(self.sync.wait_for_draft)

    async def events(self, after_seq: int | None = None, limit: int | None = None) -> list[dict]:
        """See :meth:`Session.events`."""
        return await asyncio.to_thread(self.sync.events, after_seq, limit)

    async def tool_interactions(self) -> list[dict]:
        """See :meth:`Session.tool_interactions`."""
        return await asyncio.to_thread(self.sync.tool_interactions)

    async def meta(self) -> dict:
        """See :meth:`Session.meta`."""
        return await asyncio.to_thread(self.sync.meta)

    async def state(self) -> dict:
        """See :meth:`Session.state`."""
        return await asyncio.to_thread(self.sync.state)

    async def update_state(
        self, patch: Mapping[str, Any] | Sequence[Mapping[str, Any]], expected_version: int | None = None
    ) -> dict:
        """See :meth:`Session.update_state`."""
        return await asyncio.to_thread(self.sync.update_state, patch, expected_version)

    async def set_state_schema(
        self, schema: Mapping[str, Any] | None, scope: Literal["session", "agent"] = "session"
    ) -> None:
        """See :meth:`Session.set_state_schema`."""
        await asyncio.to_thread(self.sync.set_state_schema, schema, scope)

    async def state_history(self) -> list[dict]:
        """See :meth:`Session.state_history`."""
        return await asyncio.to_thread(self.sync.state_history)

    async def evicted(self, call_id: str, offset: int = 0, limit: int = 200) -> dict:
        """See :meth:`Session.evicted`."""
        return await asyncio.to_thread(self.sync.evicted, call_id, offset, limit)

    async def end(self) -> dict | None:
        """See :meth:`Session.end`."""
        return await asyncio.to_thread(self.sync.end)

    async def fork(self, at_turn: str | int | None = None, new_id: str | None = None) -> dict:
        """See :meth:`Session.fork`."""
        return await asyncio.to_thread(self.sync.fork, at_turn, new_id)

    async def close(self) -> None:
        """See :meth:`Session.close`."""
        await asyncio.to_thread(self.sync.close)


class AsyncStore:
    """The asyncio face of a :class:`Store`: the same arguments, every method a coroutine.

    Opening the store itself does no I/O beyond reading ``config.toml``, so
    the constructor is synchronous.
    """

    def __init__(self, path: str | os.PathLike[str], **options: Any) -> None:
        """Opens the store at ``path``; ``options`` are :class:`Store`'s keyword arguments."""
        self.sync = Store(path, **options)
        """The synchronous store behind this one."""

    def __repr__(self) -> str:
        return f"<agentmem.AsyncStore {self.path!r} agent={self.agent!r}>"

    @property
    def path(self) -> str:
        """The data directory."""
        return self.sync.path

    @property
    def agent(self) -> str:
        """The agent whose sessions and memory this store works on."""
        return self.sync.agent

    @property
    def durability(self) -> str:
        """When appends reach the disk: ``"always"``, ``"batch"`` or ``"os"``."""
        return self.sync.durability

    async def create_session(self, id: str | None = None) -> AsyncSession:
        """See :meth:`Store.create_session`."""
        return AsyncSession(await asyncio.to_thread(self.sync.create_session, id))

    async def resume_session(self, id: str) -> AsyncSession:
        """See :meth:`Store.resume_session`."""
        return AsyncSession(await asyncio.to_thread(self.sync.resume_session, id))

    async def session(self, id: str) -> AsyncSession:
        """See :meth:`Store.session`."""
        return AsyncSession(await asyncio.to_thread(self.sync.session, id))

    async def read_session(self, id: str) -> AsyncSession:
        """See :meth:`Store.read_session`."""
        return AsyncSession(await asyncio.to_thread(self.sync.read_session, id))

    async def list_sessions(self) -> list[dict]:
        """See :meth:`Store.list_sessions`."""
        return await asyncio.to_thread(self.sync.list_sessions)

    async def session_meta(self, id: str) -> dict:
        """See :meth:`Store.session_meta`."""
        return await asyncio.to_thread(self.sync.session_meta, id)

    async def delete_session(self, id: str) -> None:
        """See :meth:`Store.delete_session`."""
        await asyncio.to_thread(self.sync.delete_session, id)

    async def fork_session(self, id: str, at_turn: str | int | None = None, new_id: str | None = None) -> dict:
        """See :meth:`Store.fork_session`."""
        return await asyncio.to_thread(self.sync.fork_session, id, at_turn, new_id)

    async def search(self, query: str, **filters: Any) -> list[dict]:
        """See :meth:`Store.search` (the same keyword filters)."""
        return await asyncio.to_thread(self.sync.search, query, **filters)

    async def recall(self, query: str, *, budget: int | None = None, session: str | None = None) -> dict:
        """See :meth:`Store.recall`."""
        return await asyncio.to_thread(self.sync.recall, query, budget=budget, session=session)

    async def embed_pending(self) -> None:
        """See :meth:`Store.embed_pending`."""
        await asyncio.to_thread(self.sync.embed_pending)

    async def read_memory(self) -> dict:
        """See :meth:`Store.read_memory`."""
        return await asyncio.to_thread(self.sync.read_memory)

    async def write_memory(self, content: str, expected_hash: str | None = None) -> dict:
        """See :meth:`Store.write_memory`."""
        return await asyncio.to_thread(self.sync.write_memory, content, expected_hash)

    async def update_memory(self, old_text: str, new_text: str, expected_hash: str | None = None) -> dict:
        """See :meth:`Store.update_memory`."""
        return await asyncio.to_thread(self.sync.update_memory, old_text, new_text, expected_hash)

    async def facts(self, all: bool = False) -> list[dict]:
        """See :meth:`Store.facts`."""
        return await asyncio.to_thread(self.sync.facts, all)

    async def add_fact(self, fact: str, tags: Iterable[str] = (), session: str | None = None) -> dict:
        """See :meth:`Store.add_fact`."""
        return await asyncio.to_thread(self.sync.add_fact, fact, list(tags), session)

    async def supersede_fact(self, id: str, text: str) -> str:
        """See :meth:`Store.supersede_fact`."""
        return await asyncio.to_thread(self.sync.supersede_fact, id, text)

    async def delete_fact(self, id: str) -> None:
        """See :meth:`Store.delete_fact`."""
        await asyncio.to_thread(self.sync.delete_fact, id)

    async def model(self, name: str) -> dict:
        """See :meth:`Store.model`."""
        return await asyncio.to_thread(self.sync.model, name)
