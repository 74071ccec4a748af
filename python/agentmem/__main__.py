"""``python -m agentmem …`` and the ``agentmem`` console script: the agentmem
command line, run in this process (``agentmem --help`` lists its commands)."""

from __future__ import annotations

import sys

from agentmem._native import run_cli

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Runs the command line with ``argv`` (``sys.argv[1:]`` by default); its exit status."""
    args = sys.argv[1:] if argv is None else argv
    # The command line writes to the process's own stdout and stderr: what
    # Python buffered must come out first.
    sys.stdout.flush()
    sys.stderr.flush()
    return run_cli(args)


if __name__ == "__main__":
    sys.exit(main())
