//! Sessions end to end on real files: ingest, reopen, fork, delete, locking.

use agentmem::{AgentId, Durability, Error, Event, SessionId, Store, ToolStatus, TraceType};
use serde_json::json;

fn store(dir: &tempfile::TempDir) -> Store {
    Store::open(dir.path(), Durability::Batch).unwrap()
}

fn agent() -> AgentId {
    AgentId::default()
}

fn three_turns() -> Vec<Event> {
    vec![
        Event::system("you are a coding agent"),
        Event::user("run the tests"),
        Event::tool_call("c1", "bash", json!({"cmd": "cargo test"})),
        Event::user("and tell me when done"),
        Event::tool_result("c1", "test result: ok"),
        Event::assistant("all green"),
        Event::user("now lint"),
        Event::tool_call("c2", "bash", json!({"cmd": "cargo clippy"})),
        Event::tool_error("c2", "error: unused variable"),
    ]
}

#[test]
fn events_survive_a_reopen_with_their_assigned_fields() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let mut session = store.create_session(&agent(), None).unwrap();
    let id = session.id().clone();
    session.ingest(three_turns()).unwrap();
    let written = session.events().to_vec();
    session.close().unwrap();

    let reopened = store.open_session(&agent(), &id).unwrap();
    assert_eq!(reopened.events(), &written[..]);
    let turns: Vec<_> = written
        .iter()
        .map(|e| (e.turn_id.as_str(), e.seq))
        .collect();
    assert_eq!(
        turns,
        [
            ("turn_0000", 1),
            ("turn_0001", 1),
            ("turn_0001", 2),
            ("turn_0002", 1),
            ("turn_0001", 3),
            ("turn_0002", 2),
            ("turn_0003", 1),
            ("turn_0003", 2),
            ("turn_0003", 3),
        ]
    );
    let tools = reopened.tool_interactions();
    assert_eq!(tools.len(), 2);
    assert_eq!(
        (tools[0].turn_id.as_str(), tools[0].status),
        ("turn_0001", ToolStatus::Success)
    );
    assert_eq!(tools[1].status, ToolStatus::Error);
    let meta = store.session_meta(&agent(), &id).unwrap();
    assert_eq!((meta.turns, meta.events), (3, 9));
    assert_eq!(meta.title.as_deref(), Some("run the tests"));
}

#[test]
fn turn_tracking_continues_after_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let mut session = store.create_session(&agent(), None).unwrap();
    let id = session.id().clone();
    session
        .ingest(vec![
            Event::user("a"),
            Event::tool_call("c9", "ls", json!({})),
        ])
        .unwrap();
    drop(session);
    let mut session = store.open_session(&agent(), &id).unwrap();
    session
        .ingest(vec![Event::user("b"), Event::tool_result("c9", "x")])
        .unwrap();
    let last = &session.events()[3];
    assert_eq!((last.turn_id.as_str(), last.seq), ("turn_0001", 3));
}

#[test]
fn an_invalid_event_rejects_the_whole_batch() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = store(&dir).create_session(&agent(), None).unwrap();
    let orphan = Event::new(TraceType::ToolResult, "no call id");
    let err = session
        .ingest(vec![Event::user("fine"), orphan])
        .unwrap_err();
    assert!(matches!(err, Error::InvalidEvent { index: 1, .. }), "{err}");
    assert!(session.events().is_empty());
    let log = std::fs::read_to_string(session.paths().raw_traces()).unwrap();
    assert!(log.is_empty());
}

#[test]
fn a_second_writer_is_refused_and_readers_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let mut writer = store.create_session(&agent(), None).unwrap();
    let id = writer.id().clone();
    writer.ingest(vec![Event::user("hello")]).unwrap();
    let err = store.open_session(&agent(), &id).unwrap_err();
    assert!(matches!(err, Error::SessionLocked { .. }), "{err}");
    assert!(err
        .to_string()
        .contains(&format!("locked by pid {}", std::process::id())));
    let reader = store.read_session(&agent(), &id).unwrap();
    assert_eq!(reader.events().len(), 1);
    assert!(matches!(
        store.delete_session(&agent(), &id),
        Err(Error::SessionLocked { .. })
    ));
}

#[test]
fn a_fork_shares_nothing_with_its_origin() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let mut origin = store.create_session(&agent(), None).unwrap();
    let origin_id = origin.id().clone();
    origin.ingest(three_turns()).unwrap();

    let meta = store
        .fork_session(&agent(), &origin_id, Some("1"), None)
        .unwrap();
    assert_eq!(meta.forked_from.as_deref(), Some(origin_id.as_str()));
    assert_eq!(meta.forked_at_turn.as_deref(), Some("turn_0001"));
    let fork_id = SessionId::new(&meta.id).unwrap();
    let mut fork = store.open_session(&agent(), &fork_id).unwrap();
    // Turn 1 includes the tool result that arrived after turn 2 began.
    let kept: Vec<_> = fork.events().iter().map(|e| e.content.as_str()).collect();
    assert_eq!(
        kept,
        [
            "you are a coding agent",
            "run the tests",
            "",
            "test result: ok"
        ]
    );

    fork.ingest(vec![Event::user("fork only")]).unwrap();
    origin.ingest(vec![Event::user("origin only")]).unwrap();
    assert_eq!(fork.events().last().unwrap().turn_id, "turn_0002");
    assert_eq!(origin.events().last().unwrap().turn_id, "turn_0004");
    drop((fork, origin));
    let fork = store.read_session(&agent(), &fork_id).unwrap();
    let origin = store.read_session(&agent(), &origin_id).unwrap();
    assert_eq!(fork.events().len(), 5);
    assert_eq!(origin.events().len(), 10);
    assert!(!origin.events().iter().any(|e| e.content == "fork only"));
}

#[test]
fn forking_at_a_missing_turn_names_the_turns_there_are() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let mut origin = store.create_session(&agent(), None).unwrap();
    origin.ingest(three_turns()).unwrap();
    let err = store
        .fork_session(&agent(), origin.id(), Some("turn_0009"), None)
        .unwrap_err();
    assert!(err.to_string().contains("turn_0003"), "{err}");
    assert_eq!(store.list_sessions(&agent()).unwrap().len(), 1);
}

#[test]
fn list_and_delete() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let a = store
        .create_session(&agent(), Some(SessionId::new("a").unwrap()))
        .unwrap();
    drop(a);
    let mut b = store
        .create_session(&agent(), Some(SessionId::new("b").unwrap()))
        .unwrap();
    b.ingest(vec![Event::user("second session")]).unwrap();
    drop(b);
    let ids: Vec<_> = store
        .list_sessions(&agent())
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(ids, ["b", "a"]);
    store
        .delete_session(&agent(), &SessionId::new("a").unwrap())
        .unwrap();
    assert_eq!(store.list_sessions(&agent()).unwrap().len(), 1);
    let again = store.create_session(&agent(), Some(SessionId::new("b").unwrap()));
    assert!(matches!(again, Err(Error::SessionExists { .. })));
}

#[test]
fn a_stale_meta_is_rederived_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let mut session = store.create_session(&agent(), None).unwrap();
    let id = session.id().clone();
    session.ingest(vec![Event::user("one")]).unwrap();
    // Simulate a crash: the process dies without refreshing meta.json.
    std::mem::forget(session);
    let meta = store.session_meta(&agent(), &id).unwrap();
    assert_eq!(meta.events, 1);
}

#[test]
fn a_store_configured_for_another_backend_keeps_nothing_in_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = agentmem::Config::default();
    config.storage.backend = agentmem::Backend::Postgres;
    let store = Store::with_config(dir.path(), config);
    let agent = agentmem::AgentId::default();
    let id = agentmem::SessionId::new("s").unwrap();
    let refused = |result: agentmem::Result<()>| {
        let error = result.unwrap_err();
        assert!(
            matches!(
                error,
                Error::NotOnBackend {
                    backend: "postgres",
                    ..
                }
            ),
            "{error}"
        );
    };
    refused(store.create_session(&agent, Some(id.clone())).map(drop));
    refused(store.open_or_create(&agent, &id).map(drop));
    refused(store.read_session(&agent, &id).map(drop));
    refused(store.list_sessions(&agent).map(drop));
    refused(store.delete_session(&agent, &id));
    assert!(!dir.path().join("agents").exists());
}
