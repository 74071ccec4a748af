//! Provider-neutral messages: the shape a transcript takes before a renderer
//! turns it into one provider's request payload.
//!
//! Events group into messages the way every chat API expects: an assistant
//! message holds the text, reasoning and tool calls of one model response;
//! each tool result is a message of its own (renderers that need results
//! inside a user turn, like Anthropic's, merge them).

use std::borrow::Cow;

use serde_json::Value;

use crate::base::event::{Event, TraceType};

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// System instructions.
    System,
    /// The user.
    User,
    /// The model.
    Assistant,
    /// A tool result.
    Tool,
}

/// One piece of a message.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Plain text.
    Text(String),
    /// An image reference: a URL, a data URI or a path.
    Image(String),
    /// The model asked for a tool.
    ToolCall {
        /// The call id a result answers.
        id: String,
        /// The tool's name.
        name: String,
        /// The call's arguments.
        arguments: Value,
    },
    /// What a tool returned.
    ToolResult {
        /// The id of the call this answers.
        call_id: String,
        /// The tool's name, when known (Gemini needs it to answer a call).
        name: Option<String>,
        /// What the result says.
        content: String,
        /// Whether the tool failed.
        is_error: bool,
    },
    /// Model reasoning; `opaque` is the provider item to send back verbatim.
    Reasoning {
        /// The reasoning text.
        text: String,
        /// The provider item to send back verbatim.
        opaque: Option<Value>,
    },
}

/// A message: a role and its parts.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Who speaks it.
    pub role: Role,
    /// Its pieces, in order.
    pub parts: Vec<Part>,
}

impl Message {
    /// A message of one text part.
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Message {
            role,
            parts: vec![Part::Text(text.into())],
        }
    }

    /// The text parts joined by newlines.
    pub(crate) fn joined_text(&self) -> String {
        let texts: Vec<&str> = self
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Text(t) => Some(t.as_str()),
                Part::Image(_)
                | Part::ToolCall { .. }
                | Part::ToolResult { .. }
                | Part::Reasoning { .. } => None,
            })
            .collect();
        texts.join("\n")
    }
}

/// The fixed prefix of a summary message, so a later compaction recognises it.
pub const SUMMARY_PREFIX: &str = "[SUMMARY OF EARLIER CONVERSATION]";

/// The tag of a summary shown as a shadow exchange: a user line asking for
/// the summary, then the summary as the assistant's answer (the `summarize`
/// strategy's form); untagged summaries are one user message.
pub(crate) const SHADOW_PAIR_TAG: &str = "shadow_pair";

/// The user line of a shadow exchange.
pub(crate) const SHADOW_USER_LINE: &str = "Summarize the conversation so far.";

/// Whether `event` is a summary shown as a shadow exchange.
pub(crate) fn is_shadow_pair(event: &Event) -> bool {
    event.trace_type == TraceType::Summary && event.tags.iter().any(|t| t == SHADOW_PAIR_TAG)
}

/// One piece of a message, borrowed from the event it comes from: what
/// counting and the renderers that write bytes read, without copying the
/// event's texts. Its variants are [`Part`]'s.
#[derive(Debug, Clone, PartialEq)]
pub enum PartRef<'a> {
    /// Plain text.
    Text(Cow<'a, str>),
    /// An image reference.
    Image(&'a str),
    /// The model asked for a tool.
    ToolCall {
        /// The call id.
        id: &'a str,
        /// The tool's name.
        name: &'a str,
        /// The call's arguments.
        arguments: Cow<'a, Value>,
    },
    /// What a tool returned.
    ToolResult {
        /// The id of the call this answers.
        call_id: &'a str,
        /// The tool's name, when known.
        name: Option<&'a str>,
        /// What the result says ([`Event::text`]).
        content: Cow<'a, str>,
        /// Whether the tool failed.
        is_error: bool,
    },
    /// Model reasoning.
    Reasoning {
        /// The reasoning text.
        text: &'a str,
        /// The provider item to send back verbatim.
        opaque: Option<&'a Value>,
    },
}

impl PartRef<'_> {
    /// The part as a message holds it.
    pub(crate) fn to_part(&self) -> Part {
        match self {
            PartRef::Text(text) => Part::Text(text.clone().into_owned()),
            PartRef::Image(url) => Part::Image((*url).to_owned()),
            PartRef::ToolCall {
                id,
                name,
                arguments,
            } => Part::ToolCall {
                id: (*id).to_owned(),
                name: (*name).to_owned(),
                arguments: arguments.clone().into_owned(),
            },
            PartRef::ToolResult {
                call_id,
                name,
                content,
                is_error,
            } => Part::ToolResult {
                call_id: (*call_id).to_owned(),
                name: name.map(str::to_owned),
                content: content.clone().into_owned(),
                is_error: *is_error,
            },
            PartRef::Reasoning { text, opaque } => Part::Reasoning {
                text: (*text).to_owned(),
                opaque: opaque.cloned(),
            },
        }
    }
}

impl<'a> From<&'a Part> for PartRef<'a> {
    fn from(part: &'a Part) -> PartRef<'a> {
        match part {
            Part::Text(text) => PartRef::Text(Cow::Borrowed(text)),
            Part::Image(url) => PartRef::Image(url),
            Part::ToolCall {
                id,
                name,
                arguments,
            } => PartRef::ToolCall {
                id,
                name,
                arguments: Cow::Borrowed(arguments),
            },
            Part::ToolResult {
                call_id,
                name,
                content,
                is_error,
            } => PartRef::ToolResult {
                call_id,
                name: name.as_deref(),
                content: Cow::Borrowed(content),
                is_error: *is_error,
            },
            Part::Reasoning { text, opaque } => PartRef::Reasoning {
                text,
                opaque: opaque.as_ref(),
            },
        }
    }
}

/// Where an event goes when messages are built.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Placement<'a> {
    /// Joins the last message if it has the same role and can take it, else starts one.
    Join(Role, PartRef<'a>),
    /// Always starts a message of its own.
    Alone(Role, PartRef<'a>),
}

/// Where `event` belongs in a message list.
pub(crate) fn placement(event: &Event) -> Placement<'_> {
    let text = || PartRef::Text(Cow::Borrowed(&event.content));
    match event.trace_type {
        TraceType::System => Placement::Alone(Role::System, text()),
        TraceType::User => Placement::Alone(Role::User, text()),
        TraceType::Assistant => Placement::Join(Role::Assistant, text()),
        TraceType::Reasoning => Placement::Join(
            Role::Assistant,
            PartRef::Reasoning {
                text: &event.content,
                opaque: event.opaque.as_ref(),
            },
        ),
        TraceType::ToolCall => Placement::Join(
            Role::Assistant,
            PartRef::ToolCall {
                id: event.tool_call_id.as_deref().unwrap_or_default(),
                name: event.tool_name.as_deref().unwrap_or_default(),
                arguments: event
                    .tool_args
                    .as_ref()
                    .map_or_else(|| Cow::Owned(Value::Object(Default::default())), Cow::Borrowed),
            },
        ),
        TraceType::ToolResult => Placement::Alone(
            Role::Tool,
            PartRef::ToolResult {
                call_id: event.tool_call_id.as_deref().unwrap_or_default(),
                name: event.tool_name.as_deref(),
                content: event.text(),
                is_error: event.tool_error.is_some(),
            },
        ),
        TraceType::Summary => Placement::Alone(
            Role::User,
            PartRef::Text(Cow::Owned(format!("{SUMMARY_PREFIX}\n{}", event.content))),
        ),
        // Outside the model's view, so `push_event` never places one; were
        // it placed, it would stand alone as a note of what changed.
        TraceType::WorkingMemory => Placement::Alone(Role::System, text()),
        TraceType::TurnAborted => Placement::Alone(
            Role::User,
            PartRef::Text(Cow::Owned(format!(
                "<turn_aborted>The user interrupted the previous turn before it finished.{}</turn_aborted>",
                if event.content.is_empty() { String::new() } else { format!(" {}", event.content) }
            ))),
        ),
    }
}

/// The role of the message `event` belongs to (as [`placement`] places it,
/// without building the part).
pub(crate) fn role_of(event: &Event) -> Role {
    match event.trace_type {
        TraceType::System | TraceType::WorkingMemory => Role::System,
        TraceType::User | TraceType::Summary | TraceType::TurnAborted => Role::User,
        TraceType::Assistant | TraceType::Reasoning | TraceType::ToolCall => Role::Assistant,
        TraceType::ToolResult => Role::Tool,
    }
}

/// The role of the last message `event` adds: the assistant's, for a
/// shadow-pair summary; else [`role_of`].
fn last_role_of(event: &Event) -> Role {
    if is_shadow_pair(event) {
        Role::Assistant
    } else {
        role_of(event)
    }
}

/// How many messages `event` starts when it does not join the one before:
/// two for a shadow-pair summary, else one.
pub(crate) fn messages_started(event: &Event) -> usize {
    if is_shadow_pair(event) {
        2
    } else {
        1
    }
}

/// Whether `event` starts a new message after `previous` (the last event in
/// the model's view before it), by the same rule as [`push_event`].
pub(crate) fn starts_message(previous: Option<&Event>, event: &Event) -> bool {
    !event.trace_type.is_model_output()
        || previous.is_none_or(|p| last_role_of(p) != role_of(event))
}

/// The parts `event` adds to its message, borrowed from it: its own part,
/// then its images (a shadow-pair summary adds the user line too).
pub fn parts_of(event: &Event) -> Vec<PartRef<'_>> {
    if is_shadow_pair(event) {
        return vec![
            PartRef::Text(Cow::Borrowed(SHADOW_USER_LINE)),
            PartRef::Text(Cow::Owned(format!("{SUMMARY_PREFIX}\n{}", event.content))),
        ];
    }
    let own = match placement(event) {
        Placement::Join(_, part) | Placement::Alone(_, part) => part,
    };
    let images = event
        .media
        .iter()
        .flat_map(|m| m.images.iter().map(|url| PartRef::Image(url)));
    std::iter::once(own).chain(images).collect()
}

/// A message borrowed from the events it groups: what a renderer that
/// writes bytes reads, without copying the events' texts.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageRef<'a> {
    /// Who speaks it.
    pub role: Role,
    /// Its pieces, in order.
    pub parts: Vec<PartRef<'a>>,
}

impl MessageRef<'_> {
    /// The message as renderers of values take it.
    pub(crate) fn to_message(&self) -> Message {
        Message {
            role: self.role,
            parts: self.parts.iter().map(PartRef::to_part).collect(),
        }
    }
}

impl<'a> From<&'a Message> for MessageRef<'a> {
    fn from(message: &'a Message) -> MessageRef<'a> {
        MessageRef {
            role: message.role,
            parts: message.parts.iter().map(PartRef::from).collect(),
        }
    }
}

/// Adds `event` to `messages`; returns whether it started a new message.
/// Events outside the model's view (a subagent's own) add nothing.
///
/// An assistant part joins the last message when that is an assistant message:
/// the same model response. A tool result or a user message in between starts
/// a new one.
pub(crate) fn push_event<'a>(messages: &mut Vec<MessageRef<'a>>, event: &'a Event) -> bool {
    if !event.is_in_model_view() {
        return false;
    }
    let started = place(messages, event);
    if let (Some(media), Some(last)) = (&event.media, messages.last_mut()) {
        last.parts
            .extend(media.images.iter().map(|url| PartRef::Image(url)));
    }
    started
}

fn place<'a>(messages: &mut Vec<MessageRef<'a>>, event: &'a Event) -> bool {
    let text = |role, text| MessageRef {
        role,
        parts: vec![PartRef::Text(text)],
    };
    if is_shadow_pair(event) {
        messages.push(text(Role::User, Cow::Borrowed(SHADOW_USER_LINE)));
        messages.push(text(
            Role::Assistant,
            Cow::Owned(format!("{SUMMARY_PREFIX}\n{}", event.content)),
        ));
        return true;
    }
    match placement(event) {
        Placement::Join(role, part) => match messages.last_mut() {
            Some(last) if last.role == role => {
                last.parts.push(part);
                false
            }
            _ => {
                messages.push(MessageRef {
                    role,
                    parts: vec![part],
                });
                true
            }
        },
        Placement::Alone(role, part) => {
            messages.push(MessageRef {
                role,
                parts: vec![part],
            });
            true
        }
    }
}

/// Groups `events` into messages borrowed from them: [`messages_from_events`]
/// without copying a text.
///
/// ```
/// use agentmem::Event;
/// use agentmem::base::message::{message_refs, PartRef, Role};
/// let events = [Event::user("list files"), Event::tool_call("c1", "ls", serde_json::json!({}))];
/// let messages = message_refs(&events);
/// assert_eq!(messages[1].role, Role::Assistant);
/// assert!(matches!(messages[1].parts[0], PartRef::ToolCall { id: "c1", .. }));
/// ```
pub fn message_refs<'a>(events: impl IntoIterator<Item = &'a Event>) -> Vec<MessageRef<'a>> {
    let mut messages = Vec::new();
    for event in events {
        push_event(&mut messages, event);
    }
    messages
}

/// Groups `events` into messages.
///
/// ```
/// use agentmem::Event;
/// use agentmem::base::message::{messages_from_events, Role};
/// let messages = messages_from_events(&[
///     Event::user("list files"),
///     Event::assistant("Listing."),
///     Event::tool_call("c1", "ls", serde_json::json!({})),
///     Event::tool_result("c1", "a.rs"),
/// ]);
/// assert_eq!(messages.len(), 3);
/// assert_eq!(messages[1].role, Role::Assistant);
/// assert_eq!(messages[1].parts.len(), 2);
/// ```
pub fn messages_from_events<'a>(events: impl IntoIterator<Item = &'a Event>) -> Vec<Message> {
    message_refs(events)
        .iter()
        .map(MessageRef::to_message)
        .collect()
}
