//! The transcript formats agentmem can import, by name.

use std::fmt;

/// A transcript format agentmem can import.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// agentmem's own events, one JSON object a line (also the neutral workload format).
    Events,
    /// A JSON list of OpenAI chat messages (`{role, content, tool_calls, tool_call_id}`),
    /// or an object holding one under `messages`.
    OpenAiMessages,
    /// A JSON list of OpenAI Responses API items (`message`, `function_call`,
    /// `function_call_output`, `reasoning`, …), or an object holding one
    /// under `input`: an OpenAI Agents SDK session's items, say.
    OpenAiResponses,
    /// A JSON list of Anthropic messages (`{role, content}` with content
    /// blocks), or a request object holding one under `messages` (and its
    /// `system`).
    AnthropicMessages,
    /// A Claude Code session log (`~/.claude/projects/<project>/<session>.jsonl`).
    ClaudeCode,
    /// A Codex CLI rollout (`~/.codex/sessions/…/rollout-*.jsonl`).
    Codex,
    /// A SWE-agent trajectory (`*.traj`).
    SweAgent,
    /// An OpenHands event list (JSON), or the agent SDK's ("V1") events as a
    /// JSON list or one a line (JSONL).
    OpenHands,
}

impl Format {
    /// Every format, in the order `--format` lists them.
    pub const ALL: [Format; 8] = [
        Format::Events,
        Format::OpenAiMessages,
        Format::OpenAiResponses,
        Format::AnthropicMessages,
        Format::ClaudeCode,
        Format::Codex,
        Format::SweAgent,
        Format::OpenHands,
    ];

    /// The name used on the command line and in `source_event` (`import:<name>`).
    pub fn name(self) -> &'static str {
        match self {
            Format::Events => "events",
            Format::OpenAiMessages => "openai-messages",
            Format::OpenAiResponses => "openai-responses",
            Format::AnthropicMessages => "anthropic-messages",
            Format::ClaudeCode => "claude-code",
            Format::Codex => "codex",
            Format::SweAgent => "swe-agent",
            Format::OpenHands => "openhands",
        }
    }

    /// The format with this `name`, if any.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The names of all formats, comma-separated, for messages.
    pub fn names() -> String {
        Format::ALL.map(Format::name).join(", ")
    }

    /// The `source_event` of the events imported from this format.
    pub(crate) fn source_event(self) -> String {
        format!("import:{}", self.name())
    }

    /// How a transcript in this format holds its records.
    pub(crate) fn layout(self, text: &str) -> Layout {
        match self {
            Format::Events | Format::ClaudeCode | Format::Codex => Layout::Lines,
            Format::OpenAiMessages
            | Format::OpenAiResponses
            | Format::AnthropicMessages
            | Format::SweAgent => Layout::Document,
            Format::OpenHands => match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                Ok(_) => Layout::Document,
                Err(_) => Layout::Lines,
            },
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a transcript's text holds its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// One record a line: a damaged line costs that record.
    Lines,
    /// One JSON document: its lines are not records of their own.
    Document,
}
