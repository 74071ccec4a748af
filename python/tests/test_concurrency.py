"""Threads and asyncio: the GIL is released while the engine works, a Store
and a Session are safe to share across threads, and the asyncio API never
blocks the event loop."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import agentmem


def summary_after(gate: threading.Event, entered: threading.Event):
    """A summarizer that waits for ``gate`` (set by the test once it has seen
    what it must see while a compaction is under way)."""

    def summarize(request: dict) -> str:
        entered.set()
        if not gate.wait(timeout=60):
            raise TimeoutError("the test never opened the gate: was the interpreter blocked?")
        return "## Goal\n- fix the parser\n\n## Next steps\n- run the tests again"

    return summarize


def test_threads_share_a_store_each_with_its_own_session(tmp_path: Path) -> None:
    store = agentmem.Store(tmp_path)
    errors: list[BaseException] = []

    def agent(number: int) -> None:
        try:
            with store.create_session(f"worker-{number}") as session:
                for turn in range(20):
                    session.ingest(
                        [
                            {"trace_type": "user", "content": f"worker {number} turn {turn}"},
                            {"trace_type": "assistant", "content": f"done {turn}"},
                        ]
                    )
                    session.prepare(model="gpt-4.1")
        except BaseException as error:  # surfaced to the test's thread below
            errors.append(error)

    threads = [threading.Thread(target=agent, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    sessions = store.list_sessions()
    assert sorted(s["id"] for s in sessions) == [f"worker-{n}" for n in range(8)]
    assert all(s["events"] == 40 for s in sessions)


def test_threads_share_one_session_and_lose_nothing(tmp_path: Path) -> None:
    store = agentmem.Store(tmp_path)
    session = store.create_session("shared")

    def writer(number: int) -> None:
        for index in range(25):
            session.ingest([{"id": f"w{number}-{index}", "trace_type": "user", "content": f"writer {number} says {index}"}])
            session.prepare(model="gpt-4.1")

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ids = [event["id"] for event in session.events()]
    assert sorted(ids) == sorted(f"w{n}-{i}" for n in range(4) for i in range(25))
    for number in range(4):  # each writer's events in the order it wrote them
        mine = [i for i in ids if i.startswith(f"w{number}-")]
        assert mine == [f"w{number}-{i}" for i in range(25)]
    session.close()


def test_a_thread_waiting_on_a_busy_session_does_not_hold_the_gil(tmp_path: Path, long_session_events) -> None:
    gate, entered = threading.Event(), threading.Event()
    store = agentmem.Store(tmp_path, summarizer=summary_after(gate, entered))
    session = store.create_session()
    session.ingest(long_session_events[:200])
    results: dict[str, object] = {}
    compacting = threading.Thread(target=lambda: results.setdefault("compact", session.compact()))
    compacting.start()
    assert entered.wait(timeout=60)
    waiting = threading.Thread(target=lambda: results.setdefault("prepare", session.prepare(model="gpt-4o")))
    waiting.start()
    # The second thread now waits in the engine for the session; were it
    # holding the GIL, this thread could not run a line more.
    counted = sum(1 for _ in range(100_000))
    assert waiting.is_alive() and counted == 100_000
    # Asking about the busy session does not wait for it while holding the GIL either.
    assert not session.closed and "writable" in repr(session)
    gate.set()
    compacting.join()
    waiting.join()
    assert results["compact"]["applied"] is True
    prepared = results["prepare"]
    assert "fix the parser" in str(prepared["messages"])
    session.close()


def test_the_event_loop_keeps_running_while_a_session_compacts(tmp_path: Path, long_session_events) -> None:
    gate, entered = threading.Event(), threading.Event()

    async def scenario() -> tuple[dict, int]:
        store = agentmem.AsyncStore(tmp_path, summarizer=summary_after(gate, entered))
        session = await store.create_session("async")
        await session.ingest(long_session_events[:200])
        compaction = asyncio.create_task(session.compact(focus="the parser"))
        ticks = 0
        # The loop must keep ticking while the compaction waits in the summarizer:
        # only this task can open the gate.
        while not entered.is_set() or ticks < 5:
            await asyncio.sleep(0.001)
            ticks += 1
        assert not compaction.done()
        gate.set()
        report = await compaction
        prepared = await session.prepare(model="claude-sonnet-4-5")
        assert "fix the parser" in str(prepared)
        await session.close()
        return report, ticks

    report, ticks = asyncio.run(scenario())
    assert report["applied"] is True and report["focus"] == "the parser" and ticks >= 5


def test_async_store_mirrors_the_sync_api(tmp_path: Path) -> None:
    async def scenario() -> None:
        store = agentmem.AsyncStore(tmp_path, agent="async-agent")
        async with await store.create_session("a1") as session:
            await session.ingest([{"trace_type": "user", "content": "deploy the canary"}])
            state = await session.update_state({"goal": "deploy"}, expected_version=0)
            try:
                await session.update_state({"goal": "other"}, expected_version=0)
            except agentmem.StaleVersion as stale:
                assert (stale.expected, stale.actual) == (0, state["version"])
            else:
                raise AssertionError("a stale update went through")
            assert (await session.context(model="gpt-4.1"))["messages"] >= 1
        listed = await store.list_sessions()
        assert [s["id"] for s in listed] == ["a1"]
        assert (await store.search("canary"))[0]["session"] == "a1"

    asyncio.run(scenario())
