//! The memory tools an agent's model is given, and running them: the
//! notebook (`read_memory`, `write_memory`, `update_memory`), history search
//! (`search_conversation_history`), recall (`recall`), facts
//! (`remember_fact`) and evicted outputs (`read_evicted_output`); and, for a
//! session's own model, its working memory (`get_working_memory`,
//! `update_working_memory`: [`session_schemas`], [`run_in_session`]).
//!
//! A tool that fails answers with its error as text: the model reads it and
//! can try again (a stale hash, an ambiguous edit), so the loop never stops
//! on a tool's mistake.
//!
//! ```
//! use agentmem::memory::tools::{self, ToolContext};
//! use agentmem::{store::Store, Durability};
//! let dir = tempfile::tempdir().unwrap();
//! let store = Store::open(dir.path(), Durability::Batch).unwrap();
//! let agent = Default::default();
//! let context = ToolContext { store: &store, agent: &agent, session: None };
//! let args = serde_json::json!({"text": "- The user prefers tabs."});
//! let answer = tools::run(&context, "write_memory", &args).unwrap();
//! assert!(answer.contains("hash"));
//! let read = tools::run(&context, "read_memory", &serde_json::json!({})).unwrap();
//! assert!(read.contains("prefers tabs"));
//! assert!(tools::run(&context, "bash", &args).is_none(), "not a memory tool");
//! ```

use serde_json::{json, Value};

use super::facts::{Added, NewFact, Provenance, Trust};
use crate::context::guard::{read_evicted, read_evicted_output_schema, DEFAULT_READ_LIMIT_LINES};
use crate::error::{Error, Result};
use crate::id::{AgentId, SessionId};
use crate::recall::RecallRequest;
use crate::render::ToolSchema;
use crate::search::{parse_tool_arguments, render_hits, search_tool_schema};
use crate::store::Store;
use crate::tokens::Encoding;

/// Where a tool runs: the store, the agent, and the session asking (if any).
#[derive(Debug, Clone, Copy)]
pub struct ToolContext<'a> {
    pub store: &'a Store,
    pub agent: &'a AgentId,
    /// The session whose model called the tool: its evicted outputs are
    /// read, its own history is left out of recall, its facts cite it.
    pub session: Option<&'a SessionId>,
}

/// The name under which the extractor of facts the model states is recorded.
pub const REMEMBER_FACT_EXTRACTOR: &str = "remember_fact";

/// Every memory tool's schema.
pub fn schemas() -> Vec<ToolSchema> {
    let mut schemas = super::notebook::memory_tool_schemas();
    schemas.push(search_tool_schema());
    schemas.push(ToolSchema {
        name: "recall".into(),
        description: "Recall what you know from earlier sessions about a topic: facts, summaries of past work and past conversation lines, best first.".into(),
        parameters: json!({"type": "object", "properties": {
            "query": {"type": "string", "description": "What to recall."},
            "budget_tokens": {"type": "integer", "minimum": 50, "description": "The most tokens to return (default 2000)."},
        }, "required": ["query"]}),
    });
    schemas.push(ToolSchema {
        name: "remember_fact".into(),
        description: "Keep a lasting fact (a preference, a decision, a constraint) in long-term memory. Saying the same again merges, it does not duplicate.".into(),
        parameters: json!({"type": "object", "properties": {
            "fact": {"type": "string", "description": "The fact, in one sentence."},
            "tags": {"type": "array", "items": {"type": "string"}},
        }, "required": ["fact"]}),
    });
    schemas.push(read_evicted_output_schema());
    schemas
}

/// The tools a session's own model is given: the memory tools, then the
/// working-memory tools (which need the open session, see
/// [`run_in_session`]).
pub fn session_schemas() -> Vec<ToolSchema> {
    let mut schemas = schemas();
    schemas.extend(crate::working::tools::schemas());
    schemas
}

/// Runs any tool of [`session_schemas`] for the model of `session`, which
/// the caller holds open for writing: the working-memory tools change it
/// directly (a second writer would be refused by its lock), the others run
/// as [`run`] does. `None` when `name` is none of them.
pub fn run_in_session(
    store: &Store,
    agent: &AgentId,
    session: &mut crate::session::Session,
    name: &str,
    arguments: &Value,
) -> Option<String> {
    if let Some(answer) = crate::working::tools::run(session, name, arguments) {
        return Some(answer);
    }
    let context = ToolContext {
        store,
        agent,
        session: Some(session.id()),
    };
    run(&context, name, arguments)
}

/// Runs the memory tool `name`; `None` when `name` is not one.
pub fn run(context: &ToolContext<'_>, name: &str, arguments: &Value) -> Option<String> {
    let answer = match name {
        "read_memory" | "write_memory" | "update_memory" => notebook(context, name, arguments),
        "search_conversation_history" => parse_tool_arguments(arguments)
            .and_then(|(query, filter)| context.store.search(context.agent, &query, &filter))
            .map(|hits| render_hits(&hits)),
        "recall" => recall(context, arguments),
        "remember_fact" => remember_fact(context, arguments),
        "read_evicted_output" => evicted(context, arguments),
        _ => return None,
    };
    Some(answer.unwrap_or_else(|error| format!("error: {error}")))
}

fn text<'a>(arguments: &'a Value, key: &str) -> Option<&'a str> {
    arguments.get(key).and_then(Value::as_str)
}

fn required<'a>(arguments: &'a Value, key: &str, tool: &str) -> Result<&'a str> {
    text(arguments, key)
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| Error::BadQuery {
            message: format!("{tool} needs a non-empty \"{key}\" string"),
        })
}

fn notebook(context: &ToolContext<'_>, name: &str, arguments: &Value) -> Result<String> {
    let notebook = context.store.notebook(context.agent);
    let hash = text(arguments, "expected_hash");
    match name {
        "read_memory" => notebook
            .read()
            .map(|v| format!("hash: {}\n\n{}", v.hash, v.content)),
        "write_memory" => notebook
            .append(required(arguments, "text", name)?, hash)
            .map(|v| format!("Appended. MEMORY.md is now at hash {}.", v.hash)),
        _ => notebook
            .update(
                required(arguments, "old", name)?,
                text(arguments, "new").unwrap_or_default(),
                hash,
            )
            .map(|v| format!("Replaced. MEMORY.md is now at hash {}.", v.hash)),
    }
}

fn recall(context: &ToolContext<'_>, arguments: &Value) -> Result<String> {
    let budget = arguments
        .get("budget_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(super::project::DEFAULT_CROSS_SESSION_TOKENS);
    let mut request = RecallRequest::new(required(arguments, "query", "recall")?, budget);
    request.exclude_session = context.session.map(|s| s.to_string());
    let recalled =
        context
            .store
            .recall(context.agent, &request, Encoding::default().tokenizer())?;
    Ok(if recalled.items.is_empty() {
        "Nothing recalled for that.".to_owned()
    } else {
        recalled.block
    })
}

fn remember_fact(context: &ToolContext<'_>, arguments: &Value) -> Result<String> {
    let tags = arguments
        .get("tags")
        .and_then(Value::as_array)
        .map(|tags| {
            tags.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let added = context.store.facts(context.agent).add(NewFact {
        fact: required(arguments, "fact", "remember_fact")?.to_owned(),
        tags,
        confidence: 0.8,
        salience: 0.7,
        provenance: Provenance {
            session_id: context.session.map(|s| s.to_string()),
            extractor: REMEMBER_FACT_EXTRACTOR.into(),
            ..Provenance::default()
        },
        trust: Trust::Assistant,
    })?;
    Ok(match added {
        Added::Added(id) => format!("Remembered as fact {id}."),
        Added::Merged(id) => format!("Already known: merged into fact {id}."),
    })
}

fn evicted(context: &ToolContext<'_>, arguments: &Value) -> Result<String> {
    let session = match (text(arguments, "session"), context.session) {
        (Some(id), _) => SessionId::new(id)?,
        (None, Some(session)) => session.clone(),
        (None, None) => {
            return Err(Error::BadQuery {
                message: "read_evicted_output needs the \"session\" the output belongs to".into(),
            })
        }
    };
    let number = |key: &str, default: usize| {
        arguments
            .get(key)
            .and_then(Value::as_u64)
            .map_or(default, |n| n as usize)
    };
    let paths = context.store.session_paths(context.agent, &session);
    let page = read_evicted(
        &paths.evicted(),
        required(arguments, "call_id", "read_evicted_output")?,
        number("offset", 0),
        number("limit", DEFAULT_READ_LIMIT_LINES),
    )?;
    Ok(format!(
        "{}\n(lines {}–{} of {}{})",
        page.text.trim_end(),
        page.offset,
        page.offset + page.lines_returned,
        page.total_lines,
        if page.has_more { "; more follow" } else { "" }
    ))
}
