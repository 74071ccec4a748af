//! Renderers: provider-neutral messages in, one provider's request payload out.
//!
//! Each renderer follows its API's rules for where the system prompt goes, how
//! tool calls and results are encoded, which roles must alternate, and whether
//! reasoning items may be sent back.

mod anthropic;
mod gemini;
mod openai_chat;
mod openai_responses;
mod payload;

pub use payload::Segment;
pub(crate) use payload::SegmentList;
pub use payload::{Parts, Payload};

use std::fmt;
use std::str::FromStr;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::base::message::{Message, MessageRef};

/// A provider API to render for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// OpenAI Chat Completions (and every OpenAI-compatible server).
    OpenAiChat,
    /// OpenAI Responses.
    OpenAiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Gemini generateContent.
    Gemini,
}

impl Target {
    /// Every target, in the order `--target` lists them.
    pub const ALL: [Target; 4] = [
        Target::OpenAiChat,
        Target::OpenAiResponses,
        Target::Anthropic,
        Target::Gemini,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Target::OpenAiChat => "openai-chat",
            Target::OpenAiResponses => "openai-responses",
            Target::Anthropic => "anthropic",
            Target::Gemini => "gemini",
        }
    }

    /// The API a model is usually reached through: Anthropic for Claude,
    /// Gemini for Gemini, OpenAI Chat Completions for everything else.
    ///
    /// ```
    /// use agentmem::Target;
    /// assert_eq!(Target::for_model("anthropic/claude-sonnet-4-5"), Target::Anthropic);
    /// assert_eq!(Target::for_model("llama3.1:8b"), Target::OpenAiChat);
    /// ```
    pub fn for_model(model: &str) -> Target {
        let name = model.to_ascii_lowercase();
        if name.contains("claude") {
            Target::Anthropic
        } else if name.contains("gemini") {
            Target::Gemini
        } else {
            Target::OpenAiChat
        }
    }

    /// The field of a request body that holds the message list.
    ///
    /// ```
    /// use agentmem::Target;
    /// assert_eq!(Target::Gemini.list_key(), "contents");
    /// ```
    pub fn list_key(self) -> &'static str {
        match self {
            Target::OpenAiChat | Target::Anthropic => "messages",
            Target::OpenAiResponses => "input",
            Target::Gemini => "contents",
        }
    }

    /// Whether reasoning items go back to the model in this API: Responses
    /// takes reasoning items (encrypted content included), Anthropic takes
    /// signed thinking blocks; Chat Completions and Gemini take none.
    pub(crate) fn sends_reasoning(self) -> bool {
        match self {
            Target::OpenAiResponses | Target::Anthropic => true,
            Target::OpenAiChat | Target::Gemini => false,
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Target {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Target::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown target {s:?}; use openai-chat, openai-responses, anthropic or gemini"
                )
            })
    }
}

/// A tool the model may call, provider-neutral.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSchema {
    /// The tool's name, as the model calls it.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    pub parameters: Value,
}

impl ToolSchema {
    /// Reads a tool schema in any of the common shapes: neutral
    /// `{name, description, parameters}`, OpenAI Chat `{type: "function",
    /// function: {…}}`, or Anthropic `{name, description, input_schema}`.
    ///
    /// ```
    /// use agentmem::ToolSchema;
    /// let openai = serde_json::json!({"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}});
    /// assert_eq!(ToolSchema::from_json(&openai).unwrap().name, "ls");
    /// ```
    pub fn from_json(value: &Value) -> Result<ToolSchema, String> {
        let function = value.get("function").unwrap_or(value);
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| format!("a tool schema needs a \"name\": {value}"))?;
        Ok(ToolSchema {
            name: name.to_owned(),
            description: function
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            parameters: function
                .get("parameters")
                .or_else(|| function.get("input_schema"))
                .or_else(|| function.get("parametersJsonSchema"))
                .cloned()
                .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}})),
        })
    }

    /// The neutral JSON form, `{name, description, parameters}`.
    pub fn to_json(&self) -> Value {
        serde_json::json!({"name": self.name, "description": self.description, "parameters": self.parameters})
    }
}

/// What a renderer needs.
#[derive(Debug, Clone, Copy)]
pub struct RenderRequest<'a> {
    /// The model the payload is for.
    pub model: &'a str,
    /// The system prompt (instructions and lasting memory), if any.
    pub system: Option<&'a str>,
    /// The provider-neutral messages to render.
    pub messages: &'a [Message],
    /// Tools the model may call.
    pub tools: &'a [ToolSchema],
    /// The most tokens the reply may use (required by Anthropic).
    pub max_output_tokens: u64,
    /// Whether the body asks the provider to cache its prefix.
    pub cache: PromptCache,
    /// System text that changes from call to call (the working memory,
    /// memories recalled for the latest question), sent after the
    /// conversation: everything before it then stays the prefix the
    /// provider has cached. Chat Completions gets a closing system message,
    /// Responses a closing developer message; Anthropic and Gemini add it
    /// to the closing user message (Gemini only when that holds no function
    /// responses), else to the system prompt. With [`PromptCache::Off`] it
    /// ends the system prompt.
    pub live_context: Option<&'a str>,
}

/// Whether a request body is laid out for the provider's prefix cache.
///
/// A long agent session sends the same prefix call after call, and a cached
/// prefix is read at a tenth of the input price, but only while it stays
/// byte for byte the same. OpenAI and Gemini cache prefixes by themselves;
/// Anthropic caches only up to the breakpoints a request marks
/// (`cache_control`), so without marks every call of a tool loop pays for
/// the whole context again.
///
/// ```
/// use agentmem::base::message::{Message, Role};
/// use agentmem::render::{render, PromptCache, RenderRequest, Target};
/// let messages = [Message::text(Role::User, "hi")];
/// let mut request = RenderRequest {
///     model: "claude-sonnet-4-5",
///     system: Some("Be brief."),
///     messages: &messages,
///     tools: &[],
///     max_output_tokens: 1024,
///     cache: PromptCache::On,
///     live_context: Some("Today is Tuesday."),
/// };
/// let body = render(Target::Anthropic, &request);
/// assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
/// assert_eq!(body["messages"][0]["content"][0]["cache_control"]["type"], "ephemeral");
/// assert_eq!(body["messages"][0]["content"][1]["text"], "Today is Tuesday.");
/// request.cache = PromptCache::Off;
/// let plain = render(Target::Anthropic, &request);
/// assert_eq!(plain["system"], "Be brief.\n\nToday is Tuesday.");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum PromptCache {
    /// Laid out for the cache: breakpoints where the API takes them
    /// (Anthropic: after the tools and system prompt, and after the
    /// conversation's last block), and the live context after the
    /// conversation, so the next call of an agent loop reads everything
    /// sent before from the cache.
    #[default]
    On,
    /// A plain body: no marks, and the live context at the end of the
    /// system prompt. For a one-off call (Anthropic charges a cache write
    /// at 1.25 times the input price), or a server that rejects cache marks
    /// or a system message after the conversation (strict chat templates).
    Off,
}

impl FromStr for PromptCache {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "on" => Ok(PromptCache::On),
            "off" => Ok(PromptCache::Off),
            other => Err(format!(
                "unknown prompt cache setting {other:?}; use on or off"
            )),
        }
    }
}

/// Removes the cache marks ([`PromptCache`]) from a rendered body: they say
/// where the provider may cache, they are not content, so two bodies share
/// a cached prefix as far as their text without marks agrees.
///
/// ```
/// use serde_json::json;
/// let mut body = json!({"system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]});
/// agentmem::render::remove_cache_marks(&mut body);
/// assert_eq!(body, json!({"system": [{"type": "text", "text": "Be brief."}]}));
/// ```
pub fn remove_cache_marks(body: &mut Value) {
    match body {
        Value::Object(fields) => {
            fields.remove("cache_control");
            fields.values_mut().for_each(remove_cache_marks);
        }
        Value::Array(items) => items.iter_mut().for_each(remove_cache_marks),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

/// Renders `request` as the request body of `target`'s API.
pub fn render(target: Target, request: &RenderRequest<'_>) -> Value {
    let frame = frame(target, request);
    let list = entries(target, request.messages, Place::Start);
    frame.into_value(list)
}

/// A request body around its message list: what [`render`] makes of the
/// request without its conversation. System messages of `request.messages`
/// count (Anthropic and Gemini lift them out of the list); the rest is not
/// read.
pub fn frame(target: Target, request: &RenderRequest<'_>) -> Frame {
    let system_with_live;
    let request = match (request.cache, request.live_context) {
        (PromptCache::Off, Some(live)) => {
            system_with_live = match request.system {
                Some(system) => format!("{system}\n\n{live}"),
                None => live.to_owned(),
            };
            &RenderRequest {
                system: Some(&system_with_live),
                live_context: None,
                ..*request
            }
        }
        (PromptCache::On | PromptCache::Off, _) => request,
    };
    match target {
        Target::OpenAiChat => openai_chat::frame(request),
        Target::OpenAiResponses => openai_responses::frame(request),
        Target::Anthropic => anthropic::frame(request),
        Target::Gemini => gemini::frame(request),
    }
}

/// The message list's entries for `messages`, in `target`'s shape, for
/// `place` in the list.
///
/// Rendering a conversation in pieces gives the same entries as rendering it
/// whole only where no entry spans a cut: see [`Segment`].
pub fn entries(target: Target, messages: &[Message], place: Place) -> Vec<Value> {
    match target {
        Target::OpenAiChat => openai_chat::entries(messages),
        Target::OpenAiResponses => openai_responses::entries(messages),
        Target::Anthropic => anthropic::entries(messages, place),
        Target::Gemini => gemini::entries(messages, place),
    }
}

/// The entries of [`entries`], serialized: what a [`Segment`] keeps.
/// Chat Completions' are written straight from the messages; the other
/// APIs' are built as values first.
pub(crate) fn raw_entries(
    target: Target,
    messages: &[MessageRef<'_>],
    place: Place,
) -> Vec<Box<RawValue>> {
    match target {
        Target::OpenAiChat => openai_chat::raw_entries(messages),
        Target::OpenAiResponses | Target::Anthropic | Target::Gemini => {
            let messages: Vec<Message> = messages.iter().map(MessageRef::to_message).collect();
            entries(target, &messages, place)
                .iter()
                .map(crate::base::json::to_raw_value)
                .collect()
        }
    }
}

/// Where rendered entries go in the message list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// At its start, where APIs that want the user first (Anthropic, Gemini)
    /// get a `(continued)` user entry before an assistant one.
    Start,
    /// After entries of the other side, where the assistant may come first.
    After,
}

/// A request body without its message list.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// Every field of the body but the list.
    head: Map<String, Value>,
    /// The list's field: `messages`, `input` or `contents`.
    list_key: &'static str,
    /// Entries that come before the conversation's own (Chat Completions'
    /// system message).
    lead: Vec<Value>,
    /// How the list ends.
    end: ListEnd,
}

/// What a list gets at its end beyond its entries as rendered: the live
/// context, and Anthropic's cache mark on the last block before it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ListEnd {
    target: Target,
    live_context: Option<String>,
    cache: PromptCache,
}

impl ListEnd {
    fn of(target: Target, request: &RenderRequest<'_>) -> ListEnd {
        ListEnd {
            target,
            live_context: request.live_context.map(str::to_owned),
            cache: request.cache,
        }
    }

    /// Whether the entries as rendered already end the list.
    fn is_plain(&self) -> bool {
        let marks = self.target == Target::Anthropic && self.cache == PromptCache::On;
        self.live_context.is_none() && !marks
    }

    /// Ends a list whose last entry is `last`: changes it and the body's
    /// `head` as the target wants, and returns the entries to add after it.
    fn close(&self, head: &mut Map<String, Value>, last: Option<&mut Value>) -> Vec<Value> {
        let live = self.live_context.as_deref();
        match self.target {
            Target::OpenAiChat => openai_chat::close_list(live),
            Target::OpenAiResponses => openai_responses::close_list(live),
            Target::Anthropic => anthropic::close_list(head, last, live, self.cache),
            Target::Gemini => gemini::close_list(head, last, live),
        }
    }
}

impl Frame {
    /// The whole body, with `list` after the lead entries.
    fn into_value(self, list: Vec<Value>) -> Value {
        let Frame {
            mut head,
            list_key,
            mut lead,
            end,
        } = self;
        lead.extend(list);
        let closing = end.close(&mut head, lead.last_mut());
        lead.extend(closing);
        head.insert(list_key.to_owned(), Value::Array(lead));
        Value::Object(head)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::base::message::{Part, Role};

    const LIVE: &str = "# Working memory (version 2)";

    /// The body rebuilt from its parts, as a binding builds it.
    fn from_parts(parts: &Parts<'_>) -> Value {
        let mut list: Vec<Value> = parts.lead.to_vec();
        for segment in parts.segments {
            for entry in segment.entries() {
                list.push(serde_json::from_str(entry.get()).expect("an entry is JSON"));
            }
        }
        if let (Some(last), Some(slot)) = (parts.last_entry, list.last_mut()) {
            *slot = serde_json::from_str(last.get()).expect("an entry is JSON");
        }
        list.extend(parts.closing.iter().cloned());
        let mut keys: Vec<&str> = parts.fields.keys().map(String::as_str).collect();
        keys.insert(parts.fields_before_list(), parts.list_key);
        assert!(keys.windows(2).all(|pair| pair[0] < pair[1]), "{keys:?}");
        let mut body = parts.fields.clone();
        body.insert(parts.list_key.to_owned(), Value::Array(list));
        Value::Object(body)
    }

    fn body(target: Target, messages: &[Message]) -> Value {
        let request = RenderRequest {
            model: "a-model",
            system: Some("Be brief."),
            messages,
            tools: &[],
            max_output_tokens: 1024,
            cache: PromptCache::On,
            live_context: Some(LIVE),
        };
        let whole = render(target, &request);
        let payload = Payload::render(target, &request);
        let joined = payload.to_value();
        assert_eq!(
            whole, joined,
            "{target}: a payload ends its list as a render does"
        );
        assert_eq!(
            from_parts(&payload.parts()),
            joined,
            "{target}: a payload's parts make its body"
        );
        whole
    }

    fn asked() -> Vec<Message> {
        vec![Message::text(Role::User, "list the files")]
    }

    fn answered_by_a_tool() -> Vec<Message> {
        let call = Part::ToolCall {
            id: "c1".into(),
            name: "ls".into(),
            arguments: json!({}),
        };
        let result = Part::ToolResult {
            call_id: "c1".into(),
            name: Some("ls".into()),
            content: "a.rs".into(),
            is_error: false,
        };
        let mut messages = asked();
        messages.push(Message {
            role: Role::Assistant,
            parts: vec![call],
        });
        messages.push(Message {
            role: Role::Tool,
            parts: vec![result],
        });
        messages
    }

    #[test]
    fn openai_lists_close_with_a_message_of_the_live_context() {
        for messages in [asked(), answered_by_a_tool()] {
            let chat = body(Target::OpenAiChat, &messages);
            let last = chat["messages"].as_array().unwrap().last().unwrap().clone();
            assert_eq!(last, json!({"role": "system", "content": LIVE}));
            let responses = body(Target::OpenAiResponses, &messages);
            let last = responses["input"]
                .as_array()
                .unwrap()
                .last()
                .unwrap()
                .clone();
            assert_eq!(last["role"], "developer");
            assert_eq!(last["content"][0]["text"], LIVE);
        }
    }

    #[test]
    fn anthropic_adds_the_live_context_after_the_cache_mark_of_the_closing_user_message() {
        let with_result = body(Target::Anthropic, &answered_by_a_tool());
        let closing = &with_result["messages"][2]["content"];
        assert_eq!(closing[0]["type"], "tool_result");
        assert_eq!(closing[0]["cache_control"]["type"], "ephemeral");
        assert_eq!(closing[1], json!({"type": "text", "text": LIVE}));
        assert_eq!(with_result["system"].as_array().unwrap().len(), 1);

        let mut continued = asked();
        continued.push(Message::text(Role::Assistant, "The files are"));
        let prefill = body(Target::Anthropic, &continued);
        let system = prefill["system"].as_array().unwrap();
        assert_eq!(system[1], json!({"type": "text", "text": LIVE}));
        let last = &prefill["messages"][1]["content"];
        assert_eq!(
            last.as_array().unwrap().len(),
            1,
            "the reply to continue ends the list"
        );
    }

    #[test]
    fn a_plain_body_ends_its_system_prompt_with_the_live_context() {
        for target in Target::ALL {
            let messages = answered_by_a_tool();
            let request = RenderRequest {
                model: "a-model",
                system: Some("Be brief."),
                messages: &messages,
                tools: &[],
                max_output_tokens: 1024,
                cache: PromptCache::Off,
                live_context: Some(LIVE),
            };
            let plain = render(target, &request);
            assert_eq!(plain, Payload::render(target, &request).to_value());
            let text = plain.to_string();
            assert_eq!(text.matches(LIVE).count(), 1, "{target}: {text}");
            let list = plain[target.list_key()].as_array().unwrap();
            let last = list.last().unwrap().to_string();
            assert!(
                !last.contains(LIVE) && !text.contains("cache_control"),
                "{target}: {text}"
            );
            assert!(
                text.contains(&format!("Be brief.\\n\\n{LIVE}")),
                "{target}: {text}"
            );
        }
    }

    #[test]
    fn gemini_keeps_function_responses_alone_in_their_content() {
        let asked = body(Target::Gemini, &asked());
        assert_eq!(asked["contents"][0]["parts"][1], json!({"text": LIVE}));
        let with_result = body(Target::Gemini, &answered_by_a_tool());
        let closing = with_result["contents"][2]["parts"].as_array().unwrap();
        assert!(closing.iter().all(|p| p.get("functionResponse").is_some()));
        assert_eq!(
            with_result["systemInstruction"]["parts"][1],
            json!({"text": LIVE})
        );
    }
}
