//! Tool call / result pair integrity: pure, idempotent passes over the
//! model's view of a conversation, run before every prepare.
//!
//! Every provider API rejects a request whose tool calls and results do not
//! pair up: Chat Completions wants one `role: tool` message per call right
//! after the assistant message that made the calls; Anthropic wants every
//! `tool_use` answered by a `tool_result` in the very next user message;
//! Responses wants every `function_call_output` to follow its `function_call`;
//! Gemini wants as many function responses as calls in the next content.
//! Real transcripts break this: an agent is interrupted mid-call, a result
//! arrives after the next user message, a resumed session replays a call, a
//! window cut leaves a result whose call is gone. The passes here repair the
//! view so that every API accepts it. They take and give back views
//! (`Vec<Event>`), never touch the log, and each reports what it changed:
//!
//! 1. `resolve_duplicate_call_ids`: a call that reuses the id of a call
//!    already answered is a new interaction: it and its results go by an id
//!    of their own (see [`crate::pipeline::call_ids`]). A call that reuses the
//!    id of a call still waiting is a copy (a replay, a response recorded
//!    twice): the id keeps its **first** call and the first result after
//!    that call, and every copy is removed together with the other results
//!    of the id.
//! 2. `remove_orphan_results`: a result whose call is not in the view
//!    *before* it is removed. That includes a result that comes before its
//!    call: at that position it answers nothing, and no API accepts it there
//!    (the call is then answered by the next pass or made "aborted"). A second
//!    result of an answered call is removed too: the first one stays.
//! 3. `move_results_after_their_calls`: a result separated from its call's
//!    response (by a user message, the next response, a system message, …) is
//!    moved right after that response, behind the results already there.
//!    Results keep the order they were given in; only the others move.
//! 4. `ensure_call_results_present`: a call with no result gets a synthetic
//!    "aborted" one (see `aborted_result`), placed right after its
//!    response **after** the results already there (so the results of one
//!    response stay together, as Chat Completions and Anthropic require), in
//!    the order of the calls.
//!
//! A *response* is what [`crate::base::message::messages_from_events`] makes one
//! assistant message of: a run of consecutive assistant, reasoning and tool
//! call events. Its results are the tool results that directly follow it.
//! Events outside the model's view ([`Event::is_in_model_view`], a
//! subagent's own) are left where they are and never count as calls or
//! results; they do not interrupt a response or its results either, since
//! they are not rendered.
//!
//! Elsewhere in the pipeline, every removal removes the pair together:
//! strategies and tiers call [`remove_pairs`].
//!
//! Each pass is O(n) in the number of events (hash maps and sets, no nested
//! scans), and [`normalize_pairs`] runs them all.
//!
//! ```
//! use agentmem::pipeline::normalize::{normalize_pairs, pairs_are_intact};
//! use agentmem::Event;
//! let mut view = vec![
//!     Event::user("read a and b").with_id("u1"),
//!     Event::tool_call("c1", "read", serde_json::json!({"path": "a"})).with_id("e1"),
//!     Event::tool_call("c2", "read", serde_json::json!({"path": "b"})).with_id("e2"),
//!     Event::user("hurry up").with_id("u2"),
//!     Event::tool_result("c1", "A").with_id("r1"),
//! ];
//! let reports = normalize_pairs(&mut view);
//! let ids: Vec<&str> = view.iter().map(|e| e.id.as_str()).collect();
//! assert_eq!(ids, ["u1", "e1", "e2", "r1", "synthetic-aborted-c2", "u2"]);
//! assert_eq!(reports.len(), 2); // one result moved, one synthetic result added
//! assert!(pairs_are_intact(&view));
//! ```

use std::collections::{HashMap, HashSet};

use crate::base::event::{Event, TraceType};
use crate::pipeline::call_ids::CallIds;

/// The tag of the events these passes make.
pub const SYNTHETIC_TAG: &str = "synthetic";

/// The `source_event` of the events these passes make.
pub const SYNTHETIC_SOURCE: &str = "engine:normalize";

/// The content of a synthetic result for a call that never returned.
pub(crate) const ABORTED_CONTENT: &str =
    "aborted: the tool call was interrupted before it returned a result";

/// The `tool_error` of a synthetic result for a call that never returned.
pub const ABORTED_ERROR: &str = "aborted";

/// What one pass changed: ids of the events it added, removed and moved, in
/// the order it met them (events in a session's view always carry an id).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PassReport {
    /// The pass's name, e.g. `remove_orphan_results`.
    pub pass: &'static str,
    /// Events the pass made (synthetic results).
    pub added: Vec<String>,
    /// Events the pass took out of the view.
    pub removed: Vec<String>,
    /// Events the pass put somewhere else in the view.
    pub moved: Vec<String>,
    /// Events the pass gave another call id in the view.
    pub renamed: Vec<String>,
}

impl PassReport {
    /// An empty report of `pass`.
    pub fn new(pass: &'static str) -> Self {
        PassReport {
            pass,
            ..PassReport::default()
        }
    }

    /// Whether the pass changed anything.
    pub fn changed(&self) -> bool {
        !(self.added.is_empty()
            && self.removed.is_empty()
            && self.moved.is_empty()
            && self.renamed.is_empty())
    }
}

/// A pair-integrity pass: repairs the view in place and reports what it did.
pub type Pass = fn(&mut Vec<Event>) -> PassReport;

/// The passes [`normalize_pairs`] runs, in order: each one relies on the
/// ones before it (a moved result must have a unique call before it; a
/// call is "missing" its result only once results sit where they belong).
pub(crate) const PAIR_INTEGRITY_PASSES: &[Pass] = &[
    resolve_duplicate_call_ids,
    remove_orphan_results,
    move_results_after_their_calls,
    ensure_call_results_present,
];

/// Runs `PAIR_INTEGRITY_PASSES` over `events`; returns the reports of the
/// passes that changed something (none when the pairs were already intact).
///
/// Afterwards [`pairs_are_intact`] holds, and running it again changes nothing.
pub fn normalize_pairs(events: &mut Vec<Event>) -> Vec<PassReport> {
    PAIR_INTEGRITY_PASSES
        .iter()
        .map(|pass| pass(events))
        .filter(PassReport::changed)
        .collect()
}

/// What an event is to pairing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Assistant text or reasoning: part of a model response.
    ResponsePart,
    /// A tool call: part of a model response.
    Call,
    /// A tool result.
    Result,
    /// Anything else in view (user, system, summary, turn-aborted marker):
    /// it ends a response and its results.
    Other,
    /// Outside the model's view: ignored.
    Outside,
}

fn role(event: &Event) -> Role {
    if !event.is_in_model_view() {
        return Role::Outside;
    }
    match event.trace_type {
        TraceType::Assistant | TraceType::Reasoning => Role::ResponsePart,
        TraceType::ToolCall => Role::Call,
        TraceType::ToolResult => Role::Result,
        TraceType::User | TraceType::System | TraceType::Summary | TraceType::TurnAborted => {
            Role::Other
        }
        // Never in the model's view (the state is a section of its own).
        TraceType::WorkingMemory => Role::Outside,
    }
}

/// The call id of a call or result; a missing one counts as `""`.
fn call_id(event: &Event) -> &str {
    event.tool_call_id.as_deref().unwrap_or("")
}

/// "No response".
const NONE: usize = usize::MAX;

/// Where the responses of a view are.
struct Layout {
    /// For each response: the index of its last in-view event or, when tool
    /// results directly follow it, of the last of those. New results for
    /// the response go right after it.
    ends: Vec<usize>,
    /// For each event: the response it is part of (calls, text, reasoning)
    /// or whose results it directly follows (results), else [`NONE`].
    response_of: Vec<usize>,
}

impl Layout {
    fn of(events: &[Event]) -> Layout {
        let mut ends = Vec::new();
        let mut response_of = vec![NONE; events.len()];
        let mut current = NONE;
        let mut in_results = false;
        for (index, event) in events.iter().enumerate() {
            match role(event) {
                Role::Outside => continue,
                Role::ResponsePart | Role::Call => {
                    if current == NONE || in_results {
                        ends.push(index);
                        current = ends.len() - 1;
                        in_results = false;
                    }
                    ends[current] = index;
                }
                Role::Result => {
                    if current == NONE {
                        continue;
                    }
                    in_results = true;
                    ends[current] = index;
                }
                Role::Other => {
                    current = NONE;
                    in_results = false;
                    continue;
                }
            }
            response_of[index] = current;
        }
        Layout { ends, response_of }
    }
}

/// Keeps the events whose `remove` flag is false; returns the removed ones' ids.
fn remove_flagged(events: &mut Vec<Event>, remove: &[bool]) -> Vec<String> {
    let mut removed = Vec::new();
    let mut index = 0;
    events.retain(|event| {
        let gone = remove[index];
        index += 1;
        if gone {
            removed.push(event.id.clone());
        }
        !gone
    });
    removed
}

/// A call reusing the id of an answered call goes by an id of its own, and
/// so do its results ([`CallIds`]). Then a call id still used by more than
/// one call (a copy of a call still waiting) keeps its first call and the
/// first result after that call; later calls with the id are removed, and
/// so are the id's other results after the first call (each later call
/// goes together with its result). Results before the first call are left
/// to [`remove_orphan_results`].
pub(crate) fn resolve_duplicate_call_ids(events: &mut Vec<Event>) -> PassReport {
    let mut report = PassReport::new("resolve_duplicate_call_ids");
    let mut ids = CallIds::default();
    for event in events.iter_mut() {
        if let Some(view_id) = ids.view_id(event) {
            event.tool_call_id = Some(view_id);
            report.renamed.push(event.id.clone());
        }
    }
    let mut calls: HashMap<&str, u32> = HashMap::new();
    for event in events.iter() {
        if role(event) == Role::Call {
            *calls.entry(call_id(event)).or_default() += 1;
        }
    }
    if calls.values().all(|&count| count < 2) {
        return report;
    }
    let mut remove = vec![false; events.len()];
    let mut first_call_seen: HashSet<&str> = HashSet::new();
    let mut first_result_seen: HashSet<&str> = HashSet::new();
    for (index, event) in events.iter().enumerate() {
        let id = call_id(event);
        let duplicated = || calls.get(id).is_some_and(|&count| count > 1);
        match role(event) {
            Role::Call if duplicated() => remove[index] = !first_call_seen.insert(id),
            Role::Result if duplicated() && first_call_seen.contains(id) => {
                remove[index] = !first_result_seen.insert(id);
            }
            Role::Call | Role::Result | Role::ResponsePart | Role::Other | Role::Outside => {}
        }
    }
    report.removed = remove_flagged(events, &remove);
    report
}

/// Removes every result that answers no call before it in the view: a result
/// whose call is gone, a result that comes before its call (at that position
/// it answers nothing), and a second result of a call already answered.
pub(crate) fn remove_orphan_results(events: &mut Vec<Event>) -> PassReport {
    let mut report = PassReport::new("remove_orphan_results");
    let mut remove = vec![false; events.len()];
    let mut any = false;
    let mut called: HashSet<&str> = HashSet::new();
    let mut answered: HashSet<&str> = HashSet::new();
    for (index, event) in events.iter().enumerate() {
        match role(event) {
            Role::Call => {
                called.insert(call_id(event));
            }
            Role::Result => {
                let id = call_id(event);
                if !called.contains(id) || !answered.insert(id) {
                    remove[index] = true;
                    any = true;
                }
            }
            Role::ResponsePart | Role::Other | Role::Outside => {}
        }
    }
    if any {
        report.removed = remove_flagged(events, &remove);
    }
    report
}

/// Moves every result that does not directly follow its call's response
/// (only results of that response in between) to right after that
/// response's results, keeping the order results were given in. A result
/// whose call is not before it is left where it is (see
/// [`remove_orphan_results`]); with duplicate call ids the first call counts.
pub(crate) fn move_results_after_their_calls(events: &mut Vec<Event>) -> PassReport {
    let mut report = PassReport::new("move_results_after_their_calls");
    let layout = Layout::of(events);
    let mut call_response: HashMap<&str, usize> = HashMap::new();
    // Results to move, by the response they go to.
    let mut arriving: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut leaving = vec![false; events.len()];
    for (index, event) in events.iter().enumerate() {
        match role(event) {
            Role::Call => {
                call_response
                    .entry(call_id(event))
                    .or_insert(layout.response_of[index]);
            }
            Role::Result => {
                let Some(&response) = call_response.get(call_id(event)) else {
                    continue;
                };
                if layout.response_of[index] != response {
                    leaving[index] = true;
                    arriving.entry(response).or_default().push(index);
                }
            }
            Role::ResponsePart | Role::Other | Role::Outside => {}
        }
    }
    if arriving.is_empty() {
        return report;
    }
    let mut arriving_after: HashMap<usize, Vec<usize>> = arriving
        .into_iter()
        .map(|(response, results)| (layout.ends[response], results))
        .collect();
    let mut order = Vec::with_capacity(events.len());
    for (index, &leaves) in leaving.iter().enumerate() {
        if !leaves {
            order.push(index);
        }
        if let Some(results) = arriving_after.remove(&index) {
            order.extend(results);
        }
    }
    let mut slots: Vec<Option<Event>> = events.drain(..).map(Some).collect();
    for index in order {
        let event = slots[index].take().expect("each event is placed once");
        if leaving[index] {
            report.moved.push(event.id.clone());
        }
        events.push(event);
    }
    report
}

/// The id of the synthetic result `ensure_call_results_present` makes for
/// `call_id`.
pub fn synthetic_result_id(call_id: &str) -> String {
    format!("synthetic-aborted-{call_id}")
}

/// The synthetic result that answers `call`, a call that never returned:
/// an error result "aborted" with a deterministic id (see
/// [`synthetic_result_id`]), the call's tool name, turn, time and sequence
/// number, tagged [`SYNTHETIC_TAG`].
pub(crate) fn aborted_result(call: &Event) -> Event {
    let mut result = Event::new(TraceType::ToolResult, ABORTED_CONTENT)
        .with_id(synthetic_result_id(call_id(call)))
        .with_ts(call.ts)
        .with_source(SYNTHETIC_SOURCE)
        .with_tag(SYNTHETIC_TAG);
    result.turn_id = call.turn_id.clone();
    result.seq = call.seq;
    result.tool_call_id = call.tool_call_id.clone();
    result.tool_name = call.tool_name.clone();
    result.tool_error = Some(ABORTED_ERROR.to_owned());
    result
}

/// Gives every call that has no result after it a synthetic "aborted" result
/// ([`aborted_result`]), placed right after its response, behind the results
/// already there, in the order of the calls.
pub(crate) fn ensure_call_results_present(events: &mut Vec<Event>) -> PassReport {
    let mut report = PassReport::new("ensure_call_results_present");
    let mut last_result: HashMap<&str, usize> = HashMap::new();
    for (index, event) in events.iter().enumerate() {
        if role(event) == Role::Result {
            last_result.insert(call_id(event), index);
        }
    }
    let layout = Layout::of(events);
    // Synthetic results, by the index they go after.
    let mut inserts: HashMap<usize, Vec<Event>> = HashMap::new();
    let mut made: HashMap<&str, u32> = HashMap::new();
    for (index, event) in events.iter().enumerate() {
        if role(event) != Role::Call {
            continue;
        }
        let id = call_id(event);
        if last_result.get(id).is_some_and(|&at| at > index) {
            continue;
        }
        let mut result = aborted_result(event);
        let count = made.entry(id).or_default();
        *count += 1;
        if *count > 1 {
            // Only with duplicate call ids (run resolve_duplicate_call_ids first).
            result.id = format!("{}-{count}", result.id);
        }
        let after = layout.ends[layout.response_of[index]];
        inserts.entry(after).or_default().push(result);
    }
    if inserts.is_empty() {
        return report;
    }
    let old = std::mem::take(events);
    events.reserve(old.len() + inserts.values().map(Vec::len).sum::<usize>());
    for (index, event) in old.into_iter().enumerate() {
        events.push(event);
        if let Some(results) = inserts.remove(&index) {
            report.added.extend(results.iter().map(|r| r.id.clone()));
            events.extend(results);
        }
    }
    report
}

/// Removes the calls with the given ids together with their results, so no
/// removal anywhere leaves half a pair. Events outside the model's view are
/// left alone.
pub fn remove_pairs(events: &mut Vec<Event>, call_ids: &HashSet<String>) -> PassReport {
    let mut report = PassReport::new("remove_pairs");
    if call_ids.is_empty() {
        return report;
    }
    let remove: Vec<bool> = events
        .iter()
        .map(|event| match role(event) {
            Role::Call | Role::Result => call_ids.contains(call_id(event)),
            Role::ResponsePart | Role::Other | Role::Outside => false,
        })
        .collect();
    if remove.contains(&true) {
        report.removed = remove_flagged(events, &remove);
    }
    report
}

/// Whether the pairs are intact: every call id is used by one call, every
/// call has exactly one result, no result lacks its call, and each result
/// follows its call's response directly (only results of the same response
/// in between). Events outside the model's view are ignored.
pub fn pairs_are_intact<'a>(events: impl IntoIterator<Item = &'a Event>) -> bool {
    let mut check = PairCheck::default();
    events.into_iter().all(|event| check.observe(event)) && check.is_intact()
}

/// [`pairs_are_intact`] kept up to date one event at a time, so a view that
/// only grows is checked for what it gained, not again from the start.
#[derive(Debug, Clone, Default)]
pub(crate) struct PairCheck {
    calls: foldhash::HashSet<String>,
    /// Calls of the current response still waiting for their result.
    waiting: foldhash::HashSet<String>,
    in_response: bool,
    in_results: bool,
    broken: bool,
}

impl PairCheck {
    /// Takes in the next event; false once the pairs are broken for good.
    pub fn observe(&mut self, event: &Event) -> bool {
        if !self.broken {
            self.broken = !self.accepts(event);
        }
        !self.broken
    }

    /// Whether the events so far are intact and no call waits for its result.
    pub(crate) fn is_intact(&self) -> bool {
        !self.broken && self.waiting.is_empty()
    }

    fn accepts(&mut self, event: &Event) -> bool {
        match role(event) {
            Role::Outside => true,
            part @ (Role::ResponsePart | Role::Call) => {
                if !self.in_response || self.in_results {
                    if !self.waiting.is_empty() {
                        return false;
                    }
                    self.in_response = true;
                    self.in_results = false;
                }
                if part == Role::Call {
                    let id = call_id(event);
                    if !self.calls.insert(id.to_owned()) {
                        return false;
                    }
                    self.waiting.insert(id.to_owned());
                }
                true
            }
            Role::Result => {
                if !self.in_response || !self.waiting.remove(call_id(event)) {
                    return false;
                }
                self.in_results = true;
                true
            }
            Role::Other => {
                if !self.waiting.is_empty() {
                    return false;
                }
                self.in_response = false;
                self.in_results = false;
                true
            }
        }
    }
}

#[cfg(test)]
#[path = "normalize_tests.rs"]
mod tests;
