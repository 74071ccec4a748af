//! The view cut into segments that render apart, and their renders kept from
//! one model call to the next.
//!
//! Between two calls a view mostly grows at its end; the turns before are
//! the same items, so their rendered entries can be reused instead of built
//! again. The view is cut where no provider's rules join entries across the
//! cut (see [`Segment`]): before each user message that follows a finished
//! answer, and before each model response that follows tool results, so a
//! call renders only the steps taken since the last one. Each segment's
//! render is kept under the revisions of its items, so any change to an item
//! renders its segment anew.

use std::ops::Range;
use std::sync::Arc;

use crate::base::event::TraceType;
use crate::pipeline::transcript::{message_refs_of, Revision, ViewItem};
use crate::render::{Place, Segment, SegmentList, Target};

/// Renders of the segments of the latest view, by the revisions of their items.
#[derive(Debug, Default)]
pub(crate) struct RenderCache {
    /// The target the latest list was rendered for.
    target: Option<Target>,
    /// Where each segment of the latest list was in the view, and its key.
    latest: Vec<Rendered>,
    /// The latest list itself, shared with the payloads made from it. When
    /// the previous call's payload is gone, as it is once sent, the next
    /// call changes the list in place: a call costs what changed, not a
    /// reference count for every segment of the view.
    list: SegmentList,
    /// The revisions of the latest view's items, in order.
    revisions: Vec<Revision>,
}

/// One segment of the latest list: where it was in the view, and its key.
#[derive(Debug)]
struct Rendered {
    range: Range<usize>,
    key: u64,
}

impl RenderCache {
    /// The message list of `items` for `target`, segment by segment: kept
    /// renders for segments whose items are unchanged, new ones for the rest.
    /// Renders of segments no longer in the view are dropped.
    ///
    /// The segments before the first item that changed since the latest call
    /// are kept as they are, without being cut or keyed again, so a call
    /// costs what was added or changed, not the length of the view.
    pub fn segments(&mut self, target: Target, items: &[ViewItem]) -> SegmentList {
        let unchanged = if self.target == Some(target) {
            self.unchanged_prefix(items)
        } else {
            0
        };
        // A cut right at the end of the unchanged prefix depends on the item
        // after it, which may have changed: only segments ending before it stay.
        let kept = self.latest.iter().take_while(|r| r.range.end < unchanged);
        let kept = kept.count();
        let list = Arc::make_mut(&mut self.list);
        let mut reusable: foldhash::HashMap<u64, Arc<Segment>> = self
            .latest
            .drain(kept..)
            .zip(list.drain(kept..))
            .map(|(rendered, segment)| (rendered.key, segment))
            .collect();
        let resume = self.latest.last().map_or(0, |r| r.range.end);
        for range in cuts_from(items, resume) {
            let place = if range.start == 0 {
                Place::Start
            } else {
                Place::After
            };
            let key = key_of(target, place, &items[range.clone()]);
            let segment = reusable.remove(&key).unwrap_or_else(|| {
                Arc::new(Segment::new(
                    target,
                    &message_refs_of(&items[range.clone()]),
                    place,
                ))
            });
            reusable.insert(key, Arc::clone(&segment));
            self.latest.push(Rendered { range, key });
            list.push(segment);
        }
        self.target = Some(target);
        self.revisions.truncate(unchanged);
        self.revisions
            .extend(items[unchanged..].iter().map(ViewItem::revision));
        Arc::clone(&self.list)
    }

    /// How many items at the start of `items` the latest view had too.
    fn unchanged_prefix(&self, items: &[ViewItem]) -> usize {
        self.revisions
            .iter()
            .zip(items)
            .take_while(|(revision, item)| **revision == item.revision())
            .count()
    }
}

/// The ranges of `items[start..]` that render apart, in order, covering all
/// of them; `start` must be a cut (or 0), where no tool call is open.
fn cuts_from(items: &[ViewItem], start: usize) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    let mut start = start;
    let mut open_calls: i64 = 0;
    for (index, item) in items.iter().enumerate().skip(start) {
        if index > start && open_calls == 0 && starts_segment(&items[index - 1], item) {
            ranges.push(start..index);
            start = index;
        }
        match item.event.trace_type {
            TraceType::ToolCall => open_calls += 1,
            TraceType::ToolResult => open_calls -= 1,
            TraceType::System
            | TraceType::User
            | TraceType::Assistant
            | TraceType::Reasoning
            | TraceType::Summary
            | TraceType::TurnAborted
            | TraceType::WorkingMemory => {}
        }
    }
    if start < items.len() {
        ranges.push(start..items.len());
    }
    ranges
}

/// Whether a segment may start at `item`: where a message of one side of
/// the conversation surely ends and one of the other side surely begins, so
/// that nothing merges across in any API. That is a user message with text
/// right after an assistant answer with text (a new turn), or a model
/// response that opens with a tool call or text right after a tool result
/// (the next step of a turn).
fn starts_segment(previous: &ViewItem, item: &ViewItem) -> bool {
    let has_text = |item: &ViewItem| !item.event.content.trim().is_empty();
    match (previous.event.trace_type, item.event.trace_type) {
        (TraceType::Assistant, TraceType::User) => has_text(previous) && has_text(item),
        (TraceType::ToolResult, TraceType::ToolCall) => true,
        (TraceType::ToolResult, TraceType::Assistant) => has_text(item),
        _ => false,
    }
}

/// A key for a segment's render: the target, its place in the list (a list
/// may not start with the assistant), and its items' revisions.
fn key_of(target: Target, place: Place, items: &[ViewItem]) -> u64 {
    const MULTIPLIER: u64 = 0x517c_c1b7_2722_0a95;
    let mix = |hash: u64, word: u64| (hash.rotate_left(5) ^ word).wrapping_mul(MULTIPLIER);
    let head = mix(target as u64 + 1, place as u64);
    let head = mix(head, items.len() as u64);
    items
        .iter()
        .fold(head, |hash, item| mix(hash, item.revision().get()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::event::Event;
    use crate::tokens::TokenCounts;

    fn items(events: Vec<Event>) -> Vec<ViewItem> {
        events
            .into_iter()
            .map(|e| ViewItem::new(e, TokenCounts::default()))
            .collect()
    }

    /// A turn with a tool call, then the next question.
    fn listing() -> Vec<Event> {
        vec![
            Event::user("list the files"),
            Event::tool_call("c1", "ls", serde_json::json!({})),
            Event::tool_result("c1", "a.rs"),
            Event::assistant("There is a.rs."),
            Event::user("and now?"),
        ]
    }

    #[test]
    fn cuts_between_turns_and_between_steps() {
        let mut events = listing();
        events.extend([
            Event::assistant(""),
            Event::user("hello?"),
            Event::assistant("Hi."),
        ]);
        let view = items(events);
        assert_eq!(cuts_from(&view, 0), vec![0..3, 3..4, 4..8]);
    }

    #[test]
    fn a_call_left_open_keeps_the_segment_going() {
        let view = items(vec![
            Event::user("run it"),
            Event::tool_call("c1", "run", serde_json::json!({})),
            Event::assistant("Started."),
            Event::user("done yet?"),
            Event::tool_result("c1", "ok"),
        ]);
        assert_eq!(cuts_from(&view, 0), vec![0..5]);
    }

    #[test]
    fn segments_join_into_the_whole_render_for_every_target() {
        let view = items(listing());
        for target in Target::ALL {
            let segments = RenderCache::default().segments(target, &view);
            let joined: usize = segments.iter().map(|s| s.len()).sum();
            let whole = crate::render::entries(
                target,
                &crate::pipeline::transcript::messages_of(&view),
                Place::Start,
            );
            assert_eq!(joined, whole.len(), "{target}: no `(continued)` mid-list");
        }
    }

    #[test]
    fn a_changed_item_is_rendered_again() {
        let mut view = items(vec![
            Event::user("one"),
            Event::assistant("1"),
            Event::user("two"),
            Event::assistant("2"),
        ]);
        let mut cache = RenderCache::default();
        let first = cache.segments(Target::Anthropic, &view);
        let again = cache.segments(Target::Anthropic, &view);
        assert!(Arc::ptr_eq(&first[0], &again[0]) && Arc::ptr_eq(&first[1], &again[1]));
        let tokenizer = crate::tokens::Encoding::O200kBase.tokenizer();
        view[3].replace_content("II".into(), tokenizer);
        let changed = cache.segments(Target::Anthropic, &view);
        assert!(Arc::ptr_eq(&first[0], &changed[0]));
        assert!(!Arc::ptr_eq(&first[1], &changed[1]));
        // A change early on renders its segment anew; the later ones are found by key.
        view[1].replace_content("one".into(), tokenizer);
        let early = cache.segments(Target::Anthropic, &view);
        assert!(!Arc::ptr_eq(&changed[0], &early[0]));
        assert!(Arc::ptr_eq(&changed[1], &early[1]));
        // Another target renders its own.
        let gemini = cache.segments(Target::Gemini, &view);
        assert!(!Arc::ptr_eq(&early[1], &gemini[1]));
    }
}
