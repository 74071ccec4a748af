#!/usr/bin/env python3
"""The per-turn cost of the engine through the Python package, on the shared
workload: each turn's events handed over with ``Session.ingest``, then the
next call prepared with ``Session.prepare`` under a 128,000-token input
budget, as ``agentmem bench --workload`` times it in Rust. The difference is
what the binding adds: events and the payload crossing as JSON, and the
dicts built on each side.

    python3 ../shared/bench/workload.py --turns 2000 --seed 1 --out /tmp/workload-2000.jsonl
    .venv/bin/python scripts/bench_python.py /tmp/workload-2000.jsonl

Prints one JSON line: turns, the mean and median per turn of ingest and of
prepare (milliseconds), the p99 of the two together, and the engine's own
figures from ``agentmem bench`` run in the same process (``python -m agentmem``).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from itertools import groupby

import agentmem

MODEL = "gpt-4.1"
INPUT_BUDGET = 128_000
MAX_OUTPUT = 32_768
SAFETY_MARGIN = 13_000


def turns_of(path: str) -> list[list[dict]]:
    """The workload's events grouped by turn, read by the engine's importer
    (in a store of its own: an earlier session in the bench's agent would
    give recall something to look up every turn)."""
    with tempfile.TemporaryDirectory(prefix="agentmem-workload-") as directory:
        with agentmem.Store(directory, durability="os").create_session("source") as source:
            source.import_file(path)
            events = source.events()
    for event in events:  # the bench session numbers its turns itself
        event.pop("turn_id", None)
        event.pop("seq", None)
    turns, current = [], []
    for event in events:
        if event["trace_type"] == "user" and current:
            turns.append(current)
            current = []
        current.append(event)
    return turns + ([current] if current else [])


def main(path: str) -> None:
    with tempfile.TemporaryDirectory(prefix="agentmem-bench-") as directory:
        store = agentmem.Store(directory, durability="os")
        turns = turns_of(path)
        ingest_ms, prepare_ms, total_ms = [], [], []
        with store.create_session("bench") as session:
            for events in turns:
                started = time.perf_counter()
                session.ingest(events)
                ingested = time.perf_counter()
                session.prepare(
                    MODEL,
                    context_window=INPUT_BUDGET + MAX_OUTPUT + SAFETY_MARGIN,
                    max_output_tokens=MAX_OUTPUT,
                    safety_margin=SAFETY_MARGIN,
                )
                prepared = time.perf_counter()
                ingest_ms.append((ingested - started) * 1e3)
                prepare_ms.append((prepared - ingested) * 1e3)
                total_ms.append((prepared - started) * 1e3)
    engine = subprocess.run(
        [sys.executable, "-m", "agentmem", "--durability", "os", "--json", "bench", "--skip-storage", "--workload", path],
        capture_output=True,
        text=True,
        check=True,
    )
    total_ms.sort()
    print(
        json.dumps(
            {
                "turns": len(turns),
                "python_ingest_ms": {"mean": statistics.fmean(ingest_ms), "median": statistics.median(ingest_ms)},
                "python_prepare_ms": {"mean": statistics.fmean(prepare_ms), "median": statistics.median(prepare_ms)},
                "python_turn_ms": {
                    "mean": statistics.fmean(total_ms),
                    "median": statistics.median(total_ms),
                    "p99": total_ms[min(len(total_ms) - 1, int(len(total_ms) * 0.99))],
                },
                "engine": {row["bench"]: row["figure"] for row in json.loads(engine.stdout)},
            }
        )
    )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
