#!/usr/bin/env python3
"""An agent loop in Python over `agentmem serve --stdio` (standard library only).

agentmem runs as a child process; each command is one JSON line, each answer
one JSON line. The "model" here is a stand-in that answers from the prompt it
is given, so the example runs anywhere; put your provider call in `model()`.

    python3 examples/python/agent_loop_stdio.py [path/to/agentmem] [data-dir]
"""

import json
import subprocess
import sys
import tempfile


class Agentmem:
    def __init__(self, binary, data_dir):
        self.child = subprocess.Popen(
            [binary, "--dir", data_dir, "serve", "--stdio"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.next_id = 0

    def __call__(self, op, **fields):
        self.next_id += 1
        command = {"id": self.next_id, "op": op, **fields}
        self.child.stdin.write(json.dumps(command) + "\n")
        self.child.stdin.flush()
        reply = json.loads(self.child.stdout.readline())
        if not reply["ok"]:
            raise RuntimeError(f"{op}: {reply['error']}")
        return reply["result"]

    def close(self):
        self.child.stdin.close()
        return self.child.wait()


def model(payload):
    """Stand-in for a model call: answers with the size of what it was sent."""
    messages = payload["messages"]
    return f"I see {len(messages)} messages; the last says: {messages[-1]['content'][:40]}"


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "agentmem"
    data_dir = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp()
    memory = Agentmem(binary, data_dir)
    session = memory("create_session")["session"]
    for turn, question in enumerate(["Where is the parser?", "Which tests fail?", "Fix them."]):
        memory("append", session=session, events=[
            {"id": f"user-{turn}", "trace_type": "user", "content": question},
        ])
        prepared = memory("prepare", session=session, model="gpt-4o", system="Be brief.")
        answer = model(prepared["payload"])
        memory("append", session=session, events=[
            {"id": f"answer-{turn}", "trace_type": "assistant", "content": answer},
        ])
        print(f"turn {turn + 1}: {prepared['stats']['context_tokens']} context tokens -> {answer}")
    memory("tool", name="write_memory", arguments={"content": "- Ran the Python example."})
    hits = memory("search", query="tests fail")
    print(f"search found {hits[0]['event_id']} in {hits[0]['turn_id']}")
    episode = memory("end_session", session=session)
    print(f"session {session} ended; episode {episode['id']}")
    return memory.close()


if __name__ == "__main__":
    sys.exit(main())
