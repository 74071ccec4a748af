//! Which session an import goes to when the caller names none.
//!
//! A transcript that names its session (Claude Code's `sessionId`, Codex's
//! `session_meta.id`) goes to that session. One that does not (SWE-agent,
//! OpenHands, OpenAI messages) goes to a session named after how it opens:
//! its format and a hash of its first event and its first user message.
//! Importing the file again, or after it grew (an agent appends to its
//! transcript as it runs), finds that session again, and the stable event ids
//! let only the new events in. Another run that opens the same way (the same
//! task under the same prompt) but went on differently is a different
//! transcript: the session holds imported events that file lacks, so the run
//! gets the next name (`-2`, `-3`, …) instead of being mixed in.

use std::collections::HashSet;

use agentmem::{AgentId, Error, Event, Result, SessionId, Storage, TraceType};

use crate::format::Format;
use crate::imported::Imported;

/// The session `imported` (a transcript in `format`) goes to among the
/// agent's sessions `storage` keeps; see the module docs.
pub fn session_id_for(
    storage: &dyn Storage,
    agent: &AgentId,
    format: Format,
    imported: &Imported,
) -> Result<SessionId> {
    let named = imported.source_session_id.as_deref();
    if let Some(id) = named.and_then(|id| SessionId::new(id).ok()) {
        return Ok(id);
    }
    let Some(base) = opening_name(format, &imported.events) else {
        return Ok(SessionId::generate());
    };
    let source = format.source_event();
    let ids: HashSet<&str> = imported.events.iter().map(|e| e.id.as_str()).collect();
    let mut n = 1u64;
    loop {
        let id = match n {
            1 => SessionId::new(base.clone())?,
            n => SessionId::new(format!("{base}-{n}"))?,
        };
        match storage.full_history(agent, &id) {
            Err(Error::SessionNotFound { .. }) => return Ok(id),
            Err(other) => return Err(other),
            Ok(history) => {
                let mut earlier = history.iter().filter(|e| e.source_event == source);
                if earlier.all(|e| ids.contains(e.id.as_str())) {
                    return Ok(id);
                }
            }
        }
        n += 1;
    }
}

/// `<format>-<hash>` of the transcript's first event and first user
/// message: what a file keeps as it grows. `None` for a transcript with no
/// events.
fn opening_name(format: Format, events: &[Event]) -> Option<String> {
    let first = events.first()?;
    let first_user = events.iter().find(|e| e.trace_type == TraceType::User);
    let mut bytes = Vec::new();
    for event in std::iter::once(first).chain(first_user) {
        bytes.extend_from_slice(event.id.as_bytes());
        bytes.push(0);
        bytes.extend_from_slice(event.content.as_bytes());
        bytes.push(0);
    }
    Some(format!(
        "{}-{:016x}",
        format.name(),
        agentmem::base::hash::fnv1a(&bytes)
    ))
}
