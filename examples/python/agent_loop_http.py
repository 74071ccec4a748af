#!/usr/bin/env python3
"""An agent loop in Python over agentmem's HTTP API (standard library only).

It starts `agentmem serve` on a free loopback port, then walks an agent loop:
append each turn, prepare the next model call, record the model's usage,
search and recall, keep a note in MEMORY.md, compact with a focus, fork, and
call a memory tool over MCP's streamable HTTP transport. The "model" is a
stand-in that answers from the prompt it is given, so the example runs
anywhere; put your provider call in `model()`.

    python3 examples/python/agent_loop_http.py [path/to/agentmem] [data-dir]
"""

import json
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request


class Agentmem:
    def __init__(self, binary, data_dir):
        self.server = subprocess.Popen(
            [binary, "--dir", data_dir, "serve", "--addr", "127.0.0.1:0"],
            stderr=subprocess.PIPE,
            text=True,
        )
        # The server says where it listens: "agentmem: listening on http://…".
        line = self.server.stderr.readline()
        self.base = line.strip().rsplit(" ", 1)[-1]

    def call(self, method, path, body=None, headers=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request) as response:
                text = response.read().decode()
                return json.loads(text) if text else None
        except urllib.error.HTTPError as error:
            problem = json.loads(error.read().decode())["error"]
            raise RuntimeError(f"{method} {path}: {error.code} {problem['kind']}: {problem['message']}")

    def close(self):
        self.server.terminate()
        return self.server.wait()


def model(payload):
    """Stand-in for a model call: answers with the size of what it was sent."""
    messages = payload["messages"]
    answer = f"I see {len(messages)} messages; the last says: {messages[-1]['content'][:40]}"
    usage = {"prompt_tokens": 20 * len(messages), "completion_tokens": 12, "model": "gpt-4o"}
    return answer, usage


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "agentmem"
    data_dir = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp()
    memory = Agentmem(binary, data_dir)
    try:
        print("health:", memory.call("GET", "/healthz")["status"])
        session = memory.call("POST", "/v1/sessions", {})["session"]
        events = f"/v1/sessions/{session}/events"
        for turn, question in enumerate(["Where is the parser?", "Which tests fail?", "Fix them."]):
            memory.call("POST", events, {"events": [
                {"id": f"user-{turn}", "trace_type": "user", "content": question},
            ]})
            prepared = memory.call("POST", f"/v1/sessions/{session}/prepare",
                                   {"model": "gpt-4o", "system": "Be brief."})
            answer, usage = model(prepared["payload"])
            # The provider's usage rides on the answer: agentmem pairs it with its own count.
            memory.call("POST", events, {"events": [
                {"id": f"answer-{turn}", "trace_type": "assistant", "content": answer, "usage": usage},
            ]})
            print(f"turn {turn + 1}: {answer}")
        # A retry of a batch that already landed is recognised by its ids.
        retry = memory.call("POST", events, {"events": [{"id": "user-0", "trace_type": "user", "content": "Where is the parser?"}]})
        print(f"retry: appended {retry['appended']}, duplicates {retry['duplicates']}")

        hits = memory.call("POST", "/v1/search", {"query": "tests fail"})
        print(f"search found {hits[0]['event_id']} in {hits[0]['turn_id']}")
        note = memory.call("POST", "/v1/memory", {"content": "- The parser lives in src/parser.rs."})
        try:
            memory.call("POST", "/v1/memory", {"content": "- stale", "expected_hash": "0" * 16})
        except RuntimeError as refused:
            print("stale edit refused:", str(refused).split(":")[1].strip())
        print("memory at", memory.call("GET", "/v1/memory")["hash"] == note["hash"] and "the same hash" or "another hash")

        compacted = memory.call("POST", f"/v1/sessions/{session}/compact", {"focus": "the failing tests"})
        print(f"compacted {compacted['events_compacted']} events, focus {compacted['focus']!r}")
        fork = memory.call("POST", f"/v1/sessions/{session}/fork", {"new_session": "what-if"})
        print(f"forked {fork['id']} with {fork['events']} events, {fork['archived_events']} of them archived")

        mcp = {"MCP-Protocol-Version": "2025-06-18"}
        listed = memory.call("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, mcp)
        names = [tool["name"] for tool in listed["result"]["tools"]]
        print("mcp tools:", ", ".join(names[:3]), "…")
        called = memory.call("POST", "/mcp", {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "remember_fact", "arguments": {"fact": "The user wants small commits."}}}, mcp)
        print("remember_fact:", called["result"]["content"][0]["text"])

        ended = memory.call("POST", f"/v1/sessions/{session}/end")
        print(f"ended; episode {ended['id'] if ended else 'none'}")
    finally:
        # SIGTERM: the server closes its sessions and exits cleanly.
        print("server exit code:", memory.close())


if __name__ == "__main__":
    main()
