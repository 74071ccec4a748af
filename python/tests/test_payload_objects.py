"""The prepared payload crosses into Python as objects built once per segment.

``Session.prepare`` reuses the dicts it built for the turns an earlier call
already had (the engine shares them between calls as segments), converting
only what is new. These tests hold that the reuse happens, that it gives the
dicts the JSON path gives, and that changing a returned payload cannot leak
into the next one.
"""

from __future__ import annotations

import json

import pytest

import agentmem

BUDGET = {"context_window": 24_000, "max_output_tokens": 4_000, "safety_margin": 4_000}
"""A budget the long example session passes several times, so it compacts."""

LIST_KEY = {"openai-chat": "messages", "openai-responses": "input", "anthropic": "messages", "gemini": "contents"}


def turns_of(events: list[dict]) -> list[list[dict]]:
    turns: list[list[dict]] = []
    for event in events:
        if event["trace_type"] == "user" or not turns:
            turns.append([])
        turns[-1].append(event)
    return turns


def json_path(session: agentmem.Session, arguments: dict) -> dict:
    """The payload as the HTTP API's JSON gives it, read by ``json.loads``."""
    return json.loads(session._native.prepare_json(arguments))["payload"]


def test_entries_of_turns_already_prepared_are_the_same_objects(store: agentmem.Store, long_session_events) -> None:
    turns = turns_of(long_session_events)[:6]
    with store.create_session("reuse") as session:
        for turn in turns[:5]:
            session.ingest(turn)
        first = session.prepare("gpt-4.1", "openai-responses")["input"]
        session.ingest(turns[5])
        second = session.prepare("gpt-4.1", "openai-responses")["input"]
    assert len(second) > len(first) > 4
    # Every entry of the first call but its last segment's is the very dict
    # the second call returns at the same place: none was converted again.
    shared = [index for index, entry in enumerate(first) if entry is second[index]]
    assert shared == list(range(len(shared))) and len(shared) >= len(first) - 2
    assert not {id(entry) for entry in second[len(first) :]} & {id(entry) for entry in first}
    assert second[: len(first)] == first


@pytest.mark.parametrize("target", ["openai-chat", "openai-responses", "anthropic", "gemini"])
def test_objects_equal_the_json_path_over_a_session_with_compactions(
    store: agentmem.Store, long_session_events, target: str
) -> None:
    # Memory off: recall would add what the compaction left to the next call only.
    arguments = dict(BUDGET, model="gpt-4o", target=target, system="Be brief.", live_context="Today is 2026-01-31.", memory="off")
    compactions = 0
    with store.create_session("equal") as session:
        for turn in turns_of(long_session_events):
            session.ingest(turn)
            prepared = session.prepare(**arguments)
            compactions += sum(action["action"] == "compacted" for action in prepared.stats["actions"])
            expected = json_path(session, arguments)
            # Equal, key order included, down to every nested value.
            assert json.dumps(prepared) == json.dumps(expected)
    assert compactions >= 1


def test_changing_a_returned_payload_leaves_the_next_one_as_the_engine_made_it(
    store: agentmem.Store, long_session_events
) -> None:
    turns = turns_of(long_session_events)
    with store.create_session("mutate") as session:
        for turn in turns[:4]:
            session.ingest(turn)
        prepared = session.prepare("gpt-4.1", "openai-chat", system="Be brief.")
        prepared["messages"].append({"role": "user", "content": "appended by the caller"})
        prepared["messages"][1:3] = []
        prepared["model"] = "changed"
        again = session.prepare("gpt-4.1", "openai-chat", system="Be brief.")
        assert json.dumps(again) == json.dumps(json_path(session, {"model": "gpt-4.1", "target": "openai-chat", "system": "Be brief."}))
        assert again["messages"] is not prepared["messages"]
        session.ingest(turns[4])
        after = session.prepare("gpt-4.1", "openai-chat", system="Be brief.")
        assert after["model"] == "gpt-4.1" and all(m.get("content") != "appended by the caller" for m in after["messages"])


def test_one_session_prepared_for_each_target_in_turn_equals_the_json_path(store: agentmem.Store, long_session_events) -> None:
    turns = turns_of(long_session_events)[:6]
    targets = [("gpt-4o", "openai-chat"), ("gpt-4o", "openai-responses"), ("claude-sonnet-4-5", "anthropic")]
    with store.create_session("switch") as session:
        for number, turn in enumerate(turns):
            session.ingest(turn)
            for model, target in targets[number % 3 :] + targets[: number % 3]:
                arguments = {"model": model, "target": target, "memory": "off"}
                assert json.dumps(session.prepare(**arguments)) == json.dumps(json_path(session, arguments))
