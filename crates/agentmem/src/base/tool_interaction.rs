//! The tool interaction view: each tool call joined with its result.
//!
//! Derived from the log on demand, never stored: the log stays the one source
//! of truth, and the view cannot drift from it.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

use crate::base::event::{Event, TraceType};

/// Where a tool call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ToolStatus {
    /// Called, no result yet.
    Pending,
    /// The result came back without an error.
    Success,
    /// The result carries an error.
    Error,
}

/// A tool call and, once it arrived, its result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolInteraction {
    /// The id pairing the call with its result.
    pub tool_call_id: String,
    /// The turn of the call.
    pub turn_id: String,
    /// The tool called.
    pub tool_name: String,
    /// The call's arguments.
    pub arguments: Value,
    /// The result's text, once it arrived.
    pub result: Option<String>,
    /// The error the tool reported, if any.
    pub error: Option<String>,
    /// Pending, succeeded or failed.
    pub status: ToolStatus,
}

/// Pairs every tool call in `events` with its result, in call order.
///
/// A result whose call is not in `events` has no interaction to join and is
/// left out; a second result for the same call replaces the first.
///
/// ```
/// use agentmem::Event;
/// use agentmem::base::tool_interaction::{tool_interactions, ToolStatus};
/// let events = vec![
///     Event::tool_call("c1", "bash", serde_json::json!({"cmd": "ls"})),
///     Event::tool_call("c2", "bash", serde_json::json!({"cmd": "false"})),
///     Event::tool_error("c2", "exit status 1"),
/// ];
/// let view = tool_interactions(&events);
/// assert_eq!(view[0].status, ToolStatus::Pending);
/// assert_eq!(view[1].status, ToolStatus::Error);
/// ```
pub fn tool_interactions<'a>(events: impl IntoIterator<Item = &'a Event>) -> Vec<ToolInteraction> {
    let mut interactions: Vec<ToolInteraction> = Vec::new();
    let mut index_of_call: HashMap<&str, usize> = HashMap::new();
    for event in events {
        let Some(call_id) = event.tool_call_id.as_deref() else {
            continue;
        };
        match event.trace_type {
            TraceType::ToolCall => {
                index_of_call.insert(call_id, interactions.len());
                interactions.push(ToolInteraction {
                    tool_call_id: call_id.to_owned(),
                    turn_id: event.turn_id.clone(),
                    tool_name: event.tool_name.clone().unwrap_or_default(),
                    arguments: event.tool_args.clone().unwrap_or(Value::Null),
                    result: None,
                    error: None,
                    status: ToolStatus::Pending,
                });
            }
            TraceType::ToolResult => {
                if let Some(&i) = index_of_call.get(call_id) {
                    let interaction = &mut interactions[i];
                    interaction.result = Some(event.text().into_owned());
                    interaction.error = event.tool_error.clone();
                    interaction.status = match event.tool_error {
                        Some(_) => ToolStatus::Error,
                        None => ToolStatus::Success,
                    };
                }
            }
            TraceType::User
            | TraceType::Assistant
            | TraceType::System
            | TraceType::Reasoning
            | TraceType::Summary
            | TraceType::TurnAborted
            | TraceType::WorkingMemory => {}
        }
    }
    interactions
}
