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
//! use agentmem::{Durability, StatePatch, Store};
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

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::base::error::{Error, Result};
use crate::base::event::Event;
use crate::base::state::{hash_of, StateMark, StateUpdate};

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
        if let Some(reason) = crate::base::json::too_deep("the document it makes", &document) {
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
    /// The version number (the first update makes 1).
    pub version: u64,
    /// The hash of the document.
    pub hash: String,
    /// The working memory at this version.
    pub document: Value,
    /// The update event (id, time, turn, patch).
    pub event: Event,
}

/// What replaying a log's updates made, and the updates it could not replay.
#[derive(Debug, Clone, Default)]
pub struct Replayed {
    /// The working memory the updates made.
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
    /// Only the last version.
    LastOnly,
    /// Every version, with its event.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::state::StatePatch;

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
