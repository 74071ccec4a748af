"""agentmem for pydantic-ai agents: durable history, a context that fits, memory tools.

pydantic-ai hands a history processor the run's whole message list before
every model request and sends what the processor returns. :class:`AgentmemHistoryProcessor`
is such a processor over an agentmem session:

- it **persists every message**: each new ``ModelRequest``/``ModelResponse``
  becomes agentmem events (user prompts, text, tool calls, tool returns,
  thinking), appended to the session's durable log and never trimmed there;
- it **prepares the fitted view** with the engine: huge tool returns cut or
  evicted (the model reads them back with ``read_evicted_output``), tool calls
  and returns paired, older tool output cut and old turns compacted into a
  summary once the context passes its trigger, MEMORY.md and recalled memory
  in the system prompt, all inside the model's budget;
- it **hands the view back** as pydantic-ai messages (a summary as a
  ``CompactionPart`` request), which pydantic-ai then sends and keeps.

It is the three processors of summarization-pydantic-ai and pydantic-deep in
one (``ContextManagerMiddleware``, ``EvictionProcessor``, ``PatchToolCalls``),
with the same ``request_compact(focus)`` and a usage callback. pydantic-ai 2
registers history processors as a capability: :class:`AgentmemCapability`
(``capabilities=[processor.capability()]``) runs the processor before every
request and records each response, with the usage the provider reported, as
soon as it arrives. :class:`AgentmemToolset` gives the agent ``read_memory``,
``write_memory``, ``update_memory`` (MEMORY.md), ``search_conversation_history``
(every session of the agent, compacted turns included) and ``read_evicted_output``.

    import agentmem
    from pydantic_ai import Agent
    from agentmem.integrations.pydantic_ai import AgentmemHistoryProcessor, AgentmemToolset

    store = agentmem.Store(".agentmem")
    memory = AgentmemHistoryProcessor(store.session("demo"))
    agent = Agent("openai:gpt-4.1", capabilities=[memory.capability()], toolsets=[AgentmemToolset(memory)])
    print(agent.run_sync("What did we decide yesterday?").output)
    memory.close()
"""

from __future__ import annotations

import asyncio
import bisect
import enum
import inspect
import json
import operator
import os
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Union

import pydantic_core
from pydantic_ai import RunContext
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    BaseToolCallPart,
    BaseToolReturnPart,
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    RetryFeedbackPart,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.toolsets import FunctionToolset

import agentmem
from agentmem._calls import Blocking, EngineCalls, call

__all__ = [
    "AgentmemHistoryProcessor",
    "AgentmemCapability",
    "AgentmemToolset",
    "ContextUsage",
    "Compaction",
    "EngineCalls",
    "SUMMARY_PREFIX",
]

SUMMARY_PREFIX = "[SUMMARY OF EARLIER CONVERSATION]"
"""How agentmem's compaction summary starts; in the view it becomes a ``CompactionPart``."""

_MARK = "agentmem"
"""The key of the ``metadata`` entry that says a message is already in the session (or was built from it)."""

_VIEW_TARGET = "openai-chat"
"""The provider shape the view is prepared in and read back from: chat messages map one to one onto pydantic-ai's."""


@dataclass(frozen=True)
class ContextUsage:
    """Where the context stands against the budget, as the usage callback gets it before each model call."""

    context_tokens: int
    """Tokens of the prepared view (system prompt, memory, history, tool schemas)."""
    input_budget: int
    """What the prompt may hold: the window less the reply reserve and the safety margin."""
    trigger_tokens: int
    """Where older tool output is cut and old turns are compacted."""
    compacted: "Compaction"
    """Whether the session was compacted for this call, and why."""
    stats: dict = field(repr=False)
    """The engine's whole statistics for the call (``sections``, ``actions``, ``calibration``, ...)."""

    @property
    def fraction(self) -> float:
        """``context_tokens / input_budget``: the usage bar's filling."""
        return self.context_tokens / self.input_budget if self.input_budget else 0.0


class Compaction(enum.Enum):
    """Whether a model call's view came out of a compaction, and why."""

    NONE = "none"
    """No compaction for this call."""
    AUTOMATIC = "automatic"
    """The context passed its trigger and the engine compacted it."""
    REQUESTED = "requested"
    """:meth:`AgentmemHistoryProcessor.request_compact` asked for it."""


UsageCallback = Callable[[ContextUsage], Union[None, Awaitable[None]]]
"""``on_usage(usage)``: called before each model call with the context's :class:`ContextUsage`; may be async."""

SessionLike = Union[agentmem.Session, agentmem.AsyncSession]


class AgentmemHistoryProcessor:
    """A pydantic-ai history processor backed by an agentmem session.

    ``session`` is an open, writable :class:`agentmem.Session` (or
    :class:`agentmem.AsyncSession`); the processor holds it until :meth:`close`.
    ``model`` names the model whose budget the view must fit (the run's model
    by default); ``context_window``, ``max_output_tokens``, ``safety_margin``,
    ``trigger_ratio`` and ``strategy`` override the engine's settings for it
    (see :meth:`agentmem.Session.prepare`). ``on_usage`` gets a
    :class:`ContextUsage` before every model call. ``engine_calls`` says
    where the engine works (:class:`EngineCalls`): by default in the event
    loop's thread when the call cannot take long and on a worker thread when
    it may (an append synced to disk, a compaction), or always on a worker
    thread, or always in the event loop.

    Register it with ``Agent(..., capabilities=[processor.capability()])``, or
    as a plain history processor with ``ProcessHistory(processor)`` (then a
    run's final answer is persisted by the next call, or by :meth:`persist`).

    What the budget counts: the system prompt (``system_prompt=``, kept by the
    processor and sent through the engine), MEMORY.md and recalled memory,
    the history and the run step's tool schemas. pydantic-ai sends
    ``instructions=`` beside the history; they are counted through the
    prompt size the provider reports for each response (recorded by the
    capability), so from the second model call on.

    One processor serves one session and one run at a time.
    """

    def __init__(
        self,
        session: SessionLike,
        *,
        model: str | None = None,
        context_window: int | None = None,
        max_output_tokens: int | None = None,
        safety_margin: int | None = None,
        trigger_ratio: float | None = None,
        strategy: Literal["auto", "none", "trim", "summarize", "placeholder"] | None = None,
        on_usage: UsageCallback | None = None,
        engine_calls: EngineCalls = EngineCalls.AUTO,
    ) -> None:
        self._engine_calls = engine_calls
        self._session = session if isinstance(session, agentmem.AsyncSession) else agentmem.AsyncSession(session)
        self._model = model
        self._settings = {
            key: value
            for key, value in {
                "context_window": context_window,
                "max_output_tokens": max_output_tokens,
                "safety_margin": safety_margin,
                "trigger_ratio": trigger_ratio,
                "strategy": strategy,
            }.items()
            if value is not None
        }
        self._on_usage = on_usage
        self._system: list[str] = []
        self._view = ViewBuilder(self._session.id)
        self._returned: list[ModelMessage] = []
        """The messages of the last view handed back (all marked as this session's)."""
        self._prepared = False
        """Whether a context was prepared since the session opened (the first reads the session's state)."""
        self._compaction_due = False
        """Whether the context passed its trigger since the last prepare: the next one shrinks or compacts it."""
        durability = self._session.sync.store.durability
        self._append_blocking = Blocking.QUICK if durability == "os" else Blocking.MAY_BLOCK
        """An append waits for the disk unless syncs are left to the OS."""
        self._compact_focus: _CompactRequest | None = None
        self.last_usage: ContextUsage | None = None
        """The usage of the latest prepared call, or ``None`` before the first."""

    @property
    def session(self) -> agentmem.AsyncSession:
        """The agentmem session the history lives in."""
        return self._session

    async def __call__(self, ctx: RunContext[Any], messages: list[ModelMessage]) -> list[ModelMessage]:
        """Persists what is new in ``messages``, then returns the view to send, inside the budget."""
        events, fresh = self._new_events(messages)
        request, self._compact_focus = self._compact_focus, None
        arguments = {
            "system": "\n\n".join(self._system) or None,
            "tools": _tool_schemas(ctx),
            **self._settings,
        }
        model = self._model or ctx.model.model_name
        try:
            match self._engine_calls:
                case EngineCalls.WORKER_THREAD:
                    # The engine's whole step in one hop: append, compact if asked, prepare.
                    prepared = await asyncio.to_thread(self._step, events, fresh, request, model, arguments)
                case EngineCalls.IN_EVENT_LOOP:
                    prepared = self._step(events, fresh, request, model, arguments)
                case EngineCalls.AUTO:
                    if events:
                        await call(self._engine_calls, self._append_blocking, self._append, events, fresh)
                    quick = self._prepared and not self._compaction_due and request is None
                    blocking = Blocking.QUICK if quick else Blocking.MAY_BLOCK
                    prepared = await call(self._engine_calls, blocking, self._compact_and_prepare, request, model, arguments)
        except BaseException:
            if self._compact_focus is None:
                self._compact_focus = request  # asked for, not done: the next call tries again
            raise
        compaction = Compaction.NONE if request is None else Compaction.REQUESTED
        stats = prepared.stats
        if compaction is Compaction.NONE and any(action.get("action") == "compacted" for action in stats["actions"]):
            compaction = Compaction.AUTOMATIC
        usage = ContextUsage(
            context_tokens=stats["context_tokens"],
            input_budget=stats["input_budget"],
            trigger_tokens=stats["trigger_tokens"],
            compacted=compaction,
            stats=stats,
        )
        self.last_usage = usage
        if self._on_usage is not None:
            outcome = self._on_usage(usage)
            if inspect.isawaitable(outcome):
                await outcome
        self._returned = self._view.messages(prepared["messages"])
        return list(self._returned)

    def request_compact(self, focus: str | None = None) -> None:
        """Compacts before the next model call, whatever the usage; ``focus`` is what the summary should favour.

        The ``/compact [focus]`` of an agent's command line.
        """
        self._compact_focus = _CompactRequest(focus)

    async def compact(self, focus: str | None = None) -> dict:
        """Compacts now; the engine's report (``tokens_before``, ``tokens_after``, ``tokens_saved``, ...)."""
        return await self._session.compact(focus)

    async def persist(self, messages: Iterable[ModelMessage]) -> int:
        """Appends the messages the session does not hold yet (a run's final answer, say); how many events."""
        return await self._persist(list(messages))

    def capability(self) -> "AgentmemCapability":
        """This processor as a pydantic-ai capability that also records every response as it arrives."""
        return AgentmemCapability(self)

    async def aclose(self) -> None:
        """Releases the session's writer lock."""
        await self._session.close()

    def close(self) -> None:
        """Releases the session's writer lock (from synchronous code)."""
        self._session.sync.close()

    def _step(
        self, events: list[dict], fresh: list[tuple[ModelMessage, list[str]]], request: "_CompactRequest | None", model: str, arguments: dict
    ) -> agentmem.Prepared:
        self._append(events, fresh)
        return self._compact_and_prepare(request, model, arguments)

    def _compact_and_prepare(self, request: "_CompactRequest | None", model: str, arguments: dict) -> agentmem.Prepared:
        session = self._session.sync
        if request is not None:
            session.compact(request.focus)
        prepared = session.prepare(model, _VIEW_TARGET, **arguments)
        self._prepared = True
        self._compaction_due = prepared.stats["compaction_due"]
        return prepared

    async def _persist(self, messages: list[ModelMessage]) -> int:
        """Ingests the unmarked messages as one batch, then marks them; the number of events appended."""
        events, fresh = self._new_events(messages)
        await call(self._engine_calls, self._append_blocking, self._append, events, fresh)
        return len(events)

    def _append(self, events: list[dict], fresh: list[tuple[ModelMessage, list[str]]]) -> None:
        """Appends the events (all or none), then marks their messages as held."""
        if events:
            if self._session.sync.ingest(events)["compaction_due"]:
                self._compaction_due = True
        for message, ids in fresh:
            _mark(message, {"session": self._session.id, "events": ids})

    def _new_events(self, messages: list[ModelMessage]) -> tuple[list[dict], list[tuple[ModelMessage, list[str]]]]:
        """The events of the messages not marked as this session's yet, and which message made which."""
        events: list[dict] = []
        fresh: list[tuple[ModelMessage, list[str]]] = []
        session_id = self._session.id
        # pydantic-ai hands back the view this processor returned, then what the run added to it.
        same = list(map(operator.is_, self._returned, messages))
        returned = same.index(False) if False in same else len(same)
        for message in messages[returned:]:
            if _is_marked(message, session_id):
                continue
            if isinstance(message, ModelRequest):
                system = [part.content for part in message.parts if isinstance(part, SystemPromptPart)]
                if system:
                    self._system = system
                converted = request_events(message)
            else:
                converted = response_events(message)
            events.extend(converted)
            fresh.append((message, [event["id"] for event in converted]))
        return events, fresh


@dataclass(frozen=True)
class _CompactRequest:
    focus: str | None


@dataclass
class AgentmemCapability(ProcessHistory[Any]):
    """:class:`AgentmemHistoryProcessor` as a capability: the processor before each model
    request, and each response recorded (with the provider's usage) right after it."""

    processor: AgentmemHistoryProcessor  # type: ignore[assignment]

    async def after_model_request(self, ctx: RunContext[Any], *, request_context: Any, response: ModelResponse) -> ModelResponse:
        """Appends the response to the session as soon as it arrives, so a run's last answer is kept too."""
        await self.processor.persist([response])
        return response


class AgentmemToolset(FunctionToolset[Any]):
    """The agent's memory tools over an agentmem store.

    ``read_memory``, ``write_memory`` and ``update_memory`` read and edit the
    agent's MEMORY.md (which the processor puts in every system prompt);
    ``search_conversation_history`` searches every session of the agent, the
    turns compacted away included; ``read_evicted_output`` pages through a tool
    output the engine moved out of the context. Pass the
    :class:`AgentmemHistoryProcessor` (or a store and, for evicted outputs, a
    session).
    """

    def __init__(
        self,
        source: AgentmemHistoryProcessor | agentmem.Store | agentmem.AsyncStore,
        *,
        session: SessionLike | None = None,
        search_limit: int = 8,
        id: str = "agentmem-memory",
    ) -> None:
        super().__init__(id=id)
        if isinstance(source, AgentmemHistoryProcessor):
            session = source.session
            store = source.session.sync.store
        elif isinstance(source, agentmem.AsyncStore):
            store = source.sync
        else:
            store = source
        sync_session = session.sync if isinstance(session, agentmem.AsyncSession) else session
        self._store: agentmem.Store = store
        self._session: agentmem.Session | None = sync_session
        self._search_limit = search_limit
        self.add_function(self.read_memory, takes_ctx=False)
        self.add_function(self.write_memory, takes_ctx=False)
        self.add_function(self.update_memory, takes_ctx=False)
        self.add_function(self.search_conversation_history, takes_ctx=False)
        if self._session is not None:
            self.add_function(self.read_evicted_output, takes_ctx=False)

    async def read_memory(self) -> str:
        """Read your persistent memory (MEMORY.md): what you learned in earlier sessions, the user's preferences, project conventions."""
        memory = await asyncio.to_thread(self._store.read_memory)
        return memory["content"] or "MEMORY.md is empty: nothing saved yet."

    async def write_memory(self, content: str) -> str:
        """Append to your persistent memory (MEMORY.md), for what later sessions should know: preferences, conventions, decisions.

        Args:
            content: The markdown to append.
        """
        memory = await asyncio.to_thread(self._store.write_memory, content)
        return f"Memory updated ({len(memory['content'].splitlines())} lines total)."

    async def update_memory(self, old_text: str, new_text: str) -> str:
        """Replace text in your persistent memory (MEMORY.md). `old_text` must occur exactly once; add surrounding words if it does not.

        Args:
            old_text: The exact text to replace.
            new_text: What replaces it.
        """
        try:
            memory = await asyncio.to_thread(self._store.update_memory, old_text, new_text)
        except agentmem.EditRefused as refused:
            return f"Memory not changed: {refused}"
        return f"Memory updated ({len(memory['content'].splitlines())} lines total)."

    async def search_conversation_history(self, query: str) -> str:
        """Search the full conversation history, including what was compacted into a summary, and earlier sessions.

        Use it for exact details (paths, commands, errors, decisions) the summary left out.

        Args:
            query: Words to look for; rare words weigh more.
        """
        try:
            hits = await asyncio.to_thread(self._store.search, query, limit=self._search_limit)
        except agentmem.BadQuery as bad:
            return f"The query could not be run: {bad}"
        if not hits:
            return f"No matches for {query!r} in the conversation history."
        lines = [f"{len(hits)} match(es) for {query!r}:"]
        for hit in hits:
            lines.append(f"- [{hit['session']} {hit['turn_id']} {hit['role']}] {hit['excerpt']}")
        return "\n".join(lines)

    async def read_evicted_output(self, call_id: str, offset: int = 0, limit: int = 200) -> str:
        """Read a page of a tool output that was too large for the context (its preview says so).

        Args:
            call_id: The tool call id the preview names.
            offset: The first line to read, from 0.
            limit: How many lines to read.
        """
        assert self._session is not None
        try:
            page = await asyncio.to_thread(self._session.evicted, call_id, offset, limit)
        except agentmem.EvictedNotFound as missing:
            return f"No evicted output: {missing}"
        more = (
            f"\n[lines {page['offset']}..{page['offset'] + page['lines_returned']} of {page['total_lines']};"
            f" read on with offset={page['offset'] + page['lines_returned']}]"
            if page["has_more"]
            else ""
        )
        return page["text"] + more


# pydantic-ai messages -> agentmem events.


def request_events(message: ModelRequest) -> list[dict]:
    """The events of a request: user prompts and tool returns (system prompts are the processor's setting)."""
    events = []
    for part in message.parts:
        if isinstance(part, SystemPromptPart):
            continue
        if isinstance(part, UserPromptPart):
            events.append(_event("user", _user_text(part.content)))
        elif isinstance(part, BaseToolReturnPart) and not isinstance(part, NativeToolReturnPart):
            events.append(
                _event(
                    "tool_result",
                    part.model_response_str(),
                    tool_call_id=part.tool_call_id,
                    tool_name=part.tool_name,
                )
            )
        elif isinstance(part, RetryPromptPart):
            if part.tool_name is None:
                events.append(_event("user", part.model_response()))
            else:
                events.append(
                    _event("tool_result", part.model_response(), tool_call_id=part.tool_call_id, tool_name=part.tool_name)
                )
        elif isinstance(part, RetryFeedbackPart):
            events.append(_event("user", part.model_response()))
        elif isinstance(part, CompactionPart):
            events.append(_event("user", part.content or "", tags=["pydantic-ai:compaction"]))
        else:
            # Instruction and capability bookkeeping: kept in the log, not sent again as conversation.
            events.append(_kept_aside("user", part))
    return events


def response_events(message: ModelResponse) -> list[dict]:
    """The events of a response: text, thinking and tool calls, the provider's usage on the last."""
    events = []
    for part in message.parts:
        if isinstance(part, TextPart):
            events.append(_event("assistant", part.content))
        elif isinstance(part, ThinkingPart):
            opaque = {"signature": part.signature, "provider_name": part.provider_name, "id": part.id}
            events.append(_event("reasoning", part.content, opaque={k: v for k, v in opaque.items() if v is not None}))
        elif isinstance(part, BaseToolCallPart) and not isinstance(part, NativeToolCallPart):
            events.append(
                _event("tool_call", "", tool_call_id=part.tool_call_id, tool_name=part.tool_name, tool_args=part.args_as_dict())
            )
        else:
            # What the provider ran or produced itself (native tools, files, its own compaction).
            events.append(_kept_aside("assistant", part))
    usage = message.usage
    if events and usage is not None and usage.input_tokens:
        events[-1]["usage"] = {
            "prompt_tokens": usage.input_tokens,
            "completion_tokens": usage.output_tokens,
            "cached_tokens": usage.cache_read_tokens,
            "model": message.model_name,
        }
    return events


def _event(trace_type: str, content: str, **fields: Any) -> dict:
    return {"id": f"pyd_{os.urandom(16).hex()}", "trace_type": trace_type, "content": content, "source_event": "pydantic-ai", **fields}


def _kept_aside(trace_type: str, part: Any) -> dict:
    """A part that is not conversation for the engine: in the log, verbatim, never in the model's view."""
    dumped = pydantic_core.to_jsonable_python(part, fallback=repr)
    return _event(trace_type, json.dumps(dumped, ensure_ascii=False), tags=["display_only"], opaque=dumped)


def _user_text(content: str | Sequence[Any]) -> str:
    if isinstance(content, str):
        return content
    pieces = []
    for item in content:
        if isinstance(item, str):
            pieces.append(item)
        else:
            url = getattr(item, "url", None)
            kind = getattr(item, "kind", type(item).__name__)
            pieces.append(f"[{kind}: {url}]" if url else f"[{kind}]")
    return "\n".join(pieces)


def _tool_schemas(ctx: RunContext[Any]) -> list[dict] | None:
    """The run step's tool definitions, so the budget counts what the request will carry."""
    manager = ctx.tool_manager
    if manager is None or manager.tools is None:
        return None
    return [
        {"name": tool.name, "description": tool.description or "", "parameters": tool.parameters_json_schema}
        for tool in manager.tool_defs
    ]


def _is_marked(message: ModelMessage, session_id: str) -> bool:
    mark = (message.metadata or {}).get(_MARK)
    return isinstance(mark, dict) and mark.get("session") == session_id


def _mark(message: ModelMessage, mark: dict) -> None:
    message.metadata = {**(message.metadata or {}), _MARK: mark}


# The prepared view (Chat Completions messages) -> pydantic-ai messages.


class ViewBuilder:
    """pydantic-ai messages for prepared chat views, each marked as built from one session.

    System, user and tool messages in a row become one ``ModelRequest``; each
    assistant message a ``ModelResponse``; the compaction summary a
    ``CompactionPart``. Between two model calls most of the view stays as it
    was: the engine hands back the same chat message objects for the turns
    it prepared before, so the messages built from the longest run of chat
    messages the last view began with are kept as they are (found in C, by
    identity or equality), and only the rest is built, reusing a message
    built for the last view where its chat messages read the same (a
    compaction keeps the newest turns).
    """

    def __init__(self, session_id: str) -> None:
        self._mark = {_MARK: {"session": session_id, "view": True}}
        self._chat: list[dict] = []
        """The last view's chat messages."""
        self._ends: list[int] = []
        """Where each built message's chat messages end in ``_chat`` (exclusive), in order."""
        self._responses: list[bool] = []
        """Whether each built message is a response (an assistant message: it never takes in the next one)."""
        self._keys: list[tuple] = []
        """Each built message's key: the chat messages it was built from, as read."""
        self._messages: list[ModelMessage] = []
        """The messages built for the last view."""
        self._tool_names: dict[str, str] = {}
        """The tool name of each call id seen in a view."""

    def messages(self, chat: list[dict]) -> list[ModelMessage]:
        """The pydantic-ai messages of the chat view ``chat`` (a new list; the messages are shared with later views)."""
        kept = _same_prefix(self._chat, chat)
        # A message stands when its chat messages and the one after them are
        # the same as last time (or it is a response, which takes in nothing).
        standing = bisect.bisect_left(self._ends, kept)
        if standing < len(self._ends) and self._ends[standing] == kept and (self._responses[standing] or kept == len(chat)):
            standing += 1
        start = self._ends[standing - 1] if standing else 0
        built = dict(zip(self._keys[standing:], self._messages[standing:]))
        del self._ends[standing:], self._responses[standing:], self._keys[standing:], self._messages[standing:]
        try:
            self._build(chat, start, built)
        except BaseException:
            self._chat, self._ends, self._responses, self._keys, self._messages = [], [], [], [], []
            raise
        self._chat = chat
        return list(self._messages)

    def _build(self, chat: list[dict], start: int, built: dict[tuple, ModelMessage]) -> None:
        """Builds the messages of ``chat[start:]``, reusing ``built``'s where the key is the same."""
        pending: list[tuple] = []
        tool_names = self._tool_names

        def add(key: tuple, end: int, response: bool, build: Callable[[], ModelMessage]) -> None:
            message = built.pop(key, None)
            if message is None:
                message = build()
            self._ends.append(end)
            self._responses.append(response)
            self._keys.append(key)
            self._messages.append(message)

        def close_request(end: int) -> None:
            if pending:
                keys = tuple(pending)
                add(keys, end, False, lambda: ModelRequest(parts=[_request_part(key) for key in keys], metadata=dict(self._mark)))
                pending.clear()

        for index in range(start, len(chat)):
            message = chat[index]
            role = message["role"]
            text = _chat_text(message.get("content"))
            if role == "assistant":
                close_request(index)
                calls = tuple(
                    (call["id"], call["function"]["name"], call["function"]["arguments"]) for call in message.get("tool_calls") or []
                )
                for call_id, name, _ in calls:
                    tool_names[call_id] = name
                add(
                    ("assistant", text, calls),
                    index + 1,
                    True,
                    lambda: ModelResponse(parts=_response_parts(text, calls), metadata=dict(self._mark)),
                )
            elif role == "tool":
                call_id = message["tool_call_id"]
                pending.append(("tool", text, call_id, tool_names.get(call_id, "")))
            elif role in ("user", "system", "developer"):
                pending.append((role, text))
            else:
                raise ValueError(f"agentmem prepared a chat message with role {role!r}, which this adapter does not map")
        close_request(len(chat))


def _same_prefix(old: list[dict], new: list[dict]) -> int:
    """How many entries ``new`` begins with that read the same as ``old``'s.

    Found in C: by identity first (the engine hands back the objects of what
    it prepared before), then by equality from the first entry it made afresh.
    """
    same = list(map(operator.is_, old, new))
    kept = same.index(False) if False in same else len(same)
    equal = list(map(operator.eq, old[kept:], new[kept:]))
    return kept + (equal.index(False) if False in equal else len(equal))


def _request_part(key: tuple) -> Any:
    role, text = key[0], key[1]
    if role == "tool":
        return ToolReturnPart(key[3], text, tool_call_id=key[2])
    if role == "user":
        return CompactionPart(text) if text.startswith(SUMMARY_PREFIX) else UserPromptPart(text)
    return SystemPromptPart(text)


def _response_parts(text: str, calls: tuple) -> list[Any]:
    parts: list[Any] = [TextPart(text)] if text else []
    parts.extend(ToolCallPart(name, arguments, tool_call_id=call_id) for call_id, name, arguments in calls)
    return parts


def _chat_text(content: str | list | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(item.get("text", "") for item in content if isinstance(item, dict))
