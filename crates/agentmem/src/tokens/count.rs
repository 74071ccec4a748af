//! Message-level token counts, after OpenAI's published rules.
//!
//! A chat message costs [`TOKENS_PER_MESSAGE`] plus its role and content, and
//! every reply is primed with [`TOKENS_PER_REPLY`]. Tool schemas follow the
//! function-counting recipe of OpenAI's cookbook. Media have no text to count:
//! an image is estimated at [`IMAGE_TOKENS_ESTIMATE`].

use serde_json::Value;

use super::Tokenizer;
use crate::base::message::{Message, PartRef, Role};

/// Fixed cost of every chat message (`<|start|>role … <|end|>`).
pub(crate) const TOKENS_PER_MESSAGE: u64 = 3;
/// Every reply is primed with `<|start|>assistant<|message|>`.
pub(crate) const TOKENS_PER_REPLY: u64 = 3;
/// An image of unknown size, counted as a 1024×1024 image at high detail:
/// 85 base tokens plus 170 for each of four 512-pixel tiles.
pub(crate) const IMAGE_TOKENS_ESTIMATE: u64 = 765;
/// Per tool call inside an assistant message: the call's framing.
pub(crate) const TOKENS_PER_TOOL_CALL: u64 = 3;

/// Tool-schema counting constants (OpenAI cookbook, "counting function tokens").
const FUNCTION_INIT_TOKENS: i64 = 7;
const PROPERTIES_INIT_TOKENS: i64 = 3;
const PROPERTY_KEY_TOKENS: i64 = 3;
const ENUM_INIT_TOKENS: i64 = -3;
const ENUM_ITEM_TOKENS: i64 = 3;
const FUNCTIONS_END_TOKENS: i64 = 12;

/// The tokens of one message, split by what they are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenCounts {
    /// Everything, overhead included.
    pub total: u64,
    /// The part that is tool output.
    pub tool_output: u64,
    /// The part that is reasoning (sent back only where the target accepts it).
    pub reasoning: u64,
    /// The part in system messages.
    pub system: u64,
}

impl TokenCounts {
    /// Adds `other` to these counts.
    pub fn add(&mut self, other: TokenCounts) {
        self.total = self.total.saturating_add(other.total);
        self.tool_output = self.tool_output.saturating_add(other.tool_output);
        self.reasoning = self.reasoning.saturating_add(other.reasoning);
        self.system = self.system.saturating_add(other.system);
    }

    /// Takes `other` away from these counts.
    pub(crate) fn sub(&mut self, other: TokenCounts) {
        self.total = self.total.saturating_sub(other.total);
        self.tool_output = self.tool_output.saturating_sub(other.tool_output);
        self.reasoning = self.reasoning.saturating_sub(other.reasoning);
        self.system = self.system.saturating_sub(other.system);
    }
}

/// Counts one message: overhead, role, and every part.
///
/// ```
/// use agentmem::base::message::{Message, Role};
/// use agentmem::tokens::{count_message, Encoding};
/// let counts = count_message(&Message::text(Role::User, "Hello, world!"), Encoding::O200kBase.tokenizer());
/// assert_eq!(counts.total, 3 + 1 + 4); // overhead + "user" + text
/// ```
pub fn count_message(message: &Message, tokenizer: Tokenizer) -> TokenCounts {
    let mut counts = TokenCounts {
        total: TOKENS_PER_MESSAGE + tokenizer.count(role_name(message.role)) as u64,
        ..TokenCounts::default()
    };
    for part in &message.parts {
        counts.add(count_part(part, tokenizer));
    }
    if message.role == Role::System {
        counts.system = counts.total;
    }
    counts
}

/// Counts one part of a message.
pub(crate) fn count_part<'a>(part: impl Into<PartRef<'a>>, tokenizer: Tokenizer) -> TokenCounts {
    tally_part(&part.into(), |text| tokenizer.count(text) as u64)
}

/// At least [`count_part`] of the same part, without tokenizing: a byte-level
/// BPE never makes more tokens than bytes, nor the estimate more than chars.
pub(crate) fn count_part_at_most<'a>(part: impl Into<PartRef<'a>>) -> TokenCounts {
    tally_part(&part.into(), |text| text.len() as u64)
}

/// One part's tokens, with `count` giving those of each text in it.
fn tally_part(part: &PartRef<'_>, count: impl Fn(&str) -> u64) -> TokenCounts {
    match part {
        PartRef::Text(text) => TokenCounts {
            total: count(text),
            ..TokenCounts::default()
        },
        PartRef::Image(_) => TokenCounts {
            total: IMAGE_TOKENS_ESTIMATE,
            ..TokenCounts::default()
        },
        PartRef::ToolCall {
            id,
            name,
            arguments,
        } => TokenCounts {
            total: TOKENS_PER_TOOL_CALL
                + count(id)
                + count(name)
                + count(&arguments_text(arguments)),
            ..TokenCounts::default()
        },
        PartRef::ToolResult {
            call_id, content, ..
        } => {
            let output = count(content);
            TokenCounts {
                total: count(call_id) + output,
                tool_output: output,
                ..TokenCounts::default()
            }
        }
        PartRef::Reasoning { text, .. } => {
            let reasoning = count(text);
            TokenCounts {
                total: reasoning,
                reasoning,
                ..TokenCounts::default()
            }
        }
    }
}

/// The text of a tool call's arguments as the APIs carry it: a JSON string.
pub(crate) fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(raw) => raw.clone(),
        other => crate::base::json::to_string(other),
    }
}

/// The role as the chat format spells it.
pub(crate) fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

/// Counts tool schemas (`[{"name", "description", "parameters"}]`, or the
/// OpenAI `{"type": "function", "function": {…}}` wrapping) with the
/// cookbook's recipe. An empty list costs nothing.
///
/// ```
/// use agentmem::tokens::{count_tool_schemas, Encoding};
/// let tools = serde_json::json!([{"name": "read_file", "description": "Read a file.",
///     "parameters": {"type": "object", "properties": {"path": {"type": "string", "description": "Path."}}}}]);
/// assert!(count_tool_schemas(tools.as_array().unwrap(), Encoding::O200kBase.tokenizer()) > 20);
/// ```
pub fn count_tool_schemas(tools: &[Value], tokenizer: Tokenizer) -> u64 {
    if tools.is_empty() {
        return 0;
    }
    let count = |text: &str| tokenizer.count(text) as i64;
    let mut total = FUNCTIONS_END_TOKENS;
    for tool in tools {
        let function = tool.get("function").unwrap_or(tool);
        let field = |key: &str| {
            function
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        total += FUNCTION_INIT_TOKENS;
        total += count(&format!(
            "{}:{}",
            field("name"),
            field("description").trim_end_matches('.')
        ));
        let parameters = function
            .get("parameters")
            .or_else(|| function.get("input_schema"));
        let properties = parameters
            .and_then(|p| p.get("properties"))
            .and_then(Value::as_object);
        if let Some(properties) = properties.filter(|p| !p.is_empty()) {
            total += PROPERTIES_INIT_TOKENS;
            for (key, property) in properties {
                total += PROPERTY_KEY_TOKENS;
                if let Some(items) = property.get("enum").and_then(Value::as_array) {
                    total += ENUM_INIT_TOKENS;
                    for item in items {
                        total += ENUM_ITEM_TOKENS
                            + count(
                                &item
                                    .as_str()
                                    .map_or_else(|| item.to_string(), str::to_owned),
                            );
                    }
                }
                let kind = property.get("type").map_or_else(String::new, |t| {
                    t.as_str().map_or_else(|| t.to_string(), str::to_owned)
                });
                let description = property
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                total += count(&format!(
                    "{key}:{kind}:{}",
                    description.trim_end_matches('.')
                ));
            }
        }
    }
    total.max(0) as u64
}
