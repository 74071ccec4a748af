"""The pydantic-ai adapter on real runs: pydantic-ai from PyPI driving the
loopback model server over HTTP, a real store on disk, tools returning big
outputs, a budget small enough that the session compacts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai", reason="python/tests/requirements-pydantic_ai.txt is not installed")

from conftest import record_threads  # noqa: E402
from model_server import ModelServer, count_tokens  # noqa: E402
from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.capabilities import ProcessHistory  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402

import agentmem  # noqa: E402
from agentmem.integrations.pydantic_ai import (  # noqa: E402
    SUMMARY_PREFIX,
    AgentmemHistoryProcessor,
    AgentmemToolset,
    Compaction,
    ContextUsage,
    EngineCalls,
    ViewBuilder,
    request_events,
    response_events,
)

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "python" / "pydantic_ai_agent.py"

WINDOW = 12_000
"""A small context window, so a dozen turns with big tool outputs compact."""
MAX_OUTPUT = 2_000


def file_text(path: str, lines: int) -> str:
    """A tool output of ``lines`` lines of code-like text, unique to ``path``."""
    return "\n".join(f"{path}:{i}: def handler_{i}(request): return lookup(request, key={i * 7919})" for i in range(lines))


def chat_model(server: ModelServer) -> OpenAIChatModel:
    return OpenAIChatModel("gpt-4o", provider=OpenAIProvider(base_url=server.base_url, api_key="test"))


def coding_agent(server: ModelServer, memory: AgentmemHistoryProcessor, outputs: dict[str, str]) -> Agent:
    """An agent with a ``read_file`` tool whose outputs are big, kept in ``outputs`` by path."""
    agent = Agent(
        chat_model(server),
        system_prompt="You are a coding agent.",
        capabilities=[memory.capability()],
        toolsets=[AgentmemToolset(memory)],
    )
    reads = iter(range(10_000))

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        n = next(reads)
        # Every seventh read is huge (evicted), the others large (cut at write time).
        text = file_text(f"{path}#{n}", 2_400 if n % 7 == 3 else 300)
        outputs[f"{path}#{n}"] = text
        return text

    return agent


def assert_pairs_intact(messages: list[dict]) -> None:
    """Chat Completions' rule: every tool call answered once, right after its assistant message; no result without a call."""
    open_calls: set[str] = set()
    answered: set[str] = set()
    for message in messages:
        if message["role"] == "assistant":
            assert not open_calls, f"calls {open_calls} unanswered before the next assistant message"
            open_calls = {call["id"] for call in message.get("tool_calls") or []}
        elif message["role"] == "tool":
            call_id = message["tool_call_id"]
            assert call_id in open_calls, f"a result for {call_id}, which no assistant message before it called"
            assert call_id not in answered, f"{call_id} answered twice"
            open_calls.discard(call_id)
            answered.add(call_id)
        else:
            assert not open_calls or message["role"] == "system", f"calls {open_calls} unanswered before a {message['role']} message"
    assert not open_calls, f"calls {open_calls} unanswered at the end"


def test_a_tool_using_agent_runs_to_compaction_inside_the_budget_and_keeps_everything(store: agentmem.Store) -> None:
    store.write_memory("- The user prefers tabs over spaces.")
    usages: list[ContextUsage] = []
    memory = AgentmemHistoryProcessor(
        store.session("long-run"), context_window=WINDOW, max_output_tokens=MAX_OUTPUT, on_usage=usages.append
    )
    outputs: dict[str, str] = {}
    prompts = [f"Step {t}: review module_{t}.py and tell me what {t * 13} handlers do. " + "Context. " * 150 for t in range(14)]
    history = None
    with ModelServer(calls_per_turn=2, tool="read_file", arguments="numbered") as server:
        agent = coding_agent(server, memory, outputs)
        answers = []
        for prompt in prompts:
            result = agent.run_sync(prompt, message_history=history)
            history = result.all_messages()
            answers.append(result.output)
        bodies = server.bodies("/chat/completions")
    memory.close()

    # Ran to the end: every turn answered, after its two tool calls.
    assert answers == [f"Done. ({prompt[:60]})" for prompt in prompts]
    assert len(bodies) == 3 * len(prompts) == len(usages)

    # It compacted, by itself, and the summary is what the model saw next.
    compacted_at = [i for i, usage in enumerate(usages) if usage.compacted is Compaction.AUTOMATIC]
    assert compacted_at, [u.stats["actions"] for u in usages]
    first = compacted_at[0]
    assert any(SUMMARY_PREFIX in json.dumps(m) for m in bodies[first]["messages"])
    assert not any(SUMMARY_PREFIX in json.dumps(m) for m in bodies[first - 1]["messages"])

    # Every request fit the budget, counted by the server (o200k_base, tools included) and by agentmem.
    budget = usages[0].input_budget
    sent = [count_tokens(body["messages"]) + count_tokens(body.get("tools") or []) for body in bodies]
    assert max(sent) <= budget, (max(sent), budget)
    assert max(usage.context_tokens for usage in usages) <= budget
    # Well inside: the margin left by the largest request (reported by -rP).
    print(f"largest request {max(sent)} of {budget} tokens; margin {budget - max(sent)}")

    # Tool pairs intact in every request; the memory in every system prompt.
    for body in bodies:
        assert_pairs_intact(body["messages"])
        assert "The user prefers tabs over spaces." in body["messages"][0]["content"]

    # The huge output was evicted from the view with a way back, and reads back whole.
    huge = next(path for path in outputs if int(path.split("#")[1]) % 7 == 3)
    call_id = next(
        m["tool_call_id"]
        for body in bodies
        for m in body["messages"]
        if m["role"] == "tool" and m["content"].startswith("[tool output evicted") and huge.split("#")[0] in m["content"]
    )
    reader, pages, offset = store.read_session("long-run"), [], 0
    while True:
        page = reader.evicted(call_id, offset, 1_000)
        pages.append(page["text"])
        offset += page["lines_returned"]
        if not page["has_more"]:
            break
    assert "".join(pages).rstrip("\n") == outputs[huge]
    # The agent's way back: the read_evicted_output tool pages through it and says where to go on.
    first_page = _run(AgentmemToolset(store, session=reader).read_evicted_output(call_id))
    assert first_page.startswith(outputs[huge].splitlines()[0]) and "read on with offset=200]" in first_page

    # The durable history holds every item, whole: nothing trimmed, nothing twice.
    events = store.read_session("long-run").events()
    by_type: dict[str, list[dict]] = {}
    for event in events:
        by_type.setdefault(event["trace_type"], []).append(event)
    assert [e["content"] for e in by_type["user"]] == prompts
    assert [e["content"] for e in by_type["assistant"]] == answers
    assert sorted(e["content"] for e in by_type["tool_result"]) == sorted(outputs.values())
    calls = [e["tool_call_id"] for e in by_type["tool_call"]]
    assert len(calls) == len(set(calls)) == 2 * len(prompts)
    # The server numbered its arguments, so no call repeats another (which the engine would snip).
    assert len({e["tool_args"]["path"] for e in by_type["tool_call"]}) == len(calls)
    assert {e["tool_call_id"] for e in by_type["tool_result"]} == set(calls)
    assert len(events) == 6 * len(prompts)
    # The provider's usage is on the log, for the engine to anchor its counts on.
    assert sum(1 for e in events if e.get("usage")) == len(bodies)


def test_request_compact_folds_the_history_before_the_next_call_with_its_focus(store: agentmem.Store) -> None:
    usages: list[ContextUsage] = []
    memory = AgentmemHistoryProcessor(store.session("manual"), on_usage=usages.append)
    outputs: dict[str, str] = {}
    with ModelServer(calls_per_turn=1, tool="read_file", arguments="numbered") as server:
        agent = coding_agent(server, memory, outputs)
        history = None
        for t in range(3):
            history = agent.run_sync(f"look at parser_{t}.rs", message_history=history).all_messages()
        memory.request_compact("the parser's error codes")
        agent.run_sync("what next?", message_history=history)
        bodies = server.bodies("/chat/completions")
    memory.close()

    assert [u.compacted for u in usages[-2:]] == [Compaction.REQUESTED, Compaction.NONE]
    before, after = bodies[-3], bodies[-2]
    summary = [m["content"] for m in after["messages"] if SUMMARY_PREFIX in str(m.get("content"))]
    assert not any(SUMMARY_PREFIX in str(m.get("content")) for m in before["messages"])
    assert summary and "the parser's error codes" in summary[0]
    assert count_tokens(after["messages"]) < count_tokens(before["messages"])
    assert_pairs_intact(after["messages"])
    # Compaction archived the events; the history still holds them all.
    assert len(store.read_session("manual").events()) == 4 * 4


def test_the_memory_tools_edit_memory_md_and_search_the_whole_history(store: agentmem.Store) -> None:
    memory = AgentmemHistoryProcessor(store.session("tools"))
    with ModelServer(calls_per_turn=1, tool="write_memory") as server:
        agent = Agent(chat_model(server), capabilities=[memory.capability()], toolsets=[AgentmemToolset(memory)])
        agent.run_sync("remember that deploys go through canary-7")
        server.tool = "search_conversation_history"
        agent.run_sync("when did we talk about canary-7?")
        bodies = server.bodies("/chat/completions")
    memory.close()

    # write_memory ran with the model's arguments; MEMORY.md is in the next request's system prompt.
    assert store.read_memory()["content"].strip() == "content-value"
    assert "content-value" in bodies[2]["messages"][0]["content"]
    assert "content-value" not in json.dumps(bodies[0]["messages"][0])
    # search_conversation_history ran with the model's query and found the earlier tool call that held it.
    search_result = [m["content"] for m in bodies[-1]["messages"] if m["role"] == "tool"][-1]
    assert search_result.startswith("2 match(es) for 'query-value':") and "write_memory" in search_result

    tools = AgentmemToolset(store)
    hits = _run(tools.search_conversation_history("canary-7"))
    assert "- [tools turn_0001 user] remember that deploys go through [canary]-[7]" in hits.splitlines()
    assert _run(tools.update_memory("content-value", "- Deploys go through canary-7.")).startswith("Memory updated")
    assert _run(tools.read_memory()).strip() == "- Deploys go through canary-7."
    refused = _run(tools.update_memory("not in the notebook", "x"))
    assert refused.startswith("Memory not changed:")


@pytest.mark.parametrize("engine_calls", list(EngineCalls))
def test_a_streamed_run_is_kept_whole_with_the_usage_of_each_response(store: agentmem.Store, engine_calls: EngineCalls) -> None:
    memory = AgentmemHistoryProcessor(store.session("streamed"), engine_calls=engine_calls)
    with ModelServer(calls_per_turn=1, tool="read_file", arguments="numbered") as server:
        agent = coding_agent(server, memory, {})

        async def stream() -> str:
            async with agent.run_stream("stream the answer") as run:
                return await run.get_output()

        output = _run(stream())
        assert all(body["stream"] for body in server.bodies("/chat/completions"))
    memory.close()
    assert output == "Done. (stream the answer)"
    events = store.read_session("streamed").events()
    assert [e["trace_type"] for e in events] == ["user", "tool_call", "tool_result", "assistant"]
    # Each response's usage, as the server reported it, on its last event.
    assert [e["usage"]["completion_tokens"] > 0 for e in events if e.get("usage")] == [True, True]
    assert [e["trace_type"] for e in events if e.get("usage")] == ["tool_call", "assistant"]


def test_a_plain_history_processor_persists_the_final_answer_on_the_next_call(store: agentmem.Store) -> None:
    memory = AgentmemHistoryProcessor(store.session("plain"))
    with ModelServer(calls_per_turn=0) as server:
        agent = Agent(chat_model(server), capabilities=[ProcessHistory(memory)])
        first = agent.run_sync("first question")
        kinds = [e["trace_type"] for e in memory.session.sync.events()]
        assert kinds == ["user"]  # the answer arrives after the last processor call of the run
        agent.run_sync("second question", message_history=first.all_messages())
    memory.close()
    events = store.read_session("plain").events()
    assert [(e["trace_type"], e["content"]) for e in events] == [
        ("user", "first question"),
        ("assistant", "Done. (first question)"),
        ("user", "second question"),
    ]


def test_broken_tool_pairs_are_repaired_in_the_view_and_kept_as_they_were_in_the_log(store: agentmem.Store) -> None:
    memory = AgentmemHistoryProcessor(store.session("broken"), model="gpt-4o")
    history = [
        ModelRequest(parts=[UserPromptPart("read both files")]),
        ModelResponse(parts=[ToolCallPart("read_file", {"path": "a"}, tool_call_id="c1"), ToolCallPart("read_file", {"path": "b"}, tool_call_id="c2")]),
        # The run was interrupted: c2 never answered; a stray return answers a call nobody made.
        ModelRequest(parts=[ToolReturnPart("read_file", "contents of a", tool_call_id="c1"), ToolReturnPart("read_file", "stray", tool_call_id="c9")]),
        ModelResponse(parts=[TextPart("I read a.")]),
        ModelRequest(parts=[UserPromptPart("and now?")]),
    ]
    view = _run(memory(_NoRun(), history))
    memory.close()

    returns = [(p.tool_call_id, p.content) for m in view for p in m.parts if isinstance(p, ToolReturnPart)]
    assert [call_id for call_id, _ in returns] == ["c1", "c2"]
    assert returns[1][1].startswith("aborted")
    assert isinstance(view[-1], ModelRequest) and view[-1].parts[-1].content == "and now?"
    # The log keeps what happened, the stray return too; only the view is repaired.
    logged = [(e["trace_type"], e.get("tool_call_id")) for e in store.read_session("broken").events()]
    assert logged == [("user", None), ("tool_call", "c1"), ("tool_call", "c2"), ("tool_result", "c1"), ("tool_result", "c9"), ("assistant", None), ("user", None)]


def test_a_failed_compaction_writes_nothing_twice_and_is_tried_again(tmp_path: Path) -> None:
    calls = []

    def flaky_summarizer(request: dict) -> str:
        calls.append(request["focus"])
        if len(calls) == 1:
            raise RuntimeError("the summarizing model is down")
        return "## Goal\n- ship the parser"

    store = agentmem.Store(tmp_path / "data", summarizer=flaky_summarizer)
    memory = AgentmemHistoryProcessor(store.session("flaky"), model="gpt-4o")
    history = [
        ModelRequest(parts=[UserPromptPart("fix the parser")]),
        ModelResponse(parts=[TextPart("fixed")]),
        ModelRequest(parts=[UserPromptPart("now the lexer")]),
    ]
    memory.request_compact("the parser")
    with pytest.raises(agentmem.SummarizerError) as failed:
        _run(memory(_NoRun(), history))
    assert isinstance(failed.value.__cause__, RuntimeError)
    assert len(store.read_session("flaky").events()) == 3  # appended once, before the compaction failed

    view = _run(memory(_NoRun(), history))  # the same history again, as a retried run sends it
    memory.close()
    assert calls == ["the parser", "the parser"]
    assert memory.last_usage.compacted is Compaction.REQUESTED
    assert any("ship the parser" in str(p.content) for m in view for p in m.parts)
    assert len(store.read_session("flaky").events()) == 3


class _NoRun:
    """What the processor reads of a RunContext, outside a run: no tools."""

    tool_manager = None


def _shape(messages: list) -> list:
    """What a view says: each message's kind and parts (kind, text, call id, tool name)."""
    return [
        (
            type(message).__name__,
            [(type(part).__name__, getattr(part, "content", None), getattr(part, "tool_call_id", None), getattr(part, "tool_name", None)) for part in message.parts],
        )
        for message in messages
    ]


def test_a_view_built_from_what_changed_reads_as_one_built_afresh_and_keeps_its_messages() -> None:
    system = {"role": "system", "content": "You are a coding agent."}
    first = [
        {"role": "user", "content": "read a"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "contents of a"},
    ]
    # The engine hands back the same entries for what it prepared before; the system message is new each call.
    views = [
        [dict(system), *first],
        [dict(system), *first, {"role": "tool", "tool_call_id": "c1", "content": "more of a"}],
        [dict(system), *first, {"role": "assistant", "content": "a read."}, {"role": "user", "content": "now b"}],
        [{"role": "system", "content": "Another prompt."}, *first, {"role": "assistant", "content": "a read."}],
        # A compaction: a summary, then the newest turn's entries as they were.
        [dict(system), {"role": "user", "content": f"{SUMMARY_PREFIX} a was read"}, first[1], first[2]],
        [],
    ]
    builder = ViewBuilder("s")
    built = []
    for chat in views:
        built.append(builder.messages(chat))
        assert _shape(built[-1]) == _shape(ViewBuilder("s").messages(chat))
    request, response, tools = built[0]
    # The same chat entries (the system message equal) make the same message objects ...
    assert built[1][0] is request and built[1][1] is response
    assert built[2][0] is request and built[2][1] is response
    # ... but a tool result joining the request it ended makes a new one.
    assert built[1][2] is not tools and len(built[1][2].parts) == 2
    # A changed system prompt rebuilds the first request; the response is found by what it says.
    assert built[3][0] is not request and built[3][1] is response
    # After a compaction the newest turn's response is kept too.
    assert built[4][1] is response and built[4][0].parts[-1].content.startswith(SUMMARY_PREFIX)
    assert built[5] == []
    assert builder.messages(views[2]) is not builder.messages(views[2])  # a new list each time


@pytest.mark.parametrize("durability", ["os", "batch"])
def test_auto_engine_calls_stay_in_the_event_loop_unless_they_may_block(tmp_path: Path, durability: str) -> None:
    import asyncio
    store = agentmem.Store(tmp_path / "data", durability=durability)
    memory = AgentmemHistoryProcessor(store.session("threads"), model="gpt-4o")
    threads = record_threads(memory.session.sync)

    async def turns() -> None:
        history: list = []
        for turn in range(3):
            history = [*history, ModelRequest(parts=[UserPromptPart(f"question {turn}")])]
            history = await memory(_NoRun(), history)

    asyncio.run(turns())
    memory.close()
    in_loop = durability == "os"
    # The first prepare reads the session's state on a worker thread; an append waits for the disk unless it is "os".
    assert threads == [("ingest", in_loop), ("prepare", False), ("ingest", in_loop), ("prepare", True), ("ingest", in_loop), ("prepare", True)]


def test_messages_become_events_part_by_part() -> None:
    request = ModelRequest(
        parts=[
            SystemPromptPart("be brief"),
            UserPromptPart(["look at", "this"]),
            ToolReturnPart("read_file", {"lines": 3}, tool_call_id="c1"),
            ToolReturnPart("read_file", "path is required", tool_call_id="c2", outcome="retried"),
        ]
    )
    events = request_events(request)
    assert [(e["trace_type"], e.get("tool_call_id")) for e in events] == [("user", None), ("tool_result", "c1"), ("tool_result", "c2")]
    assert events[0]["content"] == "look at\nthis" and events[1]["content"] == '{"lines":3}'
    assert "path is required" in events[2]["content"]

    response = ModelResponse(
        parts=[ThinkingPart("hmm", signature="sig"), TextPart("reading"), ToolCallPart("read_file", '{"path": "a"}', tool_call_id="c3")],
        model_name="gpt-4o",
    )
    response.usage.input_tokens, response.usage.output_tokens = 120, 7
    events = response_events(response)
    assert [e["trace_type"] for e in events] == ["reasoning", "assistant", "tool_call"]
    assert events[0]["opaque"] == {"signature": "sig"} and events[2]["tool_args"] == {"path": "a"}
    assert events[2]["usage"] == {"prompt_tokens": 120, "completion_tokens": 7, "cached_tokens": 0, "model": "gpt-4o"}
    assert len({e["id"] for e in events}) == 3


def test_a_second_process_resumes_the_session_and_sees_its_history(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with ModelServer(calls_per_turn=1, tool="list_files") as server:
        env = dict(os.environ, OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="test")
        env["PYTHONPATH"] = os.pathsep.join(sys.path)

        def example(*args: str) -> list[dict]:
            run = subprocess.run(
                [sys.executable, str(EXAMPLE), "--dir", str(data), "--session", "resumed", "--model", "gpt-4o", *args],
                capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
            )  # fmt: skip
            assert run.returncode == 0, run.stderr
            return [json.loads(line) for line in run.stdout.splitlines()]

        first = example("find the config file", "open it")
        seen_before = len(server.bodies())
        second = example("--compact", "the config file", "what did we find?")
        bodies = server.bodies("/chat/completions")

    assert [line["answer"] for line in first] == ["Done. (find the config file)", "Done. (open it)"]
    # user, call, result, answer per prompt: 4 events each, kept across processes.
    assert [line["events"] for line in first + second] == [4, 8, 12]
    assert [line["compactions"] for line in first + second] == [[], [], ["requested"]]
    # The second process's first request carries the first process's conversation (as a summary
    # and the raw tail), and the tool outputs it listed.
    resumed = json.dumps(bodies[seen_before]["messages"])
    assert "find the config file" in resumed and "open it" in resumed and SUMMARY_PREFIX in resumed
    assert_pairs_intact(bodies[seen_before]["messages"])


def _run(coroutine):
    import asyncio

    return asyncio.run(coroutine)
