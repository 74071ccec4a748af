//! SWE-agent trajectories (`*.traj`): `{"trajectory": [...], "history": [...], "info": {...}}`.
//!
//! `history` is what the model saw, message by message, so it is preferred:
//!
//! - `system` → a system event.
//! - The first user message is the problem statement → a user event.
//! - Demonstrations (`is_demo`, or `message_type: "demonstration"`) are worked
//!   examples from the agent's config, not this run → skipped.
//! - An assistant message → reasoning events for its `thinking_blocks` (each
//!   block kept verbatim in `opaque`, signature and all), an assistant event
//!   with its thought, plus one tool
//!   call per `tool_calls` entry (SWE-agent 1.x with function calling). SWE-agent
//!   0.x (and 1.x's text parsers) have no `tool_calls`: the command is in
//!   `action`, so one call is synthesized with id `swe-call-<n>`, named after
//!   the command's first word, with `{"command": action}` as arguments.
//! - An observation → the tool result of the call it answers: `role: "tool"`
//!   names it in `tool_call_ids`; a user message that is an observation
//!   (`message_type: "observation"`, or no `message_type` at all in 0.x)
//!   answers the latest call still waiting. Other user messages stay user
//!   events.
//! - Trajectory steps the history never answered → appended: SWE-agent writes
//!   the final `submit` step to `trajectory` only (1.x leaves it out of the
//!   history; 0.x keeps the action but not the diff it returned). A missing
//!   step becomes its thought, a synthesized call and its observation (ids
//!   `swe-step-<n>-…`); a history call left waiting gets its step's
//!   observation as result.
//!
//! Without a history, each `trajectory` step (`thought`, `action`,
//! `observation`) becomes an assistant event, a tool call and its result, after
//! the problem statement from the first step's `query` when there is one.
//!
//! A retry loop writes `attempts`, one such object per attempt, and when it
//! ends the chosen attempt again at the top level (`info.best_attempt_idx`
//! names it). The top-level run is imported and the other attempts reported
//! as skipped; while the loop runs there is no top level, so the last attempt
//! is imported.
//!
//! Token usage is left out: `info.model_stats` only totals the whole run.
//! Trajectories name no session of their own (`source_session_id` is `None`),
//! and carry no timestamps, so the session stamps the events.

use agentmem::Event;
use serde_json::{json, Map, Value};

use super::openai_messages::{content_text, parse_arguments};
use crate::imported::{Imported, SkipKind, Skipped};
use crate::record::{stable_id, verbatim_reasoning};

pub(super) fn parse(text: &str) -> Result<Imported, String> {
    let root: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let root = root
        .as_object()
        .ok_or("expected a trajectory object with a \"history\" or \"trajectory\" list")?;
    let attempts = root.get("attempts").and_then(Value::as_array);
    let has_run = root.contains_key("history") || root.contains_key("trajectory");
    match attempts {
        Some(attempts) if !has_run => last_attempt(attempts),
        Some(attempts) => {
            let chosen = root
                .get("info")
                .and_then(|info| info.get("best_attempt_idx"))
                .and_then(Value::as_u64);
            let mut imported = run(root)?;
            skip_attempts(&mut imported, attempts, chosen);
            Ok(imported)
        }
        None => run(root),
    }
}

/// One run: its history, completed by its trajectory, else its trajectory.
fn run(root: &Map<String, Value>) -> Result<Imported, String> {
    let history = root.get("history").and_then(Value::as_array);
    let steps = root.get("trajectory").and_then(Value::as_array);
    match (history, steps) {
        (Some(history), steps) if !history.is_empty() => {
            Ok(History::default().import(history, steps.map_or(&[], Vec::as_slice)))
        }
        (_, Some(steps)) => Ok(from_trajectory(steps, root)),
        (Some(_), None) => Ok(Imported::default()),
        (None, None) => Err(
            "expected an object with a \"history\" or \"trajectory\" list, or an \"attempts\" list of such objects"
                .into(),
        ),
    }
}

/// A retry loop still running writes only `attempts`, one run per attempt:
/// the last is the one under way, so it is imported and the earlier ones are
/// reported as skipped. (Once the loop ends, the chosen attempt is also
/// written at the top level, and imported from there.)
fn last_attempt(attempts: &[Value]) -> Result<Imported, String> {
    let Some((last, earlier)) = attempts.split_last() else {
        return Ok(Imported::default());
    };
    let last = last.as_object().ok_or(format!(
        "attempt {} of the retry loop is not a trajectory object",
        attempts.len()
    ))?;
    let mut imported = run(last)?;
    skip_attempts(&mut imported, earlier, None);
    Ok(imported)
}

/// Reports the attempts of a retry loop that are not imported: all of
/// `attempts` but the `chosen` one (0-based), which is the run imported.
fn skip_attempts(imported: &mut Imported, attempts: &[Value], chosen: Option<u64>) {
    for (index, _) in attempts.iter().enumerate() {
        if chosen == Some(index as u64) {
            continue;
        }
        imported.records += 1;
        imported.skipped.push(Skipped::left_out(
            index + 1,
            format!(
                "attempt {} of a retry loop, not the run imported; to import it, save it as a trajectory file of its own",
                index + 1
            ),
        ));
    }
}

/// Gives the events of one record their ids: `<prefix>-<part>-<hash>`, where
/// the prefix is `swe-<position>` for a history entry or trajectory step, and
/// `swe-step-<number>` for a step imported beside a history.
fn push_events(imported: &mut Imported, prefix: &str, record: &Value, events: Vec<Event>) {
    let record = record.to_string();
    for (part, event) in events.into_iter().enumerate() {
        imported
            .events
            .push(event.with_id(stable_id(prefix, part, &record)));
    }
}

/// Import state for a `history` list.
#[derive(Default)]
struct History {
    imported: Imported,
    /// Whether the problem statement (the first user message) was seen.
    problem_seen: bool,
    /// The latest tool call still waiting for its observation.
    pending_call: Option<String>,
    /// Calls synthesized so far, for `swe-call-<n>`.
    synthesized: usize,
    /// Assistant messages that took an action: the trajectory steps the
    /// history holds.
    actions: usize,
    /// The latest of those actions, to check the trajectory lines up with it.
    last_action: String,
}

impl History {
    fn import(mut self, history: &[Value], steps: &[Value]) -> Imported {
        for (index, entry) in history.iter().enumerate() {
            self.imported.records += 1;
            match self.entry(entry) {
                Ok(events) => push_events(
                    &mut self.imported,
                    &format!("swe-{}", index + 1),
                    entry,
                    events,
                ),
                Err(skip) => self.imported.skipped.push(skip.at(index + 1)),
            }
        }
        self.trailing_steps(steps);
        self.imported
    }

    /// What `trajectory` holds beyond the history. SWE-agent writes the final
    /// step (the thought, the `submit` call and the diff it returns) to the
    /// trajectory only: 1.x leaves the whole step out of the history, 0.x keeps
    /// the action but not its observation, so without this the run would end
    /// on a pending call and lose the submitted patch.
    fn trailing_steps(&mut self, steps: &[Value]) {
        let answered = self.actions;
        if answered > 0 {
            let Some(last) = steps.get(answered - 1) else {
                return;
            };
            if !self.lines_up(last) {
                self.imported.skipped.push(Skipped::left_out(
                    answered,
                    format!(
                        "trajectory steps after step {answered} left out: that step does not take the history's last action, so which steps the history lacks is unknown"
                    ),
                ));
                return;
            }
            self.answer_pending(answered, last);
        }
        for (index, step) in steps.iter().enumerate().skip(answered) {
            self.imported.records += 1;
            let call_id = self.next_call_id();
            match step_events(step, call_id) {
                Ok(events) => {
                    let prefix = format!("swe-step-{}", index + 1);
                    push_events(&mut self.imported, &prefix, step, events)
                }
                Err(skip) => {
                    let mut skipped = skip.at(index + 1);
                    skipped.reason = format!("trajectory step {}: {}", index + 1, skipped.reason);
                    self.imported.skipped.push(skipped);
                }
            }
        }
    }

    /// Whether trajectory step `step` took the history's last action.
    fn lines_up(&self, step: &Value) -> bool {
        let action = step.get("action").and_then(Value::as_str).unwrap_or("");
        action.trim() == self.last_action
    }

    /// The observation of step `number` as the result of the call the history
    /// left waiting (SWE-agent 0.x's final `submit`).
    fn answer_pending(&mut self, number: usize, step: &Value) {
        let Some(call_id) = self.pending_call.take() else {
            return;
        };
        self.imported.records += 1;
        let observation = step
            .get("observation")
            .and_then(Value::as_str)
            .unwrap_or("");
        let result = Event::tool_result(call_id, observation);
        push_events(
            &mut self.imported,
            &format!("swe-step-{number}"),
            step,
            vec![result],
        );
    }

    /// The events of one history entry, or why it was left out.
    fn entry(&mut self, entry: &Value) -> Result<Vec<Event>, Skip> {
        let entry = entry
            .as_object()
            .ok_or(Skip::malformed("not a JSON object"))?;
        if is_demonstration(entry) {
            return Err(Skip::left_out(
                "a demonstration (a worked example from the agent's config, not this run)",
            ));
        }
        let text = content_text(entry.get("content"));
        match str_of(entry, "role") {
            "system" => Ok(vec![Event::system(text)]),
            "user" => Ok(vec![self.user(entry, text)]),
            "assistant" => self.assistant(entry, text).map_err(Skip::malformed),
            "tool" => Ok(vec![self
                .tool_observation(entry, text)
                .map_err(Skip::left_out)?]),
            other => Err(Skip::malformed(format!("unknown role {other:?}"))),
        }
    }

    /// The problem statement, an observation answering the waiting call, or
    /// another user message.
    fn user(&mut self, entry: &Map<String, Value>, text: String) -> Event {
        if !self.problem_seen {
            self.problem_seen = true;
            return Event::user(text);
        }
        let is_observation = matches!(
            entry.get("message_type").and_then(Value::as_str),
            None | Some("observation")
        );
        match self.pending_call.take() {
            Some(call_id) if is_observation => Event::tool_result(call_id, text),
            pending => {
                self.pending_call = pending;
                Event::user(text)
            }
        }
    }

    fn assistant(
        &mut self,
        entry: &Map<String, Value>,
        content: String,
    ) -> Result<Vec<Event>, String> {
        let thought = match str_of(entry, "thought") {
            "" => content,
            thought => thought.to_owned(),
        };
        let mut events = thinking_events(entry);
        if !thought.trim().is_empty() {
            events.push(Event::assistant(thought));
        }
        let action = str_of(entry, "action");
        let calls = entry.get("tool_calls").and_then(Value::as_array);
        if !action.trim().is_empty() || calls.is_some_and(|calls| !calls.is_empty()) {
            self.actions += 1;
            action.trim().clone_into(&mut self.last_action);
        }
        match calls {
            Some(calls) if !calls.is_empty() => {
                for call in calls {
                    events.push(self.function_call(call)?);
                }
            }
            _ => events.extend(self.synthesized_call(action)),
        }
        Ok(events)
    }

    /// A `tool_calls` entry: `{id, type, function: {name, arguments}}`.
    fn function_call(&mut self, call: &Value) -> Result<Event, String> {
        let function = call
            .get("function")
            .ok_or("a tool call without a function")?;
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .ok_or("a tool call without a function name")?;
        let call_id = match call.get("id").and_then(Value::as_str) {
            Some(id) => id.to_owned(),
            None => self.next_call_id(),
        };
        self.pending_call = Some(call_id.clone());
        Ok(Event::tool_call(
            call_id,
            name,
            parse_arguments(function.get("arguments")),
        ))
    }

    /// The call behind a text `action`, when there is one.
    fn synthesized_call(&mut self, action: &str) -> Option<Event> {
        if action.trim().is_empty() {
            return None;
        }
        let call_id = self.next_call_id();
        self.pending_call = Some(call_id.clone());
        Some(action_call(call_id, action))
    }

    fn next_call_id(&mut self) -> String {
        self.synthesized += 1;
        format!("swe-call-{}", self.synthesized)
    }

    /// A `role: "tool"` observation, answering `tool_call_ids[0]` (else the waiting call).
    fn tool_observation(
        &mut self,
        entry: &Map<String, Value>,
        text: String,
    ) -> Result<Event, String> {
        let named = entry
            .get("tool_call_ids")
            .and_then(Value::as_array)
            .and_then(|ids| ids.first())
            .and_then(Value::as_str)
            .map(str::to_owned);
        let call_id = match named {
            Some(id) => {
                if self.pending_call.as_deref() == Some(id.as_str()) {
                    self.pending_call = None;
                }
                id
            }
            None => self
                .pending_call
                .take()
                .ok_or("an observation with no call to answer")?,
        };
        Ok(Event::tool_result(call_id, text))
    }
}

/// An assistant message's `thinking_blocks` (Anthropic models' extended
/// thinking) as reasoning events, before its text. Each block is kept
/// verbatim in `opaque`: a `thinking` block's signature (a
/// `redacted_thinking` block's `data`) must go back to the provider unchanged.
fn thinking_events(entry: &Map<String, Value>) -> Vec<Event> {
    let blocks = entry.get("thinking_blocks").and_then(Value::as_array);
    blocks
        .into_iter()
        .flatten()
        .filter(|block| block.is_object())
        .map(|block| {
            let text = block.get("thinking").and_then(Value::as_str);
            verbatim_reasoning(text.unwrap_or_default(), block)
        })
        .collect()
}

fn is_demonstration(entry: &Map<String, Value>) -> bool {
    entry
        .get("is_demo")
        .and_then(Value::as_bool)
        .unwrap_or(false)
        || entry.get("message_type").and_then(Value::as_str) == Some("demonstration")
}

/// A shell-style action as a call named after its first word.
fn action_call(call_id: String, action: &str) -> Event {
    let tool_name = action.split_whitespace().next().unwrap_or("bash");
    Event::tool_call(call_id, tool_name, json!({ "command": action }))
}

/// Events from `trajectory` steps, when there is no history.
fn from_trajectory(steps: &[Value], root: &Map<String, Value>) -> Imported {
    let mut imported = Imported::default();
    if let Some(problem) = problem_statement(steps, root) {
        let id = stable_id("swe-0", 0, &problem);
        imported.events.push(Event::user(problem).with_id(id));
    }
    for (index, step) in steps.iter().enumerate() {
        imported.records += 1;
        match step_events(step, format!("swe-call-{}", index + 1)) {
            Ok(events) => push_events(&mut imported, &format!("swe-{}", index + 1), step, events),
            Err(skip) => imported.skipped.push(skip.at(index + 1)),
        }
    }
    imported
}

/// Why a record was left out, before its position is known: call it with
/// the position to make the [`Skipped`] entry.
struct Skip(SkipKind, String);

impl Skip {
    fn malformed(reason: impl Into<String>) -> Skip {
        Skip(SkipKind::Malformed, reason.into())
    }

    fn left_out(reason: impl Into<String>) -> Skip {
        Skip(SkipKind::LeftOut, reason.into())
    }

    fn at(self, line: usize) -> Skipped {
        let Skip(kind, reason) = self;
        Skipped { line, kind, reason }
    }
}

/// One step: the thought, the action as call `call_id`, the observation as its result.
fn step_events(step: &Value, call_id: String) -> Result<Vec<Event>, Skip> {
    let step = step
        .as_object()
        .ok_or(Skip::malformed("not a JSON object"))?;
    let thought = match str_of(step, "thought") {
        "" => str_of(step, "response"),
        thought => thought,
    };
    let action = str_of(step, "action");
    let mut events = Vec::new();
    if !thought.trim().is_empty() {
        events.push(Event::assistant(thought));
    }
    if !action.trim().is_empty() {
        events.push(action_call(call_id.clone(), action));
        events.push(Event::tool_result(call_id, str_of(step, "observation")));
    }
    if events.is_empty() {
        return Err(Skip::left_out(
            "a step with neither a thought nor an action",
        ));
    }
    Ok(events)
}

/// The problem statement: the first user message of the first step's query,
/// else a top-level `problem_statement`.
fn problem_statement(steps: &[Value], root: &Map<String, Value>) -> Option<String> {
    let query = steps.first()?.get("query").and_then(Value::as_array);
    let from_query = query
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .find(|message| str_of(message, "role") == "user" && !is_demonstration(message));
    let text = match from_query {
        Some(message) => content_text(message.get("content")),
        None => str_of(root, "problem_statement").to_owned(),
    };
    (!text.trim().is_empty()).then_some(text)
}

fn str_of<'a>(map: &'a Map<String, Value>, key: &str) -> &'a str {
    map.get(key).and_then(Value::as_str).unwrap_or_default()
}

#[cfg(test)]
mod tests;
