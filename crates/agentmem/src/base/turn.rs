//! Turn and sequence assignment.
//!
//! A user event starts a new turn (`turn_0001`, `turn_0002`, …). Every other
//! event joins the current turn, except tool results: they keep the turn of the
//! call they answer, even when they arrive after the next user message. `seq`
//! numbers events inside a turn from 1.

use crate::base::event::{Event, TraceType};

/// The turn id events get before the first user message (system prompts, preambles).
pub const PREAMBLE_TURN: &str = "turn_0000";

/// Formats turn number `n` as `turn_0001`.
pub fn turn_id(n: u64) -> String {
    format!("turn_{n:04}")
}

/// The number in a `turn_0001`-style id, if it has that shape.
pub fn turn_number(turn_id: &str) -> Option<u64> {
    turn_id.strip_prefix("turn_")?.parse().ok()
}

/// Remembers where the conversation stands so new events get the right turn and seq.
#[derive(Debug, Default, Clone)]
pub struct TurnTracker {
    current: Option<String>,
    last_number: u64,
    next_seq: foldhash::HashMap<String, u64>,
    call_turns: foldhash::HashMap<String, String>,
}

impl TurnTracker {
    /// A tracker that has seen `events`, in log order.
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a Event>) -> Self {
        let mut tracker = Self::default();
        for event in events {
            tracker.observe(event);
        }
        tracker
    }

    /// Fills in `turn_id` and `seq` where they are empty, then records the event.
    pub fn assign(&mut self, event: &mut Event) {
        if event.turn_id.is_empty() {
            event.turn_id = self.turn_for(event);
        }
        if event.seq == 0 {
            event.seq = self.next_seq.get(&event.turn_id).copied().unwrap_or(1);
        }
        self.observe(event);
    }

    /// The turn the next non-user event joins.
    pub fn current_turn(&self) -> &str {
        self.current.as_deref().unwrap_or(PREAMBLE_TURN)
    }

    /// The number of the highest turn seen so far.
    pub(crate) fn last_turn_number(&self) -> u64 {
        self.last_number
    }

    fn turn_for(&self, event: &Event) -> String {
        match event.trace_type {
            TraceType::User => turn_id(self.last_number.saturating_add(1)),
            TraceType::ToolResult => event
                .tool_call_id
                .as_ref()
                .and_then(|call| self.call_turns.get(call))
                .cloned()
                .unwrap_or_else(|| self.current_turn().to_owned()),
            TraceType::Assistant
            | TraceType::ToolCall
            | TraceType::System
            | TraceType::Reasoning
            | TraceType::Summary
            | TraceType::TurnAborted
            | TraceType::WorkingMemory => self.current_turn().to_owned(),
        }
    }

    /// Records an event whose turn and seq are already set.
    fn observe(&mut self, event: &Event) {
        let number = turn_number(&event.turn_id);
        let is_newer = number.is_some_and(|n| n > self.last_number);
        if event.trace_type == TraceType::User || is_newer || self.current.is_none() {
            self.current = Some(event.turn_id.clone());
        }
        if let Some(n) = number {
            self.last_number = self.last_number.max(n);
        }
        let after = event.seq.saturating_add(1);
        match self.next_seq.get_mut(&event.turn_id) {
            Some(next) => *next = (*next).max(after),
            None => {
                self.next_seq.insert(event.turn_id.clone(), after.max(1));
            }
        }
        if event.trace_type == TraceType::ToolCall {
            if let Some(call) = &event.tool_call_id {
                self.call_turns.insert(call.clone(), event.turn_id.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn assign_all(events: Vec<Event>) -> Vec<(String, u64)> {
        let mut tracker = TurnTracker::default();
        events
            .into_iter()
            .map(|mut e| {
                tracker.assign(&mut e);
                (e.turn_id, e.seq)
            })
            .collect()
    }

    #[test]
    fn user_events_start_turns_and_seq_counts_within_a_turn() {
        let got = assign_all(vec![
            Event::system("be brief"),
            Event::user("hi"),
            Event::assistant("hello"),
            Event::user("again"),
        ]);
        let want = [
            ("turn_0000", 1),
            ("turn_0001", 1),
            ("turn_0001", 2),
            ("turn_0002", 1),
        ];
        let want: Vec<_> = want.iter().map(|(t, s)| (t.to_string(), *s)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_late_tool_result_keeps_the_turn_of_its_call() {
        let got = assign_all(vec![
            Event::user("run it"),
            Event::tool_call("c1", "bash", json!({"cmd": "make"})),
            Event::user("are you done?"),
            Event::tool_result("c1", "ok"),
            Event::assistant("done"),
        ]);
        assert_eq!(got[3], ("turn_0001".to_string(), 3));
        assert_eq!(got[4], ("turn_0002".to_string(), 2));
    }

    #[test]
    fn given_turn_ids_are_kept_and_advance_the_counter() {
        let mut tracker = TurnTracker::default();
        let mut given = Event::user("imported");
        given.turn_id = "turn_0007".into();
        tracker.assign(&mut given);
        let mut next = Event::user("next");
        tracker.assign(&mut next);
        assert_eq!(next.turn_id, "turn_0008");
    }
}
