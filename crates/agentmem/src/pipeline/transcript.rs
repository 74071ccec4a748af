//! The transcript: the model's view of a session, event by event, with token
//! counts kept current as events arrive.
//!
//! The view is the compaction snapshot's base events (if any) followed by
//! the active log's events, each as the model sees it: tool outputs cut by
//! the write-time guard, evicted outputs replaced by their preview. Every
//! event is counted once; totals are running sums, so keeping the
//! transcript current costs what the new events cost. An event the guard
//! leaves as it is is shared with the session's log ([`Shared`]), so the
//! active context is held in memory once.
//!
//! Counting is most of what a new event costs, and far below the trigger it
//! decides nothing. So events the session appends join counted later
//! (`Transcript::extend_counting_later`): with an estimate from their
//! bytes, and bounds on their count (see [`Bound`]). A check against a
//! limit that the bounds show is met counts nothing; any other check, and
//! anything that reshapes the view, counts them first. The
//! budget is checked with a bound no count can pass, so it always holds; the
//! trigger with one calibrated on the densest text counted, so decisions are
//! those of exact counts unless new text is denser than any before it. Only
//! the reported figure is partly estimated, and says so
//! ([`Transcript::estimated_tokens`]).

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::base::event::{Event, TraceType};
use crate::base::message::{
    message_refs, messages_from_events, parts_of, role_of, starts_message, Message, MessageRef,
};
use crate::pipeline::call_ids::CallIds;
use crate::pipeline::guard::{self, GuardPolicy};
use crate::pipeline::normalize::PairCheck;
use crate::tokens::count::{
    count_part, count_part_at_most, role_name, TokenCounts, TOKENS_PER_MESSAGE,
};
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
/// Change the event's content through `ViewItem::replace_content`: it
/// recounts the tokens and gives the item a new [`Revision`], so a render of
/// the old content is never reused for the new.
///
/// The event is shared with the session's log while the guard leaves it as
/// it is: the view holds the active context once, not a second copy of it.
#[derive(Debug, Clone)]
pub struct ViewItem {
    /// The event.
    pub event: Arc<Event>,
    /// The event's tokens as the model sees it.
    pub tokens: TokenCounts,
    revision: Revision,
}

impl ViewItem {
    /// `event` as the model sees it, counted as `tokens`: a new revision.
    pub fn new(event: impl Into<Arc<Event>>, tokens: TokenCounts) -> ViewItem {
        ViewItem {
            event: event.into(),
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
    pub(crate) fn replace_content(&mut self, content: String, tokenizer: Tokenizer) {
        Arc::make_mut(&mut self.event).content = content;
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
    /// How many messages the items make (see [`message_count`]).
    messages: usize,
    /// The total as the events came, before any tier shrank the view.
    unshrunk: u64,
    response_start_total: u64,
    anchor: Option<UsageAnchor>,
    /// Each tool result's view as the guard made it, and its count, by id: a
    /// view rebuilt after a compaction, or the compaction's own reading of
    /// the span, reuses them instead of cutting and counting the same
    /// outputs again.
    seen: foldhash::HashMap<String, Seen>,
    /// Whether the view's tool pairs are intact, kept up to date as it grows.
    pairs: PairCheck,
    /// The call ids of the view, so a reused id names a call of its own.
    call_ids: CallIds,
    /// Items whose counts are estimates, in view order.
    uncounted: Vec<Uncounted>,
    /// How far the totals may be below the exact ones, by [`Bound`]: each
    /// uncounted item's bound less its estimate, summed.
    uncounted_slack: Slack,
    /// Where the latest model response started: counting an item before
    /// it moves `response_start_total` too.
    response_start: usize,
    /// Bytes of text counted so far, and the tokens they made: the ratio
    /// estimates are made with.
    counted_bytes: u64,
    counted_tokens: u64,
    /// The most tokens per byte of any item of at least
    /// [`DENSITY_MIN_BYTES`] counted so far: what [`Bound::Calibrated`] scales by.
    densest: f64,
}

/// How sure a check against a limit must be before it skips counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// Never wrong: a byte-level BPE makes at most a token per byte. For
    /// limits that must hold, such as the input budget.
    Certain,
    /// Each uncounted item at most a tenth denser than the densest item the
    /// view has counted (a byte per token where it has counted none): for
    /// thresholds a call may pass by a little until the next check counts,
    /// such as the compaction trigger. Text denser than any before it (a
    /// base64 blob after prose) can make it wrong; the budget check cannot be.
    Calibrated,
}

/// The slack of the uncounted items under each [`Bound`].
#[derive(Debug, Clone, Copy, Default)]
struct Slack {
    certain: u64,
    calibrated: u64,
}

/// An item counted by estimate, waiting to be counted.
#[derive(Debug, Clone)]
struct Uncounted {
    index: usize,
    /// What no count of it can pass: its bytes, and the fixed tokens of its framing.
    bound: u64,
    /// What its count is unlikely to pass ([`Bound::Calibrated`]).
    likely: u64,
    /// The tool result it views, to remember once counted.
    tool_result: Option<GuardedResult>,
}

/// A tool result's [`fingerprint`], and whether the guard changed its content.
#[derive(Debug, Clone, Copy)]
struct GuardedResult {
    fingerprint: u64,
    cut: bool,
}

/// Tokens per byte assumed before any text was counted (English and code
/// make about four bytes a token).
const DEFAULT_TOKENS_PER_BYTE: f64 = 0.25;
/// Bytes counted before the transcript's own ratio replaces the default.
const RATIO_MIN_BYTES: u64 = 4_096;
/// Items shorter than this say little about how dense text is: their
/// framing weighs as much as their words.
const DENSITY_MIN_BYTES: u64 = 256;
/// [`Bound::Calibrated`]'s margin over the densest item counted, in percent.
const DENSITY_MARGIN_PERCENT: f64 = 110.0;

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
    fn view_of(&self, event: &impl Shared) -> Option<Arc<Event>> {
        if self.fingerprint != fingerprint(event.event()) {
            return None;
        }
        Some(match &self.cut {
            Some(cut) => Arc::new(event.event().with_content(cut.clone())),
            None => event.share(),
        })
    }
}

/// A hash of what shapes a tool result's view and count.
fn fingerprint(event: &Event) -> u64 {
    let mut hasher = crate::base::hash::fingerprint_hasher();
    (
        event.text(),
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
            messages: 0,
            unshrunk: 0,
            response_start_total: 0,
            anchor: None,
            seen: foldhash::HashMap::default(),
            pairs: PairCheck::default(),
            call_ids: CallIds::default(),
            uncounted: Vec::new(),
            uncounted_slack: Slack::default(),
            response_start: 0,
            counted_bytes: 0,
            counted_tokens: 0,
            densest: 0.0,
        }
    }

    /// Takes over what `other` saw of `events` (the tool results among
    /// them), so adding them next cuts and counts none of them again: a
    /// view rebuilt after a compaction costs what its tail holds, not what
    /// the view before it held.
    pub(crate) fn remember_from(&mut self, other: &Transcript, events: &[Arc<Event>]) {
        for event in events {
            if let Some((id, seen)) = other.seen.get_key_value(&event.id) {
                self.seen.insert(id.clone(), seen.clone());
            }
        }
    }

    /// `event` as the model sees it, shared with what the view holds (or
    /// with `event`, when the guard leaves it as it is): no copy of its text.
    pub(crate) fn shared_view_of(&self, event: &Arc<Event>) -> Arc<Event> {
        match self.remembered(event) {
            Some((viewed, _)) => viewed,
            None => self.viewed(event),
        }
    }

    /// What was seen of `event` before, with its count, if it was this event.
    fn remembered(&self, event: &impl Shared) -> Option<(Arc<Event>, TokenCounts)> {
        let seen = self.seen.get(&event.event().id)?;
        Some((seen.view_of(event)?, seen.tokens))
    }

    /// `event` as the model sees it, shared with `event` when the guard
    /// leaves it as it is.
    fn viewed(&self, event: &impl Shared) -> Arc<Event> {
        match guarded(event.event(), &self.guard, self.tokenizer) {
            Some(cut) => Arc::new(cut),
            None => event.share(),
        }
    }

    /// A transcript of `events` with the default guard.
    pub fn from_events(encoding: Encoding, events: &[impl Shared]) -> Self {
        let mut transcript = Self::new(encoding, GuardPolicy::default());
        transcript.extend(events);
        transcript
    }

    /// Adds events that come after the ones already in the view, counted.
    pub fn extend(&mut self, events: &[impl Shared]) {
        for event in events {
            self.push(event, Counting::Now);
        }
    }

    /// Adds events that come after the ones already in the view, with
    /// estimated counts until a check needs them (see the module's docs).
    /// An event that reports usage is counted now, with all before it: the
    /// provider measured them, and an anchor is exact or useless.
    pub(crate) fn extend_counting_later(&mut self, events: &[impl Shared]) {
        for event in events {
            self.push(event, Counting::Later);
        }
    }

    fn push(&mut self, shared: &impl Shared, counting: Counting) {
        let event = shared.event();
        if !event.is_in_model_view() {
            return;
        }
        if event.replaces_history() {
            self.start_over();
        }
        match self.call_ids.view_id(event) {
            Some(view_id) => {
                let mut renamed = event.clone();
                renamed.tool_call_id = Some(view_id);
                self.push_in_view(&Arc::new(renamed), counting);
            }
            None => self.push_in_view(shared, counting),
        }
    }

    /// Adds an event of the model's view, under the call id it goes by there.
    fn push_in_view(&mut self, shared: &impl Shared, counting: Counting) {
        let event = shared.event();
        let counting = match counting {
            Counting::Later if event.usage.is_none() => Counting::Later,
            Counting::Later | Counting::Now => {
                self.count_now();
                Counting::Now
            }
        };
        let before = self.total.total;
        let (viewed, tokens, uncounted) = match counting {
            Counting::Now => {
                let (viewed, tokens) = self.see(shared);
                (viewed, tokens, None)
            }
            Counting::Later => self.glance(shared),
        };
        let starts = starts_message(self.items.last().map(|i| &*i.event), &viewed);
        if starts {
            self.messages += crate::base::message::messages_started(&viewed);
            self.total.add(message_framing(&viewed, self.tokenizer));
            if event.trace_type.is_model_output() {
                self.response_start_total = before;
                self.response_start = self.items.len();
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
        if let Some(uncounted) = uncounted {
            let slack = &mut self.uncounted_slack;
            let over_estimate = |bound: u64| bound.saturating_sub(tokens.total);
            slack.certain = slack.certain.saturating_add(over_estimate(uncounted.bound));
            slack.calibrated = slack
                .calibrated
                .saturating_add(over_estimate(uncounted.likely));
            self.uncounted.push(uncounted);
        }
        self.items.push(ViewItem::new(viewed, tokens));
    }

    /// `event` as the model sees it, with an estimate of its count, and
    /// what it takes to count it later; counted now when it was seen before.
    fn glance(&mut self, shared: &impl Shared) -> (Arc<Event>, TokenCounts, Option<Uncounted>) {
        if let Some((viewed, tokens)) = self.remembered(shared) {
            return (viewed, tokens, None);
        }
        let event = shared.event();
        let viewed = self.viewed(shared);
        let bound = event_tokens_at_most(&viewed);
        let estimate = self.estimate(bound);
        let tool_result =
            (event.trace_type == TraceType::ToolResult && !event.id.is_empty()).then(|| {
                GuardedResult {
                    fingerprint: fingerprint(event),
                    cut: viewed.content != event.content,
                }
            });
        let uncounted = Uncounted {
            index: self.items.len(),
            bound: bound.total,
            likely: self.likely_at_most(bound.total),
            tool_result,
        };
        (viewed, estimate, Some(uncounted))
    }

    /// `bound` scaled by the tokens per byte counted so far.
    fn estimate(&self, bound: TokenCounts) -> TokenCounts {
        let ratio = if self.counted_bytes >= RATIO_MIN_BYTES {
            (self.counted_tokens as f64 / self.counted_bytes as f64).min(1.0)
        } else {
            DEFAULT_TOKENS_PER_BYTE
        };
        let scale = |n: u64| (n as f64 * ratio).round() as u64;
        TokenCounts {
            total: scale(bound.total),
            tool_output: scale(bound.tool_output),
            reasoning: scale(bound.reasoning),
            system: scale(bound.system),
        }
    }

    /// `bound` tokens of text scaled to the densest counted, with the margin.
    fn likely_at_most(&self, bound: u64) -> u64 {
        if self.densest == 0.0 {
            return bound;
        }
        let likely = (bound as f64 * self.densest * DENSITY_MARGIN_PERCENT / 100.0).ceil();
        (likely as u64).min(bound)
    }

    /// Counts every item that has an estimate, and corrects the totals: then
    /// every figure is exact.
    pub(crate) fn count_now(&mut self) {
        for uncounted in std::mem::take(&mut self.uncounted) {
            let exact = event_tokens(&self.items[uncounted.index].event, self.tokenizer);
            self.learn_ratio(uncounted.bound, exact.total);
            let estimate = std::mem::replace(&mut self.items[uncounted.index].tokens, exact);
            self.total.sub(estimate);
            self.total.add(exact);
            let correct = |figure: &mut u64| {
                *figure = figure
                    .saturating_sub(estimate.total)
                    .saturating_add(exact.total);
            };
            correct(&mut self.unshrunk);
            if uncounted.index < self.response_start {
                correct(&mut self.response_start_total);
            }
            if let Some(result) = uncounted.tool_result {
                let item = &self.items[uncounted.index];
                let seen = Seen {
                    fingerprint: result.fingerprint,
                    cut: result.cut.then(|| item.event.content.clone()),
                    tokens: exact,
                };
                self.seen.insert(item.event.id.clone(), seen);
            }
        }
        self.uncounted_slack = Slack::default();
    }

    fn learn_ratio(&mut self, bound: u64, exact: u64) {
        self.counted_bytes = self.counted_bytes.saturating_add(bound);
        self.counted_tokens = self.counted_tokens.saturating_add(exact);
        if bound >= DENSITY_MIN_BYTES {
            self.densest = self.densest.max(exact as f64 / bound as f64);
        }
    }

    /// Whether the view's total is below `limit`: shown by the `bound`s of
    /// the items not counted yet when they can, else by counting them.
    pub(crate) fn is_below(&mut self, limit: u64, bound: Bound) -> bool {
        let slack = match bound {
            Bound::Certain => self.uncounted_slack.certain,
            Bound::Calibrated => self.uncounted_slack.calibrated,
        };
        if self.total.total.saturating_add(slack) < limit {
            return true;
        }
        self.count_now();
        self.total.total < limit
    }

    /// How many messages the view makes, kept as it grows: what
    /// `message_count` finds, without going over the view again.
    pub(crate) fn message_count(&self) -> usize {
        self.messages
    }

    /// How many of [`Transcript::totals`]' tokens are estimates, not counts.
    pub fn estimated_tokens(&self) -> u64 {
        self.uncounted
            .iter()
            .map(|u| self.items[u.index].tokens.total)
            .sum()
    }

    /// Empties the view for a summary that replaced everything before it. A
    /// usage anchor measured on the old view no longer says anything.
    fn start_over(&mut self) {
        self.uncounted.clear();
        self.uncounted_slack = Slack::default();
        self.items.clear();
        self.total = TokenCounts::default();
        self.messages = 0;
        self.unshrunk = 0;
        self.response_start_total = 0;
        self.response_start = 0;
        self.anchor = None;
        self.pairs = PairCheck::default();
        self.call_ids = CallIds::default();
    }

    /// `event` as the model sees it, with its count; remembered by event id
    /// for tool results, the events the guard cuts.
    fn see(&mut self, shared: &impl Shared) -> (Arc<Event>, TokenCounts) {
        if let Some(remembered) = self.remembered(shared) {
            return remembered;
        }
        let event = shared.event();
        let viewed = self.viewed(shared);
        let tokens = event_tokens(&viewed, self.tokenizer);
        self.learn_ratio(event_tokens_at_most(&viewed).total, tokens.total);
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
    pub(crate) fn forget_anchor(&mut self) {
        self.anchor = None;
    }

    /// Lets `shape` change the view in place (the pipeline's tiers do: their
    /// effect lasts, so each prepare only handles what is new), then re-adds
    /// the totals from the item counts — no text is counted again. `shape`
    /// may drop, add and reorder items; it changes one's content only through
    /// [`ViewItem::replace_content`].
    pub(crate) fn reshape<R>(&mut self, shape: impl FnOnce(&mut Vec<ViewItem>) -> R) -> R {
        self.count_now();
        let result = shape(&mut self.items);
        self.total = measure(&self.items, self.tokenizer);
        self.messages = message_count(&self.items);
        self.pairs = PairCheck::default();
        for item in &self.items {
            self.pairs.observe(&item.event);
        }
        result
    }

    /// Whether every tool call in the view has exactly one result right
    /// after its response, and every result its call (see
    /// [`pairs_are_intact`](crate::pipeline::normalize::pairs_are_intact)).
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

    /// The running totals, message framing included; partly estimated
    /// while items wait to be counted ([`Transcript::estimated_tokens`]).
    pub fn totals(&self) -> TokenCounts {
        self.total
    }

    /// The total the view would have had if no tier had shrunk it: what a
    /// compaction is measured against, since it rebuilds the view unshrunk.
    pub(crate) fn unshrunk_total(&self) -> u64 {
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
pub(crate) fn messages_of(items: &[ViewItem]) -> Vec<Message> {
    messages_from_events(items.iter().map(|i| &*i.event))
}

/// The view's messages, borrowed from its items.
pub(crate) fn message_refs_of(items: &[ViewItem]) -> Vec<MessageRef<'_>> {
    message_refs(items.iter().map(|i| &*i.event))
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

/// Each item's share of [`measure`]: its parts, plus the framing of the
/// message it starts if it starts one. Their sum is the view's total, so
/// leaving out a whole turn frees its items' shares.
pub(crate) fn item_totals(items: &[ViewItem], tokenizer: Tokenizer) -> Vec<u64> {
    let mut previous: Option<&Event> = None;
    items
        .iter()
        .map(|item| {
            let starts = starts_message(previous, &item.event);
            let framing = if starts {
                message_framing(&item.event, tokenizer).total
            } else {
                0
            };
            previous = Some(&item.event);
            item.tokens.total.saturating_add(framing)
        })
        .collect()
}

/// How many messages the view's items make.
pub(crate) fn message_count(items: &[ViewItem]) -> usize {
    message_starts(items)
        .map(|item| crate::base::message::messages_started(&item.event))
        .sum()
}

/// The items that start a message, by the rule [`push_event`] groups by.
///
/// [`push_event`]: crate::base::message::push_event
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
        tokens.add(count_part(part, tokenizer));
    }
    tokens
}

/// At least [`event_tokens`] of the same event, without tokenizing.
fn event_tokens_at_most(event: &Event) -> TokenCounts {
    let mut tokens = TokenCounts::default();
    for part in parts_of(event) {
        tokens.add(count_part_at_most(part));
    }
    tokens
}

/// When an event joining the view is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Counting {
    Now,
    /// When a check needs it: estimated from its bytes until then.
    Later,
}

/// What starting a message costs: the fixed overhead and the role (twice
/// for a shadow-pair summary, which adds a user and an assistant message).
fn message_framing(event: &Event, tokenizer: Tokenizer) -> TokenCounts {
    let role = role_of(event);
    let framing = |role| TOKENS_PER_MESSAGE + role_tokens(role, tokenizer.encoding());
    let total = match crate::base::message::messages_started(event) {
        1 => framing(role),
        _ => framing(role) + framing(crate::base::message::Role::Assistant),
    };
    TokenCounts {
        total,
        system: if role == crate::base::message::Role::System {
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
pub(crate) fn role_tokens(role: crate::base::message::Role, encoding: Encoding) -> u64 {
    match encoding {
        Encoding::O200kBase | Encoding::Cl100kBase => 1,
        Encoding::Approximate => role_name(role).len().div_ceil(4) as u64,
    }
}

/// `event` as the guard shows it, when that differs from the event.
fn guarded(event: &Event, policy: &GuardPolicy, tokenizer: Tokenizer) -> Option<Event> {
    if event.trace_type != TraceType::ToolResult {
        return None;
    }
    let call_id = event.tool_call_id.as_deref().unwrap_or_default();
    let text = event.text();
    let cut = match &event.tool_result_ref {
        Some(reference) => {
            let name = crate::pipeline::guard::evicted_name(reference).unwrap_or(call_id);
            Some(guard::eviction_preview(name, &text))
        }
        None => guard::truncate_for_model(&text, policy, tokenizer),
    };
    match cut {
        Some(cut) => Some(event.with_content(cut)),
        // A result given as its error or structured result alone: the view
        // says it as content, for every reader of the view (summaries too).
        None if event.content.is_empty() && !text.is_empty() => {
            Some(event.with_content(text.into_owned()))
        }
        None => None,
    }
}

/// An event the view can hold: one the caller keeps (shared, not copied)
/// or a plain event (copied once).
pub trait Shared {
    /// The event.
    fn event(&self) -> &Event;
    /// The event as the view holds it.
    fn share(&self) -> Arc<Event>;
}

impl Shared for Event {
    fn event(&self) -> &Event {
        self
    }

    fn share(&self) -> Arc<Event> {
        Arc::new(self.clone())
    }
}

impl Shared for Arc<Event> {
    fn event(&self) -> &Event {
        self
    }

    fn share(&self) -> Arc<Event> {
        Arc::clone(self)
    }
}

#[cfg(test)]
#[path = "transcript_tests.rs"]
mod tests;
