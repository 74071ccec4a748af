//! OpenHands event streams: a JSON list of events, or an object holding one
//! under `events`, `trajectory` or `history`; or the agent SDK's ("V1")
//! events, as a JSON list or one a line (JSONL).
//!
//! Logs of the agent SDK (events told apart by a `kind` such as
//! `ActionEvent`) are read by [`sdk`], the classic events by [`classic`].
//! What both read of a source event (its fields, the `oh-<id>` its events'
//! ids start with, its time) is in [`source`].

mod classic;
mod sdk;
mod source;

use serde_json::Value;

use crate::imported::Imported;

pub(crate) use sdk::is_sdk_event;

/// `text` as OpenHands events, classic or the SDK's.
pub(crate) fn parse(text: &str) -> Result<Imported, String> {
    let root: Value = match serde_json::from_str(text) {
        Ok(root) => root,
        Err(_) if sdk::is_sdk_jsonl(text) => return Ok(sdk::parse_jsonl(text)),
        Err(e) => {
            return Err(format!(
            "not JSON: {e} (nor JSONL of OpenHands SDK events, one object with a \"kind\" a line)"
        ))
        }
    };
    // One SDK event alone: a one-line JSONL file, or an event saved on its own.
    if root.as_object().is_some_and(sdk::is_sdk_event) {
        return Ok(sdk::parse_list(std::slice::from_ref(&root)));
    }
    let events = event_list(&root).ok_or(
        "expected a list of OpenHands events, or an object with one under \"events\", \"trajectory\" or \"history\"",
    )?;
    if events
        .iter()
        .filter_map(Value::as_object)
        .any(sdk::is_sdk_event)
    {
        return Ok(sdk::parse_list(events));
    }
    Ok(classic::parse_events(events))
}

fn event_list(root: &Value) -> Option<&Vec<Value>> {
    match root {
        Value::Array(list) => Some(list),
        Value::Object(map) => ["events", "trajectory", "history"]
            .iter()
            .find_map(|key| map.get(*key).and_then(Value::as_array)),
        _ => None,
    }
}
