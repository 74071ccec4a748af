//! Project memory files, found where a user would put them and injected as
//! "Project context (always apply)" with their source paths.
//!
//! Looked for, in order (general to specific, so the specific reads last):
//! the system folder (`/etc/agentmem`), the user's agentmem folder
//! (`$AGENTMEM_HOME`, else `~/.agentmem`), the working directory.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::notebook::{first_lines, Notebook, DEFAULT_INJECTED_LINES};
use crate::tokens::Tokenizer;

/// The project memory file names looked for in each folder.
pub const PROJECT_FILES: [&str; 3] = ["AGENT.md", "MEMORY.md", ".agent-context.md"];
/// The heading of the injected project files.
pub const PROJECT_CONTEXT_HEADING: &str = "# Project context (always apply)";
/// The heading of the injected notebook.
pub const NOTEBOOK_HEADING: &str = "# Your long-term memory (MEMORY.md)";

/// What memory goes into every context.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySettings {
    /// Folders searched for project memory files, general to specific.
    #[serde(default)]
    pub project_dirs: Vec<PathBuf>,
    /// Lines of MEMORY.md injected (default 200).
    #[serde(default)]
    pub injected_lines: Option<usize>,
    /// At most this many tokens of MEMORY.md are injected.
    #[serde(default)]
    pub injected_tokens: Option<u64>,
}

/// A project memory file found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectFile {
    pub path: PathBuf,
    pub content: String,
}

/// The usual folders: the system one, the user's, the working directory.
pub fn default_project_dirs() -> Vec<PathBuf> {
    let user = std::env::var_os("AGENTMEM_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".agentmem")));
    let mut dirs = vec![PathBuf::from("/etc/agentmem")];
    dirs.extend(user);
    dirs.extend(std::env::current_dir().ok());
    dirs
}

/// The project memory files in `dirs`, in order; unreadable ones are skipped.
pub fn discover(dirs: &[PathBuf]) -> Vec<ProjectFile> {
    let mut found: Vec<ProjectFile> = Vec::new();
    for dir in dirs {
        for name in PROJECT_FILES {
            let path = dir.join(name);
            if found.iter().any(|f| f.path == path) {
                continue;
            }
            if let Ok(content) = std::fs::read_to_string(&path) {
                if !content.trim().is_empty() {
                    found.push(ProjectFile { path, content });
                }
            }
        }
    }
    found
}

/// The memory block injected into the system prompt: the project files with
/// their paths, then the first lines of the agent's MEMORY.md (within a token
/// cap). `None` when there is nothing to inject.
///
/// ```
/// use agentmem::memory::project::{memory_block, MemorySettings};
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("AGENT.md"), "Run `make test` before committing.").unwrap();
/// let settings = MemorySettings { project_dirs: vec![dir.path().to_path_buf()], ..Default::default() };
/// let tokenizer = agentmem::tokens::Encoding::O200kBase.tokenizer();
/// let block = memory_block(None, &settings, tokenizer).unwrap();
/// assert!(block.starts_with("# Project context (always apply)") && block.contains("make test"));
/// ```
pub fn memory_block(
    notebook: Option<&Path>,
    settings: &MemorySettings,
    tokenizer: Tokenizer,
) -> Option<String> {
    let mut sections = Vec::new();
    let files = discover(&settings.project_dirs);
    if !files.is_empty() {
        let mut text = PROJECT_CONTEXT_HEADING.to_owned();
        for file in files {
            text.push_str(&format!(
                "\n\n## {}\n{}",
                file.path.display(),
                file.content.trim_end()
            ));
        }
        sections.push(text);
    }
    if let Some(agent_dir) = notebook {
        let content = Notebook::new(agent_dir)
            .read()
            .map(|v| v.content)
            .unwrap_or_default();
        if !content.trim().is_empty() {
            let lines = settings.injected_lines.unwrap_or(DEFAULT_INJECTED_LINES);
            let (mut kept, mut cut) = first_lines(&content, lines);
            if let Some(cap) = settings.injected_tokens {
                while tokenizer.count(&kept) as u64 > cap && !kept.is_empty() {
                    let shorter = kept.lines().count().saturating_sub(1);
                    kept = first_lines(&kept, shorter).0;
                    cut = true;
                }
            }
            let note = if cut {
                "\n\n(MEMORY.md continues; call read_memory for the rest.)"
            } else {
                ""
            };
            sections.push(format!("{NOTEBOOK_HEADING}\n{kept}{note}"));
        }
    }
    (!sections.is_empty()).then(|| sections.join("\n\n"))
}
