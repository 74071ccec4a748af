use super::*;

fn failed() -> Outcome {
    Outcome::Failed {
        message: "the model is down".into(),
    }
}

fn summarized() -> Outcome {
    Outcome::Summarized {
        summary: "Fixed the tests.".into(),
        facts: Vec::new(),
    }
}

#[test]
fn the_compactor_counts_summarizer_failures_in_a_row() {
    let mut compactor = Compactor::default();
    assert!(matches!(
        compactor.settle(failed()),
        Err(Error::Summarizer { failures: 1, .. })
    ));
    assert!(matches!(
        compactor.settle(failed()),
        Err(Error::Summarizer { failures: 2, .. })
    ));
    let fell_back = Outcome::FellBack {
        summary: "trimmed".into(),
        note: "the summarizer failed 3 times in a row".into(),
    };
    let settled = compactor.settle(fell_back).unwrap();
    assert_eq!(
        settled.fallback.as_deref(),
        Some("the summarizer failed 3 times in a row")
    );
    assert_eq!(compactor.consecutive_failures, 3);
    assert!(compactor.settle(summarized()).unwrap().fallback.is_none());
    assert_eq!(compactor.consecutive_failures, 0);
}

#[test]
fn a_new_summarizer_starts_with_no_failures() {
    let mut compactor = Compactor::default();
    let _ = compactor.settle(failed());
    compactor.set_summarizer(Arc::new(ExtractiveSummarizer::default()));
    assert_eq!(compactor.consecutive_failures, 0);
    assert!(compactor.summarizer_label().starts_with("extractive "));
}

#[test]
fn automatic_compaction_waits_for_the_context_to_grow_past_its_floor() {
    let mut compactor = Compactor::default();
    assert!(!compactor.waits_to_grow_from(0));
    compactor.blocked_below = Some(1_100);
    assert!(compactor.waits_to_grow_from(1_099));
    assert!(!compactor.waits_to_grow_from(1_100));
}

#[test]
fn a_split_keeps_its_tail_inside_the_active_log() {
    let events: Vec<Event> = ["e1", "e2", "e3", "e4"]
        .into_iter()
        .map(|id| Event::user(id).with_id(id))
        .collect();
    let split = |at: usize| Split {
        span: events[..at].to_vec(),
        tail: events[at..].to_vec(),
    };
    let ids = |events: &[Event]| events.iter().map(|e| e.id.clone()).collect::<Vec<_>>();
    let kept = keep_tail_in_active_log(split(3), 2);
    assert_eq!(
        (ids(&kept.span), ids(&kept.tail)),
        (ids(&events[..3]), ids(&events[3..]))
    );
    // The archive holds the first three: the span reaches the active log.
    let moved = keep_tail_in_active_log(split(1), 3);
    assert_eq!(
        (ids(&moved.span), ids(&moved.tail)),
        (ids(&events[..3]), ids(&events[3..]))
    );
}

#[test]
fn the_turns_of_a_span_are_listed_once_in_order() {
    let mut events = vec![Event::user("a"), Event::assistant("b"), Event::user("c")];
    for (event, turn) in events
        .iter_mut()
        .zip(["turn_0001", "turn_0001", "turn_0002"])
    {
        event.turn_id = turn.into();
    }
    assert_eq!(turn_ids_of(&events), ["turn_0001", "turn_0002"]);
}
