//! What a run of turns through the engine measures, shared by `replay`, the
//! workload bench and the replay's plot (which use it, not each other): the
//! line a turn of a replay makes, the input budget a run is held to, and the
//! median its turns are summed up with.

use agentmem::pipeline::tiers::Action;
use agentmem::{BudgetSettings, PrepareRequest, Store};
use serde::Serialize;

/// One turn of the replay.
#[derive(Debug, Serialize)]
pub struct TurnLine {
    pub turn: usize,
    pub context_tokens: u64,
    /// How many of `context_tokens` are estimated from bytes, not counted:
    /// events far below the trigger are counted only when a check needs it.
    pub estimated_tokens: u64,
    pub budget: u64,
    pub trigger: u64,
    pub actions: Vec<Action>,
    pub tokens_saved: u64,
    pub engine_us: f64,
    pub model_calls: usize,
}

/// Gives `request` an input budget of exactly `budget` tokens beside the
/// model's whole reply reserve.
pub fn set_input_budget(request: &mut PrepareRequest, store: &Store, budget: u64) {
    let model = store.registry().lookup(&request.model);
    let exact = BudgetSettings::for_input_budget(budget, model.max_output_tokens);
    request.budget = exact.over(request.budget);
}

/// The middle of `values` (the upper one of an even count); 0 for none.
/// A window's mean moves with where its few compaction turns fall; its
/// median is the typical turn's cost, so comparing the two ends' medians
/// shows whether that cost grows with history.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
}

/// The `p` quantile of `values` by nearest rank (`p = 0.99` is the p99); 0 for none.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let last = sorted.len().saturating_sub(1);
    sorted
        .get((last as f64 * p).round() as usize)
        .copied()
        .unwrap_or(0.0)
}
