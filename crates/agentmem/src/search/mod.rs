//! Search over an agent's whole raw history — every session, archive
//! included — and the `search_conversation_history` tool agents call.
//!
//! ```
//! use agentmem::{Durability, Event, SearchFilter, Store};
//! let dir = tempfile::tempdir().unwrap();
//! let store = Store::open(dir.path(), Durability::Batch).unwrap();
//! let agent = Default::default();
//! let mut session = store.create_session(&agent, None).unwrap();
//! session.ingest(vec![Event::user("The build fails with error E0502 in parser.rs")]).unwrap();
//! let hits = store.search(&agent, "E0502 parser", &SearchFilter::default()).unwrap();
//! assert_eq!(hits[0].turn_id, "turn_0001");
//! ```

mod excerpt;
pub(crate) mod feed;
pub mod graph;
pub mod index;
pub mod lexemes;
pub mod query;
mod tail;
pub(crate) mod text;
pub(crate) mod tokenizer;
pub(crate) mod vector_feed;
pub mod vectors;
pub mod when;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::base::error::{Error, Result};
use crate::base::event::TraceType;
use crate::render::ToolSchema;

pub(crate) use feed::IndexFeeder;
pub use index::HistoryIndex;
pub use vector_feed::EmbeddingStatus;
pub(crate) use vector_feed::VectorFeed;
pub use vectors::{SharedEmbedder, Similarities};

/// Excerpts a search returns unless asked otherwise.
pub const DEFAULT_SEARCH_LIMIT: usize = 10;

/// Who an indexed text came from, as search results label it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchRole {
    /// The user's messages.
    User,
    /// The assistant's messages, reasoning and summaries.
    Assistant,
    /// A tool call or a tool's output.
    Tool,
    /// System messages and aborted turns.
    System,
    /// A semantic fact (recall only).
    Fact,
    /// An episodic item (recall only).
    Episode,
    /// A change to a session's working memory.
    State,
}

impl SearchRole {
    /// The role of an event of `trace_type`.
    pub fn of(trace_type: TraceType) -> SearchRole {
        match trace_type {
            TraceType::User => SearchRole::User,
            TraceType::Assistant | TraceType::Reasoning | TraceType::Summary => {
                SearchRole::Assistant
            }
            TraceType::ToolCall | TraceType::ToolResult => SearchRole::Tool,
            TraceType::System | TraceType::TurnAborted => SearchRole::System,
            TraceType::WorkingMemory => SearchRole::State,
        }
    }

    /// The stored and command-line name, e.g. `tool`.
    pub fn as_str(self) -> &'static str {
        match self {
            SearchRole::User => "user",
            SearchRole::Assistant => "assistant",
            SearchRole::Tool => "tool",
            SearchRole::System => "system",
            SearchRole::Fact => "fact",
            SearchRole::Episode => "episode",
            SearchRole::State => "state",
        }
    }

    /// The label shown before an excerpt, e.g. `Tool`.
    pub fn label(self) -> &'static str {
        match self {
            SearchRole::User => "User",
            SearchRole::Assistant => "Assistant",
            SearchRole::Tool => "Tool",
            SearchRole::System => "System",
            SearchRole::Fact => "Fact",
            SearchRole::Episode => "Episode",
            SearchRole::State => "Working memory",
        }
    }

    /// Parses a role a user typed: `user`, `assistant`, `tool`, `system`
    /// or `state` (working-memory updates).
    pub fn parse(text: &str) -> Result<SearchRole> {
        match text.to_ascii_lowercase().as_str() {
            "user" => Ok(SearchRole::User),
            "assistant" => Ok(SearchRole::Assistant),
            "tool" => Ok(SearchRole::Tool),
            "system" => Ok(SearchRole::System),
            "state" => Ok(SearchRole::State),
            other => Err(Error::BadQuery {
                message: format!(
                    "unknown role {other:?}; use one of: user, assistant, tool, system, state"
                ),
            }),
        }
    }

    /// The role as stored (`as_str`); an unknown name reads as `assistant`.
    pub fn parse_stored(text: &str) -> SearchRole {
        match text {
            "user" => SearchRole::User,
            "tool" => SearchRole::Tool,
            "system" => SearchRole::System,
            "fact" => SearchRole::Fact,
            "episode" => SearchRole::Episode,
            "state" => SearchRole::State,
            _ => SearchRole::Assistant,
        }
    }
}

/// Which events a search looks at.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchFilter {
    /// Only this session (all of the agent's otherwise).
    pub session: Option<String>,
    /// Only events of this role.
    pub role: Option<SearchRole>,
    /// Only events at or after this time (epoch seconds).
    pub since: Option<f64>,
    /// Only events before this time (epoch seconds).
    pub until: Option<f64>,
    /// At most this many hits.
    pub limit: usize,
}

impl Default for SearchFilter {
    fn default() -> Self {
        SearchFilter {
            session: None,
            role: None,
            since: None,
            until: None,
            limit: DEFAULT_SEARCH_LIMIT,
        }
    }
}

/// One event that matched, with the events around it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    /// The session the event is in.
    pub session: String,
    /// The event's id.
    pub event_id: String,
    /// The turn the event is in.
    pub turn_id: String,
    /// Position in the session's full history (archive first).
    pub ord: u64,
    /// Who the event came from.
    pub role: SearchRole,
    /// When the event happened (epoch seconds).
    pub ts: f64,
    /// BM25 relevance; higher is better.
    pub score: f64,
    /// The matching part of the event, matched words in `[brackets]`.
    pub excerpt: String,
    /// The events before and after (the hit included), one line each.
    pub context: Vec<ContextLine>,
}

/// One event shown around a hit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextLine {
    /// The event's id.
    pub event_id: String,
    /// The turn the event is in.
    pub turn_id: String,
    /// Who the event came from.
    pub role: SearchRole,
    /// The speaker's name, when the event carried one.
    pub speaker: Option<String>,
    /// The event's text, cut to a line.
    pub text: String,
    /// Whether this is the event that matched.
    pub is_hit: bool,
}

impl SearchHit {
    /// The hit as a model or a person reads it: a header, then the labelled
    /// context lines, the hit marked with `>` and shown by its excerpt (what
    /// matched may lie far past the start a context line shows).
    pub fn render(&self) -> String {
        let mut text = format!(
            "session {} · {} · {}",
            self.session,
            self.turn_id,
            crate::base::event::format_ts(self.ts)
        );
        for line in &self.context {
            let mark = if line.is_hit { '>' } else { ' ' };
            let shown = match line.is_hit && !self.excerpt.is_empty() {
                true => &self.excerpt,
                false => &line.text,
            };
            text.push_str(&format!(
                "\n{mark} [{}] {}: {shown}",
                line.turn_id,
                line.speaker.as_deref().unwrap_or(line.role.label()),
            ));
        }
        text
    }
}

/// The tool schema for `search_conversation_history` (neutral form; every
/// renderer turns it into its API's shape).
pub fn search_tool_schema() -> ToolSchema {
    ToolSchema {
        name: "search_conversation_history".into(),
        description: "Search the full history of your past conversations (compacted parts included) for words or phrases. Returns up to 10 excerpts with the lines around them, labelled User/Assistant/Tool with their turn ids.".into(),
        parameters: json!({"type": "object", "properties": {
            "query": {"type": "string", "description": "Words to look for."},
            "role": {"type": "string", "enum": ["user", "assistant", "tool", "system", "state"], "description": "Only what this role said."},
            "session": {"type": "string", "description": "Only this session."},
            "since": {"type": "string", "description": "Only after this date (RFC 3339 or YYYY-MM-DD)."},
            "until": {"type": "string", "description": "Only before this date (RFC 3339 or YYYY-MM-DD)."},
        }, "required": ["query"]}),
    }
}

/// What `search_conversation_history` takes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchToolArgs {
    query: String,
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    session: Option<String>,
    #[serde(default)]
    since: Option<String>,
    #[serde(default)]
    until: Option<String>,
}

/// The arguments of a `search_conversation_history` call, checked.
pub fn parse_tool_arguments(arguments: &Value) -> Result<(String, SearchFilter)> {
    let args: SearchToolArgs =
        crate::base::arguments::parse("search_conversation_history", arguments)?;
    if args.query.trim().is_empty() {
        return Err(Error::BadQuery {
            message: "search_conversation_history needs a non-empty \"query\" string".into(),
        });
    }
    let filter = SearchFilter {
        session: args.session,
        role: args.role.as_deref().map(SearchRole::parse).transpose()?,
        since: args.since.as_deref().map(parse_date).transpose()?,
        until: args.until.as_deref().map(parse_date).transpose()?,
        limit: DEFAULT_SEARCH_LIMIT,
    };
    Ok((args.query, filter))
}

/// The tool's answer for the model: the rendered hits, or a line saying none matched.
pub fn render_hits(hits: &[SearchHit]) -> String {
    if hits.is_empty() {
        return "No match in the conversation history.".into();
    }
    hits.iter()
        .map(SearchHit::render)
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A date or time as epoch seconds: RFC 3339, or `YYYY-MM-DD` (midnight UTC).
pub fn parse_date(text: &str) -> Result<f64> {
    if let Some(date) = when::iso_date(text) {
        return Ok(date.midnight().assume_utc().unix_timestamp() as f64);
    }
    crate::base::event::parse_rfc3339(text).ok_or_else(|| Error::BadQuery {
        message: format!("cannot read the date {text:?}; write YYYY-MM-DD or an RFC 3339 time"),
    })
}
