//! A session's token accounting: what the last prepare counted, paired
//! with the usage the provider reports for that call; the per-model
//! calibration learned from those pairs; the tokens a request adds beside
//! the messages, and those the provider counts that agentmem does not see.

use std::sync::Arc;

use crate::base::event::Event;
use crate::pipeline::measure::{
    count_overhead, Calibration, CalibrationTable, PrepareRequest, Sections,
};
use crate::pipeline::transcript::{Bound, Transcript, UsageAnchor};
use crate::render::ToolSchema;
use crate::tokens::registry::{ModelInfo, ModelRegistry};
use crate::tokens::{Encoding, Tokenizer};

/// Model names whose registry entries a session remembers.
const RECENT_MODELS: usize = 4;

/// The session's figures about tokens (see the module docs).
#[derive(Debug)]
pub(crate) struct TokenAccounting {
    registry: Arc<ModelRegistry>,
    /// The registry's entries for the models last asked for, by name.
    recent_models: Vec<(String, ModelInfo)>,
    calibration: CalibrationTable,
    last_prepare: Option<LastPrepare>,
    /// What the latest prepare counted beside the messages (system prompt,
    /// memory, tools, framing)...
    latest_overhead_tokens: Option<u64>,
    /// ...taken as what a call agentmem did not prepare sent beside them,
    /// when such a call reported its usage.
    unprepared_call_overhead_tokens: Option<u64>,
    /// The request overhead and what it was counted for.
    overhead_cache: Option<OverheadCache>,
    /// Overflow recoveries since the last successful model call.
    overflow_attempts: u32,
}

/// The last prepared context, so the usage reported for it can be paired with our count.
#[derive(Debug, Clone)]
pub(crate) struct LastPrepare {
    pub(crate) model: String,
    pub(crate) counted_tokens: u64,
    /// The part of `counted_tokens` that was the messages sent.
    pub(crate) view_tokens: u64,
    /// How many events the active log held.
    pub(crate) events: usize,
    /// Tokens the provider sees that the view does not hold (a measured offset).
    pub(crate) offset_tokens: u64,
    pub(crate) trigger_tokens: u64,
    /// Whether the counts held estimates of events not counted yet.
    pub(crate) estimated: bool,
}

/// A request's overhead, and the parts of the request it was counted from.
#[derive(Debug)]
struct OverheadCache {
    system: Option<String>,
    live_context: Option<String>,
    tools: Vec<ToolSchema>,
    encoding: Encoding,
    sections: Sections,
}

impl TokenAccounting {
    /// Accounting with nothing learned yet, looking models up in `registry`.
    pub(crate) fn new(registry: Arc<ModelRegistry>) -> TokenAccounting {
        TokenAccounting {
            registry,
            recent_models: Vec::new(),
            calibration: CalibrationTable::default(),
            last_prepare: None,
            latest_overhead_tokens: None,
            unprepared_call_overhead_tokens: None,
            overhead_cache: None,
            overflow_attempts: 0,
        }
    }

    /// The registry's entry for `name`, remembered for the last few names
    /// asked (the request's model, the one a usage report named): an agent
    /// asks for the same model call after call, and a lookup matches the
    /// name against the whole table.
    pub(crate) fn model_info(&mut self, name: &str) -> ModelInfo {
        if let Some((_, info)) = self.recent_models.iter().find(|(n, _)| n == name) {
            return info.clone();
        }
        let info = self.registry.lookup(name);
        if self.recent_models.len() == RECENT_MODELS {
            self.recent_models.remove(0);
        }
        self.recent_models.push((name.to_owned(), info.clone()));
        info
    }

    /// Per-model calibration factors learned so far.
    pub(crate) fn calibration(&self) -> &CalibrationTable {
        &self.calibration
    }

    /// The calibration learned for `model`, or for any other name of the
    /// model it resolves to (`claude-sonnet-4-5`, `claude-sonnet-4-5-20250929`).
    pub(crate) fn calibration_for(&mut self, model: &str) -> Option<Calibration> {
        let family = self.model_info(model).family();
        self.calibration.get(&family)
    }

    /// Learns from events the log took: the usage they report calibrates
    /// the model it resolves to, and a model's answer ends a run of
    /// overflow recoveries (the call went through).
    pub(crate) fn observe(&mut self, events: &[Arc<Event>]) {
        for usage in events.iter().filter_map(|e| e.usage.as_ref()) {
            let Some(model) = &usage.model else { continue };
            let family = self.model_info(model).family();
            self.calibration.observe(&family, usage);
        }
        let answered = |e: &Arc<Event>| e.usage.is_some() || e.trace_type.is_model_output();
        if events.iter().any(answered) {
            self.overflow_attempts = 0;
        }
    }

    /// Gives the first reported usage in `fresh` our count of the prompt it
    /// measured, when that prompt is the context prepared last: the log
    /// holds `active_events`, as many as when it was prepared, and
    /// `transcript` is the view it was prepared from.
    pub(crate) fn pair_usage_with_last_prepare(
        &mut self,
        fresh: &mut [Event],
        active_events: usize,
        transcript: Option<&mut Transcript>,
    ) {
        let Some(usage) = fresh.iter_mut().find_map(|e| e.usage.as_mut()) else {
            return;
        };
        let paired = self
            .last_prepare
            .take_if(|last| last.events == active_events); // else events arrived in between
        match paired {
            Some(last) if usage.estimated_prompt_tokens.is_none() => {
                // Calibration and anchors learn from counts, not estimates:
                // the view is as it was sent, so counting it now corrects them.
                let transcript = transcript.filter(|_| last.estimated);
                let (before, after) = transcript.map_or((0, 0), |transcript| {
                    let before = transcript.totals().total;
                    transcript.count_now();
                    (before, transcript.totals().total)
                });
                let correct = |n: u64| n.saturating_sub(before).saturating_add(after);
                usage.estimated_prompt_tokens = Some(correct(last.counted_tokens));
                usage.estimated_view_tokens = Some(correct(last.view_tokens));
                usage.model.get_or_insert(last.model);
            }
            Some(_) => {}
            None => self.unprepared_call_overhead_tokens = self.latest_overhead_tokens,
        }
    }

    /// Whether `transcript` now passes the trigger of the last prepare.
    pub(crate) fn passes_last_trigger(&self, transcript: Option<&mut Transcript>) -> bool {
        match (transcript, &self.last_prepare) {
            (Some(transcript), Some(last)) => {
                let trigger = last.trigger_tokens.saturating_sub(last.offset_tokens);
                !transcript.is_below(trigger, Bound::Calibrated)
            }
            _ => false,
        }
    }

    /// Remembers what a prepare counted, for the usage reported for it.
    pub(crate) fn record_prepare(&mut self, last: LastPrepare) {
        self.last_prepare = Some(last);
    }

    /// What the last prepare for `model` counted, if the last was for it.
    pub(crate) fn last_count_for(&self, model: &str) -> Option<u64> {
        self.last_prepare
            .as_ref()
            .filter(|last| last.model == model)
            .map(|last| last.counted_tokens)
    }

    /// The request's own tokens (system prompt with memory, tool schemas,
    /// reply priming), counted once for as long as they stay the same.
    pub(crate) fn request_overhead(
        &mut self,
        request: &PrepareRequest,
        tokenizer: Tokenizer,
    ) -> Sections {
        if let Some(cached) = &self.overhead_cache {
            if cached.encoding == tokenizer.encoding()
                && cached.system == request.system
                && cached.live_context == request.live_context
                && cached.tools == request.tools
            {
                return cached.sections;
            }
        }
        let sections = count_overhead(request, tokenizer);
        self.overhead_cache = Some(OverheadCache {
            system: request.system.clone(),
            live_context: request.live_context.clone(),
            tools: request.tools.clone(),
            encoding: tokenizer.encoding(),
            sections,
        });
        sections
    }

    /// Remembers what the latest prepare counted beside the messages.
    pub(crate) fn note_overhead(&mut self, overhead_tokens: u64) {
        self.latest_overhead_tokens = Some(overhead_tokens);
    }

    /// Tokens the provider counts that the view does not hold — the hidden
    /// system prompt of an imported agent, the provider's own framing — from
    /// the last usage this model reported (the view's `anchor`). A measured
    /// figure: counting never overrides it, but it moves by as much as what
    /// agentmem counts beside the messages (`overhead` now) changed since
    /// that call (a new question recalls other memories; tools come and go).
    pub(crate) fn measured_offset(
        &mut self,
        model: &ModelInfo,
        overhead: u64,
        anchor: Option<&UsageAnchor>,
    ) -> Option<u64> {
        let anchor = anchor?;
        let measured = anchor
            .reported_prompt_tokens
            .saturating_sub(anchor.transcript_tokens_before);
        let offset = match anchor
            .counted_overhead
            .or(self.unprepared_call_overhead_tokens)
        {
            Some(then) => measured.saturating_add(overhead).saturating_sub(then),
            None => measured,
        };
        match &anchor.model {
            Some(name) => (self.model_info(name).family() == model.family()).then_some(offset),
            None => Some(offset),
        }
    }

    /// Counts one more overflow recovery since the last model call that
    /// went through, and returns how many that makes.
    pub(crate) fn next_overflow_attempt(&mut self) -> u32 {
        self.overflow_attempts = self.overflow_attempts.saturating_add(1);
        self.overflow_attempts
    }
}

#[cfg(test)]
#[path = "accounting_tests.rs"]
mod tests;
