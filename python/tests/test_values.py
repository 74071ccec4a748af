"""Values handed to the engine arrive as JSON would carry them, whichever way
they cross: dicts, lists and scalars are read straight, anything else is
written by ``json.dumps`` first, and both give the same events."""

from __future__ import annotations

import dataclasses
import json
import types

import pytest

import agentmem


def test_plain_values_read_straight_equal_what_the_json_path_reads(store: agentmem.Store) -> None:
    args = {"path": "src/ß.rs", "lines": (1, 2), "ratio": 0.1, "big": 2**63, "negative": -(2**63), "flag": True, "none": None}
    with store.create_session("plain") as session:
        session.ingest([{"trace_type": "tool_call", "tool_call_id": "c1", "tool_name": "read", "tool_args": args}])
        stored = session.events()[0]["tool_args"]
    assert stored == json.loads(json.dumps(args))
    assert type(stored["flag"]) is bool and type(stored["big"]) is int and stored["lines"] == [1, 2]


def test_unknown_fields_keep_big_numbers_and_key_order(store: agentmem.Store) -> None:
    event = {"trace_type": "user", "content": "hi", "vendor": {"zeta": 2**70, "alpha": [1.5, {"b": 1, "a": 2}]}}
    with store.create_session("unknown") as session:
        session.ingest([event])
        stored = session.events()[0]["vendor"]
    assert stored == event["vendor"]
    assert list(stored) == ["zeta", "alpha"] and list(stored["alpha"][1]) == ["b", "a"]


def test_objects_json_cannot_hold_directly_take_the_json_path(store: agentmem.Store) -> None:
    @dataclasses.dataclass
    class Args:
        cmd: str

    with store.create_session("objects") as session:
        session.ingest(
            [
                {"trace_type": "tool_call", "tool_call_id": "c1", "tool_name": "bash", "tool_args": Args("ls")},
                {"trace_type": "tool_call", "tool_call_id": "c2", "tool_name": "bash", "tool_args": {1: "one"}},
                types.MappingProxyType({"trace_type": "user", "content": "a mapping"}),
            ]
        )
        events = session.events()
    assert events[0]["tool_args"] == {"cmd": "ls"}
    assert events[1]["tool_args"] == {"1": "one"}
    assert events[2]["content"] == "a mapping"


@pytest.mark.parametrize(
    ("value", "error"),
    [(float("nan"), agentmem.InvalidInput), ({"a", "set"}, TypeError)],
)
def test_a_value_json_cannot_carry_is_refused_and_nothing_is_written(store: agentmem.Store, value, error) -> None:
    with store.create_session("refused") as session:
        with pytest.raises(error):
            session.ingest([{"trace_type": "user", "content": "first"}, {"trace_type": "tool_call", "tool_call_id": "c1", "tool_name": "x", "tool_args": {"v": value}}])
        with pytest.raises(error):
            session.ingest([{"role": "user", "content": "first"}, {"role": "user", "content": [{"type": "text", "text": "x", "v": value}]}], format="openai-chat")
        assert session.events() == []


def test_unchanged_fields_and_system_message_are_the_same_objects_between_calls(store: agentmem.Store) -> None:
    tools = [{"name": "ls", "description": "List a folder.", "parameters": {"type": "object"}}]
    with store.create_session("around") as session:
        session.ingest([{"trace_type": "user", "content": "list it"}])
        first = session.prepare("gpt-4.1", "openai-chat", system="Be brief.", tools=tools)
        session.ingest([{"trace_type": "assistant", "content": "Listing."}])
        second = session.prepare("gpt-4.1", "openai-chat", system="Be brief.", tools=tools)
        assert second["messages"][0] is first["messages"][0] and second["tools"] is first["tools"]
        changed = session.prepare("gpt-4.1", "openai-chat", system="Be thorough.")
    assert changed["messages"][0] == {"role": "system", "content": "Be thorough."}
    assert "tools" not in changed and first["messages"][0]["content"] == "Be brief."
