//! What the classic and the SDK readers share of a source event: its fields,
//! the `oh-<id>` its events' ids start with, and its time.

use agentmem::base::event::parse_rfc3339;
use serde_json::{Map, Value};

use crate::record::stable_id;

/// One source event and what its events share.
pub(super) struct Source<'a> {
    pub(super) map: &'a Map<String, Value>,
    /// `oh-<id>`, or a stable id when the event has none.
    pub(super) base_id: String,
}

impl<'a> Source<'a> {
    pub(super) fn new(map: &'a Map<String, Value>, position: usize, record: &Value) -> Self {
        let base_id = base_id(map, position, record);
        Source { map, base_id }
    }

    pub(super) fn text(&self, key: &str) -> &'a str {
        self.map
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

/// An OpenHands timestamp; without a zone (`2024-11-05T12:34:56.789012`, as
/// OpenHands writes them) it is read as UTC. `0.0` when there is none.
pub(super) fn timestamp(text: &str) -> f64 {
    parse_rfc3339(text)
        .or_else(|| parse_rfc3339(&format!("{text}Z")))
        .unwrap_or(0.0)
}

/// `oh-<id>` for an event with an id (either format), else a stable id of
/// the record at `position`: what the ids of its events start with.
fn base_id(map: &Map<String, Value>, position: usize, record: &Value) -> String {
    match map.get("id").and_then(id_key) {
        Some(id) => format!("oh-{id}"),
        None => stable_id("oh", position, &record.to_string()),
    }
}

/// An event id (a number, sometimes a string) as a map key.
pub(super) fn id_key(id: &Value) -> Option<String> {
    match id {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}
