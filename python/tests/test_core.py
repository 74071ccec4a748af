"""The synchronous API on a real store: sessions, ingest, prepare for each
provider, compaction, context, working memory, memory and facts, search and
recall."""

from __future__ import annotations

import json

import pytest

import agentmem

TOOL_LOOP = [
    {"trace_type": "user", "content": "run the tests in crates/parser"},
    {"trace_type": "tool_call", "tool_call_id": "c1", "tool_name": "bash", "tool_args": {"cmd": "cargo test -p parser"}},
    {"trace_type": "tool_result", "tool_call_id": "c1", "content": "test result: FAILED. 1 failed; E0425 in src/lexer.rs"},
    {"trace_type": "assistant", "content": "The lexer test fails with E0425.", "usage": {"prompt_tokens": 812, "completion_tokens": 9, "model": "gpt-4.1"}},
]


def test_a_session_takes_events_and_prepares_each_providers_payload(store: agentmem.Store) -> None:
    with store.create_session("fix-parser") as session:
        report = session.ingest(TOOL_LOOP)
        assert report == {"appended": 4, "duplicates": 0, "evicted": 0, "compaction_due": False}
        assert session.ingest(session.events()[:2])["duplicates"] == 2

        chat = session.prepare(model="gpt-4.1", system="Be brief.")
        assert chat["model"] == "gpt-4.1"
        assert [m["role"] for m in chat["messages"]][:4] == ["system", "user", "assistant", "tool"]
        assert chat["messages"][2]["tool_calls"][0]["id"] == "c1"
        assert 0 < chat.stats["context_tokens"] <= chat.stats["input_budget"]

        responses = session.prepare(model="gpt-4.1", target="openai-responses")
        assert {item.get("type") for item in responses["input"]} >= {"function_call", "function_call_output"}

        anthropic = session.prepare(model="claude-sonnet-4-5", system="Be brief.")
        assert anthropic["max_tokens"] > 0 and anthropic["messages"][0]["role"] == "user"
        blocks = [b["type"] for m in anthropic["messages"] for b in m["content"] if isinstance(m["content"], list)]
        assert "tool_use" in blocks and "tool_result" in blocks

        interactions = session.tool_interactions()
        assert [(t["tool_name"], t["status"]) for t in interactions] == [("bash", "SUCCESS")]


def test_a_bad_event_fails_the_whole_batch_and_writes_nothing(store: agentmem.Store) -> None:
    session = store.create_session()
    with pytest.raises(agentmem.InvalidEvent, match="event 1 of the batch"):
        session.ingest([{"trace_type": "user", "content": "hello"}, {"trace_type": "shout", "content": "x"}])
    assert session.events() == []
    session.close()


def test_the_long_session_compacts_under_a_small_budget(store: agentmem.Store, long_session_events: list[dict]) -> None:
    session = store.create_session("long")
    turns: list[list[dict]] = []
    for event in long_session_events:
        if event["trace_type"] == "user" or not turns:
            turns.append([])
        turns[-1].append(event)
    actions: set[str] = set()
    for turn in turns:
        session.ingest(turn)
        prepared = session.prepare(model="gpt-4o", context_window=24_000, max_output_tokens=4_000, safety_margin=4_000)
        assert prepared.stats["context_tokens"] <= prepared.stats["input_budget"]
        actions.update(json.dumps(a) for a in prepared.stats["actions"])
    assert any("compact" in action for action in actions)
    meta = session.meta()
    assert meta["compactions_finished"] >= 1 and meta["archived_events"] > 0
    assert len(session.events()) == len(long_session_events)
    context = session.context(model="gpt-4o")
    assert context["compactions"] == meta["compactions_finished"] and context["would_compact"] is False
    session.close()


def test_manual_compaction_reports_and_keeps_the_history(store: agentmem.Store, long_session_events: list[dict]) -> None:
    with store.create_session() as session:
        session.ingest(long_session_events[:300])
        report = session.compact(focus="the lexer")
        assert report["applied"] is True and report["focus"] == "the lexer"
        assert report["tokens_after"] < report["tokens_before"]
        assert len(session.events()) == 300


def test_working_memory_versions_and_schema(store: agentmem.Store) -> None:
    with store.create_session() as session:
        assert session.state() == {"version": 0, "hash": session.state()["hash"], "document": {}, "schema": None}
        assert session.update_state({"goal": "fix the parser"}, expected_version=0)["version"] == 1
        updated = session.update_state([{"op": "add", "path": "/done", "value": ["reproduced"]}], expected_version=1)
        assert updated["document"] == {"goal": "fix the parser", "done": ["reproduced"]}

        with pytest.raises(agentmem.StaleVersion) as stale:
            session.update_state({"goal": "something else"}, expected_version=1)
        assert (stale.value.expected, stale.value.actual) == (1, 2)
        assert isinstance(stale.value, agentmem.Conflict) and isinstance(stale.value, agentmem.AgentmemError)

        with pytest.raises(agentmem.InvalidPatch):
            session.update_state([{"op": "remove", "path": "/nowhere"}])
        schema = {"type": "object", "properties": {"goal": {"type": "string"}}}
        session.set_state_schema(schema)
        assert session.state()["schema"] == schema
        with pytest.raises(agentmem.SchemaViolation):
            session.update_state({"goal": 7})
        with pytest.raises(agentmem.InvalidSchema):
            session.set_state_schema({"type": "no-such-type"})
        assert [v["version"] for v in session.state_history()] == [1, 2]
        assert session.state()["version"] == 2


def test_sessions_list_fork_resume_delete(store: agentmem.Store) -> None:
    session = store.create_session("main")
    session.ingest(TOOL_LOOP + [{"trace_type": "user", "content": "now fix it"}])
    forked = session.fork(at_turn=1, new_id="retry")
    assert forked["id"] == "retry" and forked["forked_from"] == "main" and forked["events"] == 4
    with pytest.raises(agentmem.TurnNotFound):
        session.fork(at_turn=9)
    with pytest.raises(agentmem.SessionExists):
        store.create_session("main")
    assert sorted(s["id"] for s in store.list_sessions()) == ["main", "retry"]
    with pytest.raises(agentmem.SessionLocked):
        store.delete_session("main")
    session.close()
    assert session.closed
    with pytest.raises(agentmem.ReadOnlySession):
        session.ingest(TOOL_LOOP)
    with store.resume_session("main") as again:
        assert len(again.events()) == 5
    store.delete_session("main")
    with pytest.raises(agentmem.SessionNotFound):
        store.resume_session("main")
    assert store.session("fresh").events() == []


def test_ids_and_models_are_checked(store: agentmem.Store, tmp_path) -> None:
    with pytest.raises(agentmem.InvalidId):
        store.create_session("../escape")
    with pytest.raises(agentmem.InvalidId):
        agentmem.Store(tmp_path, agent="a/b")
    assert store.model("gpt-4.1")["context_window"] > 100_000
    with pytest.raises(agentmem.UnknownModel) as unknown:
        store.model("acme-rocket-9")
    assert unknown.value.model == "acme-rocket-9"
    strict = agentmem.Store(tmp_path / "strict", unknown_models="refuse")
    with strict.create_session() as session:
        session.ingest(TOOL_LOOP[:1])
        with pytest.raises(agentmem.UnknownModel):
            session.prepare(model="acme-rocket-9")
        assert session.prepare(model="gpt-4.1")["messages"]
    with store.create_session() as session:
        session.ingest(TOOL_LOOP[:1])
        assert session.prepare(model="acme-rocket-9").stats["budget"]["context_window"] == 200_000
        with pytest.raises(agentmem.InvalidInput, match="unknown target"):
            session.prepare(model="gpt-4.1", target="carrier-pigeon")


def test_memory_facts_search_and_recall(store: agentmem.Store) -> None:
    first = store.write_memory("- Deploys go through the canary stage.")
    with pytest.raises(agentmem.MemoryConflict):
        store.write_memory("- stale", expected_hash="0000")
    updated = store.update_memory("canary", "blue-green", expected_hash=first["hash"])
    assert "blue-green" in store.read_memory()["content"] and updated["hash"] != first["hash"]
    with pytest.raises(agentmem.EditRefused):
        store.update_memory("no such text", "x")

    added = store.add_fact("The user prefers tabs over spaces.", tags=["style"])
    fact_id = added["id"]
    assert [f["fact"] for f in store.facts()] == ["The user prefers tabs over spaces."]
    new_id = store.supersede_fact(fact_id, "The user prefers two-space indents.")
    assert [f["id"] for f in store.facts()] == [new_id] and len(store.facts(all=True)) == 2
    store.delete_fact(new_id)
    assert store.facts() == []

    with store.create_session("earlier") as session:
        session.ingest(TOOL_LOOP)
    hits = store.search("lexer", role="tool")
    assert hits and hits[0]["session"] == "earlier"
    with pytest.raises(agentmem.InvalidInput):
        store.search("lexer", role="nobody")
    recalled = store.recall("What failed in the lexer?", budget=500)
    assert "E0425" in json.dumps(recalled)
