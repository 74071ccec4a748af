//! The memory tools an agent's model is given, and running them: the
//! notebook (`read_memory`, `write_memory`, `update_memory`), history search
//! (`search_conversation_history`) and evicted outputs (`read_evicted_output`).
//!
//! A tool that fails answers with its error as text: the model reads it and
//! can try again (a stale hash, an ambiguous edit), so the loop never stops
//! on a tool's mistake.
//!
//! ```
//! use agentmem::{event::Event, memory::tools, store::Store, Durability};
//! let dir = tempfile::tempdir().unwrap();
//! let store = Store::open(dir.path(), Durability::Batch).unwrap();
//! let session = store.create_session(&Default::default(), None).unwrap();
//! let args = serde_json::json!({"text": "- The user prefers tabs."});
//! let answer = tools::run(&store, &session, "write_memory", &args).unwrap();
//! assert!(answer.contains("hash"));
//! let read = tools::run(&store, &session, "read_memory", &serde_json::json!({})).unwrap();
//! assert!(read.contains("prefers tabs"));
//! assert!(tools::run(&store, &session, "bash", &args).is_none(), "not a memory tool");
//! ```

use serde_json::Value;

use crate::context::guard::{read_evicted, read_evicted_output_schema, DEFAULT_READ_LIMIT_LINES};
use crate::render::ToolSchema;
use crate::search::{parse_tool_arguments, render_hits, search_tool_schema};
use crate::session::Session;
use crate::store::Store;

/// Every memory tool's schema.
pub fn schemas() -> Vec<ToolSchema> {
    let mut schemas = super::notebook::memory_tool_schemas();
    schemas.push(search_tool_schema());
    schemas.push(read_evicted_output_schema());
    schemas
}

/// Runs the memory tool `name` for `session`; `None` when `name` is not one.
pub fn run(store: &Store, session: &Session, name: &str, arguments: &Value) -> Option<String> {
    let text = |key: &str| arguments.get(key).and_then(Value::as_str);
    let notebook = || store.notebook(session.agent());
    let answer = match name {
        "read_memory" => notebook()
            .read()
            .map(|v| format!("hash: {}\n\n{}", v.hash, v.content)),
        "write_memory" => notebook()
            .append(text("text").unwrap_or_default(), text("expected_hash"))
            .map(|v| format!("Appended. MEMORY.md is now at hash {}.", v.hash)),
        "update_memory" => notebook()
            .update(
                text("old").unwrap_or_default(),
                text("new").unwrap_or_default(),
                text("expected_hash"),
            )
            .map(|v| format!("Replaced. MEMORY.md is now at hash {}.", v.hash)),
        "search_conversation_history" => parse_tool_arguments(arguments)
            .and_then(|(query, filter)| store.search(session.agent(), &query, &filter))
            .map(|hits| render_hits(&hits)),
        "read_evicted_output" => {
            let number = |key: &str, default: usize| {
                arguments
                    .get(key)
                    .and_then(Value::as_u64)
                    .map_or(default, |n| n as usize)
            };
            read_evicted(
                &session.paths().evicted(),
                text("call_id").unwrap_or_default(),
                number("offset", 0),
                number("limit", DEFAULT_READ_LIMIT_LINES),
            )
            .map(|page| {
                format!(
                    "{}\n(lines {}–{} of {}{})",
                    page.text.trim_end(),
                    page.offset,
                    page.offset + page.lines_returned,
                    page.total_lines,
                    if page.has_more { "; more follow" } else { "" }
                )
            })
        }
        _ => return None,
    };
    Some(answer.unwrap_or_else(|error| format!("error: {error}")))
}
