#!/usr/bin/env python3
"""The shared workload's task through autobyteus' memory manager and through
`agentmem bench`, run in turns on the same machine, so their per-turn figures
compare without the machine's own speed in between.

autobyteus is the fastest of the Python systems `../shared/bench/README.md`
records (4.0 ms per turn there). Its turn, as its agent drives the memory:
ingest the user message, assemble the request (compacting first when the last
reported usage crossed the trigger, then rendering for Chat Completions),
ingest each tool call and result, ingest the reply (which rewrites its
working-context snapshot file) and apply its compaction policy to the reported
usage. The "provider's" prompt count is an exact o200k count of the payload,
left out of the time; its summarizer is a fixed stand-in, as in the README.

    python3 -m venv /tmp/abenv && /tmp/abenv/bin/pip install autobyteus==1.4.4 tiktoken
    /tmp/abenv/bin/python scripts/bench_autobyteus.py /tmp/workload-2000.jsonl \\
        ./target/release/agentmem [RUNS]

Like scripts/bench_tiktoken.py, it fills TIKTOKEN_CACHE_DIR from the rank files
the tiktoken-rs crate ships, so it runs offline.
"""
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from bench_tiktoken import offline_cache

BUDGET = 128_000
SYSTEM = "You are a coding agent."


def turns_of(path):
    turns = {}
    with open(path) as lines:
        for line in lines:
            event = json.loads(line)
            turns.setdefault(event["turn"], []).append(event)
    return [turns[k] for k in sorted(turns)]


async def autobyteus_turns(turns, base):
    """Per-turn milliseconds of autobyteus' memory work (its files under the
    folder `base`), and prompts over budget."""
    import tiktoken
    from autobyteus.agent.events.agent_events import ToolResultEvent
    from autobyteus.agent.llm_request_assembler import LLMRequestAssembler
    from autobyteus.agent.tool_invocation import ToolInvocation
    from autobyteus.llm.prompt_renderers.openai_chat_renderer import OpenAIChatRenderer
    from autobyteus.llm.user_message import LLMUserMessage
    from autobyteus.llm.utils.response_types import CompleteResponse
    from autobyteus.llm.utils.token_usage import TokenUsage
    from autobyteus.memory.compaction.compaction_result import CompactionResult
    from autobyteus.memory.compaction.compactor import Compactor
    from autobyteus.memory.compaction.summarizer import Summarizer
    from autobyteus.memory.memory_manager import MemoryManager
    from autobyteus.memory.policies.compaction_policy import CompactionPolicy
    from autobyteus.memory.store.file_store import FileMemoryStore
    from autobyteus.memory.store.working_context_snapshot_store import WorkingContextSnapshotStore

    class FixedSummarizer(Summarizer):
        def summarize(self, traces):
            return CompactionResult(
                episodic_summary=f"Worked on the task over {len(traces)} events.",
                semantic_facts=[{"fact": "The project uses Rust.", "tags": [], "confidence": 0.5}],
            )

    encoding = tiktoken.get_encoding("o200k_base")
    store = FileMemoryStore(base, "bench")
    policy = CompactionPolicy()
    memory = MemoryManager(
        store=store,
        compaction_policy=policy,
        compactor=Compactor(store, policy, FixedSummarizer()),
        working_context_snapshot_store=WorkingContextSnapshotStore(base, "bench"),
    )
    assembler = LLMRequestAssembler(memory, OpenAIChatRenderer())
    per_turn, over = [], 0
    for events in turns:
        started = time.perf_counter()
        turn_id = memory.start_turn()
        payload = None
        for e in events:
            if e["kind"] == "user":
                memory.ingest_user_message(LLMUserMessage(content=e["content"]), turn_id, "UserMessageReceivedEvent")
                package = await assembler.prepare_request(e["content"], current_turn_id=turn_id, system_prompt=SYSTEM)
                payload = package.rendered_payload
            elif e["kind"] == "tool_call":
                invocation = ToolInvocation(e["tool_name"], e.get("tool_args") or {}, e["tool_call_id"], turn_id)
                memory.ingest_tool_intent(invocation)
            elif e["kind"] == "tool_result":
                memory.ingest_tool_result(ToolResultEvent(
                    tool_name=e["tool_name"], result=e["content"],
                    tool_invocation_id=e["tool_call_id"], turn_id=turn_id))
            elif e["kind"] == "assistant":
                counting = time.perf_counter()
                prompt_tokens = len(encoding.encode(json.dumps(payload), disallowed_special=()))
                started += time.perf_counter() - counting  # the provider's count, not memory work
                over += prompt_tokens > BUDGET
                usage = TokenUsage(prompt_tokens=prompt_tokens, completion_tokens=0, total_tokens=prompt_tokens)
                memory.ingest_assistant_response(
                    CompleteResponse(content=e["content"], usage=usage), turn_id, "LLMCompleteResponseReceivedEvent")
                if policy.should_compact(prompt_tokens, BUDGET):
                    memory.request_compaction()
        per_turn.append((time.perf_counter() - started) * 1000)
    return per_turn, over


def agentmem_bench(binary, workload):
    """`agentmem bench --workload`'s JSON rows (syncs left to the OS, a
    128,000-token input budget), by bench name."""
    with tempfile.TemporaryDirectory(prefix="agentmem-") as data:
        out = subprocess.run(
            [binary, "--dir", data, "--durability", "os", "--json", "bench", "--skip-storage",
             "--workload", workload, "--budget", str(BUDGET)],
            check=True, capture_output=True, text=True).stdout
    return {row["bench"]: row for row in json.loads(out)}


def main():
    workload, binary = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", offline_cache())
    turns = turns_of(workload)
    ratios = []
    for run in range(1, runs + 1):
        with tempfile.TemporaryDirectory(prefix="autobyteus-") as base:
            per_turn, over = asyncio.run(autobyteus_turns(turns, base))
        theirs = statistics.median(per_turn)
        ours = agentmem_bench(binary, workload)["workload ingest + prepare"]["p50_us"] / 1000
        ratios.append(theirs / ours)
        print(json.dumps({
            "run": run,
            "autobyteus_p50_ms": round(theirs, 3),
            "autobyteus_p99_ms": round(statistics.quantiles(per_turn, n=100)[98], 2),
            "autobyteus_prompts_over_budget": over,
            "agentmem_p50_ms": round(ours, 4),
            "ratio": round(theirs / ours, 1),
        }), flush=True)
    print(json.dumps({"summary": True, "runs": runs, "median_ratio": round(statistics.median(ratios), 1)}))


if __name__ == "__main__":
    main()
