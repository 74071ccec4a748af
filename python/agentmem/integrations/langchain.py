"""LangChain messages kept in agentmem sessions.

Two things for LangChain users (``langchain-core``):

- :func:`events_from_messages` and :func:`messages_from_events` translate
  between LangChain messages and agentmem events, with stable ids, so the
  same message handed over twice is stored once;
- :class:`AgentmemChatMessageHistory`, a ``BaseChatMessageHistory`` over one
  agentmem session: every message durably on disk, ``clear()`` empties the
  view and keeps the audit record.

How a message becomes events (and back):

============================  ===============================================
LangChain                     agentmem events
============================  ===============================================
``HumanMessage``              ``user``
``AIMessage``                 ``assistant`` (its text), then one ``tool_call``
                              per tool call; the usage the provider reported
                              (``usage_metadata``) on the last of them
``ToolMessage``               ``tool_result`` (``status="error"``: its text is
                              also the ``tool_error``)
``SystemMessage``             ``system``
============================  ===============================================

The first event of a message has the message's ``id``; the others
``<id>#1``, ``<id>#2``, ... A message without an id gets a fresh one (set on
the message too, so handing it over again adds nothing). Content that is a
list of blocks (images, reasoning) is stored as its text, with the blocks
themselves kept in the event's ``langchain_content`` field, from which they
come back.

``BaseChatMessageHistory`` is deprecated in langchain-core since 1.6.4 in
favour of LangGraph's short-term memory (graph state and checkpointers); for
those, :mod:`agentmem.integrations.langgraph` has a middleware and a
pre-model hook that persist the graph's messages the same way.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Iterable, Mapping, Sequence

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

import agentmem

__all__ = [
    "SOURCE",
    "CLEARED_TAG",
    "AgentmemChatMessageHistory",
    "UnsupportedMessage",
    "events_from_messages",
    "messages_from_events",
]

SOURCE = "langchain"
"""The ``source_event`` of every event made from a LangChain message."""

CLEARED_TAG = "langchain:history-cleared"
"""The tag of the event :meth:`AgentmemChatMessageHistory.clear` appends."""


class UnsupportedMessage(TypeError):
    """A message of a kind agentmem has no event for (a ``FunctionMessage``, a ``ChatMessage``
    with a custom role): convert it to a human, AI, tool or system message first."""


def events_from_messages(messages: Iterable[BaseMessage]) -> list[dict]:
    """The agentmem events of LangChain ``messages``, in order (see the module's table)."""
    events: list[dict] = []
    for message in messages:
        events.extend(_message_events(message))
    return events


def _message_events(message: BaseMessage) -> list[dict]:
    if message.id is None:
        message.id = f"lc-{uuid.uuid4()}"
    text, blocks = _content(message.content)
    kind = message.type
    if kind == "human":
        events = [{"trace_type": "user", "content": text}]
    elif kind == "system":
        events = [{"trace_type": "system", "content": text}]
    elif kind == "tool":
        assert isinstance(message, ToolMessage)
        result: dict[str, Any] = {"trace_type": "tool_result", "tool_call_id": message.tool_call_id, "content": text}
        if message.name:
            result["tool_name"] = message.name
        if message.status == "error":
            result["tool_error"] = text
        events = [result]
    elif kind == "ai":
        assert isinstance(message, AIMessage)
        events = _ai_events(message, text)
    else:
        raise UnsupportedMessage(
            f"a {type(message).__name__} (type {kind!r}) has no agentmem event: "
            "convert it to a HumanMessage, AIMessage, ToolMessage or SystemMessage first"
        )
    if blocks is not None:
        events[0]["langchain_content"] = blocks
    for index, event in enumerate(events):
        event["id"] = message.id if index == 0 else f"{message.id}#{index}"
        event["source_event"] = SOURCE
    return events


def _ai_events(message: AIMessage, text: str) -> list[dict]:
    events: list[dict] = []
    if text or not message.tool_calls:
        events.append({"trace_type": "assistant", "content": text})
    for call in message.tool_calls:
        events.append(
            {
                "trace_type": "tool_call",
                "tool_call_id": call["id"] or f"{message.id}-call-{len(events)}",
                "tool_name": call["name"],
                "tool_args": call["args"],
            }
        )
    usage = message.usage_metadata
    if usage:
        details = usage.get("input_token_details") or {}
        reported = {
            "prompt_tokens": usage.get("input_tokens", 0),
            "completion_tokens": usage.get("output_tokens", 0),
            "cached_tokens": details.get("cache_read", 0) or 0,
        }
        model = message.response_metadata.get("model_name") or message.response_metadata.get("model")
        if model:
            reported["model"] = model
        events[-1]["usage"] = reported
    return events


def _content(content: str | list) -> tuple[str, list | None]:
    """The text of a message's content, and its blocks when it is a list of them."""
    if isinstance(content, str):
        return content, None
    texts = []
    for block in content:
        if isinstance(block, str):
            texts.append(block)
        elif isinstance(block, Mapping) and block.get("type") == "text":
            texts.append(str(block.get("text", "")))
    return "\n".join(texts), list(content)


def messages_from_events(events: Iterable[Mapping[str, Any]]) -> list[BaseMessage]:
    """LangChain messages of agentmem ``events``: the inverse of :func:`events_from_messages`.

    Events this module made come back as the messages they were made from (an
    AI message's text and tool calls together again, usage included); events
    from elsewhere are grouped as the renderers group them: an assistant text
    and the tool calls after it, in one turn, are one ``AIMessage``.
    A tool result that came after a later message (a user's word while the tool
    ran) is placed right after its call, as every provider requires. Summaries,
    working-memory updates and other bookkeeping events have no message and
    are left out.
    """
    messages: list[BaseMessage] = []
    open_ai: tuple[str, str] | None = None  # (turn, base id) of the AI message tool calls may join
    for event in events:
        kind = event.get("trace_type")
        content = event.get("langchain_content", event.get("content", ""))
        base = _base_id(event)
        if kind == "tool_call" and open_ai is not None and open_ai == (event.get("turn_id"), base):
            previous = messages[-1]
            assert isinstance(previous, AIMessage)
            previous.tool_calls.append(_tool_call(event))
            _attach_usage(previous, event)
            continue
        open_ai = None
        if kind == "user":
            messages.append(HumanMessage(content=content, id=event.get("id")))
        elif kind == "system":
            if CLEARED_TAG in (event.get("tags") or []):
                continue
            messages.append(SystemMessage(content=content, id=event.get("id")))
        elif kind == "tool_result":
            status = "error" if event.get("tool_error") else "success"
            text = content if content != "" else _result_text(event)
            result = ToolMessage(
                content=text,
                tool_call_id=event.get("tool_call_id", ""),
                name=event.get("tool_name"),
                status=status,
                id=event.get("id"),
            )
            messages.insert(_answer_position(messages, result.tool_call_id), result)
        elif kind in ("assistant", "tool_call"):
            message = AIMessage(content=content if kind == "assistant" else "", id=base or event.get("id"))
            if kind == "tool_call":
                message.tool_calls.append(_tool_call(event))
            _attach_usage(message, event)
            messages.append(message)
            open_ai = (event.get("turn_id"), base)
    return messages


def _answer_position(messages: list[BaseMessage], call_id: str) -> int:
    """Where the result of ``call_id`` goes: after its call's AI message and the results already
    there, so a result that came after a later message (a user's word while the tool ran)
    still answers its call, as every provider requires."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AIMessage) and any(call["id"] == call_id for call in message.tool_calls):
            index += 1
            while index < len(messages) and isinstance(messages[index], ToolMessage):
                index += 1
            return index
    return len(messages)


def _base_id(event: Mapping[str, Any]) -> str | None:
    """The id of the message an event was made from: its own id, less a ``#n`` suffix this
    module added. Events from elsewhere have none: their grouping is by turn alone."""
    event_id = event.get("id")
    if event.get("source_event") != SOURCE or not isinstance(event_id, str):
        return None
    head, separator, tail = event_id.rpartition("#")
    return head if separator and tail.isdigit() else event_id


def _tool_call(event: Mapping[str, Any]) -> dict:
    args = event.get("tool_args")
    if not isinstance(args, dict):
        args = {"input": args} if args is not None else {}
    return {"name": event.get("tool_name", ""), "args": args, "id": event.get("tool_call_id"), "type": "tool_call"}


def _attach_usage(message: AIMessage, event: Mapping[str, Any]) -> None:
    usage = event.get("usage")
    if not usage:
        return
    prompt, completion = usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
    message.usage_metadata = {
        "input_tokens": prompt,
        "output_tokens": completion,
        "total_tokens": prompt + completion,
        "input_token_details": {"cache_read": usage.get("cached_tokens", 0) or 0},
    }
    if usage.get("model"):
        message.response_metadata["model_name"] = usage["model"]


def _result_text(event: Mapping[str, Any]) -> str:
    if event.get("tool_error"):
        return str(event["tool_error"])
    result = event.get("tool_result")
    if result is None:
        return ""
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)


class AgentmemChatMessageHistory(BaseChatMessageHistory):
    """A LangChain chat message history kept in an agentmem session.

    ``AgentmemChatMessageHistory(store, session_id)`` opens the session for
    writing (creating it when it does not exist) and holds its writer lock
    until :meth:`close`; another process that opens the same session meanwhile
    gets :class:`agentmem.SessionLocked`.

    - :attr:`messages`: the session's messages since the last :meth:`clear`,
      archived ones included (a compaction never takes a message away from
      the history);
    - :meth:`add_messages`: appends them, durably, in one all-or-nothing
      batch; a message whose id the session holds already is not added twice;
    - :meth:`clear`: appends a ``system`` event tagged :data:`CLEARED_TAG`
      and keeps everything before it: the view (``messages``) starts after
      it, the audit record (``session.events()``, search, ``agentmem export``)
      still has every message. The model's view that ``session.prepare``
      builds is the engine's, and still holds the earlier turns (compacted
      in time); start a new session for a context without them.
    """

    def __init__(self, store: agentmem.Store, session_id: str) -> None:
        self.session = store.session(session_id)

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The messages since the last :meth:`clear`, oldest first."""
        events = self.session.events()
        start = 0
        for index, event in enumerate(events):
            if event.get("trace_type") == "system" and CLEARED_TAG in (event.get("tags") or []):
                start = index + 1
        return messages_from_events(events[start:])

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Appends ``messages`` to the session, all or nothing."""
        self.session.ingest(events_from_messages(messages))

    def clear(self) -> None:
        """Empties the view; every earlier message stays in the session's record."""
        marker = {
            "id": f"lc-clear-{uuid.uuid4()}",
            "trace_type": "system",
            "content": "The chat history was cleared here; earlier messages are kept for audit only.",
            "tags": [CLEARED_TAG],
            "source_event": SOURCE,
        }
        self.session.ingest([marker])

    def close(self) -> None:
        """Releases the session's writer lock."""
        self.session.close()

    def __enter__(self) -> "AgentmemChatMessageHistory":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
