//! One module per transcript format, each with one entry point,
//! `parse(text: &str) -> Result<Imported, String>`.

mod agentmem_events;
pub(crate) mod anthropic;
mod claude_code;
mod codex;
pub(crate) mod openai_messages;
pub(crate) mod openhands;
pub(crate) mod provider;
pub(crate) mod responses;
mod swe_agent;

use crate::format::Format;
use crate::imported::Imported;
use crate::shape::Shape;

/// `text` read as `format`, or why it cannot be.
pub(crate) fn parse(format: Format, text: &str) -> Result<Imported, String> {
    match format {
        Format::Events => agentmem_events::parse(text),
        Format::OpenAiMessages => openai_messages::parse(text),
        Format::OpenAiResponses => provider::file_events(Shape::OpenAiResponses, "oair", text),
        Format::AnthropicMessages => provider::file_events(Shape::AnthropicMessages, "anth", text),
        Format::ClaudeCode => claude_code::parse(text),
        Format::Codex => codex::parse(text),
        Format::SweAgent => swe_agent::parse(text),
        Format::OpenHands => openhands::parse(text),
    }
}
