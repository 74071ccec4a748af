"""The command line from Python: ``python -m agentmem`` and the ``agentmem`` script run the CLI in process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import agentmem
from agentmem.__main__ import main


def test_python_m_agentmem_lists_the_sessions_a_store_made(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with agentmem.Store(data).create_session("from-python") as session:
        session.ingest([{"trace_type": "user", "content": "hello from python"}])
    listed = subprocess.run(
        [sys.executable, "-m", "agentmem", "--dir", str(data), "--json", "sessions", "list"],
        capture_output=True,
        text=True,
        check=True,
    )
    sessions = json.loads(listed.stdout)
    assert [(s["id"], s["title"]) for s in sessions] == [("from-python", "hello from python")]


def test_the_console_script_reports_the_clis_exit_status(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("agentmem")
    assert script.exists()
    missing = subprocess.run(
        [str(script), "--dir", str(tmp_path), "sessions", "show", "nope"], capture_output=True, text=True
    )
    assert missing.returncode == 1 and "does not exist" in missing.stderr
    usage = subprocess.run([str(script), "--no-such-flag"], capture_output=True, text=True)
    assert usage.returncode == 2
    version = subprocess.run([str(script), "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.strip() == f"agentmem {agentmem.__version__}"


def test_main_runs_in_this_process(tmp_path: Path, capfd) -> None:
    assert main(["--dir", str(tmp_path), "--json", "sessions", "list"]) == 0
    assert json.loads(capfd.readouterr().out) == []
