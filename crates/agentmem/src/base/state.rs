//! The state-update types of working memory: the patches that change a
//! session's task state, the update events record, and the mark that names
//! a state. The state itself, and replaying updates,
//! are the working memory's (`working/`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::base::error::{Error, Result};

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
    /// Which form the patch is in: a JSON Patch or a JSON Merge Patch.
    pub kind: PatchKind,
    /// The patch document.
    pub patch: Value,
}

impl StatePatch {
    /// Reads a patch, telling its form from its shape: a list is a JSON
    /// Patch, an object is a merge patch. Nothing else changes an object
    /// document, so the shape is never ambiguous.
    ///
    /// ```
    /// use agentmem::base::state::{PatchKind, StatePatch};
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
                        crate::base::json::kind_of(other)
                    ),
                })
            }
        };
        if let Some(reason) = crate::base::json::too_deep("the patch", &patch) {
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
    pub(crate) fn apply_to(&self, document: &Value) -> Result<Value> {
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
                    crate::base::json::kind_of(&next)
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
    /// The change.
    #[serde(flatten)]
    pub patch: StatePatch,
    /// The version this update made (the first update makes version 1).
    #[serde(default)]
    pub version: u64,
    /// `WorkingMemory::hash` of the document it made: replay checks it.
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

/// A state named by its version and hash, without its document: what a
/// compaction snapshot records of the working memory. The document may
/// hold what the session said verbatim (a connection string, a token),
/// which the snapshot, redacted throughout, must not; the log's updates
/// and `working_memory.json` make it again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateMark {
    /// The working-memory version.
    pub version: u64,
    /// The hash of the document at that version.
    pub hash: String,
}

/// The hash that names a document: FNV-1a 64 of its JSON text, hex.
pub fn hash_of(document: &Value) -> String {
    format!(
        "{:016x}",
        crate::base::hash::fnv1a(document.to_string().as_bytes())
    )
}
