//! What the operations answer, where the service builds the answer itself
//! (the rest answer with an engine type as it serializes). Each type's JSON
//! Schema is what `/openapi.json` documents the reply with.

use agentmem::working::StateVersion;
use agentmem::{ContextStats, Event, Payload, SessionMeta, WorkingMemory};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::error::ErrorKind;
use crate::schemas;

/// `/healthz`: the server is up.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Health {
    pub status: HealthStatus,
}

/// The only status `/healthz` answers.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum HealthStatus {
    Ok,
}

/// A refused or failed request; nothing was changed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "Error")]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// What went wrong.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ErrorDetail {
    pub kind: ErrorKind,
    /// What went wrong and what to do.
    pub message: String,
}

/// `create_session`: the new session.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Created {
    pub session: String,
    #[schemars(with = "schemas::SessionMeta")]
    pub meta: SessionMeta,
}

/// `resume_session`: where the session stands.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Resumed {
    #[schemars(with = "schemas::SessionMeta")]
    pub meta: SessionMeta,
    /// The current turn's id.
    pub turn: String,
    /// What the session learned of each model's counts.
    pub calibration: Vec<ModelCalibration>,
}

/// A learned ratio of provider-reported to counted prompt tokens.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ModelCalibration {
    pub model: String,
    pub factor: f64,
    pub samples: u64,
}

/// `delete_session`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Deleted {
    /// The id of the session deleted.
    pub deleted: String,
}

/// `append`: what was written.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Appended {
    /// Events appended to the log.
    pub appended: usize,
    /// Events skipped because the session already had their id.
    pub duplicates: usize,
    /// Tool outputs evicted to files (the model sees a preview).
    pub evicted: usize,
    /// Prepare again before the next model call.
    pub compaction_due: bool,
}

/// `events`: the history in order.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct EventPage<'a> {
    #[schemars(with = "Vec<schemas::Event>")]
    pub events: Vec<&'a Event>,
}

/// `prepare` and `recover_overflow`: the payload and its stats.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PreparedReply<'a> {
    #[schemars(with = "schemas::Payload")]
    pub payload: &'a Payload,
    #[schemars(with = "schemas::ContextStats")]
    pub stats: &'a ContextStats,
    /// Present (true) when the request was a dry run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    /// Dry runs: whether a writer's call would have compacted the session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub would_compact: Option<bool>,
}

/// `state`: the working memory and the schema it keeps to.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct State {
    /// How many updates made it: 0 for the empty state.
    pub version: u64,
    /// FNV-1a 64 of the document's JSON, hex.
    pub hash: String,
    /// The state, always an object.
    #[schemars(with = "schemas::AnyObject")]
    pub document: Value,
    /// The JSON Schema updates must keep to, or null.
    #[schemars(with = "schemas::SchemaOrNull")]
    pub schema: Value,
}

/// `update_state`: the new state.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Versioned {
    pub version: u64,
    pub hash: String,
    /// The state.
    #[schemars(with = "schemas::AnyObject")]
    pub document: Value,
}

impl From<&WorkingMemory> for Versioned {
    fn from(state: &WorkingMemory) -> Versioned {
        Versioned {
            version: state.version,
            hash: state.hash.clone(),
            document: state.document.clone(),
        }
    }
}

/// `state_history`: versions, oldest first.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StateHistory {
    #[schemars(with = "Vec<schemas::StateVersion>")]
    pub versions: Vec<StateVersion>,
}

/// `set_state_schema`: where the schema now applies.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ScopeSet {
    #[schemars(with = "schemas::ScopeName")]
    pub scope: &'static str,
}

/// `tool`: the tool's answer, which the model reads.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ToolAnswer {
    pub text: String,
}
