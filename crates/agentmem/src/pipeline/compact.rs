//! Compaction: what to fold into a summary, and the snapshot that stands for it.
//!
//! The snapshot's base is, in order: the user messages kept (most recent
//! first up to a token budget, shown in their original order), the latest
//! result of each protected tool with its call, the turn-aborted markers, and
//! the summary (its fixed prefix lets a later compaction recognise and replace
//! it). The raw tail — the current turn and the last few completed ones —
//! follows verbatim from the active log.

use std::borrow::Borrow;
use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

use super::strategy::PipelineSettings;
use super::tiers::SNAPSHOT_SOURCE;
use crate::base::event::{Event, TraceType};
use crate::tokens::Tokenizer;

/// Why a compaction ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactReason {
    /// The context passed the trigger.
    Auto,
    /// Someone asked (`/compact`, `agentmem compact`).
    Manual,
    /// The provider said the context was too long.
    Reactive,
    /// The working context was re-derived from the raw log.
    FromRaw,
}

impl CompactReason {
    /// Whether a person or an agent asked for the compaction, rather than
    /// the pipeline: one asked for folds even a short history and is applied
    /// even when it frees nothing (the report says so), while the pipeline's
    /// leave a history that would not shrink as it is, so they cannot loop.
    pub(crate) fn is_asked_for(self) -> bool {
        match self {
            CompactReason::Manual | CompactReason::FromRaw => true,
            CompactReason::Auto | CompactReason::Reactive => false,
        }
    }
}

/// What a compaction did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompactReport {
    /// Why the compaction ran.
    pub reason: CompactReason,
    /// Context tokens before it.
    pub tokens_before: u64,
    /// Context tokens after it.
    pub tokens_after: u64,
    /// Tokens it saved.
    pub tokens_saved: u64,
    /// Events the summary replaced.
    pub events_compacted: usize,
    /// Identifiers in the compacted span, and the share still in the new context or hinted.
    pub identifiers: usize,
    /// The share of those identifiers still in the context or hinted (0–1).
    pub identifier_survival: f64,
    /// The summarizer that wrote the summary.
    pub summarizer: String,
    /// Set when the summarizer failed too often and deterministic trimming stood in.
    pub fallback: Option<String>,
    /// What the summary was asked to favour, if anything.
    pub focus: Option<String>,
    /// How long it took, in milliseconds.
    pub duration_ms: f64,
    /// False when nothing was changed: nothing to compact, or an automatic
    /// compaction that would not have freed space.
    pub applied: bool,
    /// What a person should know of the outcome: why nothing was compacted,
    /// or that a compaction asked for freed nothing.
    pub note: Option<String>,
}

/// The active events split into what is compacted and what stays verbatim,
/// each side holding the events as the caller does (shared, or copies).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Split<E = Event> {
    /// Events moved to the archive and summarized, in log order.
    pub span: Vec<E>,
    /// Events kept verbatim after the snapshot base, in log order.
    pub tail: Vec<E>,
}

/// Splits `active` (the active log's events) so the tail holds the current
/// turn and the `keep_turns` completed turns before it. The cut never splits
/// a turn: when an event after it belongs to an earlier turn (a tool result
/// that arrived after the next user message), the cut moves back to that
/// turn's start. So the span and the tail are contiguous, the archive keeps
/// the log's order, and every pair stays on one side.
pub(crate) fn split_for_compaction<E: Borrow<Event> + Clone>(
    active: &[E],
    keep_turns: usize,
) -> Split<E> {
    let owned = <[E]>::to_vec;
    let mut turn_starts: HashMap<&str, usize> = HashMap::new();
    let mut user_turns: Vec<usize> = Vec::new();
    for (i, event) in active.iter().map(Borrow::borrow).enumerate() {
        turn_starts.entry(event.turn_id.as_str()).or_insert(i);
        if event.trace_type == TraceType::User {
            user_turns.push(i);
        }
    }
    let Some(&first_kept) = user_turns
        .len()
        .checked_sub(keep_turns + 1)
        .and_then(|n| user_turns.get(n))
    else {
        return Split {
            span: Vec::new(),
            tail: owned(active),
        };
    };
    let mut cut = first_kept;
    loop {
        let earliest = active[cut..]
            .iter()
            .map(|e| turn_starts[e.borrow().turn_id.as_str()])
            .min()
            .unwrap_or(cut);
        if earliest >= cut {
            break;
        }
        cut = earliest;
    }
    Split {
        span: owned(&active[..cut]),
        tail: owned(&active[cut..]),
    }
}

/// What a compaction for `reason` folds: everything before the raw tail of
/// the current turn and `keep_turns` before it ([`split_for_compaction`]).
/// When that folds no turn, one asked for ([`CompactReason::is_asked_for`])
/// keeps the longest shorter tail that folds one, down to the current turn
/// alone, and when that turn is all there is, folds it too once every call
/// in it has its result (its user message stays in the base).
pub(crate) fn split_to_compact<E: Borrow<Event> + Clone>(
    active: &[E],
    keep_turns: usize,
    reason: CompactReason,
) -> Split<E> {
    let configured = split_for_compaction(active, keep_turns);
    if !reason.is_asked_for() {
        return configured;
    }
    let folds_a_turn = |split: &Split<E>| {
        split
            .span
            .iter()
            .any(|e| e.borrow().trace_type == TraceType::User)
    };
    if folds_a_turn(&configured) {
        return configured;
    }
    if let Some(shorter) = (0..keep_turns)
        .rev()
        .map(|keep| split_for_compaction(active, keep))
        .find(folds_a_turn)
    {
        return shorter;
    }
    let settled = super::normalize::pairs_are_intact(active.iter().map(Borrow::borrow));
    match settled {
        true => Split {
            span: configured.tail,
            tail: Vec::new(),
        },
        false => configured,
    }
}

/// The new snapshot base (see the module docs).
pub(crate) fn build_base(
    old_base: &[Event],
    span: &[Event],
    summary: String,
    settings: &PipelineSettings,
    tokenizer: Tokenizer,
    compaction_number: u64,
) -> Vec<Event> {
    let history: Vec<&Event> = old_base.iter().chain(span).collect();
    let mut base: Vec<Event> = Vec::new();
    base.extend(kept_user_messages(
        &history,
        settings.kept_user_message_tokens,
        tokenizer,
    ));
    base.extend(protected_results(&history, &settings.protected_tools));
    base.extend(
        history
            .iter()
            .filter(|e| e.trace_type == TraceType::TurnAborted)
            .map(|e| (*e).clone()),
    );
    let last_turn = span
        .last()
        .or(old_base.last())
        .map(|e| e.turn_id.clone())
        .unwrap_or_default();
    // The summary takes the time of the last event it covers, so the same
    // history always compacts to the same snapshot.
    let ts = span.last().or(old_base.last()).map_or(0.0, |e| e.ts);
    let mut summary_event = Event::new(TraceType::Summary, summary)
        .with_id(format!("summary-{compaction_number:04}"))
        .with_ts(ts);
    summary_event.turn_id = last_turn;
    if settings.strategy == super::strategy::Strategy::Summarize {
        summary_event
            .tags
            .push(crate::base::message::SHADOW_PAIR_TAG.to_owned());
    }
    base.push(summary_event);
    for event in &mut base {
        event.source_event = SNAPSHOT_SOURCE.to_owned();
    }
    base
}

/// User messages, most recent first while they fit `budget` tokens (the
/// latest always, whatever its size), returned in their original order.
fn kept_user_messages(history: &[&Event], budget: u64, tokenizer: Tokenizer) -> Vec<Event> {
    let users: Vec<&Event> = history
        .iter()
        .copied()
        .filter(|e| e.trace_type == TraceType::User)
        .collect();
    let mut kept = BTreeSet::new();
    let mut used = 0u64;
    for (i, event) in users.iter().enumerate().rev() {
        let tokens = tokenizer.count(&event.content) as u64;
        if !kept.is_empty() && used.saturating_add(tokens) > budget {
            break;
        }
        used = used.saturating_add(tokens);
        kept.insert(i);
    }
    kept.into_iter().map(|i| users[i].clone()).collect()
}

/// The latest call of each protected tool, with its result.
fn protected_results(history: &[&Event], protected: &[String]) -> Vec<Event> {
    let mut pairs = Vec::new();
    for tool in protected {
        let latest_call = history.iter().rev().find(|e| {
            e.trace_type == TraceType::ToolCall && e.tool_name.as_deref() == Some(tool.as_str())
        });
        let Some(call) = latest_call else { continue };
        let result = history.iter().find(|e| {
            e.trace_type == TraceType::ToolResult
                && e.tool_call_id.is_some()
                && e.tool_call_id == call.tool_call_id
        });
        if let Some(result) = result {
            pairs.push((*call).clone());
            pairs.push((*result).clone());
        }
    }
    pairs
}

/// The deterministic stand-in summary used when the summarizer keeps failing:
/// it hides nothing (the archive has it all) and says how to find it.
pub(crate) fn fallback_summary(span: &[Event], failures: u32) -> String {
    let turns: BTreeSet<&str> = span.iter().map(|e| e.turn_id.as_str()).collect();
    let first = turns.first().copied().unwrap_or("?");
    let last = turns.last().copied().unwrap_or("?");
    format!(
        "## Compacted without a summary\n- The summarizer failed {failures} times in a row, so {} earlier events \
         ({first} to {last}) were trimmed from the context without being summarized.\n- Nothing was deleted: \
         they are in the session's archive; search them with `search_conversation_history`.",
        span.len()
    )
}
