//! JSON Schemas for what requests and replies carry but this crate does not
//! define: the engine's types (events, session metadata, context stats, the
//! notebook's arguments, …) and values read from text (ids, names, dates).
//!
//! The engine's types read themselves by hand (an event takes its time as a
//! number or as RFC 3339 text, and keeps fields it does not know), so a
//! derived schema would be wrong; each is written once here, as a marker
//! type that fields name with `#[schemars(with = …)]`. `tests/openapi.rs`
//! holds every one of them to the engine's real values.

use std::borrow::Cow;

use agentmem::{Target, TraceType};
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde_json::{json, Value};

use crate::requests::MAX_COUNT;

/// What a session id (and any id the engine names files by) looks like.
pub const SESSION_ID_PATTERN: &str = "^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$";

/// What a turn id looks like.
pub const TURN_ID_PATTERN: &str = "^turn_[0-9]{4,}$";

/// The strategies' names, as `prepare`'s `strategy` takes them.
pub const STRATEGY_NAMES: [&str; 5] = ["none", "trim", "summarize", "placeholder", "auto"];

/// The roles a search can be narrowed to.
pub const SEARCH_ROLES: [&str; 5] = ["user", "assistant", "tool", "system", "state"];

/// Defines a marker type whose schema is `$schema`: inline where it is used,
/// or (with `component`) a named schema under `#/components/schemas`.
macro_rules! shape {
    ($(#[$doc:meta])* $name:ident, |$generator:ident| $schema:expr) => {
        shape!(@define $(#[$doc])* $name, true, |$generator| $schema);
    };
    ($(#[$doc:meta])* component $name:ident, |$generator:ident| $schema:expr) => {
        shape!(@define $(#[$doc])* $name, false, |$generator| $schema);
    };
    (@define $(#[$doc:meta])* $name:ident, $inline:expr, |$generator:ident| $schema:expr) => {
        $(#[$doc])*
        pub struct $name;

        impl JsonSchema for $name {
            fn inline_schema() -> bool {
                $inline
            }

            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema($generator: &mut SchemaGenerator) -> Schema {
                $schema
            }
        }
    };
}

shape!(
    /// A session id.
    SessionIdText,
    |_g| json_schema!({"type": "string", "pattern": SESSION_ID_PATTERN})
);

shape!(
    /// A turn id: `turn_0003`.
    TurnIdText,
    |_g| json_schema!({"type": "string", "pattern": TURN_ID_PATTERN})
);

shape!(
    /// A payload shape's name, as the engine's renderers are named.
    TargetName,
    |_g| {
        let names: Vec<&str> = Target::ALL.iter().map(|t| t.name()).collect();
        json_schema!({"type": "string", "enum": names})
    }
);

shape!(
    /// `on` or `off`.
    OnOff,
    |_g| json_schema!({"type": "string", "enum": ["on", "off"]})
);

shape!(
    /// A context strategy's name.
    StrategyName,
    |_g| json_schema!({"type": "string", "enum": STRATEGY_NAMES})
);

shape!(
    /// When an automatic compaction is drafted: `inline` or `background`.
    CompactionTimingName,
    |_g| json_schema!({"type": "string", "enum": ["inline", "background"]})
);

shape!(
    /// Whether long-term memory is injected: `on` or `off`, or a boolean.
    MemorySwitch,
    |_g| json_schema!({"enum": ["on", "off", true, false]})
);

shape!(
    /// A tool schema the agent gives its model.
    ToolShape,
    |_g| json_schema!({
        "type": "object",
        "description": "A tool schema in OpenAI's ({type, function: {name, …}}), Anthropic's or a plain {name, description, parameters} shape.",
        "anyOf": [
            {"required": ["name"], "properties": {"name": {"type": "string", "minLength": 1}}},
            {"required": ["function"], "properties": {"function": {
                "type": "object",
                "required": ["name"],
                "properties": {"name": {"type": "string", "minLength": 1}}
            }}}
        ]
    })
);

shape!(
    /// A role a search is narrowed to.
    RoleName,
    |_g| json_schema!({"type": "string", "enum": SEARCH_ROLES})
);

shape!(
    /// A day or a moment.
    DateOrTime,
    |_g| json_schema!({"anyOf": [
        {"type": "string", "format": "date"},
        {"type": "string", "format": "date-time"}
    ]})
);

shape!(
    /// A merge patch (an object) or a JSON Patch (a list of operations).
    PatchDocument,
    |_g| json_schema!({"type": ["object", "array"]})
);

shape!(
    /// A JSON Schema, or null.
    SchemaOrNull,
    |_g| json_schema!({"type": ["object", "boolean", "null"]})
);

shape!(
    /// Where a working-memory schema applies.
    ScopeName,
    |_g| json_schema!({"type": "string", "enum": ["session", "agent"]})
);

shape!(
    /// Any JSON object.
    AnyObject,
    |_g| json_schema!({"type": "object", "additionalProperties": true})
);

shape!(
    /// `write_memory`'s arguments (the engine's `WriteMemoryArgs`), which
    /// also take the older name `text`.
    AppendMemoryArgs,
    |_g| json_schema!({
        "type": "object",
        "properties": {
            "content": {"type": "string", "minLength": 1, "description": "The note."},
            "text": {"type": "string", "minLength": 1, "deprecated": true, "description": "An older name of content, accepted in its place (not beside it)."},
            "expected_hash": {"type": ["string", "null"], "description": "Apply only if MEMORY.md is still at this version (409 otherwise)."}
        },
        "required": ["content"],
        "additionalProperties": false,
        "examples": [{"content": "- Deploys go through staging.", "expected_hash": null}]
    })
);

shape!(
    /// `update_memory`'s arguments (the engine's `UpdateMemoryArgs`), which
    /// also take the older names `old` and `new`.
    ReplaceMemoryArgs,
    |_g| json_schema!({
        "type": "object",
        "properties": {
            "old_text": {"type": "string", "minLength": 1, "description": "Text that occurs exactly once."},
            "new_text": {"type": "string", "description": "Its replacement (empty or left out deletes)."},
            "old": {"type": "string", "minLength": 1, "deprecated": true, "description": "An older name of old_text, accepted in its place (not beside it)."},
            "new": {"type": "string", "deprecated": true, "description": "An older name of new_text, accepted in its place (not beside it)."},
            "expected_hash": {"type": ["string", "null"], "description": "Compare-and-swap version."}
        },
        "required": ["old_text"],
        "additionalProperties": false,
        "examples": [{"old_text": "staging", "new_text": "canary"}]
    })
);

/// A count as the engine's types write it: an integer from 0 to [`MAX_COUNT`].
fn count() -> Value {
    json!({"type": "integer", "minimum": 0, "maximum": MAX_COUNT})
}

/// A count with a description.
fn described_count(description: &str) -> Value {
    let mut count = count();
    count["description"] = description.into();
    count
}

shape!(
    /// One raw trace event, as appended and as read back.
    component Event,
    |g| {
        let trace_types: Vec<&str> = TraceType::ALL.iter().map(|t| t.as_str()).collect();
        json_schema!({
            "type": "object",
            "description": "One event of a conversation. Fields it does not know are kept as written.",
            "anyOf": [{"required": ["trace_type"]}, {"required": ["kind"]}],
            "additionalProperties": true,
            "properties": {
                "id": {"type": "string", "description": "A stable id: a retry with the same id is recognised and not written twice. Assigned when left out."},
                "trace_type": {"type": "string", "enum": trace_types},
                "kind": {"type": "string", "enum": trace_types, "deprecated": true, "description": "Another name of trace_type (the neutral workload format's)."},
                "content": {"description": "The text (tool results: the output); other JSON is kept as its text."},
                "ts": {
                    "anyOf": [{"type": "number", "minimum": 0}, {"type": "string", "format": "date-time"}],
                    "description": "Seconds since the epoch or an RFC 3339 time; now when left out."
                },
                "seq": described_count("Assigned by the session."),
                "turn_id": {"type": "string", "description": "Assigned by the session."},
                "source_event": {"type": "string", "description": "Who produced the event."},
                "tool_name": {"type": "string", "description": "For tool calls and results."},
                "tool_call_id": {"type": "string", "description": "Pairs a tool result with its call."},
                "tool_args": {"description": "A tool call's arguments."},
                "tool_result": {"description": "A tool's structured result."},
                "tool_error": {"type": "string", "description": "A tool's error."},
                "correlation_id": {"type": "string", "description": "Ties events of one operation together."},
                "tool_result_ref": {"type": "string", "description": "Where an evicted output lives."},
                "tags": {"type": "array", "items": {"type": "string"}},
                "media": {
                    "type": "object",
                    "properties": {
                        "images": {"type": "array", "items": {"type": "string"}},
                        "audio": {"type": "array", "items": {"type": "string"}},
                        "video": {"type": "array", "items": {"type": "string"}}
                    }
                },
                "usage": g.subschema_for::<Usage>(),
                "opaque": {"description": "A provider item kept verbatim (signed thinking, encrypted reasoning)."},
                "working_memory": {
                    "type": "object",
                    "description": "A working-memory update: a merge patch object or a JSON Patch list under \"patch\"; it must apply to the session's state (400 otherwise).",
                    "required": ["kind", "patch"],
                    "properties": {
                        "kind": {"type": "string", "enum": ["merge_patch", "json_patch"]},
                        "patch": {"type": ["object", "array"]},
                        "version": described_count("Assigned when 0 or left out."),
                        "hash": {"type": "string", "description": "Assigned when left out."}
                    }
                }
            },
            "allOf": [
                {
                    "if": {"properties": {"trace_type": {"enum": ["tool_call", "tool_result"]}}},
                    "then": {"required": ["tool_call_id"], "properties": {"tool_call_id": {"minLength": 1}}}
                },
                {
                    "if": {"properties": {"trace_type": {"const": "working_memory"}}},
                    "then": {"required": ["working_memory"]},
                    "else": {"not": {"required": ["working_memory"]}}
                }
            ]
        })
    }
);

shape!(
    /// Token usage a provider reported for the call that produced an event.
    component Usage,
    |_g| json_schema!({
        "type": "object",
        "properties": {
            "prompt_tokens": described_count("Prompt tokens the provider counted."),
            "completion_tokens": described_count("Tokens generated."),
            "cached_tokens": described_count("Prompt tokens served from the cache."),
            "model": {"type": "string"},
            "estimated_prompt_tokens": {"anyOf": [described_count("agentmem's count of the same prompt."), {"type": "null"}]},
            "estimated_view_tokens": {"anyOf": [described_count("The part of that count that was the messages sent."), {"type": "null"}]}
        },
        "required": ["prompt_tokens", "completion_tokens"]
    })
);

shape!(
    /// MEMORY.md and the hash that names this version.
    component MemoryVersion,
    |_g| json_schema!({
        "type": "object",
        "properties": {
            "content": {"type": "string"},
            "hash": {"type": "string", "description": "Pass back as expected_hash."}
        },
        "required": ["content", "hash"]
    })
);

shape!(
    /// A session's description.
    component SessionMeta,
    |_g| json_schema!({
        "type": "object",
        "additionalProperties": true,
        "properties": {
            "id": {"type": "string"},
            "agent_id": {"type": "string"},
            "title": {"type": ["string", "null"]},
            "created": {"type": "number"},
            "updated": {"type": "number"},
            "events": {"type": "integer"},
            "archived_events": {"type": "integer"},
            "compactions_finished": {"type": "integer", "description": "Compactions whose every step is done; one the snapshot counts beyond this is finished when the session is next opened for writing."},
            "turns": {"type": "integer"},
            "log_bytes": {"type": "integer"},
            "forked_from": {"type": "string"},
            "forked_at_turn": {"type": "string"},
            "imports": {"type": "array", "items": {"type": "object", "additionalProperties": true}}
        }
    })
);

shape!(
    /// How a prepared context stands.
    component ContextStats,
    |_g| json_schema!({
        "type": "object",
        "additionalProperties": true,
        "properties": {
            "model": {"type": "string"},
            "model_source": {"type": "string"},
            "target": {"type": "string"},
            "encoding": {"type": "string"},
            "budget": {"type": "object", "additionalProperties": true},
            "input_budget": {"type": "integer"},
            "trigger_tokens": {"type": "integer"},
            "sections": {"type": "object", "additionalProperties": true, "description": "Tokens per section: system, memory, tools, messages, …"},
            "counted_tokens": {"type": "integer"},
            "anchored_tokens": {"type": ["integer", "null"]},
            "context_tokens": {"type": "integer"},
            "estimated_tokens": {"type": "integer", "description": "How many of counted_tokens are estimated from bytes, not counted: events far below the trigger and the budget are counted only when a check needs it. The budget is checked with a bound no count can pass; 0 when every figure is counted."},
            "calibration": {"type": ["object", "null"], "additionalProperties": true},
            "compaction_due": {"type": "boolean"},
            "over_budget": {"type": "boolean"},
            "messages": {"type": "integer"},
            "events": {"type": "integer"},
            "tokens_saved": {"type": "integer"},
            "actions": {"type": "array", "items": {"type": "object", "additionalProperties": true, "description": "What the pipeline did."}}
        }
    })
);

shape!(
    /// The request body to send to the provider.
    Payload,
    |_g| json_schema!({"type": "object", "additionalProperties": true, "description": "The request body to send to the provider, ready as is."})
);

shape!(
    /// What a compaction did (the engine's `CompactReport`).
    CompactReport,
    |_g| json_schema!({"type": "object", "additionalProperties": true, "description": "CompactReport: tokens_before, tokens_after, tokens_saved, events_compacted, identifier_survival, applied, …"})
);

shape!(
    /// The episodic item an ended session left, or null.
    EpisodicItemOrNull,
    |_g| json_schema!({"type": ["object", "null"], "description": "EpisodicItem or null"})
);

shape!(
    /// A search hit.
    SearchHit,
    |_g| json_schema!({"type": "object", "additionalProperties": true, "description": "SearchHit"})
);

shape!(
    /// What recall found and the block it renders.
    Recalled,
    |_g| json_schema!({"type": "object", "additionalProperties": true, "description": "Recalled"})
);

shape!(
    /// A semantic fact with its provenance.
    Fact,
    |_g| json_schema!({"type": "object", "additionalProperties": true, "description": "Fact"})
);

shape!(
    /// What remembering a fact did.
    Added,
    |_g| json_schema!({
        "type": "object",
        "properties": {
            "outcome": {"type": "string", "enum": ["added", "merged"]},
            "id": {"type": "string"}
        }
    })
);

shape!(
    /// A tool schema to give a model.
    ToolSchema,
    |_g| json_schema!({
        "type": "object",
        "additionalProperties": true,
        "description": "Tool schema",
        "properties": {
            "name": {"type": "string"},
            "description": {"type": "string"},
            "parameters": {"type": "object", "additionalProperties": true}
        }
    })
);

shape!(
    /// One version of the working memory with the event that made it.
    StateVersion,
    |g| json_schema!({
        "type": "object",
        "properties": {
            "version": {"type": "integer"},
            "hash": {"type": "string"},
            "document": {"type": "object", "additionalProperties": true, "description": "The state at that version."},
            "event": g.subschema_for::<Event>()
        }
    })
);
