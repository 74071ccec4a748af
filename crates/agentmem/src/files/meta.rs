//! `meta.json`: what a session listing shows without reading the log.
//!
//! The meta file is a cache of facts derivable from the log (counts, title,
//! last update) plus the few facts that are not (fork origin, imports). It is
//! rewritten atomically; `log_bytes` tells a reader whether it is current.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::base::error::{Error, IoContext, Result};
use crate::base::event::{now_ts, Event};
use crate::base::fs::write_atomic;
use crate::base::id::{AgentId, SessionId};
use crate::redact::{redact_start, RedactionPolicy};

/// The file name of the meta file inside a session directory.
pub(crate) const META_FILE: &str = "meta.json";

/// Longest title, in characters.
pub(crate) const TITLE_MAX_CHARS: usize = 80;

/// One import into a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportRecord {
    /// The imported file.
    pub path: String,
    /// The format it was read as.
    pub format: String,
    /// When it was imported (epoch seconds).
    pub ts: f64,
    /// Events the import added.
    pub events_added: usize,
}

/// A session's description.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SessionMeta {
    /// The session's id.
    pub id: String,
    /// The agent it belongs to.
    pub agent_id: String,
    /// The first user message, redacted, whitespace collapsed, cut to 80
    /// characters (see [`title_from`]).
    #[serde(default)]
    pub title: Option<String>,
    /// When it was created (epoch seconds).
    pub created: f64,
    /// When it last changed (epoch seconds).
    pub updated: f64,
    /// Events in the history: the active log plus the archive.
    #[serde(default)]
    pub events: usize,
    /// Events moved to the archive by compactions.
    #[serde(default)]
    pub archived_events: usize,
    /// Compactions whose every step is done (the snapshot counts those
    /// committed): one the snapshot counts beyond this is finished on open.
    #[serde(default)]
    pub compactions_finished: u64,
    /// Turns (user messages) in the log.
    #[serde(default)]
    pub turns: usize,
    /// Size of `raw_traces.jsonl` when these counts were taken.
    #[serde(default)]
    pub log_bytes: u64,
    /// The session it was forked from, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<String>,
    /// The last turn it took from that session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_at_turn: Option<String>,
    /// The imports made into it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub imports: Vec<ImportRecord>,
}

impl SessionMeta {
    /// Takes from `source`, the same session's description elsewhere, what
    /// its log does not tell: creation and update times, title, fork
    /// origin, imports and the compactions finished.
    pub fn adopt(&mut self, source: &SessionMeta) {
        self.created = source.created;
        self.updated = source.updated;
        self.title = source.title.clone();
        self.forked_from = source.forked_from.clone();
        self.forked_at_turn = source.forked_at_turn.clone();
        self.imports = source.imports.clone();
        self.compactions_finished = self.compactions_finished.max(source.compactions_finished);
    }

    /// The description of a new, empty session of `agent`, made now.
    pub fn new_session(agent: &AgentId, id: &SessionId) -> SessionMeta {
        let now = now_ts();
        SessionMeta {
            id: id.to_string(),
            agent_id: agent.to_string(),
            created: now,
            updated: now,
            ..SessionMeta::default()
        }
    }

    /// Reads the meta file in `session_dir`.
    pub fn read(session_dir: &Path) -> Result<SessionMeta> {
        let path = session_dir.join(META_FILE);
        let text = std::fs::read_to_string(&path).io("read", &path)?;
        serde_json::from_str(&text).map_err(|e| Error::BadLine {
            path: path.display().to_string(),
            line: e.line(),
            message: e.to_string(),
        })
    }

    /// Writes the meta file into `session_dir` atomically.
    pub fn write(&self, session_dir: &Path) -> Result<()> {
        let json = serde_json::to_vec_pretty(self).expect("meta serializes");
        write_atomic(&session_dir.join(META_FILE), &json)
    }
}

/// The most of a user message a title is made from, in bytes.
const TITLE_SOURCE_BYTES: usize = 4096;

/// A title from a user message: redacted as `policy` says (secrets always:
/// a title is shown wherever sessions are listed), whitespace collapsed,
/// at most 80 characters.
///
/// ```
/// use agentmem::redact::RedactionPolicy;
/// use agentmem::files::meta::title_from;
/// let policy = RedactionPolicy::default();
/// assert_eq!(title_from("  fix\n the   build ", policy), "fix the build");
/// assert_eq!(title_from(&"é".repeat(100), policy).chars().count(), 80);
/// assert_eq!(title_from("use ghp_0123456789abcdefghijklmnopqrstuvwxyz", policy), "use [REDACTED:secret]");
/// ```
pub fn title_from(message: &str, policy: RedactionPolicy) -> String {
    let clean = redact_start(message.trim_start(), TITLE_SOURCE_BYTES, policy);
    let collapsed = clean.split_whitespace().collect::<Vec<_>>().join(" ");
    collapsed.chars().take(TITLE_MAX_CHARS).collect()
}

/// The meta a session with `events` has, its title redacted by `redaction`.
pub(crate) fn meta_for(
    events: &[impl std::borrow::Borrow<Event>],
    agent: &AgentId,
    id: &SessionId,
    redaction: crate::redact::RedactionPolicy,
) -> SessionMeta {
    let now = now_ts();
    let events: Vec<&Event> = events.iter().map(std::borrow::Borrow::borrow).collect();
    let users = events
        .iter()
        .filter(|e| e.trace_type == crate::base::event::TraceType::User);
    SessionMeta {
        id: id.to_string(),
        agent_id: agent.to_string(),
        title: events
            .iter()
            .find(|e| e.trace_type == crate::base::event::TraceType::User)
            .map(|e| title_from(&e.content, redaction)),
        created: now,
        updated: events.last().map_or(now, |e| e.ts),
        events: events.len(),
        turns: users.count(),
        ..SessionMeta::default()
    }
}
