//! What a backend's writer does to a batch before storing it, the way the
//! files backend's log does: validate every event, drop those the session
//! already holds, and fill in what they left empty (id, time, turn, seq).

use std::collections::HashSet;

use crate::base::error::{Error, Result};
use crate::base::event::{now_millis, now_ts, Event};
use crate::base::id::EventIds;
use crate::base::turn::TurnTracker;

/// A batch checked for appending.
#[derive(Debug, Default)]
pub struct Admitted {
    /// The events new to the session, in batch order.
    pub fresh: Vec<Event>,
    /// Events dropped because the session (or the batch before them) held their id.
    pub duplicates: usize,
}

/// The writer's side of assigning: where the conversation stands, and the
/// generator of event ids.
#[derive(Debug)]
pub struct Assigner {
    turns: TurnTracker,
    ids: EventIds,
}

impl Assigner {
    /// An assigner for a session whose active log holds `active`, in order.
    pub fn new<'a>(active: impl IntoIterator<Item = &'a Event>) -> Assigner {
        Assigner {
            turns: TurnTracker::from_events(active),
            ids: EventIds::new(),
        }
    }

    /// The ids a batch names, to look up among those the session holds.
    pub fn named_ids(events: &[Event]) -> Vec<String> {
        events
            .iter()
            .filter(|e| !e.id.is_empty())
            .map(|e| e.id.clone())
            .collect()
    }

    /// Checks every event of `events` (nothing is admitted when one is
    /// invalid) and sets aside those whose id is in `held` or earlier in
    /// the batch.
    pub fn admit(events: Vec<Event>, held: &HashSet<String>) -> Result<Admitted> {
        for (index, event) in events.iter().enumerate() {
            event
                .validate()
                .map_err(|reason| Error::InvalidEvent { index, reason })?;
        }
        let mut admitted = Admitted::default();
        let mut batch = HashSet::new();
        for event in events {
            if !event.id.is_empty() && (held.contains(&event.id) || !batch.insert(event.id.clone()))
            {
                admitted.duplicates += 1;
            } else {
                admitted.fresh.push(event);
            }
        }
        Ok(admitted)
    }

    /// Fills in what `fresh` left empty. Returns where the conversation
    /// stood before, to [`Assigner::restore`] when storing the batch fails.
    pub fn assign(&mut self, fresh: &mut [Event]) -> TurnTracker {
        let before = self.turns.clone();
        for event in fresh {
            if event.ts == 0.0 {
                event.ts = now_ts();
            }
            if event.id.is_empty() {
                event.id = self.ids.next_id(now_millis());
            }
            self.turns.assign(event);
        }
        before
    }

    /// Puts the conversation back where it stood before a batch that was not stored.
    pub fn restore(&mut self, before: TurnTracker) {
        self.turns = before;
    }
}
