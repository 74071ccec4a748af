"""Every exception class, raised by a real condition, and the hierarchy a
caller catches them by."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentmem

HIERARCHY = {
    agentmem.InvalidInput: agentmem.AgentmemError,
    agentmem.InvalidId: agentmem.InvalidInput,
    agentmem.InvalidEvent: agentmem.InvalidInput,
    agentmem.InvalidPatch: agentmem.InvalidInput,
    agentmem.SchemaViolation: agentmem.InvalidInput,
    agentmem.InvalidSchema: agentmem.InvalidInput,
    agentmem.BadQuery: agentmem.InvalidInput,
    agentmem.EditRefused: agentmem.InvalidInput,
    agentmem.NotAnOverflow: agentmem.InvalidInput,
    agentmem.UnknownModel: agentmem.InvalidInput,
    agentmem.BadShape: agentmem.InvalidInput,
    agentmem.NotFound: agentmem.AgentmemError,
    agentmem.SessionNotFound: agentmem.NotFound,
    agentmem.TurnNotFound: agentmem.NotFound,
    agentmem.EvictedNotFound: agentmem.NotFound,
    agentmem.Conflict: agentmem.AgentmemError,
    agentmem.SessionExists: agentmem.Conflict,
    agentmem.StaleVersion: agentmem.Conflict,
    agentmem.MemoryConflict: agentmem.Conflict,
    agentmem.SessionLocked: agentmem.AgentmemError,
    agentmem.ReadOnlySession: agentmem.AgentmemError,
    agentmem.ContextOverflow: agentmem.AgentmemError,
    agentmem.ConfigError: agentmem.AgentmemError,
    agentmem.CorruptData: agentmem.AgentmemError,
    agentmem.StorageError: agentmem.AgentmemError,
    agentmem.CallbackError: agentmem.AgentmemError,
    agentmem.SummarizerError: agentmem.CallbackError,
    agentmem.EmbedderError: agentmem.CallbackError,
    agentmem.RerankerError: agentmem.CallbackError,
}


def test_each_class_has_its_place() -> None:
    assert issubclass(agentmem.AgentmemError, Exception)
    for cls, parent in HIERARCHY.items():
        assert cls.__bases__ == (parent,), cls
        assert cls.__module__ == "agentmem" and cls.__doc__
    exported = {name for name in agentmem.__all__ if isinstance(getattr(agentmem, name), type)}
    assert {cls.__name__ for cls in HIERARCHY} <= exported


def with_session(store: agentmem.Store) -> agentmem.Session:
    session = store.create_session("s")
    session.ingest([{"trace_type": "user", "content": "hello"}])
    return session


def test_bad_queries(store: agentmem.Store) -> None:
    with_session(store).close()
    with pytest.raises(agentmem.BadQuery, match="role"):
        store.search("hello", role="narrator")
    with pytest.raises(agentmem.BadQuery):
        store.search("hello", since="the day before yesterday-ish")


def test_overflow_recovery_errors(store: agentmem.Store) -> None:
    session = with_session(store)
    with pytest.raises(agentmem.NotAnOverflow):
        session.recover_overflow("rate limited: slow down", model="gpt-4.1", status=429)
    overflow = '{"error": {"code": "context_length_exceeded", "message": "This model\'s maximum context length is 128000 tokens."}}'
    for _ in range(3):
        session.recover_overflow(overflow, model="gpt-4.1")
    with pytest.raises(agentmem.ContextOverflow, match="3 recovery attempts"):
        session.recover_overflow(overflow, model="gpt-4.1")
    session.close()


def test_evicted_outputs_page_and_unknown_ones_are_not_found(store: agentmem.Store) -> None:
    session = store.create_session()
    big = "".join(f"line {i}: " + "x" * 200 + "\n" for i in range(1_000))
    report = session.ingest(
        [
            {"trace_type": "user", "content": "dump the log"},
            {"trace_type": "tool_call", "tool_call_id": "dump", "tool_name": "bash", "tool_args": {"cmd": "cat log"}},
            {"trace_type": "tool_result", "tool_call_id": "dump", "content": big},
        ]
    )
    assert report["evicted"] == 1
    page = session.evicted("dump", offset=10, limit=5)
    assert page["lines_returned"] == 5 and page["total_lines"] == 1_000 and page["text"].startswith("line 10: ")
    assert len(str(session.prepare(model="gpt-4.1"))) < len(big) / 10
    with pytest.raises(agentmem.EvictedNotFound):
        session.evicted("never-evicted")
    session.close()


def test_a_read_only_session_refuses_writes(store: agentmem.Store) -> None:
    with_session(store).close()
    reader = store.read_session("s")
    assert not reader.writable
    with pytest.raises(agentmem.ReadOnlySession, match="read-only"):
        reader.ingest([{"trace_type": "user", "content": "x"}])
    assert len(reader.events()) == 1


def test_files_that_cannot_be_used(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[storage\n")
    with pytest.raises(agentmem.ConfigError, match="config.toml"):
        agentmem.Store(tmp_path)
    not_a_folder = tmp_path / "plain-file"
    not_a_folder.write_text("x")
    with pytest.raises(agentmem.StorageError):
        agentmem.Store(not_a_folder)

    store = agentmem.Store(tmp_path / "data")
    with_session(store).close()
    snapshot = Path(store.path) / "agents" / "default" / "sessions" / "s" / "snapshot.json"
    snapshot.write_text("{ not json")
    with pytest.raises(agentmem.CorruptData, match="snapshot.json"):
        store.read_session("s")
