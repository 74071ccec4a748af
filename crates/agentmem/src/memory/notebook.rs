//! `MEMORY.md`: the agent's own notebook, kept at `agents/<agent>/MEMORY.md`.
//!
//! Agents read it, append to it and replace text in it (`read_memory`,
//! `write_memory`, `update_memory`). Every change is a whole-file atomic
//! rewrite. An optional expected hash makes a change compare-and-swap: it
//! applies only to the version the agent read. A retry of a change that
//! already applied (same expected hash, same edit) succeeds without applying
//! it twice, so an agent may retry after a lost response.

use std::path::Path;
use std::sync::Arc;

use serde_json::json;

use crate::base::error::{Error, IoContext, Result};
use crate::base::fs::write_atomic;
use crate::base::id::AgentId;
use crate::files::lock::MemoryLock;
use crate::files::paths::MEMORY_FILE;
use crate::redact::{redact, RedactionPolicy};
use crate::render::ToolSchema;
use crate::storage::memory::{MemoryStorage, Swapped};

use super::keeping::Keeping;

/// Lines of MEMORY.md injected into the context by default.
pub(crate) const DEFAULT_INJECTED_LINES: usize = 200;

pub use crate::files::records::{version, MemoryVersion};

/// An agent's MEMORY.md.
#[derive(Debug, Clone)]
pub struct Notebook {
    keeping: Keeping,
    redaction: RedactionPolicy,
}

/// What an edit makes of the notebook it read.
enum Step {
    /// The notebook already says it (a retry of an edit that applied).
    Unchanged(MemoryVersion),
    /// The notebook's new content.
    Write(String),
}

impl Notebook {
    /// The notebook of the agent whose folder is `agent_dir`; what is
    /// written to it is redacted with the default policy.
    pub fn new(agent_dir: &Path) -> Notebook {
        Notebook {
            keeping: Keeping::File(agent_dir.join(MEMORY_FILE)),
            redaction: RedactionPolicy::default(),
        }
    }

    /// The notebook of `agent` kept by `memory` (in its file when `memory`
    /// is the files backend); writes are redacted with `policy` (secrets always).
    pub fn on(
        memory: Arc<dyn MemoryStorage>,
        agent: &AgentId,
        policy: RedactionPolicy,
    ) -> Notebook {
        Notebook {
            keeping: Keeping::of(memory, agent, MEMORY_FILE),
            redaction: policy,
        }
    }

    /// The same notebook, redacting writes with `policy` (secrets always).
    pub(crate) fn with_redaction(self, policy: RedactionPolicy) -> Notebook {
        Notebook {
            redaction: policy,
            ..self
        }
    }

    /// Where the file is; for a notebook kept elsewhere than in files, only
    /// the file's name (see [`Notebook::location`]).
    pub fn path(&self) -> &Path {
        match &self.keeping {
            Keeping::File(path) => path,
            Keeping::Seam { .. } => Path::new(MEMORY_FILE),
        }
    }

    /// Where the notebook is kept: its file, or the agent's notebook in a
    /// database.
    pub fn location(&self) -> String {
        match &self.keeping {
            Keeping::File(path) => path.display().to_string(),
            Keeping::Seam { memory, agent } => {
                format!("the MEMORY.md of agent {agent} ({})", memory.backend())
            }
        }
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
        match &self.keeping {
            Keeping::File(path) => read_file(path),
            Keeping::Seam { memory, agent } => memory.read_notebook(agent),
        }
    }

    /// Appends `text` as its own line(s).
    pub fn append(&self, text: &str, expected_hash: Option<&str>) -> Result<MemoryVersion> {
        let (clean, _) = redact(text, self.redaction);
        let entry = clean.trim_end_matches('\n');
        let applied = |content: &str| content.ends_with(&format!("{entry}\n"));
        self.edit(|current| {
            let next = match current.content.as_str() {
                "" => format!("{entry}\n"),
                content if content.ends_with('\n') => format!("{content}{entry}\n"),
                content => format!("{content}\n{entry}\n"),
            };
            checked(current, expected_hash, next, applied)
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
        if old.is_empty() {
            return Err(Error::MemoryEdit {
                message: "the text to replace is empty".into(),
            });
        }
        let already_applied = |content: &str| !content.contains(old) && content.contains(new);
        self.edit(|current| {
            let next = match current.content.matches(old).count() {
                1 => current.content.replacen(old, new, 1),
                0 if expected_hash.is_some_and(|h| h != current.hash)
                    && already_applied(&current.content) =>
                {
                    return Ok(Step::Unchanged(current.clone())); // a retry of an update that already applied
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
            checked(current, expected_hash, next, already_applied)
        })
    }

    /// Runs `step` on the current notebook and writes what it makes of it.
    /// In a file, under the agent's memory lock, so edits from other
    /// processes wait instead of being lost; behind the seam, by
    /// compare-and-swap, the edit redone on the newer notebook when another
    /// writer changed it in between.
    fn edit(&self, step: impl Fn(&MemoryVersion) -> Result<Step>) -> Result<MemoryVersion> {
        match &self.keeping {
            Keeping::File(path) => {
                let _lock = MemoryLock::acquire(path.parent().unwrap_or(Path::new(".")))?;
                match step(&read_file(path)?)? {
                    Step::Unchanged(current) => Ok(current),
                    Step::Write(next) => write_file(path, next),
                }
            }
            Keeping::Seam { memory, agent } => loop {
                let current = memory.read_notebook(agent)?;
                match step(&current)? {
                    Step::Unchanged(current) => return Ok(current),
                    Step::Write(next) => match memory.swap_notebook(agent, &current.hash, &next)? {
                        Swapped::Done(written) => {
                            super::count_write();
                            return Ok(written);
                        }
                        Swapped::Changed => continue,
                    },
                }
            },
        }
    }
}

/// `next`, if `expected_hash` (when given) names `current`. When it does
/// not, but `applied` says the edit is already in, the retry succeeds.
fn checked(
    current: &MemoryVersion,
    expected_hash: Option<&str>,
    next: String,
    applied: impl Fn(&str) -> bool,
) -> Result<Step> {
    match expected_hash {
        Some(expected) if expected != current.hash => {
            if applied(&current.content) {
                return Ok(Step::Unchanged(current.clone()));
            }
            Err(Error::MemoryConflict {
                expected: expected.to_owned(),
                actual: current.hash.clone(),
            })
        }
        _ => Ok(Step::Write(next)),
    }
}

/// The notebook in the file at `path` (empty when there is none).
fn read_file(path: &Path) -> Result<MemoryVersion> {
    let content = match std::fs::read_to_string(path) {
        Ok(content) => content,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).io("read", path),
    };
    Ok(version(content))
}

/// Replaces the file at `path` with `next`, atomically.
fn write_file(path: &Path, next: String) -> Result<MemoryVersion> {
    if let Some(dir) = path.parent() {
        crate::base::fs::create_dir_all(dir).io("create", dir)?;
    }
    let written = write_atomic(path, next.as_bytes());
    super::count_write();
    written?;
    Ok(version(next))
}

/// The files backend's [`MemoryStorage::swap_notebook`]: under the agent's
/// memory lock, the file at `agent_dir` is replaced if it still has `current`.
pub(crate) fn swap_file(agent_dir: &Path, current: &str, next: &str) -> Result<Swapped> {
    let _lock = MemoryLock::acquire(agent_dir)?;
    let path = agent_dir.join(MEMORY_FILE);
    if read_file(&path)?.hash != current {
        return Ok(Swapped::Changed);
    }
    write_file(&path, next.to_owned()).map(Swapped::Done)
}

/// The notebook file of the agent whose folder is `agent_dir`.
pub(crate) fn read_in(agent_dir: &Path) -> Result<MemoryVersion> {
    read_file(&agent_dir.join(MEMORY_FILE))
}

/// The first `max_lines` lines of `content`, and whether anything was left out.
pub(crate) fn first_lines(content: &str, max_lines: usize) -> (String, bool) {
    let mut lines = content.lines();
    let kept: Vec<&str> = lines.by_ref().take(max_lines).collect();
    (kept.join("\n"), lines.next().is_some())
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
