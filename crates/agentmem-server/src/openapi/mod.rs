//! The OpenAPI 3.1 document of the HTTP API, served at `/openapi.json`:
//! built from the route table ([`ROUTES`]), the type each operation reads
//! its arguments into ([`crate::requests`]) and the types it answers with
//! ([`crate::replies`], [`crate::schemas`]). [`operations`] adds what no
//! type says: summaries and what each status means.
//!
//! An operation's fields are spread as HTTP spreads them: the route's
//! `{name}` segments are path parameters, the rest are query parameters
//! for GET and DELETE (and `POST /mcp`), the request body otherwise.
//!
//! `crates/agentmem-server/openapi.json` is this document as generated, for
//! readers and client generators; a test fails when it is out of date.
//!
//! ```
//! let document = agentmem_server::openapi::document();
//! assert_eq!(document["openapi"], "3.1.0");
//! let prepare = &document["paths"]["/v1/sessions/{session}/prepare"]["post"];
//! let body = &prepare["requestBody"]["content"]["application/json"]["schema"];
//! assert_eq!(body["required"], serde_json::json!(["model"]));
//! ```

mod operations;

use std::sync::OnceLock;

use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::Schema;
use serde_json::{json, Map, Value};

use crate::http::routes::{Endpoint, Route, ROUTES};
use crate::replies::ErrorBody;
use operations::{Operation, Reply};

/// The document, as served and checked in: pretty JSON and a final newline.
pub fn text() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        let mut text = serde_json::to_string_pretty(&document()).expect("the document is JSON");
        text.push('\n');
        text
    })
}

/// The OpenAPI document of every route.
pub fn document() -> Value {
    let settings = SchemaSettings::draft2020_12().with(|settings| {
        settings.definitions_path = "/components/schemas".into();
        settings.meta_schema = None;
    });
    let mut generators = Generators {
        takes: settings.clone().for_deserialize().into_generator(),
        replies: settings.for_serialize().into_generator(),
    };
    let error = generators.replies.subschema_for::<ErrorBody>();
    let mut paths = Map::new();
    for route in &ROUTES {
        let item = paths
            .entry(route.path)
            .or_insert_with(|| Value::Object(Map::new()));
        item[route.method.to_lowercase()] = path_operation(route, &mut generators);
    }
    let mut schemas = generators.takes.take_definitions(true);
    schemas.extend(generators.replies.take_definitions(true));
    let mut document = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "agentmem",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "agentmem as a local service: sessions, events, context preparation, compaction, overflow recovery, history search, recall, MEMORY.md and facts. An optional field set to null counts as left out. Errors are {\"error\": {\"kind\", \"message\"}} with kind bad_request (400), unauthorized (401), forbidden (403), not_found or unknown_operation (404), method_not_allowed (405), conflict (409), too_large (413), locked (423) or internal (500). Requests on one session are serialised; different sessions run in parallel."
        },
        "servers": [{"url": format!("http://{}", crate::http::DEFAULT_ADDR)}],
        "security": [{}, {"bearer": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "Required when the server was started with a token (always, when it listens beyond loopback)."
                }
            },
            "responses": {
                "Error": {
                    "description": "A refused or failed request; nothing was changed.",
                    "content": {"application/json": {"schema": error}}
                }
            },
            "schemas": schemas,
        }
    });
    tidy(&mut document);
    document
}

/// The generators of what operations take (read as serde reads them) and
/// of what they answer (written as serde writes them).
struct Generators {
    takes: SchemaGenerator,
    replies: SchemaGenerator,
}

/// One route's operation object.
fn path_operation(route: &Route, generators: &mut Generators) -> Value {
    let operation = operations::operation(route.endpoint);
    let Fields {
        mut properties,
        mut required,
        example,
        closed,
    } = Fields::of(&operation, &mut generators.takes);
    let mut parameters = Vec::new();
    for name in captures(route.path) {
        let schema = properties.remove(name).unwrap_or_else(|| {
            panic!(
                "{} {} captures {name}, which the operation does not take",
                route.method, route.path
            )
        });
        required.retain(|field| field != name);
        parameters.push(parameter(name, "path", true, schema, example.get(name)));
    }
    let in_query = matches!(route.method, "GET" | "DELETE") || route.endpoint == Endpoint::Mcp;
    let mut object = Map::new();
    object.insert("operationId".into(), route.endpoint.name().into());
    object.insert("summary".into(), operation.summary.into());
    if operation.open {
        object.insert("security".into(), json!([]));
    }
    if in_query {
        for (name, schema) in std::mem::take(&mut properties) {
            let is_required = required.contains(&name);
            let example = example.get(&name);
            parameters.push(parameter(&name, "query", is_required, schema, example));
        }
    }
    if route.endpoint == Endpoint::Mcp {
        let versions = crate::mcp::KNOWN_VERSIONS;
        parameters.push(json!({
            "name": "MCP-Protocol-Version",
            "in": "header",
            "required": false,
            "schema": {"type": "string", "enum": versions}
        }));
        let body = operations::mcp_body()(&mut generators.takes);
        object.insert("requestBody".into(), request_body(true, body.to_value()));
    } else if !properties.is_empty() {
        let mut body = json!({"type": "object", "properties": properties});
        if !required.is_empty() {
            body["required"] = json!(required);
        }
        if closed {
            body["additionalProperties"] = false.into();
        }
        let shown: Map<String, Value> = example
            .into_iter()
            .filter(|(name, _)| body["properties"].get(name).is_some())
            .collect();
        if !shown.is_empty() {
            body["examples"] = json!([shown]);
        }
        object.insert(
            "requestBody".into(),
            request_body(!required.is_empty(), body),
        );
    }
    if !parameters.is_empty() {
        object.insert("parameters".into(), parameters.into());
    }
    object.insert(
        "responses".into(),
        responses(operation.replies, &mut generators.replies),
    );
    Value::Object(object)
}

/// The fields an operation takes, gathered from its types.
struct Fields {
    properties: Map<String, Value>,
    required: Vec<String>,
    /// The types' examples, merged into one request.
    example: Map<String, Value>,
    /// Whether every type refuses fields it does not know.
    closed: bool,
}

impl Fields {
    fn of(operation: &Operation, generator: &mut SchemaGenerator) -> Fields {
        let mut fields = Fields {
            properties: Map::new(),
            required: Vec::new(),
            example: Map::new(),
            closed: true,
        };
        for takes in operation.takes {
            let schema = takes(generator).to_value();
            if let Some(properties) = schema["properties"].as_object() {
                fields.properties.extend(properties.clone());
            }
            fields.required.extend(
                schema["required"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_owned),
            );
            if let Some(example) = schema["examples"][0].as_object() {
                fields.example.extend(example.clone());
            }
            fields.closed &= schema["additionalProperties"] == false;
        }
        fields
    }
}

/// A path or query parameter from a field's schema; its description moves
/// to the parameter, and a query string cannot say null.
fn parameter(
    name: &str,
    place: &str,
    required: bool,
    schema: Value,
    example: Option<&Value>,
) -> Value {
    let mut schema = not_null(schema);
    let description = schema
        .as_object_mut()
        .and_then(|schema| schema.remove("description"));
    let mut parameter = json!({"name": name, "in": place, "required": required, "schema": schema});
    if let Some(description) = description {
        parameter["description"] = description;
    }
    if let Some(example) = example {
        parameter["example"] = example.clone();
    }
    parameter
}

/// `schema` without the null it allows (nor a null default).
fn not_null(mut schema: Value) -> Value {
    let Some(object) = schema.as_object_mut() else {
        return schema;
    };
    if object.get("default") == Some(&Value::Null) {
        object.remove("default");
    }
    if let Some(Value::Array(types)) = object.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            object.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(any_of)) = object.get_mut("anyOf") {
        any_of.retain(|branch| branch.get("type") != Some(&Value::from("null")));
        if any_of.len() == 1 {
            let only = any_of.remove(0);
            object.remove("anyOf");
            for (key, value) in only.as_object().into_iter().flatten() {
                object.entry(key.clone()).or_insert(value.clone());
            }
        }
    }
    schema
}

fn request_body(required: bool, schema: Value) -> Value {
    json!({"required": required, "content": {"application/json": {"schema": schema}}})
}

/// The replies an operation documents, and the error replies every one has.
fn responses(replies: &[Reply], generator: &mut SchemaGenerator) -> Value {
    let mut responses = Map::new();
    for reply in replies {
        let mut response = json!({"description": reply.description});
        if let Some((content_type, schema)) = reply.body {
            let schema: Schema = schema(generator);
            response["content"] = json!({content_type: {"schema": schema}});
        }
        responses.insert(reply.status.into(), response);
    }
    for status in ["4XX", "5XX"] {
        responses
            .entry(status)
            .or_insert_with(|| json!({"$ref": "#/components/responses/Error"}));
    }
    Value::Object(responses)
}

/// The `{name}` segments of a route's path.
fn captures(path: &str) -> impl Iterator<Item = &str> {
    path.split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
}

/// Descriptions come from doc comments, wrapped at the source's width:
/// each line break within a paragraph becomes a space. A null default says
/// no more than the document's info does (null counts as left out).
fn tidy(value: &mut Value) {
    match value {
        Value::Object(object) => {
            if object.get("default") == Some(&Value::Null) {
                object.remove("default");
            }
            for (key, value) in object.iter_mut() {
                match value {
                    Value::String(text) if key == "description" => {
                        *text = text
                            .split("\n\n")
                            .map(|paragraph| paragraph.replace('\n', " "))
                            .collect::<Vec<_>>()
                            .join("\n\n");
                    }
                    other => tidy(other),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(tidy),
        _ => {}
    }
}
