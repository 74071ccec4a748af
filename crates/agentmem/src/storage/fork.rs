//! What a fork copies, decided once for every backend: the source's log,
//! archive and snapshot cut after a turn.

use std::borrow::Borrow;

use crate::base::error::{Error, Result};
use crate::base::event::Event;
use crate::base::id::{AgentId, SessionId};
use crate::base::turn::turn_number;
use crate::files::meta::SessionMeta;
use crate::files::snapshot::Snapshot;

/// What a fork copies: the log, the archive and the summary of it, through
/// the turn it is cut at.
#[derive(Debug, Clone, PartialEq)]
pub struct ForkPlan {
    /// The fork's active log.
    pub active: Vec<Event>,
    /// The fork's archive.
    pub archive: Vec<Event>,
    /// The original's summary of its archive, when the fork keeps all of
    /// the archive; its long-term memory stays the original's to write.
    pub snapshot: Option<Snapshot>,
    /// The turn the fork was cut after, as the history names it (`None`: all of it).
    pub cut: Option<String>,
}

impl ForkPlan {
    /// The fork's description: its counts, where it came from, its title
    /// redacted by `redaction`.
    pub fn meta(
        &self,
        agent: &AgentId,
        source: &SessionId,
        new_id: &SessionId,
        redaction: crate::redact::RedactionPolicy,
    ) -> SessionMeta {
        let history: Vec<&Event> = self.archive.iter().chain(&self.active).collect();
        let mut meta = crate::files::meta::meta_for(&history, agent, new_id, redaction);
        meta.archived_events = self.archive.len();
        meta.compactions_finished = self.snapshot.as_ref().map_or(0, |s| s.compactions);
        meta.forked_from = Some(source.to_string());
        meta.forked_at_turn = self
            .cut
            .clone()
            .or_else(|| history.last().map(|e| e.turn_id.clone()));
        meta
    }
}

/// The fork of `source` (its active log `active`, its archive `archived`,
/// its snapshot) through `at_turn` (`turn_0003` or `3`; all of it when
/// `None`). A cut inside the archive keeps part of what the summary
/// stands for: those events go back to the fork's log, unsummarized, and
/// the fork compacts them when it needs to.
pub fn plan(
    source: &SessionId,
    active: &[impl Borrow<Event>],
    archived: Vec<Event>,
    snapshot: Option<Snapshot>,
    at_turn: Option<&str>,
) -> Result<ForkPlan> {
    let cut = match at_turn {
        Some(turn) => Some(resolve_turn(source, active, &archived, turn)?),
        None => None,
    };
    let kept_active = events_through_turn(active, cut.as_deref());
    let archive = events_through_turn(&archived, cut.as_deref());
    Ok(if archive.len() == archived.len() {
        ForkPlan {
            active: kept_active,
            archive,
            snapshot: snapshot.map(|snapshot| Snapshot {
                memory: None,
                ..snapshot
            }),
            cut,
        }
    } else {
        ForkPlan {
            active: archive.into_iter().chain(kept_active).collect(),
            archive: Vec::new(),
            snapshot: None,
            cut,
        }
    })
}

/// Finds `turn` (`turn_0003` or `3`) in the session's history, archive
/// included, or says which turns exist.
fn resolve_turn(
    source: &SessionId,
    active: &[impl Borrow<Event>],
    archived: &[Event],
    turn: &str,
) -> Result<String> {
    let wanted = turn
        .parse::<u64>()
        .map(crate::base::turn::turn_id)
        .unwrap_or_else(|_| turn.to_owned());
    let mut history = archived.iter().chain(active.iter().map(Borrow::borrow));
    if history.any(|e| e.turn_id == wanted) {
        return Ok(wanted);
    }
    Err(Error::TurnNotFound {
        session: source.to_string(),
        turn: turn.to_owned(),
        last: active
            .last()
            .map(Borrow::borrow)
            .or(archived.last())
            .map_or_else(|| "(none)".into(), |e| e.turn_id.clone()),
    })
}

/// The events that belong to `turn` or an earlier one (all of them without
/// a turn), copied. Turn ids of a foreign shape are kept when they come
/// before the first event of a later turn.
fn events_through_turn(events: &[impl Borrow<Event>], turn: Option<&str>) -> Vec<Event> {
    let events: Vec<&Event> = events.iter().map(Borrow::borrow).collect();
    let Some(turn) = turn else {
        return events.into_iter().cloned().collect();
    };
    let limit = turn_number(turn);
    let first_later = events
        .iter()
        .position(|e| matches!((turn_number(&e.turn_id), limit), (Some(n), Some(l)) if n > l))
        .unwrap_or(events.len());
    events
        .into_iter()
        .enumerate()
        .filter(|(i, e)| match (turn_number(&e.turn_id), limit) {
            (Some(n), Some(l)) => n <= l,
            _ => *i < first_later,
        })
        .map(|(_, e)| e.clone())
        .collect()
}
