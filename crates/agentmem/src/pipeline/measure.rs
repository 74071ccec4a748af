//! The measurement stage: the shaped view rendered into the payload to send,
//! and how it stands against the model's budget (sections, counts,
//! calibration). [`PrepareRequest`] and [`Prepared`] are what
//! `Session::prepare` takes and gives back.

use serde::Serialize;
use serde_json::Value;

use crate::base::message::{messages_from_events, role_of, Message, Role};
use crate::pipeline::segments::RenderCache;
use crate::pipeline::strategy::ContextSettingsLayer;
use crate::pipeline::tiers::Action;
use crate::pipeline::transcript::{measure, message_count, ViewItem};
use crate::render::{frame, render, Payload, PromptCache, RenderRequest, Target, ToolSchema};
use crate::tokens::budget::{Budget, BudgetSettings};
use crate::tokens::count::{count_message, TOKENS_PER_REPLY};
use crate::tokens::registry::{ModelInfo, ModelSource};
use crate::tokens::TokenCounts;
use crate::tokens::{count_tool_schemas, Encoding, Tokenizer};

/// What to prepare a call for.
#[derive(Debug, Clone)]
pub struct PrepareRequest {
    /// The model, as the user names it (`gpt-4.1`, `anthropic/claude-sonnet-4-5`, …).
    pub model: String,
    /// The provider API the payload is rendered for.
    pub target: Target,
    /// The system prompt, if any.
    pub system: Option<String>,
    /// Tools the model may call.
    pub tools: Vec<ToolSchema>,
    /// Budget settings for this request only (the top layer).
    pub budget: BudgetSettings,
    /// Strategy and pipeline settings for this request only (the top layer).
    pub context: ContextSettingsLayer,
    /// Whether the payload marks where the provider may cache its prefix.
    pub cache: PromptCache,
    /// System text that changes from call to call, sent after the
    /// conversation so the prefix before it stays cached (see
    /// [`RenderRequest::live_context`]): the date, the files open in an
    /// editor. A session adds its working memory and the memories it
    /// recalled for the latest question.
    pub live_context: Option<String>,
}

impl PrepareRequest {
    /// A request for `model` rendered for `target`, with nothing else set.
    pub fn new(model: impl Into<String>, target: Target) -> Self {
        PrepareRequest {
            model: model.into(),
            target,
            system: None,
            tools: Vec::new(),
            budget: BudgetSettings::default(),
            context: ContextSettingsLayer::default(),
            cache: PromptCache::default(),
            live_context: None,
        }
    }
}

/// Tokens per part of the context.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Sections {
    /// The system prompt and system messages.
    pub system: u64,
    /// Injected long-term memory (MEMORY.md, facts, summaries).
    pub memory: u64,
    /// The session's working memory: the current task state.
    pub working_memory: u64,
    /// Tool schemas.
    pub tool_schemas: u64,
    /// Conversation messages other than tool output.
    pub history: u64,
    /// Tool results.
    pub tool_outputs: u64,
    /// Reasoning sent back (zero for targets that do not take it).
    pub reasoning: u64,
    /// Reply priming.
    pub reply: u64,
}

impl Sections {
    /// These sections with `other` added.
    pub fn plus(self, other: Sections) -> Sections {
        Sections {
            system: self.system.saturating_add(other.system),
            memory: self.memory.saturating_add(other.memory),
            working_memory: self.working_memory.saturating_add(other.working_memory),
            tool_schemas: self.tool_schemas.saturating_add(other.tool_schemas),
            history: self.history.saturating_add(other.history),
            tool_outputs: self.tool_outputs.saturating_add(other.tool_outputs),
            reasoning: self.reasoning.saturating_add(other.reasoning),
            reply: self.reply.saturating_add(other.reply),
        }
    }

    /// Every section added up.
    pub fn total(&self) -> u64 {
        [
            self.system,
            self.memory,
            self.working_memory,
            self.tool_schemas,
            self.history,
            self.tool_outputs,
            self.reasoning,
            self.reply,
        ]
        .into_iter()
        .fold(0u64, u64::saturating_add)
    }
}

/// A learned ratio of provider-reported to counted prompt tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Calibration {
    /// Provider-reported tokens per counted token.
    pub factor: f64,
    /// How many reported calls the factor was learned from.
    pub samples: u64,
}

/// How a prepared context stands.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextStats {
    /// The model, as the request named it.
    pub model: String,
    /// Where the model's limits came from; `unknown` means the default window was assumed.
    pub model_source: ModelSource,
    /// The target the payload was rendered for (`openai-chat`, …).
    pub target: String,
    /// The tokenizer encoding counted in (`o200k_base`, …).
    pub encoding: String,
    /// The resolved budget: window, output reserve, safety margin, trigger ratio.
    pub budget: Budget,
    /// Tokens the prompt may take: the window less the output reserve and the safety margin.
    pub input_budget: u64,
    /// The size at which compaction becomes due.
    pub trigger_tokens: u64,
    /// Tokens per part of the context (system, tools, messages, …).
    pub sections: Sections,
    /// The exact count of the payload.
    pub counted_tokens: u64,
    /// The last provider-reported prompt size plus the exact count of what came after it.
    pub anchored_tokens: Option<u64>,
    /// What decisions use: the anchored figure when there is one, else the
    /// count corrected by the model's calibration.
    pub context_tokens: u64,
    /// How many of `counted_tokens` are estimated from bytes: events that
    /// joined while the context was so far below the budget that no count of
    /// them could cross it (a byte-level BPE makes at most a token per byte),
    /// and below the trigger by more than a tenth over the densest text
    /// counted, so they are counted only when a check needs them (see
    /// [`Bound`](crate::pipeline::transcript::Bound)). 0 when the figures are all counted.
    pub estimated_tokens: u64,
    /// The model's learned calibration, when it has one.
    pub calibration: Option<Calibration>,
    /// Whether the context has reached the trigger.
    pub compaction_due: bool,
    /// Whether the context exceeds the input budget even after the pipeline ran.
    pub over_budget: bool,
    /// Messages in the payload.
    pub messages: usize,
    /// Events the view holds.
    pub events: usize,
    /// Tokens the pipeline's actions saved this time.
    pub tokens_saved: u64,
    /// What the pipeline did, in order.
    pub actions: Vec<Action>,
}

/// A payload ready to send, with its stats.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The request body for the target, ready to serialize and send.
    pub payload: Payload,
    /// How the context stands against the budget.
    pub stats: ContextStats,
}

/// The tokens a request adds around the view: system prompt and live
/// context (each counted as a system message), tool schemas and reply priming.
pub fn count_overhead(request: &PrepareRequest, tokenizer: Tokenizer) -> Sections {
    let tools_json: Vec<Value> = request.tools.iter().map(ToolSchema::to_json).collect();
    let system_message =
        |text: &String| count_message(&Message::text(Role::System, text), tokenizer).total;
    let system = [&request.system, &request.live_context];
    Sections {
        system: system.into_iter().flatten().map(system_message).sum(),
        tool_schemas: count_tool_schemas(&tools_json, tokenizer),
        reply: TOKENS_PER_REPLY,
        ..Sections::default()
    }
}

/// What the session measured for a prepare: the view's size, the
/// provider-measured offset (if any), the request's own tokens, and the
/// model's calibration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Measured {
    /// The view's totals, as [`measure`] gives them. The transcript keeps
    /// them as it grows, so a call need not go over the whole view again.
    pub view: TokenCounts,
    /// How many messages the view makes, as [`message_count`] gives it.
    pub messages: usize,
    pub offset: Option<u64>,
    /// [`count_overhead`] of the request.
    pub overhead: Sections,
    pub calibration: Option<Calibration>,
    /// Tokens of the view estimated, not counted (see
    /// [`Transcript::estimated_tokens`](crate::pipeline::transcript::Transcript::estimated_tokens)).
    pub estimated: u64,
}

/// What a call is counted and bounded by: the tokenizer, the model, its budget.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits<'a> {
    pub tokenizer: Tokenizer,
    pub model: &'a ModelInfo,
    pub budget: Budget,
}

/// Renders the shaped view `items` for `request` and measures it.
///
/// `offset` is what the provider measured beyond the view (see
/// `Session::prepare`); when there is one, the context size is the view plus
/// that offset — a measured figure — else the count, corrected by the
/// model's calibration where the tokenizer is not the provider's own.
pub(crate) fn render_and_measure(
    items: &[ViewItem],
    limits: Limits<'_>,
    request: &PrepareRequest,
    measured: Measured,
    actions: Vec<Action>,
    renders: &mut RenderCache,
) -> Prepared {
    let Measured {
        view,
        messages,
        offset,
        overhead,
        calibration,
        estimated,
    } = measured;
    let Limits {
        tokenizer,
        model,
        budget,
    } = limits;
    debug_assert_eq!(view, measure(items, tokenizer), "the view's kept totals");
    debug_assert_eq!(
        messages,
        message_count(items),
        "the view's kept message count"
    );
    let reasoning = if request.target.sends_reasoning() {
        view.reasoning
    } else {
        0
    };
    let sections = Sections {
        system: view.system,
        history: view
            .total
            .saturating_sub(view.tool_output)
            .saturating_sub(view.reasoning)
            .saturating_sub(view.system),
        tool_outputs: view.tool_output,
        reasoning,
        ..Sections::default()
    }
    .plus(overhead);
    let counted_tokens = sections.total();
    let anchored_tokens = offset.map(|o| o.saturating_add(view.total));
    let calibrated = match calibration {
        Some(c) if !is_exact(tokenizer.encoding(), &request.model) => {
            (counted_tokens as f64 * c.factor).round() as u64
        }
        Some(_) | None => counted_tokens,
    };
    let context_tokens = anchored_tokens.unwrap_or(calibrated);
    let for_messages = |messages| RenderRequest {
        model: &request.model,
        system: request.system.as_deref(),
        messages,
        tools: &request.tools,
        max_output_tokens: budget.max_output_tokens,
        cache: request.cache,
        live_context: request.live_context.as_deref(),
    };
    // The frame reads only system messages (two APIs lift them out of the list).
    let system_messages = messages_from_events(
        items
            .iter()
            .map(|i| &*i.event)
            .filter(|e| role_of(e) == Role::System),
    );
    let frame = frame(request.target, &for_messages(&system_messages));
    let payload = Payload::new(frame, renders.segments(request.target, items));
    debug_assert_eq!(
        payload,
        render(
            request.target,
            &for_messages(&crate::pipeline::transcript::messages_of(items))
        ),
        "rendering in segments must give what rendering whole gives"
    );
    let tokens_saved = actions.iter().map(Action::tokens_saved).sum();
    Prepared {
        payload,
        stats: ContextStats {
            model: request.model.clone(),
            model_source: model.source,
            target: request.target.name().to_owned(),
            encoding: tokenizer.encoding().name().to_owned(),
            input_budget: budget.input_budget(),
            trigger_tokens: budget.trigger_tokens(),
            budget,
            sections,
            counted_tokens,
            anchored_tokens,
            context_tokens,
            estimated_tokens: estimated,
            calibration,
            compaction_due: context_tokens >= budget.trigger_tokens(),
            over_budget: context_tokens > budget.input_budget(),
            messages,
            events: items.len(),
            tokens_saved,
            actions,
        },
    }
}

/// Whether our count is the provider's own (OpenAI models in their encoding).
fn is_exact(encoding: Encoding, model: &str) -> bool {
    encoding != Encoding::Approximate
        && Encoding::for_model(model) == encoding
        && is_openai_model(model)
}

fn is_openai_model(model: &str) -> bool {
    let name = model
        .rsplit([':', '/'])
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    ["gpt-", "o1", "o3", "o4", "chatgpt"]
        .iter()
        .any(|p| name.starts_with(p))
}

/// The ratios of a provider's prompt size to agentmem's count that a
/// tokenizer can explain. Current models' tokenizers count the same text
/// within about a third of o200k_base (Claude's about 1.1 to 1.3 times it);
/// a report outside measured another prompt than the one counted (the
/// agent's own wrapping, cached tokens left out of the figure), which the
/// usage anchor takes as measured and a factor applied to every count must not.
pub(crate) const PLAUSIBLE_REPORTED_PER_COUNTED: std::ops::RangeInclusive<f64> = 0.5..=2.0;

/// How many models' factors a calibration table keeps: the models reported
/// most recently.
pub(crate) const MAX_CALIBRATED_MODELS: usize = 16;

/// Per-model calibration learned from events that carry both figures, filed
/// under the model's family ([`ModelInfo::family`]) so that every spelling
/// of a model shares it. Bounded: reports outside
/// `PLAUSIBLE_REPORTED_PER_COUNTED` are ignored, so every factor lies in
/// it, and at most `MAX_CALIBRATED_MODELS` models are kept.
#[derive(Debug, Clone, Default)]
pub struct CalibrationTable {
    /// (family, sum of ratios, samples), the model reported last at the end.
    by_family: Vec<(String, f64, u64)>,
}

impl CalibrationTable {
    /// Learns from a usage of the model of `family`, when it has both the
    /// reported and agentmem's own count of the prompt and they are plausible.
    pub(crate) fn observe(&mut self, family: &str, usage: &crate::base::event::Usage) {
        let Some(counted) = usage.estimated_prompt_tokens.filter(|&n| n > 0) else {
            return;
        };
        let ratio = usage.prompt_tokens as f64 / counted as f64;
        if !PLAUSIBLE_REPORTED_PER_COUNTED.contains(&ratio) {
            return;
        }
        let (mut sum, mut samples) = (0.0, 0);
        if let Some(at) = self.by_family.iter().position(|(f, ..)| f == family) {
            (_, sum, samples) = self.by_family.remove(at);
        } else if self.by_family.len() == MAX_CALIBRATED_MODELS {
            self.by_family.remove(0);
        }
        self.by_family
            .push((family.to_owned(), sum + ratio, samples.saturating_add(1)));
    }

    /// The mean factor of the model of `family` ([`ModelInfo::family`]).
    pub fn get(&self, family: &str) -> Option<Calibration> {
        self.all()
            .find(|(name, _)| *name == family)
            .map(|(_, calibration)| calibration)
    }

    /// Every model's factor, by family, the model reported last at the end.
    pub fn all(&self) -> impl Iterator<Item = (&str, Calibration)> {
        self.by_family.iter().map(|(family, sum, samples)| {
            (
                family.as_str(),
                Calibration {
                    factor: sum / *samples as f64,
                    samples: *samples,
                },
            )
        })
    }
}
