use super::*;
use crate::base::message::Role;

#[test]
fn the_view_shares_the_events_the_guard_leaves_as_they_are() {
    let events: Vec<Arc<Event>> = [
        Event::user("read it").with_id("e1"),
        Event::tool_call("c1", "read", serde_json::json!({})).with_id("e2"),
        Event::tool_result("c1", "a line of output\n".repeat(10_000)).with_id("e3"),
        Event::tool_call("c2", "read", serde_json::json!({})).with_id("e4"),
        Event::tool_result("c2", "short").with_id("e5"),
    ]
    .into_iter()
    .map(Arc::new)
    .collect();
    let mut view = Transcript::new(Encoding::O200kBase, GuardPolicy::default());
    view.extend_counting_later(&events);
    let shared: Vec<bool> = events
        .iter()
        .zip(view.items())
        .map(|(event, item)| Arc::ptr_eq(event, &item.event))
        .collect();
    assert_eq!(
        shared,
        [true, true, false, true, true],
        "only the cut output is a copy"
    );

    let mut item = view.items()[4].clone();
    item.replace_content("changed".into(), view.tokenizer());
    assert_eq!(
        events[4].content, "short",
        "a change to the view leaves the log's event"
    );
}

#[test]
fn a_rebuilt_view_reuses_what_was_seen_of_the_same_event_only() {
    let call = Event::tool_call("c1", "read", serde_json::json!({})).with_id("e1");
    let long = Event::tool_result("c1", "a line of output\n".repeat(10_000)).with_id("e2");
    let mut first = Transcript::new(Encoding::O200kBase, GuardPolicy::default());
    first.extend(&[call.clone(), long.clone()]);
    let cut = first.items()[1].clone();
    assert!(
        cut.event.content.len() < long.content.len(),
        "the guard cuts it"
    );

    let (call, long) = (Arc::new(call), Arc::new(long));
    let mut second = Transcript::new(Encoding::O200kBase, GuardPolicy::default());
    second.remember_from(&first, &[Arc::clone(&call), Arc::clone(&long)]);
    second.extend(&[Arc::clone(&call), long]);
    assert_eq!(second.items()[1], cut);

    let other = Arc::new(Event::tool_result("c1", "short").with_id("e2"));
    let mut third = Transcript::new(Encoding::O200kBase, GuardPolicy::default());
    third.remember_from(&second, &[Arc::clone(&call), Arc::clone(&other)]);
    third.extend(&[call, other]);
    assert_eq!(third.items()[1].event.content, "short");
    assert!(third.items()[1].tokens.total < cut.tokens.total);
}

#[test]
fn a_summary_that_replaced_history_starts_the_view_over() {
    let before = [
        Event::user("fix the parser").with_id("e1"),
        Event::assistant("reading src/parser.rs ".repeat(50)).with_id("e2"),
    ];
    let summary = Event::new(TraceType::Summary, "The parser was fixed.")
        .with_tag(crate::base::event::REPLACES_HISTORY_TAG)
        .with_id("e3");
    let after = Event::user("now the lexer").with_id("e4");
    let mut transcript = Transcript::new(Encoding::O200kBase, GuardPolicy::default());
    transcript.extend(&before);
    transcript.extend(&[summary.clone(), after.clone()]);
    let ids: Vec<&str> = transcript
        .items()
        .iter()
        .map(|i| i.event.id.as_str())
        .collect();
    assert_eq!(ids, ["e3", "e4"]);
    let alone = Transcript::from_events(Encoding::O200kBase, &[summary, after]);
    assert_eq!(transcript.totals(), alone.totals());
    assert_eq!(transcript.unshrunk_total(), alone.unshrunk_total());

    let plain = Event::new(TraceType::Summary, "A note.").with_id("e5");
    transcript.extend(&[plain]);
    assert_eq!(transcript.len(), 3, "an untagged summary replaces nothing");
}

#[test]
fn events_counted_later_are_bounded_until_a_check_needs_their_counts() {
    let events = [
        Event::user("Run the tests and tell me what fails.").with_id("e1"),
        Event::tool_call("c1", "bash", serde_json::json!({"cmd": "cargo test"})).with_id("e2"),
        Event::tool_result("c1", "test parser::tokens ... FAILED\n".repeat(40)).with_id("e3"),
        Event::assistant("The parser's token test fails on every run.").with_id("e4"),
    ];
    let counted = Transcript::from_events(Encoding::O200kBase, &events);
    let mut later = Transcript::new(Encoding::O200kBase, GuardPolicy::default());
    later.extend_counting_later(&events);
    assert!(later.estimated_tokens() > 0);
    let bytes: u64 = events.iter().map(|e| e.content.len() as u64).sum();
    assert!(
        later.is_below(bytes * 2, Bound::Certain),
        "the bounds prove it"
    );
    assert!(later.estimated_tokens() > 0, "so nothing was counted");

    let exact = counted.totals().total;
    assert!(
        !later.is_below(exact, Bound::Certain),
        "the bounds cannot tell: it counts"
    );
    assert_eq!(later.estimated_tokens(), 0);
    assert_eq!(later.totals(), counted.totals());
    assert_eq!(later.unshrunk_total(), counted.unshrunk_total());
    assert_eq!(later.items(), counted.items());
    assert!(later.is_below(exact + 1, Bound::Certain));
}

#[test]
fn a_calibrated_check_skips_counting_text_as_dense_as_what_was_counted() {
    let prose = |text: &str, id| Event::user(text.repeat(20)).with_id(id);
    let first = prose(
        "The parser reads one line at a time and keeps its tokens. ",
        "e1",
    );
    let second = prose(
        "The lexer now keeps its position across lines and columns. ",
        "e2",
    );
    let (exact, mut later) = counted_then_later(first, second);
    let limit = exact + 100;

    let mut certain = later.clone();
    assert!(certain.is_below(limit, Bound::Certain));
    assert_eq!(
        certain.estimated_tokens(),
        0,
        "bytes could not show it: it counted"
    );
    assert!(later.is_below(limit, Bound::Calibrated));
    assert!(
        later.estimated_tokens() > 0,
        "the calibrated bound showed it"
    );
}

/// The exact total of `counted` then `waiting`, and a transcript that
/// counted the first and holds the second to be counted later.
fn counted_then_later(counted: Event, waiting: Event) -> (u64, Transcript) {
    let exact = Transcript::from_events(Encoding::O200kBase, &[counted.clone(), waiting.clone()])
        .totals()
        .total;
    let mut later = Transcript::new(Encoding::O200kBase, GuardPolicy::default());
    later.extend(&[counted]);
    later.extend_counting_later(&[waiting]);
    (exact, later)
}

#[test]
fn text_denser_than_any_counted_can_pass_a_calibrated_check_never_a_certain_one() {
    let prose =
        Event::user("The parser reads one line at a time and keeps its tokens. ".repeat(20))
            .with_id("e1");
    let dense = Event::user("x7Qz9Lk2Vb8Np3Rw".repeat(40)).with_id("e2");
    let (exact, mut later) = counted_then_later(prose, dense);

    assert!(!later.clone().is_below(exact, Bound::Certain));
    assert!(
        later.is_below(exact, Bound::Calibrated),
        "the documented miss: a trigger may be passed until the next count"
    );
}

#[test]
fn a_usage_report_counts_what_came_before_it() {
    let mut reply = Event::assistant("Done: the parser test passes now.").with_id("e2");
    reply.usage = Some(crate::base::event::Usage {
        prompt_tokens: 900,
        ..Default::default()
    });
    let events = [
        Event::user("Fix the parser test. ".repeat(20)).with_id("e1"),
        reply,
    ];
    let mut later = Transcript::new(Encoding::O200kBase, GuardPolicy::default());
    later.extend_counting_later(&events);
    let counted = Transcript::from_events(Encoding::O200kBase, &events);
    assert_eq!(later.estimated_tokens(), 0);
    assert_eq!(later.anchor(), counted.anchor());
    assert_eq!(later.totals(), counted.totals());
}

#[test]
fn role_token_constants_match_the_tokenizers() {
    for encoding in Encoding::ALL {
        for role in [Role::System, Role::User, Role::Assistant, Role::Tool] {
            let counted = encoding.tokenizer().count(role_name(role)) as u64;
            assert_eq!(
                role_tokens(role, encoding),
                counted,
                "{role:?} in {encoding}"
            );
        }
    }
}
