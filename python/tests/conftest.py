"""Shared fixtures: a real store on disk in a temporary folder, and the
repository's example transcripts (read in place, through paths relative to
the repository)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

import agentmem

REPO = Path(__file__).resolve().parents[2]
"""The repository's root."""

LONG_SESSION = REPO / "examples" / "long-coding-session.jsonl"
"""A long, deterministic coding-agent session in agentmem's event format."""

SHARED = REPO.parent / "shared"
"""The shared data beside the repository (benchmarks, real transcripts)."""


def read_events(path: Path) -> list[dict]:
    """The events of an agentmem JSONL file."""
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def record_threads(session: agentmem.Session) -> list[tuple[str, bool]]:
    """Wraps ``session``'s ``ingest`` and ``prepare`` (this object's only) to record each call's
    name and whether it ran in the main thread (where ``asyncio.run`` runs the event loop)."""
    calls: list[tuple[str, bool]] = []

    def watched(name: str, method):  # noqa: ANN001, ANN202
        def call(*arguments, **settings):  # noqa: ANN002, ANN003
            calls.append((name, threading.current_thread() is threading.main_thread()))
            return method(*arguments, **settings)

        return call

    session.ingest, session.prepare = watched("ingest", session.ingest), watched("prepare", session.prepare)  # type: ignore[method-assign]
    return calls


@pytest.fixture
def store(tmp_path: Path) -> agentmem.Store:
    """A store in a fresh temporary data directory."""
    return agentmem.Store(tmp_path / "data")


@pytest.fixture
def long_session_events() -> list[dict]:
    """The events of the long example session."""
    return read_events(LONG_SESSION)
