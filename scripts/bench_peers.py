#!/usr/bin/env python3
"""agentmem beside the seed systems' Python peers, in one run, taking turns.

On the shared workload (../shared/bench/workload.py, seed 1; 200 and 2,000
turns, generated into a temporary folder unless given with --workload), under a
128,000-token input budget with syncs left to the OS, each round runs in turn:
agentmem `bench --workload` (ingest a turn, prepare one call), agentmem
`replay` (prepare before every model call; its engine time per turn),
autobyteus' memory manager (scripts/bench_autobyteus.py's turn loop) and the
OpenAI Agents SDK's SQLiteSession trimmed to the budget with o200k counts
cached per text (scripts/bench_openai_agents.py's, which runs agentmem's
Agents session beside it, turn by turn). The systems' order rotates each
round; rounds default to 3 for a workload under 1,000 turns, 1 above. It prints
p50 / p99 ms per turn for each system, agentmem's ratios against each peer
(the peer's figure over agentmem's, the median of the rounds), and whether
issue 33's goals (p50 >= 100x and p99 >= 20x below autobyteus) hold in this
run; --json prints the same as JSON.

Install the peers and the Python package built from this checkout into one
virtualenv, build the binary, run (the 2,000-turn SDK run takes minutes):

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install autobyteus==1.4.4 openai-agents==0.24.0 tiktoken==0.14.0 ./python
    cargo build --release
    /tmp/peers/bin/python scripts/bench_peers.py                     # 200 and 2,000 turns
    /tmp/peers/bin/python scripts/bench_peers.py --turns 200 --peers autobyteus
    python3 scripts/bench_peers.py --peers none                      # agentmem alone

Like the per-peer scripts, it gives tiktoken the rank file the tiktoken-rs
crate ships (under ~/.cargo/registry once cargo fetched it), so it runs offline.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

from bench_autobyteus import BUDGET, agentmem_bench, autobyteus_turns, turns_of

REPO = Path(__file__).resolve().parents[1]
WORKLOAD = REPO.parent / "shared" / "bench" / "workload.py"
INSTALL = (
    "python3 -m venv /tmp/peers && /tmp/peers/bin/pip install "
    "autobyteus==1.4.4 openai-agents==0.24.0 tiktoken==0.14.0 ./python"
)
"""The one command that installs every peer (run in the repository's root)."""
LONG_RUN_TURNS = 1_000
"""Workloads of this many turns or more run one round by default, shorter ones three."""
GOALS = {"p50": 100.0, "p99": 20.0}
"""Issue 33's goals: how many times below autobyteus agentmem's p50 and p99 per turn are."""


@dataclass(frozen=True)
class Peer:
    """A Python peer: its table label and the (module, pip requirement) pairs it needs."""

    label: str
    needs: tuple[tuple[str, str], ...]


TIKTOKEN = ("tiktoken", "tiktoken==0.14.0")
PEERS = {
    "autobyteus": Peer("autobyteus 1.4.4 memory manager", (("autobyteus", "autobyteus==1.4.4"), TIKTOKEN)),
    "openai-agents": Peer(
        "openai-agents 0.24.0 SQLiteSession + trimming (memo)",
        (("agents", "openai-agents==0.24.0"), TIKTOKEN, ("agentmem", "agentmem-engine (./python, from this checkout)")),
    ),
}
AGENTMEM = {
    "agentmem-bench": "agentmem `bench --workload`",
    "agentmem-replay": "agentmem `replay`",
    "agentmem-agents-session": "agentmem Agents session (Python), beside the SDK's",
}
"""agentmem's rows; the first two are the ones issue 33's goals are about."""
GOAL_SYSTEMS = ("agentmem-bench", "agentmem-replay")
COMPARED = {"agentmem-agents-session": ("openai-agents",)}
"""agentmem rows compared with one peer only: the Agents session does the SDK session's task, not autobyteus'."""


class PeerMissing(Exception):
    """A chosen peer's package is not installed in this Python."""


def parse_peers(text: str) -> tuple[str, ...]:
    """`autobyteus,openai-agents` as a tuple of peers; `none` as no peer."""
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if names == ("none",):
        return ()
    if "none" in names:
        raise argparse.ArgumentTypeError(f"{text!r}: none runs agentmem alone, so it is not given with peers")
    unknown = [name for name in names if name not in PEERS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown peer {', '.join(map(repr, unknown)) or repr(text)}: choose from {', '.join(PEERS)} (comma-separated), or none"
        )
    return tuple(dict.fromkeys(names))


def parse_turns(text: str) -> tuple[int, ...]:
    """`200,2000` as workload sizes in turns."""
    try:
        turns = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of turn counts, e.g. 200,2000") from None
    if not turns or min(turns) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: each workload needs at least one turn")
    return turns


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--turns", type=parse_turns, default=(200, 2000), help="workloads to generate (default 200,2000)")
    source.add_argument("--workload", type=Path, action="append", help="a workload file instead (repeat for several)")
    parser.add_argument("--seed", type=int, default=1, help="the generated workloads' seed")
    parser.add_argument("--rounds", type=int, help="rounds for every workload (default 3 under 1,000 turns, else 1)")
    parser.add_argument(
        "--peers", type=parse_peers, default=tuple(PEERS), help="autobyteus,openai-agents (the default), one of them, or none"
    )
    parser.add_argument("--binary", type=Path, default=REPO / "target" / "release" / "agentmem", help="the agentmem binary")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.rounds is not None and args.rounds < 1:
        parser.error("--rounds must be at least 1")
    return args


def check_installed(peers: tuple[str, ...]) -> None:
    """Raises PeerMissing naming the first package a chosen peer needs that this Python lacks."""
    for peer in peers:
        for module, requirement in PEERS[peer].needs:
            if find_spec(module) is None:
                others = ",".join(p for p in peers if p != peer) or "none"
                raise PeerMissing(
                    f"the {peer} peer needs {requirement}, which {sys.executable} cannot import; "
                    f"install the peers with `{INSTALL}` and run this with /tmp/peers/bin/python, "
                    f"or leave the peer out with --peers {others}"
                )


def schedule(workloads: list[int], systems: list[str], rounds: int | None) -> list[tuple[int, int, str]]:
    """(round, workload index, system) in the order they run: each round runs
    every system on each workload, the systems' order rotated by one each round."""
    counts = [rounds or (3 if turns < LONG_RUN_TURNS else 1) for turns in workloads]
    runs = []
    for round_ in range(max(counts, default=0)):
        shift = round_ % len(systems)
        order = systems[shift:] + systems[:shift]
        runs += [(round_ + 1, index, system) for index, count in enumerate(counts) if round_ < count for system in order]
    return runs


def percentile(values: list[float], p: float) -> float:
    """Nearest rank, as agentmem's benches take it."""
    ordered = sorted(values)
    return ordered[round((len(ordered) - 1) * p)]


def figures(system: str, per_turn_ms: list[float], over_budget: int) -> dict:
    return {
        "system": system,
        "p50_ms": percentile(per_turn_ms, 0.5),
        "p99_ms": percentile(per_turn_ms, 0.99),
        "over_budget": over_budget,
    }


def run_bench(binary: Path, workload: Path) -> list[dict]:
    rows = agentmem_bench(str(binary), str(workload))
    turn = rows["workload ingest + prepare"]
    return [
        {
            "system": "agentmem-bench",
            "p50_ms": turn["p50_us"] / 1e3,
            "p99_ms": turn["p99_us"] / 1e3,
            "over_budget": rows["workload budget"]["turns_over_budget"],
        }
    ]


def run_replay(binary: Path, workload: Path) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="agentmem-replay-") as data:
        out = subprocess.run(
            [str(binary), "--dir", data, "--durability", "os", "--json", "replay", str(workload), "--model", "gpt-4.1", "--budget", str(BUDGET)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    summary = json.loads(out.splitlines()[-1])
    return [
        {
            "system": "agentmem-replay",
            "p50_ms": summary["engine_us_p50"] / 1e3,
            "p99_ms": summary["engine_us_p99"] / 1e3,
            "over_budget": summary["turns_over_budget"],
        }
    ]


def run_autobyteus(workload: Path) -> list[dict]:
    turns = turns_of(workload)
    with tempfile.TemporaryDirectory(prefix="autobyteus-") as base:
        per_turn, over = asyncio.run(autobyteus_turns(turns, base))
    return [figures("autobyteus", per_turn, over)]


def run_openai_agents(workload: Path) -> list[dict]:
    from bench_openai_agents import item_of, replay

    turns = [[item_of(event) for event in events] for events in turns_of(workload)]
    with tempfile.TemporaryDirectory(prefix="bench-openai-agents-") as folder:
        result = asyncio.run(replay(turns, Path(folder), "memo", "os", "background", "sqlite-session"))
    ms = {side: [s * 1e3 for s in seconds] for side, seconds in result["times"].items()}
    return [
        figures("openai-agents", ms["sdk"], result["over"]["sdk"]),
        figures("agentmem-agents-session", ms["agentmem"], result["over"]["agentmem"]),
    ]


def summarize(results: list[dict]) -> list[dict]:
    """Each workload's systems with the median p50 / p99 of their rounds, and
    each agentmem row's ratios against each peer (peer's figure over its)."""
    rows: dict[tuple[int, str], list[dict]] = {}
    for result in results:
        rows.setdefault((result["turns"], result["system"]), []).append(result)
    summary = [
        {
            "turns": turns,
            "system": system,
            "rounds": len(runs),
            "p50_ms": statistics.median(r["p50_ms"] for r in runs),
            "p99_ms": statistics.median(r["p99_ms"] for r in runs),
            "over_budget": max(r["over_budget"] for r in runs),
        }
        for (turns, system), runs in rows.items()
    ]
    order = [*AGENTMEM, *PEERS]
    summary.sort(key=lambda row: (row["turns"], order.index(row["system"])))
    for row in summary:
        if row["system"] in AGENTMEM:
            row["ratios"] = {
                peer["system"]: {q: peer[f"{q}_ms"] / row[f"{q}_ms"] for q in ("p50", "p99")}
                for peer in summary
                if peer["turns"] == row["turns"] and peer["system"] in COMPARED.get(row["system"], PEERS)
            }
    return summary


def goals(summary: list[dict]) -> list[dict]:
    """Issue 33's goals for each workload and agentmem mode that ran beside autobyteus."""
    return [
        {
            "turns": row["turns"],
            "system": row["system"],
            **{f"{q}_ratio": row["ratios"]["autobyteus"][q] for q in GOALS},
            **{f"{q}_holds": row["ratios"]["autobyteus"][q] >= goal for q, goal in GOALS.items()},
        }
        for row in summary
        if row["system"] in GOAL_SYSTEMS and "autobyteus" in row["ratios"]
    ]


def ms(value: float) -> str:
    for limit, digits in ((1, 3), (10, 2), (100, 1)):
        if value < limit:
            return f"{value:.{digits}f}"
    return f"{value:,.0f}"


def times(ratio: float) -> str:
    return f"{ratio:,.0f}×" if ratio >= 10 else f"{ratio:.1f}×"


def render(summary: list[dict], checks: list[dict]) -> str:
    """The markdown table and the goals' lines."""
    peers = [p for p in PEERS if any(row["system"] == p for row in summary)]
    header = ["workload", "system", "p50 ms", "p99 ms", "over budget", *(f"{p} over it, p50 / p99" for p in peers)]
    rounds = {row["turns"]: row["rounds"] for row in summary}
    lines = [
        "Per turn, the median of each workload's rounds ("
        + ", ".join(f"{turns:,} turns: {count}" for turns, count in rounds.items())
        + "); a ratio is the peer's figure over agentmem's.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for row in summary:
        label = AGENTMEM.get(row["system"]) or PEERS[row["system"]].label
        ratios = row.get("ratios", {})
        cells = [f"{row['turns']:,} turns", label, ms(row["p50_ms"]), ms(row["p99_ms"]), str(row["over_budget"])]
        cells += [f"{times(ratios[p]['p50'])} / {times(ratios[p]['p99'])}" if p in ratios else "" for p in peers]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    if not checks:
        lines.append("Issue 33's goals (p50 ≥ 100×, p99 ≥ 20× below autobyteus): not checked, autobyteus did not run.")
        return "\n".join(lines)
    verdict = "hold" if all(c["p50_holds"] and c["p99_holds"] for c in checks) else "do not hold"
    lines.append(f"Issue 33's goals (p50 ≥ 100×, p99 ≥ 20× below autobyteus) {verdict} in this run:")
    for c in checks:
        marks = [f"{q} {times(c[f'{q}_ratio'])} ({'holds' if c[f'{q}_holds'] else 'short'})" for q in GOALS]
        lines.append(f"- {c['turns']:,} turns, {AGENTMEM[c['system']]}: " + ", ".join(marks))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    try:
        check_installed(args.peers)
    except PeerMissing as missing:
        sys.exit(f"bench_peers.py: {missing}")
    if not args.binary.is_file():
        sys.exit(f"bench_peers.py: no agentmem binary at {args.binary}: build it with `cargo build --release`, or give --binary")
    tiktoken_cache = None
    if args.peers and "TIKTOKEN_CACHE_DIR" not in os.environ:
        from bench_tiktoken import offline_cache

        tiktoken_cache = os.environ["TIKTOKEN_CACHE_DIR"] = offline_cache()
    runners = {
        "agentmem-bench": lambda path: run_bench(args.binary, path),
        "agentmem-replay": lambda path: run_replay(args.binary, path),
        "autobyteus": run_autobyteus,
        "openai-agents": run_openai_agents,
    }
    systems = ["agentmem-bench", "agentmem-replay", *args.peers]
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as folder:
        paths = args.workload or [Path(folder) / f"workload-{turns}.jsonl" for turns in args.turns]
        for turns, path in zip([] if args.workload else args.turns, paths):
            command = [sys.executable, str(WORKLOAD), "--turns", str(turns), "--seed", str(args.seed), "--out", str(path)]
            subprocess.run(command, check=True, stdout=sys.stderr)
        sizes = [len(turns_of(path)) for path in paths]
        results = []
        try:
            for round_, index, system in schedule(sizes, systems, args.rounds):
                started = time.perf_counter()
                with contextlib.redirect_stdout(sys.stderr):  # what the peers print on import, off the table
                    ran = runners[system](paths[index])
                for result in ran:
                    results.append({"round": round_, "turns": sizes[index], **result})
                    print(
                        f"round {round_}, {sizes[index]:,} turns, {result['system']}: p50 {ms(result['p50_ms'])} ms, "
                        f"p99 {ms(result['p99_ms'])} ms ({time.perf_counter() - started:.0f} s)",
                        file=sys.stderr,
                        flush=True,
                    )
        except subprocess.CalledProcessError as failed:
            sys.exit(f"bench_peers.py: {' '.join(map(str, failed.cmd))} failed ({failed.returncode}):\n{failed.stderr}")
        finally:
            if tiktoken_cache:
                shutil.rmtree(tiktoken_cache, ignore_errors=True)
    summary = summarize(results)
    checks = goals(summary)
    if args.json:
        holds = all(c["p50_holds"] and c["p99_holds"] for c in checks) if checks else None
        print(json.dumps({"runs": results, "summary": summary, "goals": checks, "goals_hold": holds}, indent=2))
    else:
        print(render(summary, checks))


if __name__ == "__main__":
    main()
