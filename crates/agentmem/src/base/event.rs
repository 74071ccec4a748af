//! The raw trace: one [`Event`] per user message, assistant message, tool call,
//! tool result, and the few engine-made kinds (summary, turn-aborted marker,
//! working-memory update).
//!
//! The JSON shape is the memory kernel's RAW_TRACE schema, so a line written by
//! another implementation of that schema parses here, and fields this version
//! does not know are kept in [`Event::extra`] and written back unchanged.

mod deserialize;
mod unknown_fields;

use std::borrow::Cow;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

pub use unknown_fields::UnknownFields;

/// The tag of a subagent's own events (its prompt, tool calls and answer),
/// recorded inline in the parent's transcript by some agents. They stay in the
/// log, searchable and exportable, but are not part of the parent model's
/// context: the parent saw only the subagent's final result.
pub const SIDECHAIN_TAG: &str = "sidechain";

/// The tag of what an agent showed its user but never sent its model (an API
/// error written as the reply, a `/context` table, a note that the session
/// was compacted). Kept in the log, searchable and exportable; never sent.
pub const DISPLAY_ONLY_TAG: &str = "display_only";

/// The tag of what a rewind left behind: the branch a user abandoned by
/// editing an earlier prompt, which the agent's model no longer saw. Kept in
/// the log, searchable and exportable; never sent.
pub const ABANDONED_BRANCH_TAG: &str = "abandoned_branch";

/// The tag of a summary an agent compacted its own context into (Claude
/// Code's `/compact`, Codex's `compacted`): from it on, its model saw the
/// summary instead of what came before, so the model's view starts over
/// there. Everything before stays in the log.
pub const REPLACES_HISTORY_TAG: &str = "replaces_history";

/// What an event is. The names are the on-disk `trace_type` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceType {
    /// A message from the user; it starts a new turn.
    User,
    /// Text the model produced.
    Assistant,
    /// The model asked for a tool to run (`tool_name`, `tool_call_id`, `tool_args`).
    ToolCall,
    /// What a tool returned (`tool_call_id`, `content`, `tool_error` on failure).
    ToolResult,
    /// System or developer instructions.
    System,
    /// Model reasoning; provider-opaque items (encrypted or signed) ride in `opaque`.
    Reasoning,
    /// A summary that stands for compacted history.
    Summary,
    /// Marks a turn the user interrupted before it finished.
    TurnAborted,
    /// A change to the session's working memory (`working_memory` holds the
    /// patch and the version it made). The model never sees these events:
    /// it sees the current state, rendered as its own section.
    WorkingMemory,
}

impl TraceType {
    /// Every trace type, in declaration order.
    pub const ALL: [TraceType; 9] = [
        TraceType::User,
        TraceType::Assistant,
        TraceType::ToolCall,
        TraceType::ToolResult,
        TraceType::System,
        TraceType::Reasoning,
        TraceType::Summary,
        TraceType::TurnAborted,
        TraceType::WorkingMemory,
    ];

    /// Whether events of this type are the model's own output (text,
    /// reasoning, tool calls): the parts of one response, which share an
    /// assistant message and whose usage measures the prompt before them.
    pub fn is_model_output(self) -> bool {
        match self {
            TraceType::Assistant | TraceType::Reasoning | TraceType::ToolCall => true,
            TraceType::User
            | TraceType::ToolResult
            | TraceType::System
            | TraceType::Summary
            | TraceType::TurnAborted
            | TraceType::WorkingMemory => false,
        }
    }

    /// Whether events of this type change the session's working memory:
    /// the model sees their effect (the current state), never the events.
    pub(crate) fn is_state_update(self) -> bool {
        match self {
            TraceType::WorkingMemory => true,
            TraceType::User
            | TraceType::Assistant
            | TraceType::ToolCall
            | TraceType::ToolResult
            | TraceType::System
            | TraceType::Reasoning
            | TraceType::Summary
            | TraceType::TurnAborted => false,
        }
    }

    /// The on-disk name, e.g. `tool_call`.
    pub fn as_str(self) -> &'static str {
        match self {
            TraceType::User => "user",
            TraceType::Assistant => "assistant",
            TraceType::ToolCall => "tool_call",
            TraceType::ToolResult => "tool_result",
            TraceType::System => "system",
            TraceType::Reasoning => "reasoning",
            TraceType::Summary => "summary",
            TraceType::TurnAborted => "turn_aborted",
            TraceType::WorkingMemory => "working_memory",
        }
    }
}

/// Media attached to an event, as references (paths, URLs or data URIs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Media {
    /// Image references.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<String>,
    /// Audio references.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audio: Vec<String>,
    /// Video references.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub video: Vec<String>,
}

/// Token usage a provider reported for the model call that produced an event.
///
/// Kept on the event so budget accounting can anchor on measured figures.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the prompt the provider counted (cached ones included).
    pub prompt_tokens: u64,
    /// Tokens the model generated (reasoning included).
    pub completion_tokens: u64,
    /// Prompt tokens served from the provider's cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_tokens: u64,
    /// The model that reported it, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// agentmem's own count of the same prompt, when it prepared it: the pair
    /// (reported, estimated) is what the per-model calibration learns from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_prompt_tokens: Option<u64>,
    /// The part of that count that was the messages sent (the view as
    /// shaped for the call, synthetic results for pending calls included):
    /// what the provider counts beyond it is the request's own overhead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_view_tokens: Option<u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One raw trace event.
///
/// `id`, `ts`, `turn_id` and `seq` may be left empty (`""`, `0.0`, `""`, `0`)
/// when an event is handed to a session: the session assigns them.
///
/// ```
/// use agentmem::{Event, TraceType};
/// let line = r#"{"trace_type":"user","content":"fix the build","vendor_field":7}"#;
/// let event: Event = serde_json::from_str(line).unwrap();
/// assert_eq!(event.trace_type, TraceType::User);
/// // Unknown fields survive a round trip.
/// assert!(serde_json::to_string(&event).unwrap().contains(r#""vendor_field":7"#));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    /// A unique id: assigned on ingest when empty; importers derive stable ids from the source.
    pub id: String,
    /// Seconds since the Unix epoch. RFC 3339 strings are accepted on input.
    pub ts: f64,
    /// The turn (`turn_0001`, …) the event belongs to: a user event starts one; the session assigns it.
    pub turn_id: String,
    /// Order inside the turn, from 1; the session assigns it.
    pub seq: u64,
    /// `kind` is accepted as an alias on input, for the neutral workload format.
    pub trace_type: TraceType,
    /// The text; a non-string value given on input is kept as its JSON.
    pub content: String,
    /// Who produced the event: `ingest`, `import:claude-code`, `engine`, …
    pub source_event: String,
    /// Attached images, audio or video, as references.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub media: Option<Media>,
    /// The tool called (tool calls and results).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The id that pairs a tool call with its result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// A tool call's arguments, as JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_args: Option<Value>,
    /// A tool result's structured value, when the tool returned JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_result: Option<Value>,
    /// The error a tool reported instead of a result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_error: Option<String>,
    /// An id the caller chose to tie events to its own records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    /// Free labels the caller attached.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Where an evicted tool output went (its full text is kept on disk and read back in pages).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_result_ref: Option<String>,
    /// Provider-reported usage of the call that produced this event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// A provider item kept verbatim so it can be sent back unchanged
    /// (encrypted reasoning, signed thinking blocks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opaque: Option<Value>,
    /// The patch a working-memory event applies, and the version it makes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub working_memory: Option<crate::base::state::StateUpdate>,
    /// Fields this version does not know, kept as written for the round trip.
    #[serde(flatten)]
    pub extra: UnknownFields,
}

impl Event {
    /// A copy of this event showing `content` instead of its own, which is
    /// not copied (a tool output the guard cut can be megabytes).
    ///
    /// Every field is named, so a field added to [`Event`] does not compile
    /// here until it is copied too.
    pub(crate) fn with_content(&self, content: String) -> Event {
        let Event {
            id,
            ts,
            turn_id,
            seq,
            trace_type,
            content: _,
            source_event,
            media,
            tool_name,
            tool_call_id,
            tool_args,
            tool_result,
            tool_error,
            correlation_id,
            tags,
            tool_result_ref,
            usage,
            opaque,
            working_memory,
            extra,
        } = self;
        Event {
            id: id.clone(),
            ts: *ts,
            turn_id: turn_id.clone(),
            seq: *seq,
            trace_type: *trace_type,
            content,
            source_event: source_event.clone(),
            media: media.clone(),
            tool_name: tool_name.clone(),
            tool_call_id: tool_call_id.clone(),
            tool_args: tool_args.clone(),
            tool_result: tool_result.clone(),
            tool_error: tool_error.clone(),
            correlation_id: correlation_id.clone(),
            tags: tags.clone(),
            tool_result_ref: tool_result_ref.clone(),
            usage: usage.clone(),
            opaque: opaque.clone(),
            working_memory: working_memory.clone(),
            extra: extra.clone(),
        }
    }

    /// An event of `trace_type` with `content`; every other field empty.
    pub fn new(trace_type: TraceType, content: impl Into<String>) -> Self {
        Event {
            id: String::new(),
            ts: 0.0,
            turn_id: String::new(),
            seq: 0,
            trace_type,
            content: content.into(),
            source_event: String::new(),
            media: None,
            tool_name: None,
            tool_call_id: None,
            tool_args: None,
            tool_result: None,
            tool_error: None,
            correlation_id: None,
            tags: Vec::new(),
            tool_result_ref: None,
            usage: None,
            opaque: None,
            working_memory: None,
            extra: UnknownFields::default(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(TraceType::User, content)
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(TraceType::Assistant, content)
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(TraceType::System, content)
    }

    /// A working-memory update: `update` applied to the session's state.
    /// The content says what changed in words, so history search finds it.
    pub fn working_memory(update: crate::base::state::StateUpdate) -> Self {
        let mut event = Self::new(TraceType::WorkingMemory, update.describe());
        event.working_memory = Some(update);
        event
    }

    /// A tool call with its id, tool name and arguments.
    ///
    /// ```
    /// use agentmem::Event;
    /// let call = Event::tool_call("call_1", "read_file", serde_json::json!({"path": "src/lib.rs"}));
    /// assert_eq!(call.tool_call_id.as_deref(), Some("call_1"));
    /// ```
    pub fn tool_call(
        call_id: impl Into<String>,
        tool_name: impl Into<String>,
        args: Value,
    ) -> Self {
        let mut event = Self::new(TraceType::ToolCall, "");
        event.tool_call_id = Some(call_id.into());
        event.tool_name = Some(tool_name.into());
        event.tool_args = Some(args);
        event
    }

    /// A successful tool result for `call_id`.
    pub fn tool_result(call_id: impl Into<String>, output: impl Into<String>) -> Self {
        let mut event = Self::new(TraceType::ToolResult, output);
        event.tool_call_id = Some(call_id.into());
        event
    }

    /// A failed tool result for `call_id`; the error text is also the content.
    pub fn tool_error(call_id: impl Into<String>, error: impl Into<String>) -> Self {
        let error = error.into();
        let mut event = Self::tool_result(call_id, error.clone());
        event.tool_error = Some(error);
        event
    }

    /// Checks what a session needs of an event before it is written: tool
    /// calls and results carry a `tool_call_id`, working-memory updates
    /// carry their patch, and `ts` is a time.
    ///
    /// ```
    /// use agentmem::{Event, TraceType};
    /// assert!(Event::user("hi").validate().is_ok());
    /// assert!(Event::new(TraceType::ToolResult, "orphan").validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), String> {
        let needs_call_id = match self.trace_type {
            TraceType::ToolCall | TraceType::ToolResult => true,
            TraceType::User
            | TraceType::Assistant
            | TraceType::System
            | TraceType::Reasoning
            | TraceType::Summary
            | TraceType::TurnAborted
            | TraceType::WorkingMemory => false,
        };
        match (self.trace_type, &self.working_memory) {
            (TraceType::WorkingMemory, None) => {
                return Err("a working_memory event needs its \"working_memory\" update (kind and patch)".into())
            }
            (TraceType::WorkingMemory, Some(_)) | (_, None) => {}
            (other, Some(_)) => {
                return Err(format!(
                    "a {} event cannot carry a working-memory update; send it as a working_memory event",
                    other.as_str()
                ))
            }
        }
        if needs_call_id && self.tool_call_id.as_deref().is_none_or(str::is_empty) {
            return Err(format!(
                "a {} event needs a tool_call_id",
                self.trace_type.as_str()
            ));
        }
        if let Some(reason) = self.too_deep_value() {
            return Err(reason);
        }
        if !self.ts.is_finite() || self.ts < 0.0 {
            return Err(format!(
                "ts {} is not a time (seconds since the epoch)",
                self.ts
            ));
        }
        Ok(())
    }

    /// Why one of the JSON values the event carries may not be kept, when
    /// one nests deeper than [`crate::base::json::MAX_NESTING`].
    fn too_deep_value(&self) -> Option<String> {
        let named = [
            ("tool_args", self.tool_args.as_ref()),
            ("tool_result", self.tool_result.as_ref()),
            ("opaque", self.opaque.as_ref()),
            (
                "the working-memory patch",
                self.working_memory.as_ref().map(|u| &u.patch.patch),
            ),
        ];
        named
            .into_iter()
            .find_map(|(name, value)| crate::base::json::too_deep(name, value?))
            .or_else(|| {
                self.extra.iter().find_map(|(key, raw)| {
                    crate::base::json::too_deep_text(&format!("field {key:?}"), raw.get())
                })
            })
    }

    /// The text the event says: its content, except for a tool result given
    /// without one (the RAW_TRACE schema allows a structured `tool_result`
    /// or a `tool_error` alone), which says its error text and its
    /// structured result (a string as it is, anything else as compact JSON),
    /// one a line. The model, token counts and history search all read this.
    ///
    /// ```
    /// use agentmem::Event;
    /// let mut result = Event::tool_result("c1", "");
    /// result.tool_result = Some(serde_json::json!({"files": ["a.rs"]}));
    /// assert_eq!(result.text(), r#"{"files":["a.rs"]}"#);
    /// assert_eq!(Event::tool_result("c1", "a.rs").text(), "a.rs");
    /// ```
    pub fn text(&self) -> Cow<'_, str> {
        if !self.content.is_empty() || self.trace_type != TraceType::ToolResult {
            return Cow::Borrowed(&self.content);
        }
        let error = self.tool_error.as_deref().filter(|e| !e.is_empty());
        let structured = match &self.tool_result {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(Cow::Borrowed(text.as_str())),
            Some(value) => Some(Cow::Owned(crate::base::json::to_string(value))),
        };
        match (error, structured) {
            (None, None) => Cow::Borrowed(""),
            (Some(error), None) => Cow::Borrowed(error),
            (None, Some(structured)) => structured,
            (Some(error), Some(structured)) => Cow::Owned(format!("{error}\n{structured}")),
        }
    }

    /// The working-memory update this event makes, if it is one.
    pub(crate) fn state_update(&self) -> Option<&crate::base::state::StateUpdate> {
        if self.trace_type.is_state_update() {
            self.working_memory.as_ref()
        } else {
            None
        }
    }

    /// Whether the event belongs in the model's context: not a subagent's
    /// own (see [`SIDECHAIN_TAG`]), not shown to the user alone (see
    /// [`DISPLAY_ONLY_TAG`]), not left behind by a rewind (see
    /// [`ABANDONED_BRANCH_TAG`]), and not a working-memory update, whose effect
    /// the model sees as the current state in a section of its own.
    pub fn is_in_model_view(&self) -> bool {
        !self.trace_type.is_state_update()
            && !self.tags.iter().any(|t| {
                [SIDECHAIN_TAG, DISPLAY_ONLY_TAG, ABANDONED_BRANCH_TAG].contains(&t.as_str())
            })
    }

    /// Whether the model's view starts over at this event (see [`REPLACES_HISTORY_TAG`]).
    pub fn replaces_history(&self) -> bool {
        self.trace_type == TraceType::Summary && self.tags.iter().any(|t| t == REPLACES_HISTORY_TAG)
    }

    /// Sets the id (builder style).
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// Sets the timestamp in seconds since the epoch (builder style).
    pub fn with_ts(mut self, ts: f64) -> Self {
        self.ts = ts;
        self
    }

    /// Sets the source (builder style).
    pub(crate) fn with_source(mut self, source: impl Into<String>) -> Self {
        self.source_event = source.into();
        self
    }

    /// Adds a tag (builder style).
    pub fn with_tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.push(tag.into());
        self
    }
}

/// The current time in seconds since the Unix epoch.
pub(crate) fn now_ts() -> f64 {
    // Millisecond precision keeps the JSON short and is what transcripts carry.
    (now_millis() as f64) / 1000.0
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_millis() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(now.as_millis()).unwrap_or(u64::MAX)
}

/// Parses an RFC 3339 timestamp (`2025-06-02T18:46:59.937Z`) into epoch seconds.
pub fn parse_rfc3339(text: &str) -> Option<f64> {
    let parsed =
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()?;
    Some(parsed.unix_timestamp_nanos() as f64 / 1e9)
}

/// Formats epoch seconds as RFC 3339 in UTC, to the millisecond.
pub fn format_ts(ts: f64) -> String {
    let nanos = (ts * 1e3).round() as i128 * 1_000_000;
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_else(|| ts.to_string())
}

fn deserialize_ts<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    match Value::deserialize(deserializer)? {
        Value::Number(n) => n
            .as_f64()
            .ok_or_else(|| serde::de::Error::custom("ts is not a finite number")),
        Value::String(s) => parse_rfc3339(&s)
            .or_else(|| s.parse::<f64>().ok())
            .ok_or_else(|| {
                serde::de::Error::custom(format!("ts {s:?} is neither epoch seconds nor RFC 3339"))
            }),
        Value::Null => Ok(0.0),
        other => Err(serde::de::Error::custom(format!(
            "ts must be a number or a string, not {other}"
        ))),
    }
}

/// Content is text; a non-string value (some writers store structured content)
/// is kept as its JSON text rather than refused.
fn deserialize_content<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(deserializer)? {
        Value::String(s) => s,
        Value::Null => String::new(),
        other => other.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_line_of_another_implementation() {
        let line = r#"{"id":"rt_1","ts":1767225600.5,"turn_id":"turn_0001","seq":1,"trace_type":"tool_call","content":"","source_event":"LLMCompleteResponseReceivedEvent","tool_name":"read_file","tool_call_id":"c1","tool_args":{"path":"a.py"},"media":{"images":["a.png"]},"tags":["x"],"tool_result_ref":null,"future":{"k":1}}"#;
        let event: Event = serde_json::from_str(line).unwrap();
        assert_eq!(event.trace_type, TraceType::ToolCall);
        assert_eq!(event.media.as_ref().unwrap().images, vec!["a.png"]);
        assert_eq!(event.extra.get("future").unwrap()["k"], 1);
        let back = serde_json::to_value(&event).unwrap();
        assert_eq!(back["future"]["k"], 1);
        assert_eq!(back["tool_args"]["path"], "a.py");
    }

    #[test]
    fn accepts_rfc3339_timestamps_and_the_kind_alias() {
        let event: Event = serde_json::from_str(
            r#"{"kind":"user","ts":"2025-06-02T18:46:59.937Z","content":"hi"}"#,
        )
        .unwrap();
        assert_eq!(event.trace_type, TraceType::User);
        assert!((event.ts - 1748890019.937).abs() < 1e-3);
        assert_eq!(format_ts(event.ts), "2025-06-02T18:46:59.937Z");
    }

    #[test]
    fn every_trace_type_round_trips_by_name() {
        for t in TraceType::ALL {
            let json = serde_json::to_string(&t).unwrap();
            assert_eq!(json, format!("\"{}\"", t.as_str()));
            assert_eq!(serde_json::from_str::<TraceType>(&json).unwrap(), t);
        }
    }

    #[test]
    fn opaque_reasoning_survives_a_round_trip() {
        let mut event = Event::new(TraceType::Reasoning, "thinking about it");
        event.opaque = Some(serde_json::json!({"type":"reasoning","encrypted_content":"gAAAA=="}));
        let line = serde_json::to_string(&event).unwrap();
        let back: Event = serde_json::from_str(&line).unwrap();
        assert_eq!(back, event);
    }
}
