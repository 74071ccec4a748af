//! What the document says of each endpoint beyond its types: a summary,
//! which types it takes and answers with, and what each status means.
//! Written once, as a `match` over every endpoint, so a new operation does
//! not build until it is documented.

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};

use crate::http::routes::Endpoint;
use crate::service::Op;
use crate::{replies, requests, schemas};

/// A schema made by a generator (the takes' or the replies').
pub(crate) type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

/// One endpoint's documentation.
pub(crate) struct Operation {
    pub summary: &'static str,
    /// The types whose fields the endpoint takes, path, query and body
    /// together (`prepare` takes two).
    pub takes: &'static [SchemaFn],
    /// Each status with what it means and (if it has a body) its schema.
    pub replies: &'static [Reply],
    /// Whether it answers without a token.
    pub open: bool,
}

/// A status an endpoint answers with.
pub(crate) struct Reply {
    pub status: &'static str,
    pub description: &'static str,
    pub body: Option<(&'static str, SchemaFn)>,
}

/// The schema of `T` where it is used: inline, or a reference to its
/// component.
fn of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// The schema of `T` itself, never a reference: what an operation takes is
/// spread over the path, the query and the body.
fn fields<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    T::json_schema(generator)
}

/// A 200 with a JSON body.
macro_rules! json_ok {
    ($description:literal, $schema:expr) => {
        &[Reply {
            status: "200",
            description: $description,
            body: Some(("application/json", $schema)),
        }]
    };
}

/// `POST /mcp`'s JSON-RPC answer.
fn json_rpc_answer(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": ["object", "array"], "description": "A JSON-RPC response, or a list of them for a batch."})
}

/// `POST /mcp`'s refusals: an agentmem error, or a JSON-RPC one.
fn json_rpc_refusal(generator: &mut SchemaGenerator) -> Schema {
    json_schema!({"anyOf": [
        generator.subschema_for::<replies::ErrorBody>(),
        {
            "type": "object",
            "required": ["jsonrpc", "error"],
            "properties": {
                "jsonrpc": {"const": "2.0"},
                "id": {"type": "null"},
                "error": {
                    "type": "object",
                    "required": ["code", "message"],
                    "properties": {"code": {"type": "integer"}, "message": {"type": "string"}}
                }
            }
        }
    ]})
}

/// A JSON-RPC message or a batch of them.
fn json_rpc_message(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": ["object", "array"], "description": "A JSON-RPC 2.0 message or a batch of them."})
}

fn text(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string"})
}

fn any_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "object", "additionalProperties": true, "description": "The OpenAPI document."})
}

/// The documentation of `endpoint`.
pub(crate) fn operation(endpoint: Endpoint) -> Operation {
    match endpoint {
        Endpoint::Health => Operation {
            open: true,
            ..doc(
                "Liveness: answers without a token.",
                &[],
                json_ok!("The server is up.", of::<replies::Health>),
            )
        },
        Endpoint::Metrics => doc(
            "Prometheus metrics: requests and latencies by operation and status, prepares, compactions, tokens saved, events appended.",
            &[],
            &[Reply {
                status: "200",
                description: "Prometheus text format 0.0.4.",
                body: Some(("text/plain", text)),
            }],
        ),
        Endpoint::OpenApi => doc(
            "This document.",
            &[],
            json_ok!("The OpenAPI document.", any_object),
        ),
        Endpoint::Mcp => doc(
            "Model Context Protocol, streamable HTTP transport: one JSON-RPC message (or a batch) per request. Requests are answered with JSON; notifications and responses with 202. The memory tools (read_memory, write_memory, update_memory, search_conversation_history, recall, remember_fact, read_evicted_output; with ?session=ID also get_working_memory and update_working_memory for that session) are listed by tools/list and run by tools/call.",
            &[fields::<requests::Tools>],
            &[
                Reply {
                    status: "200",
                    description: "The JSON-RPC response(s).",
                    body: Some(("application/json", json_rpc_answer)),
                },
                Reply {
                    status: "202",
                    description: "A notification or response was accepted; nothing to answer.",
                    body: None,
                },
                Reply {
                    status: "400",
                    description: "Not JSON, or not a JSON-RPC message: a JSON-RPC error (-32700 or -32600); or an unsupported MCP-Protocol-Version or session id: an agentmem error.",
                    body: Some(("application/json", json_rpc_refusal)),
                },
            ],
        ),
        Endpoint::Op(op) => operation_of(op),
    }
}

/// An endpoint that needs the token (when the server has one).
fn doc(summary: &'static str, takes: &'static [SchemaFn], replies: &'static [Reply]) -> Operation {
    Operation {
        summary,
        takes,
        replies,
        open: false,
    }
}

/// The body `POST /mcp` takes, beside [`operation`]'s fields.
pub(crate) fn mcp_body() -> SchemaFn {
    json_rpc_message
}

fn operation_of(op: Op) -> Operation {
    match op {
        Op::Sessions => doc(
            "List the agent's sessions, newest first.",
            &[fields::<requests::Nothing>],
            json_ok!("Session metadata.", of::<Vec<schemas::SessionMeta>>),
        ),
        Op::CreateSession => doc(
            "Create a session (and hold it open for writing).",
            &[fields::<requests::CreateSession>],
            &[Reply {
                status: "201",
                description: "The new session.",
                body: Some(("application/json", of::<replies::Created>)),
            }],
        ),
        Op::ResumeSession => doc(
            "Resume a session: open it for writing (replaying its log from the last compaction checkpoint) and return where it stands.",
            &[fields::<requests::OnSession>],
            json_ok!("The session's metadata, current turn and learned calibration.", of::<replies::Resumed>),
        ),
        Op::DeleteSession => doc(
            "Delete a session and its files.",
            &[fields::<requests::OnSession>],
            json_ok!("Deleted.", of::<replies::Deleted>),
        ),
        Op::Fork => doc(
            "Fork the session, whole or up to a turn, into a new session.",
            &[fields::<requests::Fork>],
            json_ok!("The new session's metadata.", of::<schemas::SessionMeta>),
        ),
        Op::Append => doc(
            "Append a batch of events, durably. Idempotent by event id; the whole batch is refused if one event is invalid. Record provider usage by putting it on the first event of the model's answer.",
            &[fields::<requests::Append>],
            json_ok!("What was written.", of::<replies::Appended>),
        ),
        Op::Events => doc(
            "The session's whole history, compacted (archived) events included.",
            &[fields::<requests::Events>],
            json_ok!("Events in order.", of::<replies::EventPage<'static>>),
        ),
        Op::Prepare => doc(
            "Build the context for the next model call: inside the budget, tool pairs intact, compacted when due, long-term memory injected, rendered for the target.",
            &[fields::<requests::Prepare>, fields::<requests::DryRun>],
            json_ok!("The payload and its stats.", of::<replies::PreparedReply<'static>>),
        ),
        Op::Compact => doc(
            "Compact the session now, optionally favouring a focus.",
            &[fields::<requests::Compact>],
            json_ok!("What the compaction did.", of::<schemas::CompactReport>),
        ),
        Op::RecoverOverflow => doc(
            "The provider refused the last context as too long: compact reactively and prepare again.",
            &[fields::<requests::Prepare>, fields::<requests::Overflow>],
            json_ok!("The smaller payload and its stats.", of::<replies::PreparedReply<'static>>),
        ),
        Op::EndSession => doc(
            "End the session: its summary becomes an episodic memory for later sessions.",
            &[fields::<requests::OnSession>],
            json_ok!("The episodic item written, or null.", of::<schemas::EpisodicItemOrNull>),
        ),
        Op::State => doc(
            "The session's working memory: the typed, versioned state of the current task, and the schema it keeps to.",
            &[fields::<requests::OnSession>],
            json_ok!("The state.", of::<replies::State>),
        ),
        Op::UpdateState => doc(
            "Update the working memory by JSON Merge Patch (an object) or JSON Patch (a list), with compare-and-swap on the version. The update is an event in the log; a stale version is 409, a patch breaking the schema 400 naming the failing path; nothing is changed then.",
            &[fields::<requests::UpdateState>],
            json_ok!("The new state.", of::<replies::Versioned>),
        ),
        Op::StateHistory => doc(
            "Every version of the working memory with the event that made it.",
            &[fields::<requests::OnSession>],
            json_ok!("Versions, oldest first.", of::<replies::StateHistory>),
        ),
        Op::SetStateSchema => doc(
            "Set (or with null, remove) the JSON Schema the working memory must keep to, for this session or every session of the agent. The current state must already keep to it.",
            &[fields::<requests::SetStateSchema>],
            json_ok!("Set.", of::<replies::ScopeSet>),
        ),
        Op::Search => doc(
            "Full-text search over every session's history (BM25, archives included).",
            &[fields::<requests::Search>],
            json_ok!("Hits, best first.", of::<Vec<schemas::SearchHit>>),
        ),
        Op::Recall => doc(
            "Recall what earlier sessions said about a question: facts, episodic summaries and conversation lines, packed within a token budget.",
            &[fields::<requests::Recall>],
            json_ok!("The recalled items and the rendered block.", of::<schemas::Recalled>),
        ),
        Op::ReadMemory => doc(
            "Read MEMORY.md and its version hash.",
            &[fields::<requests::Nothing>],
            json_ok!("The notebook.", of::<schemas::MemoryVersion>),
        ),
        Op::AppendMemory => doc(
            "Append a note to MEMORY.md (compare-and-swap with expected_hash).",
            &[fields::<schemas::AppendMemoryArgs>],
            json_ok!("The new version.", of::<schemas::MemoryVersion>),
        ),
        Op::ReplaceMemory => doc(
            "Replace the one occurrence of old_text with new_text in MEMORY.md.",
            &[fields::<schemas::ReplaceMemoryArgs>],
            json_ok!("The new version.", of::<schemas::MemoryVersion>),
        ),
        Op::Facts => doc(
            "Semantic facts with provenance: current ones, or all with ?all=true.",
            &[fields::<requests::Facts>],
            json_ok!("Facts.", of::<Vec<schemas::Fact>>),
        ),
        Op::RememberFact => doc(
            "Remember a fact; a near-duplicate of a current fact merges into it.",
            &[fields::<requests::RememberFact>],
            json_ok!("Added or merged.", of::<schemas::Added>),
        ),
        Op::Tools => doc(
            "The memory tools' schemas, to give a model (with ?session=ID, the working-memory tools too).",
            &[fields::<requests::Tools>],
            json_ok!("Tool schemas.", of::<Vec<schemas::ToolSchema>>),
        ),
        Op::Tool => doc(
            "Run a memory tool the model called; its failure is text the model reads.",
            &[fields::<requests::Tool>],
            json_ok!("The tool's answer.", of::<replies::ToolAnswer>),
        ),
    }
}
