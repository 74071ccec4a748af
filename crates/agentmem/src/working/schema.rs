//! The optional JSON Schema that every working-memory update must satisfy,
//! set for an agent (all its sessions) or for one session (which then wins).
//!
//! A schema is checked as a schema when it is set, and kept as
//! `working_memory.schema.json` in the agent's or the session's folder
//! (on another backend, where its [`MemoryStorage`] keeps it).
//! Drafts 2020-12 (the default when `$schema` is absent), 2019-09, 7, 6 and
//! 4 are understood. References reach only inside the schema itself: a
//! schema that would load another document is refused, so validation never
//! touches the network or other files.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::base::error::{Error, IoContext, Result, SchemaScope};
use crate::base::fs::write_atomic;
use crate::base::id::{AgentId, SessionId};
use crate::storage::memory::{MemoryStorage, SchemaOf};

/// The schema's file name, in an agent's or a session's folder.
pub(crate) const SCHEMA_FILE: &str = "working_memory.schema.json";

/// The location the schema document is compiled under; only for its own `$ref`s.
const SCHEMA_URL: &str = "urn:agentmem:working-memory-schema";

/// A compiled schema and the JSON it came from.
pub struct StateSchema {
    scope: SchemaScope,
    json: Value,
    compiled: boon::Schemas,
    index: boon::SchemaIndex,
}

impl std::fmt::Debug for StateSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateSchema")
            .field("scope", &self.scope)
            .field("json", &self.json)
            .finish()
    }
}

/// Refuses every document a schema would load: schemas stand alone.
struct NoExternalDocuments;

impl boon::UrlLoader for NoExternalDocuments {
    fn load(&self, url: &str) -> std::result::Result<Value, Box<dyn std::error::Error>> {
        Err(format!("{url} is outside the schema; working-memory schemas must be self-contained (use $defs)").into())
    }
}

impl StateSchema {
    /// Compiles `json` as a schema (checked against its draft's metaschema).
    ///
    /// ```
    /// use agentmem::base::error::SchemaScope;
    /// use agentmem::working::schema::StateSchema;
    /// let schema = serde_json::json!({"type": "object", "properties": {"done": {"type": "boolean"}}});
    /// let schema = StateSchema::compile(schema, SchemaScope::Session).unwrap();
    /// let error = schema.validate(&serde_json::json!({"done": "yes"})).unwrap_err();
    /// assert!(error.to_string().contains("/done"));
    /// assert!(StateSchema::compile(serde_json::json!({"type": 7}), SchemaScope::Agent).is_err());
    /// ```
    pub fn compile(json: Value, scope: SchemaScope) -> Result<StateSchema> {
        let refused = |message: String| Error::WorkingMemorySchema { scope, message };
        if let Some(reason) = crate::base::json::too_deep("the schema", &json) {
            return Err(refused(reason));
        }
        let mut compiler = boon::Compiler::new();
        compiler.use_loader(Box::new(NoExternalDocuments));
        compiler
            .add_resource(SCHEMA_URL, json.clone())
            .map_err(|e| refused(format!("{e:#}")))?;
        let mut compiled = boon::Schemas::new();
        let index = compiler
            .compile(SCHEMA_URL, &mut compiled)
            .map_err(|e| refused(format!("{e:#}")))?;
        Ok(StateSchema {
            scope,
            json,
            compiled,
            index,
        })
    }

    /// Where the schema applies.
    pub fn scope(&self) -> SchemaScope {
        self.scope
    }

    /// The schema as it was set.
    pub fn json(&self) -> &Value {
        &self.json
    }

    /// Checks `document`; the error names the first failing path.
    pub fn validate(&self, document: &Value) -> Result<()> {
        let Err(error) = self.compiled.validate(document, self.index) else {
            return Ok(());
        };
        let mut leaves = Vec::new();
        collect_leaves(&error, &mut leaves);
        let (path, message) = leaves
            .first()
            .cloned()
            .unwrap_or_else(|| (error.instance_location.to_string(), error.kind.to_string()));
        Err(Error::WorkingMemoryInvalid {
            path,
            message,
            others: leaves.len().saturating_sub(1),
            scope: self.scope,
        })
    }

    /// The schema that applies to the session in `session_dir` of the agent
    /// in `agent_dir`: the session's own, else the agent's, else none.
    pub fn load(agent_dir: &Path, session_dir: &Path) -> Result<Option<StateSchema>> {
        for (dir, scope) in [
            (session_dir, SchemaScope::Session),
            (agent_dir, SchemaScope::Agent),
        ] {
            if let Some(json) = read_schema_file(&schema_path(dir), scope)? {
                return StateSchema::compile(json, scope).map(Some);
            }
        }
        Ok(None)
    }

    /// The schema that applies to session `id` of `agent` whose memory
    /// `memory` keeps: the session's own, else the agent's, else none.
    pub fn load_from(
        memory: &dyn MemoryStorage,
        agent: &AgentId,
        id: &SessionId,
    ) -> Result<Option<StateSchema>> {
        for of in [SchemaOf::Session(id), SchemaOf::Agent] {
            if let Some(json) = memory.state_schema(agent, of)? {
                return StateSchema::compile(json, of.scope()).map(Some);
            }
        }
        Ok(None)
    }
}

/// The schema file in `dir` (an agent's or a session's folder).
pub(crate) fn schema_path(dir: &Path) -> PathBuf {
    dir.join(SCHEMA_FILE)
}

/// Writes `schema` (already compiled, so known to be one) into `dir`, or
/// removes the file there when `None`.
pub(crate) fn store_schema(dir: &Path, schema: Option<&StateSchema>) -> Result<()> {
    store_schema_json(dir, schema.map(StateSchema::json))
}

/// Writes the schema document `json` into `dir` as [`store_schema`] does,
/// or removes the file there when `None`.
pub(crate) fn store_schema_json(dir: &Path, json: Option<&Value>) -> Result<()> {
    let path = schema_path(dir);
    match json {
        Some(json) => {
            let text = serde_json::to_vec_pretty(json).expect("a JSON value serializes");
            crate::base::fs::create_dir_all(dir).io("create", dir)?;
            write_atomic(&path, &text)
        }
        None => match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e).io("remove", &path),
        },
    }
}

/// The schema document in the file at `path`, if there is one.
pub(crate) fn read_schema_file(path: &Path, scope: SchemaScope) -> Result<Option<Value>> {
    match std::fs::read(path) {
        Ok(bytes) => {
            serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| Error::WorkingMemorySchema {
                    scope,
                    message: format!("{} is not JSON: {e}", path.display()),
                })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).io("read", path),
    }
}

/// The innermost errors, where the document actually fails, in order.
fn collect_leaves(error: &boon::ValidationError<'_, '_>, leaves: &mut Vec<(String, String)>) {
    if error.causes.is_empty() {
        leaves.push((error.instance_location.to_string(), error.kind.to_string()));
    }
    for cause in &error.causes {
        collect_leaves(cause, leaves);
    }
}
