#!/usr/bin/env python3
"""What agentmem's LangGraph middleware costs per model call, as a session grows.

A real ``langchain.agents.create_agent`` graph runs TURNS turns (each: a user
message, CALLS tool calls with outputs of about 1,500 tokens, an answer)
against the loopback model server of ``python/tests``, with
``AgentmemMiddleware`` fitting every call into the budget. The middleware's
own work per call is timed: appending the state's new messages to the session,
preparing the view, turning it back into LangChain messages. Printed: one
JSON line, with the medians and p99 over all calls, of the first and of the
last hundred calls (flat when the cost does not grow with the session), and
the compactions run. Under the default durability each call's append is
fsynced before the call goes out; ``--durability os`` leaves the flush to the
operating system and shows the rest of the cost.

    PYTHONPATH=python python scripts/bench_langgraph_hook.py --turns 300

Needs python/tests/requirements-langgraph.txt and the agentmem package.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python" / "tests"))

from langchain.agents import create_agent  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from model_server import ModelServer  # noqa: E402

import agentmem  # noqa: E402
from agentmem.integrations.langgraph import AgentmemMiddleware  # noqa: E402


class TimedMiddleware(AgentmemMiddleware):
    """The middleware, timing each view it fits."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.times_us: list[float] = []

    def fit(self, *args, **kwargs):
        start = time.perf_counter()
        view = super().fit(*args, **kwargs)
        self.times_us.append((time.perf_counter() - start) * 1e6)
        return view


class NumberingModelServer(ModelServer):
    """The loopback model calling its tool with fresh arguments each time."""

    def _decide(self, tools, results_since_user, last_user):
        kind, what = super()._decide(tools, results_since_user, last_user)
        if kind == "call":
            name, arguments = what
            what = (name, {key: f"{value}-{self._next_id('arg')}" for key, value in arguments.items()})
        return kind, what


@tool
def read_log(name: str) -> str:
    """Read a build log."""
    return "\n".join(f"{name} line {i}: compiling module m{i} ok, warning W{i:04d}" for i in range(120))


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--calls", type=int, default=2, help="tool calls a turn")
    parser.add_argument("--model", default="gpt-4o")
    parser.add_argument("--context-window", type=int, default=32_000)
    parser.add_argument(
        "--durability", choices=["always", "batch", "os"], default="batch", help="when appends reach the disk"
    )
    arguments = parser.parse_args()

    with tempfile.TemporaryDirectory() as data, NumberingModelServer(calls_per_turn=arguments.calls) as server:
        store = agentmem.Store(data, durability=arguments.durability)
        budget = {"context_window": arguments.context_window, "max_output_tokens": 4_000, "safety_margin": 2_000}
        with TimedMiddleware(store, **budget) as context:
            model = ChatOpenAI(model=arguments.model, base_url=server.base_url, api_key="bench")
            agent = create_agent(model, [read_log], middleware=[context])
            config = {"configurable": {"thread_id": "bench"}}
            messages: list = []
            started = time.perf_counter()
            for turn in range(arguments.turns):
                state = agent.invoke(
                    {"messages": messages + [("user", f"turn {turn}: what does the log say?")]}, config
                )
                messages = state["messages"]
            wall = time.perf_counter() - started
            meta = store.session_meta("bench")
        times = context.times_us
        print(
            json.dumps(
                {
                    "turns": arguments.turns,
                    "model_calls": len(times),
                    "messages": len(messages),
                    "events": meta["events"],
                    "compactions": meta["compactions_finished"],
                    "window": arguments.context_window,
                    "durability": arguments.durability,
                    "middleware_us_p50": round(statistics.median(times)),
                    "middleware_us_p99": round(percentile(times, 0.99)),
                    "first_100_us_p50": round(statistics.median(times[:100])),
                    "last_100_us_p50": round(statistics.median(times[-100:])),
                    "middleware_share_of_run": round(sum(times) / 1e6 / wall, 3),
                }
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
