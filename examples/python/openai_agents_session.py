"""An OpenAI Agents SDK agent whose session memory is agentmem.

The agent runs the tests of a project (a tool with a long output), turn
after turn, in one conversation kept by agentmem: every item durably on
disk, the model's view summarized once it holds more than four turns, the
agent's MEMORY.md in its instructions, and the input refitted to the budget
before every model call. Run it again with the same ``--session`` and the
conversation goes on where it stopped.

    pip install agentmem-engine openai-agents
    export OPENAI_API_KEY=...
    python examples/python/openai_agents_session.py --dir .agentmem --session demo

``--base-url`` points the agent at any server speaking OpenAI's Responses API.
"""

from __future__ import annotations

import argparse
import asyncio
import json

from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, function_tool
from openai import AsyncOpenAI

from agentmem.integrations.openai_agents import AgentmemSession

QUESTIONS = [
    "Run the tests of the parser.",
    "Which tests failed, and in which file?",
    "Run the lexer's tests too.",
    "Is the failure in the lexer the same as in the parser?",
    "Run the parser's tests again after the fix.",
    "Summarize what we did today.",
]


@function_tool
def run_tests(package: str) -> str:
    """Runs a package's test suite and returns its output."""
    lines = [f"tests/{package}/test_case_{i:03d}.py::test_{package}_{i} PASSED" for i in range(400)]
    lines[137] = f"tests/{package}/test_case_137.py::test_{package}_137 FAILED (E0425 in src/{package}/lexer.rs:88)"
    return "\n".join(lines + ["399 passed, 1 failed"])


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=".agentmem", help="agentmem's data directory")
    parser.add_argument("--session", default="openai-agents-demo", help="the conversation's id")
    parser.add_argument("--model", default="gpt-4.1")
    parser.add_argument("--base-url", help="an OpenAI-compatible server (default: OpenAI)")
    parser.add_argument("--context-window", type=int, help="the model's window, when smaller than the registry's")
    parser.add_argument("questions", nargs="*", help="what to ask (default: a short test-fixing session)")
    args = parser.parse_args()

    client = AsyncOpenAI(base_url=args.base_url) if args.base_url else AsyncOpenAI()
    agent = Agent(
        name="tester",
        instructions="You fix failing tests. Run them before answering.",
        tools=[run_tests],
        model=OpenAIResponsesModel(args.model, client),
    )
    session = AgentmemSession(
        args.session,
        store=args.dir,
        model=args.model,
        strategy="summarizing",
        context_limit=4,
        keep_last_n_turns=2,
        context_window=args.context_window,
    )
    if not session.store.read_memory()["content"]:
        session.store.write_memory("- The project's tests run with run_tests(package).")
    try:
        run_config = RunConfig(call_model_input_filter=session.input_filter())
        for question in args.questions or QUESTIONS:
            result = await Runner.run(agent, question, session=session, run_config=run_config)
            print(f"> {question}\n{result.final_output}")
        view = await session.get_items()
        print(json.dumps({"history_events": len(session.history()), "view_items": len(view), "revision": session.revisions()[-1]}))
    finally:
        session.close()


if __name__ == "__main__":
    asyncio.run(main())
