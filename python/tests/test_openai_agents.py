"""agentmem as the OpenAI Agents SDK's session: real runs of the SDK from PyPI
(``Runner.run`` with a tool-using agent) against the loopback model server,
on a real store on disk.

Every request the server received is checked: inside the input budget
(counted with o200k_base by the server, instructions and tool schemas
included), tool calls and outputs paired in the Responses shape, and the
memory there when it should be."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("agents", reason="the OpenAI Agents SDK (python/tests/requirements-openai_agents.txt)")

from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, SessionSettings, function_tool  # noqa: E402
from agents import set_tracing_disabled  # noqa: E402
from agents.memory import Session as SdkSession  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

import agentmem  # noqa: E402
from agentmem.integrations.openai_agents import (  # noqa: E402
    AgentmemSession,
    ContextSettings,
    InvalidSessionSettings,
    RunNotInSession,
    UnreadableItem,
)
from conftest import REPO, record_threads  # noqa: E402
from model_server import ModelServer, count_tokens  # noqa: E402

set_tracing_disabled(True)

BUDGET = {"context_window": 16_000, "max_output_tokens": 2_000, "safety_margin": 1_000}
INPUT_BUDGET = 13_000
"""context_window - max_output_tokens - safety_margin."""

EXAMPLE = REPO / "examples" / "python" / "openai_agents_session.py"


@function_tool
def read_log(name: str) -> str:
    """Reads a service's log."""
    return "\n".join(f"2026-11-27T10:{i % 60:02d}:00Z INFO {name} worker processed batch {i} in {i * 3} ms" for i in range(300))


@function_tool
def read_status(name: str) -> str:
    """Reads a service's status page."""
    return "\n".join(f"{name} worker {i}: healthy, queue depth {i * 7}, last batch {i * 3} ms ago" for i in range(90))


def agent_for(server: ModelServer, tool=read_log) -> Agent:
    client = AsyncOpenAI(base_url=server.base_url, api_key="test")
    return Agent(name="ops", instructions="You are an ops agent.", tools=[tool], model=OpenAIResponsesModel("gpt-4.1", client))


def run_turns(session: AgentmemSession, server: ModelServer, questions: list[str], run_filter=None, tool=read_log) -> list[str]:
    agent = agent_for(server, tool)
    config = RunConfig(call_model_input_filter=run_filter or session.input_filter())

    async def run() -> list[str]:
        return [(await Runner.run(agent, question, session=session, run_config=config)).final_output for question in questions]

    return asyncio.run(run())


def request_tokens(body: dict) -> int:
    return count_tokens(body["input"]) + count_tokens(body.get("instructions") or "") + count_tokens(body.get("tools") or [])


def assert_pairs_intact(items: list[dict]) -> None:
    """Every function_call answered by one function_call_output after it, and no output without its call."""
    calls: list[str] = []
    outputs: list[str] = []
    for item in items:
        if item.get("type") == "function_call":
            calls.append(item["call_id"])
        elif item.get("type") == "function_call_output":
            assert item["call_id"] in calls, f"output {item['call_id']} without its call"
            outputs.append(item["call_id"])
    assert sorted(calls) == sorted(outputs), f"calls {calls} vs outputs {outputs}"


def texts(items: list[dict]) -> list[str]:
    """Each item's text ("" for a function call)."""
    out = []
    for item in items:
        content = item.get("content", item.get("output", ""))
        if isinstance(content, list):
            out.append("\n".join(part.get("text", "") for part in content))
        else:
            out.append(content)
    return out


def user_texts(items: list[dict]) -> list[str]:
    return [text for item, text in zip(items, texts(items)) if item.get("role") == "user"]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


def test_it_is_an_sdk_session_built_like_the_sdks_own(data_dir: Path) -> None:
    session = AgentmemSession("s1", store=data_dir, session_settings={"limit": 3})
    assert isinstance(session, SdkSession)
    assert session.session_id == "s1" and session.session_settings == SessionSettings(limit=3)
    session.close()
    store = agentmem.Store(data_dir, agent="ops")
    again = AgentmemSession("s1", store=store)
    assert again.store is store
    again.close()
    with pytest.raises(InvalidSessionSettings, match="differs from the store's agent"):
        AgentmemSession("s1", store=store, agent="other")
    with pytest.raises(InvalidSessionSettings, match="unknown strategy"):
        AgentmemSession("s2", store=data_dir, strategy="forget")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "settings",
    [{"strategy": "auto"}, {"strategy": "summarizing", "context_limit": 6, "keep_last_n_turns": 3}],
    ids=["auto", "summarizing"],
)
def test_a_tool_using_agent_runs_to_the_end_inside_the_budget(data_dir: Path, settings: dict) -> None:
    session = AgentmemSession("long", store=data_dir, **settings, **BUDGET)
    session.store.write_memory("- Deploys go through the canary stage.")
    questions = [f"check the workers of region {i}" for i in range(12)]
    with ModelServer(calls_per_turn=2) as server:
        answers = run_turns(session, server, questions)
        bodies = server.bodies("/responses")
    assert answers == [f"Done. ({q})" for q in questions]
    # 12 turns of 3 calls each: two tool calls, then the answer.
    assert len(bodies) == 36
    largest = max(request_tokens(body) for body in bodies)
    assert largest <= INPUT_BUDGET, f"a request of {largest} tokens is over the {INPUT_BUDGET}-token budget"
    for body in bodies:
        assert_pairs_intact(body["input"])
        assert "canary stage" in body["instructions"] and body["instructions"].startswith("You are an ops agent.")
    # Sent whole, the last request would hold 24 outputs of ~6,000 tokens each.
    stats = session.stats()
    if settings["strategy"] == "summarizing":
        assert stats["compactions"] >= 1, stats
        assert any(text.startswith("[SUMMARY OF EARLIER CONVERSATION]") for text in texts(bodies[-1]["input"]))
    else:
        assert {"results_budgeted", "snipped"} <= {action["action"] for action in stats["actions"]}, stats
    # The durable history holds every item: per turn the user line, two calls, two outputs, the answer.
    history = session.history()
    assert len(history) == 12 * 6
    assert [e["content"] for e in history if e["trace_type"] == "user"] == questions
    outputs = [e for e in history if e["trace_type"] == "tool_result"]
    assert len(outputs) == 24 and all("batch 299 in 897 ms" in e["content"] for e in outputs)
    session.close()


def test_trimming_keeps_the_last_max_turns(data_dir: Path) -> None:
    session = AgentmemSession("trim", store=data_dir, strategy="trimming", max_turns=2, memory="off")
    with ModelServer(calls_per_turn=1) as server:
        run_turns(session, server, [f"question {i}" for i in range(5)])
        bodies = server.bodies("/responses")
    for body in bodies:
        users = user_texts(body["input"])
        assert len(users) <= 2
        assert_pairs_intact(body["input"])
    last_users = user_texts(bodies[-1]["input"])
    assert last_users == ["question 3", "question 4"]
    assert len([e for e in session.history() if e["trace_type"] == "user"]) == 5
    session.close()


def test_summarizing_shows_a_shadow_user_line_and_the_summary(data_dir: Path) -> None:
    session = AgentmemSession(
        "sum", store=data_dir, strategy="summarizing", context_limit=3, keep_last_n_turns=2, memory="off", **BUDGET
    )
    with ModelServer(calls_per_turn=1) as server:
        run_turns(session, server, [f"question {i}" for i in range(5)])
        bodies = server.bodies("/responses")
    early = texts(bodies[0]["input"])
    assert not any("[SUMMARY" in t for t in early)
    last = bodies[-1]["input"]
    shadow = [i for i, item in enumerate(last) if texts([item]) == ["Summarize the conversation so far."]]
    assert shadow and last[shadow[0]]["role"] == "user"
    summary = last[shadow[0] + 1]
    assert summary["role"] == "assistant" and texts([summary])[0].startswith("[SUMMARY OF EARLIER CONVERSATION]")
    raw_users = [t for item, t in zip(last[shadow[0] + 2 :], texts(last[shadow[0] + 2 :])) if item.get("role") == "user"]
    assert raw_users[-1] == "question 4" and len(raw_users) <= 3
    assert_pairs_intact(last)
    assert len(session.history()) == 5 * 4
    session.close()


def test_compacting_leaves_placeholders_with_tool_names_and_call_ids(data_dir: Path) -> None:
    session = AgentmemSession("ph", store=data_dir, strategy="compacting", memory="off", **BUDGET)
    with ModelServer(calls_per_turn=2) as server:
        run_turns(session, server, [f"question {i}" for i in range(4)], tool=read_status)
        bodies = server.bodies("/responses")
    last = bodies[-1]["input"]
    placeholders = [item for item in last if item.get("type") == "function_call_output" and item["output"].startswith("⟦removed:")]
    assert placeholders
    calls = {item["call_id"]: item["name"] for item in last if item.get("type") == "function_call"}
    for item in placeholders:
        assert item["call_id"] in calls and f"read_status {item['call_id']}" in item["output"]
    assert all(request_tokens(body) <= INPUT_BUDGET for body in bodies)
    assert all("worker 89: healthy" in e["content"] for e in session.history() if e["trace_type"] == "tool_result")
    session.close()


def test_none_sends_everything(data_dir: Path) -> None:
    session = AgentmemSession("none", store=data_dir, strategy="none", memory="off")
    with ModelServer(calls_per_turn=1) as server:
        run_turns(session, server, ["first", "second", "third"])
        last = server.bodies("/responses")[-1]["input"]
    assert user_texts(last) == ["first", "second", "third"]
    assert len([item for item in last if item.get("type") == "function_call_output"]) == 3
    session.close()


def test_strategy_precedence_is_request_over_conversation_over_agent_over_none(data_dir: Path) -> None:
    nothing = AgentmemSession("p0", store=data_dir, strategy=None)
    assert nothing.settings().strategy == "none"
    nothing.close()
    session = AgentmemSession("p1", store=data_dir, strategy="trimming", max_turns=1, memory="off")
    assert session.settings() == ContextSettings(strategy="trimming", max_turns=1, memory="off")
    with ModelServer(calls_per_turn=1) as server:
        run_turns(session, server, ["one", "two"])
        agent_level = server.bodies("/responses")[-1]["input"]
        # The agent's trimming keeps one turn.
        assert user_texts(agent_level) == ["two"]

        resolved = session.set_conversation_settings("none")
        assert resolved.strategy == "none" and resolved.max_turns == 1
        run_turns(session, server, ["three"])
        conversation_level = server.bodies("/responses")[-1]["input"]
        assert user_texts(conversation_level) == [
            "one",
            "two",
            "three",
        ]

        run_turns(session, server, ["four"], run_filter=session.input_filter("trimming", max_turns=2))
        request_level = server.bodies("/responses")[-1]["input"]
        assert user_texts(request_level) == ["three", "four"]
    assert session.settings(ContextSettings(memory="on")).memory == "on"
    with pytest.raises(InvalidSessionSettings, match="keep_last_n_turns"):
        session.set_conversation_settings("summarizing", context_limit=2, keep_last_n_turns=3)
    with pytest.raises(InvalidSessionSettings, match="unknown setting max_tokens"):
        session.input_filter(max_tokens=5)
    with pytest.raises(InvalidSessionSettings, match="max_turns must be a whole number"):
        session.set_conversation_settings("trimming", max_turns=0)
    assert session.settings().strategy == "none"
    session.close()


def test_get_items_limit_is_the_newest_items_without_orphan_outputs(data_dir: Path) -> None:
    session = AgentmemSession("lim", store=data_dir, strategy="none", memory="off")
    session.add(
        [
            {"role": "user", "content": "list the files"},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "ls", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "a.txt b.txt"},
            {"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": "Two files."}]},
        ]
    )
    assert [item.get("type") for item in asyncio.run(session.get_items())] == ["message", "function_call", "function_call_output", "message"]
    newest_two = asyncio.run(session.get_items(limit=2))
    assert [item["type"] for item in newest_two] == ["message"] and texts(newest_two) == ["Two files."]
    assert len(asyncio.run(session.get_items(limit=3))) == 3
    session.close()
    limited = AgentmemSession("lim", store=data_dir, strategy="none", memory="off", session_settings=SessionSettings(limit=1))
    assert texts(asyncio.run(limited.get_items())) == ["Two files."]
    limited.close()


def test_a_bad_item_writes_nothing(data_dir: Path) -> None:
    session = AgentmemSession("bad", store=data_dir)
    with pytest.raises(UnreadableItem, match="message 1"):
        session.add([{"role": "user", "content": "hello"}, {"type": "function_call_output", "output": "no call id"}])
    with pytest.raises(UnreadableItem, match="item 0 of the batch is a str"):
        session.add(["hello"])
    assert session.history() == []
    session.close()


@pytest.mark.parametrize("durability", ["os", "batch"])
def test_engine_calls_stay_in_the_event_loop_unless_they_may_block(data_dir: Path, durability: str) -> None:
    session = AgentmemSession("threads", store=agentmem.Store(data_dir, durability=durability), model="gpt-4o")
    threads = record_threads(session.agentmem_session)

    async def turns() -> None:
        for turn in range(3):
            await session.add_items([{"role": "user", "content": f"question {turn}"}])
            await session.get_items()

    asyncio.run(turns())
    session.close()
    in_loop = durability == "os"
    # The first view reads the session's state on a worker thread; an append waits for the disk unless it is "os".
    assert threads == [("ingest", in_loop), ("prepare", False), ("ingest", in_loop), ("prepare", True), ("ingest", in_loop), ("prepare", True)]


def test_pop_item_retracts_from_the_view_and_the_history_keeps_it(data_dir: Path) -> None:
    session = AgentmemSession("pop", store=data_dir, strategy="none", memory="off")
    with ModelServer(calls_per_turn=1) as server:
        run_turns(session, server, ["first question", "second question"])
    before = asyncio.run(session.get_items())
    popped = asyncio.run(session.pop_item())
    assert popped["role"] == "assistant" and texts([popped]) == ["Done. (second question)"]
    after = asyncio.run(session.get_items())
    assert after == before[:-1]
    popped_user = None
    while popped_user is None or popped_user.get("role") != "user":
        popped_user = asyncio.run(session.pop_item())
    assert texts([popped_user]) == ["second question"]
    assert texts(asyncio.run(session.get_items())) == texts(before[:4])
    history = session.history()
    contents = [e["content"] for e in history]
    assert "Done. (second question)" in contents and "second question" in contents
    notes = [e["content"] for e in history if "openai-agents" in (e.get("tags") or [])]
    assert len(notes) == 4 and all(note.startswith("⟦retracted:") for note in notes)
    assert session.revisions() == ["pop", "pop.r1", "pop.r2", "pop.r3", "pop.r4"]
    # The conversation goes on from the view.
    with ModelServer(calls_per_turn=1) as server:
        run_turns(session, server, ["third question"])
        last = server.bodies("/responses")[-1]["input"]
    assert user_texts(last) == ["first question", "third question"]
    session.close()


def test_clear_session_empties_the_view_and_keeps_the_history(data_dir: Path) -> None:
    session = AgentmemSession("clr", store=data_dir, strategy="none", memory="off")
    with ModelServer(calls_per_turn=1) as server:
        run_turns(session, server, ["remember the number 7"])
    history_before = session.history()
    asyncio.run(session.clear_session())
    assert asyncio.run(session.get_items()) == []
    assert asyncio.run(session.pop_item()) is None
    history = session.history()
    assert history[: len(history_before)] == history_before
    assert history[-1]["content"].startswith("⟦cleared; the conversation continues in session clr.r1⟧")
    session.close()


def test_memory_from_earlier_sessions_is_injected_and_can_be_turned_off(data_dir: Path) -> None:
    earlier = AgentmemSession("monday", store=data_dir, strategy="none")
    earlier.add([{"role": "user", "content": "The staging database is called pelican-7."}, {"role": "assistant", "content": "Noted."}])
    earlier.agentmem_session.end()
    earlier.close()
    today = AgentmemSession("tuesday", store=data_dir, **BUDGET)
    with ModelServer(calls_per_turn=1) as server:
        run_turns(today, server, ["Which staging database do we use?"])
        with_memory = server.bodies("/responses")[-1]
        run_turns(today, server, ["And again?"], run_filter=today.input_filter(memory="off"))
        without = server.bodies("/responses")[-1]
    assert "pelican-7" in json.dumps(with_memory["input"])
    assert "pelican-7" not in json.dumps(without["input"]) + (without.get("instructions") or "")
    today.close()


def test_the_filter_refuses_a_run_without_this_session(data_dir: Path) -> None:
    session = AgentmemSession("other", store=data_dir)
    session.add([{"role": "user", "content": "an earlier question"}])
    with ModelServer(calls_per_turn=0) as server:
        agent = agent_for(server)
        with pytest.raises(RunNotInSession):
            asyncio.run(Runner.run(agent, "hello", run_config=RunConfig(call_model_input_filter=session.input_filter())))
    session.close()


RESUME = """
import asyncio, json, sys
from agentmem.integrations.openai_agents import AgentmemSession
session = AgentmemSession("resumed", store=sys.argv[1], strategy="none", memory="off")
items = asyncio.run(session.get_items())
print(json.dumps({"items": items, "history": len(session.history()), "revisions": session.revisions()}))
session.close()
"""


def test_a_second_process_resumes_the_conversation(data_dir: Path) -> None:
    session = AgentmemSession("resumed", store=data_dir, strategy="none", memory="off")
    with ModelServer(calls_per_turn=1) as server:
        run_turns(session, server, ["first", "second"])
    asyncio.run(session.pop_item())
    view = asyncio.run(session.get_items())
    history = len(session.history())
    with pytest.raises(agentmem.SessionLocked):
        agentmem.Store(data_dir).resume_session("resumed.r1")
    session.close()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.run([sys.executable, "-c", RESUME, str(data_dir)], capture_output=True, text=True, env=env, check=True)
    seen = json.loads(child.stdout)
    assert seen == {"items": view, "history": history, "revisions": ["resumed", "resumed.r1"]}


def test_the_example_runs_and_a_second_run_continues_the_conversation(data_dir: Path) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), OPENAI_API_KEY="test", OPENAI_AGENTS_DISABLE_TRACING="1")
    with ModelServer(calls_per_turn=2) as server:
        base = [sys.executable, str(EXAMPLE), "--dir", str(data_dir), "--session", "demo", "--base-url", server.base_url]
        first = subprocess.run(base + ["--context-window", "16000"], capture_output=True, text=True, env=env, check=True)
        second = subprocess.run(base + ["--context-window", "16000", "Where were we?"], capture_output=True, text=True, env=env, check=True)
        bodies = server.bodies("/responses")
    assert "> Run the tests of the parser.\nDone." in first.stdout
    summary = json.loads(first.stdout.strip().splitlines()[-1])
    assert summary["history_events"] == 6 * 6
    assert json.loads(second.stdout.strip().splitlines()[-1])["history_events"] == 7 * 6
    # 16,000-token window, the registry's 32,768 output tokens capped to what fits: every request fits the window.
    assert all(request_tokens(body) <= 16_000 for body in bodies)
    last = bodies[-1]
    assert "Summarize the conversation so far." in texts(last["input"])
    assert "run_tests(package)" in last["instructions"]
    for body in bodies:
        assert_pairs_intact(body["input"])


def test_streamed_runs_and_chat_completions_models_keep_every_item(data_dir: Path) -> None:
    from agents import OpenAIChatCompletionsModel

    session = AgentmemSession("streamed", store=data_dir, memory="off", **BUDGET)
    with ModelServer(calls_per_turn=2) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="test")
        streamed_agent = agent_for(server)
        chat_agent = Agent(name="chat", tools=[read_log], model=OpenAIChatCompletionsModel("gpt-4.1", client))
        config = RunConfig(call_model_input_filter=session.input_filter())

        async def run() -> None:
            for i in range(3):
                result = Runner.run_streamed(streamed_agent, f"streamed {i}", session=session, run_config=config)
                async for _ in result.stream_events():
                    pass
            # Chat Completions items carry the SDK's placeholder id: each must still be kept.
            for i in range(2):
                await Runner.run(chat_agent, f"chat {i}", session=session, run_config=config)

        asyncio.run(run())
        responses = server.bodies("/responses")
        chats = server.bodies("/chat/completions")
    assert len(responses) == 9 and len(chats) == 6
    assert all(request_tokens(body) <= INPUT_BUDGET for body in responses)
    assert all(count_tokens(body["messages"]) + count_tokens(body.get("tools") or []) <= INPUT_BUDGET for body in chats)
    for body in chats:
        answered = {m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"}
        called = {c["id"] for m in body["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []}
        assert answered == called
    history = session.history()
    assert len(history) == 5 * 6
    assert [e["content"] for e in history if e["trace_type"] == "assistant"][-2:] == ["Done. (chat 0)", "Done. (chat 1)"]
    session.close()


def test_a_pop_after_an_evicted_output_keeps_its_full_text(data_dir: Path) -> None:
    huge = "\n".join(f"row {i}: " + "lorem ipsum " * 8 for i in range(2_500))
    session = AgentmemSession("evicted", store=data_dir, strategy="none", memory="off")
    session.add(
        [
            {"role": "user", "content": "dump the table"},
            {"type": "function_call", "id": "fc_9", "call_id": "call_9", "name": "dump", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_9", "output": huge},
            {"type": "message", "id": "msg_9", "role": "assistant", "content": [{"type": "output_text", "text": "Dumped."}]},
        ]
    )
    assert session.agentmem_session.events()[2].get("tool_result_ref")
    assert texts([session.pop()]) == ["Dumped."]
    current = session.agentmem_session.events()
    assert [e["trace_type"] for e in current] == ["user", "tool_call", "tool_result"]
    assert current[2]["content"] == huge
    assert session.agentmem_session.evicted("call_9", 0, 1)["total_lines"] == 2_500
    session.close()
