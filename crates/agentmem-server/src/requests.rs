//! What each operation takes: one type per operation, read the same way
//! whether the arguments came as an HTTP body, query string and path, a
//! JSON line, or an MCP tool call. A field an operation does not know is
//! refused with its name, never ignored: a misspelt `expected_hash` or
//! `strategy` must not quietly turn a setting off.

use agentmem::context::strategy::{MemoryInjection, Strategy};
use agentmem::event::Event;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

pub use agentmem::memory::tools::{
    UpdateMemoryArgs as ReplaceMemory, WriteMemoryArgs as AppendMemory,
};

/// The largest count a request may carry: the largest integer every JSON
/// client (JavaScript's included) reads exactly.
pub const MAX_COUNT: u64 = (1 << 53) - 1;

/// A count: an integer from 0 to [`MAX_COUNT`], also when written as `12.0`
/// or, from a query string, as `"12"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count(pub u64);

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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Nothing {}

/// An operation on one session and nothing else.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnSession {
    pub session: String,
}

/// `create_session`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateSession {
    #[serde(default)]
    pub session: Option<String>,
}

/// `fork`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fork {
    pub session: String,
    #[serde(default)]
    pub at_turn: Option<String>,
    #[serde(default)]
    pub new_session: Option<String>,
}

/// `append`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Append {
    pub session: String,
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
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Events {
    pub session: String,
    #[serde(default)]
    pub after_seq: Option<Count>,
    #[serde(default)]
    pub limit: Option<Count>,
}

/// `prepare`: the call to prepare for, and this call's own settings, which
/// win over the session's and the agent's.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prepare {
    pub session: String,
    pub model: String,
    #[serde(default)]
    pub target: Option<String>,
    #[serde(default)]
    pub system: Option<String>,
    #[serde(default)]
    pub live_context: Option<String>,
    #[serde(default)]
    pub prompt_cache: Option<String>,
    #[serde(default)]
    pub tools: Option<Vec<Value>>,
    #[serde(default)]
    pub strategy: Option<Strategy>,
    #[serde(default)]
    pub memory: Option<MemoryInjection>,
    #[serde(default)]
    pub context_window: Option<Count>,
    #[serde(default)]
    pub max_output_tokens: Option<Count>,
    #[serde(default)]
    pub safety_margin: Option<Count>,
    #[serde(default)]
    pub trigger_ratio: Option<f64>,
}

/// `prepare`'s own field beside [`Prepare`]'s (which `recover_overflow`
/// shares): report what the call would send and do, and change nothing.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DryRun {
    #[serde(default)]
    pub dry_run: bool,
}

/// The fields of [`DryRun`].
pub const DRY_RUN_FIELDS: [&str; 1] = ["dry_run"];

/// `recover_overflow`'s own fields; the rest are [`Prepare`]'s.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overflow {
    #[serde(default)]
    pub status: Option<u16>,
    pub error_body: String,
}

/// The fields of [`Overflow`], which `recover_overflow` takes beside [`Prepare`]'s.
pub const OVERFLOW_FIELDS: [&str; 2] = ["status", "error_body"];

/// `compact`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compact {
    pub session: String,
    #[serde(default)]
    pub focus: Option<String>,
}

/// `update_state`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateState {
    pub session: String,
    pub patch: Value,
    #[serde(default)]
    pub expected_version: Option<Count>,
}

/// `set_state_schema`: `schema` must be given; null removes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetStateSchema {
    pub session: String,
    #[serde(default)]
    pub scope: Option<String>,
    pub schema: Value,
}

/// `search`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Search {
    pub query: String,
    #[serde(default)]
    pub session: Option<String>,
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default)]
    pub since: Option<String>,
    #[serde(default)]
    pub until: Option<String>,
    #[serde(default)]
    pub limit: Option<Count>,
}

/// `recall`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recall {
    pub query: String,
    #[serde(default)]
    pub budget: Option<Count>,
    #[serde(default)]
    pub session: Option<String>,
}

/// `facts`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Facts {
    #[serde(default)]
    pub all: Option<Flag>,
}

/// `remember_fact`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RememberFact {
    pub fact: String,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub session: Option<String>,
}

/// `tool`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tool {
    pub name: String,
    #[serde(default)]
    pub arguments: Option<Value>,
    #[serde(default)]
    pub session: Option<String>,
}

/// `tools`, and the query of `POST /mcp`: whose tools.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tools {
    #[serde(default)]
    pub session: Option<String>,
}
