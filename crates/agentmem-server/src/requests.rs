//! What each operation takes: one type per operation, read the same way
//! whether the arguments came as an HTTP body, query string and path, a
//! JSON line, or an MCP tool call. A field an operation does not know is
//! refused with its name, never ignored: a misspelt `expected_hash` or
//! `strategy` must not quietly turn a setting off.
//!
//! Each type's JSON Schema (its doc comments are the fields' descriptions)
//! is what `/openapi.json` documents the operation's fields with.

use agentmem::pipeline::strategy::{CompactionTiming, MemoryInjection, Strategy};
use agentmem::Event;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::error::ServiceError;
use crate::schemas;
use crate::service::Op;

pub use agentmem::tools::{UpdateMemoryArgs as ReplaceMemory, WriteMemoryArgs as AppendMemory};

/// The largest count a request may carry: the largest integer every JSON
/// client (JavaScript's included) reads exactly.
pub const MAX_COUNT: u64 = (1 << 53) - 1;

/// A count: an integer from 0 to [`MAX_COUNT`], also when written as `12.0`
/// or, from a query string, as `"12"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, JsonSchema)]
#[schemars(inline)]
pub struct Count(#[schemars(range(max = MAX_COUNT))] pub u64);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Count, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let count = match &value {
            Value::String(text) => text.parse::<u64>().ok(),
            other => other.as_u64().or_else(|| {
                let float = other.as_f64()?;
                (float >= 0.0 && float.fract() == 0.0 && float <= MAX_COUNT as f64)
                    .then_some(float as u64)
            }),
        };
        count
            .filter(|count| *count <= MAX_COUNT)
            .map(Count)
            .ok_or_else(|| D::Error::custom(format!("must be an integer from 0 to {MAX_COUNT}")))
    }
}

/// A flag: `true` or `false`, also as a query string's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, JsonSchema)]
#[schemars(inline)]
pub struct Flag(pub bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Flag, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Bool(flag) => Ok(Flag(flag)),
            Value::String(text) if text == "true" || text == "false" => Ok(Flag(text == "true")),
            _ => Err(D::Error::custom("must be true or false")),
        }
    }
}

/// An operation that takes nothing (`sessions`, `read_memory`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Nothing {}

/// An operation on one session and nothing else.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(example = serde_json::json!({"session": "s1"}))]
pub struct OnSession {
    /// The session id (letters, digits, '-', '_', '.'; at most 128 bytes).
    #[schemars(with = "schemas::SessionIdText")]
    pub session: String,
}

/// `create_session`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(example = serde_json::json!({"session": "fix-the-build"}))]
pub struct CreateSession {
    /// The id; generated when left out.
    #[serde(default)]
    #[schemars(with = "Option<schemas::SessionIdText>")]
    pub session: Option<String>,
}

/// `fork`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(example = serde_json::json!({"session": "s1", "at_turn": "turn_0003", "new_session": "s1-retry"}))]
pub struct Fork {
    /// The session id (letters, digits, '-', '_', '.'; at most 128 bytes).
    #[schemars(with = "schemas::SessionIdText")]
    pub session: String,
    /// Copy up to and including this turn (turn_0003); the whole session
    /// when left out.
    #[serde(default)]
    #[schemars(with = "Option<schemas::TurnIdText>")]
    pub at_turn: Option<String>,
    /// The new session's id; generated when left out.
    #[serde(default)]
    #[schemars(with = "Option<schemas::SessionIdText>")]
    pub new_session: Option<String>,
}

/// `append`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(example = serde_json::json!({"session": "s1", "events": [
    {"id": "e1", "trace_type": "user", "content": "run the tests"},
    {"id": "e2", "trace_type": "tool_call", "tool_call_id": "c1", "tool_name": "bash", "tool_args": {"cmd": "cargo test"}},
    {"id": "e3", "trace_type": "tool_result", "tool_call_id": "c1", "content": "test result: ok"},
    {"id": "e4", "trace_type": "assistant", "content": "The tests pass.", "usage": {"prompt_tokens": 812, "completion_tokens": 9}}
]}))]
pub struct Append {
    /// The session id (letters, digits, '-', '_', '.'; at most 128 bytes).
    #[schemars(with = "schemas::SessionIdText")]
    pub session: String,
    /// The events, in order.
    #[schemars(with = "Vec<schemas::Event>")]
    pub events: Vec<Event>,
}

/// The fields of an `append`, its events read elsewhere (from the request's
/// text, which keeps their numbers as written).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppendFields {
    pub session: String,
    pub events: serde::de::IgnoredAny,
}

/// `events`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(example = serde_json::json!({"session": "s1", "after_seq": 10, "limit": 100}))]
pub struct Events {
    /// The session id (letters, digits, '-', '_', '.'; at most 128 bytes).
    #[schemars(with = "schemas::SessionIdText")]
    pub session: String,
    /// Only events after this seq.
    #[serde(default)]
    pub after_seq: Option<Count>,
    /// At most this many events.
    #[serde(default)]
    pub limit: Option<Count>,
}

/// `prepare`: the call to prepare for, and this call's own settings, which
/// win over the session's and the agent's.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(example = serde_json::json!({
    "session": "s1",
    "model": "claude-sonnet-4-5",
    "system": "You are a careful coding agent.",
    "live_context": "Today is 2026-01-31.",
    "strategy": "auto",
    "memory": "on",
    "tools": [{"name": "bash", "description": "Run a command.", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}]
}))]
pub struct Prepare {
    /// The session id (letters, digits, '-', '_', '.'; at most 128 bytes).
    #[schemars(with = "schemas::SessionIdText")]
    pub session: String,
    /// The model the context is for (its window and tokenizer come from the
    /// registry).
    #[schemars(length(min = 1))]
    pub model: String,
    /// The payload shape; from the model name when left out.
    #[serde(default)]
    #[schemars(with = "Option<schemas::TargetName>")]
    pub target: Option<String>,
    /// The system prompt.
    #[serde(default)]
    pub system: Option<String>,
    /// System text that changes from call to call (the date, open files),
    /// sent after the conversation so the cached prefix stays the same.
    #[serde(default)]
    pub live_context: Option<String>,
    /// off: a plain body, without cache marks, the live context at the end
    /// of the system prompt.
    #[serde(default)]
    #[schemars(with = "Option<schemas::OnOff>")]
    pub prompt_cache: Option<String>,
    /// The agent's own tools.
    #[serde(default)]
    #[schemars(with = "Option<Vec<schemas::ToolShape>>")]
    pub tools: Option<Vec<Value>>,
    /// How the context is shrunk past the trigger, for this call (over the
    /// session's and the agent's [context] strategy).
    #[serde(default)]
    #[schemars(with = "Option<schemas::StrategyName>")]
    pub strategy: Option<Strategy>,
    /// When an automatic compaction is drafted, for this call: `inline` (in
    /// the prepare that finds it due) or `background` (on a thread of its
    /// own while the model answers, applied by the next prepare).
    #[serde(default)]
    #[schemars(with = "Option<schemas::CompactionTimingName>")]
    pub compaction_timing: Option<CompactionTiming>,
    /// Whether long-term memory (MEMORY.md, project files, what earlier
    /// sessions left) is injected, for this call (over the session's and the
    /// agent's [context] memory).
    #[serde(default)]
    #[schemars(with = "Option<schemas::MemorySwitch>")]
    pub memory: Option<MemoryInjection>,
    /// The model's window in tokens, for this call.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub context_window: Option<Count>,
    /// Tokens kept for the reply, for this call.
    #[serde(default)]
    pub max_output_tokens: Option<Count>,
    /// Tokens kept free for counting error (default 13000), for this call.
    #[serde(default)]
    pub safety_margin: Option<Count>,
    /// Compaction is due at this share of the input budget (default 0.8),
    /// for this call.
    #[serde(default)]
    #[schemars(range(max = 1), extend("exclusiveMinimum" = 0))]
    pub trigger_ratio: Option<f64>,
}

/// `prepare`'s own field beside [`Prepare`]'s (which `recover_overflow`
/// shares): report what the call would send and do, and change nothing.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(example = serde_json::json!({"dry_run": true}))]
pub struct DryRun {
    /// Answer what the call would send and do (would_compact), from the
    /// session's files, and change nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// The fields of [`DryRun`].
pub const DRY_RUN_FIELDS: [&str; 1] = ["dry_run"];

/// `recover_overflow`'s own fields; the rest are [`Prepare`]'s.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(example = serde_json::json!({
    "status": 400,
    "error_body": "{\"error\":{\"message\":\"This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens.\",\"code\":\"context_length_exceeded\"}}"
}))]
pub struct Overflow {
    /// The provider's HTTP status (400 when left out).
    #[serde(default)]
    #[schemars(range(min = 100, max = 599))]
    pub status: Option<u16>,
    /// The provider's error body: it must say the context was too long (400
    /// otherwise).
    pub error_body: String,
}

/// The fields of [`Overflow`], which `recover_overflow` takes beside [`Prepare`]'s.
pub const OVERFLOW_FIELDS: [&str; 2] = ["status", "error_body"];

/// `compact`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(example = serde_json::json!({"session": "s1", "focus": "the failing migration"}))]
pub struct Compact {
    /// The session id (letters, digits, '-', '_', '.'; at most 128 bytes).
    #[schemars(with = "schemas::SessionIdText")]
    pub session: String,
    /// What the summary should favour.
    #[serde(default)]
    pub focus: Option<String>,
}

/// `update_state`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(example = serde_json::json!({"session": "s1", "patch": {"goal": "fix the build", "done": ["reproduced"]}, "expected_version": 0}))]
pub struct UpdateState {
    /// The session id (letters, digits, '-', '_', '.'; at most 128 bytes).
    #[schemars(with = "schemas::SessionIdText")]
    pub session: String,
    /// An RFC 7396 merge patch object or an RFC 6902 list of operations. A
    /// patch that does not apply, or whose result breaks the schema, is 400
    /// (naming the path) and changes nothing.
    #[schemars(with = "schemas::PatchDocument")]
    pub patch: Value,
    /// Apply only to this version.
    #[serde(default)]
    pub expected_version: Option<Count>,
}

/// `set_state_schema`: `schema` must be given; null removes it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(example = serde_json::json!({"session": "s1", "scope": "session", "schema": {"type": "object", "properties": {"goal": {"type": "string"}}}}))]
pub struct SetStateSchema {
    /// The session id (letters, digits, '-', '_', '.'; at most 128 bytes).
    #[schemars(with = "schemas::SessionIdText")]
    pub session: String,
    /// For this session (the default) or for every session of the agent.
    #[serde(default)]
    #[schemars(with = "Option<schemas::ScopeName>")]
    pub scope: Option<String>,
    /// A JSON Schema (draft 2020-12 or 7) whose references stay inside it,
    /// which the current state keeps to (400 otherwise); null removes it.
    #[schemars(with = "schemas::SchemaOrNull")]
    pub schema: Value,
}

/// `search`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(example = serde_json::json!({"query": "migration failed", "role": "tool", "since": "2026-01-01", "limit": 5}))]
pub struct Search {
    /// Words to find.
    #[schemars(length(min = 1))]
    pub query: String,
    /// Only this session.
    #[serde(default)]
    #[schemars(with = "Option<schemas::SessionIdText>")]
    pub session: Option<String>,
    /// Only what this role said.
    #[serde(default)]
    #[schemars(with = "Option<schemas::RoleName>")]
    pub role: Option<String>,
    /// A date (2026-01-31) or RFC 3339 time.
    #[serde(default)]
    #[schemars(with = "Option<schemas::DateOrTime>")]
    pub since: Option<String>,
    /// A date or RFC 3339 time.
    #[serde(default)]
    #[schemars(with = "Option<schemas::DateOrTime>")]
    pub until: Option<String>,
    /// Hits to return (10).
    #[serde(default)]
    pub limit: Option<Count>,
}

/// `recall`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(example = serde_json::json!({"query": "How do deploys work here?", "budget": 1500, "session": "s1"}))]
pub struct Recall {
    /// The question.
    #[schemars(length(min = 1))]
    pub query: String,
    /// Tokens to fill (2000).
    #[serde(default)]
    pub budget: Option<Count>,
    /// Leave this session's own history out.
    #[serde(default)]
    #[schemars(with = "Option<schemas::SessionIdText>")]
    pub session: Option<String>,
}

/// `facts`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(example = serde_json::json!({"all": true}))]
pub struct Facts {
    /// Superseded and retired facts too.
    #[serde(default)]
    pub all: Option<Flag>,
}

/// `remember_fact`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(example = serde_json::json!({"fact": "Deploys go through the canary stage.", "tags": ["deploy"], "session": "s1"}))]
pub struct RememberFact {
    /// One sentence.
    #[schemars(length(min = 1))]
    pub fact: String,
    /// Words to file it under.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The session it came from.
    #[serde(default)]
    pub session: Option<String>,
}

/// `tool`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(example = serde_json::json!({"name": "write_memory", "arguments": {"content": "- The user prefers tabs."}, "session": "s1"}))]
pub struct Tool {
    /// The memory tool's name (the tools operation lists them).
    pub name: String,
    /// The model's arguments.
    #[serde(default)]
    #[schemars(with = "Option<schemas::AnyObject>")]
    pub arguments: Option<Value>,
    /// The session whose model called it (needed for the working-memory
    /// tools).
    #[serde(default)]
    #[schemars(with = "Option<schemas::SessionIdText>")]
    pub session: Option<String>,
}

/// `tools`, and the query of `POST /mcp`: whose tools.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(example = serde_json::json!({"session": "s1"}))]
pub struct Tools {
    /// The session whose model uses the tools: its evicted outputs are read,
    /// its own history is left out of recall, and its working-memory tools
    /// are offered too.
    #[serde(default)]
    #[schemars(with = "Option<schemas::SessionIdText>")]
    pub session: Option<String>,
}

/// An operation with its arguments read into the type it takes.
#[derive(Debug, Clone)]
pub enum Request {
    CreateSession(CreateSession),
    Sessions,
    ResumeSession(OnSession),
    Fork(Fork),
    DeleteSession(OnSession),
    Append(Append),
    Events(Events),
    Prepare(Prepare, DryRun),
    Compact(Compact),
    RecoverOverflow(Prepare, Overflow),
    EndSession(OnSession),
    State(OnSession),
    UpdateState(UpdateState),
    StateHistory(OnSession),
    SetStateSchema(SetStateSchema),
    Search(Search),
    Recall(Recall),
    ReadMemory,
    AppendMemory(AppendMemory),
    ReplaceMemory(ReplaceMemory),
    Facts(Facts),
    RememberFact(RememberFact),
    Tool(Tool),
    Tools(Tools),
}

impl Request {
    /// The JSON object `args` read as what `op` takes; a field `op` does
    /// not take is refused, with the fields it does.
    pub fn read(op: Op, args: &Value) -> Result<Request, ServiceError> {
        if !args.is_object() {
            return Err(ServiceError::bad_request(
                "the request body must be a JSON object",
            ));
        }
        Ok(match op {
            Op::CreateSession => Request::CreateSession(read(op, args)?),
            Op::Sessions => {
                let Nothing {} = read(op, args)?;
                Request::Sessions
            }
            Op::ResumeSession => Request::ResumeSession(read(op, args)?),
            Op::Fork => Request::Fork(read(op, args)?),
            Op::DeleteSession => Request::DeleteSession(read(op, args)?),
            Op::Append => Request::Append(read(op, args)?),
            Op::Events => Request::Events(read(op, args)?),
            Op::Prepare => {
                let (prepare, dry_run) = read_split(op, args, &DRY_RUN_FIELDS)?;
                Request::Prepare(prepare, dry_run)
            }
            Op::Compact => Request::Compact(read(op, args)?),
            Op::RecoverOverflow => {
                let (prepare, overflow) = read_split(op, args, &OVERFLOW_FIELDS)?;
                Request::RecoverOverflow(prepare, overflow)
            }
            Op::EndSession => Request::EndSession(read(op, args)?),
            Op::State => Request::State(read(op, args)?),
            Op::UpdateState => Request::UpdateState(read(op, args)?),
            Op::StateHistory => Request::StateHistory(read(op, args)?),
            Op::SetStateSchema => Request::SetStateSchema(read(op, args)?),
            Op::Search => Request::Search(read(op, args)?),
            Op::Recall => Request::Recall(read(op, args)?),
            Op::ReadMemory => {
                let Nothing {} = read(op, args)?;
                Request::ReadMemory
            }
            Op::AppendMemory => Request::AppendMemory(read(op, args)?),
            Op::ReplaceMemory => Request::ReplaceMemory(read(op, args)?),
            Op::Facts => Request::Facts(read(op, args)?),
            Op::RememberFact => Request::RememberFact(read(op, args)?),
            Op::Tool => Request::Tool(read(op, args)?),
            Op::Tools => Request::Tools(read(op, args)?),
        })
    }
}

/// `args` read as what `op` takes.
pub(crate) fn read<T: DeserializeOwned>(op: Op, args: &Value) -> Result<T, ServiceError> {
    Ok(agentmem::base::arguments::parse(op.name(), args)?)
}

/// `args` read as two types `op` takes: `own` fields as `U`, the rest as
/// `T` (read first, so an unknown field is named with the fields `T` takes).
fn read_split<T, U>(op: Op, args: &Value, own: &[&str]) -> Result<(T, U), ServiceError>
where
    T: DeserializeOwned,
    U: DeserializeOwned,
{
    let (mine, rest): (Map<String, Value>, Map<String, Value>) = args
        .as_object()
        .into_iter()
        .flatten()
        .map(|(key, value)| (key.clone(), value.clone()))
        .partition(|(key, _)| own.contains(&key.as_str()));
    let rest = read(op, &Value::Object(rest))?;
    Ok((rest, read(op, &Value::Object(mine))?))
}
