//! Working memory: the structured state of the current task (files reviewed,
//! issues found, plan steps and their status, flags), kept as a typed,
//! versioned JSON document in every session.
//!
//! Between the transcript and long-term memory, an agent keeps the state of
//! what it is doing. Kept in ad-hoc variables it vanishes on resume; kept in
//! a tool result, a compaction can drop it. Here it is first-class:
//!
//! - every change is a JSON Merge Patch (RFC 7396) or a JSON Patch
//!   (RFC 6902) with an optional expected version (compare-and-swap), and an
//!   event in the session's log, so it is replayed on resume, forked with
//!   the session and found by history search;
//! - an optional JSON Schema, set per agent or per session ([`schema`]),
//!   validates every change before anything is written;
//! - the current state is materialized in `working_memory.json` ([`cache`])
//!   for O(1) reads, rebuilt from the log when missing or behind;
//! - the current state is rendered into every prepared context as a section
//!   of its own ([`section`]) and is never compacted away; the compaction
//!   snapshot names it by version and hash ([`StateMark`]) but does not
//!   hold it, as the snapshot holds nothing unredacted.
//!
//! ```
//! use agentmem::{store::Store, working::StatePatch, Durability};
//! use serde_json::json;
//! let dir = tempfile::tempdir().unwrap();
//! let store = Store::open(dir.path(), Durability::Batch).unwrap();
//! let mut session = store.create_session(&Default::default(), None).unwrap();
//! let plan = StatePatch::from_json(json!({"plan": [{"step": "read the code", "done": false}]})).unwrap();
//! assert_eq!(session.update_working_memory(plan, Some(0)).unwrap().version, 1);
//! let done = StatePatch::from_json(json!([{"op": "replace", "path": "/plan/0/done", "value": true}])).unwrap();
//! session.update_working_memory(done.clone(), Some(1)).unwrap();
//! assert_eq!(session.working_memory().document["plan"][0]["done"], true);
//! // A change made against a version that is no longer current is refused.
//! assert!(session.update_working_memory(done, Some(1)).is_err());
//! ```

pub mod cache;
pub mod schema;
pub mod section;
pub mod tools;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::event::Event;

/// The two standard ways to write a change to a JSON document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PatchKind {
    /// RFC 7396: an object whose members replace, add or (with `null`) remove
    /// the document's members.
    MergePatch,
    /// RFC 6902: a list of operations (`add`, `remove`, `replace`, `move`,
    /// `copy`, `test`) at JSON Pointer paths.
    JsonPatch,
}

impl PatchKind {
    /// The name people read, e.g. in history listings.
    pub fn label(self) -> &'static str {
        match self {
            PatchKind::MergePatch => "merge patch",
            PatchKind::JsonPatch => "JSON patch",
        }
    }
}

/// A change to the working memory, in one of the two standard forms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatePatch {
    pub kind: PatchKind,
    pub patch: Value,
}

impl StatePatch {
    /// Reads a patch, telling its form from its shape: a list is a JSON
    /// Patch, an object is a merge patch. Nothing else changes an object
    /// document, so the shape is never ambiguous.
    ///
    /// ```
    /// use agentmem::working::{PatchKind, StatePatch};
    /// let ops = serde_json::json!([{"op": "add", "path": "/flags/-", "value": "urgent"}]);
    /// assert_eq!(StatePatch::from_json(ops).unwrap().kind, PatchKind::JsonPatch);
    /// assert!(StatePatch::from_json(serde_json::json!("done")).is_err());
    /// ```
    pub fn from_json(patch: Value) -> Result<StatePatch> {
        let kind = match &patch {
            Value::Array(_) => PatchKind::JsonPatch,
            Value::Object(_) => PatchKind::MergePatch,
            other => {
                return Err(Error::WorkingMemoryPatch {
                    message: format!(
                        "a patch is an object (JSON Merge Patch) or a list of operations (JSON Patch), not {}",
                        type_name(other)
                    ),
                })
            }
        };
        if let Some(reason) = crate::json::too_deep("the patch", &patch) {
            return Err(Error::WorkingMemoryPatch { message: reason });
        }
        let patch = StatePatch { kind, patch };
        patch.operations()?;
        Ok(patch)
    }

    /// The JSON Patch operations, checked for shape (`None` for a merge patch).
    fn operations(&self) -> Result<Option<json_patch::Patch>> {
        match self.kind {
            PatchKind::MergePatch => Ok(None),
            PatchKind::JsonPatch => serde_json::from_value(self.patch.clone())
                .map(Some)
                .map_err(|e| Error::WorkingMemoryPatch {
                    message: format!("not a JSON Patch (RFC 6902) list of operations: {e}"),
                }),
        }
    }

    /// `document` with this patch applied; the document itself is untouched.
    pub fn apply_to(&self, document: &Value) -> Result<Value> {
        let mut next = document.clone();
        match self.operations()? {
            None => json_patch::merge(&mut next, &self.patch),
            Some(operations) => {
                json_patch::patch(&mut next, &operations).map_err(|e| {
                    Error::WorkingMemoryPatch {
                        message: e.to_string(),
                    }
                })?;
            }
        }
        if !next.is_object() {
            return Err(Error::WorkingMemoryPatch {
                message: format!(
                    "the patch makes the document {}; working memory is a JSON object",
                    type_name(&next)
                ),
            });
        }
        Ok(next)
    }
}

/// What a working-memory event records: the patch, and the version and
/// hash of the document it made.
///
/// An event handed to a session may leave `version` at 0 and `hash` empty:
/// the session assigns the next version and the hash, as it assigns ids.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateUpdate {
    #[serde(flatten)]
    pub patch: StatePatch,
    /// The version this update made (the first update makes version 1).
    #[serde(default)]
    pub version: u64,
    /// [`WorkingMemory::hash`] of the document it made: replay checks it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hash: String,
}

impl StateUpdate {
    /// A line for people and for history search: the version and the patch.
    pub fn describe(&self) -> String {
        let version = match self.version {
            0 => String::new(),
            n => format!("v{n} "),
        };
        format!(
            "{version}({}): {}",
            self.patch.kind.label(),
            self.patch.patch
        )
    }
}

/// The current state: a JSON object and the version that names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkingMemory {
    /// How many updates made it: 0 for the empty state.
    pub version: u64,
    /// FNV-1a 64 of the document's JSON, hex.
    pub hash: String,
    /// The state itself, always an object.
    pub document: Value,
}

impl Default for WorkingMemory {
    fn default() -> Self {
        WorkingMemory::at(0, json!({}))
    }
}

impl WorkingMemory {
    fn at(version: u64, document: Value) -> WorkingMemory {
        WorkingMemory {
            version,
            hash: hash_of(&document),
            document,
        }
    }

    /// Whether nothing was ever recorded.
    pub fn is_empty(&self) -> bool {
        self.version == 0
    }

    /// The state `update` makes of this one, checked: the update's version,
    /// when it names one, is the next; the patch applies; the result keeps
    /// to `schema`; the hash, when the update names one, is the result's.
    pub fn next(&self, update: &StateUpdate, schema: Option<&schema::StateSchema>) -> Result<Self> {
        let version = self.version + 1;
        if update.version != 0 && update.version != version {
            return Err(Error::WorkingMemoryConflict {
                expected: update.version - 1,
                actual: self.version,
            });
        }
        let document = update.patch.apply_to(&self.document)?;
        if let Some(reason) = crate::json::too_deep("the document it makes", &document) {
            return Err(Error::WorkingMemoryPatch { message: reason });
        }
        if let Some(schema) = schema {
            schema.validate(&document)?;
        }
        let next = WorkingMemory::at(version, document);
        if !update.hash.is_empty() && update.hash != next.hash {
            return Err(Error::WorkingMemoryPatch {
                message: format!(
                    "the update says it makes a document of hash {}, but applied to version {} it makes {}",
                    update.hash, self.version, next.hash
                ),
            });
        }
        Ok(next)
    }
}

/// A state named by its version and hash, without its document: what a
/// compaction snapshot records of the working memory. The document may
/// hold what the session said verbatim (a connection string, a token),
/// which the snapshot, redacted throughout, must not; the log's updates
/// and `working_memory.json` make it again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateMark {
    pub version: u64,
    pub hash: String,
}

impl StateMark {
    /// The mark of `state`.
    pub fn of(state: &WorkingMemory) -> StateMark {
        StateMark {
            version: state.version,
            hash: state.hash.clone(),
        }
    }
}

/// One version in a session's history, with the event that made it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StateVersion {
    pub version: u64,
    pub hash: String,
    pub document: Value,
    /// The update event (id, time, turn, patch).
    pub event: Event,
}

/// What replaying a log's updates made, and the updates it could not replay.
#[derive(Debug, Clone, Default)]
pub struct Replayed {
    pub state: WorkingMemory,
    /// Each version with its event, when asked for.
    pub versions: Vec<StateVersion>,
    /// Updates skipped because they no longer apply (a damaged log): what
    /// and why, for the session's recoveries.
    pub skipped: Vec<(String, String)>,
}

/// Whether a replay keeps every version or only the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    LastOnly,
    EveryVersion,
}

/// Replays the updates among `events` over `start`. Updates the state
/// already holds (a version not past the current one: the raw tail kept by
/// a compaction, or an event both archived and active) are passed over; an
/// update that no longer applies is skipped and reported, never fatal, so a
/// damaged log still opens.
pub fn replay<'a>(
    start: WorkingMemory,
    events: impl IntoIterator<Item = &'a Event>,
    keep: Keep,
) -> Replayed {
    let mut replayed = Replayed {
        state: start,
        ..Replayed::default()
    };
    for event in events {
        let Some(update) = event.state_update() else {
            continue;
        };
        if update.version != 0 && update.version <= replayed.state.version {
            continue;
        }
        let unchecked = StateUpdate {
            version: 0,
            ..update.clone()
        };
        match replayed.state.next(&unchecked, None) {
            Ok(next) if update.hash.is_empty() || update.hash == next.hash => {
                replayed.state = next;
                if keep == Keep::EveryVersion {
                    replayed.versions.push(StateVersion {
                        version: replayed.state.version,
                        hash: replayed.state.hash.clone(),
                        document: replayed.state.document.clone(),
                        event: event.clone(),
                    });
                }
            }
            Ok(next) => replayed.skipped.push((
                event.id.clone(),
                format!("it made hash {} on replay, not {}", next.hash, update.hash),
            )),
            Err(error) => replayed.skipped.push((event.id.clone(), error.to_string())),
        }
    }
    replayed
}

/// The hash that names a document: FNV-1a 64 of its JSON text, hex.
pub fn hash_of(document: &Value) -> String {
    format!(
        "{:016x}",
        crate::hash::fnv1a(document.to_string().as_bytes())
    )
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merge(patch: Value) -> StatePatch {
        StatePatch::from_json(patch).unwrap()
    }

    #[test]
    fn merge_patch_removes_members_set_to_null() {
        let start = WorkingMemory::at(1, json!({"a": 1, "b": {"c": 2, "d": 3}}));
        let update = StateUpdate {
            patch: merge(json!({"a": null, "b": {"d": 4}})),
            version: 0,
            hash: String::new(),
        };
        let next = start.next(&update, None).unwrap();
        assert_eq!(next.document, json!({"b": {"c": 2, "d": 4}}));
        assert_eq!(next.version, 2);
    }

    #[test]
    fn a_failing_test_operation_changes_nothing() {
        let start = WorkingMemory::at(3, json!({"status": "open"}));
        let ops = merge(json!([
            {"op": "replace", "path": "/status", "value": "closed"},
            {"op": "test", "path": "/status", "value": "open"}
        ]));
        let update = StateUpdate {
            patch: ops,
            version: 4,
            hash: String::new(),
        };
        assert!(matches!(
            start.next(&update, None),
            Err(Error::WorkingMemoryPatch { .. })
        ));
        assert_eq!(start.document, json!({"status": "open"}));
    }

    #[test]
    fn a_patch_that_would_replace_the_object_is_refused() {
        let ops = merge(json!([{"op": "replace", "path": "", "value": [1, 2]}]));
        assert!(ops.apply_to(&json!({})).is_err());
    }

    #[test]
    fn replay_passes_over_updates_it_already_holds_and_reports_broken_ones() {
        let first = StateUpdate {
            patch: merge(json!({"n": 1})),
            version: 1,
            hash: hash_of(&json!({"n": 1})),
        };
        let broken = StateUpdate {
            patch: merge(json!([{"op": "remove", "path": "/missing"}])),
            version: 2,
            hash: String::new(),
        };
        let events = [
            Event::working_memory(first.clone()).with_id("a"),
            Event::working_memory(first).with_id("a-again"),
            Event::working_memory(broken).with_id("b"),
        ];
        let replayed = replay(WorkingMemory::default(), &events, Keep::EveryVersion);
        assert_eq!(replayed.state.document, json!({"n": 1}));
        assert_eq!(replayed.versions.len(), 1);
        assert_eq!(replayed.skipped.len(), 1);
        assert_eq!(replayed.skipped[0].0, "b");
    }
}
