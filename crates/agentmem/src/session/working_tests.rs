use serde_json::json;

use super::*;

/// A fresh session folder, its agent folder beside it, and the working
/// memory of a writer that opened it.
fn opened() -> (tempfile::TempDir, SessionWorkingMemory) {
    let root = tempfile::tempdir().unwrap();
    let paths = SessionPaths {
        dir: root.path().join("s1"),
    };
    std::fs::create_dir_all(&paths.dir).unwrap();
    let (working, recoveries) =
        SessionWorkingMemory::load(&paths, root.path().join("agent"), None, &[], true).unwrap();
    assert!(recoveries.is_empty());
    (root, working)
}

fn patch(json: Value) -> StatePatch {
    StatePatch::from_json(json).unwrap()
}

fn update_event(patch: StatePatch) -> Event {
    Event::working_memory(StateUpdate {
        patch,
        version: 0,
        hash: String::new(),
    })
}

#[test]
fn an_update_is_numbered_against_the_version_it_expects() {
    let (_root, working) = opened();
    assert!(working.state().is_empty());
    let update = working
        .update_for(patch(json!({"plan": ["read"]})), Some(0))
        .unwrap();
    assert_eq!(update.version, 1);
    assert!(!update.hash.is_empty());
    let stale = working.update_for(patch(json!({"plan": []})), Some(3));
    assert!(matches!(
        stale,
        Err(Error::WorkingMemoryConflict {
            expected: 3,
            actual: 0
        })
    ));
}

#[test]
fn staging_numbers_a_batchs_updates_in_order_and_names_a_bad_ones_place() {
    let (_root, working) = opened();
    let mut fresh = vec![
        Event::user("start"),
        update_event(patch(json!({"files": ["a.rs"]}))),
        update_event(patch(
            json!([{"op": "add", "path": "/files/-", "value": "b.rs"}]),
        )),
    ];
    let state = working.stage(&mut fresh, &[0, 1, 2]).unwrap().unwrap();
    assert_eq!(state.version, 2);
    assert_eq!(state.document, json!({"files": ["a.rs", "b.rs"]}));
    let versions: Vec<u64> = fresh
        .iter()
        .filter_map(|e| e.state_update().map(|u| u.version))
        .collect();
    assert_eq!(versions, [1, 2]);
    assert!(
        !fresh[1].content.is_empty(),
        "an update gets words for search"
    );
    assert_eq!(working.state().version, 0, "staging changes nothing");

    let mut bad = vec![
        update_event(patch(json!({"files": []}))),
        update_event(patch(json!([{"op": "remove", "path": "/missing"}]))),
    ];
    let refused = working.stage(&mut bad, &[4, 7]).unwrap_err();
    assert!(matches!(refused, Error::InvalidEvent { index: 7, .. }));
    assert_eq!(working.stage(&mut [Event::user("hi")], &[0]).unwrap(), None);
}

#[test]
fn a_settled_state_is_current_and_materialized() {
    let (root, mut working) = opened();
    let mut fresh = vec![update_event(patch(json!({"step": 1})))];
    let state = working.stage(&mut fresh, &[0]).unwrap().unwrap();
    working.settle(state.clone()).unwrap();
    assert_eq!(working.state(), &state);
    assert_eq!(working.mark(), StateMark::of(&state));
    assert_eq!(cache::read(&root.path().join("s1")), Some(state));
}

#[test]
fn the_section_is_rendered_again_only_for_a_new_version_or_encoding() {
    let (_root, mut working) = opened();
    let tokenizer = Encoding::default().tokenizer();
    assert_eq!(working.section(tokenizer), None);
    let mut fresh = vec![update_event(patch(json!({"task": "ship it"})))];
    let state = working.stage(&mut fresh, &[0]).unwrap().unwrap();
    working.settle(state).unwrap();
    let (text, tokens) = working.section(tokenizer).unwrap();
    assert!(text.contains("ship it") && tokens > 0);
    working.section.as_mut().unwrap().text = Some("as rendered before".into());
    assert_eq!(
        working.section(tokenizer).map(|(text, _)| text).as_deref(),
        Some("as rendered before")
    );
    let other = Encoding::Cl100kBase.tokenizer();
    assert_eq!(working.section(other).map(|(text, _)| text), Some(text));
}

#[test]
fn a_schema_the_current_state_breaks_is_refused() {
    let (_root, mut working) = opened();
    let typed = json!({"type": "object", "properties": {"step": {"type": "integer"}}});
    working
        .set_schema(SchemaScope::Session, Some(typed))
        .unwrap();
    assert!(working.schema().unwrap().is_some());
    let mut fresh = vec![update_event(patch(json!({"step": 1})))];
    let state = working.stage(&mut fresh, &[0]).unwrap().unwrap();
    working.settle(state).unwrap();
    let stringly = json!({"type": "object", "properties": {"step": {"type": "string"}}});
    let refused = working.set_schema(SchemaScope::Session, Some(stringly));
    assert!(matches!(refused, Err(Error::WorkingMemorySchema { .. })));
    working.set_schema(SchemaScope::Session, None).unwrap();
    assert!(working.schema().unwrap().is_none());
}
