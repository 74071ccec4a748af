//! What the formats share in reading a record: its stable id, a JSONL line
//! as an object, a provider's reasoning block kept verbatim, and values too
//! deep for the engine kept as text.

use agentmem::base::json::{nesting, text_nesting, MAX_NESTING};
use agentmem::{Event, TraceType};

/// A transcript's values are kept whatever their depth: one that nests
/// deeper than [`MAX_NESTING`] is kept as its JSON text, which ingest
/// accepts, rather than refused with the whole file.
pub(crate) fn keep_too_deep_values_as_text(event: &mut Event) {
    let as_text_if_too_deep = |value: &mut serde_json::Value| {
        if nesting(value) > MAX_NESTING {
            *value = serde_json::Value::String(value.to_string());
        }
    };
    [
        &mut event.tool_args,
        &mut event.tool_result,
        &mut event.opaque,
    ]
    .into_iter()
    .flatten()
    .for_each(as_text_if_too_deep);
    let too_deep: Vec<(String, String)> = event
        .extra
        .iter()
        .filter(|(_, raw)| text_nesting(raw.get()) > MAX_NESTING)
        .map(|(key, raw)| (key.to_owned(), raw.get().to_owned()))
        .collect();
    for (key, text) in too_deep {
        event.extra.insert(key, serde_json::Value::String(text));
    }
}

/// One line of a JSONL transcript as the object it must be, or why it is not.
pub(crate) fn json_object_line(
    raw: &str,
) -> std::result::Result<serde_json::Map<String, serde_json::Value>, String> {
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(serde_json::Value::Object(record)) => Ok(record),
        Ok(_) => Err("not a JSON object".into()),
        Err(e) => Err(format!("not JSON: {e}")),
    }
}

/// A reasoning event reading `text`, with the provider's block kept verbatim
/// in `opaque`: a signed or encrypted block must go back unchanged.
pub(crate) fn verbatim_reasoning(text: &str, block: &serde_json::Value) -> Event {
    let mut event = Event::new(TraceType::Reasoning, text);
    event.opaque = Some(block.clone());
    event
}

/// A stable event id: `<prefix>-<position>-<hash of the record>`.
///
/// The position keeps ids of a growing file unchanged for the records already
/// seen; the hash keeps two different files from sharing ids.
pub(crate) fn stable_id(prefix: &str, position: usize, record: &str) -> String {
    format!(
        "{prefix}-{position}-{:08x}",
        agentmem::base::hash::fnv1a(record.as_bytes()) as u32
    )
}

/// `images` as an event's media, or none when there are none.
pub(crate) fn media(images: Vec<String>) -> Option<agentmem::base::event::Media> {
    (!images.is_empty()).then(|| agentmem::base::event::Media {
        images,
        ..Default::default()
    })
}
