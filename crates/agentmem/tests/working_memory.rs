//! Working memory on real files: schema violations and stale versions are
//! refused with nothing changed; the state survives resume, fork,
//! compaction and replay; it is in every prepared context, as its own
//! section, while its updates stay in the log and in search.

mod common;

use agentmem::base::error::SchemaScope;
use agentmem::base::state::StateUpdate;
use agentmem::working::cache::STATE_FILE;
use agentmem::working::{replay, Keep};
use agentmem::{
    tools, CompactOptions, Error, Event, PrepareRequest, SearchFilter, SearchRole, Session,
    SessionId, StatePatch, Store, Target, TraceType, WorkingMemory,
};
use common::fresh_store;
use serde_json::{json, Value};

fn patch(value: Value) -> StatePatch {
    StatePatch::from_json(value).unwrap()
}

fn plan_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "files_reviewed": {"type": "array", "items": {"type": "string"}},
            "plan": {"type": "array", "items": {
                "type": "object",
                "required": ["step", "status"],
                "properties": {"status": {"enum": ["todo", "doing", "done"]}}
            }}
        }
    })
}

/// A coding session of `turns` turns, each reviewing a file and recording
/// it in the working memory with a JSON Patch (plus a plan by merge patch
/// first).
fn reviewed_session(store: &Store, id: &str, turns: usize) -> Session {
    let agent = Default::default();
    let mut session = store
        .create_session(&agent, Some(SessionId::new(id).unwrap()))
        .unwrap();
    session
        .update_working_memory(
            patch(json!({"files_reviewed": [], "plan": [{"step": "review", "status": "doing"}]})),
            Some(0),
        )
        .unwrap();
    for turn in 0..turns {
        let file = format!("src/module_{turn}.rs");
        session
            .ingest(vec![
                Event::user(format!(
                    "Review {file} and note what you find. {}",
                    "Context. ".repeat(60)
                )),
                Event::assistant(format!("{file} reviewed: {}", "Looks fine. ".repeat(80))),
            ])
            .unwrap();
        let version = session.working_memory().version;
        session
            .update_working_memory(
                patch(json!([{"op": "add", "path": "/files_reviewed/-", "value": file}])),
                Some(version),
            )
            .unwrap();
    }
    session
}

/// A reviewed session whose own schema is [`plan_schema`].
fn planned_session(store: &Store, turns: usize) -> Session {
    let mut session = reviewed_session(store, "s", turns);
    session
        .set_working_memory_schema(SchemaScope::Session, Some(plan_schema()))
        .unwrap();
    session
}

fn files_reviewed(state: &WorkingMemory) -> Vec<String> {
    serde_json::from_value(state.document["files_reviewed"].clone()).unwrap()
}

fn log_len(session: &Session) -> usize {
    std::fs::read(session.paths().raw_traces()).unwrap().len()
}

fn cached(session: &Session) -> Vec<u8> {
    std::fs::read(session.paths().dir.join(STATE_FILE)).unwrap()
}

#[test]
fn a_schema_violation_names_the_failing_path_and_changes_nothing() {
    let (_dir, store, _agent) = fresh_store();
    let mut session = planned_session(&store, 2);
    let (before, log_before, cache_before) = (
        session.working_memory().clone(),
        log_len(&session),
        cached(&session),
    );

    let bad_status =
        patch(json!([{"op": "replace", "path": "/plan/0/status", "value": "finished"}]));
    match session.update_working_memory(bad_status, Some(before.version)) {
        Err(Error::WorkingMemoryInvalid { path, scope, .. }) => {
            assert_eq!(path, "/plan/0/status");
            assert_eq!(scope, SchemaScope::Session);
        }
        other => panic!("expected a schema violation, got {other:?}"),
    }
    let not_a_string = patch(json!({"files_reviewed": ["a.rs", 7]}));
    let error = session
        .update_working_memory(not_a_string, None)
        .unwrap_err();
    assert!(error.to_string().contains("/files_reviewed/1"), "{error}");

    assert_eq!(session.working_memory(), &before);
    assert_eq!(log_len(&session), log_before, "nothing appended");
    assert_eq!(
        cached(&session),
        cache_before,
        "the materialized state is untouched"
    );
    let done = patch(json!([{"op": "replace", "path": "/plan/0/status", "value": "done"}]));
    assert_eq!(
        session
            .update_working_memory(done, Some(before.version))
            .unwrap()
            .version,
        before.version + 1
    );
}

#[test]
fn a_schema_is_checked_as_a_schema_and_against_the_current_state() {
    let (_dir, store, agent) = fresh_store();
    let mut session = reviewed_session(&store, "s", 1);
    let not_a_schema =
        session.set_working_memory_schema(SchemaScope::Session, Some(json!({"type": 7})));
    assert!(
        matches!(not_a_schema, Err(Error::WorkingMemorySchema { .. })),
        "{not_a_schema:?}"
    );
    let external = json!({"$ref": "https://example.com/state.json"});
    assert!(session
        .set_working_memory_schema(SchemaScope::Session, Some(external))
        .is_err());
    let broken_by_state = json!({"type": "object", "required": ["owner"]});
    let error = session
        .set_working_memory_schema(SchemaScope::Session, Some(broken_by_state))
        .unwrap_err();
    assert!(
        error.to_string().contains("patch the state first"),
        "{error}"
    );
    assert!(
        session.working_memory_schema().unwrap().is_none(),
        "nothing was set"
    );

    // The agent's schema holds in a session without its own; the session's wins.
    session
        .set_working_memory_schema(
            SchemaScope::Agent,
            Some(json!({"type": "object", "maxProperties": 2})),
        )
        .unwrap();
    let mut other = store.create_session(&agent, None).unwrap();
    let three = patch(json!({"a": 1, "b": 2, "c": 3}));
    assert!(matches!(
        other.update_working_memory(three.clone(), Some(0)),
        Err(Error::WorkingMemoryInvalid {
            scope: SchemaScope::Agent,
            ..
        })
    ));
    other
        .set_working_memory_schema(SchemaScope::Session, Some(json!({"type": "object"})))
        .unwrap();
    assert_eq!(
        other.update_working_memory(three, Some(0)).unwrap().version,
        1
    );
    other
        .set_working_memory_schema(SchemaScope::Session, None)
        .unwrap();
    assert_eq!(
        other.working_memory_schema().unwrap().unwrap().scope(),
        SchemaScope::Agent
    );
}

/// A task's state can be typed before it has any: the empty state is no
/// state to check, and the first update must bring what the schema requires.
#[test]
fn a_session_without_state_takes_a_schema_its_first_update_must_keep_to() {
    let (_dir, store, agent) = fresh_store();
    let typed = json!({
        "type": "object",
        "required": ["owner", "plan"],
        "properties": {"owner": {"type": "string"}, "plan": plan_schema()["properties"]["plan"]}
    });
    for scope in [SchemaScope::Session, SchemaScope::Agent] {
        let mut session = store.create_session(&agent, None).unwrap();
        session
            .set_working_memory_schema(scope, Some(typed.clone()))
            .unwrap();
        assert_eq!(
            session.working_memory_schema().unwrap().unwrap().scope(),
            scope
        );
        let log = log_len(&session);
        let partial = session.update_working_memory(patch(json!({"owner": "ana"})), Some(0));
        match partial {
            Err(Error::WorkingMemoryInvalid { message, .. }) => {
                assert!(message.contains("plan"), "{message}")
            }
            other => panic!("expected a schema violation, got {other:?}"),
        }
        assert_eq!(
            (session.working_memory().version, log_len(&session)),
            (0, log)
        );
        let first = json!({"owner": "ana", "plan": [{"step": "review", "status": "todo"}]});
        let state = session
            .update_working_memory(patch(first), Some(0))
            .unwrap();
        assert_eq!(state.version, 1);

        // Once there is a state, a schema it breaks is refused as before.
        let stricter = json!({"type": "object", "required": ["owner", "plan", "deadline"]});
        let error = session
            .set_working_memory_schema(SchemaScope::Session, Some(stricter))
            .unwrap_err();
        assert!(
            error.to_string().contains("patch the state first"),
            "{error}"
        );
        session.set_working_memory_schema(scope, None).unwrap();
    }
}

#[test]
fn stale_versions_are_refused_and_change_nothing() {
    let (_dir, store, agent) = fresh_store();
    let mut session = reviewed_session(&store, "s", 1);
    let read_by_both = session.working_memory().version;
    let first = patch(json!({"owner": "alice"}));
    let second = patch(json!({"owner": "bob"}));
    session
        .update_working_memory(first, Some(read_by_both))
        .unwrap();
    let log_before = log_len(&session);
    match session.update_working_memory(second.clone(), Some(read_by_both)) {
        Err(Error::WorkingMemoryConflict { expected, actual }) => {
            assert_eq!((expected, actual), (read_by_both, read_by_both + 1));
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(session.working_memory().document["owner"], "alice");
    assert_eq!(log_len(&session), log_before);

    // An update with a version ingested out of turn is refused too, batch and all.
    let stale_event = Event::working_memory(StateUpdate {
        patch: second,
        version: read_by_both + 1,
        hash: String::new(),
    });
    let batch = vec![Event::user("and another thing"), stale_event];
    assert!(matches!(
        session.ingest(batch),
        Err(Error::InvalidEvent { index: 1, .. })
    ));
    assert_eq!(log_len(&session), log_before);

    // Another process cannot write while this one holds the session.
    let id = session.id().clone();
    assert!(matches!(
        store.open_session(&agent, &id),
        Err(Error::SessionLocked { .. })
    ));
    // A reader sees the state, and cannot change it.
    let mut reader = store.read_session(&agent, &id).unwrap();
    assert_eq!(reader.working_memory(), session.working_memory());
    assert!(matches!(
        reader.update_working_memory(patch(json!({"x": 1})), None),
        Err(Error::ReadOnly { .. })
    ));
}

#[test]
fn a_patch_that_does_not_apply_changes_nothing() {
    let (_dir, store, _agent) = fresh_store();
    let mut session = reviewed_session(&store, "s", 1);
    let before = session.working_memory().clone();
    let failing_test = patch(json!([
        {"op": "add", "path": "/flags", "value": ["urgent"]},
        {"op": "test", "path": "/plan/0/status", "value": "done"}
    ]));
    assert!(matches!(
        session.update_working_memory(failing_test, None),
        Err(Error::WorkingMemoryPatch { .. })
    ));
    let missing = patch(json!([{"op": "remove", "path": "/nothing/here"}]));
    assert!(session.update_working_memory(missing, None).is_err());
    assert!(StatePatch::from_json(json!([{"op": "frobnicate", "path": "/a"}])).is_err());
    assert_eq!(session.working_memory(), &before);
}

#[test]
fn resume_carries_the_state_and_rebuilds_a_missing_or_stale_cache() {
    let (_dir, store, agent) = fresh_store();
    let session = reviewed_session(&store, "s", 30);
    let state = session.working_memory().clone();
    assert_eq!(state.version, 31);
    assert_eq!(files_reviewed(&state).len(), 30);
    let id = session.id().clone();
    let cache_path = session.paths().dir.join(STATE_FILE);
    session.close().unwrap();

    assert_eq!(
        store.open_session(&agent, &id).unwrap().working_memory(),
        &state
    );

    std::fs::remove_file(&cache_path).unwrap();
    let reopened = store.open_session(&agent, &id).unwrap();
    assert_eq!(reopened.working_memory(), &state);
    drop(reopened);
    assert!(cache_path.exists(), "a writer materializes the state again");

    let behind = WorkingMemory {
        version: 3,
        hash: "0000000000000000".into(),
        document: json!({"files_reviewed": []}),
    };
    std::fs::write(&cache_path, serde_json::to_vec(&behind).unwrap()).unwrap();
    assert_eq!(
        store.read_session(&agent, &id).unwrap().working_memory(),
        &state
    );
    std::fs::write(&cache_path, b"{ not json").unwrap();
    assert_eq!(
        store.open_session(&agent, &id).unwrap().working_memory(),
        &state
    );
}

#[test]
fn fork_carries_the_state_as_of_the_turn_and_the_schema() {
    let (_dir, store, agent) = fresh_store();
    let session = planned_session(&store, 5);
    let id = session.id().clone();
    session.close().unwrap();

    let at_turn_2 = store.fork_session(&agent, &id, Some("2"), None).unwrap();
    let fork = store
        .open_session(&agent, &SessionId::new(&at_turn_2.id).unwrap())
        .unwrap();
    assert_eq!(
        files_reviewed(fork.working_memory()),
        ["src/module_0.rs", "src/module_1.rs"]
    );
    assert_eq!(
        fork.working_memory_schema().unwrap().unwrap().scope(),
        SchemaScope::Session
    );

    let whole = store.fork_session(&agent, &id, None, None).unwrap();
    let mut fork = store
        .open_session(&agent, &SessionId::new(&whole.id).unwrap())
        .unwrap();
    let original = store.read_session(&agent, &id).unwrap();
    assert_eq!(fork.working_memory(), original.working_memory());
    // The two share nothing afterwards.
    let version = fork.working_memory().version;
    fork.update_working_memory(patch(json!({"branch": "experiment"})), Some(version))
        .unwrap();
    assert!(store
        .read_session(&agent, &id)
        .unwrap()
        .working_memory()
        .document
        .get("branch")
        .is_none());
}

#[test]
fn compaction_keeps_the_state_in_the_context_the_snapshot_and_the_log() {
    let (_dir, store, agent) = fresh_store();
    let mut session = reviewed_session(&store, "s", 12);
    let state = session.working_memory().clone();
    let report = session.compact(&CompactOptions::default()).unwrap();
    assert!(report.applied, "{report:?}");

    assert_eq!(session.working_memory(), &state);
    assert_eq!(
        session.snapshot().unwrap().working_memory,
        Some(agentmem::base::state::StateMark::of(&state))
    );
    let archived = agentmem::files::jsonl::read_log(&session.paths().archive())
        .unwrap()
        .events;
    assert!(
        archived
            .iter()
            .any(|e| e.trace_type == TraceType::WorkingMemory),
        "history stays in the log"
    );
    assert_eq!(
        session.working_memory_history().unwrap().len() as u64,
        state.version
    );

    let prepared = session
        .prepare(&PrepareRequest::new("gpt-4.1", Target::OpenAiChat))
        .unwrap();
    let live = common::live_context(&prepared.payload);
    assert!(live.contains("# Working memory (version 13)"), "{live}");
    assert!(live.contains("src/module_11.rs") && live.contains("src/module_0.rs"));
    assert!(prepared.stats.sections.working_memory > 50);

    // Resumed after the compaction: the state the snapshot names, then the active log.
    let id = session.id().clone();
    session.close().unwrap();
    let mut resumed = store.open_session(&agent, &id).unwrap();
    assert_eq!(resumed.working_memory(), &state);
    std::fs::remove_file(resumed.paths().dir.join(STATE_FILE)).unwrap();
    assert_eq!(
        store.read_session(&agent, &id).unwrap().working_memory(),
        &state
    );
    resumed
        .update_working_memory(patch(json!({"phase": "fixing"})), Some(state.version))
        .unwrap();
    resumed.compact(&CompactOptions::default()).unwrap();
    let fork = store.fork_session(&agent, &id, None, None).unwrap();
    let fork = store
        .read_session(&agent, &SessionId::new(&fork.id).unwrap())
        .unwrap();
    assert_eq!(fork.working_memory(), resumed.working_memory());
}

#[test]
fn a_compacted_session_that_never_had_a_state_is_read_without_its_archive() {
    let (_dir, store, agent) = fresh_store();
    let mut session = store.create_session(&agent, None).unwrap();
    for turn in 0..12 {
        session
            .ingest(vec![
                Event::new(TraceType::User, format!("question {turn}")),
                Event::new(TraceType::Assistant, format!("answer {turn}")),
            ])
            .unwrap();
    }
    session.compact(&CompactOptions::default()).unwrap();
    let id = session.id().clone();
    let paths = session.paths().clone();
    session.close().unwrap();
    assert!(paths.archive().exists());
    assert!(!paths.dir.join(STATE_FILE).exists(), "no state, no file");

    // An archive that cannot be read: only a replay would reach for it.
    let archive = std::fs::read(paths.archive()).unwrap();
    std::fs::remove_file(paths.archive()).unwrap();
    std::fs::create_dir(paths.archive()).unwrap();
    let read = store.read_session(&agent, &id).unwrap();
    assert_eq!(read.working_memory(), &WorkingMemory::default());
    drop(read);
    std::fs::remove_dir(paths.archive()).unwrap();
    std::fs::write(paths.archive(), archive).unwrap();
    assert_eq!(
        store.open_session(&agent, &id).unwrap().working_memory(),
        &WorkingMemory::default()
    );
}

#[test]
fn replaying_the_log_rebuilds_the_same_state() {
    let (_dir, store, agent) = fresh_store();
    let mut session = reviewed_session(&store, "s", 8);
    session.compact(&CompactOptions::default()).unwrap();
    let state = session.working_memory().clone();
    let history = session.full_history().unwrap();

    let folded = replay(WorkingMemory::default(), &history, Keep::LastOnly);
    assert_eq!(folded.state, state);
    assert!(folded.skipped.is_empty());

    // The same events ingested into another session make the same state.
    let mut copy = store.create_session(&agent, None).unwrap();
    copy.ingest(history).unwrap();
    assert_eq!(copy.working_memory(), &state);
    let versions = copy.working_memory_history().unwrap();
    assert_eq!(versions.last().unwrap().document, state.document);

    // Re-deriving the context from the raw log keeps it too.
    session
        .compact_from_raw(&CompactOptions::default())
        .unwrap();
    assert_eq!(session.working_memory(), &state);
}

#[test]
fn an_update_without_a_version_is_numbered_by_the_session() {
    let (_dir, store, agent) = fresh_store();
    let mut session = store.create_session(&agent, None).unwrap();
    let line = r#"{"trace_type":"working_memory","working_memory":{"kind":"merge_patch","patch":{"flags":{"blocked":true}}}}"#;
    let event: Event = serde_json::from_str(line).unwrap();
    session.ingest(vec![Event::user("start"), event]).unwrap();
    let state = session.working_memory();
    assert_eq!(
        (state.version, &state.document),
        (1, &json!({"flags": {"blocked": true}}))
    );
    let stored = session
        .events()
        .last()
        .unwrap()
        .working_memory
        .clone()
        .unwrap();
    assert_eq!((stored.version, &stored.hash), (1, &state.hash));
    assert_eq!(session.events().last().unwrap().content, stored.describe());
    let mut smuggled = Event::user("not an update");
    smuggled.working_memory = Some(stored);
    assert!(matches!(
        session.ingest(vec![smuggled]),
        Err(Error::InvalidEvent { .. })
    ));
    let without_patch = Event::new(TraceType::WorkingMemory, "lost");
    assert!(matches!(
        session.ingest(vec![without_patch]),
        Err(Error::InvalidEvent { .. })
    ));
}

#[test]
fn every_prepared_context_shows_the_state_and_never_the_updates() {
    let (_dir, store, _agent) = fresh_store();
    let mut session = reviewed_session(&store, "s", 2);
    session.ingest(vec![Event::user("What is left?")]).unwrap();
    for target in [
        Target::OpenAiChat,
        Target::OpenAiResponses,
        Target::Anthropic,
        Target::Gemini,
    ] {
        let mut request = PrepareRequest::new("gpt-4.1", target);
        request.system = Some("You are a reviewer.".into());
        request.tools = tools::session_schemas();
        let prepared = session.prepare(&request).unwrap();
        let payload = prepared.payload.to_string();
        assert!(
            payload.contains("# Working memory (version 3)"),
            "{target:?}: {payload}"
        );
        assert!(payload.contains("src/module_1.rs"), "{target:?}");
        assert!(
            payload.contains("update_working_memory") && payload.contains("get_working_memory")
        );
        assert!(
            !payload.contains("JSON patch"),
            "{target:?}: an update event reached the model"
        );
        let sections = prepared.stats.sections;
        assert!(
            sections.working_memory > 0 && sections.system > 0,
            "{sections:?}"
        );
        assert_eq!(sections.total(), prepared.stats.counted_tokens);
    }
    // A session that never used working memory pays nothing for it.
    let mut empty = store.create_session(&Default::default(), None).unwrap();
    empty.ingest(vec![Event::user("hi")]).unwrap();
    let prepared = empty
        .prepare(&PrepareRequest::new("gpt-4.1", Target::OpenAiChat))
        .unwrap();
    assert_eq!(prepared.stats.sections.working_memory, 0);
    assert!(!prepared.payload.to_string().contains("Working memory"));
}

#[test]
fn updates_are_found_by_history_search() {
    let (_dir, store, agent) = fresh_store();
    let session = reviewed_session(&store, "s", 3);
    session.flush_index();
    let filter = SearchFilter {
        role: Some(SearchRole::State),
        ..SearchFilter::default()
    };
    let hits = store.search(&agent, "module_2", &filter).unwrap();
    assert!(
        hits.iter().all(|hit| hit.role == SearchRole::State),
        "{hits:?}"
    );
    assert!(
        hits[0].excerpt.contains("v4"),
        "the update that added it ranks first: {hits:?}"
    );
}

#[test]
fn the_tools_run_on_the_open_session() {
    let (_dir, store, agent) = fresh_store();
    let mut session = reviewed_session(&store, "s", 1);
    let mut call = |name: &str, arguments: Value| {
        tools::run_in_session(
            &store,
            &agent,
            tools::ToolsOn::StoreFiles,
            &mut session,
            name,
            &arguments,
        )
    };
    let read = call("get_working_memory", json!({})).unwrap();
    assert!(
        read.starts_with("version: 2") && read.contains("src/module_0.rs"),
        "{read}"
    );
    let update = json!({"patch": [{"op": "replace", "path": "/plan/0/status", "value": "done"}], "expected_version": 2});
    let answer = call("update_working_memory", update.clone()).unwrap();
    assert!(answer.contains("version 3"), "{answer}");
    let stale = call("update_working_memory", update).unwrap();
    assert!(
        stale.starts_with("error:") && stale.contains("found 3"),
        "{stale}"
    );
    let missing = call("update_working_memory", json!({"patch": {}})).unwrap();
    assert!(missing.contains("expected_version"), "{missing}");
    // The memory tools still run alongside.
    assert!(call("read_memory", json!({})).unwrap().contains("hash"));
    assert!(call("bash", json!({})).is_none());
}

#[test]
fn a_working_memory_tool_call_with_a_misspelt_argument_changes_nothing() {
    let (_dir, store, agent) = fresh_store();
    let mut session = store.create_session(&agent, None).unwrap();
    let misspelt = json!({"patch": {"plan": "ship"}, "expected_version": 0, "expected_versoin": 3});
    let answer =
        agentmem::tools::working::run(&mut session, "update_working_memory", &misspelt).unwrap();
    assert!(
        answer.starts_with("error: ") && answer.contains("expected_versoin"),
        "{answer}"
    );
    assert_eq!(session.working_memory().version, 0, "nothing was applied");
    let answer = agentmem::tools::working::run(
        &mut session,
        "get_working_memory",
        &json!({"verbose": true}),
    )
    .unwrap();
    assert!(answer.contains("unknown field `verbose`"), "{answer}");
}
