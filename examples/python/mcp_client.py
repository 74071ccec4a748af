#!/usr/bin/env python3
"""A minimal MCP client (standard library only) for `agentmem mcp`.

It does what an MCP host does with a stdio server: initialize, list the
tools, call some of them.

    python3 examples/python/mcp_client.py [path/to/agentmem] [data-dir]
"""

import json
import subprocess
import sys
import tempfile


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "agentmem"
    data_dir = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp()
    server = subprocess.Popen(
        [binary, "--dir", data_dir, "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    next_id = 0

    def send(method, params=None, notify=False):
        nonlocal next_id
        message = {"jsonrpc": "2.0", "method": method, "params": params or {}}
        if not notify:
            next_id += 1
            message["id"] = next_id
        server.stdin.write(json.dumps(message) + "\n")
        server.stdin.flush()
        if notify:
            return None
        reply = json.loads(server.stdout.readline())
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']['message']}")
        return reply["result"]

    info = send("initialize", {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "example-client", "version": "1.0"},
    })
    print(f"server {info['serverInfo']['name']} speaks {info['protocolVersion']}")
    send("notifications/initialized", notify=True)
    tools = [tool["name"] for tool in send("tools/list")["tools"]]
    print("tools: " + ", ".join(tools))
    for name, arguments in [
        ("remember_fact", {"fact": "The example prefers short answers."}),
        ("write_memory", {"content": "- The MCP example ran."}),
        ("read_memory", {}),
        ("recall", {"query": "short answers"}),
    ]:
        result = send("tools/call", {"name": name, "arguments": arguments})
        text = result["content"][0]["text"]
        print(f"{name}: {text.splitlines()[0] if text else ''}")
    server.stdin.close()
    return server.wait()


if __name__ == "__main__":
    sys.exit(main())
