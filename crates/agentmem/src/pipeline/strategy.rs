//! How a session keeps its context inside the budget, and the settings each
//! way takes.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Most recent tool results microcompaction leaves whole.
pub(crate) const DEFAULT_KEEP_TOOL_RESULTS: usize = 5;
/// Completed turns kept verbatim after a compaction (the current turn is kept too).
pub(crate) const DEFAULT_RAW_TAIL_TURNS: usize = 4;
/// User messages kept through a compaction, most recent first, up to this many tokens.
pub(crate) const DEFAULT_KEPT_USER_MESSAGE_TOKENS: u64 = 20_000;
/// The most tokens a compaction summary may take.
pub(crate) const DEFAULT_SUMMARY_MAX_TOKENS: u64 = 20_000;
/// Consecutive summarizer failures before compaction falls back to trimming.
pub(crate) const SUMMARIZER_FAILURES_BEFORE_FALLBACK: u32 = 3;

/// A way of shrinking the context once it passes the trigger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// Send everything; report when the budget is exceeded.
    None,
    /// Drop the oldest whole turns.
    Trim,
    /// Summarize everything but the last turns, persistently.
    Summarize,
    /// Replace old tool results with `⟦removed: …⟧` placeholders.
    Placeholder,
    /// The tiers in order, stopping as soon as the context is under the trigger:
    /// tool-result budgeting, snip, microcompact, autocompact.
    #[default]
    Auto,
}

impl Strategy {
    /// The name used in configuration and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::None => "none",
            Strategy::Trim => "trim",
            Strategy::Summarize => "summarize",
            Strategy::Placeholder => "placeholder",
            Strategy::Auto => "auto",
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Strategy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        [
            Strategy::None,
            Strategy::Trim,
            Strategy::Summarize,
            Strategy::Placeholder,
            Strategy::Auto,
        ]
        .into_iter()
        .find(|strategy| strategy.name() == s)
        .ok_or_else(|| {
            format!("unknown strategy {s:?}; use none, trim, summarize, placeholder or auto")
        })
    }
}

/// When an automatic compaction's summary is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompactionTiming {
    /// In the prepare that finds it due, before the call is rendered.
    #[default]
    Inline,
    /// On a thread of its own while the model answers: the prepare that
    /// finds it due sends the context without it, and the first prepare
    /// that finds the draft ready applies it. No prepare waits for a draft:
    /// until it is ready the budget is kept by the cheap tiers (tool results
    /// cut, repeats dropped, old results replaced by placeholders) and, when
    /// the context is over the budget, by leaving the oldest turns out of
    /// the call. Which call applies it depends on how fast the summarizer
    /// is; `Session::wait_for_draft` makes it the next one.
    Background,
}

impl CompactionTiming {
    /// The name used in configuration and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            CompactionTiming::Inline => "inline",
            CompactionTiming::Background => "background",
        }
    }
}

impl FromStr for CompactionTiming {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        [CompactionTiming::Inline, CompactionTiming::Background]
            .into_iter()
            .find(|timing| timing.name() == s)
            .ok_or_else(|| format!("unknown compaction timing {s:?}; use inline or background"))
    }
}

/// Whether long-term memory (MEMORY.md, project files, what earlier
/// sessions left) goes into a prepared context. The session's working
/// memory is its own state, and goes in either way. Read from `"on"` or
/// `"off"`, or from `true` or `false`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryInjection {
    /// Long-term memory goes into the context.
    #[default]
    On,
    /// Long-term memory is left out.
    Off,
}

impl MemoryInjection {
    /// The name used in configuration and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            MemoryInjection::On => "on",
            MemoryInjection::Off => "off",
        }
    }
}

impl<'de> Deserialize<'de> for MemoryInjection {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        match serde_json::Value::deserialize(deserializer)? {
            serde_json::Value::Bool(true) => Ok(MemoryInjection::On),
            serde_json::Value::Bool(false) => Ok(MemoryInjection::Off),
            serde_json::Value::String(name) => name.parse().map_err(D::Error::custom),
            other => Err(D::Error::custom(format!(
                "memory injection is on or off (or true or false), not {other}"
            ))),
        }
    }
}

impl FromStr for MemoryInjection {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        [MemoryInjection::On, MemoryInjection::Off]
            .into_iter()
            .find(|injection| injection.name() == s)
            .ok_or_else(|| format!("unknown memory injection {s:?}; use on or off"))
    }
}

/// Pipeline settings as one layer gives them (request > session > agent > file > defaults).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextSettingsLayer {
    /// How the context is kept inside the budget (`compact`, `trim`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<Strategy>,
    /// `trim`: keep at most this many turns, whatever the budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<usize>,
    /// The newest tool results kept whole when older ones become placeholders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_tool_results: Option<usize>,
    /// Recent turns a compaction keeps verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_tail_turns: Option<usize>,
    /// Tokens of recent user messages a compaction keeps verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_user_message_tokens: Option<u64>,
    /// The compaction summary's size limit, in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_max_tokens: Option<u64>,
    /// Tools whose latest result survives compaction (e.g. a todo list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protected_tools: Option<Vec<String>>,
    /// Whether a compaction is drafted inline or in the background.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction_timing: Option<CompactionTiming>,
    /// Whether long-term memory is injected (`memory = "off"` leaves it out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryInjection>,
}

impl ContextSettingsLayer {
    /// This layer, with `lower` filling what it leaves unset.
    pub fn over(self, lower: ContextSettingsLayer) -> ContextSettingsLayer {
        ContextSettingsLayer {
            strategy: self.strategy.or(lower.strategy),
            max_turns: self.max_turns.or(lower.max_turns),
            keep_tool_results: self.keep_tool_results.or(lower.keep_tool_results),
            raw_tail_turns: self.raw_tail_turns.or(lower.raw_tail_turns),
            kept_user_message_tokens: self
                .kept_user_message_tokens
                .or(lower.kept_user_message_tokens),
            summary_max_tokens: self.summary_max_tokens.or(lower.summary_max_tokens),
            protected_tools: self.protected_tools.or(lower.protected_tools),
            compaction_timing: self.compaction_timing.or(lower.compaction_timing),
            memory: self.memory.or(lower.memory),
        }
    }

    /// The settings with defaults for what no layer set.
    pub fn resolve(&self) -> PipelineSettings {
        PipelineSettings {
            strategy: self.strategy.unwrap_or_default(),
            max_turns: self.max_turns,
            keep_tool_results: self.keep_tool_results.unwrap_or(DEFAULT_KEEP_TOOL_RESULTS),
            raw_tail_turns: self.raw_tail_turns.unwrap_or(DEFAULT_RAW_TAIL_TURNS),
            kept_user_message_tokens: self
                .kept_user_message_tokens
                .unwrap_or(DEFAULT_KEPT_USER_MESSAGE_TOKENS),
            summary_max_tokens: self
                .summary_max_tokens
                .unwrap_or(DEFAULT_SUMMARY_MAX_TOKENS),
            protected_tools: self.protected_tools.clone().unwrap_or_default(),
            compaction_timing: self.compaction_timing.unwrap_or_default(),
            memory: self.memory.unwrap_or_default(),
        }
    }
}

/// Resolved pipeline settings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PipelineSettings {
    /// How the context is kept inside the budget.
    pub strategy: Strategy,
    /// `trim`: keep at most this many turns, whatever the budget.
    pub max_turns: Option<usize>,
    /// The newest tool results kept whole when older ones become placeholders.
    pub keep_tool_results: usize,
    /// Recent turns a compaction keeps verbatim.
    pub raw_tail_turns: usize,
    /// Tokens of recent user messages a compaction keeps verbatim.
    pub kept_user_message_tokens: u64,
    /// The compaction summary's size limit, in tokens.
    pub summary_max_tokens: u64,
    /// Tools whose latest result survives compaction.
    pub protected_tools: Vec<String>,
    /// Whether a compaction is drafted inline or in the background.
    pub compaction_timing: CompactionTiming,
    /// Whether long-term memory is injected.
    pub memory: MemoryInjection,
}

impl PipelineSettings {
    /// These settings as a layer that sets every field.
    pub(crate) fn as_layer(&self) -> ContextSettingsLayer {
        ContextSettingsLayer {
            strategy: Some(self.strategy),
            max_turns: self.max_turns,
            keep_tool_results: Some(self.keep_tool_results),
            raw_tail_turns: Some(self.raw_tail_turns),
            kept_user_message_tokens: Some(self.kept_user_message_tokens),
            summary_max_tokens: Some(self.summary_max_tokens),
            protected_tools: Some(self.protected_tools.clone()),
            compaction_timing: Some(self.compaction_timing),
            memory: Some(self.memory),
        }
    }
}

impl Default for PipelineSettings {
    fn default() -> Self {
        ContextSettingsLayer::default().resolve()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_injection_reads_its_names_and_booleans_and_refuses_anything_else() {
        let read = |json: &str| serde_json::from_str::<MemoryInjection>(json);
        assert_eq!(read("\"off\"").unwrap(), MemoryInjection::Off);
        assert_eq!(read("true").unwrap(), MemoryInjection::On);
        assert_eq!(read("false").unwrap(), MemoryInjection::Off);
        assert!(read("\"maybe\"")
            .unwrap_err()
            .to_string()
            .contains("use on or off"));
        assert!(read("3").unwrap_err().to_string().contains("on or off"));
        let layer: ContextSettingsLayer = toml::from_str("memory = false").unwrap();
        assert_eq!(layer.memory, Some(MemoryInjection::Off));
    }
}
