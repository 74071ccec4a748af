"""The README's Python quick start runs as written, its OpenAI client
pointed at the loopback model server (through the SDK's own environment
variables)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import LONG_SESSION, REPO
from model_server import ModelServer


def quick_start() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Python") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_quick_start_runs(tmp_path: Path) -> None:
    shutil.copy(LONG_SESSION, tmp_path / "transcript.jsonl")
    with ModelServer(calls_per_turn=1) as server:
        environment = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test"}
        ran = subprocess.run(
            [sys.executable, "-c", quick_start()], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=300
        )
        assert ran.returncode == 0, ran.stderr
        assert len(server.bodies("/chat/completions")) == 1
    printed = ran.stdout.splitlines()
    assert re.fullmatch(r"\d+ of \d+ tokens", printed[0]) and printed[1] == "0 1"
    assert (tmp_path / ".agentmem" / "agents" / "default" / "sessions" / "fix-the-build" / "raw_traces.jsonl").exists()
