//! Reading an event in one pass: each known field into its type, every
//! other one kept as the JSON text it was written as
//! ([`UnknownFields`](super::UnknownFields)).
//!
//! Derived code cannot do this: an unknown field gathered by `flatten` is
//! first read into a value, and a number beyond 64 bits becomes a float
//! there. Reading the fields one by one also skips that buffering.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{Event, TraceType};

/// A field an event has.
#[derive(Debug, Clone, Copy)]
enum Field {
    Id,
    Ts,
    TurnId,
    Seq,
    TraceType,
    Content,
    SourceEvent,
    Media,
    ToolName,
    ToolCallId,
    ToolArgs,
    ToolResult,
    ToolError,
    CorrelationId,
    Tags,
    ToolResultRef,
    Usage,
    Opaque,
    WorkingMemory,
}

impl Field {
    /// The fields' names, in declaration order.
    const NAMES: [&'static str; 19] = [
        "id",
        "ts",
        "turn_id",
        "seq",
        "trace_type",
        "content",
        "source_event",
        "media",
        "tool_name",
        "tool_call_id",
        "tool_args",
        "tool_result",
        "tool_error",
        "correlation_id",
        "tags",
        "tool_result_ref",
        "usage",
        "opaque",
        "working_memory",
    ];

    fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// A key of an event object: a field it has, or one kept as written.
enum Key {
    Known(Field),
    Unknown(String),
}

impl Key {
    fn of(name: &str) -> Key {
        let field = match name {
            "id" => Field::Id,
            "ts" => Field::Ts,
            "turn_id" => Field::TurnId,
            "seq" => Field::Seq,
            // `kind` is the neutral workload format's name for it.
            "trace_type" | "kind" => Field::TraceType,
            "content" => Field::Content,
            "source_event" => Field::SourceEvent,
            "media" => Field::Media,
            "tool_name" => Field::ToolName,
            "tool_call_id" => Field::ToolCallId,
            "tool_args" => Field::ToolArgs,
            "tool_result" => Field::ToolResult,
            "tool_error" => Field::ToolError,
            "correlation_id" => Field::CorrelationId,
            "tags" => Field::Tags,
            "tool_result_ref" => Field::ToolResultRef,
            "usage" => Field::Usage,
            "opaque" => Field::Opaque,
            "working_memory" => Field::WorkingMemory,
            other => return Key::Unknown(other.to_owned()),
        };
        Key::Known(field)
    }
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: de::Error>(self, name: &str) -> Result<Key, E> {
                Ok(Key::of(name))
            }
        }
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

/// `ts`: epoch seconds, or an RFC 3339 string.
struct Ts(f64);

impl<'de> Deserialize<'de> for Ts {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Ts, D::Error> {
        super::deserialize_ts(deserializer).map(Ts)
    }
}

/// `content`: text, or another value kept as its JSON.
struct Content(String);

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Content, D::Error> {
        super::deserialize_content(deserializer).map(Content)
    }
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Event, D::Error> {
        deserializer.deserialize_map(EventVisitor)
    }
}

struct EventVisitor;

impl<'de> Visitor<'de> for EventVisitor {
    type Value = Event;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an event: a JSON object with a \"trace_type\"")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Event, A::Error> {
        let mut event = Event::new(TraceType::User, "");
        let mut trace_type = None;
        let mut seen = Seen::default();
        while let Some(key) = map.next_key::<Key>()? {
            let field = match key {
                Key::Known(field) => field,
                Key::Unknown(name) => {
                    let raw: Box<RawValue> = map.next_value()?;
                    event.extra.insert_raw(name, raw);
                    continue;
                }
            };
            seen.first(field)?;
            match field {
                Field::Id => event.id = map.next_value()?,
                Field::Ts => event.ts = map.next_value::<Ts>()?.0,
                Field::TurnId => event.turn_id = map.next_value()?,
                Field::Seq => event.seq = map.next_value()?,
                Field::TraceType => trace_type = Some(map.next_value()?),
                Field::Content => event.content = map.next_value::<Content>()?.0,
                Field::SourceEvent => event.source_event = map.next_value()?,
                Field::Media => event.media = map.next_value()?,
                Field::ToolName => event.tool_name = map.next_value()?,
                Field::ToolCallId => event.tool_call_id = map.next_value()?,
                Field::ToolArgs => event.tool_args = map.next_value()?,
                Field::ToolResult => event.tool_result = map.next_value()?,
                Field::ToolError => event.tool_error = map.next_value()?,
                Field::CorrelationId => event.correlation_id = map.next_value()?,
                Field::Tags => event.tags = map.next_value()?,
                Field::ToolResultRef => event.tool_result_ref = map.next_value()?,
                Field::Usage => event.usage = map.next_value()?,
                Field::Opaque => event.opaque = map.next_value()?,
                Field::WorkingMemory => event.working_memory = map.next_value()?,
            }
        }
        event.trace_type = trace_type.ok_or_else(|| de::Error::missing_field("trace_type"))?;
        Ok(event)
    }
}

/// The fields met so far: each may come once.
#[derive(Default)]
struct Seen(u32);

impl Seen {
    fn first<E: de::Error>(&mut self, field: Field) -> Result<(), E> {
        let bit = 1 << field as u32;
        if self.0 & bit != 0 {
            return Err(E::duplicate_field(field.name()));
        }
        self.0 |= bit;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_field_reads_from_a_value_as_from_text() {
        let text = r#"{"id":"e1","ts":"2025-06-02T18:46:59.937Z","turn_id":"turn_0001","seq":2,"kind":"tool_result","content":{"ok":true},"source_event":"ingest","media":{"images":["a.png"]},"tool_name":"t","tool_call_id":"c1","tool_args":{"a":1},"tool_result":[1],"tool_error":"e","correlation_id":"r","tags":["x"],"tool_result_ref":"evicted/c1.txt","usage":{"prompt_tokens":3,"completion_tokens":4},"opaque":{"o":1},"future":[1,{"k":null}]}"#;
        let from_text: Event = serde_json::from_str(text).unwrap();
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        let from_value: Event = serde_json::from_value(value).unwrap();
        assert_eq!(from_text, from_value);
        assert_eq!(from_text.trace_type, TraceType::ToolResult);
        assert_eq!(from_text.content, r#"{"ok":true}"#);
        assert_eq!(
            from_text.extra.raw("future").unwrap().get(),
            r#"[1,{"k":null}]"#
        );
    }

    #[test]
    fn a_field_given_twice_or_a_missing_trace_type_is_refused() {
        let twice = serde_json::from_str::<Event>(r#"{"trace_type":"user","kind":"assistant"}"#);
        assert!(twice
            .unwrap_err()
            .to_string()
            .contains("duplicate field `trace_type`"));
        let missing = serde_json::from_str::<Event>(r#"{"content":"hi"}"#);
        assert!(missing
            .unwrap_err()
            .to_string()
            .contains("missing field `trace_type`"));
    }
}
