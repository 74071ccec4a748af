"""The LangGraph / LangChain adapter on real runs: agents built with the
frameworks from PyPI, a real store on disk, and the loopback model server
playing a tool-using model through langchain-openai's ChatOpenAI.

What the model server received is checked request by request: it fits the
budget (counted with o200k_base by the server's own counter, margin printed),
every tool call has its result and no result lacks its call, and the memory
(MEMORY.md, recalled facts, the compaction summary) is there when it should
be. What agentmem kept is checked against the graph's state: every message,
in full, never trimmed.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph", reason="python/tests/requirements-langgraph.txt is not installed")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage  # noqa: E402
from langchain.tools import ToolRuntime  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.store.base import Item  # noqa: E402

import agentmem  # noqa: E402
from agentmem.integrations.langchain import (  # noqa: E402
    AgentmemChatMessageHistory,
    events_from_messages,
    messages_from_events,
)
from agentmem.integrations.langgraph import AgentmemMiddleware, AgentmemStore, NoSession  # noqa: E402
from conftest import REPO  # noqa: E402
from model_server import ModelServer, count_tokens  # noqa: E402

EXAMPLE = REPO / "examples" / "python" / "langgraph_agent.py"

BUDGET = {"context_window": 6000, "max_output_tokens": 1000, "safety_margin": 500}
"""A small window, so a few turns of big tool outputs compact: 4,500 tokens of input."""
INPUT_BUDGET = 6000 - 1000 - 500


class VaryingModelServer(ModelServer):
    """The loopback model, calling its tool with fresh arguments each time, as a real model
    reading different files would (the same arguments again would be snipped as repeats)."""

    def _decide(self, tools: list[dict], results_since_user: int, last_user: str) -> tuple[str, Any]:
        kind, what = super()._decide(tools, results_since_user, last_user)
        if kind == "call":
            name, arguments = what
            fresh = {
                key: f"{value}-{self._next_id('arg')}" if isinstance(value, str) else value
                for key, value in arguments.items()
            }
            what = (name, fresh)
        return kind, what


class RefusingModelServer(VaryingModelServer):
    """The loopback model refusing what :meth:`refusal` says, with the provider's status and
    error body, as a provider does."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.refused: list[int] = []

    def refusal(self, size: int) -> tuple[int, dict] | None:
        """The HTTP status and error of a request of ``size`` tokens, or ``None`` to answer it."""
        raise NotImplementedError

    def _handler(self):
        server, base = self, super()._handler()

        class Refusing(base):  # type: ignore[misc, valid-type]
            def do_POST(self) -> None:
                data = self.rfile.read(int(self.headers.get("content-length", "0")))
                body = json.loads(data or b"{}")
                size = count_tokens(body.get("messages", [])) + count_tokens(body.get("tools") or [])
                refusal = server.refusal(size)
                if refusal is None:
                    self.rfile = io.BytesIO(data)
                    return super().do_POST()
                server.refused.append(size)
                status, error = refusal
                reply = json.dumps({"error": error}).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        return Refusing


class SmallWindowModelServer(RefusingModelServer):
    """A hard window: a request over ``window`` tokens gets OpenAI's context_length_exceeded."""

    def __init__(self, window: int, **settings: Any) -> None:
        super().__init__(**settings)
        self.window = window

    def refusal(self, size: int) -> tuple[int, dict] | None:
        if size <= self.window:
            return None
        message = (
            f"This model's maximum context length is {self.window} tokens. However, your messages "
            f"resulted in {size} tokens. Please reduce the length of the messages."
        )
        return 400, {"message": message, "type": "invalid_request_error", "code": "context_length_exceeded"}


class WrongKeyModelServer(RefusingModelServer):
    """Every request refused for a bad API key (HTTP 401)."""

    def refusal(self, size: int) -> tuple[int, dict] | None:
        return 401, {
            "message": "Incorrect API key provided.",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }


@tool
def read_log(name: str) -> str:
    """Read a build log."""
    return "\n".join(f"{name} line {i}: compiling module m{i} ok, warning W{i:04d}" for i in range(120))


def tool_pairs_intact(messages: list[dict]) -> None:
    """Every tool call of an assistant message is answered right after it, once, and no tool
    message answers a call that was not made (OpenAI Chat Completions' rule)."""
    index = 0
    while index < len(messages):
        message = messages[index]
        assert message["role"] != "tool", f"a tool result without its call at {index}: {message}"
        calls = [call["id"] for call in message.get("tool_calls") or []]
        index += 1
        answered = []
        while index < len(messages) and messages[index]["role"] == "tool":
            answered.append(messages[index]["tool_call_id"])
            index += 1
        assert sorted(answered) == sorted(calls), f"calls {calls} answered by {answered}"


def request_text(body: dict) -> str:
    return json.dumps(body["messages"], ensure_ascii=False)


def test_a_create_agent_graph_runs_compacts_and_keeps_every_message(tmp_path: Path) -> None:
    store = agentmem.Store(tmp_path / "data")
    store.write_memory("- The CI runner of this project is called ci-runner-7.")
    with AgentmemStore(store) as memory:
        memory.put(("project",), "flaky", {"memory": "The flaky test is test_parser_unicode in crates/parser."})

    states = []
    with VaryingModelServer(calls_per_turn=3) as server, AgentmemMiddleware(store, **BUDGET) as context:
        model = ChatOpenAI(model="gpt-4o", base_url=server.base_url, api_key="test")
        agent = create_agent(model, [read_log], system_prompt="You fix builds.", middleware=[context])
        config = {"configurable": {"thread_id": "build-fix"}}
        messages: list = []
        turns = [f"turn {n}: what does the build log say?" for n in range(9)] + ["Which test is flaky?"]
        starts = []
        for text in turns:
            starts.append(len(server.bodies()))
            state = agent.invoke({"messages": messages + [HumanMessage(text)]}, config)
            messages = state["messages"]
            states.append(state)
        bodies = server.bodies("/chat/completions")

    # The agent ran to the end: each turn answered in text after its three tool calls.
    assert isinstance(messages[-1], AIMessage) and not messages[-1].tool_calls
    assert messages[-1].text == "Done. (Which test is flaky?)"
    assert sum(isinstance(m, ToolMessage) for m in messages) == 3 * len(turns)

    # Every request fits the budget and keeps its tool pairs.
    sizes = [count_tokens(body["messages"]) + count_tokens(body.get("tools") or []) for body in bodies]
    margin = INPUT_BUDGET - max(sizes)
    print(f"\n{len(bodies)} requests, largest {max(sizes)} tokens of {INPUT_BUDGET}: margin {margin}")
    assert margin >= 0
    for body in bodies:
        tool_pairs_intact(body["messages"])
    # ... while the graph's state holds everything: far more than any request.
    full = count_tokens([m.content for m in messages])
    assert full > 3 * INPUT_BUDGET

    # The memory is in the requests: MEMORY.md in every system prompt, the recalled fact when
    # the user asks about it, and the summary once the session compacted.
    assert all("ci-runner-7" in body["messages"][0]["content"] for body in bodies)
    last_turn = bodies[starts[-1] :]
    assert last_turn and all("test_parser_unicode" in request_text(body) for body in last_turn)
    compacted = [body for body in bodies if "[SUMMARY OF EARLIER CONVERSATION]" in request_text(body)]
    assert compacted and bodies[-1] in compacted

    # The durable history holds every message of the state, in order and in full.
    meta = store.session_meta("build-fix")
    assert meta["compactions_finished"] >= 1 and meta["archived_events"] > 0
    with store.read_session("build-fix") as session:
        events = session.events()
    expected = events_from_messages(messages)
    assert [e["id"] for e in events] == [e["id"] for e in expected]
    kept = ("trace_type", "content", "tool_call_id", "tool_name", "tool_args")
    assert [[e.get(k) or "" for k in kept] for e in events] == [[e.get(k) or "" for k in kept] for e in expected]
    results = [e for e in events if e["trace_type"] == "tool_result"]
    assert all(len(e["content"].splitlines()) == 120 for e in results)
    assert any(e.get("usage", {}).get("prompt_tokens") for e in events)


def test_a_second_process_resumes_the_thread_without_a_checkpointer(tmp_path: Path) -> None:
    data = tmp_path / "data"
    environment = dict(os.environ, OPENAI_API_KEY="test")
    with ModelServer(calls_per_turn=1) as server:
        command = [sys.executable, str(EXAMPLE), "--dir", str(data), "--thread", "t", "--base-url", server.base_url]
        command += ["--model", "gpt-4o", "--context-window", "8000"]
        first = subprocess.run(
            command + ["where is the README?", "and the examples?"],
            env=environment,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert first.returncode == 0, first.stderr
        asked_first = len(server.bodies())
        second = subprocess.run(
            command + ["what did I ask first?"], env=environment, capture_output=True, text=True, timeout=300
        )
        assert second.returncode == 0, second.stderr
        bodies = server.bodies()

    lines = [json.loads(line) for line in first.stdout.splitlines()]
    assert [line["answer"] for line in lines[:2]] == ["Done. (where is the README?)", "Done. (and the examples?)"]
    assert all(line["context_tokens"] <= line["input_budget"] for line in lines[:2])
    # The second process started from an empty graph state, yet its model saw the first's turns.
    resumed = bodies[asked_first]
    users = [m["content"] for m in resumed["messages"] if m["role"] == "user"]
    assert users == ["where is the README?", "and the examples?", "what did I ask first?"]
    tool_pairs_intact(resumed["messages"])
    summary = json.loads(second.stdout.splitlines()[-1])
    assert summary["session"] == "t" and summary["events"] == json.loads(first.stdout.splitlines()[-1])["events"] + 4


def test_create_react_agent_takes_the_pre_model_hook(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated in favour of create_agent
        from langgraph.prebuilt import create_react_agent

    store = agentmem.Store(tmp_path / "data")
    with VaryingModelServer(calls_per_turn=3) as server:
        hook = AgentmemMiddleware(store, model="gpt-4o", system="You fix builds.", counted_tools=[read_log], **BUDGET)
        model = ChatOpenAI(model="gpt-4o", base_url=server.base_url, api_key="test")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            agent = create_react_agent(
                model, [read_log], pre_model_hook=hook.pre_model_hook, post_model_hook=hook.post_model_hook
            )
        config = {"configurable": {"thread_id": "react"}}
        messages: list = []
        for n in range(10):
            state = agent.invoke({"messages": messages + [("user", f"turn {n}: check the log")]}, config)
            messages = state["messages"]
        bodies = server.bodies()
        hook.close()

    assert messages[-1].text == "Done. (turn 9: check the log)"
    sizes = [count_tokens(body["messages"]) + count_tokens(body["tools"]) for body in bodies]
    print(f"\ncreate_react_agent: largest request {max(sizes)} of {INPUT_BUDGET} tokens")
    assert max(sizes) <= INPUT_BUDGET
    for body in bodies:
        assert body["messages"][0] == {"role": "system", "content": "You fix builds."}
        tool_pairs_intact(body["messages"])
    # The state kept every message in full; the model got the fitted view (llm_input_messages).
    assert all(len(m.content.splitlines()) == 120 for m in messages if isinstance(m, ToolMessage))
    assert count_tokens(bodies[-1]["messages"]) < count_tokens([m.content for m in messages]) / 3
    assert store.session_meta("react")["compactions_finished"] >= 1
    with store.read_session("react") as session:
        assert [e["id"] for e in session.events()] == [e["id"] for e in events_from_messages(messages)]


def test_a_refused_call_is_compacted_and_made_again(tmp_path: Path) -> None:
    store = agentmem.Store(tmp_path / "data")
    # agentmem believes in a 12,000-token window; the provider takes 3,500 tokens at most.
    budget = {"context_window": 12_000, "max_output_tokens": 1000, "safety_margin": 500}
    with SmallWindowModelServer(3500, calls_per_turn=3) as server, AgentmemMiddleware(store, **budget) as context:
        model = ChatOpenAI(model="gpt-4o", base_url=server.base_url, api_key="test", max_retries=0)
        agent = create_agent(model, [read_log], middleware=[context])
        config = {"configurable": {"thread_id": "overflow"}}
        for n in range(4):
            state = agent.invoke({"messages": [("user", f"turn {n}: read the logs")]}, config)
        answered = server.bodies()

    assert state["messages"][-1].text == "Done. (turn 3: read the logs)"
    assert server.refused, "the provider never refused a call: the test proves nothing"
    # Each refused call was made again and answered: four calls a turn, none missing.
    assert len(answered) == 4 * 4
    print(f"\n{len(server.refused)} call refused ({server.refused[0]} tokens of 3,500), {len(answered)} answered")
    for body in answered:
        tool_pairs_intact(body["messages"])
    # The refusal taught the middleware the provider's window: later calls fit it from the start.
    assert len(server.refused) == 1
    with store.read_session("overflow") as session:
        assert sum(e["trace_type"] == "tool_result" for e in session.events()) == 12


def test_another_refusal_reaches_the_caller_and_the_history_stays(tmp_path: Path) -> None:
    import openai

    store = agentmem.Store(tmp_path / "data")
    with WrongKeyModelServer() as server, AgentmemMiddleware(store, **BUDGET) as context:
        model = ChatOpenAI(model="gpt-4o", base_url=server.base_url, api_key="wrong", max_retries=0)
        agent = create_agent(model, [read_log], middleware=[context])
        with pytest.raises(openai.AuthenticationError):
            agent.invoke({"messages": [("user", "read the logs")]}, {"configurable": {"thread_id": "denied"}})
    assert len(server.refused) == 1  # not retried: a bad key is no overflow
    with store.read_session("denied") as session:
        assert [(e["trace_type"], e["content"]) for e in session.events()] == [("user", "read the logs")]


@tool
def dump_table(table: str) -> str:
    """Dump a database table."""
    return "\n".join(f"row {i}: {table} id={i} status=active owner=user{i % 97}@example.org" for i in range(2500))


def test_the_memory_toolset_writes_memory_and_reads_evicted_outputs(tmp_path: Path) -> None:
    store = agentmem.Store(tmp_path / "data")
    config = {"configurable": {"thread_id": "tools"}}
    with AgentmemMiddleware(store, toolset="memory") as context:
        tools = {t.name: t for t in context.tools}
        names = list(tools)
        assert names == [
            "read_memory",
            "write_memory",
            "update_memory",
            "search_conversation_history",
            "read_evicted_output",
            "get_working_memory",
            "update_working_memory",
        ]
        with ModelServer(calls_per_turn=1, tool="write_memory") as server:
            model = ChatOpenAI(model="gpt-4o", base_url=server.base_url, api_key="test")
            agent = create_agent(model, [dump_table], middleware=[context])
            agent.invoke({"messages": [("user", "remember this")]}, config)
            offered = {t["function"]["name"] for t in server.bodies()[0]["tools"]}
            assert offered == {"dump_table", *names}
            assert "content-value" in store.read_memory()["content"]
            server.tool = "dump_table"
            state = agent.invoke({"messages": [("user", "dump the users table")]}, config)
            last = server.bodies()[-1]["messages"]
        # MEMORY.md, written by the model in the turn before, is in the system prompt now.
        assert "content-value" in last[0]["content"]
        # The 2,500-line output was evicted: the model saw a preview, the log keeps it whole.
        call_id = next(m for m in state["messages"] if isinstance(m, ToolMessage)).tool_call_id
        preview = next(m["content"] for m in last if m.get("tool_call_id") == call_id)
        assert len(preview.splitlines()) < 30 and "read_evicted_output" in preview
        with store.read_session("tools") as session:
            kept = next(
                e for e in session.events() if e.get("tool_call_id") == call_id and e["trace_type"] == "tool_result"
            )
        assert len(kept["content"].splitlines()) == 2500

        read = tools["read_evicted_output"].invoke({"call_id": call_id, "offset": 100, "limit": 3}, config)
        assert read.startswith("row 100: table-value id=100") and "of 2500" in read
        assert tools["read_evicted_output"].invoke({"call_id": "nope"}, config).startswith("No such output")
        found = tools["search_conversation_history"].invoke({"query": "users table"}, config)
        assert found.splitlines()[0] == "[tools turn_0002 user] dump the [users] [table]"  # hits in brackets
        assert tools["update_memory"].invoke({"old_text": "absent", "new_text": "x"}, config).startswith("Not changed")

        # Working memory: changed by the tool, refused when stale, in the model's next view.
        update = tools["update_working_memory"]
        assert update.invoke({"patch": {"plan": ["dump", "review"]}, "expected_version": 0}, config).endswith("1.")
        assert update.invoke({"patch": {"plan": []}, "expected_version": 0}, config).startswith("Not changed")
        assert json.loads(tools["get_working_memory"].invoke({}, config)) == {
            "version": 1,
            "document": {"plan": ["dump", "review"]},
        }
        view = context.fit([], system=None, tools=[], model="gpt-4o", thread_id="tools")
        assert "# Working memory (version 1)" in "".join(m.text for m in view)
        report = context.compact("the users table", thread_id="tools")
        assert report["applied"] is True and report["focus"] == "the users table"


def test_the_async_agent_and_the_missing_thread(tmp_path: Path) -> None:
    store = agentmem.Store(tmp_path / "data")
    with ModelServer(calls_per_turn=1) as server, AgentmemMiddleware(store, **BUDGET) as context:
        model = ChatOpenAI(model="gpt-4o", base_url=server.base_url, api_key="test")
        agent = create_agent(model, [read_log], middleware=[context])

        async def run() -> dict:
            config = {"configurable": {"thread_id": "async"}}
            await agent.ainvoke({"messages": [("user", "first")]}, config)
            return await agent.ainvoke({"messages": [("user", "second")]}, config)

        state = asyncio.run(run())
        assert [m.text for m in state["messages"]] == ["second", "", state["messages"][2].text, "Done. (second)"]
        last = server.bodies()[-1]["messages"]
        assert [m["content"] for m in last if m["role"] == "user"] == ["first", "second"]
        with pytest.raises(NoSession, match="thread_id"):
            agent.invoke({"messages": [("user", "no thread")]})
    with store.read_session("async") as session:
        assert len(session.events()) == 8


def test_the_store_puts_gets_and_searches_by_recall(tmp_path: Path) -> None:
    store = agentmem.Store(tmp_path / "data")
    with AgentmemStore(store) as memory:
        memory.put(("users", "alice"), "food", {"memory": "Alice likes pizza with olives", "stars": 5})
        memory.put(("users", "alice"), "code", {"memory": "Alice writes Rust and Python", "stars": 3})
        memory.put(("users", "bob"), "food", {"memory": "Bob likes sushi", "stars": 4})
        memory.put(("users", "bob"), "pin", {"memory": "the door code"}, index=False)
        for n in range(30):
            memory.put(("notes",), f"n{n}", {"memory": f"note {n} about deployment window {n}"})

        item = memory.get(("users", "alice"), "food")
        assert isinstance(item, Item) and item.value == {"memory": "Alice likes pizza with olives", "stars": 5}
        assert memory.get(("users", "alice"), "nothing") is None

        # Search is agentmem's recall, top-k: the relevant item first, never more than the limit.
        found = memory.search(("users",), query="who likes pizza?", limit=2)
        assert [(i.namespace, i.key) for i in found][0] == (("users", "alice"), "food")
        assert len(found) <= 2 and found[0].score > 0
        assert len(memory.search(("notes",), query="deployment window", limit=5)) == 5
        assert [i.key for i in memory.search(("users", "bob"), query="sushi")] == ["food"]
        assert memory.search(("users",), query="door code") == []  # index=False: not recalled
        # The index is no memory of the agent's: recall and history search see the facts alone.
        assert store.list_sessions() == [] and store.search("door code") == []
        assert "door code" not in json.dumps(store.recall("the door code"))
        # Without a query: the namespace's items that pass the filter, newest first.
        assert [i.key for i in memory.search(("users",), filter={"stars": {"$gte": 4}})] == ["food", "food"]
        assert {i.key for i in memory.search(("users", "bob"))} == {"food", "pin"}
        assert memory.list_namespaces(prefix=("users",)) == [("users", "alice"), ("users", "bob")]
        assert memory.list_namespaces(suffix=("bob",)) == [("users", "bob")]
        assert memory.list_namespaces(max_depth=1) == [("notes",), ("users",)]

        # The items are agentmem facts: an update supersedes (the old one kept), a delete retires.
        memory.put(("users", "alice"), "food", {"memory": "Alice likes pasta now"})
        assert memory.get(("users", "alice"), "food").value == {"memory": "Alice likes pasta now"}
        facts = store.facts(all=True)
        assert {"Alice likes pizza with olives", "Alice likes pasta now"} <= {f["fact"] for f in facts}
        assert "Alice likes pizza with olives" not in {f["fact"] for f in store.facts()}
        memory.delete(("users", "bob"), "food")
        assert memory.get(("users", "bob"), "food") is None
        assert "Bob likes sushi" not in {f["fact"] for f in store.facts()}

        async def async_calls() -> Any:
            await memory.aput(("users", "carol"), "tea", {"memory": "Carol drinks green tea"})
            return await memory.asearch(("users",), query="green tea", limit=1)

        assert [i.key for i in asyncio.run(async_calls())] == ["tea"]
        with pytest.raises(ValueError):
            memory.put(("users", ""), "k", {"memory": "x"})

    # Another process reads the same items (the index session is released on close).
    script = textwrap.dedent(
        f"""
        import agentmem
        from agentmem.integrations.langgraph import AgentmemStore
        with AgentmemStore(agentmem.Store({str(tmp_path / "data")!r})) as memory:
            print(memory.get(("users", "carol"), "tea").value["memory"])
            print(len(memory.search(("notes",), query="deployment", limit=3)))
        """
    )
    environment = dict(os.environ)
    other = subprocess.run([sys.executable, "-c", script], env=environment, capture_output=True, text=True, timeout=120)
    assert other.returncode == 0, other.stderr
    assert other.stdout.split() == ["Carol", "drinks", "green", "tea", "3"]


def test_the_chat_message_history_keeps_everything_and_clears_the_view(tmp_path: Path) -> None:
    store = agentmem.Store(tmp_path / "data")
    conversation = [
        SystemMessage("You fix builds."),
        HumanMessage("run the tests"),
        AIMessage(
            "Running them.",
            tool_calls=[
                {"name": "bash", "args": {"cmd": "cargo test"}, "id": "c1"},
                {"name": "bash", "args": {"cmd": "cargo clippy"}, "id": "c2"},
            ],
            usage_metadata={"input_tokens": 120, "output_tokens": 9, "total_tokens": 129},
        ),
        ToolMessage("test result: ok", tool_call_id="c1"),
        ToolMessage("error[E0425]", tool_call_id="c2", status="error"),
        AIMessage([{"type": "text", "text": "Clippy fails with E0425."}]),
    ]
    with AgentmemChatMessageHistory(store, "chat") as history:
        history.add_messages(conversation)
        history.add_messages(conversation)  # the same messages again: stored once
        again = history.messages
        assert [type(m) for m in again] == [type(m) for m in conversation]
        assert [m.id for m in again] == [m.id for m in conversation]
        assert again[2].tool_calls == conversation[2].tool_calls and again[2].usage_metadata["input_tokens"] == 120
        assert again[4].status == "error" and again[5].content == conversation[5].content
        history.clear()
        assert history.messages == []
        history.add_messages([HumanMessage("start over")])
        assert [m.text for m in history.messages] == ["start over"]
        events = history.session.events()
    assert len(events) == 8 + 1 + 1  # the audit keeps the 8 events of the 6 messages, the clear, the new one
    assert messages_from_events(events)[1].text == "run the tests"
    with AgentmemChatMessageHistory(store, "chat") as reopened:
        assert [m.text for m in reopened.messages] == ["start over"]


def test_a_message_without_an_id_is_stored_once(tmp_path: Path) -> None:
    store = agentmem.Store(tmp_path / "data")
    with AgentmemMiddleware(store, session="plain") as context:
        for _ in range(3):  # another middleware injecting the same message, id-less, at each call
            view = context.fit([HumanMessage("keep answers short")], system=None, tools=[], model="gpt-4o")
        assert [m.text for m in view] == ["keep answers short"]
        context.fit([HumanMessage("keep answers short"), HumanMessage("now?")], system=None, tools=[], model="gpt-4o")
    with store.read_session("plain") as session:
        assert [e["content"] for e in session.events()] == ["keep answers short", "now?"]


def test_the_graphs_store_feeds_the_memory_other_threads_recall(tmp_path: Path) -> None:
    @tool
    def save_preference(preference: str, runtime: ToolRuntime) -> str:
        """Save what the user prefers, for every later conversation."""
        runtime.store.put(("prefs", "user-1"), "style", {"memory": f"The user prefers {preference} in reviews"})
        return "saved"

    store = agentmem.Store(tmp_path / "data")
    with (
        ModelServer(calls_per_turn=1) as server,
        AgentmemMiddleware(store) as context,
        AgentmemStore(store) as memory,
    ):
        model = ChatOpenAI(model="gpt-4o", base_url=server.base_url, api_key="test")
        agent = create_agent(model, [save_preference], middleware=[context], store=memory)
        agent.invoke({"messages": [("user", "remember my review style")]}, {"configurable": {"thread_id": "a"}})
        assert memory.get(("prefs", "user-1"), "style").value == {
            "memory": "The user prefers preference-value in reviews"
        }
        saved = len(server.bodies())
        agent.invoke({"messages": [("user", "how do I like reviews?")]}, {"configurable": {"thread_id": "b"}})
        later = server.bodies()[saved:]
    # Thread b is a new session: the sentence reaches its model only as a recalled fact.
    assert later and all("The user prefers preference-value in reviews" in request_text(body) for body in later)


def test_the_history_reads_a_session_written_by_other_tools(tmp_path: Path, long_session_events: list[dict]) -> None:
    from langchain_core.messages import convert_to_openai_messages

    store = agentmem.Store(tmp_path / "data")
    with store.create_session("imported") as session:
        session.ingest(long_session_events[:400])
    with AgentmemChatMessageHistory(store, "imported") as history:
        messages = history.messages
    kinds = {e["trace_type"] for e in long_session_events[:400]}
    assert {"user", "assistant", "tool_call", "tool_result"} <= kinds
    assert sum(isinstance(m, ToolMessage) for m in messages) == sum(
        e["trace_type"] == "tool_result" for e in long_session_events[:400]
    )
    tool_pairs_intact(convert_to_openai_messages(messages))
