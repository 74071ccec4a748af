"""Provider shapes in and out: messages handed over in each provider's own
shape, the prepared payload sent with the real SDKs to a model server on
loopback, and the SDKs' response objects recorded with their usage."""

from __future__ import annotations

import anthropic
import openai
import pytest
from model_server import ModelServer

import agentmem

BASH = {
    "name": "bash",
    "description": "Run a shell command.",
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
}


def test_an_openai_chat_tool_loop_through_the_sdk(store: agentmem.Store) -> None:
    with ModelServer(calls_per_turn=2) as server, store.create_session("chat") as session:
        client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        session.ingest([{"role": "user", "content": "run the tests"}], format="openai-chat")
        for _ in range(3):
            payload = session.prepare(model="gpt-4.1", tools=[BASH], system="You run commands.")
            completion = client.chat.completions.create(**payload)
            assert session.record(completion)["appended"] >= 1
            assert session.record(completion)["appended"] == 0  # the same response adds nothing
            message = completion.choices[0].message
            for call in message.tool_calls or []:
                session.ingest(
                    [{"role": "tool", "tool_call_id": call.id, "content": f"ran {call.function.arguments}: ok"}],
                    format="openai-chat",
                )
        events = session.events()
        assert [e["trace_type"] for e in events] == [
            "user", "tool_call", "tool_result", "tool_call", "tool_result", "assistant"
        ]
        assert events[-1]["usage"]["prompt_tokens"] == completion.usage.prompt_tokens
        assert [t["status"] for t in session.tool_interactions()] == ["SUCCESS", "SUCCESS"]
        # Each request the SDK sent carried every earlier call with its result.
        last = server.bodies("/chat/completions")[-1]
        assert [m["role"] for m in last["messages"]] == ["system", "user", "assistant", "tool", "assistant", "tool"]
        # The next context is measured from the provider's report.
        assert session.context(model="gpt-4.1", tools=[BASH])["anchored_tokens"] is not None


def test_an_openai_responses_loop_through_the_sdk(store: agentmem.Store) -> None:
    with ModelServer(calls_per_turn=1) as server, store.create_session("responses") as session:
        client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        session.ingest([{"type": "message", "role": "user", "content": "list the files"}], format="openai-responses")
        payload = session.prepare(model="gpt-4.1", target="openai-responses", tools=[BASH])
        response = client.responses.create(**payload)
        session.record(response)
        call = next(item for item in response.output if item.type == "function_call")
        session.ingest(
            [{"type": "function_call_output", "call_id": call.call_id, "output": "Cargo.toml\nsrc"}],
            format="openai-responses",
        )
        final = client.responses.create(**session.prepare(model="gpt-4.1", target="openai-responses", tools=[BASH]))
        session.record(final)
        kinds = [e["trace_type"] for e in session.events()]
        assert kinds == ["user", "tool_call", "tool_result", "assistant"]
        assert session.events()[-1]["usage"]["prompt_tokens"] == final.usage.input_tokens
        sent = server.bodies("/responses")[-1]["input"]
        call_ids = {item.get("type"): item.get("call_id") for item in sent}
        assert call_ids["function_call"] == call_ids["function_call_output"] == call.call_id


def test_anthropic_messages_and_a_response_object(store: agentmem.Store) -> None:
    with store.create_session("claude") as session:
        session.ingest(
            {"system": "You are terse.", "messages": [{"role": "user", "content": [{"type": "text", "text": "what is in src?"}]}]},
            format="anthropic",
        )
        message = anthropic.types.Message.model_validate(
            {
                "id": "msg_01",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [
                    {"type": "text", "text": "Let me look."},
                    {"type": "tool_use", "id": "toolu_01", "name": "bash", "input": {"cmd": "ls src"}},
                ],
                "stop_reason": "tool_use",
                "stop_sequence": None,
                "usage": {"input_tokens": 120, "output_tokens": 18},
            }
        )
        session.record(message)
        session.ingest(
            [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "lib.rs main.rs"}]}],
            format="anthropic",
        )
        payload = session.prepare(model="claude-sonnet-4-5", tools=[BASH])
        assert payload["system"][0]["text"].startswith("You are terse.")
        blocks = [(m["role"], b["type"]) for m in payload["messages"] for b in m["content"]]
        assert ("assistant", "tool_use") in blocks and ("user", "tool_result") in blocks
        assert [e["usage"]["prompt_tokens"] for e in session.events() if "usage" in e] == [120]


def test_bad_shapes_are_refused_whole(store: agentmem.Store) -> None:
    with store.create_session() as session:
        with pytest.raises(agentmem.BadShape):
            session.ingest([{"role": "user", "content": "fine"}, {"role": 7}], format="openai-chat")
        with pytest.raises(agentmem.BadShape):
            session.record({"object": "chat.completion", "model": "gpt-4.1"})
        with pytest.raises(agentmem.BadShape, match="cannot tell whose response"):
            session.record({"hello": "world"})
        with pytest.raises(agentmem.InvalidInput, match="unknown format"):
            session.ingest([{"role": "user", "content": "x"}], format="carrier-pigeon")  # type: ignore[arg-type]
        assert session.events() == []
