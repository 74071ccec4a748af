//! The fields of an event this version does not know, kept as written.

use std::collections::BTreeMap;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

/// Fields of an event this version does not know, each kept as the JSON
/// text it came as, whitespace aside: a number too large for 64 bits, or a
/// float's every digit, goes back out exactly as written. Written in key
/// order, as `serde_json` writes a map.
///
/// ```
/// use agentmem::Event;
/// let line = r#"{"trace_type":"user","vendor":123456789012345678901234567890}"#;
/// let event: Event = serde_json::from_str(line).unwrap();
/// assert_eq!(event.extra.raw("vendor").unwrap().get(), "123456789012345678901234567890");
/// assert!(serde_json::to_string(&event).unwrap().contains(r#""vendor":123456789012345678901234567890"#));
/// ```
#[derive(Debug, Clone, Default)]
pub struct UnknownFields(BTreeMap<String, Box<RawValue>>);

impl UnknownFields {
    /// The field `key` as a JSON value (a number beyond what a value holds
    /// becomes the nearest float there; [`UnknownFields::raw`] has the text).
    pub fn get(&self, key: &str) -> Option<Value> {
        self.0
            .get(key)
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
    }

    /// The field `key` as the JSON text it was written as.
    pub fn raw(&self, key: &str) -> Option<&RawValue> {
        self.0.get(key).map(|raw| &**raw)
    }

    /// Sets the field `key` to `value`.
    pub fn insert(&mut self, key: impl Into<String>, value: Value) {
        self.0
            .insert(key.into(), crate::base::json::to_raw_value(&value));
    }

    /// Sets the field `key` to the JSON text `raw`, made compact.
    pub(crate) fn insert_raw(&mut self, key: String, raw: Box<RawValue>) {
        let raw = match compact(raw.get()) {
            Some(compacted) => {
                RawValue::from_string(compacted).expect("compacting keeps JSON valid")
            }
            None => raw,
        };
        self.0.insert(key, raw);
    }

    /// The fields in key order, each with its JSON text.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &RawValue)> {
        self.0.iter().map(|(key, raw)| (key.as_str(), &**raw))
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl PartialEq for UnknownFields {
    fn eq(&self, other: &UnknownFields) -> bool {
        self.0.len() == other.0.len()
            && self
                .iter()
                .zip(other.iter())
                .all(|((a, raw_a), (b, raw_b))| a == b && raw_a.get() == raw_b.get())
    }
}

impl Serialize for UnknownFields {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, raw) in &self.0 {
            map.serialize_entry(key, raw)?;
        }
        map.end()
    }
}

/// `json` without the whitespace between its tokens, or `None` when it has
/// none: a log line must stay one line, and equal values one text.
fn compact(json: &str) -> Option<String> {
    if !json
        .bytes()
        .any(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        return None;
    }
    let (mut in_string, mut escaped) = (false, false);
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match (in_string, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (_, false, '"') => in_string = !in_string,
            (false, _, ' ' | '\t' | '\n' | '\r') => continue,
            _ => {}
        }
        out.push(c);
    }
    (out.len() < json.len()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compacting_drops_the_space_between_tokens_and_keeps_the_space_in_strings() {
        let json = "{ \"a b\" : [ 1 ,\n\t2.50 ] , \"q\": \"say \\\" x \\\\\" }";
        assert_eq!(
            compact(json).unwrap(),
            r#"{"a b":[1,2.50],"q":"say \" x \\"}"#
        );
        assert_eq!(compact(r#"{"a":"b c"}"#), None);
    }
}
