//! The token budget of a model call.
//!
//! `input_budget = context_window - max_output_tokens - safety_margin`: what
//! the prompt may use while leaving room for the reply and for counting error.
//! Compaction is due when the context passes `trigger_ratio × input_budget`.
//!
//! Unless a setting names them, both reserves scale with the window, so a
//! small window keeps room for the prompt:
//!
//! * `safety_margin = min(13,000, window / 8)`: counting error and provider
//!   framing grow with the prompt, and 13,000 tokens is what a large window
//!   needs (every window from 104,000 tokens gets exactly that);
//! * `max_output_tokens = min(the model's maximum output, window / 2)`: a
//!   model's maximum is often the whole window it shares with the prompt
//!   (GPT-4's 8,192 of 8,192, Mistral's models), a ceiling, not what a reply
//!   needs, and reserving it all left no input budget; OpenAI's, Anthropic's
//!   and Google's models of 128,000 tokens or more list at most half their
//!   window and keep their whole maximum.
//!
//! So GPT-4 (8,192 tokens) gets an input budget of 3,072, GPT-3.5 Turbo
//! (16,385) 10,241 and a local model of 16,384 with a 4,096-token reply
//! 10,240, where a fixed 13,000 margin left them nothing; GPT-4o keeps
//! 128,000 − 16,384 − 13,000 = 98,616.

use serde::{Deserialize, Serialize};

/// Tokens kept free for counting error and provider framing in a large
/// window; a smaller one keeps its size divided by
/// [`SAFETY_MARGIN_WINDOW_DIVISOR`].
pub(crate) const DEFAULT_SAFETY_MARGIN_TOKENS: u64 = 13_000;
/// The default safety margin is at most the window divided by this.
pub(crate) const SAFETY_MARGIN_WINDOW_DIVISOR: u64 = 8;
/// The model's maximum output is reserved up to the window divided by this.
pub(crate) const REPLY_RESERVE_WINDOW_DIVISOR: u64 = 2;
/// Compaction starts at this fraction of the input budget.
pub(crate) const DEFAULT_TRIGGER_RATIO: f64 = 0.8;

/// Budget settings as one layer gives them; unset fields fall through to the
/// layer below (request > session > agent > config file > model > defaults).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetSettings {
    /// The model's context window, in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// Tokens reserved for the reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    /// Tokens kept free for counting error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety_margin: Option<u64>,
    /// The share of the input budget at which compaction becomes due (0–1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_ratio: Option<f64>,
}

impl BudgetSettings {
    /// These settings, with `lower` filling what these leave unset.
    ///
    /// ```
    /// use agentmem::BudgetSettings;
    /// let request = BudgetSettings { trigger_ratio: Some(0.5), ..Default::default() };
    /// let agent = BudgetSettings { trigger_ratio: Some(0.9), safety_margin: Some(1_000), ..Default::default() };
    /// let merged = request.over(agent);
    /// assert_eq!((merged.trigger_ratio, merged.safety_margin), (Some(0.5), Some(1_000)));
    /// ```
    pub fn over(self, lower: BudgetSettings) -> BudgetSettings {
        BudgetSettings {
            context_window: self.context_window.or(lower.context_window),
            max_output_tokens: self.max_output_tokens.or(lower.max_output_tokens),
            safety_margin: self.safety_margin.or(lower.safety_margin),
            trigger_ratio: self.trigger_ratio.or(lower.trigger_ratio),
        }
    }

    /// Settings that give the prompt exactly `input_budget` tokens beside
    /// a reply of up to `max_output_tokens`: the window is the two plus
    /// `DEFAULT_SAFETY_MARGIN_TOKENS`, and all three are given, so no
    /// reserve scales with it.
    ///
    /// ```
    /// use agentmem::tokens::budget::{Budget, BudgetSettings};
    /// let settings = BudgetSettings::for_input_budget(16_000, 16_384);
    /// assert_eq!(Budget::resolve(128_000, 16_384, settings).input_budget(), 16_000);
    /// ```
    pub fn for_input_budget(input_budget: u64, max_output_tokens: u64) -> BudgetSettings {
        BudgetSettings {
            context_window: Some(
                input_budget
                    .saturating_add(max_output_tokens)
                    .saturating_add(DEFAULT_SAFETY_MARGIN_TOKENS),
            ),
            max_output_tokens: Some(max_output_tokens),
            safety_margin: Some(DEFAULT_SAFETY_MARGIN_TOKENS),
            trigger_ratio: None,
        }
    }

    /// Checks values a budget cannot work with.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(ratio) = self.trigger_ratio {
            if !(ratio > 0.0 && ratio <= 1.0) {
                return Err(format!(
                    "trigger_ratio {ratio} must be above 0 and at most 1"
                ));
            }
        }
        if self.context_window == Some(0) {
            return Err("context_window must be above 0".into());
        }
        Ok(())
    }
}

/// A resolved budget.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Budget {
    /// The model's context window, in tokens.
    pub context_window: u64,
    /// Tokens reserved for the reply.
    pub max_output_tokens: u64,
    /// Tokens kept free for counting error.
    pub safety_margin: u64,
    /// The share of the input budget at which compaction becomes due (0–1).
    pub trigger_ratio: f64,
}

impl Budget {
    /// The budget for a model with `context_window` and `max_output_tokens`,
    /// adjusted by `settings`. Reserves the settings leave unset scale with
    /// the window (see the module docs); those they give stand, a reply
    /// reserve never above the window.
    ///
    /// ```
    /// use agentmem::tokens::budget::{Budget, BudgetSettings};
    /// let gpt_4 = Budget::resolve(8_192, 8_192, BudgetSettings::default());
    /// assert_eq!((gpt_4.max_output_tokens, gpt_4.safety_margin), (4_096, 1_024));
    /// let given = BudgetSettings { safety_margin: Some(0), max_output_tokens: Some(8_000), ..Default::default() };
    /// assert_eq!(Budget::resolve(8_192, 8_192, given).input_budget(), 192);
    /// ```
    pub fn resolve(
        context_window: u64,
        max_output_tokens: u64,
        settings: BudgetSettings,
    ) -> Budget {
        let context_window = settings.context_window.unwrap_or(context_window);
        let reply_reserve = settings.max_output_tokens.unwrap_or_else(|| {
            max_output_tokens.min(context_window / REPLY_RESERVE_WINDOW_DIVISOR)
        });
        Budget {
            context_window,
            max_output_tokens: reply_reserve.min(context_window),
            safety_margin: settings
                .safety_margin
                .unwrap_or_else(|| default_safety_margin(context_window)),
            trigger_ratio: settings.trigger_ratio.unwrap_or(DEFAULT_TRIGGER_RATIO),
        }
    }

    /// What the prompt may use.
    ///
    /// ```
    /// use agentmem::tokens::budget::{Budget, BudgetSettings};
    /// let budget = Budget::resolve(200_000, 64_000, BudgetSettings::default());
    /// assert_eq!(budget.input_budget(), 200_000 - 64_000 - 13_000);
    /// assert_eq!(budget.trigger_tokens(), 98_400);
    /// ```
    pub fn input_budget(&self) -> u64 {
        self.context_window
            .saturating_sub(self.max_output_tokens)
            .saturating_sub(self.safety_margin)
    }

    /// The context size at which compaction is due.
    pub fn trigger_tokens(&self) -> u64 {
        (self.input_budget() as f64 * self.trigger_ratio).floor() as u64
    }
}

/// The safety margin of a window no setting gives one for.
fn default_safety_margin(context_window: u64) -> u64 {
    DEFAULT_SAFETY_MARGIN_TOKENS.min(context_window / SAFETY_MARGIN_WINDOW_DIVISOR)
}
