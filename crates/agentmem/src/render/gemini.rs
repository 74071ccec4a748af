//! Gemini generateContent: `{"systemInstruction", "contents", "tools",
//! "generationConfig"}`.
//!
//! The body has no `model`: Gemini takes it in the URL
//! (`…/models/{model}:generateContent`), so `request.model` is not used here.
//!
//! The API's rules, and how this renderer meets them:
//!
//! - **System text** goes to `systemInstruction.parts`, one text part each:
//!   the request's system prompt, then every system message of the
//!   transcript, in order (contents have no system role).
//! - **Roles** are `user` and `model`; they alternate and start with `user`
//!   (a function-call turn must follow a user or function-response turn).
//!   Consecutive contents of one role merge, a content left with no parts is
//!   dropped, and a transcript starting with the model gets a user content
//!   `(continued)` in front, as for Anthropic.
//! - **Model parts**: `{text}` (empty text skipped) and `{functionCall: {name,
//!   args}}`, `args` an object made by
//!   [`tool_input`](super::anthropic::tool_input). The optional `id` of a
//!   function call is left out: the Gemini API documents it, but Vertex AI has
//!   rejected it as an unknown field, and calls pair by order and name without
//!   it. Reasoning is dropped: Gemini's own thoughts come back as thought
//!   signatures, which transcripts from other providers do not have.
//!   Gemini 3 models refuse a function call of the current turn that lacks a
//!   signature; Google documents a placeholder signature for history the
//!   model did not produce, which this renderer does not add (it would claim
//!   something about the model the body is for).
//! - **Tool results** are `{functionResponse: {name, response}}` parts of a
//!   user content, `response` being `{"output": text}` or, for a failed call,
//!   `{"error": text}`. `name` is the called function's: the result's own
//!   name, else the name of the earlier call with the same id, else the call
//!   id (an orphan result; pair repair should have removed it). Merging puts
//!   all responses to one model turn into the next user content, which Gemini
//!   requires (as many responses as calls).
//! - **Images**: `{inlineData: {mimeType, data}}` for base64 data URIs,
//!   `{fileData: {mimeType, fileUri}}` for other URIs (`gs://`, `https://`,
//!   Files API URIs; `mimeType` guessed from the extension, left out when
//!   unknown), and a text part naming a local path, which cannot be sent
//!   without reading it.
//! - **Tools**: one `{functionDeclarations: […]}` entry. `parameters` is an
//!   OpenAPI 3.0 subset, so the schema is cleaned, see [`clean_schema`]; an
//!   object schema with no properties is left out (Gemini rejects an empty
//!   `properties` for OBJECT parameters).
//! - `generationConfig.maxOutputTokens` carries `max_output_tokens`.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::anthropic::{data_uri, image_placeholder, tool_input};
use super::{Frame, ListEnd, Place, RenderRequest, ToolSchema};
use crate::base::message::{Message, Part, Role};

/// The user content put in front of a transcript that starts with the model.
const CONTINUED: &str = "(continued)";

/// Keys of Gemini's `Schema` (an OpenAPI 3.0 subset) kept as they are.
const SCHEMA_KEYS: [&str; 19] = [
    "format",
    "title",
    "description",
    "nullable",
    "required",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "propertyOrdering",
    "default",
    "example",
    "type",
    "enum",
];

/// How many `$ref`s deep a schema is inlined before the rest is cut (cycles).
const MAX_REF_DEPTH: usize = 8;

pub(super) fn frame(request: &RenderRequest<'_>) -> Frame {
    let mut head = Map::new();
    let system = system_parts(request);
    if !system.is_empty() {
        head.insert("systemInstruction".into(), json!({"parts": system}));
    }
    if !request.tools.is_empty() {
        let declarations: Vec<Value> = request.tools.iter().map(declaration).collect();
        head.insert(
            "tools".into(),
            json!([{"functionDeclarations": declarations}]),
        );
    }
    head.insert(
        "generationConfig".into(),
        json!({"maxOutputTokens": request.max_output_tokens}),
    );
    Frame {
        head,
        list_key: super::Target::Gemini.list_key(),
        lead: Vec::new(),
        end: ListEnd::of(super::Target::Gemini, request),
    }
}

/// Adds the live context to the closing user content when it holds text
/// alone (function responses are kept the only parts of theirs, as the API
/// pairs them with the calls before), else to the system instruction.
pub(super) fn close_list(
    head: &mut Map<String, Value>,
    last: Option<&mut Value>,
    live_context: Option<&str>,
) -> Vec<Value> {
    let Some(text) = live_context else {
        return Vec::new();
    };
    let part = json!({"text": text});
    let user_text = last.filter(|content| {
        let parts = content["parts"].as_array().into_iter().flatten();
        content["role"] == "user" && parts.clone().all(|p| p.get("functionResponse").is_none())
    });
    let parts = match user_text {
        Some(content) => &mut content["parts"],
        None => &mut head
            .entry("systemInstruction")
            .or_insert_with(|| json!({"parts": []}))["parts"],
    };
    if let Some(parts) = parts.as_array_mut() {
        parts.push(part);
    }
    Vec::new()
}

/// One text part per system text: the request's, then the transcript's.
fn system_parts(request: &RenderRequest<'_>) -> Vec<Value> {
    let transcript = request
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(Message::joined_text);
    request
        .system
        .map(str::to_owned)
        .into_iter()
        .chain(transcript)
        .filter(|text| !text.trim().is_empty())
        .map(|text| json!({"text": text}))
        .collect()
}

/// The two roles of this API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    User,
    Model,
}

pub(super) fn entries(transcript: &[Message], place: Place) -> Vec<Value> {
    let mut call_names: HashMap<&str, &str> = HashMap::new();
    let mut turns: Vec<(Side, Vec<Value>)> = Vec::with_capacity(transcript.len());
    for message in transcript {
        remember_calls(&message.parts, &mut call_names);
        let (side, parts) = match message.role {
            Role::System => continue,
            Role::User | Role::Tool => (Side::User, user_parts(&message.parts, &call_names)),
            Role::Assistant => (Side::Model, model_parts(&message.parts)),
        };
        if parts.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, existing)) if *last == side => existing.extend(parts),
            _ => turns.push((side, parts)),
        }
    }
    if place == Place::Start && turns.first().is_some_and(|(side, _)| *side == Side::Model) {
        turns.insert(0, (Side::User, vec![json!({"text": CONTINUED})]));
    }
    turns
        .into_iter()
        .map(|(side, parts)| {
            let role = match side {
                Side::User => "user",
                Side::Model => "model",
            };
            json!({"role": role, "parts": parts})
        })
        .collect()
}

/// Records the function name of every call in `parts` by call id.
fn remember_calls<'a>(parts: &'a [Part], names: &mut HashMap<&'a str, &'a str>) {
    for part in parts {
        match part {
            Part::ToolCall { id, name, .. } => {
                names.insert(id, name);
            }
            Part::Text(_) | Part::Image(_) | Part::ToolResult { .. } | Part::Reasoning { .. } => {}
        }
    }
}

fn user_parts(parts: &[Part], call_names: &HashMap<&str, &str>) -> Vec<Value> {
    parts
        .iter()
        .filter_map(|part| match part {
            Part::Text(text) => text_part(text),
            Part::Image(url) => Some(image_part(url)),
            Part::ToolResult {
                call_id,
                name,
                content,
                is_error,
            } => {
                let name = name
                    .as_deref()
                    .or_else(|| call_names.get(call_id.as_str()).copied())
                    .unwrap_or(call_id);
                let key = if *is_error { "error" } else { "output" };
                Some(json!({"functionResponse": {"name": name, "response": {key: content}}}))
            }
            Part::ToolCall { .. } | Part::Reasoning { .. } => None,
        })
        .collect()
}

fn model_parts(parts: &[Part]) -> Vec<Value> {
    parts
        .iter()
        .filter_map(|part| match part {
            Part::Text(text) => text_part(text),
            Part::ToolCall {
                name, arguments, ..
            } => Some(json!({"functionCall": {"name": name, "args": tool_input(arguments)}})),
            Part::Image(url) => Some(image_part(url)),
            Part::ToolResult { .. } | Part::Reasoning { .. } => None,
        })
        .collect()
}

fn text_part(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({"text": text}))
}

fn image_part(url: &str) -> Value {
    if let Some((mime_type, data)) = data_uri(url) {
        return json!({"inlineData": {"mimeType": mime_type, "data": data}});
    }
    let is_uri = url.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric())
    });
    if !is_uri {
        return json!({"text": image_placeholder(url)});
    }
    let mut file = json!({"fileUri": url});
    if let Some(mime_type) = image_mime_type(url) {
        file["mimeType"] = mime_type.into();
    }
    json!({"fileData": file})
}

/// The image MIME type that `url`'s extension names, if it names one.
fn image_mime_type(url: &str) -> Option<&'static str> {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let extension = path.rsplit_once('.')?.1.to_ascii_lowercase();
    match extension.as_str() {
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "webp" => Some("image/webp"),
        "gif" => Some("image/gif"),
        "heic" => Some("image/heic"),
        "heif" => Some("image/heif"),
        _ => None,
    }
}

fn declaration(schema: &ToolSchema) -> Value {
    let mut declaration = json!({"name": schema.name});
    if !schema.description.is_empty() {
        declaration["description"] = Value::String(schema.description.clone());
    }
    let parameters = clean_schema(&schema.parameters);
    let no_properties = parameters
        .get("properties")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty);
    if !no_properties {
        declaration["parameters"] = parameters;
    }
    declaration
}

/// `schema` cut down to what Gemini's `Schema` accepts, recursively.
///
/// - Kept as they are: `type`, `format`, `title`, `description`, `nullable`,
///   `enum`, `required`, `min/maxItems`, `min/maxProperties`,
///   `min/maxLength`, `pattern`, `minimum`, `maximum`, `propertyOrdering`,
///   `default`, `example`; cleaned recursively: `properties` (each value),
///   `items`, `anyOf`.
/// - Rewritten: `oneOf` becomes `anyOf`; a type list such as
///   `["string", "null"]` becomes `type: "string"` with `nullable: true`;
///   `const` becomes a one-value `enum`; non-string `enum` values become
///   strings (Gemini's enums are strings, also for INTEGER); a local `$ref`
///   (`#/$defs/…`, `#/definitions/…`) is replaced by the schema it names
///   (siblings of the `$ref` win), cut at depth 8 against cycles.
/// - Dropped: everything else, notably `$schema`, `$id`, `$ref` that does not
///   resolve, `$defs`, `definitions`, `$comment`, `additionalProperties`,
///   `patternProperties`, `allOf`, `not`, `if`/`then`/`else`, `examples`,
///   `exclusiveMinimum`/`exclusiveMaximum`, `uniqueItems`, `readOnly`.
///
/// (Gemini also takes a full JSON Schema as `parametersJsonSchema`; the
/// `parameters` field is used because both Gemini API and Vertex AI accept it
/// on every model.)
fn clean_schema(schema: &Value) -> Value {
    let empty = Map::new();
    let definitions = ["$defs", "definitions"]
        .map(|key| schema.get(key).and_then(Value::as_object).unwrap_or(&empty));
    clean(schema, &definitions, 0)
}

fn clean(schema: &Value, definitions: &[&Map<String, Value>; 2], depth: usize) -> Value {
    let Value::Object(map) = schema else {
        return json!({}); // `true` / `false` schemas have no Gemini form
    };
    let mut out = Map::new();
    if let Some(target) = map.get("$ref").and_then(Value::as_str) {
        if let Some(found) = resolve(target, definitions).filter(|_| depth < MAX_REF_DEPTH) {
            if let Value::Object(inlined) = clean(found, definitions, depth + 1) {
                out = inlined;
            }
        }
    }
    for (key, value) in map {
        match key.as_str() {
            "type" => set_type(&mut out, value),
            "properties" => {
                if let Some(properties) = value.as_object() {
                    let cleaned = properties
                        .iter()
                        .map(|(name, property)| (name.clone(), clean(property, definitions, depth)))
                        .collect();
                    out.insert(key.clone(), Value::Object(cleaned));
                }
            }
            "items" => {
                out.insert(key.clone(), clean(value, definitions, depth));
            }
            "anyOf" | "oneOf" => {
                if let Some(options) = value.as_array() {
                    let cleaned = options
                        .iter()
                        .map(|option| clean(option, definitions, depth))
                        .collect();
                    out.insert("anyOf".into(), Value::Array(cleaned));
                }
            }
            "const" => {
                out.entry("enum")
                    .or_insert_with(|| json!([enum_value(value)]));
            }
            "enum" => {
                if let Some(values) = value.as_array() {
                    out.insert(key.clone(), values.iter().map(enum_value).collect());
                }
            }
            other if SCHEMA_KEYS.contains(&other) => {
                out.insert(key.clone(), value.clone());
            }
            _ => {}
        }
    }
    Value::Object(out)
}

/// The schema a local `$ref` names, if it names one.
fn resolve<'a>(target: &str, definitions: &[&'a Map<String, Value>; 2]) -> Option<&'a Value> {
    let [defs, legacy] = definitions;
    if let Some(name) = target.strip_prefix("#/$defs/") {
        return defs.get(name);
    }
    legacy.get(target.strip_prefix("#/definitions/")?)
}

/// Sets `type`, turning a type list into one type plus `nullable`.
fn set_type(out: &mut Map<String, Value>, value: &Value) {
    let Some(types) = value.as_array() else {
        out.insert("type".into(), value.clone());
        return;
    };
    let nullable = types.iter().any(|t| t == "null");
    if let Some(first) = types.iter().find(|t| *t != "null") {
        out.insert("type".into(), first.clone());
        if nullable {
            out.insert("nullable".into(), Value::Bool(true));
        }
    } else if nullable {
        out.insert("type".into(), "null".into());
    }
}

fn enum_value(value: &Value) -> Value {
    match value {
        Value::String(_) => value.clone(),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::Array(_) | Value::Object(_) => {
            Value::String(value.to_string())
        }
    }
}

#[cfg(test)]
#[path = "gemini_tests.rs"]
mod tests;
