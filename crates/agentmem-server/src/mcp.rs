//! The memory tools as a Model Context Protocol server: JSON-RPC 2.0
//! messages in, answers out, whatever carries them (lines on stdio, or
//! POST bodies of the streamable HTTP transport).
//!
//! Implemented: `initialize`, `notifications/initialized`, `ping`,
//! `tools/list`, `tools/call`. A tool's own failure is a result with
//! `isError: true` (the model reads it); a malformed message is a JSON-RPC
//! error, and the server goes on.
//!
//! ```
//! use agentmem::tools::{ToolContext, ToolsOn};
//! use agentmem::{Store, Durability};
//! let dir = tempfile::tempdir().unwrap();
//! let store = Store::open(dir.path(), Durability::Batch).unwrap();
//! let agent = Default::default();
//! let context = ToolContext { store: &store, agent: &agent, session: None, on: ToolsOn::StoreFiles };
//! let answer = agentmem_server::mcp::answer_line(&context, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).unwrap();
//! assert!(answer["result"]["tools"].as_array().unwrap().len() >= 7);
//! ```

use agentmem::tools::{self, ToolContext};
use agentmem::ToolSchema;
use serde_json::{json, Value};

/// Where the tools come from and run: the store alone ([`ToolContext`]),
/// or the service with a session held open (working memory included).
pub trait ToolHost {
    /// The tools offered, in order.
    fn schemas(&self) -> Vec<ToolSchema>;
    /// Runs the tool `name`; `None` when there is no such tool. A tool's
    /// own failure is text starting with `error: `.
    fn run(&self, name: &str, arguments: &Value) -> Option<String>;
}

impl ToolHost for ToolContext<'_> {
    fn schemas(&self) -> Vec<ToolSchema> {
        tools::schemas()
    }

    fn run(&self, name: &str, arguments: &Value) -> Option<String> {
        tools::run(self, name, arguments)
    }
}

/// The protocol revision answered when the client asks for one we do not know.
pub const PROTOCOL_VERSION: &str = "2025-06-18";
/// Revisions whose tool messages this server speaks.
pub const KNOWN_VERSIONS: [&str; 3] = ["2024-11-05", "2025-03-26", "2025-06-18"];

/// Messages one batch may hold: a batch is answered as a whole, so its
/// answer is held in memory until the last message is run.
pub const MAX_BATCH_MESSAGES: usize = 64;
/// Bytes of answers a batch gets: once its answers reach this, the messages
/// left are not run, and each is answered with an error saying so.
pub const MAX_BATCH_ANSWER_BYTES: usize = 8 * 1024 * 1024;

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
/// A message of a batch left unrun because the batch's answer was full.
const BATCH_ANSWER_FULL: i64 = -32001;

/// The answer to one message or batch given as text; `None` when nothing
/// is answered (notifications).
pub fn answer_line(host: &dyn ToolHost, line: &str) -> Option<Value> {
    match serde_json::from_str(line) {
        Ok(Value::Array(batch)) => answer_batch(host, &batch).unwrap_or_else(Some),
        Ok(message) => answer(host, &message),
        Err(e) => Some(parse_error(&e)),
    }
}

/// The answers to a batch, in order (`None` when it held only
/// notifications); `Err` with the error to answer when the batch is refused
/// whole: empty, or over [`MAX_BATCH_MESSAGES`]. Once the answers reach
/// [`MAX_BATCH_ANSWER_BYTES`], the messages left are not run: each gets an
/// error, so the client knows which to send again.
pub fn answer_batch(host: &dyn ToolHost, batch: &[Value]) -> Result<Option<Value>, Value> {
    if batch.is_empty() {
        return Err(error(
            Value::Null,
            INVALID_REQUEST,
            "an empty batch; send at least one message",
        ));
    }
    if batch.len() > MAX_BATCH_MESSAGES {
        return Err(error(
            Value::Null,
            INVALID_REQUEST,
            &format!(
                "a batch holds at most {MAX_BATCH_MESSAGES} messages, this one {}; send them in smaller batches",
                batch.len()
            ),
        ));
    }
    let mut answers = Vec::new();
    let mut answer_bytes = 0usize;
    for message in batch {
        let answer = match answer_bytes < MAX_BATCH_ANSWER_BYTES {
            true => answer(host, message),
            false => not_run(message),
        };
        if let Some(answer) = answer {
            answer_bytes = answer_bytes.saturating_add(answer.to_string().len());
            answers.push(answer);
        }
    }
    Ok((!answers.is_empty()).then_some(Value::Array(answers)))
}

/// The answer to a request of a batch left unrun (none for a notification).
fn not_run(message: &Value) -> Option<Value> {
    let id = message.get("id")?.clone();
    Some(error(
        id,
        BATCH_ANSWER_FULL,
        &format!(
            "not run: the batch's answers reached {MAX_BATCH_ANSWER_BYTES} bytes; send this message again, in a smaller batch"
        ),
    ))
}

/// The answer to a message that is JSON but neither a message nor a batch.
pub fn invalid_request() -> Value {
    error(
        Value::Null,
        INVALID_REQUEST,
        "a message is a JSON-RPC object, or a batch of them in a list",
    )
}

/// The answer to a message over `max_bytes`, left unread.
pub fn too_large(max_bytes: usize) -> Value {
    error(
        Value::Null,
        INVALID_REQUEST,
        &format!("the message is over the limit of {max_bytes} bytes and was not read; send less in one message"),
    )
}

/// The answer to a message that is not JSON.
pub fn parse_error(error: &serde_json::Error) -> Value {
    unreadable(&format!("not JSON: {error}"))
}

/// The answer to a message that cannot be read (not JSON, not UTF-8 text),
/// saying why.
pub fn unreadable(why: &str) -> Value {
    self::error(Value::Null, PARSE_ERROR, why)
}

/// The answer to one message; `None` for notifications (and responses).
pub fn answer(host: &dyn ToolHost, message: &Value) -> Option<Value> {
    let id = message.get("id").cloned();
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        // A response from the client (we send no requests) needs no answer.
        if message.get("result").is_some() || message.get("error").is_some() {
            return None;
        }
        return Some(error(
            id.unwrap_or(Value::Null),
            INVALID_REQUEST,
            "no \"method\"",
        ));
    };
    // A message without an id is a notification: nothing is answered.
    let id = id?;
    let params = message.get("params").cloned().unwrap_or(json!({}));
    Some(match method {
        "initialize" => success(id, initialize(&params)),
        "ping" => success(id, json!({})),
        "tools/list" => success(id, json!({"tools": tool_list(host)})),
        "tools/call" => match call(host, &params) {
            Ok(result) => success(id, result),
            Err(message) => error(id, INVALID_PARAMS, &message),
        },
        other => error(id, METHOD_NOT_FOUND, &format!("unknown method {other:?}")),
    })
}

fn initialize(params: &Value) -> Value {
    let asked = params.get("protocolVersion").and_then(Value::as_str);
    let version = asked
        .filter(|v| KNOWN_VERSIONS.contains(v))
        .unwrap_or(PROTOCOL_VERSION);
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {"name": "agentmem", "version": env!("CARGO_PKG_VERSION")},
        "instructions": "Long-term memory for this agent: a notebook (MEMORY.md), facts, and search and recall over every past conversation."
    })
}

fn tool_list(host: &dyn ToolHost) -> Vec<Value> {
    host.schemas()
        .into_iter()
        .map(|schema| {
            let mut input_schema = schema.parameters;
            if schema.name == "read_evicted_output" {
                // Outside a session's loop the tool must be told whose output it reads.
                input_schema["properties"]["session"] =
                    json!({"type": "string", "description": "The session the output belongs to."});
                if let Some(map) = input_schema.as_object_mut() {
                    map.remove("additionalProperties");
                }
            }
            json!({"name": schema.name, "description": schema.description, "inputSchema": input_schema})
        })
        .collect()
}

fn call(host: &dyn ToolHost, params: &Value) -> Result<Value, String> {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .ok_or("tools/call needs a \"name\"")?;
    let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
    let text = host
        .run(name, &arguments)
        .ok_or_else(|| format!("unknown tool {name:?}; tools/list names the tools"))?;
    let is_error = text.starts_with("error: ");
    Ok(json!({"content": [{"type": "text", "text": text}], "isError": is_error}))
}

fn success(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}
