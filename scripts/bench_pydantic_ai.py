#!/usr/bin/env python3
"""Per-turn cost of agentmem's pydantic-ai history processor beside
summarization-pydantic-ai's ContextManagerMiddleware, on the shared workload.

Both are pydantic-ai history processors, run alternately turn by turn in one
process (taking turns going first), each on its own copy of the conversation,
as an agent drives them: append the turn's messages (the user prompt, each tool call and its return,
the reply) to the history the processor returned last time, then run the
processor once, as before the next model call. Timed: the processor call
(persisting, counting, compacting, building the view), nothing else; for
agentmem also split into the engine's step (append, compact, prepare, the
payload's JSON across) and the adapter's own work (converting messages to
events and the view back to messages, any thread hop).

- agentmem: ``AgentmemHistoryProcessor`` (``--engine-calls``: ``auto``, the
  default, in the event loop unless the call may block; ``worker-thread``;
  ``in-event-loop``) over a session on disk (durability ``--durability``: "batch", the default, fsyncs each call's appends; "os",
  like messages.json here, leaves it to the OS), a 128,000-token input
  budget, the engine's exact o200k_base counting and its default
  (extractive) summarizer.
- summarization-pydantic-ai 0.1.0 ``ContextManagerMiddleware`` (the version
  ``../shared/bench/README.md`` measured, with ``messages_path``: every
  message kept in messages.json), ``max_tokens=128_000``, counting ``memo``
  (exact o200k_base counts cached per text, as the README's figures), and a
  stand-in summarizer returning a fixed short summary instead of an LLM call.

Over budget: agentmem's view by the engine's own count (``context_tokens`` >
``input_budget``); the middleware's output by the memo count (> 128,000).

    pip install agentmem-engine pydantic-ai-slim==2.68.0 tiktoken==0.14.0 \\
        "summarization-pydantic-ai[hybrid]==0.1.0"       # pydantic-ai-middleware 0.2.4
    python3 ../shared/bench/workload.py --turns 200 --seed 1 --out /tmp/workload-200.jsonl
    python3 scripts/bench_pydantic_ai.py /tmp/workload-200.jsonl [--turns N] [--durability os] [--engine-calls in-event-loop] [--peer none]

pydantic-ai-middleware 0.2.4 (the middleware's base class) imports a module
pydantic-ai 2 no longer has (``pydantic_ai.builtin_tools``) from its package's
``__init__``; the processor path measured here does not use it, so the script
loads the middleware's base module without that ``__init__``. Like
scripts/bench_tiktoken.py, it fills TIKTOKEN_CACHE_DIR from the rank files the
tiktoken-rs crate ships, so it runs offline.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
import types
from pathlib import Path

from bench_tiktoken import offline_cache

BUDGET = 128_000
SYSTEM = "You are a coding agent."
FIXED_SUMMARY = "The user and the agent worked through the files and tests above; details are in the history."


def turns_of(path: str) -> list[list[dict]]:
    turns: dict[int, list[dict]] = {}
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            event = json.loads(line)
            turns.setdefault(event["turn"], []).append(event)
    return [turns[k] for k in sorted(turns)]


def turn_messages(events: list[dict]) -> list:
    """A workload turn as the pydantic-ai messages an agent run makes of it."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, SystemPromptPart, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart

    messages: list = []
    names: dict[str, str] = {}
    for event in events:
        kind = event["kind"]
        if kind == "user":
            parts = [UserPromptPart(event["content"])]
            if event["turn"] == 0:
                parts.insert(0, SystemPromptPart(SYSTEM))
            messages.append(ModelRequest(parts=parts))
        elif kind == "tool_call":
            names[event["tool_call_id"]] = event["tool_name"]
            call = ToolCallPart(event["tool_name"], event.get("tool_args") or {}, tool_call_id=event["tool_call_id"])
            messages.append(ModelResponse(parts=[call]))
        elif kind == "tool_result":
            part = ToolReturnPart(names.get(event["tool_call_id"], ""), event["content"], tool_call_id=event["tool_call_id"])
            messages.append(ModelRequest(parts=[part]))
        elif kind == "assistant":
            messages.append(ModelResponse(parts=[TextPart(event["content"])]))
        else:
            raise ValueError(f"the workload has an event kind {kind!r} this script does not know")
    return messages


def load_middleware_class():
    """summarization-pydantic-ai's ContextManagerMiddleware, its base loaded without pydantic-ai-middleware's ``__init__``."""
    spec = importlib.util.find_spec("pydantic_ai_middleware")
    if spec is None or not spec.submodule_search_locations:
        sys.exit('summarization-pydantic-ai is not installed: pip install "summarization-pydantic-ai[hybrid]==0.1.0"')
    package = types.ModuleType("pydantic_ai_middleware")
    package.__path__ = list(spec.submodule_search_locations)
    sys.modules["pydantic_ai_middleware"] = package
    from pydantic_ai_middleware.base import AgentMiddleware

    package.AgentMiddleware = AgentMiddleware
    from pydantic_ai_summarization.middleware import ContextManagerMiddleware

    return ContextManagerMiddleware


def memo_counter():
    """Exact o200k_base counts, each text encoded once (the README's ``memo``)."""
    import tiktoken
    from pydantic_ai.messages import ModelRequest

    encoding = tiktoken.get_encoding("o200k_base")
    cache: dict[str, int] = {}

    def count_text(text: str) -> int:
        found = cache.get(text)
        if found is None:
            found = cache[text] = len(encoding.encode_ordinary(text))
        return found

    def count(messages: list) -> int:
        total = 0
        for message in messages:
            for part in message.parts:
                content = getattr(part, "content", None)
                if isinstance(content, str):
                    total += count_text(content)
                elif content is not None:
                    total += count_text(json.dumps(content, default=str))
                if not isinstance(message, ModelRequest) and hasattr(part, "args"):
                    total += count_text(part.args_as_json_str())
        return total

    return count


class _NoTools:
    """What the processor reads of a RunContext when no agent runs it: no model, no tools."""

    tool_manager = None
    model = None


async def run(turns: list[list[dict]], durability: str, engine_calls: str, peer: str) -> dict:
    import agentmem
    from agentmem.integrations.pydantic_ai import AgentmemHistoryProcessor, EngineCalls

    middleware_class = load_middleware_class()

    class Middleware(middleware_class):  # type: ignore[misc, valid-type]
        async def _create_summary(self, messages_to_summarize, focus=None):  # noqa: ANN001
            return FIXED_SUMMARY

    folder = Path(tempfile.mkdtemp(prefix="bench-pydantic-ai-"))
    store = agentmem.Store(folder / "agentmem", durability=durability)
    processor = AgentmemHistoryProcessor(
        store.create_session("bench"),
        model="gpt-4o",
        context_window=BUDGET,
        max_output_tokens=0,
        safety_margin=0,
        engine_calls=EngineCalls(engine_calls),
    )
    engine: list[float] = []
    native = processor.session.sync
    spent = [0.0]

    def timed(method):  # noqa: ANN001, ANN202
        def call(*arguments, **settings):  # noqa: ANN002, ANN003
            started = time.perf_counter()
            try:
                return method(*arguments, **settings)
            finally:
                spent[0] += (time.perf_counter() - started) * 1000

        return call

    # The engine's part of each call (append, compact, prepare, the JSON across), on this session object only.
    native.ingest, native.compact, native.prepare = timed(native.ingest), timed(native.compact), timed(native.prepare)
    counter = memo_counter()
    middleware = Middleware(max_tokens=BUDGET, token_counter=counter, messages_path=str(folder / "messages.json"))
    context = _NoTools()

    ours: list[float] = []
    theirs: list[float] = []
    over_ours = over_theirs = compactions_ours = 0
    history_ours: list = []
    history_theirs: list = []

    async def agentmem_turn(events: list[dict]) -> None:
        nonlocal history_ours, over_ours, compactions_ours
        history_ours = [*history_ours, *turn_messages(events)]
        spent[0] = 0.0
        started = time.perf_counter()
        history_ours = await processor(context, history_ours)
        ours.append((time.perf_counter() - started) * 1000)
        engine.append(spent[0])
        usage = processor.last_usage
        over_ours += usage.context_tokens > usage.input_budget
        compactions_ours += usage.compacted.value != "none"

    async def middleware_turn(events: list[dict]) -> None:
        nonlocal history_theirs, over_theirs
        history_theirs = [*history_theirs, *turn_messages(events)]
        started = time.perf_counter()
        history_theirs = await middleware(history_theirs)
        theirs.append((time.perf_counter() - started) * 1000)
        over_theirs += counter(history_theirs) > BUDGET

    for number, events in enumerate(turns):
        # The two take turns going first.
        order = (agentmem_turn, middleware_turn) if number % 2 == 0 else (middleware_turn, agentmem_turn)
        if peer == "none":
            order = (agentmem_turn,)
        for turn in order:
            await turn(events)
    processor.close()
    return {
        "turns": len(turns),
        "durability": durability,
        "engine_calls": engine_calls,
        "agentmem": figures(ours)
        | {
            "engine_p50_ms": round(statistics.median(engine), 3),
            "adapter_p50_ms": round(statistics.median(o - e for o, e in zip(ours, engine)), 3),
            "over_budget": over_ours,
            "compactions": compactions_ours,
            "input_budget": processor.last_usage.input_budget,
        },
        "middleware": theirs and figures(theirs) | {"over_budget": over_theirs, "compactions": middleware.compression_count},
        "p50_ratio": theirs and statistics.median(theirs) / statistics.median(ours),
    }


def figures(ms: list[float]) -> dict:
    ordered = sorted(ms)
    return {
        "p50_ms": round(statistics.median(ms), 3),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 3),
        "first_100_mean_ms": round(statistics.fmean(ms[:100]), 3),
        "first_100_mean_past_turn_1_ms": round(statistics.fmean(ms[1:101]), 3),
        "last_100_mean_ms": round(statistics.fmean(ms[-100:]), 3),
        "first_100_median_ms": round(statistics.median(ms[:100]), 3),
        "last_100_median_ms": round(statistics.median(ms[-100:]), 3),
        # The median of each tenth of the run, to see where the cost grows and where it stops.
        "median_by_tenth_ms": [round(statistics.median(ms[i * len(ms) // 10 : (i + 1) * len(ms) // 10]), 2) for i in range(10)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", help="a JSONL file written by ../shared/bench/workload.py")
    parser.add_argument("--turns", type=int, help="only the first N turns")
    parser.add_argument(
        "--engine-calls", choices=["auto", "worker-thread", "in-event-loop"], default="auto", help="the processor's (default: auto)"
    )
    parser.add_argument("--durability", choices=["always", "batch", "os"], default="batch", help="agentmem's (default: batch)")
    parser.add_argument(
        "--peer", choices=["middleware", "none"], default="middleware", help="none: agentmem alone, without the middleware's calls in between"
    )
    arguments = parser.parse_args()
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", offline_cache())
    turns = turns_of(arguments.workload)[: arguments.turns]
    print(json.dumps(asyncio.run(run(turns, arguments.durability, arguments.engine_calls, arguments.peer)), indent=2))


if __name__ == "__main__":
    main()
