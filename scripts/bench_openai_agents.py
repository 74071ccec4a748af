#!/usr/bin/env python3
"""Per-turn cost of agentmem's OpenAI Agents SDK session against the SDK's own
SQLiteSession with turn trimming, on the shared benchmark workload.

Both replay the workload turn by turn as ``Runner.run`` uses a session: the
turn's items go in with ``add_items``, then ``get_items`` gives the history
for the next model call, under a 128,000-token input budget. The SDK's
session returns its whole history, which is then trimmed by whole turns
(oldest first) until it fits, counting o200k_base tokens with tiktoken, each
text's count cached (``--counting memo``, the stronger baseline) or
recounted every turn (``exact``). agentmem's session returns its fitted view
(strategy ``auto``). ``--durability default`` keeps each system's own
default: agentmem syncs its appends to disk per ``add_items`` (``batch``), as
the SDK's SQLite (WAL, ``synchronous=FULL``) syncs each commit;
``--durability os`` leaves that to the operating system in both
(agentmem's ``os``, SQLite's ``synchronous=OFF``). The two alternate which
goes first each turn, in one process; reading the workload is not timed.
The slowest agentmem turns are listed with what the engine did in them;
``--compaction-timing background`` drafts agentmem's compactions on a thread
of their own (applied by the next turn's view).

    python3 scripts/bench_openai_agents.py                 # 200 turns
    python3 scripts/bench_openai_agents.py --turns 2000    # the long run (minutes)
    python3 scripts/bench_openai_agents.py --peer none     # agentmem alone

Needs ``agentmem-engine``, ``openai-agents`` and ``tiktoken`` (tiktoken's
o200k_base rank file offline: see ../shared/bench/README.md); the workload
generator is ../shared/bench/workload.py beside this repository.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKLOAD = REPO.parent / "shared" / "bench" / "workload.py"
INPUT_BUDGET = 128_000
"""The input budget: context_window - max_output_tokens - safety_margin below."""
BUDGET = {"context_window": 160_000, "max_output_tokens": 16_000, "safety_margin": 16_000}

sys.path.insert(0, str(REPO / "python" / "tests"))
from model_server import _ENCODING  # noqa: E402  (tiktoken o200k_base, offline)


def workload_turns(turns: int, seed: int, folder: Path) -> list[list[dict]]:
    """The workload's events as Responses items, one list per turn."""
    path = folder / f"workload-{turns}-{seed}.jsonl"
    subprocess.run(
        [sys.executable, str(WORKLOAD), "--turns", str(turns), "--seed", str(seed), "--out", str(path)], check=True
    )
    by_turn: dict[int, list[dict]] = {}
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            event = json.loads(line)
            by_turn.setdefault(event["turn"], []).append(item_of(event))
    return [by_turn[turn] for turn in sorted(by_turn)]


def item_of(event: dict) -> dict:
    """A workload event (kind user/assistant/tool_call/tool_result) as the Responses item the SDK would hold."""
    kind = event["kind"]
    if kind == "user":
        return {"role": "user", "content": event["content"]}
    if kind == "assistant":
        return {
            "id": f"msg_{event['turn']}",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": event["content"], "annotations": []}],
        }
    if kind == "tool_call":
        return {
            "id": f"fc_{event['tool_call_id']}",
            "type": "function_call",
            "call_id": event["tool_call_id"],
            "name": event["tool_name"],
            "arguments": json.dumps(event.get("tool_args") or {}),
            "status": "completed",
        }
    if kind == "tool_result":
        return {"type": "function_call_output", "call_id": event["tool_call_id"], "output": event["content"]}
    raise ValueError(f"unknown workload kind {kind!r}")


class Counter:
    """o200k_base tokens of an item's texts, plus 4 per item; ``memo`` caches each text's count."""

    def __init__(self, memo: bool) -> None:
        self.memo = memo
        self.cache: dict[str, int] = {}

    def text(self, text: str) -> int:
        if not self.memo:
            return len(_ENCODING.encode(text, disallowed_special=()))
        count = self.cache.get(text)
        if count is None:
            count = self.cache[text] = len(_ENCODING.encode(text, disallowed_special=()))
        return count

    def item(self, item: dict) -> int:
        total = 4
        for key in ("content", "output", "arguments"):
            value = item.get(key)
            if isinstance(value, str):
                total += self.text(value)
            elif isinstance(value, list):
                total += sum(self.text(part.get("text", "")) for part in value)
        return total


def trim_to_budget(items: list, counter: Counter) -> list:
    """The SDK-side trimming: drop the oldest whole turns (from a user message on) until the items fit."""
    sizes = [counter.item(item) for item in items]
    total = sum(sizes)
    starts = [i for i, item in enumerate(items) if item.get("role") == "user"]
    cut = 0
    for start in starts[1:]:
        if total <= INPUT_BUDGET:
            break
        total -= sum(sizes[cut:start])
        cut = start
    return items[cut:]


async def replay(turns: list[list[dict]], folder: Path, counting: str, durability: str, timing: str, peer: str) -> dict:
    from agents import SQLiteSession

    import agentmem
    from agentmem.integrations.openai_agents import AgentmemSession

    class UnsyncedSQLiteSession(SQLiteSession):
        """The SDK's session with SQLite's syncs left to the OS (``synchronous=OFF``)."""

        @staticmethod
        def _configure_connection(conn) -> None:
            SQLiteSession._configure_connection(conn)
            conn.execute("PRAGMA synchronous=OFF")

    store = agentmem.Store(folder / "agentmem", durability="os" if durability == "os" else "batch")
    ours = AgentmemSession(
        "bench", store=store, model="gpt-4o", strategy="auto", compaction_timing=timing, **BUDGET
    )
    sdk = (UnsyncedSQLiteSession if durability == "os" else SQLiteSession)("bench", db_path=folder / "sdk.sqlite")
    counter = Counter(memo=counting == "memo")
    audit = Counter(memo=True)
    times: dict[str, list[float]] = {"agentmem": [], "sdk": []}
    over: dict[str, int] = {"agentmem": 0, "sdk": 0}
    largest: dict[str, int] = {"agentmem": 0, "sdk": 0}
    actions: list[list[str]] = []

    async def agentmem_turn(items: list[dict]) -> None:
        start = time.perf_counter()
        await ours.add_items(items)
        await ours.get_items()
        times["agentmem"].append(time.perf_counter() - start)
        actions.append([action["action"] for action in ours.last_stats["actions"]])
        tokens = ours.last_stats["context_tokens"]
        largest["agentmem"] = max(largest["agentmem"], tokens)
        over["agentmem"] += tokens > ours.last_stats["input_budget"]

    async def sdk_turn(items: list[dict]) -> None:
        start = time.perf_counter()
        await sdk.add_items(items)
        view = trim_to_budget(await sdk.get_items(), counter)
        times["sdk"].append(time.perf_counter() - start)
        tokens = sum(audit.item(item) for item in view)
        largest["sdk"] = max(largest["sdk"], tokens)
        over["sdk"] += tokens > INPUT_BUDGET

    for number, items in enumerate(turns):
        order = (agentmem_turn, sdk_turn) if number % 2 == 0 else (sdk_turn, agentmem_turn)
        if peer == "none":
            order = (agentmem_turn,)
        for run in order:
            await run(items)
    history = len(ours.history())
    ours.close()
    sdk.close()
    slowest = sorted(range(len(times["agentmem"])), key=times["agentmem"].__getitem__)[-5:][::-1]
    slow_turns = [
        {"turn": turn + 1, "ms": round(times["agentmem"][turn] * 1000, 3), "engine_actions": actions[turn]}
        for turn in slowest
    ]
    return {"times": times, "over": over, "largest": largest, "history_events": history, "slowest": slow_turns}


def figures(seconds: list[float]) -> dict:
    ms_in_order = [s * 1000 for s in seconds]
    ms = sorted(ms_in_order)
    window = min(100, len(ms) // 2)
    return {
        "p50_ms": round(statistics.median(ms), 3),
        # The median of each tenth of the run, to see whether the cost grows with the history.
        "median_by_tenth_ms": [round(statistics.median(ms_in_order[i * len(ms) // 10 : (i + 1) * len(ms) // 10]), 2) for i in range(10)],
        "p99_ms": round(ms[min(len(ms) - 1, int(len(ms) * 0.99))], 3),
        "first_100_mean_ms": round(statistics.fmean(s * 1000 for s in seconds[:window]), 3),
        "last_100_mean_ms": round(statistics.fmean(s * 1000 for s in seconds[-window:]), 3),
        # Past the first turn (the session and its search index created).
        "first_100_mean_past_turn_1_ms": round(statistics.fmean(s * 1000 for s in seconds[1 : window + 1]), 3),
        "first_100_median_ms": round(statistics.median(s * 1000 for s in seconds[:window]), 3),
        "last_100_median_ms": round(statistics.median(s * 1000 for s in seconds[-window:]), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200, help="workload turns (2000 for the long run)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--counting", choices=["memo", "exact"], default="memo", help="the SDK side's token counting")
    parser.add_argument(
        "--durability",
        choices=["default", "os"],
        default="default",
        help="both systems': each its own default (a sync per add_items) or syncs left to the OS",
    )
    parser.add_argument(
        "--compaction-timing",
        choices=["inline", "background"],
        default="inline",
        help="agentmem's: compactions drafted in the turn that finds them due, or on a thread while the next runs",
    )
    parser.add_argument(
        "--peer",
        choices=["sqlite-session", "none"],
        default="sqlite-session",
        help="none: agentmem alone, to see its own cost without the SDK's turns in between",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-openai-agents-") as folder:
        turns = workload_turns(args.turns, args.seed, Path(folder))
        result = asyncio.run(
            replay(turns, Path(folder), args.counting, args.durability, args.compaction_timing, args.peer)
        )
    ours = figures(result["times"]["agentmem"])
    sdk = figures(result["times"]["sdk"]) if args.peer == "sqlite-session" else None
    report = {
        "turns": args.turns,
        "seed": args.seed,
        "input_budget": INPUT_BUDGET,
        "sdk_counting": args.counting,
        "durability": args.durability,
        "agentmem_compaction_timing": args.compaction_timing,
        "agentmem": ours | {"over_budget": result["over"]["agentmem"], "largest_tokens": result["largest"]["agentmem"]},
        "sdk_sqlite_trimming": sdk and sdk | {"over_budget": result["over"]["sdk"], "largest_tokens": result["largest"]["sdk"]},
        "p50_ratio": sdk and round(sdk["p50_ms"] / ours["p50_ms"], 1),
        "p99_ratio": sdk and round(sdk["p99_ms"] / ours["p99_ms"], 1),
        "agentmem_history_events": result["history_events"],
        "agentmem_slowest_turns": result["slowest"],
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
