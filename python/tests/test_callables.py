"""Python callables in the engine's seams: a summarizer, an embedder and a
reranker written in Python; a failing one surfaces as the engine's typed
error, with nothing written."""

from __future__ import annotations

import asyncio
import hashlib
import math
import threading
from pathlib import Path

import pytest

import agentmem


def session_files(directory: Path) -> dict[str, bytes]:
    """Every data file of a session's folder and its bytes (the writer lock,
    which records its holder, and meta.json, a cache of counts, aside)."""
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and p.name not in ("lock", "meta.json")
    }


def words_embedder(calls: list[int]):
    """A deterministic embedder: each word hashed into one of 64 dimensions."""

    def embed(texts: list[str]) -> list[list[float]]:
        calls.append(len(texts))
        vectors = []
        for text in texts:
            vector = [0.0] * 64
            for word in text.lower().split():
                vector[hashlib.sha1(word.encode()).digest()[0] % 64] += 1.0
            norm = math.sqrt(sum(v * v for v in vector)) or 1.0
            vectors.append([v / norm for v in vector])
        return vectors

    return embed


def test_a_python_summarizer_writes_the_compaction_summary(tmp_path: Path, long_session_events) -> None:
    requests: list[dict] = []

    def summarize(request: dict) -> dict:
        requests.append(request)
        ids = [e["id"] for e in request["events"] if e["trace_type"] == "user"]
        return {
            "sections": {"Goal": ["Keep the parser tests green"], "Next steps": ["rerun cargo test"]},
            "facts": [{"text": "The user wants tests run before every commit.", "kind": "preference", "source_event_ids": ids[:1]}],
        }

    store = agentmem.Store(tmp_path, summarizer=summarize, summarizer_name="my-llm")
    with store.create_session() as session:
        session.ingest(long_session_events[:300])
        report = session.compact(focus="the parser")
        assert report["applied"] is True and report["summarizer"].startswith("my-llm")
        assert requests and requests[0]["focus"] == "the parser" and requests[0]["max_tokens"] > 0
        assert "Keep the parser tests green" in str(session.prepare(model="gpt-4.1"))
    assert "tests run before every commit" in str(store.facts())


def test_a_markdown_summary_is_read_by_its_sections(tmp_path: Path, long_session_events) -> None:
    def summarize(request: dict) -> str:
        return "## Goal\n- ship the CRLF fix\n\n## Errors seen\n- E0425 in src/lexer.rs\n"

    store = agentmem.Store(tmp_path, summarizer=summarize)
    with store.create_session() as session:
        session.ingest(long_session_events[:300])
        session.compact()
        payload = str(session.prepare(model="gpt-4.1"))
        assert "ship the CRLF fix" in payload and "E0425 in src/lexer.rs" in payload


def test_a_raising_summarizer_changes_nothing(tmp_path: Path, long_session_events) -> None:
    def summarize(request: dict) -> str:
        raise ConnectionError("the summarizer's model is down")

    store = agentmem.Store(tmp_path, summarizer=summarize)
    session = store.create_session("s")
    session.ingest(long_session_events[:300])
    session.close()
    directory = Path(store.path) / "agents" / "default" / "sessions" / "s"
    before = session_files(directory)
    with store.resume_session("s") as session:
        with pytest.raises(agentmem.SummarizerError, match="model is down") as failed:
            session.compact()
        assert isinstance(failed.value, agentmem.CallbackError)
        assert isinstance(failed.value.__cause__, ConnectionError)
        assert len(session.events()) == 300
    assert session_files(directory) == before
    assert "snapshot.json" not in before and "raw_traces_archive.jsonl" not in before
    assert store.session_meta("s")["compactions_finished"] == 0


def test_a_summarizer_answering_the_wrong_type_is_a_summarizer_error(tmp_path: Path, long_session_events) -> None:
    store = agentmem.Store(tmp_path, summarizer=lambda request: 42)
    with store.create_session() as session:
        session.ingest(long_session_events[:300])
        with pytest.raises(agentmem.SummarizerError, match="returned int"):
            session.compact()


def seed_history(store: agentmem.Store) -> None:
    with store.create_session("deploys") as session:
        session.ingest(
            [
                {"trace_type": "user", "content": "how do deploys work here?"},
                {"trace_type": "assistant", "content": "Deploys go through the canary stage, then roll out to every region."},
                {"trace_type": "user", "content": "and the database?"},
                {"trace_type": "assistant", "content": "Migrations run before the deploy, from the migrations folder."},
            ]
        )


def test_a_python_embedder_joins_recall(tmp_path: Path) -> None:
    calls: list[int] = []
    store = agentmem.Store(tmp_path, embedder=words_embedder(calls), embedder_model="words-64")
    seed_history(store)
    store.embed_pending()
    recalled = store.recall("canary deploys", budget=400, session="now")
    assert calls and sum(calls) >= 2
    assert recalled["embedding"]["unembedded"] == 0
    assert "canary" in str(recalled)


def test_a_python_embedder_runs_in_the_background_as_events_arrive(tmp_path: Path) -> None:
    threads: list[str] = []
    embedded = threading.Event()
    words = words_embedder([])

    def embed(texts: list[str]) -> list[list[float]]:
        threads.append(threading.current_thread().name)
        if len(texts) > 1:
            embedded.set()
        return words(texts)

    store = agentmem.Store(tmp_path, embedder=embed, embedder_model="words-64")
    seed_history(store)
    # Nobody recalls or waits: the engine's own thread calls the embedder.
    assert embedded.wait(timeout=60), "the background embedder never ran"
    assert threading.main_thread().name not in threads
    store.embed_pending()
    assert store.recall("canary deploys", session="now")["embedding"]["unembedded"] == 0


def test_an_async_store_waits_for_its_python_embedder(tmp_path: Path) -> None:
    calls: list[int] = []
    store = agentmem.AsyncStore(tmp_path, embedder=words_embedder(calls), embedder_model="words-64")
    seed_history(store.sync)

    async def scenario() -> dict:
        await store.embed_pending()
        return await store.recall("canary deploys", session="now")

    recalled = asyncio.run(scenario())
    assert recalled["embedding"]["unembedded"] == 0 and sum(calls) >= 2


def test_a_raising_embedder_is_an_embedder_error(tmp_path: Path) -> None:
    def embed(texts: list[str]) -> list[list[float]]:
        raise RuntimeError("no GPU today")

    store = agentmem.Store(tmp_path, embedder=embed)
    seed_history(store)
    with pytest.raises(agentmem.EmbedderError, match="no GPU today") as failed:
        store.recall("canary deploys")
    assert isinstance(failed.value.__cause__, RuntimeError)


def test_an_embedder_with_the_wrong_count_is_an_embedder_error(tmp_path: Path) -> None:
    store = agentmem.Store(tmp_path, embedder=lambda texts: [[1.0, 0.0]])
    seed_history(store)
    with pytest.raises(agentmem.EmbedderError, match="one per text"):
        store.embed_pending()


def test_a_python_reranker_orders_recall(tmp_path: Path) -> None:
    seen: list[tuple[str, int]] = []

    def rerank(query: str, passages: list[str]) -> list[float]:
        seen.append((query, len(passages)))
        return [1.0 if "Migrations" in p else 0.0 for p in passages]

    store = agentmem.Store(tmp_path, reranker=rerank, reranker_model="migrations-first")
    seed_history(store)
    recalled = store.recall("how do deploys work?", budget=400)
    assert seen and seen[0][0] == "how do deploys work?"
    assert "Migrations" in str(recalled)


def test_a_raising_reranker_is_a_reranker_error(tmp_path: Path) -> None:
    def rerank(query: str, passages: list[str]) -> list[float]:
        raise ValueError("reranker quota exceeded")

    store = agentmem.Store(tmp_path, reranker=rerank)
    seed_history(store)
    with pytest.raises(agentmem.RerankerError, match="quota exceeded") as failed:
        store.recall("how do deploys work?")
    assert isinstance(failed.value.__cause__, ValueError)


def test_a_callable_must_be_callable(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="summarizer must be callable"):
        agentmem.Store(tmp_path, summarizer="gpt-4.1")  # type: ignore[arg-type]


def test_a_python_summarizer_drafts_in_the_background(tmp_path: Path, long_session_events) -> None:
    (tmp_path / "config.toml").write_text('[context]\ncompaction_timing = "background"\n')
    threads: set[int] = set()

    def summarize(request: dict) -> str:
        threads.add(threading.get_ident())
        return "## Goal\n- drafted off the agent's thread"

    store = agentmem.Store(tmp_path, summarizer=summarize)
    started = applied = 0
    with store.create_session() as session:
        turns: list[list[dict]] = []
        for event in long_session_events:
            if event["trace_type"] == "user" or not turns:
                turns.append([])
            turns[-1].append(event)
        for turn in turns:
            session.ingest(turn)
            actions = session.prepare(model="gpt-4o", context_window=24_000, max_output_tokens=4_000, safety_margin=4_000).stats["actions"]
            started += sum(1 for a in actions if a["action"] == "compaction_started")
            applied += sum(1 for a in actions if a["action"] == "compacted")
        # The last draft may still be running when the turns end: wait for it,
        # so the check does not depend on how fast this machine drafts.
        if session.wait_for_draft() is not None:
            actions = session.prepare(model="gpt-4o", context_window=24_000, max_output_tokens=4_000, safety_margin=4_000).stats["actions"]
            applied += sum(1 for a in actions if a["action"] == "compacted")
        assert started >= 1 and applied >= 1
        assert threads and threading.get_ident() not in threads
        assert "drafted off the agent's thread" in str(session.prepare(model="gpt-4o", context_window=24_000, max_output_tokens=4_000, safety_margin=4_000))


def test_a_failing_callables_cause_is_never_another_threads(tmp_path: Path, long_session_events) -> None:
    def summarize(request: dict) -> str:
        raise ValueError(threading.current_thread().name)

    store = agentmem.Store(tmp_path, summarizer=summarize)
    causes: dict[str, list[str | None]] = {}

    def worker(name: str) -> None:
        with store.create_session(name) as session:
            session.ingest(long_session_events[:120])
            seen = causes.setdefault(name, [])
            for _ in range(2):  # a third failure in a row would fall back to trimming
                try:
                    session.compact()
                except agentmem.SummarizerError as error:
                    seen.append(None if error.__cause__ is None else str(error.__cause__))

    threads = [threading.Thread(target=worker, args=(f"w{n}",), name=f"w{n}") for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(causes) == ["w0", "w1", "w2", "w3"]
    for name, seen in causes.items():
        assert len(seen) == 2 and all(cause in (name, None) for cause in seen), (name, seen)
    assert any(cause is not None for seen in causes.values() for cause in seen)
