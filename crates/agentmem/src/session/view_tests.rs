use super::*;
use crate::base::event::Usage;

fn shared(events: Vec<Event>) -> Vec<Arc<Event>> {
    events.into_iter().map(Arc::new).collect()
}

fn reporting_usage(mut event: Event) -> Event {
    event.usage = Some(Usage {
        prompt_tokens: 900,
        completion_tokens: 10,
        ..Usage::default()
    });
    event
}

fn compacted_into(base: Vec<Event>, tail_events: usize) -> Snapshot {
    Snapshot {
        compactions: 1,
        tail_events,
        base,
        ..Snapshot::default()
    }
}

#[test]
fn the_transcript_is_rebuilt_only_for_another_encoding() {
    let mut view = ModelView::new(None, GuardPolicy::default());
    let first = shared(vec![Event::user("run the tests"), Event::assistant("ok")]);
    assert_eq!(view.in_encoding(Encoding::O200kBase, &first).len(), 2);
    let more = shared(vec![Event::user("and the linter")]);
    view.extend(&more);
    // Built already: what the log hands it now is not read again.
    let ignored = shared(Vec::new());
    assert_eq!(view.in_encoding(Encoding::O200kBase, &ignored).len(), 3);
    assert_eq!(view.encoding(), Some(Encoding::O200kBase));
    let rebuilt = view.in_encoding(Encoding::Cl100kBase, &first);
    assert_eq!(rebuilt.len(), 2);
    assert_eq!(rebuilt.encoding(), Encoding::Cl100kBase);
}

#[test]
fn events_join_a_transcript_only_once_it_is_built() {
    let mut view = ModelView::new(None, GuardPolicy::default());
    view.extend(&shared(vec![Event::user("lost")]));
    assert!(view.built_mut().is_none());
    let active = shared(vec![Event::user("kept")]);
    let transcript = view.counted_in(Encoding::default(), &active);
    assert_eq!(transcript.len(), 1);
    assert_eq!(transcript.estimated_tokens(), 0);
}

#[test]
fn the_snapshot_base_comes_first_and_the_raw_tail_anchors_nothing() {
    let summary = Event::system("Summary: the tests were fixed.");
    let active = shared(vec![
        reporting_usage(Event::assistant("fixed")),
        Event::user("now the docs"),
    ]);
    let mut view = ModelView::new(
        Some(compacted_into(vec![summary.clone()], 1)),
        GuardPolicy::default(),
    );
    let events = view.events(&active);
    assert_eq!(events.len(), 3);
    assert_eq!(events[0].content, summary.content);
    let transcript = view.in_encoding(Encoding::default(), &active);
    assert_eq!(transcript.len(), 3);
    assert!(transcript.anchor().is_none());

    // After the tail, a reported usage anchors the view.
    let mut view = ModelView::new(
        Some(compacted_into(vec![summary], 0)),
        GuardPolicy::default(),
    );
    let anchor = view.in_encoding(Encoding::default(), &active).anchor();
    assert_eq!(anchor.map(|a| a.reported_prompt_tokens), Some(900));
}

#[test]
fn a_raw_compaction_sets_the_view_aside_and_puts_it_back() {
    let base = vec![Event::system("Summary: one.")];
    let mut view = ModelView::new(Some(compacted_into(base, 0)), GuardPolicy::default());
    let active = shared(vec![Event::user("hello")]);
    view.in_encoding(Encoding::default(), &active);
    let set_aside = view.set_aside(Snapshot::default());
    assert!(view.built_mut().is_none());
    assert_eq!(view.snapshot().map(|s| s.base.len()), Some(0));
    view.put_back(set_aside);
    assert_eq!(view.snapshot().map(|s| s.base.len()), Some(1));
    assert_eq!(view.built_mut().map(|t| t.len()), Some(2));
}
