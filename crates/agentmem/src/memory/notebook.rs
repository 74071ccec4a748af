//! `MEMORY.md`: the agent's own notebook, kept at `agents/<agent>/MEMORY.md`.
//!
//! Agents read it, append to it and replace text in it (`read_memory`,
//! `write_memory`, `update_memory`). Every change is a whole-file atomic
//! rewrite. An optional expected hash makes a change compare-and-swap: it
//! applies only to the version the agent read. A retry of a change that
//! already applied (same expected hash, same edit) succeeds without applying
//! it twice, so an agent may retry after a lost response.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::json;

use crate::base::error::{Error, IoContext, Result};
use crate::base::fs::write_atomic;
use crate::files::lock::MemoryLock;
use crate::files::paths::MEMORY_FILE;
use crate::redact::{redact, RedactionPolicy};
use crate::render::ToolSchema;

/// Lines of MEMORY.md injected into the context by default.
pub(crate) const DEFAULT_INJECTED_LINES: usize = 200;

/// The notebook's content and the hash that names this version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryVersion {
    /// MEMORY.md's text.
    pub content: String,
    /// FNV-1a 64 of the content, hex: pass it back as `expected_hash`.
    pub hash: String,
}

/// An agent's MEMORY.md.
#[derive(Debug, Clone)]
pub struct Notebook {
    path: PathBuf,
    redaction: RedactionPolicy,
}

impl Notebook {
    /// The notebook of the agent whose folder is `agent_dir`; what is
    /// written to it is redacted with the default policy.
    pub fn new(agent_dir: &Path) -> Notebook {
        Notebook {
            path: agent_dir.join(MEMORY_FILE),
            redaction: RedactionPolicy::default(),
        }
    }

    /// The same notebook, redacting writes with `policy` (secrets always).
    pub(crate) fn with_redaction(self, policy: RedactionPolicy) -> Notebook {
        Notebook {
            redaction: policy,
            ..self
        }
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The current content (empty when there is no file yet).
    ///
    /// ```
    /// use agentmem::memory::notebook::Notebook;
    /// let dir = tempfile::tempdir().unwrap();
    /// let notebook = Notebook::new(dir.path());
    /// let empty = notebook.read().unwrap();
    /// let written = notebook.append("- prefers snake_case", Some(&empty.hash)).unwrap();
    /// assert_eq!(notebook.read().unwrap(), written);
    /// assert!(written.content.contains("snake_case"));
    /// ```
    pub fn read(&self) -> Result<MemoryVersion> {
        let content = match std::fs::read_to_string(&self.path) {
            Ok(content) => content,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e).io("read", &self.path),
        };
        Ok(version(content))
    }

    /// Appends `text` as its own line(s).
    pub fn append(&self, text: &str, expected_hash: Option<&str>) -> Result<MemoryVersion> {
        let _lock = self.lock()?;
        let current = self.read()?;
        let (clean, _) = redact(text, self.redaction);
        let entry = clean.trim_end_matches('\n');
        let next = match current.content.as_str() {
            "" => format!("{entry}\n"),
            content if content.ends_with('\n') => format!("{content}{entry}\n"),
            content => format!("{content}\n{entry}\n"),
        };
        self.commit(current, expected_hash, next, |content| {
            content.ends_with(&format!("{entry}\n"))
        })
    }

    /// Replaces the one occurrence of `old` with `new`. A missing or
    /// ambiguous `old` is an error, never a guess.
    pub fn update(
        &self,
        old: &str,
        new: &str,
        expected_hash: Option<&str>,
    ) -> Result<MemoryVersion> {
        let _lock = self.lock()?;
        let current = self.read()?;
        if old.is_empty() {
            return Err(Error::MemoryEdit {
                message: "the text to replace is empty".into(),
            });
        }
        let already_applied = |content: &str| !content.contains(old) && content.contains(new);
        let next = match current.content.matches(old).count() {
            1 => current.content.replacen(old, new, 1),
            0 if expected_hash.is_some_and(|h| h != current.hash)
                && already_applied(&current.content) =>
            {
                return Ok(current); // a retry of an update that already applied
            }
            0 => {
                return Err(Error::MemoryEdit {
                    message: format!(
                        "{old:?} is not in MEMORY.md; read it again and quote the text exactly"
                    ),
                })
            }
            n => {
                return Err(Error::MemoryEdit {
                    message: format!(
                        "{old:?} occurs {n} times in MEMORY.md; quote more of it so it occurs once"
                    ),
                })
            }
        };
        self.commit(current, expected_hash, next, already_applied)
    }

    /// The agent's memory lock: an edit reads, changes and writes the file
    /// under it, so edits from other processes wait instead of being lost.
    fn lock(&self) -> Result<MemoryLock> {
        MemoryLock::acquire(self.path.parent().unwrap_or(Path::new(".")))
    }

    /// Writes `next` if `expected_hash` (when given) names `current`. When it
    /// does not, but `applied` says the edit is already in, the retry succeeds.
    fn commit(
        &self,
        current: MemoryVersion,
        expected_hash: Option<&str>,
        next: String,
        applied: impl Fn(&str) -> bool,
    ) -> Result<MemoryVersion> {
        if let Some(expected) = expected_hash {
            if expected != current.hash {
                if applied(&current.content) {
                    return Ok(current);
                }
                return Err(Error::MemoryConflict {
                    expected: expected.to_owned(),
                    actual: current.hash,
                });
            }
        }
        if let Some(dir) = self.path.parent() {
            crate::base::fs::create_dir_all(dir).io("create", dir)?;
        }
        let written = write_atomic(&self.path, next.as_bytes());
        super::count_write();
        written?;
        Ok(version(next))
    }
}

/// The first `max_lines` lines of `content`, and whether anything was left out.
pub(crate) fn first_lines(content: &str, max_lines: usize) -> (String, bool) {
    let mut lines = content.lines();
    let kept: Vec<&str> = lines.by_ref().take(max_lines).collect();
    (kept.join("\n"), lines.next().is_some())
}

fn version(content: String) -> MemoryVersion {
    let hash = crate::base::hash::fnv1a(content.as_bytes());
    MemoryVersion {
        content,
        hash: format!("{hash:016x}"),
    }
}

/// Tool schemas for agents: `read_memory`, `write_memory`, `update_memory`
/// (neutral form; every renderer turns them into its API's shape).
pub(crate) fn memory_tool_schemas() -> Vec<ToolSchema> {
    let hash = json!({"type": "string", "description": "The hash read_memory returned; the change applies only to that version."});
    vec![
        ToolSchema {
            name: "read_memory".into(),
            description: "Read your long-term notebook (MEMORY.md) and the hash of this version.".into(),
            parameters: json!({"type": "object", "properties": {}}),
        },
        ToolSchema {
            name: "write_memory".into(),
            description: "Append a note to your long-term notebook (MEMORY.md). Keep notes short and durable.".into(),
            parameters: json!({"type": "object", "properties": {
                "content": {"type": "string", "description": "The note to append."},
                "expected_hash": hash,
            }, "required": ["content"]}),
        },
        ToolSchema {
            name: "update_memory".into(),
            description: "Replace text in your notebook (MEMORY.md). `old_text` must occur exactly once.".into(),
            parameters: json!({"type": "object", "properties": {
                "old_text": {"type": "string", "description": "The exact text to replace."},
                "new_text": {"type": "string", "description": "What replaces it."},
                "expected_hash": hash,
            }, "required": ["old_text", "new_text"]}),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_and_swap_refuses_a_stale_version_and_accepts_a_retry() {
        let dir = tempfile::tempdir().unwrap();
        let notebook = Notebook::new(dir.path());
        let v0 = notebook.read().unwrap();
        let v1 = notebook.append("- uses tabs", Some(&v0.hash)).unwrap();
        // The same append retried with the old hash: already in, not doubled.
        let retried = notebook.append("- uses tabs", Some(&v0.hash)).unwrap();
        assert_eq!(retried, v1);
        assert_eq!(v1.content.matches("uses tabs").count(), 1);
        // A different change against the old version is a conflict.
        let err = notebook
            .append("- something else", Some(&v0.hash))
            .unwrap_err();
        assert!(matches!(err, Error::MemoryConflict { .. }), "{err}");
        assert_eq!(notebook.read().unwrap(), v1, "nothing changed");
    }

    #[test]
    fn update_needs_exactly_one_occurrence() {
        let dir = tempfile::tempdir().unwrap();
        let notebook = Notebook::new(dir.path());
        notebook
            .append("- port 8080\n- port 8080 for tests", None)
            .unwrap();
        let ambiguous = notebook.update("port 8080", "port 9090", None).unwrap_err();
        assert!(
            ambiguous.to_string().contains("occurs 2 times"),
            "{ambiguous}"
        );
        let missing = notebook.update("port 7070", "port 9090", None).unwrap_err();
        assert!(
            missing.to_string().contains("is not in MEMORY.md"),
            "{missing}"
        );
        let v = notebook.read().unwrap();
        let updated = notebook
            .update(
                "- port 8080 for tests",
                "- port 9090 for tests",
                Some(&v.hash),
            )
            .unwrap();
        assert!(
            updated.content.contains("9090 for tests") && updated.content.contains("- port 8080\n")
        );
        let retried = notebook
            .update(
                "- port 8080 for tests",
                "- port 9090 for tests",
                Some(&v.hash),
            )
            .unwrap();
        assert_eq!(retried, updated);
    }

    #[test]
    fn first_lines_says_when_it_cut() {
        assert_eq!(first_lines("a\nb\nc\n", 2), ("a\nb".to_owned(), true));
        assert_eq!(first_lines("a\nb\n", 2), ("a\nb".to_owned(), false));
    }
}
