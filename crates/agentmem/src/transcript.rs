//! The transcript: the model's view of a session, event by event, with token
//! counts kept current as events arrive.
//!
//! The view is the compaction snapshot's base events (if any) followed by
//! the active log's events, each as the model sees it: tool outputs cut by
//! the write-time guard, evicted outputs replaced by their preview. Every
//! event is counted once, when it joins; totals are running sums, so keeping
//! the transcript current costs what the new events cost.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::context::guard::{self, GuardPolicy};
use crate::context::normalize::PairCheck;
use crate::event::{Event, TraceType};
use crate::message::{messages_from_events, parts_of, role_of, starts_message, Message};
use crate::tokens::count::{count_part, role_name, TokenCounts, TOKENS_PER_MESSAGE};
use crate::tokens::{Encoding, Tokenizer};

/// A provider-reported prompt size, and where in the transcript it was measured.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageAnchor {
    /// Prompt tokens the provider reported.
    pub reported_prompt_tokens: u64,
    /// The transcript's token total just before the response that reported
    /// it — or, when agentmem prepared that call, the tokens of the messages
    /// it sent.
    pub transcript_tokens_before: u64,
    /// What agentmem counted beyond the messages for that call (system
    /// prompt, memory, tools, framing), when it prepared it: what is sent
    /// beside the messages changes between calls, and the anchor must move
    /// with it.
    pub counted_overhead: Option<u64>,
    /// The model that reported it, when known.
    pub model: Option<String>,
}

/// One event as the model sees it, with the tokens of its parts (message
/// framing is added by [`measure`], since it depends on the neighbours).
///
/// Change the event's content through [`ViewItem::replace_content`]: it
/// recounts the tokens and gives the item a new [`Revision`], so a render of
/// the old content is never reused for the new.
#[derive(Debug, Clone)]
pub struct ViewItem {
    pub event: Event,
    pub tokens: TokenCounts,
    revision: Revision,
}

impl ViewItem {
    /// `event` as the model sees it, counted as `tokens`: a new revision.
    pub fn new(event: Event, tokens: TokenCounts) -> ViewItem {
        ViewItem {
            event,
            tokens,
            revision: Revision::next(),
        }
    }

    /// Which version of this view of its event the item is.
    pub fn revision(&self) -> Revision {
        self.revision
    }

    /// Shows `content` instead of what the event showed: recounted, and a
    /// new revision.
    pub fn replace_content(&mut self, content: String, tokenizer: Tokenizer) {
        self.event.content = content;
        self.tokens = event_tokens(&self.event, tokenizer);
        self.revision = Revision::next();
    }
}

impl PartialEq for ViewItem {
    /// Items are equal when the model would see the same: the revision is
    /// bookkeeping.
    fn eq(&self, other: &ViewItem) -> bool {
        self.event == other.event && self.tokens == other.tokens
    }
}

/// A number that names one version of one view item, unique in the process:
/// what lets the renders of unchanged items be reused from call to call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Revision(u64);

impl Revision {
    fn next() -> Revision {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Revision(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// The number, for hashing.
    pub fn get(self) -> u64 {
        self.0
    }
}

/// The model's view and its token counts.
#[derive(Debug, Clone)]
pub struct Transcript {
    tokenizer: Tokenizer,
    guard: GuardPolicy,
    items: Vec<ViewItem>,
    total: TokenCounts,
    /// The total as the events came, before any tier shrank the view.
    unshrunk: u64,
    response_start_total: u64,
    anchor: Option<UsageAnchor>,
    /// Each tool result's view as the guard made it, and its count, by id: a
    /// view rebuilt after a compaction, or the compaction's own reading of
    /// the span, reuses them instead of cutting and counting the same
    /// outputs again.
    seen: HashMap<String, Seen>,
    /// Whether the view's tool pairs are intact, kept up to date as it grows.
    pairs: PairCheck,
}

/// What the guard and the tokenizer made of one tool result.
#[derive(Debug, Clone)]
struct Seen {
    /// The [`fingerprint`] of the event seen, so a different event under
    /// the same id is never taken for it.
    fingerprint: u64,
    /// The content the model sees, when the guard changed it.
    cut: Option<String>,
    tokens: TokenCounts,
}

impl Seen {
    /// `event` as seen, if this is what was seen of it.
    fn view_of(&self, event: &Event) -> Option<Event> {
        if self.fingerprint != fingerprint(event) {
            return None;
        }
        Some(match &self.cut {
            Some(cut) => Event {
                content: cut.clone(),
                ..event.clone()
            },
            None => event.clone(),
        })
    }
}

/// A hash of what shapes a tool result's view and count.
fn fingerprint(event: &Event) -> u64 {
    let mut hasher = crate::hash::fingerprint_hasher();
    (
        &event.content,
        &event.tool_call_id,
        &event.tool_name,
        event.tool_error.is_some(),
        event.tool_result_ref.is_some(),
        event.media.as_ref().map(|media| &media.images),
    )
        .hash(&mut hasher);
    hasher.finish()
}

impl Transcript {
    /// An empty transcript counting in `encoding`, guarding tool outputs with `guard`.
    pub fn new(encoding: Encoding, guard: GuardPolicy) -> Self {
        Transcript {
            tokenizer: encoding.tokenizer(),
            guard,
            items: Vec::new(),
            total: TokenCounts::default(),
            unshrunk: 0,
            response_start_total: 0,
            anchor: None,
            seen: HashMap::new(),
            pairs: PairCheck::default(),
        }
    }

    /// An empty transcript that counts and guards like this one and reuses
    /// what this one saw of the events it is given.
    pub fn successor(&self) -> Transcript {
        let mut next = Transcript::new(self.encoding(), self.guard.clone());
        next.seen = self.seen.clone();
        next
    }

    /// Forgets what was seen of events no longer in the view.
    pub fn forget_unseen(&mut self) {
        let present: HashSet<&str> = self.items.iter().map(|i| i.event.id.as_str()).collect();
        self.seen.retain(|id, _| present.contains(id.as_str()));
    }

    /// `event` as the model sees it: tool output cut or previewed by the guard.
    pub fn view_of(&self, event: &Event) -> Event {
        match self.remembered(event) {
            Some((viewed, _)) => viewed,
            None => model_view(event, &self.guard, self.tokenizer),
        }
    }

    /// What was seen of `event` before, with its count, if it was this event.
    fn remembered(&self, event: &Event) -> Option<(Event, TokenCounts)> {
        let seen = self.seen.get(&event.id)?;
        Some((seen.view_of(event)?, seen.tokens))
    }

    /// A transcript of `events` with the default guard.
    pub fn from_events(encoding: Encoding, events: &[Event]) -> Self {
        let mut transcript = Self::new(encoding, GuardPolicy::default());
        transcript.extend(events);
        transcript
    }

    /// Adds events that come after the ones already in the view.
    pub fn extend(&mut self, events: &[Event]) {
        for event in events {
            self.push(event);
        }
    }

    fn push(&mut self, event: &Event) {
        if !event.is_in_model_view() {
            return;
        }
        if event.replaces_history() {
            self.start_over();
        }
        let before = self.total.total;
        let (viewed, tokens) = self.see(event);
        let starts = starts_message(self.items.last().map(|i| &i.event), &viewed);
        if starts {
            self.total.add(message_framing(&viewed, self.tokenizer));
            if event.trace_type.is_model_output() {
                self.response_start_total = before;
            }
        }
        self.total.add(tokens);
        self.unshrunk = self
            .unshrunk
            .saturating_add(self.total.total.saturating_sub(before));
        if let Some(usage) = &event.usage {
            // The messages sent may differ from the transcript (synthetic
            // results for pending calls, a last-resort cut): when agentmem
            // counted what it sent, that is what the report is measured against.
            let transcript_before = if event.trace_type.is_model_output() {
                self.response_start_total
            } else {
                before
            };
            self.anchor = Some(UsageAnchor {
                reported_prompt_tokens: usage.prompt_tokens,
                transcript_tokens_before: usage.estimated_view_tokens.unwrap_or(transcript_before),
                counted_overhead: usage
                    .estimated_prompt_tokens
                    .zip(usage.estimated_view_tokens)
                    .map(|(prompt, view)| prompt.saturating_sub(view)),
                model: usage.model.clone(),
            });
        }
        self.pairs.observe(&viewed);
        self.items.push(ViewItem::new(viewed, tokens));
    }

    /// Empties the view for a summary that replaced everything before it. A
    /// usage anchor measured on the old view no longer says anything.
    fn start_over(&mut self) {
        self.items.clear();
        self.total = TokenCounts::default();
        self.unshrunk = 0;
        self.response_start_total = 0;
        self.anchor = None;
        self.pairs = PairCheck::default();
    }

    /// `event` as the model sees it, with its count; remembered by event id
    /// for tool results, the events the guard cuts.
    fn see(&mut self, event: &Event) -> (Event, TokenCounts) {
        if let Some(remembered) = self.remembered(event) {
            return remembered;
        }
        let viewed = model_view(event, &self.guard, self.tokenizer);
        let tokens = event_tokens(&viewed, self.tokenizer);
        if event.trace_type == TraceType::ToolResult && !event.id.is_empty() {
            let seen = Seen {
                fingerprint: fingerprint(event),
                cut: (viewed.content != event.content).then(|| viewed.content.clone()),
                tokens,
            };
            self.seen.insert(event.id.clone(), seen);
        }
        (viewed, tokens)
    }

    /// Drops the usage anchor: usage reported before a compaction measured a
    /// context that no longer exists.
    pub fn forget_anchor(&mut self) {
        self.anchor = None;
    }

    /// Lets `shape` change the view in place (the pipeline's tiers do: their
    /// effect lasts, so each prepare only handles what is new), then re-adds
    /// the totals from the item counts — no text is counted again. `shape`
    /// may drop, add and reorder items; it changes one's content only through
    /// [`ViewItem::replace_content`].
    pub fn reshape<R>(&mut self, shape: impl FnOnce(&mut Vec<ViewItem>) -> R) -> R {
        let result = shape(&mut self.items);
        self.total = measure(&self.items, self.tokenizer);
        self.pairs = PairCheck::default();
        for item in &self.items {
            self.pairs.observe(&item.event);
        }
        result
    }

    /// Whether every tool call in the view has exactly one result right
    /// after its response, and every result its call (see
    /// [`pairs_are_intact`](crate::context::normalize::pairs_are_intact)).
    pub fn pairs_are_intact(&self) -> bool {
        self.pairs.is_intact()
    }

    /// The view, event by event.
    pub fn items(&self) -> &[ViewItem] {
        &self.items
    }

    /// The view as messages.
    pub fn messages(&self) -> Vec<Message> {
        messages_of(&self.items)
    }

    /// The running totals, message framing included.
    pub fn totals(&self) -> TokenCounts {
        self.total
    }

    /// The total the view would have had if no tier had shrunk it: what a
    /// compaction is measured against, since it rebuilds the view unshrunk.
    pub fn unshrunk_total(&self) -> u64 {
        self.unshrunk
    }

    /// How many events are in the view.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the view is empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The tokenizer counts are made with.
    pub fn tokenizer(&self) -> Tokenizer {
        self.tokenizer
    }

    /// The encoding counts are in.
    pub fn encoding(&self) -> Encoding {
        self.tokenizer.encoding()
    }

    /// The guard policy tool outputs are cut with.
    pub fn guard(&self) -> &GuardPolicy {
        &self.guard
    }

    /// The latest provider-reported usage, if any event carried one.
    pub fn anchor(&self) -> Option<&UsageAnchor> {
        self.anchor.as_ref()
    }
}

/// The view's messages.
pub fn messages_of(items: &[ViewItem]) -> Vec<Message> {
    messages_from_events(items.iter().map(|i| &i.event))
}

/// The total of a view: each item's parts plus the framing of each message.
/// No text is tokenized again: item counts are reused, only framing is added.
pub fn measure(items: &[ViewItem], tokenizer: Tokenizer) -> TokenCounts {
    let mut total = TokenCounts::default();
    for item in items {
        total.add(item.tokens);
    }
    for item in message_starts(items) {
        total.add(message_framing(&item.event, tokenizer));
    }
    total
}

/// How many messages the view's items make.
pub fn message_count(items: &[ViewItem]) -> usize {
    message_starts(items)
        .map(|item| crate::message::messages_started(&item.event))
        .sum()
}

/// The items that start a message, by the rule [`push_event`] groups by.
///
/// [`push_event`]: crate::message::push_event
fn message_starts(items: &[ViewItem]) -> impl Iterator<Item = &ViewItem> {
    let mut previous: Option<&Event> = None;
    items.iter().filter(move |item| {
        let starts = starts_message(previous, &item.event);
        previous = Some(&item.event);
        starts
    })
}

/// The tokens of an event's parts.
pub fn event_tokens(event: &Event, tokenizer: Tokenizer) -> TokenCounts {
    let mut tokens = TokenCounts::default();
    for part in parts_of(event) {
        tokens.add(count_part(&part, tokenizer));
    }
    tokens
}

/// What starting a message costs: the fixed overhead and the role (twice
/// for a shadow-pair summary, which adds a user and an assistant message).
fn message_framing(event: &Event, tokenizer: Tokenizer) -> TokenCounts {
    let role = role_of(event);
    let framing = |role| TOKENS_PER_MESSAGE + role_tokens(role, tokenizer.encoding());
    let total = match crate::message::messages_started(event) {
        1 => framing(role),
        _ => framing(role) + framing(crate::message::Role::Assistant),
    };
    TokenCounts {
        total,
        system: if role == crate::message::Role::System {
            total
        } else {
            0
        },
        ..TokenCounts::default()
    }
}

/// The tokens of a role's name: one in both BPE encodings (checked by a
/// test), a quarter of the letters in the approximation. A constant, because
/// framing is added on every measure.
pub fn role_tokens(role: crate::message::Role, encoding: Encoding) -> u64 {
    match encoding {
        Encoding::O200kBase | Encoding::Cl100kBase => 1,
        Encoding::Approximate => role_name(role).len().div_ceil(4) as u64,
    }
}

/// The event as the model sees it: tool output cut by the guard, or the
/// preview of an evicted output. Pure: the same event gives the same view.
pub fn model_view(event: &Event, policy: &GuardPolicy, tokenizer: Tokenizer) -> Event {
    if event.trace_type != TraceType::ToolResult {
        return event.clone();
    }
    let call_id = event.tool_call_id.as_deref().unwrap_or_default();
    let content = match &event.tool_result_ref {
        Some(_) => Some(guard::eviction_preview(call_id, &event.content)),
        None => guard::truncate_for_model(&event.content, policy, tokenizer),
    };
    match content {
        Some(content) => Event {
            content,
            ..event.clone()
        },
        None => event.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Role;

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

        let mut second = first.successor();
        second.extend(&[call.clone(), long]);
        assert_eq!(second.items()[1], cut);

        let other = Event::tool_result("c1", "short").with_id("e2");
        let mut third = second.successor();
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
            .with_tag(crate::event::REPLACES_HISTORY_TAG)
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
}
