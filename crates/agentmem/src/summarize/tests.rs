use super::*;
use crate::tokens::Encoding;

fn tok() -> Tokenizer {
    Encoding::O200kBase.tokenizer()
}

#[test]
fn render_is_stable_and_never_contains_the_prefix() {
    let mut s = Summary::empty();
    s.section_mut(GOAL)
        .unwrap()
        .push(format!("{SUMMARY_PREFIX} fix\nthe   bug"));
    let text = s.render();
    assert!(
        text.starts_with("## Goal\n- fix the bug\n\n## Constraints and preferences\n- (none)\n")
    );
    assert!(!text.contains(SUMMARY_PREFIX));
    assert_eq!(text, s.clone().render());
    for title in SECTION_TITLES {
        assert!(text.contains(&format!("## {title}\n")));
    }
}

#[test]
fn parse_rendered_round_trips_and_keeps_unknown_sections_as_critical_context() {
    let mut s = Summary::empty();
    s.section_mut(ERRORS)
        .unwrap()
        .push("E0425 at src/lib.rs:3".into());
    s.section_mut(NEXT_STEPS).unwrap().push("rerun".into());
    let text = format!(
        "{SUMMARY_PREFIX}\n{}\n## Lookup hints\n- `src/x.rs` — search events ev_1",
        s.render()
    );
    let back = Summary::parse_rendered(&text).unwrap();
    assert_eq!(back.section(ERRORS).unwrap(), ["E0425 at src/lib.rs:3"]);
    assert_eq!(
        back.section(CRITICAL).unwrap(),
        ["`src/x.rs` — search events ev_1"]
    );
    // An earlier focus and the hints' introduction are not carried over.
    let text = format!(
        "{FOCUS_PREFIX} old focus\n\n{}\n## Lookup hints\nThese identifiers are gone.\n- `a.rs` — search events e1",
        s.render().replace("## Goal\n- (none)", "## Goal\n- Focus of this summary: old focus\n- Fix it")
    );
    let back = Summary::parse_rendered(&text).unwrap();
    assert_eq!(back.section(GOAL).unwrap(), ["Fix it"]);
    assert_eq!(
        back.section(CRITICAL).unwrap(),
        ["`a.rs` — search events e1"]
    );
}

#[test]
fn merge_keeps_only_the_latest_in_progress_and_interleaves() {
    let mut a = Summary::empty();
    a.section_mut(PROGRESS).unwrap().extend([
        "In progress: reading the parser".to_string(),
        "Done: found the bug".to_string(),
    ]);
    a.section_mut(COMMANDS)
        .unwrap()
        .extend(["`a1`".to_string(), "`a2`".to_string()]);
    let mut b = Summary::empty();
    b.section_mut(PROGRESS).unwrap().extend([
        "In progress: running tests".to_string(),
        "Done: fixed the bug".to_string(),
    ]);
    b.section_mut(COMMANDS)
        .unwrap()
        .extend(["`b1`".to_string(), "`b2`".to_string()]);
    let m = Summary::merge(&[a, b]);
    assert_eq!(
        m.section(PROGRESS).unwrap(),
        [
            "In progress: running tests",
            "Done: found the bug",
            "Done: fixed the bug"
        ]
    );
    assert_eq!(
        m.section(COMMANDS).unwrap(),
        ["`b1`", "`a1`", "`b2`", "`a2`"]
    );
    assert_eq!(m.sections.len(), 9);
}

#[test]
fn merge_unites_facts_by_text() {
    let fact = |text: &str, c: f32, id: &str| SummaryFact {
        text: text.into(),
        kind: FactKind::Constraint,
        confidence: c,
        source_event_ids: vec![id.into()],
    };
    let mut a = Summary::empty();
    a.facts = vec![
        fact("Never push to main", 0.8, "e1"),
        fact("Use tabs", 0.6, "e2"),
    ];
    let mut b = Summary::empty();
    b.facts = vec![fact("never push to  main", 0.9, "e7")];
    let m = Summary::merge(&[a, b]);
    assert_eq!(m.facts.len(), 2);
    assert_eq!(m.facts[0].text, "Never push to main");
    assert_eq!(m.facts[0].confidence, 0.9);
    assert_eq!(m.facts[0].source_event_ids, ["e1", "e7"]);
}

#[test]
fn trim_follows_the_priority_order() {
    let mut s = Summary::empty();
    for title in SECTION_TITLES {
        for i in 0..10 {
            s.section_mut(title).unwrap().push(format!(
                "{title} bullet number {i} with some words to weigh"
            ));
        }
    }
    let full = tok().count(&s.render());
    s.trim_to((full / 3) as u64, tok()).unwrap();
    assert!(tok().count(&s.render()) <= full / 3);
    fn len(s: &Summary, t: &str) -> usize {
        s.section(t).unwrap().len()
    }
    let len_of = |t: &str| len(&s, t);
    assert!(len_of(GOAL) >= len_of(COMMANDS));
    assert!(len_of(NEXT_STEPS) >= len_of(FILES));
    assert!(len_of(ERRORS) >= len_of(CRITICAL));
    assert!(len_of(GOAL) > len_of(COMMANDS));
    assert!(len_of(GOAL) > len_of(CONSTRAINTS));
    // Very small budgets keep Goal longest.
    s.trim_to(110, tok()).unwrap();
    assert!(tok().count(&s.render()) <= 110);
    assert_eq!(len(&s, COMMANDS), 0);
    assert!(len(&s, GOAL) >= 1);
}

#[test]
fn trim_reports_a_budget_below_the_headings() {
    let mut s = Summary::empty();
    s.section_mut(GOAL).unwrap().push("x".into());
    let err = s.trim_to(5, tok()).unwrap_err();
    assert!(matches!(
        err,
        SummarizeError::BudgetTooSmall { max_tokens: 5, .. }
    ));
}

#[test]
fn split_event_pieces_fit_and_keep_the_id() {
    let long: String = (0..2000).map(|i| format!("line {i} of output\n")).collect();
    let event = Event::tool_result("c1", long.clone()).with_id("big");
    let pieces = split_event(&event, 300, tok());
    assert!(pieces.len() > 5);
    for (piece, size) in &pieces {
        assert_eq!(piece.id, "big");
        assert!(*size <= 300, "{size}");
        assert_eq!(*size, event_tokens(piece, tok()));
    }
    let joined: String = pieces.iter().map(|(p, _)| p.content.as_str()).collect();
    assert_eq!(joined, long);
    // One huge line with no newlines.
    let line = "x".repeat(20_000);
    let pieces = split_event(&Event::user(line.clone()).with_id("u"), 100, tok());
    assert!(pieces.iter().all(|(_, n)| *n <= 100));
    let joined: String = pieces.iter().map(|(p, _)| p.content.as_str()).collect();
    assert_eq!(joined, line);
}

#[test]
fn split_event_moves_long_arguments_into_the_content() {
    let body = "fn main() {}\n".repeat(2000);
    let event = Event::tool_call(
        "c1",
        "write_file",
        serde_json::json!({"path": "src/main.rs", "content": body}),
    )
    .with_id("w");
    let pieces = split_event(&event, 500, tok());
    assert!(pieces.len() > 1);
    assert_eq!(
        pieces[0].0.tool_args,
        Some(serde_json::json!({"path": "src/main.rs"}))
    );
    assert!(pieces.iter().all(|(_, n)| *n <= 500));
}

#[test]
fn chunks_respect_the_window() {
    let events: Vec<Event> = (0..100)
        .map(|i| Event::user(format!("message {i} ").repeat(20)).with_id(format!("e{i}")))
        .collect();
    let sizes: Vec<usize> = events.iter().map(|e| event_tokens(e, tok())).collect();
    let chunks = chunk_events(&events, &sizes, 500, tok());
    assert!(chunks.len() > 5);
    for chunk in &chunks {
        let n: usize = chunk.iter().map(|e| event_tokens(e, tok())).sum();
        assert!(n <= 500);
    }
    let ids: Vec<&str> = chunks.iter().flatten().map(|e| e.id.as_str()).collect();
    assert_eq!(ids.len(), 100);
}

#[test]
fn summary_detection() {
    assert!(is_summary(&format!("  {SUMMARY_PREFIX}\n## Goal")));
    assert!(!is_summary("summary: nothing"));
    let mut e = Event::user(format!("{SUMMARY_PREFIX}\n## Goal\n- x"));
    assert!(is_summary_event(&e));
    e.trace_type = TraceType::Assistant;
    assert!(!is_summary_event(&e));
}
