#!/usr/bin/env python3
"""A pydantic-ai agent whose history and memory live in agentmem.

Every message is kept in an agentmem session on disk; before each model call
the session's context is prepared inside the model's budget (big tool outputs
cut or evicted, old turns compacted, MEMORY.md in the system prompt); the agent
has tools to keep notes in MEMORY.md and to search its whole history. Run it
again with the same session and it goes on where it stopped.

    pip install agentmem-engine "pydantic-ai-slim[openai]"
    export OPENAI_API_KEY=...        # or OPENAI_BASE_URL for any OpenAI-compatible server
    python3 examples/python/pydantic_ai_agent.py --session demo "list the files" "now read the biggest"

Prints one JSON line per prompt: the answer and where the context stood
against the budget on the run's last model call, and the compactions of the run.
"""

from __future__ import annotations

import argparse
import json
import os

from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel

import agentmem
from agentmem.integrations.pydantic_ai import AgentmemHistoryProcessor, AgentmemToolset, Compaction, ContextUsage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prompts", nargs="+", help="what to ask, one run each")
    parser.add_argument("--dir", default=".agentmem", help="agentmem's data directory")
    parser.add_argument("--session", default="pydantic-ai-demo", help="the session to create or go on with")
    parser.add_argument("--model", default="gpt-4.1")
    parser.add_argument("--context-window", type=int, help="a smaller window than the model's, to see compaction")
    parser.add_argument("--compact", metavar="FOCUS", help="compact before the first prompt, favouring FOCUS")
    arguments = parser.parse_args()

    store = agentmem.Store(arguments.dir)
    calls: list[ContextUsage] = []  # one per model call: tokens, budget, compaction
    memory = AgentmemHistoryProcessor(
        store.session(arguments.session),
        context_window=arguments.context_window,
        max_output_tokens=2_000 if arguments.context_window else None,
        on_usage=calls.append,
    )
    agent = Agent(
        OpenAIChatModel(arguments.model),  # the provider reads OPENAI_API_KEY and OPENAI_BASE_URL
        system_prompt="You are a coding agent. Keep what the user should not have to repeat in your memory.",
        capabilities=[memory.capability()],
        toolsets=[AgentmemToolset(memory)],
    )

    @agent.tool_plain
    def list_files(folder: str) -> str:
        """List the files of a folder, one per line."""
        if not os.path.isdir(folder):
            return f"There is no folder {folder!r} here."
        return "\n".join(sorted(os.listdir(folder)))

    if arguments.compact is not None:
        memory.request_compact(arguments.compact)
    try:
        for prompt in arguments.prompts:
            calls.clear()
            result = agent.run_sync(prompt)
            usage = calls[-1]
            print(
                json.dumps(
                    {
                        "prompt": prompt,
                        "answer": result.output,
                        "context_tokens": usage.context_tokens,
                        "input_budget": usage.input_budget,
                        "model_calls": len(calls),
                        "compactions": [call.compacted.value for call in calls if call.compacted is not Compaction.NONE],
                        "events": memory.session.sync.meta()["events"],
                    }
                ),
                flush=True,
            )
    finally:
        memory.close()


if __name__ == "__main__":
    main()
