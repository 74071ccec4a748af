//! Shrinking the model's view, one tier at a time.
//!
//! Every tier shares one signature, takes the view and a target, changes as
//! little as it can to get under the target (oldest first), and reports what
//! it did. None of them touches the log: they shape what is sent.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::guard;
use super::normalize;
use super::strategy::PipelineSettings;
use crate::base::event::{Event, TraceType};
use crate::pipeline::transcript::{event_tokens, measure, ViewItem};
use crate::tokens::Tokenizer;

/// The least a tool result is cut to by budgeting, in tokens.
pub(crate) const MIN_BUDGETED_RESULT_TOKENS: u64 = 500;
/// Budgeting caps each result at the target divided by this.
pub(crate) const RESULTS_PER_TARGET: u64 = 20;
/// Events the engine made for a compaction snapshot carry this source.
pub(crate) const SNAPSHOT_SOURCE: &str = "engine:compact";

/// One thing the pipeline did to the view (or the session).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    /// Tool call / result pairs were repaired for the provider.
    PairsRepaired {
        /// The repair pass that changed something.
        pass: String,
        /// Synthetic results added for calls that had none.
        added: usize,
        /// Orphan results removed.
        removed: usize,
        /// Results moved after their calls.
        moved: usize,
        /// Calls and results given an id of their own (a reused call id).
        #[serde(skip_serializing_if = "is_zero")]
        renamed: usize,
    },
    /// Large tool results were cut to a per-result budget.
    ResultsBudgeted {
        /// Tool results changed.
        results: usize,
        /// Tokens this saved.
        tokens_saved: u64,
    },
    /// Older duplicate tool calls (same tool, same arguments) were dropped with their results.
    Snipped {
        /// Call/result pairs dropped.
        pairs: usize,
        /// Tokens this saved.
        tokens_saved: u64,
    },
    /// Older tool results were replaced by placeholders.
    Microcompacted {
        /// Tool results changed.
        results: usize,
        /// Tokens this saved.
        tokens_saved: u64,
    },
    /// The oldest whole turns were left out.
    TurnsTrimmed {
        /// Turns left out.
        turns: usize,
        /// Tokens this saved.
        tokens_saved: u64,
    },
    /// The oldest whole turns were left out of the view before any tier
    /// ran, because no call could hold them: the newer turns' user and
    /// assistant messages alone, which no tier shrinks, take the input budget.
    TurnsOutOfReach {
        /// Turns left out.
        turns: usize,
        /// Tokens this saved.
        tokens_saved: u64,
    },
    /// The oldest items were left out (calls with their results) because
    /// the current turn alone was over the budget.
    ItemsDropped {
        /// Items left out.
        items: usize,
        /// Tokens this saved.
        tokens_saved: u64,
    },
    /// History was compacted into a summary (persisted).
    Compacted {
        /// Events compacted.
        events: usize,
        /// Tokens this saved.
        tokens_saved: u64,
    },
    /// A compaction of this many events is being drafted in the
    /// background; a later prepare applies it.
    CompactionStarted {
        /// Events compacted.
        events: usize,
    },
    /// A compaction was due and one of this many events is still being
    /// drafted in the background: this call is kept within the budget
    /// without it (the cheap tiers, then the oldest turns left out).
    CompactionPending {
        /// Events the draft compacts.
        events: usize,
    },
    /// A compaction was due but did not run, and why.
    CompactionSkipped {
        /// Why it did not run.
        reason: String,
    },
    /// A compaction was due and a writer would have run it; the session is
    /// open read-only (a dry run, or another process writes it), so it did not.
    CompactionWouldRun,
}

impl Action {
    /// The tokens this action freed.
    pub fn tokens_saved(&self) -> u64 {
        match self {
            Action::ResultsBudgeted { tokens_saved, .. }
            | Action::Snipped { tokens_saved, .. }
            | Action::Microcompacted { tokens_saved, .. }
            | Action::TurnsTrimmed { tokens_saved, .. }
            | Action::TurnsOutOfReach { tokens_saved, .. }
            | Action::ItemsDropped { tokens_saved, .. }
            | Action::Compacted { tokens_saved, .. } => *tokens_saved,
            Action::PairsRepaired { .. }
            | Action::CompactionStarted { .. }
            | Action::CompactionPending { .. }
            | Action::CompactionSkipped { .. }
            | Action::CompactionWouldRun => 0,
        }
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What a tier works with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shrink<'a> {
    /// Get the view under this many tokens.
    pub target: u64,
    pub tokenizer: Tokenizer,
    pub settings: &'a PipelineSettings,
}

/// A tier: shrinks `items` toward the target, reports what it did (if anything).
pub(crate) type Tier = fn(&mut Vec<ViewItem>, &Shrink<'_>) -> Option<Action>;

/// The view-level tiers of `auto`, in order.
pub(crate) const AUTO_TIERS: &[Tier] = &[
    budget_tool_results,
    snip_duplicate_calls,
    microcompact_old_results,
];

/// Applies `tiers` in order, stopping as soon as the view is under the target.
pub(crate) fn apply_tiers(
    items: &mut Vec<ViewItem>,
    tiers: &[Tier],
    shrink: &Shrink<'_>,
) -> Vec<Action> {
    let mut actions = Vec::new();
    for tier in tiers {
        if measure(items, shrink.tokenizer).total < shrink.target {
            break;
        }
        actions.extend(tier(items, shrink));
    }
    actions
}

/// Repairs tool call / result pairs so every provider accepts the view.
pub(crate) fn repair_pairs(items: &mut Vec<ViewItem>, tokenizer: Tokenizer) -> Vec<Action> {
    let mut counted: HashMap<String, crate::tokens::TokenCounts> =
        HashMap::with_capacity(items.len());
    let mut events: Vec<Event> = Vec::with_capacity(items.len());
    for item in items.drain(..) {
        counted.insert(item.event.id.clone(), item.tokens);
        events.push(std::sync::Arc::unwrap_or_clone(item.event));
    }
    let reports = normalize::normalize_pairs(&mut events);
    items.extend(events.into_iter().map(|event| {
        let tokens = counted
            .get(&event.id)
            .copied()
            .unwrap_or_else(|| event_tokens(&event, tokenizer));
        // A new revision: normalizing may have changed the event itself.
        ViewItem::new(event, tokens)
    }));
    reports
        .into_iter()
        .map(|r| Action::PairsRepaired {
            pass: r.pass.to_owned(),
            added: r.added.len(),
            removed: r.removed.len(),
            moved: r.moved.len(),
            renamed: r.renamed.len(),
        })
        .collect()
}

/// Tier 1: cuts tool results over a per-result budget, oldest first.
#[allow(clippy::ptr_arg)] // every tier shares the `Tier` signature; some remove items
pub(crate) fn budget_tool_results(
    items: &mut Vec<ViewItem>,
    shrink: &Shrink<'_>,
) -> Option<Action> {
    let cap = (shrink.target / RESULTS_PER_TARGET).max(MIN_BUDGETED_RESULT_TOKENS);
    let mut total = measure(items, shrink.tokenizer).total;
    let (mut results, mut saved) = (0, 0);
    for item in items.iter_mut() {
        if total < shrink.target {
            break;
        }
        if item.event.trace_type != TraceType::ToolResult || item.tokens.tool_output <= cap {
            continue;
        }
        let Some(cut) = guard::truncate_middle_tokens(&item.event.content, cap, shrink.tokenizer)
        else {
            continue;
        };
        let before = item.tokens.total;
        item.replace_content(cut, shrink.tokenizer);
        let freed = before.saturating_sub(item.tokens.total);
        total = total.saturating_sub(freed);
        saved += freed;
        results += 1;
    }
    (results > 0).then_some(Action::ResultsBudgeted {
        results,
        tokens_saved: saved,
    })
}

/// Tier 2: drops older calls that a later identical call (same tool, same
/// arguments) repeats — an old read superseded by a newer one — with their results.
pub(crate) fn snip_duplicate_calls(
    items: &mut Vec<ViewItem>,
    shrink: &Shrink<'_>,
) -> Option<Action> {
    let keys: Vec<Option<(&str, Vec<u8>)>> = items
        .iter()
        .map(|item| {
            let event = &item.event;
            (event.trace_type == TraceType::ToolCall && !is_snapshot(event))
                .then(|| call_key(event))
        })
        .collect();
    let mut latest: HashMap<&(&str, Vec<u8>), usize> = HashMap::new();
    for (i, key) in keys.iter().enumerate() {
        if let Some(key) = key {
            latest.insert(key, i);
        }
    }
    let pair_tokens = tokens_by_call_id(items);
    let mut total = measure(items, shrink.tokenizer).total;
    let mut doomed: HashSet<String> = HashSet::new();
    for (i, (item, key)) in items.iter().zip(&keys).enumerate() {
        if total < shrink.target {
            break;
        }
        let Some(key) = key else { continue };
        if latest[key] == i {
            continue;
        }
        if let Some(id) = &item.event.tool_call_id {
            doomed.insert(id.clone());
            total = total.saturating_sub(pair_tokens.get(id.as_str()).copied().unwrap_or(0));
        }
    }
    remove_pairs(items, &doomed, shrink.tokenizer).map(|saved| Action::Snipped {
        pairs: doomed.len(),
        tokens_saved: saved,
    })
}

/// Tier 3: replaces all but the last few tool results with placeholders that
/// keep the tool name, the call id and the size, oldest first. Results of
/// protected tools are left whole.
#[allow(clippy::ptr_arg)] // every tier shares the `Tier` signature; some remove items
pub(crate) fn microcompact_old_results(
    items: &mut Vec<ViewItem>,
    shrink: &Shrink<'_>,
) -> Option<Action> {
    let tool_names: HashMap<String, String> = items
        .iter()
        .filter(|i| i.event.trace_type == TraceType::ToolCall)
        .filter_map(|i| {
            Some((
                i.event.tool_call_id.clone()?,
                i.event.tool_name.clone().unwrap_or_default(),
            ))
        })
        .collect();
    let protected = |call_id: Option<&String>| {
        call_id
            .and_then(|id| tool_names.get(id))
            .is_some_and(|name| shrink.settings.protected_tools.contains(name))
    };
    let results: Vec<usize> = (0..items.len())
        .filter(|&i| {
            let event = &items[i].event;
            event.trace_type == TraceType::ToolResult
                && !is_placeholder(&event.content)
                && !protected(event.tool_call_id.as_ref())
        })
        .collect();
    let keep_from = results
        .len()
        .saturating_sub(shrink.settings.keep_tool_results);
    let mut total = measure(items, shrink.tokenizer).total;
    let (mut replaced, mut saved) = (0, 0);
    for &i in &results[..keep_from] {
        if total < shrink.target {
            break;
        }
        let item = &mut items[i];
        let call_id = item.event.tool_call_id.clone().unwrap_or_default();
        let tool = tool_names.get(&call_id).map_or("tool", String::as_str);
        let before = item.tokens.total;
        item.replace_content(
            placeholder(tool, &call_id, item.tokens.tool_output),
            shrink.tokenizer,
        );
        let freed = before.saturating_sub(item.tokens.total);
        total = total.saturating_sub(freed);
        saved += freed;
        replaced += 1;
    }
    (replaced > 0).then_some(Action::Microcompacted {
        results: replaced,
        tokens_saved: saved,
    })
}

/// `trim`: leaves out the oldest whole turns until the view is under the
/// target (or only `max_turns` remain), never the latest turn nor the
/// snapshot's events. Whole turns keep every pair together.
pub(crate) fn trim_oldest_turns(items: &mut Vec<ViewItem>, shrink: &Shrink<'_>) -> Option<Action> {
    let mut turns: Vec<&str> = Vec::new();
    let mut seen = HashSet::new();
    for item in items.iter().filter(|i| is_trimmable(&i.event)) {
        if seen.insert(item.event.turn_id.as_str()) {
            turns.push(item.event.turn_id.as_str());
        }
    }
    // With the framing of the messages a turn starts: a sum of its parts
    // alone would leave the running total too high and trim turns that fit.
    let shares = crate::pipeline::transcript::item_totals(items, shrink.tokenizer);
    let mut per_turn: HashMap<&str, u64> = HashMap::new();
    for (item, share) in items.iter().zip(shares) {
        if is_trimmable(&item.event) {
            *per_turn.entry(item.event.turn_id.as_str()).or_default() += share;
        }
    }
    let must_drop = shrink
        .settings
        .max_turns
        .map_or(0, |max| turns.len().saturating_sub(max));
    let mut total = measure(items, shrink.tokenizer).total;
    let mut dropped: HashSet<String> = HashSet::new();
    for (n, turn) in turns.iter().enumerate().take(turns.len().saturating_sub(1)) {
        if n >= must_drop && total < shrink.target {
            break;
        }
        dropped.insert((*turn).to_owned());
        total = total.saturating_sub(per_turn[turn]);
    }
    if dropped.is_empty() {
        return None;
    }
    let before = measure(items, shrink.tokenizer).total;
    items.retain(|i| !(is_trimmable(&i.event) && dropped.contains(&i.event.turn_id)));
    let saved = before.saturating_sub(measure(items, shrink.tokenizer).total);
    Some(Action::TurnsTrimmed {
        turns: dropped.len(),
        tokens_saved: saved,
    })
}

/// Leaves out the oldest whole turns that no call within `must_fit.target`
/// can hold, so the tiers after it work only over what can be sent.
///
/// A turn's floor is what no tier shrinks: its user and assistant messages.
/// Whatever fits the budget keeps the newest turns whole first (trimming
/// and the last resort leave out the oldest), so a turn whose newer turns'
/// floors alone pass the target is never sent; leaving it out now changes
/// no call, and spares every tier a pass over it. The newest turn and the
/// snapshot's events are never left out.
pub(crate) fn leave_out_turns_out_of_reach(
    items: &mut Vec<ViewItem>,
    must_fit: &Shrink<'_>,
) -> Option<Action> {
    let mut floor_newer: u64 = 0;
    let mut in_reach: HashSet<&str> = HashSet::new();
    let mut current: Option<&str> = None;
    let mut out_of_reach = false;
    for item in items.iter().rev() {
        let event = &item.event;
        if !is_trimmable(event) {
            continue;
        }
        let turn = event.turn_id.as_str();
        if current != Some(turn) && !in_reach.contains(turn) {
            // An older turn: out of reach once the newer ones' floors pass the target.
            if current.is_some() && floor_newer > must_fit.target {
                out_of_reach = true;
                break;
            }
            in_reach.insert(turn);
            current = Some(turn);
        }
        if matches!(event.trace_type, TraceType::User | TraceType::Assistant) {
            floor_newer = floor_newer.saturating_add(item.tokens.total);
        }
    }
    if !out_of_reach {
        return None;
    }
    let in_reach: HashSet<String> = in_reach.into_iter().map(str::to_owned).collect();
    let before = measure(items, must_fit.tokenizer).total;
    let kept =
        |item: &ViewItem| !is_trimmable(&item.event) || in_reach.contains(&item.event.turn_id);
    let turns: HashSet<&str> = items
        .iter()
        .filter(|i| !kept(i))
        .map(|i| i.event.turn_id.as_str())
        .collect();
    let turns = turns.len();
    items.retain(kept);
    Some(Action::TurnsOutOfReach {
        turns,
        tokens_saved: before.saturating_sub(measure(items, must_fit.tokenizer).total),
    })
}

/// The placeholder that stands for a removed tool result.
///
/// ```
/// use agentmem::pipeline::tiers::placeholder;
/// assert_eq!(placeholder("read_file", "call_7", 1234), "⟦removed: read_file call_7 1234 tokens⟧");
/// ```
pub fn placeholder(tool: &str, call_id: &str, tokens: u64) -> String {
    format!("⟦removed: {tool} {call_id} {tokens} tokens⟧")
}

fn is_placeholder(content: &str) -> bool {
    content.starts_with("⟦removed: ")
}

fn is_snapshot(event: &Event) -> bool {
    event.source_event == SNAPSHOT_SOURCE
}

/// Turns of the conversation proper: the preamble (system prompt) and the
/// snapshot's events are never trimmed.
fn is_trimmable(event: &Event) -> bool {
    !is_snapshot(event) && event.turn_id != crate::base::turn::PREAMBLE_TURN
}

fn call_key(event: &Event) -> (&str, Vec<u8>) {
    let mut args = Vec::new();
    if let Some(value) = &event.tool_args {
        crate::base::json::write_value(&mut args, value);
    }
    (event.tool_name.as_deref().unwrap_or_default(), args)
}

/// The tokens of each call id's items (the call and its results), summed.
fn tokens_by_call_id(items: &[ViewItem]) -> HashMap<&str, u64> {
    let mut tokens: HashMap<&str, u64> = HashMap::new();
    for item in items {
        if let Some(id) = item.event.tool_call_id.as_deref() {
            let sum = tokens.entry(id).or_default();
            *sum = sum.saturating_add(item.tokens.total);
        }
    }
    tokens
}

/// Removes calls and their results together; returns the tokens freed.
fn remove_pairs(
    items: &mut Vec<ViewItem>,
    call_ids: &HashSet<String>,
    tokenizer: Tokenizer,
) -> Option<u64> {
    if call_ids.is_empty() {
        return None;
    }
    let before = measure(items, tokenizer).total;
    items.retain(|i| {
        i.event
            .tool_call_id
            .as_ref()
            .is_none_or(|id| !call_ids.contains(id))
    });
    Some(before.saturating_sub(measure(items, tokenizer).total))
}

/// The very last resort: leaves out items oldest first — a tool call always
/// with its results — until the view fits, never the latest user message.
/// Only reached when whole-turn trimming and placeholders were not enough
/// (the current turn alone is over the budget).
///
/// Leaves out as few as it can: each candidate count is measured whole,
/// message framing included, since a running sum of items would miss the
/// framing freed with them and leave out one item too many.
pub(crate) fn drop_oldest_items(items: &mut Vec<ViewItem>, shrink: &Shrink<'_>) -> Option<Action> {
    let before = measure(items, shrink.tokenizer).total;
    if before <= shrink.target {
        return None;
    }
    let units = droppable_units_oldest_first(items);
    if units.is_empty() {
        return None;
    }
    let without = |count: usize| -> Vec<ViewItem> {
        let dropped: HashSet<usize> = units[..count].iter().flatten().copied().collect();
        (0..items.len())
            .filter(|i| !dropped.contains(i))
            .map(|i| items[i].clone())
            .collect()
    };
    let fits = |count: usize| measure(&without(count), shrink.tokenizer).total <= shrink.target;
    // Leaving out more never adds tokens, so the fewest units that fit are
    // found by bisection (all of them when nothing fits).
    let (mut fewest, mut most) = (1, units.len());
    while fewest < most {
        let middle = fewest + (most - fewest) / 2;
        if fits(middle) {
            most = middle;
        } else {
            fewest = middle + 1;
        }
    }
    let count = fewest;
    let dropped = units[..count].iter().map(Vec::len).sum();
    *items = without(count);
    Some(Action::ItemsDropped {
        items: dropped,
        tokens_saved: before.saturating_sub(measure(items, shrink.tokenizer).total),
    })
}

/// What [`drop_oldest_items`] may leave out, in order: each item on its own,
/// a tool call with its results, never a result alone nor the latest user
/// message.
fn droppable_units_oldest_first(items: &[ViewItem]) -> Vec<Vec<usize>> {
    let latest_user = items
        .iter()
        .rposition(|i| i.event.trace_type == TraceType::User);
    let mut units = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let event = &item.event;
        if Some(i) == latest_user || event.trace_type == TraceType::ToolResult {
            continue;
        }
        let mut unit = vec![i];
        if let (TraceType::ToolCall, Some(id)) = (event.trace_type, &event.tool_call_id) {
            unit.extend(
                items
                    .iter()
                    .enumerate()
                    .skip(i + 1)
                    .filter_map(|(j, other)| {
                        let answers = other.event.trace_type == TraceType::ToolResult
                            && other.event.tool_call_id.as_ref() == Some(id);
                        answers.then_some(j)
                    }),
            );
        }
        units.push(unit);
    }
    units
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::transcript::Transcript;
    use crate::tokens::Encoding;
    use serde_json::json;

    fn call_and_result(id: &str, path: &str) -> [Event; 2] {
        [
            Event::tool_call(id, "read_file", json!({"path": path, "lines": [1, 40]})).with_id(id),
            Event::tool_result(id, format!("contents of {path}\n").repeat(50))
                .with_id(format!("{id}-out")),
        ]
    }

    #[test]
    fn snip_drops_an_older_call_repeated_with_the_same_arguments_and_its_result() {
        let events: Vec<Event> = [
            call_and_result("c1", "src/a.rs"),
            call_and_result("c2", "src/b.rs"),
            call_and_result("c3", "src/a.rs"),
        ]
        .concat();
        let transcript = Transcript::from_events(Encoding::O200kBase, &events);
        let mut items = transcript.items().to_vec();
        let settings = PipelineSettings::default();
        let shrink = Shrink {
            target: 0,
            tokenizer: Encoding::O200kBase.tokenizer(),
            settings: &settings,
        };
        let action = snip_duplicate_calls(&mut items, &shrink);
        assert!(
            matches!(action, Some(Action::Snipped { pairs: 1, tokens_saved }) if tokens_saved > 0)
        );
        let left: Vec<&str> = items.iter().map(|i| i.event.id.as_str()).collect();
        assert_eq!(left, ["c2", "c2-out", "c3", "c3-out"]);
    }
    /// Many short turns, where message framing is much of each turn: the
    /// trim keeps the longest run of newest turns that fits, not fewer.
    #[test]
    fn trimming_keeps_every_newest_turn_that_fits() {
        let events: Vec<Event> = (0..60)
            .flat_map(|t| {
                let turn = format!("turn_{t:04}");
                [
                    Event {
                        turn_id: turn.clone(),
                        ..Event::user(format!("q{t}")).with_id(format!("u{t}"))
                    },
                    Event {
                        turn_id: turn.clone(),
                        ..Event::assistant(format!("a{t}")).with_id(format!("a{t}"))
                    },
                ]
            })
            .collect();
        let tokenizer = Encoding::O200kBase.tokenizer();
        let all = Transcript::from_events(Encoding::O200kBase, &events)
            .items()
            .to_vec();
        let settings = PipelineSettings::default();
        let target = measure(&all, tokenizer).total / 3;
        let shrink = Shrink {
            target,
            tokenizer,
            settings: &settings,
        };
        let mut items = all.clone();
        trim_oldest_turns(&mut items, &shrink);
        let kept = measure(&items, tokenizer).total;
        assert!(kept < target, "{kept} of {target}");
        let one_more = &all[all.len() - items.len() - 2..];
        assert!(
            measure(one_more, tokenizer).total >= target,
            "the newest turn left out would have fitted: {} of {target}",
            measure(one_more, tokenizer).total
        );
    }
}
