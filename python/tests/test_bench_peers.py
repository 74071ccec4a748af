"""scripts/bench_peers.py's own parts, without peers or benches: its arguments,
the order the systems run in, the ratio and goal table from given figures,
and the message when a chosen peer is not installed."""

from __future__ import annotations

import sys

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))
import bench_peers  # noqa: E402  (from scripts/, beside the per-peer scripts it imports)


def run(turns: int, system: str, p50: float, p99: float, over: int = 0, round_: int = 1) -> dict:
    return {"round": round_, "turns": turns, "system": system, "p50_ms": p50, "p99_ms": p99, "over_budget": over}


def test_the_arguments_default_to_both_peers_on_both_workloads() -> None:
    args = bench_peers.parse_args([])
    assert args.peers == ("autobyteus", "openai-agents")
    assert args.turns == (200, 2000) and args.workload is None and args.rounds is None and not args.json
    assert bench_peers.parse_args(["--peers", "none"]).peers == ()
    assert bench_peers.parse_args(["--peers", "openai-agents", "--turns", "200"]).peers == ("openai-agents",)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--peers", "autobyteus,langchain"], "unknown peer 'langchain': choose from autobyteus, openai-agents"),
        (["--peers", "none,autobyteus"], "none runs agentmem alone"),
        (["--turns", "200,many"], "'200,many' is not a comma-separated list of turn counts"),
        (["--rounds", "0"], "--rounds must be at least 1"),
    ],
)
def test_bad_arguments_are_refused_saying_what_to_give(argv: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        bench_peers.parse_args(argv)
    assert exit_.value.code == 2
    assert said in capsys.readouterr().err


def test_rounds_default_to_three_short_and_one_long_and_rotate_the_order() -> None:
    systems = ["agentmem-bench", "agentmem-replay", "autobyteus"]
    runs = bench_peers.schedule([200, 2000], systems, None)
    assert [(r, w) for r, w, _ in runs].count((1, 1)) == 3 and not [r for r, w, _ in runs if w == 1 and r > 1]
    assert [s for r, w, s in runs if (r, w) == (2, 0)] == ["agentmem-replay", "autobyteus", "agentmem-bench"]
    assert [r for r, w, _ in runs if w == 0] == [1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert len(bench_peers.schedule([2000], systems, 2)) == 6


def test_the_table_gives_each_peer_over_agentmem_and_says_the_goals_hold() -> None:
    results = [
        run(200, "agentmem-bench", 0.02, 1.0),
        run(200, "agentmem-replay", 0.05, 1.5),
        run(200, "autobyteus", 6.0, 40.0, over=3),
        run(200, "openai-agents", 20.0, 60.0),
        run(200, "agentmem-agents-session", 0.4, 10.0),
    ]
    summary = bench_peers.summarize(results)
    assert [row["system"] for row in summary] == [
        "agentmem-bench", "agentmem-replay", "agentmem-agents-session", "autobyteus", "openai-agents"
    ]
    bench = summary[0]["ratios"]
    assert bench["autobyteus"] == pytest.approx({"p50": 300.0, "p99": 40.0})
    assert bench["openai-agents"] == pytest.approx({"p50": 1000.0, "p99": 60.0})
    session = summary[2]["ratios"]
    assert list(session) == ["openai-agents"] and session["openai-agents"] == pytest.approx({"p50": 50.0, "p99": 6.0})
    checks = bench_peers.goals(summary)
    assert [(c["system"], c["p50_holds"], c["p99_holds"]) for c in checks] == [
        ("agentmem-bench", True, True),
        ("agentmem-replay", True, True),
    ]
    table = bench_peers.render(summary, checks)
    assert "| 200 turns | agentmem `bench --workload` | 0.020 | 1.00 | 0 | 300× / 40× | 1,000× / 60× |" in table
    assert "| 200 turns | autobyteus 1.4.4 memory manager | 6.00 | 40.0 | 3 |  |  |" in table
    assert "below autobyteus) hold in this run" in table


def test_a_short_p99_and_the_median_of_rounds_are_what_the_goals_judge() -> None:
    results = [
        run(2000, "agentmem-bench", 0.03, 3.0, round_=1),
        run(2000, "agentmem-bench", 0.05, 9.0, round_=2),
        run(2000, "agentmem-bench", 0.04, 5.0, round_=3),
        run(2000, "autobyteus", 8.0, 50.0, round_=1),
        run(2000, "autobyteus", 9.0, 60.0, round_=2),
        run(2000, "autobyteus", 10.0, 70.0, round_=3),
    ]
    summary = bench_peers.summarize(results)
    assert summary[0]["p50_ms"] == 0.04 and summary[0]["rounds"] == 3
    [check] = bench_peers.goals(summary)
    assert check["p50_ratio"] == pytest.approx(225.0) and check["p50_holds"]
    assert check["p99_ratio"] == pytest.approx(12.0) and not check["p99_holds"]
    table = bench_peers.render(summary, [check])
    assert "do not hold in this run" in table and "p99 12× (short)" in table


def test_without_autobyteus_the_goals_are_not_checked() -> None:
    summary = bench_peers.summarize([run(200, "agentmem-bench", 0.02, 1.0), run(200, "agentmem-replay", 0.05, 1.5)])
    assert bench_peers.goals(summary) == []
    assert "not checked, autobyteus did not run" in bench_peers.render(summary, [])


@pytest.mark.parametrize(
    ("peers", "missing", "named"),
    [("autobyteus", "autobyteus", "autobyteus==1.4.4"), ("openai-agents,autobyteus", "agentmem", "agentmem-engine")],
)
def test_a_missing_peer_stops_the_run_naming_its_package(
    peers: str, missing: str, named: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = bench_peers.find_spec
    monkeypatch.setattr(bench_peers, "find_spec", lambda module: None if module == missing else real(module))
    monkeypatch.setattr(bench_peers, "autobyteus_turns", None)  # nothing may run
    with pytest.raises(SystemExit) as exit_:
        bench_peers.main(["--peers", peers, "--turns", "1"])
    message = str(exit_.value.code)
    assert named in message and bench_peers.INSTALL in message
    assert message.startswith("bench_peers.py: the ")


def test_the_readme_gives_the_same_install_command() -> None:
    assert bench_peers.INSTALL in (REPO / "README.md").read_text(encoding="utf-8")
    assert bench_peers.INSTALL in bench_peers.__doc__
