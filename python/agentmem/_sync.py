"""The synchronous API: :class:`Store` and :class:`Session`.

Every method hands its work to the engine with the interpreter released, so
other threads keep running while a session is compacted or a context is
prepared. A :class:`Store` may be shared by any number of threads; so may a
:class:`Session`, whose calls then run one at a time.

Values cross as JSON: events, payloads, stats and reports are the dicts the
HTTP API (``agentmem serve``) reads and writes.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence, Union

from agentmem import _native
from agentmem._shapes import as_plain, json_default

__all__ = ["Store", "Session", "Prepared"]

Target = Literal["openai-chat", "openai-responses", "anthropic", "gemini"]
"""The provider API a payload is rendered for."""

ProviderFormat = Literal["openai-chat", "openai-responses", "anthropic"]
"""A provider's shape of messages and responses: OpenAI Chat Completions, OpenAI Responses, Anthropic Messages."""

Format = Literal["agentmem", "openai-chat", "openai-responses", "anthropic"]
"""What :meth:`Session.ingest` is given: agentmem events, or a provider's messages."""

Durability = Literal["always", "batch", "os"]
"""When appends reach the disk: fsync per event, per ingest call, or when the OS decides."""

Summarizer = Callable[[dict], Union[str, dict]]
"""``summarizer(request) -> str | dict``.

``request`` is ``{"events": [event, ...], "focus": str | None, "max_tokens": int}``.
The answer is markdown with ``## <section>`` headings and ``- `` bullets (the
sections of agentmem's summaries: Goal, Constraints and preferences, Progress,
Key decisions, Files read and modified, Commands run, Errors seen, Next steps,
Critical context; prose without them is kept under Critical context), or a dict
``{"sections": {title: [bullet, ...]}, "facts": [{"text", "kind",
"source_event_ids", "confidence"}]}``.
"""

Embedder = Callable[[list], list]
"""``embedder(texts: list[str]) -> list[list[float]]``: one vector per text, all of one length."""

Reranker = Callable[[str, list], list]
"""``reranker(query: str, passages: list[str]) -> list[float]``: a relevance score per passage, higher is better."""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=json_default)


def _drop_none(arguments: Mapping[str, Any]) -> dict:
    return {key: value for key, value in arguments.items() if value is not None}


class Prepared(dict):
    """The request body for the next model call, ready to send.

    It is the payload itself (``client.chat.completions.create(**prepared)``,
    ``client.responses.create(**prepared)``, ``anthropic.messages.create(**prepared)``);
    :attr:`stats` says how it stands against the budget (tokens counted, the
    input budget, the trigger, what was cut or compacted).

    The dict and its message list (``messages``, ``input`` or ``contents``)
    are new on every call: add to them or replace fields freely. The
    entries *inside* the list, and the fields' values while they stay the
    same, are shared with the payloads of the session's later calls (a turn
    already sent is not converted again), so treat them as read-only: copy
    an entry before changing it
    (``dict(entry)``, or ``copy.deepcopy`` for its nested parts).
    """

    stats: dict
    """The context's statistics: ``context_tokens``, ``input_budget``, ``trigger_tokens``, ``actions``, ..."""

    def __init__(self, payload: dict, stats: dict) -> None:
        super().__init__(payload)
        self.stats = stats


class Session:
    """One conversation's durable event log and the context built from it.

    Obtained from :meth:`Store.create_session`, :meth:`Store.resume_session`,
    :meth:`Store.session` or :meth:`Store.read_session`. A session open for
    writing holds its writer lock until :meth:`close` (or the end of a
    ``with`` block); another process or ``Session`` object that tries to
    write to it meanwhile gets :class:`agentmem.SessionLocked`.
    """

    def __init__(self, store: "Store", native: _native.NativeSession) -> None:
        self._store = store
        self._native = native

    def __repr__(self) -> str:
        state = "closed" if self.closed else ("writable" if self.writable else "read-only")
        return f"<agentmem.Session {self.id!r} {state}>"

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def id(self) -> str:
        """The session id."""
        return self._native.id

    @property
    def store(self) -> "Store":
        """The store the session belongs to."""
        return self._store

    @property
    def writable(self) -> bool:
        """Whether this object holds the session's writer lock."""
        return self._native.writable

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._native.closed

    def ingest(self, items: Iterable[Any] | Mapping[str, Any], format: Format = "agentmem") -> dict:
        """Appends events to the log, in order.

        With ``format="agentmem"`` (the default) ``items`` are agentmem
        events: dicts of the event model (``trace_type``, ``content``,
        ``tool_call_id``, ``tool_name``, ``tool_args``, ``usage``, ...; see the
        README's "The event model"). With ``"openai-chat"``, ``"openai-responses"``
        or ``"anthropic"`` they are what the agent sends its provider: Chat
        Completions messages, Responses input items, Anthropic messages (a
        list, one message, or a request body holding ``messages``/``input``;
        an Anthropic ``system`` becomes a system event). Hand over each
        message once: messages without an id of their own get a new one each
        time. pydantic models and SDK objects are accepted wherever a dict is.

        The whole batch is checked before any of it is written: a bad event
        raises :class:`agentmem.InvalidEvent` (a bad message
        :class:`agentmem.BadShape`) naming its position, and nothing is
        written. An event whose ``id`` the session already has is skipped.

        Returns ``{"appended", "duplicates", "evicted", "compaction_due"}``.
        """
        if format == "agentmem":
            if isinstance(items, Mapping):
                raise TypeError("ingest takes a list of events; wrap a single event in a list")
            return self._native.ingest(list(items))
        plain = items if isinstance(items, Mapping) else list(items)
        return self._native.ingest_native(format, "messages", plain)

    def record(self, response: Any, format: ProviderFormat | None = None) -> dict:
        """Appends a model's response: what it said, its tool calls and reasoning, and its usage.

        ``response`` is the provider SDK's response object or its dict: a
        Chat Completions ``chat.completion``, a Responses ``response``, an
        Anthropic ``message``; ``format`` is told from it when left out.
        The usage the provider reported is kept on the last event, so the
        next :meth:`prepare` measures the context from it. Recording the same
        response twice adds nothing (its events keep the provider's ids).

        Returns ``{"appended", "duplicates", "evicted", "compaction_due"}``.
        """
        plain = as_plain(response)
        if not isinstance(plain, Mapping):
            raise TypeError(f"record takes a response object or dict, not {type(response).__name__}")
        shape = format or _response_format(plain)
        return self._native.ingest_native(shape, "response", plain)

    def import_file(self, path: str | os.PathLike[str], format: str | None = None) -> dict:
        """Imports a transcript file into this session, told from its name and contents when ``format`` is ``None``.

        Formats: Claude Code, Codex CLI, SWE-agent, OpenHands, OpenAI
        messages, OpenAI Responses, Anthropic messages, agentmem events (the
        names ``agentmem import --help`` lists). Events keep stable ids, so
        importing a file again adds only what is new. Returns
        ``{"format", "records", "skipped", "appended", "duplicates", "evicted", "compaction_due"}``.
        """
        return json.loads(self._native.import_file(os.fspath(path), format))

    def prepare(
        self,
        model: str,
        target: Target | None = None,
        *,
        system: str | None = None,
        live_context: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        prompt_cache: Literal["on", "off"] | None = None,
        strategy: Literal["auto", "none", "trim", "summarize", "placeholder"] | None = None,
        memory: Literal["on", "off"] | None = None,
        context_window: int | None = None,
        max_output_tokens: int | None = None,
        safety_margin: int | None = None,
        trigger_ratio: float | None = None,
        compaction_timing: Literal["inline", "background"] | None = None,
    ) -> Prepared:
        """The request body for the next call to ``model``, inside its budget.

        ``target`` is the provider API (from the model's name when left out).
        ``tools`` are the agent's own tools, as ``{"name", "description",
        "parameters"}`` or in the provider's own tool shape. The other
        settings win over the session's and the agent's ``config.toml`` for
        this call. When the context is past its trigger, older tool output
        is cut and, if needed, the session is compacted first (durably);
        with ``compaction_timing="background"`` the compaction is drafted on
        a thread of its own while the model answers, this call sends the
        context as it is (it still fits the budget) and the next call
        applies it.

        Returns a :class:`Prepared`: the payload dict, with ``.stats``.
        """
        return Prepared(*self._native.prepare(_prepare_arguments(locals())))

    def recover_overflow(
        self, error_body: str, model: str, target: Target | None = None, *, status: int = 400, **settings: Any
    ) -> Prepared:
        """A smaller request body after the provider refused the last one as too long.

        ``error_body`` is the provider's error text (``status`` its HTTP
        status); ``model``, ``target`` and the keyword settings are
        :meth:`prepare`'s. The session is compacted, then trimmed under
        tighter budgets, up to three times; :class:`agentmem.NotAnOverflow`
        when the error is not a context overflow,
        :class:`agentmem.ContextOverflow` when it still does not fit.
        """
        arguments = _prepare_arguments({"model": model, "target": target, **settings})
        return Prepared(*self._native.recover_overflow(arguments, status, error_body))

    def context(
        self,
        model: str,
        target: Target | None = None,
        *,
        system: str | None = None,
        live_context: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        context_window: int | None = None,
        max_output_tokens: int | None = None,
        safety_margin: int | None = None,
        trigger_ratio: float | None = None,
    ) -> dict:
        """Where the session stands against ``model``'s budget, changing nothing.

        The stats of the call :meth:`prepare` would make now (``context_tokens``,
        ``input_budget``, ``trigger_tokens``, ``sections``, ``compaction_due``,
        ...), read from the session's files, with ``would_compact`` (a
        compaction would run first) and ``compactions`` (how many ran so far).
        """
        return json.loads(self._native.context(_prepare_arguments(locals())))

    def compact(self, focus: str | None = None) -> dict:
        """Compacts now: older turns folded into a summary, their events archived.

        ``focus`` is what the summary should favour. Returns the report
        (``applied``, ``tokens_before``, ``tokens_after``, ``tokens_saved``, ...).
        A failing summarizer raises :class:`agentmem.SummarizerError` and
        leaves the session's files as they were.
        """
        return json.loads(self._native.compact(focus))

    def wait_for_draft(self) -> int | None:
        """Waits until the compaction drafted in the background, if any, is ready.

        A :meth:`prepare` never waits for a draft when ``compaction_timing`` is
        ``"background"``; the next one applies a draft that is ready. Call this
        where the next call must see the compaction (a test, a batch job about
        to end). Returns how many events the draft folds, or ``None`` when none
        is being drafted.
        """
        return self._native.wait_for_draft()

    def events(self, after_seq: int | None = None, limit: int | None = None) -> list[dict]:
        """The whole history in order, archive included; after ``after_seq``, at most ``limit``."""
        return json.loads(self._native.events(after_seq, limit))

    def tool_interactions(self) -> list[dict]:
        """Every tool call with its result, error and status (PENDING, SUCCESS, ERROR)."""
        return json.loads(self._native.tool_interactions())

    def meta(self) -> dict:
        """The session's description: id, title, created, updated, turns, events, ..."""
        return json.loads(self._native.meta())

    def state(self) -> dict:
        """The working memory: ``{"version", "hash", "document", "schema"}``."""
        return json.loads(self._native.state())

    def update_state(
        self, patch: Mapping[str, Any] | Sequence[Mapping[str, Any]], expected_version: int | None = None
    ) -> dict:
        """Changes the working memory; returns ``{"version", "hash", "document"}``.

        ``patch`` is a JSON Merge Patch (a dict) or a JSON Patch (a list of
        operations). With ``expected_version``, the update applies only to
        that version: :class:`agentmem.StaleVersion` (with ``.expected`` and
        ``.actual``) when the state moved on. A patch that does not apply
        raises :class:`agentmem.InvalidPatch`, one that breaks the schema
        :class:`agentmem.SchemaViolation`; nothing is changed then.
        """
        return json.loads(self._native.update_state(_dumps(patch), expected_version))

    def set_state_schema(
        self, schema: Mapping[str, Any] | None, scope: Literal["session", "agent"] = "session"
    ) -> None:
        """Sets the JSON Schema the working memory keeps to (``None`` removes it).

        ``scope="agent"`` sets it for every session of the agent that has
        none of its own. :class:`agentmem.InvalidSchema` when it cannot be
        used, :class:`agentmem.SchemaViolation` when the current state breaks it.
        """
        self._native.set_state_schema(_dumps(schema), scope)

    def state_history(self) -> list[dict]:
        """Every working-memory version with the event that made it, oldest first."""
        return json.loads(self._native.state_history())

    def evicted(self, call_id: str, offset: int = 0, limit: int = 200) -> dict:
        """A page of an evicted tool output: ``{"text", "offset", "lines_returned", "total_lines", "has_more"}``."""
        return json.loads(self._native.evicted(call_id, offset, limit))

    def end(self) -> dict | None:
        """Ends the session: its summary becomes an episodic memory (returned), or ``None``."""
        return json.loads(self._native.end())

    def fork(self, at_turn: str | int | None = None, new_id: str | None = None) -> dict:
        """Copies the session up to and including ``at_turn`` into a new one; its description."""
        return self._store.fork_session(self.id, at_turn=at_turn, new_id=new_id)

    def close(self) -> None:
        """Writes pending metadata and releases the writer lock. Calling it again does nothing."""
        self._native.close()


def _response_format(response: Mapping[str, Any]) -> ProviderFormat:
    """The provider whose response ``response`` is, from its ``object`` or ``type``."""
    kind = response.get("object") or response.get("type")
    if kind == "chat.completion":
        return "openai-chat"
    if kind == "response":
        return "openai-responses"
    if kind == "message":
        return "anthropic"
    raise _native.BadShape(
        f"cannot tell whose response this is (object/type {kind!r}); pass format="
        '"openai-chat", "openai-responses" or "anthropic"'
    )


def _prepare_arguments(arguments: Mapping[str, Any]) -> dict:
    """The HTTP API's ``prepare`` body for a method's arguments."""
    return _drop_none({key: value for key, value in arguments.items() if key != "self"})


class Store:
    """A data directory holding an agent's sessions and memories.

    ``Store(path)`` opens (or, on the first write, creates) the directory;
    its ``config.toml`` is read when there is one. ``agent`` names whose
    sessions and memory the store works on. ``durability`` overrides when
    appends reach the disk. ``unknown_models="refuse"`` makes
    :meth:`Session.prepare` and :meth:`Session.context` raise
    :class:`agentmem.UnknownModel` for a model the registry does not know,
    instead of assuming a 200,000-token window.

    ``summarizer``, ``embedder`` and ``reranker`` are Python callables the
    engine calls in its seams (see :data:`Summarizer`, :data:`Embedder`,
    :data:`Reranker`): your own LLM call for compaction summaries, your own
    embedding model and reranker for recall. ``*_name``/``*_model`` name them
    in summaries and in the stored vectors (vectors of one model are never
    compared with another's). A callable that raises makes the engine's call
    fail with :class:`agentmem.SummarizerError`, :class:`agentmem.EmbedderError`
    or :class:`agentmem.RerankerError` (the callable's exception as
    ``__cause__``), and nothing is written.

    A store is safe to share across threads.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        agent: str = "default",
        durability: Durability | None = None,
        unknown_models: Literal["guess", "refuse"] = "guess",
        summarizer: Summarizer | None = None,
        summarizer_name: str = "python",
        summarizer_window_tokens: int = 100_000,
        embedder: Embedder | None = None,
        embedder_model: str = "python",
        reranker: Reranker | None = None,
        reranker_model: str = "python",
    ) -> None:
        for name, function in (("summarizer", summarizer), ("embedder", embedder), ("reranker", reranker)):
            if function is not None and not callable(function):
                raise TypeError(f"{name} must be callable, not {type(function).__name__}")
        self._native = _native.NativeStore(
            os.fspath(path),
            agent,
            durability,
            unknown_models,
            summarizer,
            summarizer_name,
            summarizer_window_tokens,
            embedder,
            embedder_model,
            reranker,
            reranker_model,
        )

    def __repr__(self) -> str:
        return f"<agentmem.Store {str(self.path)!r} agent={self.agent!r}>"

    @property
    def path(self) -> str:
        """The data directory."""
        return os.fspath(self._native.path)

    @property
    def agent(self) -> str:
        """The agent whose sessions and memory this store works on."""
        return self._native.agent

    @property
    def durability(self) -> Durability:
        """When appends reach the disk: ``"always"``, ``"batch"`` or ``"os"`` (the argument, else ``config.toml``, else ``batch``)."""
        return self._native.durability  # type: ignore[return-value]

    def create_session(self, id: str | None = None) -> Session:
        """A new, empty session open for writing (a fresh id when ``id`` is ``None``).

        :class:`agentmem.SessionExists` when ``id`` is taken,
        :class:`agentmem.InvalidId` when it cannot name a folder.
        """
        return Session(self, self._native.create_session(id))

    def resume_session(self, id: str) -> Session:
        """An existing session, open for writing (:class:`agentmem.SessionNotFound` when there is none)."""
        return Session(self, self._native.resume_session(id))

    def session(self, id: str) -> Session:
        """Session ``id`` open for writing, created when it does not exist."""
        return Session(self, self._native.open_or_create(id))

    def read_session(self, id: str) -> Session:
        """An existing session open for reading only: no lock taken, never blocks a writer."""
        return Session(self, self._native.read_session(id))

    def list_sessions(self) -> list[dict]:
        """Every session's description, most recently updated first."""
        return json.loads(self._native.list_sessions())

    def session_meta(self, id: str) -> dict:
        """One session's description: id, title, created, updated, turns, events, ..."""
        return json.loads(self._native.session_meta(id))

    def delete_session(self, id: str) -> None:
        """Deletes a session and all its files; :class:`agentmem.SessionLocked` while a writer holds it."""
        self._native.delete_session(id)

    def fork_session(self, id: str, at_turn: str | int | None = None, new_id: str | None = None) -> dict:
        """Copies session ``id`` up to and including ``at_turn`` (all of it by default) into a new session.

        ``at_turn`` is a turn id (``"turn_0003"``) or number. Returns the new
        session's description; :class:`agentmem.TurnNotFound` for a turn the
        session does not have.
        """
        turn = None if at_turn is None else str(at_turn)
        return json.loads(self._native.fork_session(id, turn, new_id))

    def search(
        self,
        query: str,
        *,
        session: str | None = None,
        role: str | None = None,
        since: str | None = None,
        until: str | None = None,
        limit: int | None = None,
    ) -> list[dict]:
        """Searches the agent's whole history, archives included (SQLite FTS5).

        ``role`` is ``user``, ``assistant``, ``tool`` or ``state``; ``since``
        and ``until`` are dates (``2026-01-31``) or RFC 3339 times.
        """
        arguments = _drop_none(
            {"query": query, "session": session, "role": role, "since": since, "until": until, "limit": limit}
        )
        return json.loads(self._native.search(_dumps(arguments)))

    def recall(self, query: str, *, budget: int | None = None, session: str | None = None) -> dict:
        """What long-term memory would be injected for ``query``, within ``budget`` tokens (2,000).

        ``session`` leaves that session's own history out. With an embedder
        the documents are embedded in the background as they arrive (the
        embedder is called from a thread of its own); recall never waits for
        them, ranks those without a vector yet by their words, and says how
        many in ``["embedding"]["unembedded"]``. With a reranker it reads the
        best candidates first.
        """
        arguments = _drop_none({"query": query, "budget": budget, "session": session})
        return json.loads(self._native.recall(_dumps(arguments)))

    def embed_pending(self) -> None:
        """Waits until every document of the history has a vector of the store's embedder.

        :class:`agentmem.EmbedderError` when the embedder fails meanwhile
        (what it embedded is kept, and it is retried in the background).
        Nothing to do without an embedder.
        """
        self._native.embed_pending()

    def read_memory(self) -> dict:
        """The agent's MEMORY.md: ``{"content", "hash"}``."""
        return json.loads(self._native.read_memory())

    def write_memory(self, content: str, expected_hash: str | None = None) -> dict:
        """Appends ``content`` to MEMORY.md; with ``expected_hash``, only if it is unchanged since read.

        :class:`agentmem.MemoryConflict` when it changed. Returns the new ``{"content", "hash"}``.
        """
        return json.loads(self._native.append_memory(content, expected_hash))

    def update_memory(self, old_text: str, new_text: str, expected_hash: str | None = None) -> dict:
        """Replaces ``old_text`` (which must occur once) with ``new_text`` in MEMORY.md.

        :class:`agentmem.EditRefused` when ``old_text`` is missing or ambiguous,
        :class:`agentmem.MemoryConflict` when ``expected_hash`` is stale.
        """
        return json.loads(self._native.replace_memory(old_text, new_text, expected_hash))

    def facts(self, all: bool = False) -> list[dict]:
        """The agent's current semantic facts; with ``all``, superseded and retired ones too."""
        return json.loads(self._native.facts(all))

    def add_fact(self, fact: str, tags: Iterable[str] = (), session: str | None = None) -> dict:
        """Adds a fact (one sentence) the user stated; what was added."""
        return json.loads(self._native.add_fact(fact, list(tags), session))

    def supersede_fact(self, id: str, text: str) -> str:
        """Replaces fact ``id`` with ``text``; the new fact's id."""
        return self._native.supersede_fact(id, text)

    def delete_fact(self, id: str) -> None:
        """Retires fact ``id`` (kept in the file, no longer current)."""
        self._native.delete_fact(id)

    def model(self, name: str) -> dict:
        """What the model registry knows of ``name``: window, max output, prices, source.

        :class:`agentmem.UnknownModel` when it knows nothing of it.
        """
        return json.loads(self._native.model(name))
