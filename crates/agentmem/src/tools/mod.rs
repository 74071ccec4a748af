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
//! use agentmem::tools::{self, ToolContext, ToolsOn};
//! use agentmem::{Durability, Store};
//! let dir = tempfile::tempdir().unwrap();
//! let store = Store::open(dir.path(), Durability::Batch).unwrap();
//! let agent = Default::default();
//! let context = ToolContext { store: &store, agent: &agent, session: None, on: ToolsOn::StoreFiles };
//! let args = serde_json::json!({"content": "- The user prefers tabs."});
//! let answer = tools::run(&context, "write_memory", &args).unwrap();
//! assert!(answer.contains("hash"));
//! let read = tools::run(&context, "read_memory", &serde_json::json!({})).unwrap();
//! assert!(read.contains("prefers tabs"));
//! assert!(tools::run(&context, "bash", &args).is_none(), "not a memory tool");
//! ```

pub mod working;

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::base::arguments::parse;
use crate::base::error::{Error, Result};
use crate::base::id::{AgentId, SessionId};
use crate::files::evicted::{page_of, read_evicted};
use crate::files::records::{NewFact, Provenance, Trust};
use crate::memory::facts::{Added, FactStore};
use crate::memory::notebook::Notebook;
use crate::memory::recall::RecallRequest;
use crate::pipeline::guard::{read_evicted_output_schema, DEFAULT_READ_LIMIT_LINES};
use crate::render::ToolSchema;
use crate::search::{parse_tool_arguments, render_hits, search_tool_schema};
use crate::storage::Storage;
use crate::store::Store;
use crate::tokens::Encoding;

/// Where a tool runs: the store, the agent, and the session asking (if any).
#[derive(Debug, Clone, Copy)]
pub struct ToolContext<'a> {
    /// The store the tool reads and writes (its settings, and its files on
    /// the files backend).
    pub store: &'a Store,
    /// The agent whose memory it uses.
    pub agent: &'a AgentId,
    /// The session whose model called the tool: its evicted outputs are
    /// read, its own history is left out of recall, its facts cite it.
    pub session: Option<&'a SessionId>,
    /// Where the agent's memory and history are kept.
    pub on: ToolsOn<'a>,
}

/// Where the tools find the agent's memory and its sessions' history.
#[derive(Debug, Clone, Copy)]
pub enum ToolsOn<'a> {
    /// The store's own files (the files backend).
    StoreFiles,
    /// A backend behind the storage seam: its sessions' history index, and
    /// its memory ([`Storage::memory`]).
    Seam(&'a Arc<dyn Storage>),
}

impl ToolContext<'_> {
    /// The agent's MEMORY.md, where it is kept.
    fn notebook(&self) -> Notebook {
        match self.on {
            ToolsOn::StoreFiles => self.store.notebook(self.agent),
            ToolsOn::Seam(storage) => Notebook::on(
                Arc::clone(storage).memory(),
                self.agent,
                self.store.redaction(),
            ),
        }
    }

    /// The agent's facts, where they are kept.
    fn facts(&self) -> FactStore {
        match self.on {
            ToolsOn::StoreFiles => self.store.facts(self.agent),
            ToolsOn::Seam(storage) => FactStore::on(
                Arc::clone(storage).memory(),
                self.agent,
                self.store.redaction(),
            ),
        }
    }

    /// The sessions the history is read from.
    fn storage(&self) -> Option<&dyn Storage> {
        match self.on {
            ToolsOn::StoreFiles => None,
            ToolsOn::Seam(storage) => Some(&**storage),
        }
    }
}

/// The name under which the extractor of facts the model states is recorded.
pub(crate) const REMEMBER_FACT_EXTRACTOR: &str = "remember_fact";

/// Every memory tool's schema.
pub fn schemas() -> Vec<ToolSchema> {
    let mut schemas = crate::memory::notebook::memory_tool_schemas();
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
    schemas.extend(crate::tools::working::schemas());
    schemas
}

/// Runs any tool of [`session_schemas`] for the model of `session`, which
/// the caller holds open for writing: the working-memory tools change it
/// directly (a second writer would be refused by its lock), the others run
/// as [`run`] does. `None` when `name` is none of them.
pub fn run_in_session(
    store: &Store,
    agent: &AgentId,
    on: ToolsOn<'_>,
    session: &mut crate::session::Session,
    name: &str,
    arguments: &Value,
) -> Option<String> {
    if let Some(answer) = crate::tools::working::run(session, name, arguments) {
        return Some(answer);
    }
    let context = ToolContext {
        store,
        agent,
        session: Some(session.id()),
        on,
    };
    run(&context, name, arguments)
}

/// What `write_memory` takes (also `POST /v1/memory`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteMemoryArgs {
    /// The note to append (also accepted as `text`).
    #[serde(alias = "text")]
    pub content: String,
    /// The hash the change is made against (compare-and-swap).
    #[serde(default)]
    pub expected_hash: Option<String>,
}

/// What `update_memory` takes (also `PATCH /v1/memory`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateMemoryArgs {
    /// The exact text to replace (also accepted as `old`).
    #[serde(alias = "old")]
    pub old_text: String,
    /// What replaces it (also accepted as `new`); left out, the text is removed.
    #[serde(alias = "new", default)]
    pub new_text: String,
    /// The hash the change is made against (compare-and-swap).
    #[serde(default)]
    pub expected_hash: Option<String>,
}

/// What `read_memory` takes: nothing.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecallArgs {
    query: String,
    #[serde(default)]
    budget_tokens: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RememberFactArgs {
    fact: String,
    #[serde(default)]
    tags: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadEvictedArgs {
    call_id: String,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
    /// Whose output: needed outside a session's own loop.
    #[serde(default)]
    session: Option<String>,
}

/// Runs the memory tool `name`; `None` when `name` is not one.
pub fn run(context: &ToolContext<'_>, name: &str, arguments: &Value) -> Option<String> {
    let answer = match name {
        "read_memory" => parse::<NoArgs>(name, arguments).and_then(|_| read_memory(context)),
        "write_memory" => parse(name, arguments).and_then(|args| write_memory(context, args)),
        "update_memory" => parse(name, arguments).and_then(|args| update_memory(context, args)),
        "search_conversation_history" => parse_tool_arguments(arguments)
            .and_then(|(query, filter)| match context.storage() {
                None => context.store.search(context.agent, &query, &filter),
                Some(storage) => context
                    .store
                    .search_on(storage, context.agent, &query, &filter),
            })
            .map(|hits| render_hits(&hits)),
        "recall" => parse(name, arguments).and_then(|args| recall(context, args)),
        "remember_fact" => parse(name, arguments).and_then(|args| remember_fact(context, args)),
        "read_evicted_output" => parse(name, arguments).and_then(|args| evicted(context, args)),
        _ => return None,
    };
    Some(answer.unwrap_or_else(|error| format!("error: {error}")))
}

/// `text`, refused when blank: a tool called with nothing to work on.
fn non_empty<'a>(text: &'a str, key: &str, tool: &str) -> Result<&'a str> {
    match text.trim().is_empty() {
        true => Err(Error::BadQuery {
            message: format!("{tool} needs a non-empty \"{key}\" string"),
        }),
        false => Ok(text),
    }
}

fn read_memory(context: &ToolContext<'_>) -> Result<String> {
    let version = context.notebook().read()?;
    Ok(format!("hash: {}\n\n{}", version.hash, version.content))
}

fn write_memory(context: &ToolContext<'_>, args: WriteMemoryArgs) -> Result<String> {
    let content = non_empty(&args.content, "content", "write_memory")?;
    let version = context
        .notebook()
        .append(content, args.expected_hash.as_deref())?;
    Ok(format!(
        "Appended. MEMORY.md is now at hash {}.",
        version.hash
    ))
}

fn update_memory(context: &ToolContext<'_>, args: UpdateMemoryArgs) -> Result<String> {
    let old = non_empty(&args.old_text, "old_text", "update_memory")?;
    let version = context
        .notebook()
        .update(old, &args.new_text, args.expected_hash.as_deref())?;
    Ok(format!(
        "Replaced. MEMORY.md is now at hash {}.",
        version.hash
    ))
}

fn recall(context: &ToolContext<'_>, args: RecallArgs) -> Result<String> {
    let budget = args
        .budget_tokens
        .unwrap_or(crate::memory::project::DEFAULT_CROSS_SESSION_TOKENS);
    let mut request = RecallRequest::new(non_empty(&args.query, "query", "recall")?, budget);
    request.exclude_session = context.session.map(|s| s.to_string());
    let tokenizer = Encoding::default().tokenizer();
    let recalled = match context.storage() {
        None => context.store.recall(context.agent, &request, tokenizer)?,
        Some(storage) => context
            .store
            .recall_on(storage, context.agent, &request, tokenizer)?,
    };
    Ok(if recalled.items.is_empty() {
        "Nothing recalled for that.".to_owned()
    } else {
        recalled.block
    })
}

fn remember_fact(context: &ToolContext<'_>, args: RememberFactArgs) -> Result<String> {
    let added = context.facts().add(NewFact {
        fact: non_empty(&args.fact, "fact", "remember_fact")?.to_owned(),
        tags: args.tags,
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

fn evicted(context: &ToolContext<'_>, args: ReadEvictedArgs) -> Result<String> {
    let session = match (args.session, context.session) {
        (Some(id), _) => SessionId::new(id)?,
        (None, Some(session)) => session.clone(),
        (None, None) => {
            return Err(Error::BadQuery {
                message: "read_evicted_output needs the \"session\" the output belongs to".into(),
            })
        }
    };
    let call_id = non_empty(&args.call_id, "call_id", "read_evicted_output")?;
    let (offset, limit) = (
        args.offset.unwrap_or(0),
        args.limit.unwrap_or(DEFAULT_READ_LIMIT_LINES),
    );
    let page = match context.on {
        ToolsOn::StoreFiles => {
            let paths = context.store.session_paths(context.agent, &session);
            read_evicted(&paths.evicted(), call_id, offset, limit)?
        }
        ToolsOn::Seam(storage) => {
            let text =
                Arc::clone(storage)
                    .memory()
                    .read_evicted(context.agent, &session, call_id)?;
            page_of(&text, offset, limit)
        }
    };
    Ok(format!(
        "{}\n(lines {}–{} of {}{})",
        page.text.trim_end(),
        page.offset,
        page.offset + page.lines_returned,
        page.total_lines,
        if page.has_more { "; more follow" } else { "" }
    ))
}
