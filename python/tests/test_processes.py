"""Sessions across processes: one writer at a time, resumed in another
process where the last one stopped; a real agent transcript imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import agentmem
from conftest import SHARED


def run_python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True, timeout=300
    )


def test_a_session_is_resumed_in_another_process(tmp_path: Path, long_session_events) -> None:
    store = agentmem.Store(tmp_path)
    with store.create_session("long") as session:
        session.ingest(long_session_events[:400])
        session.update_state({"goal": "fix the parser"})
        report = session.compact(focus="the parser")
        assert report["applied"] is True
    child = run_python(
        """
        import json, sys, agentmem
        store = agentmem.Store(sys.argv[1])
        with store.resume_session("long") as session:
            session.ingest([{"trace_type": "user", "content": "carry on from the child"}])
            payload = session.prepare(model="gpt-4.1")
            print(json.dumps({"events": len(session.events()), "state": session.state()["document"],
                              "summary": "[SUMMARY OF EARLIER CONVERSATION]" in json.dumps(payload)}))
        """,
        str(tmp_path),
    )
    assert child.returncode == 0, child.stderr
    seen = json.loads(child.stdout)
    assert seen == {"events": 402, "state": {"goal": "fix the parser"}, "summary": True}
    with store.resume_session("long") as session:
        assert session.events()[-1]["content"] == "carry on from the child"


def test_a_writer_in_another_process_is_named_by_the_lock(tmp_path: Path) -> None:
    store = agentmem.Store(tmp_path)
    with store.create_session("busy") as session:
        session.ingest([{"trace_type": "user", "content": "hold on"}])
        child = run_python(
            """
            import json, sys, agentmem
            try:
                agentmem.Store(sys.argv[1]).resume_session("busy")
            except agentmem.SessionLocked as locked:
                print(json.dumps({"session": locked.session, "pid": locked.pid, "message": str(locked)}))
            """,
            str(tmp_path),
        )
        assert child.returncode == 0, child.stderr
        locked = json.loads(child.stdout)
        assert locked["session"] == "busy" and locked["pid"] == str(os.getpid())
        reader = run_python(
            """
            import sys, agentmem
            print(len(agentmem.Store(sys.argv[1]).read_session("busy").events()))
            """,
            str(tmp_path),
        )
        assert reader.stdout.strip() == "1"


CLAUDE_CODE = SHARED / "eval-data" / "trajectories" / "claude-code" / "session-3fe1b6bc.jsonl"


@pytest.mark.skipif(not CLAUDE_CODE.exists(), reason="the shared transcripts sit beside the repository")
def test_a_real_claude_code_transcript_is_imported_and_prepared(store: agentmem.Store) -> None:
    with store.create_session("imported") as session:
        report = session.import_file(CLAUDE_CODE)
        assert report["format"] == "claude-code" and report["appended"] > 50
        assert session.import_file(CLAUDE_CODE)["appended"] == 0  # stable ids: nothing new
        tools = session.tool_interactions()
        assert tools and all(t["status"] in ("SUCCESS", "ERROR", "PENDING") for t in tools)
        prepared = session.prepare(model="claude-sonnet-4-5")
        # Measured from the usage Claude Code recorded, its own prompt included.
        assert prepared.stats["anchored_tokens"] == prepared.stats["context_tokens"]
        assert prepared.stats["context_tokens"] <= prepared.stats["input_budget"] and not prepared.stats["over_budget"]
        uses = {b["id"] for m in prepared["messages"] if isinstance(m["content"], list) for b in m["content"] if b["type"] == "tool_use"}
        results = {b["tool_use_id"] for m in prepared["messages"] if isinstance(m["content"], list) for b in m["content"] if b["type"] == "tool_result"}
        assert uses == results
        assert session.compact()["applied"] is True
