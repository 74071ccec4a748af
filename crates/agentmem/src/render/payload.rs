//! A rendered request body that shares its message list.
//!
//! A long session's context is mostly the same from one call to the next:
//! the turns already sent, and the new ones at the end. So the list is kept
//! as segments of already-serialized entries, shared between calls, and the
//! body is written out only when it is sent. Preparing a call then costs what
//! changed, not what the context holds.

use std::fmt;
use std::ops::Index;
use std::sync::{Arc, OnceLock};

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{raw_entries, Frame, Place, Target};
use crate::base::message::MessageRef;

/// A run of the message list's entries, serialized once.
///
/// Segments rendered apart join into the list a whole render would give only
/// when no entry spans a cut: a message of one side must surely end before it
/// and one of the other side surely begin after it, with no tool call left
/// open across it (Anthropic and Gemini merge neighbours of one side; Gemini
/// names results after their calls). The session cuts its view only there,
/// see `crate::pipeline::segments`.
#[derive(Debug)]
pub struct Segment {
    entries: Vec<Box<RawValue>>,
}

/// A message list as segments, shared by the payloads sent from it and the
/// cache that made it (see [`crate::pipeline::segments::RenderCache`]).
pub(crate) type SegmentList = Arc<Vec<Arc<Segment>>>;

impl Segment {
    /// `messages` rendered for `target`, at `place` in the list.
    pub fn new(target: Target, messages: &[MessageRef<'_>], place: Place) -> Segment {
        Segment {
            entries: raw_entries(target, messages, place),
        }
    }

    /// How many list entries the segment holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the segment renders to no entries at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The segment's list entries, each as its JSON text.
    pub fn entries(&self) -> &[Box<RawValue>] {
        &self.entries
    }
}

/// A request body for one provider's API, ready to send: serialize it (it
/// implements [`Serialize`]) or read it as a [`Value`].
///
/// Cloning is cheap: the message list is shared, not copied. Indexing
/// (`payload["messages"]`) builds the whole [`Value`] once, on first use.
/// The list's end is the one part a body may send otherwise than its
/// segments hold it: a cache mark, or the live context joined to the last
/// entry, goes on a copy, so the shared segment stays as rendered for the
/// calls in which it is not last.
///
/// ```
/// use agentmem::base::message::{Message, Role};
/// use agentmem::render::{render, Payload, PromptCache, RenderRequest, Target};
/// let messages = [Message::text(Role::User, "hi")];
/// let request = RenderRequest {
///     model: "gpt-4.1",
///     system: Some("Be brief."),
///     messages: &messages,
///     tools: &[],
///     max_output_tokens: 1024,
///     cache: PromptCache::On,
///     live_context: None,
/// };
/// let payload = Payload::render(Target::OpenAiChat, &request);
/// assert_eq!(payload["messages"][1]["content"], "hi");
/// assert_eq!(payload.to_value(), render(Target::OpenAiChat, &request));
/// ```
#[derive(Clone)]
pub struct Payload {
    frame: Frame,
    segments: SegmentList,
    /// The segments' last entry as sent, when the list's end changes it.
    closed_last: Option<Box<RawValue>>,
    /// The entries after the segments' (the live context's, for some APIs).
    closing: Vec<Value>,
    value: OnceLock<Value>,
}

impl Payload {
    /// A body of `frame` around `segments`, in order.
    pub fn new(mut frame: Frame, segments: SegmentList) -> Payload {
        let (closed_last, closing) = close_list(&mut frame, &segments);
        Payload {
            frame,
            segments,
            closed_last,
            closing,
            value: OnceLock::new(),
        }
    }

    /// `request` rendered whole for `target`, as one segment.
    pub fn render(target: Target, request: &super::RenderRequest<'_>) -> Payload {
        let messages: Vec<MessageRef<'_>> = request.messages.iter().map(MessageRef::from).collect();
        let segment = Segment::new(target, &messages, Place::Start);
        Payload::new(
            super::frame(target, request),
            Arc::new(vec![Arc::new(segment)]),
        )
    }

    /// The body taken apart, for a caller that builds its own objects from
    /// it (a language binding) and keeps what it built for each segment: a
    /// segment the next call shares is the same `Arc`, so it need not be
    /// built again.
    pub fn parts(&self) -> Parts<'_> {
        Parts {
            fields: &self.frame.head,
            list_key: self.frame.list_key,
            lead: &self.frame.lead,
            segments: &self.segments,
            last_entry: self.closed_last.as_deref(),
            closing: &self.closing,
        }
    }

    /// The body as a JSON value (built once, then cloned).
    pub fn to_value(&self) -> Value {
        self.value().clone()
    }

    /// How many entries the message list holds.
    pub(crate) fn list_len(&self) -> usize {
        let segments: usize = self.segments.iter().map(|s| s.len()).sum();
        self.frame.lead.len() + segments + self.closing.len()
    }

    fn value(&self) -> &Value {
        self.value.get_or_init(|| {
            serde_json::to_value(self).expect("a payload of JSON values always serializes")
        })
    }
}

/// A [`Payload`]'s body in the order it is written (see [`Payload::parts`]):
/// the fields before the message list, the list, the fields after it. The
/// list is `lead`, then every segment's entries (the last of them replaced
/// by `last_entry` when there is one), then `closing`.
#[derive(Debug, Clone, Copy)]
pub struct Parts<'a> {
    /// The body's fields other than the list, in the order they are written.
    pub fields: &'a Map<String, Value>,
    /// The list's field (`messages`, `input` or `contents`).
    pub list_key: &'static str,
    /// The list's entries before the segments' (Chat Completions' system message).
    pub lead: &'a [Value],
    /// The segments, in order; one shared with an earlier payload is the same `Arc`.
    pub segments: &'a [Arc<Segment>],
    /// The segments' last entry as this body sends it, when the list's end changes it.
    pub last_entry: Option<&'a RawValue>,
    /// The list's entries after the segments' (the live context's, for some APIs).
    pub closing: &'a [Value],
}

impl Parts<'_> {
    /// How many of [`Parts::fields`] are written before the list (a body
    /// writes its fields in key order, the list among them).
    pub fn fields_before_list(&self) -> usize {
        self.fields
            .keys()
            .take_while(|key| key.as_str() <= self.list_key)
            .count()
    }
}

impl Serialize for Payload {
    /// The body's fields in key order (as a [`Value`] object writes them),
    /// the message list streamed from its segments.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let parts = self.parts();
        let before = parts.fields_before_list();
        let mut map = serializer.serialize_map(Some(parts.fields.len() + 1))?;
        for (key, value) in parts.fields.iter().take(before) {
            map.serialize_entry(key, value)?;
        }
        map.serialize_entry(parts.list_key, &List(self))?;
        for (key, value) in parts.fields.iter().skip(before) {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// Ends the list as `frame` wants it (see [`super::RenderRequest::live_context`]):
/// a lead entry is changed in place, a segment's on a copy, returned first;
/// then the entries that follow the last.
fn close_list(frame: &mut Frame, segments: &[Arc<Segment>]) -> (Option<Box<RawValue>>, Vec<Value>) {
    if frame.end.is_plain() {
        return (None, Vec::new());
    }
    let Some(last) = segments.iter().rev().find_map(|s| s.entries.last()) else {
        let closing = frame.end.close(&mut frame.head, frame.lead.last_mut());
        return (None, closing);
    };
    let mut entry: Value = serde_json::from_str(last.get()).expect("an entry is JSON");
    let closing = frame.end.close(&mut frame.head, Some(&mut entry));
    let entry = crate::base::json::to_raw_value(&entry);
    (Some(entry), closing)
}

/// The message list: the lead entries, then every segment's.
struct List<'a>(&'a Payload);

impl Serialize for List<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let payload = self.0;
        let mut seq = serializer.serialize_seq(Some(payload.list_len()))?;
        for entry in &payload.frame.lead {
            seq.serialize_element(entry)?;
        }
        let mut entries = payload.segments.iter().flat_map(|s| &s.entries).peekable();
        while let Some(entry) = entries.next() {
            match &payload.closed_last {
                Some(closed) if entries.peek().is_none() => seq.serialize_element(closed)?,
                Some(_) | None => seq.serialize_element(entry)?,
            }
        }
        for entry in &payload.closing {
            seq.serialize_element(entry)?;
        }
        seq.end()
    }
}

impl Index<&str> for Payload {
    type Output = Value;

    fn index(&self, key: &str) -> &Value {
        &self.value()[key]
    }
}

impl PartialEq for Payload {
    fn eq(&self, other: &Payload) -> bool {
        self.value() == other.value()
    }
}

impl PartialEq<Value> for Payload {
    fn eq(&self, other: &Value) -> bool {
        self.value() == other
    }
}

impl PartialEq<Payload> for Value {
    fn eq(&self, other: &Payload) -> bool {
        self == other.value()
    }
}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.value(), f)
    }
}

impl fmt::Display for Payload {
    /// The body as compact JSON, as it is sent.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = serde_json::to_string(self).map_err(|_| fmt::Error)?;
        f.write_str(&text)
    }
}
