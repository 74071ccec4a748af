//! Compact JSON for the hot paths: the same bytes `serde_json` writes, with
//! strings escaped by SIMD kernels.
//!
//! Nearly every byte the engine writes per turn is message text: once in
//! the log line, once in the rendered request. `serde_json` escapes a string
//! a byte at a time, and on the shared workload that loop was the largest
//! cost of a turn that needs no counting. Only strings take the fast path;
//! numbers and everything else are still written by `serde_json`, so the
//! output is byte for byte what `serde_json::to_writer` gives (tests compare
//! the two on every kind of character).

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// Appends `text` as a JSON string, quotes included.
///
/// ```
/// let mut out = Vec::new();
/// agentmem::base::json::write_str(&mut out, "line\n\"quoted\"");
/// assert_eq!(out, br#""line\n\"quoted\"""#);
/// ```
pub fn write_str(out: &mut Vec<u8>, text: &str) {
    json_escape_simd::escape_into(text, out);
}

/// Appends `value` as compact JSON.
///
/// ```
/// let value = serde_json::json!({"b": [1, 2.5, null], "a": "x\ty"});
/// let mut out = Vec::new();
/// agentmem::base::json::write_value(&mut out, &value);
/// assert_eq!(out, serde_json::to_vec(&value).unwrap());
/// ```
pub fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::String(text) => write_str(out, text),
        Value::Array(items) => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => write_map(out, map),
        Value::Null | Value::Bool(_) | Value::Number(_) => write_small(out, value),
    }
}

/// Appends `map` as a JSON object.
pub(crate) fn write_map(out: &mut Vec<u8>, map: &Map<String, Value>) {
    out.push(b'{');
    for (index, (key, value)) in map.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        write_entry(out, key, value);
    }
    out.push(b'}');
}

/// Appends `"key":value`, without a separator before it.
pub(crate) fn write_entry(out: &mut Vec<u8>, key: &str, value: &Value) {
    write_str(out, key);
    out.push(b':');
    write_value(out, value);
}

/// Appends a value with no long strings in it (a number, a small struct)
/// as `serde_json` writes it.
pub(crate) fn write_small<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    serde_json::to_writer(out, value).expect("writing JSON to memory cannot fail");
}

/// `value` as compact JSON text, as `Value::to_string` writes it (which goes
/// through `fmt` and escapes a byte at a time).
///
/// ```
/// let value = serde_json::json!({"path": "src/main.rs", "lines": [1, 20]});
/// assert_eq!(agentmem::base::json::to_string(&value), value.to_string());
/// ```
pub fn to_string(value: &Value) -> String {
    written(|out| write_value(out, value))
}

/// What `write` appends to an empty buffer, as text: written in a scratch
/// buffer, then copied out at its size.
///
/// `write` must append only through this module's writers (or ASCII
/// punctuation), so the bytes are UTF-8 by construction. A `write` that
/// itself asks for text written this way gets a buffer of its own.
#[allow(unsafe_code)]
pub(crate) fn written(write: impl FnOnce(&mut Vec<u8>)) -> String {
    let copy_out = |out: &mut Vec<u8>| {
        out.clear();
        write(out);
        debug_assert!(std::str::from_utf8(out).is_ok());
        // SAFETY: every byte came from a `&str`, from `serde_json`'s own
        // output, or is ASCII punctuation; checking again would cost a pass
        // over every byte of every entry.
        unsafe { String::from_utf8_unchecked(out.clone()) }
    };
    SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut out) => {
            let text = copy_out(&mut out);
            if out.capacity() > SCRATCH_KEPT_BYTES {
                *out = Vec::new();
            }
            text
        }
        Err(_) => copy_out(&mut Vec::new()),
    })
}

/// `value` as a raw JSON value, for lists kept already serialized.
///
/// ```
/// let value = serde_json::json!({"role": "user", "content": "hi"});
/// let raw = agentmem::base::json::to_raw_value(&value);
/// assert_eq!(raw.get(), r#"{"content":"hi","role":"user"}"#);
/// ```
pub fn to_raw_value(value: &Value) -> Box<RawValue> {
    raw_written(|out| write_value(out, value))
}

/// The one compact JSON value `write` appends, as a raw value: for entries
/// written straight from their parts, without building a [`Value`] first.
///
/// `write` must append exactly one compact JSON value through this
/// module's writers and ASCII punctuation (checked in debug builds).
#[allow(unsafe_code)]
pub(crate) fn raw_written(write: impl FnOnce(&mut Vec<u8>)) -> Box<RawValue> {
    // SAFETY: by the contract above, the text is one compact JSON value with
    // no surrounding whitespace, as `RawValue` expects; serde_json checks it
    // again in debug builds, and the tests compare such output with its own.
    unsafe { RawValue::from_string_unchecked(written(write)) }
}

/// Appends `texts` joined by `separator` as one JSON string. A single text,
/// the usual case, is written without being copied first.
///
/// ```
/// let mut out = Vec::new();
/// agentmem::base::json::write_joined(&mut out, &["a\"b", "c"], "\n");
/// assert_eq!(out, serde_json::to_vec("a\"b\nc").unwrap());
/// ```
pub fn write_joined(out: &mut Vec<u8>, texts: &[&str], separator: &str) {
    match texts {
        [] => write_str(out, ""),
        [text] => write_str(out, text),
        _ => write_str(out, &texts.join(separator)),
    }
}

/// The largest scratch buffer kept between values.
const SCRATCH_KEPT_BYTES: usize = 1 << 20;

thread_local! {
    /// Where values are written before they are copied out at their size:
    /// escaping reserves room for the worst case (six bytes a character),
    /// which would otherwise be allocated, then shrunk, for every value.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The deepest nesting of arrays and objects a JSON value the engine keeps
/// may have: tool arguments and results, unknown event fields, provider
/// items, working-memory patches, documents and schemas.
///
/// The engine stores such a value inside wrappers of its own (an event in a
/// log line, that event in a compaction snapshot, a patch in an update
/// event), and JSON readers refuse to nest deeper than 128 levels. Every
/// value is held to this limit where it enters, so whatever wraps it later
/// stays readable; a deeper one is refused with an error that says so, or,
/// where it arrived as text (imported tool arguments), kept as that text.
pub const MAX_NESTING: usize = 64;

/// What kind of JSON value `value` is, in words for a message: `null`,
/// `a boolean`, `a number`, `a string`, `a list`, `an object`.
///
/// ```
/// assert_eq!(agentmem::base::json::kind_of(&serde_json::json!([1])), "a list");
/// ```
pub fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// How many levels of arrays and objects `value` nests (0 for a scalar).
/// Walks without recursion, so any depth can be measured.
///
/// ```
/// use agentmem::base::json::nesting;
/// assert_eq!(nesting(&serde_json::json!("text")), 0);
/// assert_eq!(nesting(&serde_json::json!({"a": [1, {"b": []}]})), 4);
/// ```
pub fn nesting(value: &Value) -> usize {
    let mut deepest = 0;
    let mut pending = vec![(value, 1)];
    while let Some((value, depth)) = pending.pop() {
        match value {
            Value::Array(items) => pending.extend(items.iter().map(|item| (item, depth + 1))),
            Value::Object(map) => pending.extend(map.values().map(|item| (item, depth + 1))),
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => continue,
        }
        deepest = deepest.max(depth);
    }
    deepest
}

/// Why `value` may not be kept, when it nests deeper than [`MAX_NESTING`].
///
/// ```
/// let deep = (0..70).fold(serde_json::json!(1), |inner, _| serde_json::json!([inner]));
/// let reason = agentmem::base::json::too_deep("tool_args", &deep).unwrap();
/// assert!(reason.contains("70 levels"), "{reason}");
/// assert!(agentmem::base::json::too_deep("tool_args", &serde_json::json!([[1]])).is_none());
/// ```
pub fn too_deep(what: &str, value: &Value) -> Option<String> {
    let levels = nesting(value);
    (levels > MAX_NESTING).then(|| too_deep_reason(what, levels))
}

/// How many levels of arrays and objects the JSON text `text` nests,
/// counted on its brackets outside strings (without parsing it).
///
/// ```
/// assert_eq!(agentmem::base::json::text_nesting(r#"{"a": [1, "]]]", {"b": []}]}"#), 4);
/// assert_eq!(agentmem::base::json::text_nesting("12"), 0);
/// ```
pub fn text_nesting(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for byte in text.bytes() {
        match (in_string, escaped, byte) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') => in_string = false,
            (true, false, _) => {}
            (false, _, b'"') => in_string = true,
            (false, _, b'[' | b'{') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            (false, _, b']' | b'}') => depth = depth.saturating_sub(1),
            (false, _, _) => {}
        }
    }
    deepest
}

/// Why the JSON text `text` may not be kept, when it nests deeper than
/// [`MAX_NESTING`] (see [`too_deep`]).
pub(crate) fn too_deep_text(what: &str, text: &str) -> Option<String> {
    let levels = text_nesting(text);
    (levels > MAX_NESTING).then(|| too_deep_reason(what, levels))
}

fn too_deep_reason(what: &str, levels: usize) -> String {
    format!(
        "{what} nests {levels} levels of arrays and objects, and at most {MAX_NESTING} are kept; flatten it, or send it as a JSON string"
    )
}

/// `text` parsed as JSON, when it is JSON that nests no deeper than
/// [`MAX_NESTING`]: tool arguments arrive as text, and text too deep to keep
/// as a value is kept as it came.
pub fn parse_within_nesting(text: &str) -> Option<Value> {
    serde_json::from_str(text)
        .ok()
        .filter(|value| nesting(value) <= MAX_NESTING)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn written(value: &Value) -> String {
        let mut out = Vec::new();
        write_value(&mut out, value);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn every_character_that_needs_escaping_is_escaped_as_serde_json_does() {
        let every_low_byte: String = (0u8..=0x7f).map(char::from).collect();
        let text = format!("{every_low_byte}é€😀\u{2028}\u{fffd}/");
        let value = Value::String(text.repeat(5));
        assert_eq!(written(&value), serde_json::to_string(&value).unwrap());
    }

    #[test]
    fn nested_values_and_numbers_are_written_as_serde_json_writes_them() {
        let value = json!({
            "z": [1, -2, 3.25, 1e300, 0.1, null, true, false, u64::MAX, i64::MIN],
            "a": {"nested": ["x\"y", "", {"k\n": "v\\"}]},
            "empty": {}, "list": []
        });
        assert_eq!(written(&value), serde_json::to_string(&value).unwrap());
    }

    #[test]
    fn a_raw_value_holds_the_same_text() {
        let value = json!({"role": "tool", "content": "a\u{1}b"});
        let raw = to_raw_value(&value);
        assert_eq!(raw.get(), serde_json::to_string(&value).unwrap());
        let back: Value = serde_json::from_str(raw.get()).unwrap();
        assert_eq!(back, value);
    }

    proptest! {
        #[test]
        fn any_string_is_written_as_serde_json_writes_it(text in any::<String>(), ascii in "[ -~\\t\\n\\r\\x00-\\x1f]{0,300}") {
            for text in [text, ascii] {
                let value = Value::String(text);
                prop_assert_eq!(written(&value), serde_json::to_string(&value).unwrap());
            }
        }
    }
}
