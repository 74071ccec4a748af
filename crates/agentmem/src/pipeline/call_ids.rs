//! Which call a tool call id names in the model's view.
//!
//! An id names the latest call that used it. Agents reuse ids: servers that
//! number the calls of each response write `call_0` again and again, and
//! agents record what they were sent. A call whose id an answered call used
//! before is a new interaction, and its results are its own; so in the view
//! it goes by an id of its own (`<id>-2`, `<id>-3`, …), and so do they. A
//! call that reuses the id of a call still waiting is a copy of it (a
//! replay, a response recorded twice): it keeps the id, and pair repair
//! removes it.

use crate::base::event::{Event, TraceType};

/// The calls of a view seen so far, to name each one's id in the view.
///
/// ```
/// use agentmem::pipeline::call_ids::CallIds;
/// use agentmem::Event;
/// let mut ids = CallIds::default();
/// let ls = serde_json::json!({"cmd": "ls"});
/// assert_eq!(ids.view_id(&Event::tool_call("call_0", "bash", ls.clone())), None);
/// assert_eq!(ids.view_id(&Event::tool_result("call_0", "a.rs")), None);
/// assert_eq!(ids.view_id(&Event::tool_call("call_0", "bash", ls)).as_deref(), Some("call_0-2"));
/// assert_eq!(ids.view_id(&Event::tool_result("call_0", "b.rs")).as_deref(), Some("call_0-2"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct CallIds {
    /// For each id calls used: the latest such call.
    latest: foldhash::HashMap<String, Latest>,
    /// Every id a call of the view goes by.
    taken: foldhash::HashSet<String>,
}

/// The latest call that used an id.
#[derive(Debug, Clone)]
struct Latest {
    /// The id it goes by in the view.
    view_id: String,
    answered: bool,
}

impl CallIds {
    /// The id `event` goes by in the view, when that is not its own: a call
    /// reusing the id of an answered call gets a new one, and a result goes
    /// by the view id of the latest call with its id. Takes `event` in: call
    /// it once for each event of the view, in order.
    pub fn view_id(&mut self, event: &Event) -> Option<String> {
        if !event.is_in_model_view() {
            return None;
        }
        let id = event.tool_call_id.as_deref().unwrap_or_default();
        let view_id = match event.trace_type {
            TraceType::ToolCall => self.call(id),
            TraceType::ToolResult => self.result(id),
            TraceType::User
            | TraceType::Assistant
            | TraceType::System
            | TraceType::Reasoning
            | TraceType::Summary
            | TraceType::TurnAborted
            | TraceType::WorkingMemory => return None,
        };
        (view_id != id).then_some(view_id)
    }

    fn call(&mut self, id: &str) -> String {
        if let Some(waiting) = self.latest.get(id).filter(|latest| !latest.answered) {
            return waiting.view_id.clone();
        }
        let view_id = if self.taken.contains(id) {
            self.fresh(id)
        } else {
            id.to_owned()
        };
        self.taken.insert(view_id.clone());
        let latest = Latest {
            view_id: view_id.clone(),
            answered: false,
        };
        self.latest.insert(id.to_owned(), latest);
        view_id
    }

    fn result(&mut self, id: &str) -> String {
        match self.latest.get_mut(id) {
            Some(latest) => {
                latest.answered = true;
                latest.view_id.clone()
            }
            // An orphan: it must not pair with a call renamed to its id.
            None if self.taken.contains(id) => self.fresh(id),
            None => id.to_owned(),
        }
    }

    /// `<id>-<n>` for the first `n` from 2 that no call goes by.
    fn fresh(&self, id: &str) -> String {
        (2u64..)
            .map(|n| format!("{id}-{n}"))
            .find(|candidate| !self.taken.contains(candidate))
            .expect("some number is free")
    }
}
