"""agentmem for LangGraph and LangChain agents.

Two pieces, each over a real :class:`agentmem.Store`:

- :class:`AgentmemMiddleware`: agentmem's context management for the agent
  loop. As a middleware of ``langchain.agents.create_agent`` (what LangGraph
  1.x recommends; ``create_react_agent`` is deprecated in its favour) it wraps
  every model call; for graphs still built with
  ``langgraph.prebuilt.create_react_agent`` the same object gives a
  :meth:`~AgentmemMiddleware.pre_model_hook` (and a
  :meth:`~AgentmemMiddleware.post_model_hook`). Before each call it appends
  the graph's new messages to the agentmem session of the run's thread, then
  has the engine prepare the model's view: inside the token budget, tool
  calls and results paired, big outputs cut, older turns compacted into a
  summary, MEMORY.md and recalled facts in the system prompt, working memory
  kept. The graph's state keeps its messages as they are; only the model
  sees the fitted view (``llm_input_messages`` for the hook, the request's
  messages for the middleware). When the provider still refuses a call as
  too long (a model whose real window is smaller than the registry says),
  the middleware has agentmem recover (compact, then trim under the window
  the refusal names) and makes the call once more; the session's later
  calls keep to that window.
- :class:`AgentmemStore`: a LangGraph ``BaseStore`` over agentmem's
  long-term memory, for ``create_agent(store=…)`` and any graph's
  ``store``: items become agentmem facts, recalled into the agent's
  prompts, and ``search`` is agentmem's top-k recall.

The session of a run is its ``thread_id`` (``config={"configurable":
{"thread_id": …}}``), or the ``session`` given to the middleware. The events
keep the messages' ids, so a message handed over again is stored once, and a
later process that runs the same thread, even without a checkpointer, gives
the model the whole conversation from agentmem.

Quick start::

    import agentmem
    from langchain.agents import create_agent
    from agentmem.integrations.langgraph import AgentmemMiddleware, AgentmemStore

    store = agentmem.Store(".agentmem")
    with AgentmemMiddleware(store, toolset="memory") as context, AgentmemStore(store) as memory:
        agent = create_agent("openai:gpt-4.1", tools, middleware=[context], store=memory)
        agent.invoke({"messages": [("user", "fix the build")]}, {"configurable": {"thread_id": "build"}})
        print(context.last_stats["build"]["context_tokens"])   # what the model got, of its budget

``create_react_agent(model, tools, pre_model_hook=context.pre_model_hook)``
with ``AgentmemMiddleware(store, model="gpt-4.1", system=…, counted_tools=tools)``
does the same for graphs built the older way.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import uuid
from datetime import datetime, timezone
from typing import Any, Awaitable, Callable, Iterable, Literal, Mapping, Sequence

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, SystemMessage, convert_to_messages
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.config import get_config
from langgraph.errors import GraphBubbleUp
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from langgraph.store.base.embed import get_text_at_path

import agentmem
from agentmem.integrations.langchain import events_from_messages

__all__ = ["AgentmemMiddleware", "AgentmemStore", "NoSession", "memory_tools"]


class NoSession(ValueError):
    """The middleware cannot tell which agentmem session a run belongs to."""

    def __init__(self) -> None:
        super().__init__(
            "no agentmem session for this run: run the graph with "
            "config={'configurable': {'thread_id': ...}}, or give AgentmemMiddleware(store, session=...)"
        )


class AgentmemMiddleware(AgentMiddleware):
    """agentmem's context management around every model call of a LangGraph agent.

    ``store`` is the agentmem store the sessions live in. ``model`` is the
    model name the budget is taken from (the registry's window and output
    limit); the middleware reads it from the request's chat model when left
    out (the hook has no model to read it from, and needs it). ``system`` is
    the system prompt for :meth:`pre_model_hook` (``create_react_agent``'s
    ``prompt`` would come after the fitted view, beside agentmem's own system
    message: give it here instead); the middleware takes the agent's
    ``system_prompt`` from the request. ``toolset="memory"`` gives the agent
    agentmem's tools (see :func:`memory_tools`): ``create_agent`` adds them by
    itself; for ``create_react_agent`` pass ``[*your_tools,
    *middleware.tools]``. ``counted_tools`` are the tools of a
    ``create_react_agent`` graph, which the hook counts against the budget
    (the middleware counts the request's).
    ``session`` pins every run to one agentmem session instead of its
    thread. The remaining settings are :meth:`agentmem.Session.prepare`'s and
    win over the store's ``config.toml`` for these calls.

    The model's view is built from the session, not from the graph's state:
    other middleware that rewrites the state's messages (LangChain's
    summarization, trimming) changes what the graph keeps, not what the model
    sees; agentmem's own strategies do that part (``strategy=``).

    Sessions are opened for writing on first use and held until
    :meth:`close` (or the end of a ``with`` block), so one process runs a
    thread at a time; another gets :class:`agentmem.SessionLocked`.
    """

    def __init__(
        self,
        store: agentmem.Store,
        *,
        model: str | None = None,
        system: str | None = None,
        toolset: Literal["none", "memory"] = "none",
        counted_tools: Sequence[Any] = (),
        session: str | None = None,
        strategy: Literal["auto", "none", "trim", "summarize", "placeholder"] | None = None,
        memory: Literal["on", "off"] | None = None,
        context_window: int | None = None,
        max_output_tokens: int | None = None,
        safety_margin: int | None = None,
        trigger_ratio: float | None = None,
    ) -> None:
        super().__init__()
        self.store = store
        self.model = model
        self.system = system
        self.tools = memory_tools(self) if toolset == "memory" else []
        """The tools the middleware adds to a ``create_agent`` agent (``toolset="memory"``)."""
        self.tool_schemas = [_tool_schema(tool) for tool in [*counted_tools, *self.tools]]
        self.session_id = session
        self.settings = {
            key: value
            for key, value in {
                "strategy": strategy,
                "memory": memory,
                "context_window": context_window,
                "max_output_tokens": max_output_tokens,
                "safety_margin": safety_margin,
                "trigger_ratio": trigger_ratio,
            }.items()
            if value is not None
        }
        self._lock = threading.Lock()
        self._sessions: dict[str, agentmem.Session] = {}
        self._stored: dict[str, set[str]] = {}
        self._windows: dict[str, int] = {}
        self._views: dict[str, tuple[list[dict], list[BaseMessage]]] = {}
        self.last_stats: dict[str, dict] = {}
        """The stats of the last view prepared for each session (tokens, budget, actions)."""

    # Sessions and persistence.

    def session(self, thread_id: str | None = None) -> agentmem.Session:
        """The open agentmem session of ``thread_id`` (the current run's thread when left out)."""
        session_id = self.session_id or thread_id or _current_thread()
        if session_id is None:
            raise NoSession()
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                session = self.store.session(session_id)
                self._sessions[session_id] = session
                self._stored[session_id] = set()
            return session

    def persist(self, session: agentmem.Session, messages: Iterable[BaseMessage]) -> None:
        """Appends the messages the session does not hold yet, in order, as one batch.

        The graph's state gives every message an id; one without (put in by another
        middleware for one call) gets an id derived from its content, so handing it
        over again at every call stores it once.
        """
        stored = self._stored[session.id]
        new = []
        for message in messages:
            if message.id is None:
                message.id = _content_id(message)
            if message.id not in stored:
                new.append(message)
        if new:
            session.ingest(events_from_messages(new))
            stored.update(message.id for message in new)

    def fit(
        self,
        messages: Sequence[BaseMessage],
        *,
        system: str | None,
        tools: Sequence[Mapping[str, Any]],
        model: str,
        thread_id: str | None = None,
    ) -> list[BaseMessage]:
        """Persists ``messages`` and returns the view of the whole session the model should get.

        The view starts with the system message (``system`` with MEMORY.md,
        project files and recalled memory); tool calls and results are paired.
        """
        session = self.session(thread_id)
        self.persist(session, messages)
        prepared = session.prepare(
            model=model, target="openai-chat", system=system, tools=tools, **self._settings_of(session)
        )
        self.last_stats[session.id] = prepared.stats
        return self._view(session.id, prepared["messages"])

    def _view(self, session_id: str, payload: list[dict]) -> list[BaseMessage]:
        """``payload``'s messages as LangChain messages. A view repeats the one before it from
        its start (agentmem keeps the prefix stable for the providers' caches), so the
        messages of the common prefix are reused and only the rest converted."""
        before, converted = self._views.get(session_id, ([], []))
        same = 0
        for old, new in zip(before, payload):
            if old != new:
                break
            same += 1
        view = converted[:same] + convert_to_messages(payload[same:])
        self._views[session_id] = (payload, view)
        return list(view)

    def recover(
        self,
        error: Exception,
        *,
        system: str | None,
        tools: Sequence[Mapping[str, Any]],
        model: str,
        thread_id: str | None = None,
    ) -> list[BaseMessage]:
        """A smaller view after the provider refused the last call as too long.

        Raises ``error`` again when it is not a context overflow.
        """
        body, status = _provider_error(error)
        session = self.session(thread_id)
        try:
            prepared = session.recover_overflow(
                body, model, "openai-chat", status=status, system=system, tools=tools, **self._settings_of(session)
            )
        except agentmem.NotAnOverflow:
            raise error from None
        self.last_stats[session.id] = prepared.stats
        # The window the engine read from the refusal (in its own count) holds for the
        # session's later calls too, so they fit the provider from the start.
        self._windows[session.id] = prepared.stats["budget"]["context_window"]
        return self._view(session.id, prepared["messages"])

    def _settings_of(self, session: agentmem.Session) -> dict:
        window = self._windows.get(session.id)
        return self.settings if window is None else {**self.settings, "context_window": window}

    def compact(self, focus: str | None = None, thread_id: str | None = None) -> dict:
        """Compacts the thread's session now (``/compact [focus]``): older turns folded into a
        summary that favours ``focus``, their events archived. The report: tokens before and
        after, ..."""
        return self.session(thread_id).compact(focus)

    def close(self) -> None:
        """Releases every session this middleware opened."""
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions, self._stored, self._windows, self._views = {}, {}, {}, {}
        for session in sessions:
            session.close()

    def __enter__(self) -> "AgentmemMiddleware":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # langchain.agents.create_agent

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse | AIMessage:
        """Sends the fitted view instead of the state's messages, and persists the answer."""
        model, system, tools = self._request_settings(request)
        view = self.fit(request.messages, system=system, tools=tools, model=model)
        try:
            response = handler(_with_view(request, view))
        except GraphBubbleUp:  # LangGraph's own control flow (interrupts), not the provider's
            raise
        except Exception as error:  # the provider's refusal, whatever its client's class
            view = self.recover(error, system=system, tools=tools, model=model)
            response = handler(_with_view(request, view))
        self.persist(self.session(), _answer_messages(response))
        return response

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse | AIMessage:
        """:meth:`wrap_model_call` for async agents: the engine's work runs on a worker thread."""
        model, system, tools = self._request_settings(request)
        thread_id = self.session_id or _current_thread()
        view = await asyncio.to_thread(
            self.fit, request.messages, system=system, tools=tools, model=model, thread_id=thread_id
        )
        try:
            response = await handler(_with_view(request, view))
        except GraphBubbleUp:
            raise
        except Exception as error:
            view = await asyncio.to_thread(
                self.recover, error, system=system, tools=tools, model=model, thread_id=thread_id
            )
            response = await handler(_with_view(request, view))
        session = self.session(thread_id)
        await asyncio.to_thread(self.persist, session, _answer_messages(response))
        return response

    def _request_settings(self, request: ModelRequest) -> tuple[str, str | None, list[dict]]:
        model = self.model or _model_name(request.model)
        system = request.system_message.text if request.system_message is not None else self.system
        tools = [_tool_schema(tool) for tool in request.tools] or self.tool_schemas
        return model, system, tools

    # langgraph.prebuilt.create_react_agent

    def pre_model_hook(self, state: Any, config: RunnableConfig) -> dict:
        """``create_react_agent(…, pre_model_hook=middleware.pre_model_hook)``.

        Persists the state's new messages and returns the fitted view as
        ``llm_input_messages``, leaving the state's ``messages`` as they are.
        """
        if self.model is None:
            raise ValueError("pre_model_hook needs the model's name: AgentmemMiddleware(store, model='gpt-4.1', …)")
        view = self.fit(
            _state_messages(state),
            system=self.system,
            tools=self.tool_schemas,
            model=self.model,
            thread_id=_thread_of(config),
        )
        return {"llm_input_messages": view}

    def post_model_hook(self, state: Any, config: RunnableConfig) -> dict:
        """``create_react_agent(…, post_model_hook=middleware.post_model_hook)``: persists the
        model's answer at once (with its usage), not at the next call. Changes no state."""
        session = self.session(_thread_of(config))
        self.persist(session, _state_messages(state)[-1:])
        return {}


def memory_tools(middleware: AgentmemMiddleware) -> list[BaseTool]:
    """agentmem's tools for the agent's model, over the middleware's store and the run's session:

    - ``read_memory``, ``write_memory(content)``, ``update_memory(old_text, new_text)``:
      the agent's MEMORY.md, which is in every system prompt;
    - ``search_conversation_history(query, limit)``: the agent's whole history, every session
      and what compaction archived, ranked by relevance;
    - ``read_evicted_output(call_id, offset, limit)``: a page of a tool output too big for
      the context (the model saw its first and last lines and the call id);
    - ``get_working_memory``, ``update_working_memory(patch, expected_version)``: the
      session's task state, shown to the model at every call and kept through compaction.

    A refused edit (text not found, found twice, a stale version) or an unknown call id is the tool's answer,
    with what to do, so the model can correct itself.
    """
    store = middleware.store

    def read_memory() -> str:
        """Read your long-term memory notebook (MEMORY.md)."""
        return store.read_memory()["content"] or "(MEMORY.md is empty)"

    def write_memory(content: str) -> str:
        """Append lines to your long-term memory notebook (MEMORY.md): facts worth keeping across sessions."""
        store.write_memory(content)
        return "Saved to MEMORY.md."

    def update_memory(old_text: str, new_text: str) -> str:
        """Replace text that occurs exactly once in MEMORY.md with new text."""
        try:
            store.update_memory(old_text, new_text)
        except agentmem.EditRefused as refused:
            return f"Not changed: {refused}"
        return "MEMORY.md updated."

    def search_conversation_history(query: str, limit: int = 5) -> str:
        """Search everything said in this and earlier conversations, including what was compacted away."""
        hits = store.search(query, limit=max(1, min(limit, 20)))
        if not hits:
            return f"Nothing in the history matches {query!r}."
        return "\n".join(f"[{hit['session']} {hit['turn_id']} {hit['role']}] {hit['excerpt']}" for hit in hits)

    def read_evicted_output(call_id: str, offset: int = 0, limit: int = 200) -> str:
        """Read lines of a tool output that was too big for the context, by its tool call id."""
        try:
            page = middleware.session().evicted(call_id, offset, max(1, min(limit, 1000)))
        except agentmem.EvictedNotFound as missing:
            return f"No such output: {missing}"
        more = f"\n(lines {offset}-{offset + page['lines_returned']} of {page['total_lines']}"
        more += f"; read on from offset {offset + page['lines_returned']})" if page["has_more"] else ")"
        return page["text"] + more

    def get_working_memory() -> str:
        """Read this task's working memory: the JSON state you keep (plan, files, findings) and its version."""
        state = middleware.session().state()
        return json.dumps({"version": state["version"], "document": state["document"]}, ensure_ascii=False)

    def update_working_memory(patch: dict | list, expected_version: int | None = None) -> str:
        """Change this task's working memory with a JSON Merge Patch (an object; null removes a field) or a
        JSON Patch (a list of operations); with expected_version, only if nobody changed it since."""
        try:
            updated = middleware.session().update_state(patch, expected_version=expected_version)
        except (agentmem.StaleVersion, agentmem.InvalidPatch, agentmem.SchemaViolation) as refused:
            return f"Not changed: {refused}"
        return f"Working memory is at version {updated['version']}."

    functions = (
        read_memory,
        write_memory,
        update_memory,
        search_conversation_history,
        read_evicted_output,
        get_working_memory,
        update_working_memory,
    )
    return [StructuredTool.from_function(function) for function in functions]


def _with_view(request: ModelRequest, view: list[BaseMessage]) -> ModelRequest:
    system, messages = _split_system(view)
    return request.override(system_message=system, messages=messages)


def _split_system(view: list[BaseMessage]) -> tuple[SystemMessage | None, list[AnyMessage]]:
    if view and isinstance(view[0], SystemMessage):
        return view[0], list(view[1:])
    return None, list(view)


def _answer_messages(response: Any) -> list[BaseMessage]:
    """The messages of a model call's result, each with an id (set now when the model gave
    none, so the state and the session agree on it)."""
    inner = getattr(response, "model_response", response)
    messages = [inner] if isinstance(inner, BaseMessage) else list(getattr(inner, "result", []))
    for message in messages:
        if message.id is None:
            message.id = f"lc-run-{uuid.uuid4()}"
    return messages


def _content_id(message: BaseMessage) -> str:
    tool_calls = [call.get("id") for call in getattr(message, "tool_calls", None) or []]
    identity = [message.type, message.content, tool_calls, getattr(message, "tool_call_id", None)]
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()
    return f"lc-content-{digest[:32]}"


def _state_messages(state: Any) -> list[BaseMessage]:
    messages = state["messages"] if isinstance(state, Mapping) else state.messages
    return list(messages)


def _thread_of(config: Mapping[str, Any] | None) -> str | None:
    configurable = (config or {}).get("configurable") or {}
    thread = configurable.get("thread_id")
    return None if thread is None else str(thread)


def _current_thread() -> str | None:
    try:
        return _thread_of(get_config())
    except RuntimeError:  # called outside a runnable context
        return None


def _model_name(model: Any) -> str:
    for attribute in ("model_name", "model", "model_id"):
        name = getattr(model, attribute, None)
        if isinstance(name, str) and name:
            return name
    raise ValueError(f"cannot read a model name from {type(model).__name__}: give AgentmemMiddleware(store, model='…')")


def _tool_schema(tool: Any) -> dict:
    """A tool (a LangChain tool, a function, a schema) in OpenAI's function shape."""
    if isinstance(tool, Mapping) and "name" in tool and "parameters" in tool:
        return dict(tool)
    return convert_to_openai_tool(tool)


def _provider_error(error: Exception) -> tuple[str, int]:
    """The provider's error text and HTTP status, from an SDK exception (OpenAI's, Anthropic's
    and httpx's carry the response)."""
    status = getattr(error, "status_code", None)
    response = getattr(error, "response", None)
    body = None
    if response is not None:
        status = status or getattr(response, "status_code", None)
        try:
            body = response.text
        except Exception:  # a streamed response already consumed
            body = None
    if body is None:
        raw = getattr(error, "body", None)
        body = json.dumps(raw) if isinstance(raw, (dict, list)) else str(raw if raw is not None else error)
    return body, int(status or 400)


class AgentmemStore(BaseStore):
    """A LangGraph ``BaseStore`` over agentmem's long-term memory.

    Each item (``namespace``, ``key``, ``value``) is kept twice, to two ends:

    - **as an agentmem fact** of the store's agent: the text of the value
      (the ``index`` fields of ``put``, else its string values, a lone one as
      it is, several as ``field: value; …``), tagged ``langgraph:<namespace
      joined by dots>`` (labels cannot hold dots). Facts are what agentmem
      recalls into the agent's prompts and what :meth:`search` ranks; like
      every fact they are redacted (credentials, emails, …) and deduplicated:
      two items of the same text share one fact. ``put(…, index=False)``
      makes no fact.
    - **in the index**, the working memory of one agentmem session
      (``index_session``, default ``langgraph-store``) of an agent of its own
      (``index_agent``, default ``<agent>.langgraph-store``, so the index never
      shows in the agent's recall or history search): namespace, key, the
      value exactly as given, the fact's id, created and updated times.
      ``get`` reads it; every change is a versioned, durable update
      (``agentmem --agent default.langgraph-store state langgraph-store
      --history`` lists them).

    ``search(prefix, query=…)`` is agentmem's recall for the query, top-k
    (BM25, recency and salience, and your embedder when the store has one),
    of which the facts of items under ``prefix`` that pass ``filter`` are
    returned, ``limit`` at most, with recall's score; recall reads at most
    ``recall_budget`` tokens (more for a deep ``offset``), never the whole
    memory. Without a query, the items under ``prefix`` that pass ``filter``,
    most recently updated first, ``limit`` at most. Updating an item
    supersedes its fact (the old one is kept, retired); deleting it retires
    the fact unless another item shares it.

    The index session is opened for writing on first use and held until
    :meth:`close`: one process writes a store's items at a time.
    """

    def __init__(
        self,
        store: agentmem.Store,
        *,
        index_agent: str | None = None,
        index_session: str = "langgraph-store",
        recall_budget: int = 2000,
    ):
        self.store = store
        # The index lives under an agent of its own, so its updates never show in the agent's
        # recall, history search or sessions: only the facts do.
        self.index = agentmem.Store(store.path, agent=index_agent or f"{store.agent}.langgraph-store")
        self.index_session = index_session
        self.recall_budget = recall_budget
        self._lock = threading.Lock()
        self._session: agentmem.Session | None = None

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Runs ``ops`` in order (a ``get`` after a ``put`` of the batch sees it); the index is
        written once, at the end, as one versioned update."""
        with self._lock:
            if self._session is None:
                self._session = self.index.session(self.index_session)
            state = self._session.state()
            work = _Batch(self.store, state["document"].get("items", {}))
            results = [work.run(op, self.recall_budget) for op in ops]
            if work.patch:
                if "items" not in state["document"]:
                    work.patch.insert(0, {"op": "add", "path": "/items", "value": {}})
                self._session.update_state(work.patch, expected_version=state["version"])
            return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` on a worker thread, so the event loop keeps going."""
        return await asyncio.to_thread(self.batch, list(ops))

    def close(self) -> None:
        """Releases the index session."""
        with self._lock:
            if self._session is not None:
                self._session.close()
                self._session = None

    def __enter__(self) -> "AgentmemStore":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class _Batch:
    """One batch's work on a copy of the index, gathering the JSON Patch that records it."""

    def __init__(self, store: agentmem.Store, items: dict[str, dict[str, dict]]) -> None:
        self.store = store
        self.items = items
        self.patch: list[dict] = []

    def run(self, op: Op, recall_budget: int) -> Result:
        if isinstance(op, GetOp):
            return self.get(op.namespace, op.key)
        if isinstance(op, PutOp):
            self.put(op)
            return None
        if isinstance(op, SearchOp):
            return self.search(op, recall_budget)
        if isinstance(op, ListNamespacesOp):
            return self.list_namespaces(op)
        raise TypeError(f"unknown store operation {type(op).__name__}")

    def get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        entry = self.items.get(_namespace_key(namespace), {}).get(key)
        return None if entry is None else _item(Item, namespace, key, entry)

    def put(self, op: PutOp) -> None:
        namespace = _namespace_key(op.namespace)
        entries = self.items.get(namespace)
        previous = None if entries is None else entries.get(op.key)
        path = f"/items/{_pointer(namespace)}/{_pointer(op.key)}"
        if op.value is None:
            if previous is not None:
                self._release(previous.get("fact"), namespace, op.key)
                del entries[op.key]
                self.patch.append({"op": "remove", "path": path})
            return
        now = datetime.now(timezone.utc).isoformat()
        fact = self._fact(op, namespace, previous)
        entry = {
            "value": dict(op.value),
            "fact": fact,
            "created_at": previous["created_at"] if previous else now,
            "updated_at": now,
        }
        if entries is None:
            entries = self.items[namespace] = {}
            self.patch.append({"op": "add", "path": f"/items/{_pointer(namespace)}", "value": {}})
        entries[op.key] = entry
        self.patch.append({"op": "add", "path": path, "value": entry})

    def _fact(self, op: PutOp, namespace: str, previous: dict | None) -> str | None:
        """The id of the fact the item's text is kept as (``None`` with ``index=False``)."""
        old = previous.get("fact") if previous else None
        if op.index is False:
            self._release(old, namespace, op.key)
            return None
        text = _text_of(op.value, None if op.index is None else list(op.index))
        if not text:
            self._release(old, namespace, op.key)
            return None
        if old is not None and not self._shared(old, namespace, op.key):
            if previous is not None and _text_of(previous["value"], None) == text and op.index is None:
                return old
            return self.store.supersede_fact(old, text)
        return self.store.add_fact(text, tags=[f"langgraph:{namespace}"])["id"]

    def _shared(self, fact: str, namespace: str, key: str) -> bool:
        return any(
            entry.get("fact") == fact and (space, name) != (namespace, key)
            for space, entries in self.items.items()
            for name, entry in entries.items()
        )

    def _release(self, fact: str | None, namespace: str, key: str) -> None:
        if fact is not None and not self._shared(fact, namespace, key):
            self.store.delete_fact(fact)

    def search(self, op: SearchOp, recall_budget: int) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        candidates = [
            (namespace, key, entry)
            for space, entries in self.items.items()
            if (namespace := _namespace_of(space))[: len(prefix)] == prefix
            for key, entry in entries.items()
            if _matches(entry["value"], op.filter)
        ]
        if not op.query:
            candidates.sort(key=lambda candidate: candidate[2]["updated_at"], reverse=True)
            page = candidates[op.offset : op.offset + op.limit]
            return [_item(SearchItem, namespace, key, entry) for namespace, key, entry in page]
        by_fact: dict[str, list[tuple[tuple[str, ...], str, dict]]] = {}
        for candidate in candidates:
            if candidate[2].get("fact"):
                by_fact.setdefault(candidate[2]["fact"], []).append(candidate)
        budget = max(recall_budget, 200 * (op.offset + op.limit))
        ranked: list[SearchItem] = []
        for recalled in self.store.recall(op.query, budget=budget)["items"]:
            if recalled.get("kind") != "fact":
                continue
            for namespace, key, entry in by_fact.pop(recalled["source"], []):
                ranked.append(_item(SearchItem, namespace, key, entry, score=recalled.get("score")))
        return ranked[op.offset : op.offset + op.limit]

    def list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces = set()
        for space, entries in self.items.items():
            if not entries:
                continue
            namespace = _namespace_of(space)
            if all(_namespace_matches(condition, namespace) for condition in op.match_conditions or ()):
                namespaces.add(namespace if op.max_depth is None else namespace[: op.max_depth])
        return sorted(namespaces)[op.offset : op.offset + op.limit]


def _namespace_key(namespace: tuple[str, ...]) -> str:
    """A namespace as one string: its labels joined by dots (LangGraph forbids dots in labels)."""
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label:
            raise ValueError(f"namespace label {label!r} of {namespace} must be a non-empty string without dots")
    return ".".join(namespace)


def _namespace_of(key: str) -> tuple[str, ...]:
    return tuple(key.split("."))


def _pointer(token: str) -> str:
    """``token`` escaped as one JSON Pointer segment."""
    return token.replace("~", "~0").replace("/", "~1")


def _item(kind: type, namespace: tuple[str, ...], key: str, entry: Mapping[str, Any], **extra: Any) -> Any:
    return kind(
        namespace=tuple(namespace),
        key=key,
        value=entry["value"],
        created_at=datetime.fromisoformat(entry["created_at"]),
        updated_at=datetime.fromisoformat(entry["updated_at"]),
        **extra,
    )


def _text_of(value: Mapping[str, Any], fields: list[str] | None) -> str:
    """The text a value is recalled by: its ``fields`` (LangGraph's path syntax), else its string
    values, a lone one as it is and several as ``field: value; …``."""
    if fields is not None:
        return "\n".join(text for field in fields for text in get_text_at_path(value, field))
    strings = [(name, text) for name, text in value.items() if isinstance(text, str) and text.strip()]
    if len(strings) == 1:
        return strings[0][1]
    if strings:
        return "; ".join(f"{name}: {text}" for name, text in strings)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path) if condition.match_type == "prefix" else zip(reversed(namespace), reversed(path))
    return all(pattern == "*" or label == pattern for label, pattern in pairs)


def _matches(value: Any, wanted: Any) -> bool:
    """Whether ``value`` passes a search ``filter``: equal values, nested dicts matched field by
    field, and the comparisons ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``."""
    if wanted is None:
        return True
    if isinstance(wanted, Mapping):
        if any(name.startswith("$") for name in wanted):
            return all(_compare(value, operator, operand) for operator, operand in wanted.items())
        return isinstance(value, Mapping) and all(_matches(value.get(name), inner) for name, inner in wanted.items())
    return value == wanted


def _compare(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return value == operand
    if operator == "$ne":
        return value != operand
    comparisons = {
        "$gt": lambda a, b: a > b,
        "$gte": lambda a, b: a >= b,
        "$lt": lambda a, b: a < b,
        "$lte": lambda a, b: a <= b,
    }
    if operator not in comparisons:
        raise ValueError(f"unknown filter operator {operator!r}: use $eq, $ne, $gt, $gte, $lt or $lte")
    try:
        return comparisons[operator](float(value), float(operand))
    except (TypeError, ValueError):
        return False
