//! Deeply nested JSON never breaks a session: every value the engine keeps
//! nests at most `json::MAX_NESTING` levels, so each wrapper it is stored in
//! later (a log line, a compaction snapshot, an update event) stays
//! readable. Deeper values are refused where they enter, with an error that
//! says so (an importer keeps them as their JSON text: see the import
//! crate's tests).

use std::path::Path;

use agentmem::base::json::MAX_NESTING;
use agentmem::pipeline::strategy::ContextSettingsLayer;
use agentmem::{
    AgentId, CompactOptions, Durability, Error, Event, SessionId, StatePatch, Store, TraceType,
};
use serde_json::{json, Value};

/// `1` wrapped in `levels` arrays.
fn nested(levels: usize) -> Value {
    (0..levels).fold(json!(1), |inner, _| json!([inner]))
}

fn store(dir: &Path) -> Store {
    Store::open(dir, Durability::Batch).unwrap()
}

fn session_id() -> SessionId {
    SessionId::new("deep").unwrap()
}

/// Eight turns of chat long enough to compact, after `first`.
fn history_after(first: Vec<Event>) -> Vec<Event> {
    let mut events = first;
    for turn in 0..8 {
        events.push(Event::user(format!(
            "step {turn}: refactor src/module_{turn}.rs"
        )));
        events.push(Event::assistant("Done. ".repeat(200)));
    }
    events
}

/// The session opened again, which must find nothing to repair.
fn reopen_cleanly(store: &Store) -> agentmem::Session {
    let reopened = store
        .open_session(&AgentId::default(), &session_id())
        .unwrap();
    assert!(
        reopened.recoveries().is_empty(),
        "{:?}",
        reopened.recoveries()
    );
    reopened
}

fn protecting_deploy() -> CompactOptions {
    CompactOptions {
        context: ContextSettingsLayer {
            protected_tools: Some(vec!["deploy".into()]),
            ..ContextSettingsLayer::default()
        },
        ..CompactOptions::default()
    }
}

#[test]
fn values_at_the_limit_survive_compaction_and_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let mut session = store
        .open_or_create(&AgentId::default(), &session_id())
        .unwrap();
    let mut user = Event::user("deploy the service").with_id("u-deep");
    user.extra.insert("vendor", nested(MAX_NESTING));
    let call = Event::tool_call("call_1", "deploy", json!({"spec": nested(MAX_NESTING - 1)}))
        .with_id("c-deep");
    let mut result = Event::tool_result("call_1", "deployed").with_id("r-deep");
    result.tool_result = Some(nested(MAX_NESTING));
    session
        .ingest(history_after(vec![user, call, result]))
        .unwrap();
    let state = StatePatch::from_json(json!({"plan": nested(MAX_NESTING - 1)})).unwrap();
    session.update_working_memory(state, Some(0)).unwrap();

    let report = session.compact(&protecting_deploy()).unwrap();
    assert!(report.applied, "{report:?}");
    let snapshot = session.snapshot().unwrap().clone();
    assert!(
        snapshot.base.iter().any(|e| e.id == "u-deep"),
        "the user message is kept"
    );
    assert!(
        snapshot.base.iter().any(|e| e.id == "r-deep"),
        "the protected result is kept"
    );
    drop(session);

    let reopened = reopen_cleanly(&store);
    assert_eq!(reopened.snapshot(), Some(&snapshot));
    assert_eq!(reopened.working_memory().version, 1);
    let history = reopened.full_history().unwrap();
    let kept = history.iter().find(|e| e.id == "u-deep").unwrap();
    assert_eq!(kept.extra.get("vendor"), Some(nested(MAX_NESTING)));
    assert!(!dir
        .path()
        .join("agents/default/sessions/deep/raw_traces.jsonl.corrupt")
        .exists());
}

#[test]
fn a_deeper_value_is_refused_where_it_enters_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let mut session = store
        .open_or_create(&AgentId::default(), &session_id())
        .unwrap();
    session.ingest(vec![Event::user("hello")]).unwrap();
    let too_deep = [MAX_NESTING + 1, 126];
    let mut offenders = Vec::new();
    for levels in too_deep {
        let mut unknown = Event::user("unknown field");
        unknown.extra.insert("vendor", nested(levels));
        offenders.push(("field \"vendor\"", unknown));
        offenders.push((
            "tool_args",
            Event::tool_call("call_1", "deploy", json!({"spec": nested(levels - 1)})),
        ));
        let mut result = Event::tool_result("call_1", "ok");
        result.tool_result = Some(nested(levels));
        offenders.push(("tool_result", result));
        let mut reasoning = Event::new(TraceType::Reasoning, "thinking");
        reasoning.opaque = Some(nested(levels));
        offenders.push(("opaque", reasoning));
    }
    for (name, offender) in offenders {
        let levels = agentmem::base::json::nesting(
            &offender
                .tool_args
                .clone()
                .or(offender.tool_result.clone())
                .or(offender.opaque.clone())
                .or(offender.extra.get("vendor"))
                .unwrap(),
        );
        let error = session
            .ingest(vec![Event::assistant("first of the batch"), offender])
            .unwrap_err();
        let message = error.to_string();
        assert!(
            matches!(error, Error::InvalidEvent { index: 1, .. }),
            "{message}"
        );
        assert!(
            message.contains(name) && message.contains(&format!("nests {levels} levels")),
            "{message}"
        );
    }
    assert_eq!(
        session.events().len(),
        1,
        "nothing of a refused batch is written"
    );
    drop(session);
    assert_eq!(reopen_cleanly(&store).events().len(), 1);
}

#[test]
fn a_working_memory_change_that_would_nest_too_deep_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let mut session = store
        .open_or_create(&AgentId::default(), &session_id())
        .unwrap();
    let refused = StatePatch::from_json(json!({"plan": nested(126)})).unwrap_err();
    assert!(
        refused.to_string().contains("nests 127 levels"),
        "{refused}"
    );

    // Each patch is shallow; the document they would make is not.
    let path = "/a".repeat(40);
    let steps = StatePatch::from_json(
        json!({"a": (0..39).fold(json!({}), |inner, _| json!({"a": inner}))}),
    )
    .unwrap();
    session.update_working_memory(steps, Some(0)).unwrap();
    let deeper = StatePatch::from_json(
        json!([{"op": "add", "path": format!("{path}/b"), "value": nested(30)}]),
    )
    .unwrap();
    let error = session.update_working_memory(deeper, Some(1)).unwrap_err();
    assert!(matches!(error, Error::WorkingMemoryPatch { .. }), "{error}");
    assert!(
        error.to_string().contains("the document it makes nests"),
        "{error}"
    );

    let mut update = Event::new(TraceType::WorkingMemory, "");
    update.working_memory = Some(
        serde_json::from_value(json!({
            "kind": "merge_patch", "patch": {"plan": nested(126)}
        }))
        .unwrap(),
    );
    let error = session.ingest(vec![update]).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("the working-memory patch nests 127 levels"),
        "{error}"
    );
    assert_eq!(session.working_memory().version, 1);
    drop(session);

    let reopened = reopen_cleanly(&store);
    assert_eq!(reopened.working_memory().version, 1);
}
