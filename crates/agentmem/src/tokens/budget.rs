//! The token budget of a model call.
//!
//! `input_budget = context_window - max_output_tokens - safety_margin`: what
//! the prompt may use while leaving room for the reply and for counting error.
//! Compaction is due when the context passes `trigger_ratio × input_budget`.

use serde::{Deserialize, Serialize};

/// Tokens kept free for counting error and provider framing.
pub const DEFAULT_SAFETY_MARGIN_TOKENS: u64 = 13_000;
/// Compaction starts at this fraction of the input budget.
pub const DEFAULT_TRIGGER_RATIO: f64 = 0.8;

/// Budget settings as one layer gives them; unset fields fall through to the
/// layer below (request > session > agent > config file > model > defaults).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety_margin: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_ratio: Option<f64>,
}

impl BudgetSettings {
    /// These settings, with `lower` filling what these leave unset.
    ///
    /// ```
    /// use agentmem::tokens::budget::BudgetSettings;
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
    pub context_window: u64,
    pub max_output_tokens: u64,
    pub safety_margin: u64,
    pub trigger_ratio: f64,
}

impl Budget {
    /// The budget for a model with `context_window` and `max_output_tokens`,
    /// adjusted by `settings`.
    pub fn resolve(
        context_window: u64,
        max_output_tokens: u64,
        settings: BudgetSettings,
    ) -> Budget {
        let context_window = settings.context_window.unwrap_or(context_window);
        Budget {
            context_window,
            // A reply can never use more than the window.
            max_output_tokens: settings
                .max_output_tokens
                .unwrap_or(max_output_tokens)
                .min(context_window),
            safety_margin: settings
                .safety_margin
                .unwrap_or(DEFAULT_SAFETY_MARGIN_TOKENS),
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
