//! The transcript: a session's events as messages, with token counts kept
//! up to date as events arrive.
//!
//! Every event is counted once, when it joins the transcript; totals are
//! running sums. So keeping the transcript current costs what the new events
//! cost, however long the session is.

use crate::event::{Event, TraceType};
use crate::message::{push_event, Message};
use crate::tokens::count::{count_message, count_part, TokenCounts};
use crate::tokens::{Encoding, Tokenizer};

/// A provider-reported prompt size, and where in the transcript it was measured.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageAnchor {
    /// Prompt tokens the provider reported.
    pub reported_prompt_tokens: u64,
    /// The transcript's token total just before the response that reported it.
    pub transcript_tokens_before: u64,
    /// The index of the event that carried the usage.
    pub event_index: usize,
    /// The model that reported it, when known.
    pub model: Option<String>,
}

/// Messages and their token counts.
#[derive(Debug, Clone)]
pub struct Transcript {
    tokenizer: Tokenizer,
    messages: Vec<Message>,
    counts: Vec<TokenCounts>,
    total: TokenCounts,
    events: usize,
    response_start_total: u64,
    anchor: Option<UsageAnchor>,
}

impl Transcript {
    /// An empty transcript counting in `encoding`.
    pub fn new(encoding: Encoding) -> Self {
        Transcript {
            tokenizer: encoding.tokenizer(),
            messages: Vec::new(),
            counts: Vec::new(),
            total: TokenCounts::default(),
            events: 0,
            response_start_total: 0,
            anchor: None,
        }
    }

    /// A transcript of `events`.
    pub fn from_events(encoding: Encoding, events: &[Event]) -> Self {
        let mut transcript = Self::new(encoding);
        transcript.extend(events);
        transcript
    }

    /// Adds events appended after the ones already in the transcript.
    pub fn extend(&mut self, events: &[Event]) {
        for event in events {
            self.push(event);
        }
    }

    fn push(&mut self, event: &Event) {
        if !event.is_in_model_view() {
            self.events += 1;
            return;
        }
        let before = self.total.total;
        let parts_before = self.messages.last().map_or(0, |m| m.parts.len());
        let started = push_event(&mut self.messages, event);
        let last = self
            .messages
            .last()
            .expect("push_event adds or extends a message");
        let added = if started {
            self.counts.push(TokenCounts::default());
            count_message(last, self.tokenizer)
        } else {
            let mut added = TokenCounts::default();
            for part in &last.parts[parts_before..] {
                added.add(count_part(part, self.tokenizer));
            }
            added
        };
        if started && is_model_output(event) {
            self.response_start_total = before;
        }
        self.counts
            .last_mut()
            .expect("a count per message")
            .add(added);
        self.total.add(added);
        if let Some(usage) = &event.usage {
            self.anchor = Some(UsageAnchor {
                reported_prompt_tokens: usage.prompt_tokens,
                transcript_tokens_before: if is_model_output(event) {
                    self.response_start_total
                } else {
                    before
                },
                event_index: self.events,
                model: usage.model.clone(),
            });
        }
        self.events += 1;
    }

    /// The messages, in order.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Token counts per message, aligned with [`Transcript::messages`].
    pub fn message_counts(&self) -> &[TokenCounts] {
        &self.counts
    }

    /// The running totals.
    pub fn totals(&self) -> TokenCounts {
        self.total
    }

    /// How many events the transcript has taken in.
    pub fn event_count(&self) -> usize {
        self.events
    }

    /// The encoding counts are in.
    pub fn encoding(&self) -> Encoding {
        self.tokenizer.encoding()
    }

    /// The latest provider-reported usage, if any event carried one.
    pub fn anchor(&self) -> Option<&UsageAnchor> {
        self.anchor.as_ref()
    }
}

/// Whether the event is part of a model response (its usage then measures
/// the prompt that came before the response began).
fn is_model_output(event: &Event) -> bool {
    match event.trace_type {
        TraceType::Assistant | TraceType::Reasoning | TraceType::ToolCall => true,
        TraceType::User
        | TraceType::ToolResult
        | TraceType::System
        | TraceType::Summary
        | TraceType::TurnAborted => false,
    }
}
