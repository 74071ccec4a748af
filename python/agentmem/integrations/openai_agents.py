"""agentmem as the OpenAI Agents SDK's session memory.

:class:`AgentmemSession` implements the SDK's ``Session`` protocol
(``get_items``, ``add_items``, ``pop_item``, ``clear_session``), so it goes
wherever the SDK's own sessions go::

    from agents import Agent, RunConfig, Runner
    from agentmem.integrations.openai_agents import AgentmemSession

    session = AgentmemSession("user-42", store=".agentmem", model="gpt-4.1")
    result = await Runner.run(agent, "Fix the parser", session=session,
                              run_config=RunConfig(call_model_input_filter=session.input_filter()))

Every item the SDK adds is kept in agentmem's durable event log (the audit
history, never trimmed: :meth:`AgentmemSession.history`); what the SDK reads
back is the budget-fitted view agentmem prepares from it, as Responses
items. ``input_filter()`` refits that view before *every* model call of a
run, tool loop included, counting the agent's instructions and tools too.

The strategies are the ones of the SDK's session-memory patterns:

``"none"``
    everything, as it was said;
``"trimming"``
    the last ``max_turns`` user turns (and no more than the budget holds);
``"summarizing"``
    once more than ``context_limit`` turns are in the view, everything but
    the last ``keep_last_n_turns`` is summarized, shown as a shadow user line
    and the assistant's summary (the raw turns stay in the history);
``"compacting"``
    old tool outputs become ``⟦removed: <tool> <call id> …⟧`` placeholders,
    keeping tool names and call ids;
``"auto"``
    agentmem's tiers, in order, as far as the budget needs.

Long-term memory (MEMORY.md, what earlier sessions of the agent said) is
injected unless ``memory="off"``. Settings resolve request > conversation
> agent > none: the request layer is what :meth:`AgentmemSession.input_filter`
(one run) or ``get_items(limit=…)`` is given, the conversation layer what
:meth:`AgentmemSession.set_conversation_settings` set, the agent layer the
constructor's arguments, and a setting nobody chose is off (strategy
``"none"``, memory on as the engine injects it).

``pop_item`` and ``clear_session`` never delete: the conversation moves to
a new *revision* (an agentmem session named ``<session_id>.r<n>``) holding
the view without the popped item (or nothing, after a clear), and the
revision before it keeps every event and gets a ``retracted``/``cleared``
note, so :meth:`AgentmemSession.history` still shows what was popped. A new
revision starts from the raw events (a summary of the old one is made again
when the budget calls for it).

A streamed run adds its input to the session only after the first model
call; until then the filter sends the fitted view followed by those items
as they are.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import threading
from typing import TYPE_CHECKING, Any, Literal, Mapping, Sequence

import agentmem
from agentmem._calls import Blocking, EngineCalls, call

if TYPE_CHECKING:
    from agents.memory.session_settings import SessionSettings
    from agents.run_config import CallModelData, ModelInputData

__all__ = [
    "AgentmemSession",
    "ContextSettings",
    "EngineCalls",
    "InvalidSessionSettings",
    "RunNotInSession",
    "Strategy",
    "UnreadableItem",
]

Strategy = Literal["none", "trimming", "summarizing", "compacting", "auto"]
"""How the view is kept inside the budget (the SDK session-memory patterns' names)."""

_ENGINE_STRATEGY: dict[str, str] = {
    "none": "none",
    "trimming": "trim",
    "summarizing": "summarize",
    "compacting": "placeholder",
    "auto": "auto",
}

_SUMMARY_PREFIX = "[SUMMARY OF EARLIER CONVERSATION]"
"""How agentmem's summary of compacted turns starts in a prepared context."""

_FAKE_ID = "__fake_id__"
"""The id the SDK puts on items of models without item ids (Chat Completions): not an id."""

_REVISION_MARK = ".r"
"""Between a session id and its revision number in the agentmem session id."""

_CONFIG_HEADER = "# Written by agentmem.integrations.openai_agents for keep_last_n_turns.\n"


class InvalidSessionSettings(agentmem.InvalidInput):
    """Session settings that cannot be used together, or a value out of range; nothing was changed."""


class UnreadableItem(agentmem.InvalidInput):
    """An item the SDK handed over that agentmem cannot read; none of the batch was written."""


class RunNotInSession(agentmem.InvalidInput):
    """The model input of a run holds items this session was not given: pass this session to ``Runner.run``."""


@dataclasses.dataclass(frozen=True)
class ContextSettings:
    """One layer of settings (request, conversation or agent); ``None`` leaves a field to the layer below."""

    strategy: Strategy | None = None
    """How the view is kept inside the budget."""
    max_turns: int | None = None
    """``trimming``: the most user turns the view keeps."""
    keep_last_n_turns: int | None = None
    """``summarizing``: the turns kept verbatim after a summary (``trimming``: ``max_turns`` when that is unset)."""
    context_limit: int | None = None
    """``summarizing``: the turns the view may hold before the older ones are summarized."""
    memory: Literal["on", "off"] | None = None
    """Whether long-term memory (MEMORY.md, earlier sessions) is injected."""

    def __post_init__(self) -> None:
        if self.strategy is not None and self.strategy not in _ENGINE_STRATEGY:
            raise InvalidSessionSettings(
                f"unknown strategy {self.strategy!r}; use one of {', '.join(_ENGINE_STRATEGY)}"
            )
        for name in ("max_turns", "keep_last_n_turns", "context_limit"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise InvalidSessionSettings(f"{name} must be a whole number of turns, 1 or more, not {value!r}")
        if self.memory is not None and self.memory not in ("on", "off"):
            raise InvalidSessionSettings(f"memory is 'on' or 'off', not {self.memory!r}")

    def over(self, lower: "ContextSettings") -> "ContextSettings":
        """This layer, with ``lower`` filling what it leaves unset."""
        return ContextSettings(
            **{
                field.name: getattr(self, field.name) if getattr(self, field.name) is not None else getattr(lower, field.name)
                for field in dataclasses.fields(self)
            }
        )

    def checked(self) -> "ContextSettings":
        """These settings once resolved, refused when they contradict each other."""
        if (
            self.strategy == "summarizing"
            and self.context_limit is not None
            and self.keep_last_n_turns is not None
            and self.keep_last_n_turns > self.context_limit
        ):
            raise InvalidSessionSettings(
                f"keep_last_n_turns ({self.keep_last_n_turns}) is more than context_limit ({self.context_limit}): "
                "a summary would keep more turns than the view may hold; lower keep_last_n_turns"
            )
        return self


_NONE = ContextSettings(strategy="none")
"""The bottom layer: no strategy chosen anywhere."""


class AgentmemSession:
    """An OpenAI Agents SDK session kept by agentmem (the SDK's ``Session`` protocol).

    ``AgentmemSession(session_id, store=…)`` opens (or creates) the
    conversation ``session_id`` in ``store``, a data directory's path or an
    :class:`agentmem.Store` (``agent`` names the agent's memory when a path
    is given). ``model`` is the model the view is fitted for (its window
    and tokenizer come from agentmem's registry; ``context_window``,
    ``max_output_tokens``, ``safety_margin`` and ``trigger_ratio`` override
    the budget). ``compaction_timing="background"`` drafts a due compaction
    on a thread of its own while the model answers: the view that finds it
    due is sent as it is (still inside the budget) and the next one applies
    it, so a compaction does not stall the call that triggers it.
    ``strategy``, ``max_turns``, ``keep_last_n_turns``,
    ``context_limit`` and ``memory`` are the agent layer of the settings.
    ``session_settings`` is the SDK's own (its ``limit``). ``engine_calls``
    says where the engine works (:class:`EngineCalls`): by default in the
    event loop's thread when the call cannot take long and on a worker
    thread when it may (an append synced to disk, a compaction due), or
    always on a worker thread, or always in the event loop.

    The session holds the conversation's writer lock until :meth:`close`:
    another process resuming the conversation meanwhile gets
    :class:`agentmem.SessionLocked`.
    """

    session_settings: "SessionSettings | None"

    def __init__(
        self,
        session_id: str,
        *,
        store: str | os.PathLike[str] | agentmem.Store,
        agent: str | None = None,
        model: str = "gpt-4.1",
        strategy: Strategy | None = "auto",
        max_turns: int | None = None,
        keep_last_n_turns: int | None = None,
        context_limit: int | None = None,
        memory: Literal["on", "off"] | None = None,
        context_window: int | None = None,
        max_output_tokens: int | None = None,
        safety_margin: int | None = None,
        trigger_ratio: float | None = None,
        compaction_timing: Literal["inline", "background"] | None = None,
        session_settings: "SessionSettings | Mapping[str, Any] | None" = None,
        engine_calls: EngineCalls = EngineCalls.AUTO,
    ) -> None:
        if isinstance(store, agentmem.Store):
            if agent is not None and agent != store.agent:
                raise InvalidSessionSettings(
                    f"agent {agent!r} differs from the store's agent {store.agent!r}; "
                    "open the Store with that agent, or leave agent out"
                )
            self._store = store
        else:
            self._store = agentmem.Store(store, agent=agent or "default")
        self.session_id = session_id
        self.session_settings = _sdk_session_settings(session_settings)
        self.model = model
        self._agent_layer = ContextSettings(strategy, max_turns, keep_last_n_turns, context_limit, memory)
        self._conversation_layer = ContextSettings()
        self._budget = {
            key: value
            for key, value in (
                ("context_window", context_window),
                ("max_output_tokens", max_output_tokens),
                ("safety_margin", safety_margin),
                ("trigger_ratio", trigger_ratio),
            )
            if value is not None
        }
        self._compaction_timing = compaction_timing
        self._engine_calls = engine_calls
        self._append_blocking = Blocking.QUICK if self._store.durability == "os" else Blocking.MAY_BLOCK
        """An append waits for the disk unless syncs are left to the OS."""
        self._quick_view = False
        """Whether the next view is memory work only: one was prepared since the session opened and no compaction is due."""
        self._lock = threading.RLock()
        self._resolved: ContextSettings | None = None
        self._revision = _latest_revision(self._store, session_id)
        self._tail_turns: int | None = None
        self._shaped_by: str | None = None
        self._session = self._store.session(self._revision_id(self._revision))
        newest = [event for event in self._session.events() if _is_item_event(event)][-1:]
        self._last_item: tuple | None = _item_key(_item_of(_events_of_newest_item(newest))) if newest else None
        self.last_stats: dict | None = None
        """The engine's statistics of the last view prepared (``context_tokens``, ``input_budget``, ``actions``, ...)."""

    def __repr__(self) -> str:
        return f"<AgentmemSession {self.session_id!r} revision {self._revision} in {self._store.path!r}>"

    # The SDK's Session protocol.

    async def get_items(self, limit: int | None = None) -> list[dict]:
        """The budget-fitted view, as Responses input items; with ``limit``, its newest ``limit`` items.

        Long-term memory the engine put in the system prompt comes first, as
        a ``developer`` message. ``limit`` (the SDK's request-level
        setting; ``session_settings.limit`` when not given) never leaves a
        tool output without its call: an output whose call falls outside
        is left out too.
        """
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        return await call(self._engine_calls, self._view_blocking(), self.view, limit)

    async def add_items(self, items: list[Any]) -> None:
        """Appends the items to the durable history (all of them or, on a bad item, none)."""
        await call(self._engine_calls, self._append_blocking, self.add, items)

    async def pop_item(self) -> dict | None:
        """Removes the newest item from the view and returns it; ``None`` when the view holds none.

        The audit history keeps it: the conversation continues in a new
        revision without it, and the old revision records a ``retracted`` note.
        """
        return await asyncio.to_thread(self.pop)

    async def clear_session(self) -> None:
        """Empties the view; the history stays (the conversation continues in a new, empty revision)."""
        await asyncio.to_thread(self.clear)

    # Settings.

    def set_conversation_settings(self, strategy: Strategy | None = None, **settings: Any) -> ContextSettings:
        """Sets this conversation's layer (over the agent's, under a request's); the settings now in force.

        ``settings`` are :class:`ContextSettings`' other fields (``max_turns``,
        ``keep_last_n_turns``, ``context_limit``, ``memory``).
        """
        layer = _layer(strategy, settings)
        resolved = layer.over(self._agent_layer).over(_NONE).checked()
        self._conversation_layer = layer
        self._resolved = None
        return resolved

    def settings(self, request: ContextSettings | None = None) -> ContextSettings:
        """The settings a call with ``request`` works with: request > conversation > agent > none."""
        if request is None:
            if self._resolved is None:
                self._resolved = self.settings(ContextSettings())
            return self._resolved
        return request.over(self._conversation_layer).over(self._agent_layer).over(_NONE).checked()

    def input_filter(self, strategy: Strategy | None = None, **settings: Any):
        """A ``RunConfig(call_model_input_filter=…)`` refitting the input before every model call of a run.

        ``strategy`` and ``settings`` (:class:`ContextSettings`' fields) are
        the request layer, for the runs given this filter. The model sees agentmem's view of the whole conversation,
        the run's own tool calls and outputs included, fitted to the budget
        with the agent's instructions and tools counted; the agent's
        instructions come back with long-term memory added. The run must
        have this session (:class:`RunNotInSession` otherwise).
        """
        request = _layer(strategy, settings)

        async def call_model_input_filter(data: "CallModelData[Any]") -> "ModelInputData":
            from agents.run_config import ModelInputData

            tools = _agent_tools(data.agent)
            instructions, items = await call(
                self._engine_calls,
                self._view_blocking(),
                self._fit_run_input,
                data.model_data.input,
                data.model_data.instructions,
                tools,
                request,
            )
            return ModelInputData(input=items, instructions=instructions)

        return call_model_input_filter

    # The same, synchronously.

    def view(self, limit: int | None = None, request: ContextSettings | None = None) -> list[dict]:
        """:meth:`get_items`, synchronously (``request`` is a request layer of settings)."""
        with self._lock:
            prepared, items = self._prepare(self.settings(request), system=None, tools=None)
        memory = prepared.get("instructions")
        if memory:
            items = [{"role": "developer", "content": memory}] + items
        if limit is not None:
            items = _newest(items, limit)
        return items

    def add(self, items: Sequence[Any]) -> dict:
        """:meth:`add_items`, synchronously; the engine's report (``appended``, ``duplicates``, ...)."""
        plain = [_plain_item(item, index) for index, item in enumerate(items)]
        if not plain:
            return {"appended": 0, "duplicates": 0, "evicted": 0, "compaction_due": False}
        with self._lock:
            try:
                report = self._session.ingest(plain, format="openai-responses")
            except agentmem.BadShape as error:
                raise _unreadable(error) from error
            self._last_item = _item_key(plain[-1])
            if report["compaction_due"]:
                self._quick_view = False
        return report

    def pop(self) -> dict | None:
        """:meth:`pop_item`, synchronously."""
        with self._lock:
            events = [event for event in self._session.events() if _is_item_event(event)]
            if not events:
                return None
            popped = _events_of_newest_item(events)
            kept = events[: len(events) - len(popped)]
            self._new_revision(kept, note=f"retracted: {_describe(popped)}")
            self._last_item = _item_key(_item_of(_events_of_newest_item(kept))) if kept else None
            return _item_of(popped)

    def clear(self) -> None:
        """:meth:`clear_session`, synchronously."""
        with self._lock:
            self._new_revision([], note="cleared")
            self._last_item = None

    # Beyond the protocol.

    @property
    def store(self) -> agentmem.Store:
        """The agentmem store holding the conversation."""
        return self._store

    @property
    def agentmem_session(self) -> agentmem.Session:
        """The agentmem session of the current revision (the view is prepared from it)."""
        return self._session

    def revisions(self) -> list[str]:
        """The agentmem session ids of this conversation's revisions, oldest first."""
        return [self._revision_id(number) for number in range(self._revision + 1)]

    def history(self) -> list[dict]:
        """The audit history: every event of every revision, once, oldest first, popped items and notes included."""
        with self._lock:
            seen: set[str] = set()
            history: list[dict] = []
            for number in range(self._revision + 1):
                session = (
                    self._session if number == self._revision else self._store.read_session(self._revision_id(number))
                )
                for event in session.events():
                    if event["id"] not in seen:
                        seen.add(event["id"])
                        history.append(event)
            return history

    def stats(self) -> dict:
        """Where the conversation stands against the budget (the engine's context statistics), changing nothing."""
        with self._lock:
            return self._session.context(self.model, "openai-responses", **self._budget)

    def close(self) -> None:
        """Releases the conversation's writer lock; the session cannot be used after."""
        with self._lock:
            self._session.close()

    # Internals.

    def _view_blocking(self) -> Blocking:
        """Whether preparing the next view may take long (a compaction due, the session just opened or reopened)."""
        return Blocking.QUICK if self._quick_view and self._resolved is not None else Blocking.MAY_BLOCK

    def _revision_id(self, number: int) -> str:
        return self.session_id if number == 0 else f"{self.session_id}{_REVISION_MARK}{number}"

    def _prepare(
        self, settings: ContextSettings, system: str | None, tools: list[dict] | None
    ) -> tuple[agentmem.Prepared, list[dict]]:
        """The prepared payload for ``settings``, and its input items once ``trimming``'s turn limit is applied."""
        strategy = settings.strategy or "none"
        if self._shaped_by not in (None, strategy):
            # Trimming and placeholders shrink the open session's working
            # transcript; another strategy starts again from the log.
            self._reopen()
        self._shaped_by = strategy
        if strategy == "summarizing":
            self._keep_tail(settings.keep_last_n_turns)
        arguments: dict[str, Any] = dict(self._budget, strategy=_ENGINE_STRATEGY[strategy], system=system, tools=tools)
        if settings.memory is not None:
            arguments["memory"] = settings.memory
        if self._compaction_timing is not None:
            arguments["compaction_timing"] = self._compaction_timing
        self._quick_view = False
        prepared = self._session.prepare(self.model, "openai-responses", **arguments)
        items = prepared["input"]
        self.last_stats = prepared.stats
        if strategy == "summarizing" and settings.context_limit is not None:
            if _turns_since_summary(items) > settings.context_limit:
                # Just past the trigger: the engine summarizes under the
                # summarize strategy now, leaving the configured tail raw.
                stats = prepared.stats
                ratio = max(stats["context_tokens"] - 1, 1) / stats["input_budget"]
                prepared = self._session.prepare(
                    self.model, "openai-responses", **dict(arguments, trigger_ratio=min(ratio, 1.0))
                )
                items = prepared["input"]
                self.last_stats = prepared.stats
        if strategy == "trimming":
            turns = settings.max_turns or settings.keep_last_n_turns
            if turns is not None:
                items = _last_turns(items, turns)
        self._quick_view = not self.last_stats["compaction_due"]
        return prepared, items

    def _keep_tail(self, keep_last_n_turns: int | None) -> None:
        """Makes the engine keep ``keep_last_n_turns`` turns verbatim when it summarizes.

        The engine reads it from the session's ``config.toml`` (its
        conversation layer) when the session opens, so the file is written
        and the session reopened when the number changes.
        """
        if keep_last_n_turns is None or keep_last_n_turns == self._tail_turns:
            return
        path = os.path.join(
            self._store.path, "agents", self._store.agent, "sessions", self._session.id, "config.toml"
        )
        if os.path.exists(path):
            with open(path, encoding="utf-8") as existing:
                text = existing.read()
            if not text.startswith(_CONFIG_HEADER):
                raise InvalidSessionSettings(
                    f"{path} is the session's own configuration: set [context] raw_tail_turns = "
                    f"{keep_last_n_turns - 1} there instead of keep_last_n_turns"
                )
        # The turn in progress is always kept, so the engine's tail is one less.
        text = f"{_CONFIG_HEADER}[context]\nraw_tail_turns = {keep_last_n_turns - 1}\n"
        os.makedirs(os.path.dirname(path), exist_ok=True)
        temporary = path + ".tmp"
        with open(temporary, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
        self._reopen()
        self._tail_turns = keep_last_n_turns

    def _reopen(self) -> None:
        """Closes and reopens the current revision: the engine reads its configuration and log afresh."""
        session_id = self._session.id
        self._session.close()
        self._session = self._store.resume_session(session_id)
        self._quick_view = False

    def _fit_run_input(
        self,
        run_input: list[Any],
        instructions: str | None,
        tools: list[dict],
        request: ContextSettings,
    ) -> tuple[str | None, list[dict]]:
        """The run's next model input: the fitted view, then what the SDK has not added yet.

        A streamed run adds the turn's input after its first model call, so
        the items after the session's newest one are sent as they are.
        """
        plain = [_plain_item(item, index) for index, item in enumerate(run_input)]
        keys = [_item_key(item) for item in plain]
        with self._lock:
            if self._last_item is None:
                unsaved = plain
            elif self._last_item in keys:
                unsaved = plain[len(keys) - keys[::-1].index(self._last_item) :]
            else:
                raise RunNotInSession(
                    "the model input does not hold this session's newest item; run the agent with "
                    "session=<this session> so the SDK adds the run's items to it"
                )
            prepared, items = self._prepare(self.settings(request), system=instructions, tools=tools or None)
        return prepared.get("instructions") or instructions, items + unsaved

    def _new_revision(self, events: list[dict], note: str) -> None:
        """Moves the conversation to a new revision holding ``events``; the old one keeps all and gets ``note``."""
        number = self._revision + 1
        new_id = self._revision_id(number)
        # Turns and order are the new log's to assign; an evicted output's
        # file is the old session's, and the event carries its full text.
        copied = [
            {key: value for key, value in event.items() if key not in ("turn_id", "seq", "tool_result_ref")}
            for event in events
        ]
        successor = self._store.create_session(new_id)
        try:
            if copied:
                successor.ingest(copied)
        except BaseException:
            successor.close()
            self._store.delete_session(new_id)
            raise
        self._session.ingest(
            [
                {
                    "trace_type": "system",
                    "content": f"⟦{note}; the conversation continues in session {new_id}⟧",
                    "tags": ["openai-agents", note.split(":", 1)[0]],
                }
            ]
        )
        self._session.close()
        self._session = successor
        self._revision = number
        self._quick_view = False
        self._tail_turns = None
        self._shaped_by = None


def _layer(strategy: Strategy | None, settings: Mapping[str, Any]) -> ContextSettings:
    """A layer of settings from keyword arguments, naming any it does not know."""
    unknown = sorted(set(settings) - {field.name for field in dataclasses.fields(ContextSettings)})
    if unknown:
        raise InvalidSessionSettings(
            f"unknown setting {', '.join(unknown)}; use max_turns, keep_last_n_turns, context_limit or memory"
        )
    return ContextSettings(strategy=strategy, **settings)


def _latest_revision(store: agentmem.Store, session_id: str) -> int:
    """The newest revision of ``session_id`` in ``store`` (0 when it has never been popped or cleared)."""
    number = 0
    while True:
        try:
            store.session_meta(f"{session_id}{_REVISION_MARK}{number + 1}")
        except agentmem.SessionNotFound:
            return number
        number += 1


def _sdk_session_settings(value: Any) -> "SessionSettings | None":
    if value is None:
        return None
    from agents.memory.session_settings import SessionSettings, coerce_session_settings

    if isinstance(value, (SessionSettings, Mapping)):
        return coerce_session_settings(value)
    raise InvalidSessionSettings(f"session_settings is the SDK's SessionSettings or a dict, not {type(value).__name__}")


def _agent_tools(agent: Any) -> list[dict]:
    """The agent's function tools as ``{name, description, parameters}``, for counting."""
    tools = []
    for tool in getattr(agent, "tools", None) or []:
        schema = getattr(tool, "params_json_schema", None)
        if schema is not None:
            tools.append({"name": tool.name, "description": getattr(tool, "description", "") or "", "parameters": schema})
    return tools


# Items and events.


def _plain_item(item: Any, index: int) -> dict:
    """``item`` as a dict without the SDK's placeholder id (a dict handed over is not copied unless it has one)."""
    if type(item) is dict:
        plain = item
    else:
        dump = getattr(item, "model_dump", None)
        plain = dump(mode="json", exclude_none=True) if callable(dump) else item
        if not isinstance(plain, Mapping):
            raise UnreadableItem(f"item {index} of the batch is a {type(item).__name__}, not a Responses item (a dict)")
    if plain.get("id") == _FAKE_ID:
        plain = {key: value for key, value in plain.items() if key != "id"}
    return plain


def _item_key(item: Mapping[str, Any]) -> tuple:
    """What tells an item apart from the ones around it, for matching a run's input to the session."""
    kind = item.get("type") or ("message" if "role" in item else "")
    if item.get("call_id"):
        return (kind, item["call_id"])
    if kind == "message":
        # A prepared view's messages carry no ids: their words tell them apart.
        return (kind, item.get("role"), _text(item.get("content")))
    return (kind, item.get("id"))


def _unreadable(error: agentmem.BadShape) -> UnreadableItem:
    """The engine's refusal of a batch's item, named as the batch's item."""
    position = re.search(r"message (\d+)", str(error))
    where = f"item {position.group(1)} of the batch" if position else "an item of the batch"
    return UnreadableItem(f"{where} cannot be read, so none of the batch was written: {error}")


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part.get("text") or part.get("refusal") or "" if isinstance(part, Mapping) else str(part) for part in content
        )
    return json.dumps(content, ensure_ascii=False)


_ITEM_TRACE_TYPES = {"user", "assistant", "system", "tool_call", "tool_result", "reasoning"}


def _is_item_event(event: Mapping[str, Any]) -> bool:
    """Whether ``event`` came from an item (not a summary, a marker or a working-memory update)."""
    return event.get("trace_type") in _ITEM_TRACE_TYPES and "openai-agents" not in (event.get("tags") or [])


def _events_of_newest_item(events: list[dict]) -> list[dict]:
    """The events the newest item made: one, or a call and its result when the provider ran the tool (same id)."""
    newest = events[-1]
    if (
        newest.get("trace_type") == "tool_result"
        and len(events) > 1
        and events[-2].get("trace_type") == "tool_call"
        and events[-2].get("tool_call_id") == newest.get("tool_call_id")
        and events[-2].get("id") == newest.get("tool_call_id")
    ):
        return events[-2:]
    return [newest]


def _item_of(events: list[dict]) -> dict:
    """The Responses item ``events`` were made from."""
    event = events[0]
    kind = event["trace_type"]
    if kind == "reasoning" and isinstance(event.get("opaque"), Mapping):
        return dict(event["opaque"])
    if kind == "tool_call":
        arguments = event.get("tool_args")
        return {
            "type": "function_call",
            "call_id": event["tool_call_id"],
            "name": event.get("tool_name", ""),
            "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
        } | ({"id": event["id"]} if not event["id"].startswith("ev_") else {})
    if kind == "tool_result":
        return {"type": "function_call_output", "call_id": event["tool_call_id"], "output": event.get("content", "")}
    role = {"user": "user", "assistant": "assistant", "system": "system"}.get(kind, "assistant")
    if role == "assistant":
        return {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": event.get("content", ""), "annotations": []}],
        } | ({"id": event["id"]} if not event["id"].startswith("ev_") else {})
    return {"type": "message", "role": role, "content": event.get("content", "")}


def _describe(events: list[dict]) -> str:
    event = events[0]
    what = event.get("tool_name") or (event.get("content") or "")[:60]
    return f"{event['trace_type']} {event['id']} ({what})"


# The view.


def _is_user(item: Mapping[str, Any]) -> bool:
    return item.get("role") == "user" and item.get("type", "message") == "message"


def _turns_since_summary(items: list[dict]) -> int:
    """User turns after the newest summary in a view (all of them when there is none)."""
    start = 0
    for index, item in enumerate(items):
        if item.get("role") in ("assistant", "user") and _text(item.get("content")).startswith(_SUMMARY_PREFIX):
            start = index + 1
    return sum(1 for item in items[start:] if _is_user(item))


def _last_turns(items: list[dict], turns: int) -> list[dict]:
    """The view from the ``turns``-th newest user message on (whole turns, so tool pairs stay together)."""
    starts = [index for index, item in enumerate(items) if _is_user(item)]
    if len(starts) <= turns:
        return items
    return items[starts[-turns] :]


def _newest(items: list[dict], limit: int) -> list[dict]:
    """The newest ``limit`` items, without an output whose call was cut off."""
    if limit <= 0:
        return []
    kept = items[-limit:]
    calls = {item.get("call_id") for item in kept if item.get("type") in ("function_call", "custom_tool_call")}
    return [
        item
        for item in kept
        if not (item.get("type") in ("function_call_output", "custom_tool_call_output") and item.get("call_id") not in calls)
    ]
