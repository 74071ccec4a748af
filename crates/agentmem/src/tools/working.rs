//! The working-memory tools given to a session's model:
//! `get_working_memory` and `update_working_memory`.
//!
//! They run against the open session itself (`&mut Session`), not through a
//! second handle: the process that talks to the model already holds the
//! session's writer lock, and an update is an event in that session's log.
//! Like the memory tools, a failure answers with its error as text, so the
//! model can read the current version and try again.
//!
//! ```
//! use agentmem::{Store, tools::working as tools, Durability};
//! use serde_json::json;
//! let dir = tempfile::tempdir().unwrap();
//! let store = Store::open(dir.path(), Durability::Batch).unwrap();
//! let mut session = store.create_session(&Default::default(), None).unwrap();
//! let update = json!({"patch": {"files_reviewed": ["src/lib.rs"]}, "expected_version": 0});
//! let answer = tools::run(&mut session, "update_working_memory", &update).unwrap();
//! assert!(answer.contains("version 1"));
//! let stale = tools::run(&mut session, "update_working_memory", &update).unwrap();
//! assert!(stale.starts_with("error:"));
//! assert!(tools::run(&mut session, "recall", &json!({})).is_none(), "not a working-memory tool");
//! ```

use serde_json::{json, Value};

use crate::base::error::{Error, Result};
use crate::base::state::StatePatch;
use crate::render::ToolSchema;
use crate::session::Session;

/// The tool that reads the state.
pub(crate) const GET_WORKING_MEMORY: &str = "get_working_memory";
/// The tool that changes it.
pub(crate) const UPDATE_WORKING_MEMORY: &str = "update_working_memory";

/// The schemas of both tools, in the neutral shape every renderer takes.
pub fn schemas() -> Vec<ToolSchema> {
    vec![
        ToolSchema {
            name: GET_WORKING_MEMORY.into(),
            description: "Read the working memory: the structured state of the current task (files reviewed, issues found, plan steps and their status, flags), its version, and the JSON Schema it must keep to, if any.".into(),
            parameters: json!({"type": "object", "properties": {}}),
        },
        ToolSchema {
            name: UPDATE_WORKING_MEMORY.into(),
            description: "Change the working memory. Pass an object as a JSON Merge Patch (members replace, null removes) or a list of JSON Patch operations (add, remove, replace, move, copy, test), with the version you last read: a stale version or a change that breaks the schema is refused and nothing changes.".into(),
            parameters: json!({"type": "object", "properties": {
                "patch": {
                    "description": "A JSON Merge Patch object, or a list of JSON Patch operations like {\"op\": \"replace\", \"path\": \"/plan/0/status\", \"value\": \"done\"}.",
                    "anyOf": [{"type": "object"}, {"type": "array", "items": {"type": "object"}}]
                },
                "expected_version": {"type": "integer", "minimum": 0, "description": "The version the change is made against (0 before the first change)."}
            }, "required": ["patch", "expected_version"]}),
        },
    ]
}

/// Runs the working-memory tool `name` on `session`; `None` when `name` is
/// not one of them.
pub fn run(session: &mut Session, name: &str, arguments: &Value) -> Option<String> {
    let answer = match name {
        GET_WORKING_MEMORY => {
            crate::base::arguments::parse::<NoArgs>(name, arguments).map(|_| describe(session))
        }
        UPDATE_WORKING_MEMORY => {
            crate::base::arguments::parse(name, arguments).and_then(|args| update(session, args))
        }
        _ => return None,
    };
    Some(answer.unwrap_or_else(|error| format!("error: {error}")))
}

/// The state, its version and its schema, as the model reads them.
fn describe(session: &Session) -> String {
    let state = session.working_memory();
    let document = serde_json::to_string_pretty(&state.document).expect("a JSON value serializes");
    let schema = match session.working_memory_schema() {
        Ok(Some(schema)) => format!(
            "\n\nschema ({}):\n{}",
            schema.scope().as_str(),
            schema.json()
        ),
        Ok(None) => String::new(),
        Err(error) => format!("\n\nschema: {error}"),
    };
    format!("version: {}\n\n{document}{schema}", state.version)
}

/// What `get_working_memory` takes: nothing.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

/// What `update_working_memory` takes; both are needed, and their absence
/// is answered with what to send.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateArgs {
    #[serde(default)]
    patch: Option<Value>,
    #[serde(default)]
    expected_version: Option<u64>,
}

fn update(session: &mut Session, args: UpdateArgs) -> Result<String> {
    let patch = args.patch.ok_or_else(|| Error::BadQuery {
        message: format!(
            "{UPDATE_WORKING_MEMORY} needs a \"patch\" (an object or a list of operations)"
        ),
    })?;
    let expected = args.expected_version.ok_or_else(|| Error::BadQuery {
            message: format!(
                "{UPDATE_WORKING_MEMORY} needs \"expected_version\", the version you last read ({} now)",
                session.working_memory().version
            ),
        })?;
    let state = session.update_working_memory(StatePatch::from_json(patch)?, Some(expected))?;
    Ok(format!(
        "Updated. The working memory is now at version {}.",
        state.version
    ))
}
