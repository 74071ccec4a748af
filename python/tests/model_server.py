"""A model server on loopback that speaks OpenAI's Chat Completions and
Responses protocols, for tests of agents built with real frameworks.

It plays a tool-using agent's model: after each user message it calls tools
(``calls_per_turn`` times, one call a response, the first tool the request
offers unless told otherwise), then answers in text. Every request body is
kept in ``requests`` so tests can assert on what the framework sent: that it
fits the budget, that every tool call has its result, that memory was there.

Usage reported back is counted with a real tokenizer (tiktoken's o200k_base)
over the request's text, so an engine that calibrates on provider usage sees
figures close to what a real provider would report.

    with ModelServer(calls_per_turn=2) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test")
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal


def _tiktoken_offline() -> None:
    """tiktoken downloads its rank file at first use; without a network, give
    it the copy the tiktoken-rs crate ships (cargo fetched it for the Rust
    tests). tiktoken's cache names the file by the sha1 of its URL."""
    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        return
    assets = sorted(glob.glob(os.path.expanduser("~/.cargo/registry/src/*/tiktoken-rs-*/assets")))
    if not assets:
        return
    cache = tempfile.mkdtemp(prefix="tiktoken-cache-")
    shutil.copy(os.path.join(assets[-1], "o200k_base.tiktoken"), os.path.join(cache, "fb374d419588a4632f3f557e76b4b70aebbca790"))
    os.environ["TIKTOKEN_CACHE_DIR"] = cache


_tiktoken_offline()
import tiktoken  # noqa: E402  (after the cache is in place)

_ENCODING = tiktoken.get_encoding("o200k_base")


def count_tokens(value: Any) -> int:
    """o200k_base tokens of every string in ``value`` (a request body, say),
    plus four per message-like object: what a provider's prompt count is
    close to."""
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(_ENCODING.encode(item, disallowed_special=()))
        elif isinstance(item, dict):
            if "role" in item or "type" in item:
                total += 4
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return total


def _sample_arguments(schema: dict | None) -> dict:
    """Arguments that satisfy a tool's JSON schema's required properties."""
    schema = schema or {}
    properties = schema.get("properties", {})
    arguments: dict[str, Any] = {}
    for name in schema.get("required", list(properties)):
        kind = properties.get(name, {}).get("type", "string")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "string")
        arguments[name] = {
            "string": f"{name}-value",
            "integer": 1,
            "number": 1.5,
            "boolean": True,
            "array": [],
            "object": {},
        }.get(kind, f"{name}-value")
    return arguments


class ModelServer:
    """A scripted model on ``127.0.0.1`` (an ephemeral port), started as a
    context manager. ``requests`` holds every body received, in order, as
    ``(path, body)``."""

    def __init__(
        self,
        calls_per_turn: int = 1,
        tool: str | None = None,
        answer: str = "Done.",
        arguments: Literal["same", "numbered"] = "same",
    ):
        self.calls_per_turn = calls_per_turn
        self.tool = tool
        self.answer = answer
        self.arguments = arguments
        """``same``: every call of a tool gets the same sample arguments; ``numbered``:
        each string argument ends with the call's number, so no two calls repeat."""
        self._calls = 0
        self.requests: list[tuple[str, dict]] = []
        self._lock = threading.Lock()
        self._counter = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> "ModelServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def bodies(self, path_suffix: str = "") -> list[dict]:
        """The request bodies received on paths ending with ``path_suffix``."""
        with self._lock:
            return [body for path, body in self.requests if path.endswith(path_suffix)]

    def _next_id(self, prefix: str) -> str:
        with self._lock:
            self._counter += 1
            return f"{prefix}_{self._counter:04d}"

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append((self.path, body))
                if self.path.endswith("/chat/completions"):
                    reply = server._chat(body)
                elif self.path.endswith("/responses"):
                    reply = server._responses(body)
                else:
                    self.send_error(404, f"no such endpoint {self.path}")
                    return
                if body.get("stream"):
                    self._stream(reply, self.path.endswith("/responses"))
                    return
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, reply: dict, responses: bool) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                for event in (_responses_stream(reply) if responses else _chat_stream(reply)):
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                if not responses:
                    self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        return Handler

    # What the model does next: call a tool, or answer.

    def _decide(self, tools: list[dict], results_since_user: int, last_user: str) -> tuple[str, Any]:
        if tools and results_since_user < self.calls_per_turn:
            tool = next((t for t in tools if _tool_name(t) == self.tool), tools[0])
            arguments = _sample_arguments(_tool_schema(tool))
            if self.arguments == "numbered":
                with self._lock:
                    self._calls += 1
                    arguments = {k: f"{v}-{self._calls}" if isinstance(v, str) else v for k, v in arguments.items()}
            return "call", (_tool_name(tool), arguments)
        return "answer", f"{self.answer} ({last_user[:60]})"

    def _chat(self, body: dict) -> dict:
        messages = body.get("messages", [])
        results, last_user = 0, ""
        for message in messages:
            if message.get("role") == "user":
                results, last_user = 0, _text(message.get("content"))
            elif message.get("role") == "tool":
                results += 1
        kind, what = self._decide(body.get("tools") or [], results, last_user)
        if kind == "call":
            name, arguments = what
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": self._next_id("call"),
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)},
                    }
                ],
            }
            finish = "tool_calls"
        else:
            message, finish = {"role": "assistant", "content": what}, "stop"
        prompt = count_tokens(messages) + count_tokens(body.get("tools") or [])
        completion = count_tokens(message)
        return {
            "id": self._next_id("chatcmpl"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "gpt-4o"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }

    def _responses(self, body: dict) -> dict:
        items = body.get("input", [])
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        results, last_user = 0, ""
        for item in items:
            if item.get("role") == "user" and item.get("type", "message") == "message":
                results, last_user = 0, _text(item.get("content"))
            elif item.get("type") == "function_call_output":
                results += 1
        kind, what = self._decide(body.get("tools") or [], results, last_user)
        if kind == "call":
            name, arguments = what
            output = [
                {
                    "type": "function_call",
                    "id": self._next_id("fc"),
                    "call_id": self._next_id("call"),
                    "name": name,
                    "arguments": json.dumps(arguments),
                    "status": "completed",
                }
            ]
        else:
            output = [
                {
                    "type": "message",
                    "id": self._next_id("msg"),
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": what, "annotations": []}],
                }
            ]
        prompt = count_tokens(items) + count_tokens(body.get("instructions") or "") + count_tokens(body.get("tools") or [])
        completion = count_tokens(output)
        return {
            "id": self._next_id("resp"),
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": body.get("model", "gpt-4o"),
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": body.get("tools") or [],
            "usage": {
                "input_tokens": prompt,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": completion,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt + completion,
            },
        }


def _tool_name(tool: dict) -> str:
    return tool.get("function", {}).get("name") or tool.get("name", "")


def _tool_schema(tool: dict) -> dict | None:
    return tool.get("function", {}).get("parameters") or tool.get("parameters")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _chat_stream(reply: dict):
    message = reply["choices"][0]["message"]
    base = {k: reply[k] for k in ("id", "object", "created", "model")} | {"object": "chat.completion.chunk"}
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        delta["tool_calls"] = [dict(call, index=i) for i, call in enumerate(message["tool_calls"])]
    yield base | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    yield base | {"choices": [{"index": 0, "delta": {}, "finish_reason": reply["choices"][0]["finish_reason"]}]}
    yield base | {"choices": [], "usage": reply["usage"]}


def _responses_stream(reply: dict):
    in_progress = dict(reply, status="in_progress", output=[])
    yield {"type": "response.created", "sequence_number": 0, "response": in_progress}
    for index, item in enumerate(reply["output"]):
        yield {"type": "response.output_item.added", "sequence_number": 1 + 2 * index, "output_index": index, "item": item}
        yield {"type": "response.output_item.done", "sequence_number": 2 + 2 * index, "output_index": index, "item": item}
    yield {"type": "response.completed", "sequence_number": 1 + 2 * len(reply["output"]), "response": reply}
