"""A LangGraph agent whose context agentmem manages, one turn per line of input.

    python examples/python/langgraph_agent.py --dir .agentmem --thread demo "what is in README.md?"

Each message comes from the command line (or stdin, one a line); the agent
reads files of this repository with its tool, keeps notes in MEMORY.md and
searches its past conversations with agentmem's, and agentmem keeps every
message on disk, fits each model call into the budget and compacts older
turns. Run it again with the same ``--thread``: the model sees the whole
conversation, though this process starts with an empty graph state.

``--base-url`` points at any OpenAI-compatible server (the key comes from
``OPENAI_API_KEY``); a small ``--context-window`` shows compaction early.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

import agentmem
from agentmem.integrations.langgraph import AgentmemMiddleware, AgentmemStore

ROOT = Path(__file__).resolve().parents[2]


@tool
def read_file(path: str) -> str:
    """Read a text file of the repository; for a path that is not a file, list the folder it names."""
    target = (ROOT / path).resolve()
    if target.is_file() and ROOT in target.parents:
        return target.read_text(encoding="utf-8", errors="replace")
    folder = target if target.is_dir() and (target == ROOT or ROOT in target.parents) else ROOT
    listing = sorted(
        entry.name + ("/" if entry.is_dir() else "") for entry in folder.iterdir() if not entry.name.startswith(".")
    )
    return f"{path} is not a file of the repository; {folder.relative_to(ROOT) or '.'} holds:\n" + "\n".join(listing)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("messages", nargs="*", help="the user's messages, one a turn (default: stdin, one a line)")
    parser.add_argument("--dir", default=".agentmem", help="agentmem's data directory")
    parser.add_argument("--thread", default="langgraph-demo", help="the conversation (agentmem session) id")
    parser.add_argument("--model", default="gpt-4.1-mini")
    parser.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL"))
    parser.add_argument("--context-window", type=int, help="a smaller window than the model's, to see compaction")
    arguments = parser.parse_args()

    store = agentmem.Store(arguments.dir)
    memory = AgentmemStore(store)
    model = ChatOpenAI(
        model=arguments.model, base_url=arguments.base_url, api_key=os.environ.get("OPENAI_API_KEY", "none")
    )
    window = arguments.context_window
    budget = (
        {}
        if window is None
        else {"context_window": window, "max_output_tokens": window // 8, "safety_margin": window // 16}
    )
    with AgentmemMiddleware(store, toolset="memory", **budget) as context, memory:
        agent = create_agent(
            model,
            [read_file],
            system_prompt="You answer questions about this repository; read its files to do so.",
            middleware=[context],
            store=memory,
        )
        config = {"configurable": {"thread_id": arguments.thread}}
        for text in arguments.messages or (line.strip() for line in sys.stdin if line.strip()):
            state = agent.invoke({"messages": [("user", text)]}, config)
            stats = context.last_stats[arguments.thread]
            line = {
                "answer": state["messages"][-1].text,
                "context_tokens": stats["context_tokens"],
                "input_budget": stats["input_budget"],
                "actions": [action["action"] for action in stats["actions"]],
            }
            print(json.dumps(line), flush=True)
        meta = store.session_meta(arguments.thread)
        print(
            json.dumps({"session": meta["id"], "events": meta["events"], "compactions": meta["compactions_finished"]})
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
