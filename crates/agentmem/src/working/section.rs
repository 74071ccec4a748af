//! The working-memory section of a prepared context: the current state,
//! rendered once, after the long-term memory in the system prompt.
//!
//! It rides in the system prompt for the same reason MEMORY.md does: that
//! part of the context is never compacted away, so the state the agent keeps
//! survives every compaction, while the updates that made it stay in the log
//! (and out of the model's view).

use super::WorkingMemory;

/// The heading that opens the section.
pub(crate) const SECTION_HEADING: &str = "# Working memory";

/// The section for `state`; `None` while nothing was ever recorded, so a
/// session that does not use working memory pays no tokens for it.
///
/// ```
/// use agentmem::working::{section::render_section, WorkingMemory};
/// assert!(render_section(&WorkingMemory::default()).is_none());
/// ```
pub fn render_section(state: &WorkingMemory) -> Option<String> {
    if state.is_empty() {
        return None;
    }
    let document = serde_json::to_string_pretty(&state.document).expect("a JSON value serializes");
    Some(format!(
        "{SECTION_HEADING} (version {version})\nThe structured state of the current task. It stays here across compactions; change it with update_working_memory and expected_version {version}.\n```json\n{document}\n```",
        version = state.version
    ))
}
