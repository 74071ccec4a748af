use super::*;
use serde_json::json;

fn user(id: &str) -> Event {
    Event::user(format!("user {id}")).with_id(id)
}

fn text(id: &str) -> Event {
    Event::assistant(format!("assistant {id}")).with_id(id)
}

fn call(id: &str, call_id: &str) -> Event {
    let mut call = Event::tool_call(call_id, "bash", json!({"cmd": "ls"})).with_id(id);
    call.turn_id = "turn_0007".into();
    call.ts = 12.5;
    call.seq = 3;
    call
}

fn result(id: &str, call_id: &str) -> Event {
    Event::tool_result(call_id, format!("output {id}")).with_id(id)
}

fn sidechain(event: Event) -> Event {
    event.with_tag(crate::base::event::SIDECHAIN_TAG)
}

fn ids(events: &[Event]) -> Vec<&str> {
    events.iter().map(|e| e.id.as_str()).collect()
}

fn strings(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|s| s.to_string()).collect()
}

#[test]
fn intact_pairs_are_left_alone_by_every_pass() {
    let original = vec![
        user("u1"),
        text("a1"),
        call("e1", "c1"),
        call("e2", "c2"),
        result("r2", "c2"),
        result("r1", "c1"),
        text("a2"),
    ];
    assert!(pairs_are_intact(&original));
    for pass in PAIR_INTEGRITY_PASSES {
        let mut events = original.clone();
        let report = pass(&mut events);
        assert!(!report.changed(), "{report:?}");
        assert_eq!(events, original);
    }
    let mut events = original.clone();
    assert!(normalize_pairs(&mut events).is_empty());
}

#[test]
fn a_missing_result_is_made_aborted_after_the_results_already_there() {
    let mut events = vec![
        user("u1"),
        text("a1"),
        call("e1", "c1"),
        call("e2", "c2"),
        call("e3", "c3"),
        result("r2", "c2"),
        user("u2"),
    ];
    let report = ensure_call_results_present(&mut events);
    assert_eq!(
        ids(&events),
        [
            "u1",
            "a1",
            "e1",
            "e2",
            "e3",
            "r2",
            "synthetic-aborted-c1",
            "synthetic-aborted-c3",
            "u2"
        ]
    );
    assert_eq!(
        report.added,
        strings(&["synthetic-aborted-c1", "synthetic-aborted-c3"])
    );
    let synthetic = &events[6];
    assert_eq!(synthetic.trace_type, TraceType::ToolResult);
    assert_eq!(synthetic.tool_call_id.as_deref(), Some("c1"));
    assert_eq!(synthetic.tool_name.as_deref(), Some("bash"));
    assert_eq!(synthetic.tool_error.as_deref(), Some("aborted"));
    assert_eq!(synthetic.content, ABORTED_CONTENT);
    assert_eq!(synthetic.tags, ["synthetic"]);
    assert_eq!(synthetic.source_event, "engine:normalize");
    assert_eq!(synthetic.turn_id, "turn_0007");
    assert_eq!((synthetic.ts, synthetic.seq), (12.5, 3));
    assert!(pairs_are_intact(&events));
    assert!(!ensure_call_results_present(&mut events).changed());
}

#[test]
fn a_call_at_the_very_end_is_answered_at_the_end() {
    let mut events = vec![user("u1"), call("e1", "c1"), text("a1")];
    ensure_call_results_present(&mut events);
    assert_eq!(ids(&events), ["u1", "e1", "a1", "synthetic-aborted-c1"]);
    assert!(pairs_are_intact(&events));
}

#[test]
fn a_result_without_a_call_is_removed() {
    let mut events = vec![
        user("u1"),
        result("r0", "gone"),
        call("e1", "c1"),
        result("r1", "c1"),
    ];
    let report = remove_orphan_results(&mut events);
    assert_eq!(report.removed, strings(&["r0"]));
    assert_eq!(ids(&events), ["u1", "e1", "r1"]);
    assert!(!remove_orphan_results(&mut events).changed());
}

#[test]
fn a_result_before_its_call_is_an_orphan_there() {
    let mut events = vec![
        user("u1"),
        result("early", "c1"),
        call("e1", "c1"),
        user("u2"),
    ];
    let reports = normalize_pairs(&mut events);
    let passes: Vec<&str> = reports.iter().map(|r| r.pass).collect();
    assert_eq!(
        passes,
        ["remove_orphan_results", "ensure_call_results_present"]
    );
    assert_eq!(ids(&events), ["u1", "e1", "synthetic-aborted-c1", "u2"]);
}

#[test]
fn a_second_result_of_one_call_is_removed_and_the_first_kept() {
    let mut events = vec![
        call("e1", "c1"),
        result("r1", "c1"),
        result("r1-again", "c1"),
        user("u1"),
        result("r1-late", "c1"),
    ];
    let report = remove_orphan_results(&mut events);
    assert_eq!(report.removed, strings(&["r1-again", "r1-late"]));
    assert_eq!(ids(&events), ["e1", "r1", "u1"]);
}

#[test]
fn a_call_id_reused_after_its_result_names_a_new_call() {
    let mut events = vec![
        user("u1"),
        call("e1", "c1"),
        result("r1", "c1"),
        user("u2"),
        text("a2"),
        call("e2", "c1"),
        result("r2", "c1"),
        user("u3"),
    ];
    let report = resolve_duplicate_call_ids(&mut events);
    assert_eq!(report.renamed, strings(&["e2", "r2"]));
    assert!(report.removed.is_empty());
    assert_eq!(
        ids(&events),
        ["u1", "e1", "r1", "u2", "a2", "e2", "r2", "u3"]
    );
    let call_ids: Vec<&str> = events
        .iter()
        .filter_map(|e| e.tool_call_id.as_deref())
        .collect();
    assert_eq!(call_ids, ["c1", "c1", "c1-2", "c1-2"]);
    assert!(pairs_are_intact(&events));
    assert!(!resolve_duplicate_call_ids(&mut events).changed());
}

#[test]
fn a_copy_of_a_waiting_call_goes_with_the_later_results_of_its_id() {
    let mut events = vec![
        user("u1"),
        call("e1", "c1"),
        call("e2", "c1"),
        result("r1", "c1"),
        result("r2", "c1"),
        user("u2"),
    ];
    let report = resolve_duplicate_call_ids(&mut events);
    assert_eq!(report.removed, strings(&["e2", "r2"]));
    assert!(report.renamed.is_empty());
    assert_eq!(ids(&events), ["u1", "e1", "r1", "u2"]);
    assert!(pairs_are_intact(&events));
}

#[test]
fn a_reused_call_id_whose_only_result_is_late_keeps_it_for_the_first_call() {
    let mut events = vec![
        call("e1", "c1"),
        user("u1"),
        call("e2", "c1"),
        result("r", "c1"),
        user("u2"),
    ];
    let reports = normalize_pairs(&mut events);
    assert_eq!(reports[0].pass, "resolve_duplicate_call_ids");
    assert_eq!(reports[0].removed, strings(&["e2"]));
    assert_eq!(reports[1].pass, "move_results_after_their_calls");
    assert_eq!(reports[1].moved, strings(&["r"]));
    assert_eq!(ids(&events), ["e1", "r", "u1", "u2"]);
}

#[test]
fn a_result_after_the_next_user_message_is_moved_back() {
    let mut events = vec![
        user("u1"),
        text("a1"),
        call("e1", "c1"),
        user("u2"),
        result("r1", "c1"),
        text("a2"),
    ];
    let report = move_results_after_their_calls(&mut events);
    assert_eq!(report.moved, strings(&["r1"]));
    assert_eq!(ids(&events), ["u1", "a1", "e1", "r1", "u2", "a2"]);
    assert!(pairs_are_intact(&events));
    assert!(!move_results_after_their_calls(&mut events).changed());
}

#[test]
fn a_result_after_the_next_response_is_moved_behind_the_results_already_there() {
    let mut events = vec![
        call("e1", "c1"),
        call("e2", "c2"),
        result("r2", "c2"),
        text("a2"),
        call("e3", "c3"),
        result("r1", "c1"),
        result("r3", "c3"),
    ];
    let report = move_results_after_their_calls(&mut events);
    assert_eq!(report.moved, strings(&["r1"]));
    assert_eq!(ids(&events), ["e1", "e2", "r2", "r1", "a2", "e3", "r3"]);
    assert!(pairs_are_intact(&events));
}

#[test]
fn parallel_results_keep_their_order_and_only_become_adjacent() {
    let mut events = vec![
        user("u1"),
        call("e1", "c1"),
        call("e2", "c2"),
        call("e3", "c3"),
        result("r3", "c3"),
        user("u2"),
        result("r1", "c1"),
        text("a2"),
        result("r2", "c2"),
    ];
    let reports = normalize_pairs(&mut events);
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!(reports[0].moved, strings(&["r1", "r2"]));
    assert_eq!(
        ids(&events),
        ["u1", "e1", "e2", "e3", "r3", "r1", "r2", "u2", "a2"]
    );
    assert!(pairs_are_intact(&events));
}

#[test]
fn sidechain_events_stay_where_they_are_and_do_not_count() {
    let mut events = vec![
        user("u1"),
        call("e1", "task"),
        sidechain(user("s1")),
        sidechain(call("s2", "inner")),
        sidechain(result("s3", "inner")),
        sidechain(result("s4", "nobody")),
        result("r1", "task"),
        call("e2", "c2"),
        sidechain(text("s5")),
    ];
    assert!(!pairs_are_intact(&events));
    let reports = normalize_pairs(&mut events);
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!(
        ids(&events),
        [
            "u1",
            "e1",
            "s1",
            "s2",
            "s3",
            "s4",
            "r1",
            "e2",
            "synthetic-aborted-c2",
            "s5"
        ]
    );
    assert!(pairs_are_intact(&events));
}

#[test]
fn normalize_reports_only_passes_that_changed_something_and_is_idempotent() {
    let mut events = vec![
        result("orphan", "x"),
        user("u1"),
        call("e1", "c1"),
        call("e2", "c2"),
        user("u2"),
        result("r2", "c2"),
        call("e3", "c2"),
        result("r2b", "c2"),
    ];
    let reports = normalize_pairs(&mut events);
    let passes: Vec<&str> = reports.iter().map(|r| r.pass).collect();
    assert_eq!(
        passes,
        [
            "resolve_duplicate_call_ids",
            "remove_orphan_results",
            "move_results_after_their_calls",
            "ensure_call_results_present"
        ]
    );
    assert_eq!(reports[0].renamed, strings(&["e3", "r2b"]));
    assert_eq!(
        ids(&events),
        [
            "u1",
            "e1",
            "e2",
            "r2",
            "synthetic-aborted-c1",
            "u2",
            "e3",
            "r2b"
        ]
    );
    let once = events.clone();
    assert!(normalize_pairs(&mut events).is_empty());
    assert_eq!(events, once);
}

#[test]
fn remove_pairs_takes_calls_and_results_together() {
    let mut events = vec![
        user("u1"),
        call("e1", "c1"),
        call("e2", "c2"),
        result("r1", "c1"),
        result("r2", "c2"),
        sidechain(result("s1", "c1")),
    ];
    let report = remove_pairs(&mut events, &HashSet::from(["c1".to_owned()]));
    assert_eq!(report.pass, "remove_pairs");
    assert_eq!(report.removed, strings(&["e1", "r1"]));
    assert_eq!(ids(&events), ["u1", "e2", "r2", "s1"]);
    assert!(pairs_are_intact(&events));
    assert!(!remove_pairs(&mut events, &HashSet::new()).changed());
}

#[test]
fn intactness_checks_each_rule() {
    // Unanswered at the end.
    assert!(!pairs_are_intact(&[call("e1", "c1")]));
    // A result separated by a user message.
    assert!(!pairs_are_intact(&[
        call("e1", "c1"),
        user("u"),
        result("r1", "c1")
    ]));
    // A result of an earlier response after the next one.
    assert!(!pairs_are_intact(&[
        call("e1", "c1"),
        result("r0", "c0"),
        text("a"),
        result("r1", "c1"),
    ]));
    // Two results, a reused id, a result before its call.
    assert!(!pairs_are_intact(&[
        call("e1", "c1"),
        result("r1", "c1"),
        result("r1", "c1")
    ]));
    assert!(!pairs_are_intact(&[
        call("e1", "c1"),
        result("r1", "c1"),
        call("e2", "c1"),
        result("r2", "c1"),
    ]));
    assert!(!pairs_are_intact(&[
        result("r1", "c1"),
        call("e1", "c1"),
        result("r2", "c1")
    ]));
    // Sidechain events between a call and its result do not matter.
    assert!(pairs_are_intact(&[
        call("e1", "c1"),
        sidechain(user("s")),
        result("r1", "c1")
    ]));
    assert!(pairs_are_intact(&[]));
}
