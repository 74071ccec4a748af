"""Shared fixtures: a real store on disk in a temporary folder, and the
repository's example transcripts (read in place, through paths relative to
the repository)."""

from __future__ import annotations

import json
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


@pytest.fixture
def store(tmp_path: Path) -> agentmem.Store:
    """A store in a fresh temporary data directory."""
    return agentmem.Store(tmp_path / "data")


@pytest.fixture
def long_session_events() -> list[dict]:
    """The events of the long example session."""
    return read_events(LONG_SESSION)
