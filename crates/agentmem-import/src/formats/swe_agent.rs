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

use agentmem::event::Event;
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
mod tests {
    use super::*;
    use agentmem::event::TraceType;
    use agentmem::tool_interaction::{tool_interactions, ToolStatus};

    fn kinds(imported: &Imported) -> Vec<TraceType> {
        imported.events.iter().map(|e| e.trace_type).collect()
    }

    #[test]
    fn function_calling_history_pairs_by_call_id() {
        let text = r#"{"history":[
          {"role":"system","content":"You are a helpful assistant.","agent":"main","message_type":"system_prompt"},
          {"role":"user","content":[{"type":"text","text":"Fix the off-by-one in range_sum."}],"agent":"main","message_type":"observation"},
          {"role":"assistant","content":"Let me look.","thought":"Let me look.","action":"cat -n src/sum.py","agent":"main","message_type":"action",
           "tool_calls":[{"id":"call_a","type":"function","function":{"name":"bash","arguments":"{\"command\":\"cat -n src/sum.py\"}"}}]},
          {"role":"tool","content":[{"type":"text","text":"1 def range_sum(a, b):"}],"agent":"main","message_type":"observation","tool_call_ids":["call_a"]}
        ],"info":{"model_stats":{"tokens_sent":1000}}}"#;
        let imported = parse(text).unwrap();
        assert_eq!(
            kinds(&imported),
            [
                TraceType::System,
                TraceType::User,
                TraceType::Assistant,
                TraceType::ToolCall,
                TraceType::ToolResult
            ]
        );
        let view = tool_interactions(&imported.events);
        assert_eq!(view[0].status, ToolStatus::Success);
        assert_eq!(view[0].arguments["command"], "cat -n src/sum.py");
        assert_eq!(imported.records, 4);
        assert!(imported.source_session_id.is_none());
    }

    #[test]
    fn thinking_blocks_become_signed_reasoning_before_the_text() {
        let text = r#"{"history":[
          {"role":"user","content":"check.py fails to parse.","agent":"main","message_type":"observation"},
          {"role":"assistant","content":"Find the file first.","thought":"Find the file first.","action":"find_file check.py","agent":"main","message_type":"action",
           "thinking_blocks":[{"type":"thinking","thinking":"The colon is missing on line 4.","signature":"EqQBCkgIARAB=="},{"type":"redacted_thinking","data":"EmwKAhgB"}],
           "tool_calls":[{"id":"call_find","type":"function","function":{"name":"find_file","arguments":"{\"file_name\":\"check.py\"}"}}]},
          {"role":"tool","content":"Found 1 match","agent":"main","message_type":"observation","tool_call_ids":["call_find"]}
        ]}"#;
        let imported = parse(text).unwrap();
        assert_eq!(
            kinds(&imported),
            [
                TraceType::User,
                TraceType::Reasoning,
                TraceType::Reasoning,
                TraceType::Assistant,
                TraceType::ToolCall,
                TraceType::ToolResult
            ]
        );
        let thinking = &imported.events[1];
        assert_eq!(thinking.content, "The colon is missing on line 4.");
        assert_eq!(
            thinking.opaque.as_ref().unwrap()["signature"],
            "EqQBCkgIARAB=="
        );
        assert_eq!(imported.events[2].content, "");
        assert_eq!(
            imported.events[2].opaque.as_ref().unwrap()["data"],
            "EmwKAhgB"
        );
    }

    #[test]
    fn legacy_history_synthesizes_calls_and_skips_demos() {
        let text = r#"{"history":[
          {"role":"system","content":"SETTING: ...","agent":"primary"},
          {"role":"user","content":"Here is a demonstration ...","agent":"primary","is_demo":true},
          {"role":"user","content":"ISSUE: sum is wrong","agent":"primary"},
          {"role":"assistant","content":"DISCUSSION\nopen it\n```\nopen src/sum.py\n```","thought":"DISCUSSION\nopen it","action":"open src/sum.py\n","agent":"primary"},
          {"role":"user","content":"[File: src/sum.py (3 lines total)]","agent":"primary"},
          {"role":"assistant","content":"submit","thought":"","action":"submit","agent":"primary"}
        ]}"#;
        let imported = parse(text).unwrap();
        assert_eq!(imported.skipped.len(), 1);
        let view = tool_interactions(&imported.events);
        assert_eq!(view.len(), 2);
        assert_eq!(view[0].tool_call_id, "swe-call-1");
        assert_eq!(view[0].tool_name, "open");
        assert_eq!(view[0].status, ToolStatus::Success);
        assert_eq!(view[1].tool_name, "submit");
        assert_eq!(view[1].status, ToolStatus::Pending);
        assert_eq!(imported.events[1].content, "ISSUE: sum is wrong");
    }

    #[test]
    fn the_final_step_missing_from_a_history_comes_from_the_trajectory() {
        // SWE-agent 1.x: the `submit` step is in the trajectory only.
        let text = r#"{"trajectory":[
          {"action":"python3 check.py","observation":"8.2","response":"Run it.","thought":"Run it.","execution_time":0.3,"state":{}},
          {"action":"submit","observation":"diff --git a/check.py b/check.py\n+fixed","response":"It works; submitting.","thought":"It works; submitting.","execution_time":0.2,"state":{}}
        ],"history":[
          {"role":"system","content":"You are a helpful assistant.","agent":"main","message_type":"system_prompt"},
          {"role":"user","content":"check.py fails to parse.","agent":"main","message_type":"observation"},
          {"role":"assistant","content":"Run it.","thought":"Run it.","action":"python3 check.py","agent":"main","message_type":"action",
           "tool_calls":[{"id":"call_run","type":"function","function":{"name":"bash","arguments":"{\"command\":\"python3 check.py\"}"}}]},
          {"role":"tool","content":"8.2","agent":"main","message_type":"observation","tool_call_ids":["call_run"]}
        ]}"#;
        let imported = parse(text).unwrap();
        assert_eq!(
            kinds(&imported)[5..],
            [
                TraceType::Assistant,
                TraceType::ToolCall,
                TraceType::ToolResult
            ]
        );
        assert_eq!(imported.events[5].content, "It works; submitting.");
        let view = tool_interactions(&imported.events);
        assert_eq!(view[1].tool_call_id, "swe-call-1");
        assert_eq!(view[1].tool_name, "submit");
        assert_eq!(view[1].status, ToolStatus::Success);
        assert!(view[1].result.as_deref().unwrap().contains("+fixed"));
        assert_eq!(imported.records, 5);
        assert!(imported.events[7].id.starts_with("swe-step-2-2-"));
    }

    #[test]
    fn a_pending_submit_is_answered_by_the_trajectory() {
        // SWE-agent 0.x: `submit` is in the history, its diff only in the trajectory.
        let text = r#"{"trajectory":[
          {"action":"open a.py\n","observation":"[File: a.py]","response":"","thought":"open it","state":"{}"},
          {"action":"submit\n","observation":"\ndiff --git a/a.py b/a.py\n+fixed","response":"","thought":"done","state":"{}"}
        ],"history":[
          {"role":"system","content":"SETTING: ...","agent":"primary"},
          {"role":"user","content":"ISSUE: a.py is wrong","agent":"primary"},
          {"role":"assistant","content":"open it","thought":"open it","action":"open a.py\n","agent":"primary"},
          {"role":"user","content":"[File: a.py]","agent":"primary"},
          {"role":"assistant","content":"done","thought":"done","action":"submit\n","agent":"primary"}
        ]}"#;
        let imported = parse(text).unwrap();
        let view = tool_interactions(&imported.events);
        assert_eq!(view.len(), 2);
        assert_eq!(view[1].tool_call_id, "swe-call-2");
        assert_eq!(view[1].status, ToolStatus::Success);
        assert!(view[1].result.as_deref().unwrap().contains("+fixed"));
        assert_eq!(
            imported
                .events
                .iter()
                .filter(|e| e.content == "done")
                .count(),
            1,
            "the thought is not repeated"
        );
        assert_eq!(imported.records, 6);
        assert!(imported.skipped.is_empty());
    }

    #[test]
    fn a_trajectory_that_does_not_line_up_with_the_history_adds_nothing() {
        let text = r#"{"trajectory":[
          {"action":"ls","observation":"a.py","thought":"look"},
          {"action":"submit","observation":"diff","thought":"done"}
        ],"history":[
          {"role":"user","content":"ISSUE: a.py is wrong","agent":"primary"},
          {"role":"assistant","content":"cat","thought":"","action":"cat a.py","agent":"primary"},
          {"role":"user","content":"print(1)","agent":"primary"}
        ]}"#;
        let imported = parse(text).unwrap();
        assert_eq!(tool_interactions(&imported.events).len(), 1);
        assert!(imported.skipped[0].reason.contains("left out"));
    }

    /// One attempt of a retry loop, its problem statement and command named `tag`.
    fn attempt(tag: &str) -> String {
        format!(
            r#"{{"trajectory":[{{"action":"ls {tag}","observation":"{tag}.py","thought":"look"}}],
              "history":[{{"role":"user","content":"ISSUE {tag}","agent":"main","message_type":"observation"}},
                         {{"role":"assistant","content":"look","thought":"look","action":"ls {tag}","agent":"main","message_type":"action"}},
                         {{"role":"user","content":"{tag}.py","agent":"main","message_type":"observation"}}],
              "info":{{"exit_status":"submitted"}}}}"#
        )
    }

    #[test]
    fn a_retry_loop_under_way_imports_its_last_attempt() {
        let text = format!(r#"{{"attempts":[{}, {}]}}"#, attempt("a"), attempt("b"));
        let imported = parse(&text).unwrap();
        assert_eq!(imported.events[0].content, "ISSUE b");
        assert_eq!(tool_interactions(&imported.events).len(), 1);
        assert_eq!(imported.skipped.len(), 1);
        assert_eq!(imported.skipped[0].line, 1);
        assert!(imported.skipped[0].reason.contains("attempt 1"));
        assert!(parse(r#"{"attempts":[]}"#).unwrap().events.is_empty());
        assert!(parse(r#"{"attempts":[7]}"#)
            .unwrap_err()
            .contains("attempt 1"));
    }

    #[test]
    fn a_finished_retry_loop_imports_the_chosen_run_and_skips_the_others() {
        let chosen = attempt("a");
        let top: Value = serde_json::from_str(&chosen).unwrap();
        let mut root = top.as_object().unwrap().clone();
        root.insert("info".into(), json!({"best_attempt_idx": 0}));
        let attempts: Vec<Value> = [chosen, attempt("b"), attempt("c")]
            .iter()
            .map(|a| serde_json::from_str(a).unwrap())
            .collect();
        root.insert("attempts".into(), Value::Array(attempts));
        let imported = parse(&Value::Object(root).to_string()).unwrap();
        assert_eq!(imported.events[0].content, "ISSUE a");
        let skipped: Vec<usize> = imported.skipped.iter().map(|s| s.line).collect();
        assert_eq!(skipped, [2, 3]);
    }

    #[test]
    fn trajectory_steps_without_history() {
        let text = r#"{"trajectory":[
          {"action":"ls","observation":"a.py","response":"ls","thought":"look around","state":"{}",
           "query":[{"role":"system","content":"sys"},{"role":"user","content":"Problem: fix a.py"}]},
          {"action":"","observation":"","response":"","thought":""}
        ]}"#;
        let imported = parse(text).unwrap();
        assert_eq!(
            kinds(&imported),
            [
                TraceType::User,
                TraceType::Assistant,
                TraceType::ToolCall,
                TraceType::ToolResult
            ]
        );
        assert_eq!(imported.records, 2);
        assert_eq!(imported.skipped[0].line, 2);
    }

    #[test]
    fn a_document_that_is_not_a_trajectory_is_an_error() {
        assert!(parse("[1, 2]").unwrap_err().contains("trajectory"));
        assert!(parse("{\"history\": ").unwrap_err().starts_with("not JSON"));
        assert!(parse("{\"info\": {}}").is_err());
    }
}
