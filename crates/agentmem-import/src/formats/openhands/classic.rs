//! Classic OpenHands events (before the agent SDK): a list of actions and
//! observations.
//!
//! Old OpenDevin histories hold `[action, observation]` pairs instead of
//! events: the pairs are flattened, and an observation naming no `cause`
//! answers the action of its pair. Record positions count the flattened events.
//!
//! An OpenHands event is an *action* (`action`, `args`) or an *observation*
//! (`observation`, `content`, `extras`, and `cause`: the id of the action it
//! answers). The mapping:
//!
//! - `message` → a user event from the user, an assistant event otherwise;
//!   `system` → a system event; `condensation` with a summary → a summary.
//! - `think` → a tool call when the model called the think tool
//!   (`tool_call_metadata` present), else a reasoning event.
//! - Bookkeeping (`change_agent_state`, `recall`, `null`, and the observations
//!   `agent_state_changed`, `recall`, `null`) → skipped.
//! - Every other action (`run`, `read`, `edit`, `browse`, `finish`, …) → a
//!   tool call, with the call id and function name of `tool_call_metadata`
//!   when the model made it by function calling (else `oh-<id>` and the action
//!   name). Its arguments are the model's own: the `function.arguments` of
//!   the matching call in `tool_call_metadata.model_response` (else, without
//!   function calling, OpenHands' `args`). An action's `args.thought` is the
//!   text the model wrote with the call, so it becomes an assistant event
//!   just before.
//! - `finish` gets no observation in OpenHands: its call is given a successful
//!   result (`oh-<id>-result`), and the final answer (`args.final_thought`,
//!   else `args.message` or `args.outputs.content`) becomes an assistant
//!   event after it (`oh-<id>-final`).
//! - Every other observation → the tool result of the action its `cause`
//!   names (else of its own `tool_call_metadata`); `error`, `user_rejected` and
//!   a `run` with a non-zero exit code set `tool_error`.
//!
//! Usage is taken per model call: the `llm_metrics.token_usages` entry of the
//! response that made the action (else `model_response.usage`). When an event
//! only has `accumulated_token_usage`, usage is left out: a running total
//! would count every earlier call again.
//!
//! Ids are `oh-<id>` (`oh-<id>-thought` for an action's thought). Timestamps
//! without a zone (`2024-11-05T12:34:56.789012`, as OpenHands writes them) are
//! read as UTC.

use std::collections::HashMap;

use agentmem::base::event::Media;
use agentmem::{Event, TraceType, Usage};
use serde_json::{Map, Value};

use super::source::{id_key, timestamp, Source};
use crate::imported::{Imported, Skipped};

/// The events made from one OpenHands event, in order, each with the suffix
/// its id takes after `oh-<id>` (`""` for the main event, `"-thought"` for an
/// action's thought).
type Mapped = Result<Vec<(&'static str, Event)>, String>;

/// The id suffix of the result given to a `finish` call.
const FINISH_RESULT: &str = "-result";

/// A list of classic events (or of OpenDevin's `[action, observation]`
/// pairs); skipped records are counted from 1 by position in the flattened list.
pub(super) fn parse_events(events: &[Value]) -> Imported {
    let mut stream = Stream::default();
    let mut position = 0;
    for item in events {
        match item.as_array() {
            Some(pair) => stream.pair(&mut position, pair),
            None => {
                position += 1;
                stream.event(position, item);
            }
        }
    }
    stream.imported
}

/// What the classic events read of a source event beyond the shared accessors.
impl<'a> Source<'a> {
    fn args(&self) -> Option<&'a Map<String, Value>> {
        self.map.get("args").and_then(Value::as_object)
    }

    fn arg(&self, key: &str) -> &'a str {
        self.args()
            .and_then(|args| args.get(key))
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// `args.content`, else the event's `message`.
    fn arg_content_or_message(&self) -> &'a str {
        match self.arg("content") {
            "" => self.text("message"),
            content => content,
        }
    }

    fn metadata(&self, key: &str) -> Option<&'a str> {
        self.map.get("tool_call_metadata")?.get(key)?.as_str()
    }

    fn ts(&self) -> f64 {
        timestamp(self.text("timestamp"))
    }
}

/// Import state carried from event to event.
#[derive(Default)]
struct Stream {
    imported: Imported,
    /// The call id of each tool action, by the action's event id, for `cause`.
    call_of_action: HashMap<String, String>,
    /// Inside an `[action, observation]` pair: the call its action made, which
    /// its observation answers when it names no `cause`.
    pair_call: Option<String>,
    in_pair: bool,
}

impl Stream {
    /// An `[action, observation]` pair (OpenDevin's history): its events in
    /// order, `position` counting each as one record of the flattened list.
    fn pair(&mut self, position: &mut usize, pair: &[Value]) {
        self.in_pair = true;
        for event in pair {
            *position += 1;
            self.event(*position, event);
        }
        self.in_pair = false;
        self.pair_call = None;
    }

    fn event(&mut self, position: usize, record: &Value) {
        self.imported.records += 1;
        let Some(map) = record.as_object() else {
            let skipped = Skipped::malformed(position, "not a JSON object");
            return self.imported.skipped.push(skipped);
        };
        let source = Source::new(map, position, record);
        match self.map_event(&source) {
            Ok(events) => self.push(&source, events),
            Err(reason) => self
                .imported
                .skipped
                .push(Skipped::left_out(position, reason)),
        }
    }

    fn map_event(&mut self, source: &Source<'_>) -> Mapped {
        if let Some(action) = source.map.get("action").and_then(Value::as_str) {
            self.action(source, action)
        } else if let Some(observation) = source.map.get("observation").and_then(Value::as_str) {
            self.observation(source, observation)
        } else {
            Err("neither an action nor an observation".into())
        }
    }

    /// Stamps the events of one source event and appends them, each with the
    /// usage of the model call behind the event, except the result made up
    /// for `finish`, which no model call produced.
    fn push(&mut self, source: &Source<'_>, events: Vec<(&'static str, Event)>) {
        let (ts, usage) = (source.ts(), call_usage(source.map));
        for (suffix, event) in events {
            let mut event = event
                .with_id(format!("{}{suffix}", source.base_id))
                .with_ts(ts);
            if suffix != FINISH_RESULT {
                event.usage.clone_from(&usage);
            }
            self.imported.events.push(event);
        }
    }

    fn action(&mut self, source: &Source<'_>, action: &str) -> Mapped {
        let has_call = source.metadata("tool_call_id").is_some();
        let main = |event: Event| vec![("", event)];
        match action {
            "message" => message_event(source).map(main),
            "system" => Ok(main(Event::system(source.arg_content_or_message()))),
            "think" if !has_call => Ok(main(Event::new(
                TraceType::Reasoning,
                source.arg("thought"),
            ))),
            "condensation" => match source.arg("summary") {
                "" => Err("a condensation without a summary".into()),
                summary => Ok(main(Event::new(TraceType::Summary, summary))),
            },
            "change_agent_state" | "recall" | "null" | "condensation_request" => {
                Err(format!("agent bookkeeping ({action}), not conversation"))
            }
            "finish" => Ok(self.finish_action(source)),
            _ => Ok(self.tool_action(source, action)),
        }
    }

    /// `finish`: the call, a result, then the final answer as an assistant
    /// event. OpenHands answers `finish` with no observation, so the call gets
    /// a successful result here: left pending, it would be shown to the model
    /// as an aborted call. The answer is only an argument of the call, so it
    /// would otherwise never read as what the agent said last.
    fn finish_action(&mut self, source: &Source<'_>) -> Vec<(&'static str, Event)> {
        let mut events = self.tool_action(source, "finish");
        // Its result is made here, so an observation paired with it answers nothing.
        self.pair_call = None;
        let call_id = events
            .last()
            .and_then(|(_, call)| call.tool_call_id.clone())
            .unwrap_or_else(|| source.base_id.clone());
        events.push((
            FINISH_RESULT,
            Event::tool_result(call_id, finish_result(source)),
        ));
        let answer = final_answer(source);
        if !answer.trim().is_empty() && answer.trim() != source.arg("thought").trim() {
            events.push(("-final", Event::assistant(answer)));
        }
        events
    }

    /// An action the model took with a tool: its thought, then the call.
    fn tool_action(&mut self, source: &Source<'_>, action: &str) -> Vec<(&'static str, Event)> {
        let call_id = source
            .metadata("tool_call_id")
            .unwrap_or(&source.base_id)
            .to_owned();
        let tool_name = source.metadata("function_name").unwrap_or(action);
        let args = model_arguments(source.map, &call_id)
            .or_else(|| source.map.get("args").cloned())
            .unwrap_or_else(|| Value::Object(Map::new()));
        if let Some(id) = source.map.get("id").and_then(id_key) {
            self.call_of_action.insert(id, call_id.clone());
        }
        if self.in_pair {
            self.pair_call = Some(call_id.clone());
        }
        let mut events = Vec::new();
        // A think call's thought is its argument, not text beside the call.
        match (action, source.arg("thought").trim()) {
            ("think", _) | (_, "") => {}
            (_, thought) => events.push(("-thought", Event::assistant(thought))),
        }
        events.push(("", Event::tool_call(call_id, tool_name, args)));
        events
    }

    fn observation(&mut self, source: &Source<'_>, observation: &str) -> Mapped {
        if matches!(observation, "agent_state_changed" | "recall" | "null") {
            return Err(format!(
                "agent bookkeeping ({observation}), not conversation"
            ));
        }
        let by_cause = source
            .map
            .get("cause")
            .and_then(id_key)
            .and_then(|cause| self.call_of_action.get(&cause).cloned());
        let call_id = by_cause
            .or_else(|| source.metadata("tool_call_id").map(str::to_owned))
            .or_else(|| self.pair_call.take())
            .ok_or_else(|| format!("a {observation:?} observation answering no tool call"))?;
        let content = match source.text("content") {
            "" => source.text("message"),
            content => content,
        };
        let event = if is_error(observation, source.map) {
            Event::tool_error(call_id, content)
        } else {
            Event::tool_result(call_id, content)
        };
        Ok(vec![("", event)])
    }
}

/// The arguments the model itself gave call `call_id`: the matching entry of
/// `tool_call_metadata.model_response.choices[0].message.tool_calls`, whose
/// `function.arguments` is a JSON string. OpenHands' own `args` are its
/// internal action fields (`impl_source`, `translated_ipython_code`, a copy of
/// the thought, …), not what the model called, so they are only the fallback
/// for actions made without function calling or with unparseable arguments.
fn model_arguments(map: &Map<String, Value>, call_id: &str) -> Option<Value> {
    let tool_calls = map
        .get("tool_call_metadata")?
        .get("model_response")?
        .get("choices")?
        .get(0)?
        .get("message")?
        .get("tool_calls")?
        .as_array()?;
    let function = tool_calls
        .iter()
        .find(|call| call.get("id").and_then(Value::as_str) == Some(call_id))?
        .get("function")?;
    match function.get("arguments")? {
        Value::String(arguments) => agentmem::base::json::parse_within_nesting(arguments),
        arguments @ Value::Object(_) => Some(arguments.clone()),
        _ => None,
    }
}

/// The agent's final answer: `args.final_thought` (current OpenHands), else
/// `args.message`, else the `content` of `args.outputs` (older versions).
fn final_answer<'a>(source: &Source<'a>) -> &'a str {
    let from_outputs = || {
        source
            .args()
            .and_then(|args| args.get("outputs"))
            .and_then(|outputs| outputs.get("content"))
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    match (source.arg("final_thought"), source.arg("message")) {
        ("", "") => from_outputs(),
        ("", message) => message,
        (final_thought, _) => final_thought,
    }
}

/// The result given to a `finish` call, saying whether the agent reported the
/// task done (`args.task_completed`, a string or a bool).
fn finish_result(source: &Source<'_>) -> String {
    let completed = source.args().and_then(|args| args.get("task_completed"));
    match completed {
        Some(Value::String(state)) if !state.is_empty() => {
            format!("Finished (task_completed: {state}).")
        }
        Some(Value::Bool(state)) => format!("Finished (task_completed: {state})."),
        _ => "Finished.".to_owned(),
    }
}

/// A `message` action: from the user a user event, else an assistant event.
fn message_event(source: &Source<'_>) -> Result<Event, String> {
    let content = source.arg_content_or_message();
    let images: Vec<String> = source
        .args()
        .and_then(|args| args.get("image_urls"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|url| url.as_str().map(str::to_owned))
        .collect();
    if content.trim().is_empty() && images.is_empty() {
        return Err("an empty message".into());
    }
    let mut event = match source.text("source") {
        "user" => Event::user(content),
        _ => Event::assistant(content),
    };
    if !images.is_empty() {
        event.media = Some(Media {
            images,
            ..Media::default()
        });
    }
    Ok(event)
}

/// Error observations, rejected actions, and commands that exited non-zero.
fn is_error(observation: &str, map: &Map<String, Value>) -> bool {
    match observation {
        "error" | "user_rejected" => true,
        "run" => exit_code(map).is_some_and(|code| code != 0),
        _ => false,
    }
}

/// `extras.exit_code` (older OpenHands) or `extras.metadata.exit_code`.
fn exit_code(map: &Map<String, Value>) -> Option<i64> {
    let extras = map.get("extras")?;
    extras
        .get("exit_code")
        .or_else(|| extras.get("metadata")?.get("exit_code"))
        .and_then(Value::as_i64)
}

/// Usage of the model call that made this event, when it is known per call.
fn call_usage(map: &Map<String, Value>) -> Option<Usage> {
    let model_response = map
        .get("tool_call_metadata")
        .and_then(|m| m.get("model_response"));
    let response_id = model_response
        .and_then(|r| r.get("id"))
        .and_then(Value::as_str);
    // `accumulated_token_usage` alone is a running total of every call so far;
    // putting it on one event would count the earlier calls again, so it is
    // not used.
    let per_call = map
        .get("llm_metrics")
        .and_then(|metrics| metrics.get("token_usages"))
        .and_then(Value::as_array)
        .and_then(|usages| match response_id {
            Some(id) => usages
                .iter()
                .find(|u| u.get("response_id").and_then(Value::as_str) == Some(id)),
            None => usages.last(),
        });
    match per_call {
        Some(usage) => Some(token_usage(usage)),
        None => model_response.and_then(response_usage),
    }
}

/// An OpenHands `TokenUsage`: `{model, prompt_tokens, completion_tokens, cache_read_tokens, …}`.
fn token_usage(usage: &Value) -> Usage {
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        estimated_prompt_tokens: None,
        estimated_view_tokens: None,
        prompt_tokens: count("prompt_tokens"),
        completion_tokens: count("completion_tokens"),
        cached_tokens: count("cache_read_tokens"),
        model: usage
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_owned),
    }
}

/// The `usage` of a LiteLLM model response (OpenAI chat shape).
fn response_usage(response: &Value) -> Option<Usage> {
    let usage = response.get("usage")?;
    let count = |value: Option<&Value>| value.and_then(Value::as_u64).unwrap_or(0);
    Some(Usage {
        estimated_prompt_tokens: None,
        estimated_view_tokens: None,
        prompt_tokens: count(usage.get("prompt_tokens")),
        completion_tokens: count(usage.get("completion_tokens")),
        cached_tokens: count(
            usage
                .get("prompt_tokens_details")
                .and_then(|d| d.get("cached_tokens")),
        ),
        model: response
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

#[cfg(test)]
mod tests;
