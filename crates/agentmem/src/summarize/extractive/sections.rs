//! The sections of a summary filled from a span: the events walked once,
//! assistant and user sentences, tool calls and their outcomes ranked into
//! capped bullets, and previous summaries merged in.

use std::collections::{BTreeMap, BTreeSet};

use super::tools::{call_paths, command_text, failure_line, finish_text, tool_kind, ToolKind};
use super::words::{
    clean_user_text, constraint_confidence, first_line, is_done_sentence, normalize_quotes,
    sentences, DECISION, NEXT, PREFERENCE, STRONG_DECISION,
};
use crate::base::event::{Event, TraceType};
use crate::base::message::SUMMARY_PREFIX;
use crate::summarize::fidelity::PendingScan;
use crate::summarize::{
    dedupe_key, is_summary_event, merge_facts, truncate_chars, FactKind, Focus, Summary,
    SummaryFact, SummaryRequest, COMMANDS, CONSTRAINTS, CRITICAL, DECISIONS, ERRORS, FILES,
    FOCUS_PREFIX, GOAL, IN_PROGRESS_PREFIX, NEXT_STEPS, PROGRESS,
};

pub(super) const GOAL_CHARS: usize = 400;
pub(super) const BULLET_CHARS: usize = 300;
pub(super) const COMMAND_CHARS: usize = 160;
pub(super) const ERROR_CHARS: usize = 220;

pub(super) const CAP_CONSTRAINTS: usize = 12;
pub(super) const CAP_DONE: usize = 6;
pub(super) const CAP_BLOCKED: usize = 3;
pub(super) const CAP_DECISIONS: usize = 10;
pub(super) const CAP_FILES: usize = 25;
pub(super) const CAP_COMMANDS: usize = 15;
pub(super) const CAP_ERRORS: usize = 10;
pub(super) const CAP_NEXT: usize = 4;
pub(super) const CAP_CRITICAL: usize = 25;
pub(super) const CAP_FACTS: usize = 30;

/// Text the assistant produced, with where it is.
pub(super) struct Said<'e> {
    index: usize,
    event: &'e Event,
    text: String,
}

/// A bullet candidate: text and how to rank it.
pub(super) struct Candidate {
    text: String,
    /// Focus words shared with the focus.
    focus: usize,
    /// Higher first after focus.
    rank: i64,
}

/// Sorts candidates best first (focus, then rank, then first seen),
/// deduplicates and keeps `cap`.
pub(super) fn select(mut candidates: Vec<Candidate>, cap: usize) -> Vec<String> {
    // Stable: equal keys keep their first-seen order.
    candidates.sort_by(|a, b| b.focus.cmp(&a.focus).then(b.rank.cmp(&a.rank)));
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for c in candidates {
        if out.len() == cap {
            break;
        }
        if !c.text.trim().is_empty() && seen.insert(dedupe_key(&c.text)) {
            out.push(c.text);
        }
    }
    out
}

/// What became of a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    Ok,
    Failed,
    NoResult,
}

/// One tool call of the span with its result.
pub(super) struct Call<'e> {
    index: usize,
    call: &'e Event,
    name: String,
    /// The command line, for command tools.
    command: Option<String>,
    outcome: Outcome,
    /// The telling line of a failure.
    error_line: Option<String>,
}

impl Call<'_> {
    /// How the call is named in bullets: the command, or the tool and its path.
    fn label(&self) -> String {
        match &self.command {
            Some(command) => format!("`{command}`"),
            None => {
                let paths = call_paths(self.call);
                match paths.first() {
                    Some((path, _)) => format!("{} `{path}`", self.name),
                    None => self.name.clone(),
                }
            }
        }
    }

    /// What a later success must match to resolve this failure.
    fn target(&self) -> String {
        self.command
            .clone()
            .unwrap_or_else(|| self.name.to_lowercase())
    }
}

pub(super) struct Extraction<'r> {
    request: &'r SummaryRequest<'r>,
    focus: Focus,
    /// Events quoted: in the model's view and not previous summaries.
    view: Vec<(usize, &'r Event)>,
    priors: Vec<Summary>,
    facts: Vec<SummaryFact>,
}

impl<'r> Extraction<'r> {
    pub(super) fn new(request: &'r SummaryRequest<'r>) -> Self {
        let mut view = Vec::new();
        let mut priors = Vec::new();
        for (i, event) in request.events.iter().enumerate() {
            if !event.is_in_model_view() {
                continue;
            }
            if is_summary_event(event) {
                priors.push(parse_previous_summary(&event.content));
                continue;
            }
            view.push((i, event));
        }
        Extraction {
            request,
            focus: Focus::new(request.focus),
            view,
            priors,
            facts: Vec::new(),
        }
    }

    pub(super) fn run(mut self) -> Summary {
        // Every event is read twice, for the sections and for identifiers:
        // the identifiers are scanned on other cores meanwhile.
        let events: Vec<&'r Event> = self.view.iter().map(|&(_, event)| event).collect();
        let pending = PendingScan::new(&events);
        let (mut summary, scanned) = std::thread::scope(|scope| {
            let scanning = scope.spawn(|| pending.scan());
            let summary = self.sections();
            (summary, scanning.join().expect("scanning never panics"))
        });
        let identifiers = pending.finish(scanned);
        let named: String = summary
            .sections
            .iter()
            .flat_map(|(_, b)| b.iter())
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n");
        let critical = self.critical(&named, identifiers);
        if let Some(section) = summary.section_mut(CRITICAL) {
            *section = critical;
        }
        let mut facts = merge_facts(self.facts.iter());
        facts.truncate(CAP_FACTS);
        summary.facts = facts;
        let mut seen = BTreeSet::new();
        summary.covered_event_ids = self
            .request
            .events
            .iter()
            .filter(|e| !e.id.is_empty() && seen.insert(e.id.as_str()))
            .map(|e| e.id.clone())
            .collect();
        if self.priors.is_empty() {
            return summary;
        }
        let mut parts = std::mem::take(&mut self.priors);
        parts.push(summary);
        Summary::merge(&parts)
    }

    /// The sections drawn from the span, Critical context aside.
    fn sections(&mut self) -> Summary {
        let calls = self.calls();
        let users: Vec<(usize, &Event)> = self
            .view
            .iter()
            .copied()
            .filter(|(_, e)| {
                e.trace_type == TraceType::User && !clean_user_text(&e.content).is_empty()
            })
            .collect();
        let said = self.assistant_texts();

        let goal = self.goal(&users);
        // A one-sentence first request that is also a rule is listed once, as the goal.
        let first_request = users
            .first()
            .map(|(_, e)| dedupe_key(&clean_user_text(&e.content)));
        let mut constraints = self.constraints();
        constraints.retain(|c| Some(dedupe_key(c)) != first_request);
        let progress = self.progress(&said, &calls);
        let decisions = self.decisions(&said);
        let files = self.files(&calls);
        let commands = self.commands(&calls);
        let errors = self.errors(&calls);
        let next = self.next_steps(&users, &said);

        let mut summary = Summary::empty();
        let mut fill = |title: &str, bullets: Vec<String>| {
            if let Some(section) = summary.section_mut(title) {
                *section = bullets;
            }
        };
        fill(GOAL, goal);
        fill(CONSTRAINTS, constraints);
        fill(PROGRESS, progress);
        fill(DECISIONS, decisions);
        fill(FILES, files);
        fill(COMMANDS, commands);
        fill(ERRORS, errors);
        fill(NEXT_STEPS, next);
        summary
    }

    /// Tool calls in span order, paired with their results by call id.
    fn calls(&self) -> Vec<Call<'r>> {
        let mut results: BTreeMap<&str, &'r Event> = BTreeMap::new();
        for (_, event) in &self.view {
            if event.trace_type == TraceType::ToolResult {
                if let Some(id) = event.tool_call_id.as_deref() {
                    results.entry(id).or_insert(event);
                }
            }
        }
        let mut calls = Vec::new();
        let mut seen_ids = BTreeSet::new();
        for &(index, event) in &self.view {
            if event.trace_type != TraceType::ToolCall {
                continue;
            }
            let call_id = event.tool_call_id.as_deref().unwrap_or("");
            // A call split into pieces (hierarchical chunking) counts once.
            if !call_id.is_empty() && !seen_ids.insert((call_id, event.id.as_str())) {
                continue;
            }
            let name = event
                .tool_name
                .clone()
                .unwrap_or_else(|| "tool".to_string());
            let result = results.get(call_id).copied();
            let kind = tool_kind(event);
            let (outcome, error_line) = match result {
                None => (Outcome::NoResult, None),
                Some(r) => match failure_line(r, kind) {
                    Some(line) => (Outcome::Failed, Some(line)),
                    None => (Outcome::Ok, None),
                },
            };
            let command = match kind {
                ToolKind::Command => Some(command_text(event)),
                _ => None,
            };
            calls.push(Call {
                index,
                call: event,
                name,
                command,
                outcome,
                error_line,
            });
        }
        calls
    }

    /// What the assistant said: its messages, and the final message of a
    /// finishing tool call (`finish`, `attempt_completion`, …).
    fn assistant_texts(&self) -> Vec<Said<'r>> {
        let mut out = Vec::new();
        for &(index, event) in &self.view {
            let text = match event.trace_type {
                TraceType::Assistant => event.content.clone(),
                TraceType::ToolCall => match finish_text(event) {
                    Some(text) => text,
                    None => continue,
                },
                _ => continue,
            };
            if !text.trim().is_empty() {
                out.push(Said { index, event, text });
            }
        }
        out
    }

    fn goal(&self, users: &[(usize, &Event)]) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(focus) = &self.focus.text {
            out.push(format!(
                "{FOCUS_PREFIX} {}",
                truncate_chars(focus, BULLET_CHARS)
            ));
        }
        let Some(&(_, first)) = users.first() else {
            return out;
        };
        out.push(truncate_chars(&clean_user_text(&first.content), GOAL_CHARS));
        // The latest request is in Next steps; with a focus, the requests about it.
        if !self.focus.terms.is_empty() {
            let middle: Vec<Candidate> = users[1..]
                .iter()
                .map(|&(i, e)| {
                    let text = clean_user_text(&e.content);
                    Candidate {
                        focus: self.focus.score(&text),
                        text: truncate_chars(&text, GOAL_CHARS),
                        rank: i as i64,
                    }
                })
                .filter(|c| c.focus > 0)
                .collect();
            out.extend(select(middle, 2));
        }
        out
    }

    fn constraints(&mut self) -> Vec<String> {
        let mut candidates = Vec::new();
        let mut facts = Vec::new();
        for &(index, event) in &self.view {
            let from_user = match event.trace_type {
                TraceType::User => true,
                TraceType::System => false,
                _ => continue,
            };
            for sentence in sentences(&event.content) {
                let lower = normalize_quotes(&sentence.to_lowercase());
                if sentence.ends_with('?') {
                    continue;
                }
                let Some(confidence) = constraint_confidence(&lower) else {
                    continue;
                };
                let text = truncate_chars(&sentence, BULLET_CHARS);
                candidates.push(Candidate {
                    focus: self.focus.score(&sentence),
                    // User rules before system ones, stronger words first, then in order.
                    rank: i64::from(from_user) * 1_000_000_000
                        + (confidence * 100.0) as i64 * 10_000_000
                        - index as i64,
                    text: text.clone(),
                });
                if from_user && !event.id.is_empty() {
                    let kind = if PREFERENCE.occurs_in(&lower) {
                        FactKind::Preference
                    } else {
                        FactKind::Constraint
                    };
                    facts.push(SummaryFact {
                        text,
                        kind,
                        confidence,
                        source_event_ids: vec![event.id.clone()],
                    });
                }
            }
        }
        self.add_facts(facts);
        select(candidates, CAP_CONSTRAINTS)
    }

    /// In progress, then blocked, then done.
    fn progress(&self, said: &[Said<'_>], calls: &[Call<'_>]) -> Vec<String> {
        let mut out = Vec::new();
        let last_event = self.view.last().map(|&(_, e)| e);
        let aborted = last_event.is_some_and(|e| e.trace_type == TraceType::TurnAborted);
        if aborted {
            out.push(format!(
                "{IN_PROGRESS_PREFIX} the user interrupted the last turn before it finished"
            ));
        } else if let Some(last) = said.last() {
            let gist: Vec<String> = sentences(&last.text).into_iter().take(2).collect();
            // A last reply reporting the work done leaves nothing in progress.
            let reports_done = gist.first().is_some_and(|s| is_done_sentence(s));
            if !gist.is_empty() && !reports_done {
                out.push(format!(
                    "{IN_PROGRESS_PREFIX} {}",
                    truncate_chars(&gist.join(" "), BULLET_CHARS)
                ));
            }
        }
        // Sentences saying something was finished, with where they are.
        let mut done_sentences: Vec<(usize, String)> = Vec::new();
        for s in said {
            for sentence in sentences(&s.text) {
                if is_done_sentence(&sentence) {
                    done_sentences.push((s.index, sentence));
                }
            }
        }
        // Blocked: failures with no later success of the same target and no later "done".
        let mut blocked = Vec::new();
        for (n, call) in calls.iter().enumerate() {
            if call.outcome != Outcome::Failed {
                continue;
            }
            let target = call.target();
            let fixed_by_call = calls[n + 1..]
                .iter()
                .any(|later| later.outcome == Outcome::Ok && later.target() == target);
            let fixed_by_word = done_sentences.iter().any(|(i, _)| *i > call.index);
            if !fixed_by_call && !fixed_by_word {
                blocked.push(Candidate {
                    focus: self.focus.score(&format!(
                        "{} {}",
                        call.label(),
                        call.error_line.as_deref().unwrap_or("")
                    )),
                    rank: call.index as i64,
                    text: format!(
                        "Blocked: {} still failing (see Errors seen)",
                        truncate_chars(&call.label(), COMMAND_CHARS)
                    ),
                });
            }
        }
        out.extend(select(blocked, CAP_BLOCKED));
        let done: Vec<Candidate> = done_sentences
            .into_iter()
            .map(|(index, sentence)| {
                let body = sentence
                    .strip_prefix("Done:")
                    .or_else(|| sentence.strip_prefix("Done."))
                    .map(str::trim)
                    .unwrap_or(&sentence)
                    .to_string();
                Candidate {
                    focus: self.focus.score(&sentence),
                    rank: index as i64,
                    text: format!("Done: {}", truncate_chars(&body, BULLET_CHARS)),
                }
            })
            .collect();
        out.extend(select(done, CAP_DONE));
        out
    }

    fn decisions(&mut self, said: &[Said<'_>]) -> Vec<String> {
        let mut candidates = Vec::new();
        let mut facts = Vec::new();
        for s in said
            .iter()
            .filter(|s| s.event.trace_type == TraceType::Assistant)
        {
            let (index, event) = (s.index, s.event);
            for sentence in sentences(&s.text) {
                if sentence.ends_with('?') {
                    continue;
                }
                let lower = normalize_quotes(&sentence.to_lowercase());
                let strong = STRONG_DECISION.occurs_in(&lower);
                if !strong && !DECISION.occurs_in(&lower) {
                    continue;
                }
                let text = truncate_chars(&sentence, BULLET_CHARS);
                candidates.push(Candidate {
                    focus: self.focus.score(&sentence),
                    rank: i64::from(strong) * 1_000_000_000 + index as i64,
                    text: text.clone(),
                });
                // "I'll read the file next" is a plan for the moment: it
                // stays in the summary, out of long-term memory.
                if strong && !event.id.is_empty() {
                    facts.push(SummaryFact {
                        text,
                        kind: FactKind::Decision,
                        confidence: 0.7,
                        source_event_ids: vec![event.id.clone()],
                    });
                }
            }
        }
        self.add_facts(facts);
        select(candidates, CAP_DECISIONS)
    }

    fn files(&self, calls: &[Call<'_>]) -> Vec<String> {
        #[derive(Default)]
        struct FileUse {
            read: bool,
            modified: bool,
            last: usize,
            first: usize,
        }
        let mut files: BTreeMap<String, FileUse> = BTreeMap::new();
        for call in calls {
            for (path, modified) in call_paths(call.call) {
                let entry = files.entry(path).or_insert_with(|| FileUse {
                    first: call.index,
                    ..FileUse::default()
                });
                if modified {
                    entry.modified = true;
                } else {
                    entry.read = true;
                }
                entry.last = call.index;
            }
        }
        let mut candidates: Vec<(usize, Candidate)> = files
            .into_iter()
            .map(|(path, use_)| {
                let what = match (use_.read, use_.modified) {
                    (true, true) => "read, modified",
                    (false, true) => "modified",
                    _ => "read",
                };
                (
                    use_.first,
                    Candidate {
                        focus: self.focus.score(&path),
                        rank: i64::from(use_.modified) * 1_000_000_000 + use_.last as i64,
                        text: format!("`{path}` ({what})"),
                    },
                )
            })
            .collect();
        // First-seen order as the base, so ties are ordered by the span, not by name.
        candidates.sort_by_key(|(first, _)| *first);
        select(candidates.into_iter().map(|(_, c)| c).collect(), CAP_FILES)
    }

    fn commands(&self, calls: &[Call<'_>]) -> Vec<String> {
        struct Run {
            count: usize,
            last: usize,
            outcome: Outcome,
        }
        let mut runs: BTreeMap<String, Run> = BTreeMap::new();
        let mut order: Vec<String> = Vec::new();
        for call in calls {
            let Some(command) = &call.command else {
                continue;
            };
            let key = truncate_chars(&first_line(command), COMMAND_CHARS);
            let run = runs.entry(key.clone()).or_insert_with(|| {
                order.push(key.clone());
                Run {
                    count: 0,
                    last: 0,
                    outcome: Outcome::NoResult,
                }
            });
            run.count += 1;
            run.last = call.index;
            run.outcome = call.outcome;
        }
        let candidates = order
            .into_iter()
            .map(|command| {
                let run = &runs[&command];
                let outcome = match run.outcome {
                    Outcome::Ok => "ok",
                    Outcome::Failed => "failed",
                    Outcome::NoResult => "no result",
                };
                let count = if run.count > 1 {
                    format!(" (×{})", run.count)
                } else {
                    String::new()
                };
                let verb = if run.count > 1 { "last " } else { "" };
                Candidate {
                    focus: self.focus.score(&command),
                    rank: run.last as i64,
                    text: format!("`{command}` — {verb}{outcome}{count}"),
                }
            })
            .collect();
        select(candidates, CAP_COMMANDS)
    }

    fn errors(&self, calls: &[Call<'_>]) -> Vec<String> {
        let mut by_line: BTreeMap<String, (usize, usize, String)> = BTreeMap::new();
        let mut order = Vec::new();
        for call in calls {
            let Some(line) = &call.error_line else {
                continue;
            };
            let key = dedupe_key(line);
            let entry = by_line.entry(key.clone()).or_insert_with(|| {
                order.push(key.clone());
                (0, 0, String::new())
            });
            entry.0 += 1;
            entry.1 = call.index;
            entry.2 = format!(
                "{}: {}",
                truncate_chars(&call.label(), COMMAND_CHARS),
                truncate_chars(line, ERROR_CHARS)
            );
        }
        let candidates = order
            .into_iter()
            .map(|key| {
                let (count, last, text) = &by_line[&key];
                let text = if *count > 1 {
                    format!("{text} (×{count})")
                } else {
                    text.clone()
                };
                Candidate {
                    focus: self.focus.score(&text),
                    rank: *last as i64,
                    text,
                }
            })
            .collect();
        select(candidates, CAP_ERRORS)
    }

    fn next_steps(&self, users: &[(usize, &Event)], said: &[Said<'_>]) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(&(_, last_user)) = users.last() {
            out.push(format!(
                "Latest user request: {}",
                truncate_chars(&clean_user_text(&last_user.content), BULLET_CHARS)
            ));
        }
        if let Some(last) = said.last() {
            let candidates: Vec<Candidate> = sentences(&last.text)
                .into_iter()
                .enumerate()
                .filter(|(_, s)| {
                    let lower = s.to_lowercase();
                    s.ends_with('?') || NEXT.occurs_in(&lower)
                })
                .map(|(i, s)| Candidate {
                    focus: self.focus.score(&s),
                    rank: -(i as i64),
                    text: truncate_chars(&s, BULLET_CHARS),
                })
                .collect();
            out.extend(select(candidates, CAP_NEXT));
        }
        out
    }

    /// Identifiers of the span not already named, most frequent first.
    fn critical(&self, named: &str, of_each: Vec<Vec<String>>) -> Vec<String> {
        let mut stats: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        let identifiers: Vec<(usize, Vec<String>)> = self
            .view
            .iter()
            .map(|&(index, _)| index)
            .zip(of_each)
            .collect();
        let mut order = Vec::new();
        for (index, found) in &identifiers {
            for identifier in found {
                let entry = stats.entry(identifier).or_insert_with(|| {
                    order.push(identifier.as_str());
                    (0, *index)
                });
                entry.0 += 1;
            }
        }
        let mut ranked: Vec<(usize, i64, &str)> = order
            .into_iter()
            .map(|id| {
                let (count, first) = stats[id];
                let rank = (count as i64) * 1_000_000_000 - first as i64;
                (self.focus.score(id), rank, id)
            })
            .collect();
        // Stable: equal keys keep their first-seen order, as in `select`.
        ranked.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
        // Whether the summary names an identifier is asked best first, and
        // only until the section is full: a span names thousands.
        let mut seen = BTreeSet::new();
        ranked
            .into_iter()
            .filter(|(_, _, id)| !named.contains(id))
            .map(|(_, _, id)| format!("`{id}`"))
            .filter(|text| seen.insert(dedupe_key(text)))
            .take(CAP_CRITICAL)
            .collect()
    }

    fn add_facts(&mut self, facts: Vec<SummaryFact>) {
        self.facts.extend(facts);
    }
}

/// A previous summary as sections: parsed when it is in the rendered format,
/// else its sentences become `Earlier:` bullets of Critical context.
pub(super) fn parse_previous_summary(text: &str) -> Summary {
    if let Some(summary) = Summary::parse_rendered(text) {
        return summary;
    }
    let text = text.trim_start();
    let text = text.strip_prefix(SUMMARY_PREFIX).unwrap_or(text);
    let mut summary = Summary::empty();
    if let Some(section) = summary.section_mut(CRITICAL) {
        *section = sentences(text)
            .into_iter()
            .map(|s| format!("Earlier: {}", truncate_chars(&s, BULLET_CHARS)))
            .collect();
    }
    summary
}
