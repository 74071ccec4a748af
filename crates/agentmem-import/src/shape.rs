//! The provider shapes an agent's messages and responses come in.

use std::fmt;

/// A provider's shape of messages and responses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// OpenAI Chat Completions: `{role, content, tool_calls, tool_call_id}`
    /// messages; a `chat.completion` response.
    OpenAiChat,
    /// OpenAI Responses: input and output items (`message`, `function_call`,
    /// `function_call_output`, `reasoning`, …); a `response` object.
    OpenAiResponses,
    /// Anthropic Messages: `{role, content}` with content blocks; a `message`
    /// response.
    AnthropicMessages,
}

impl Shape {
    /// Every shape, in the order messages list them.
    pub const ALL: [Shape; 3] = [
        Shape::OpenAiChat,
        Shape::OpenAiResponses,
        Shape::AnthropicMessages,
    ];

    /// The shape's name: `openai-chat`, `openai-responses`, `anthropic`.
    pub fn name(self) -> &'static str {
        match self {
            Shape::OpenAiChat => "openai-chat",
            Shape::OpenAiResponses => "openai-responses",
            Shape::AnthropicMessages => "anthropic",
        }
    }

    /// The shape with this `name`, if any.
    pub fn from_name(name: &str) -> Option<Shape> {
        Shape::ALL.into_iter().find(|shape| shape.name() == name)
    }

    /// The names of all shapes, comma-separated, for messages.
    pub fn names() -> String {
        Shape::ALL.map(Shape::name).join(", ")
    }

    pub(crate) fn source_event(self) -> String {
        format!("native:{}", self.name())
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
