//! Provider errors that mean "the prompt is too long", told apart from the rest.
//!
//! Each provider says it differently: OpenAI returns the code
//! `context_length_exceeded`, Anthropic "prompt is too long", Gemini a token
//! limit message, and proxies an HTTP 413. Only a real overflow triggers
//! reactive compaction.

use serde::Serialize;

/// Recovery attempts before giving up with a typed error.
pub(crate) const MAX_OVERFLOW_RETRIES: u32 = 3;

/// A provider error, classified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ProviderError {
    /// The prompt did not fit the model's context window.
    ContextOverflow {
        /// The provider's error message.
        message: String,
    },
    /// Any other failure; not agentmem's to fix.
    Other {
        /// The HTTP status.
        status: u16,
        /// The provider's error message.
        message: String,
    },
}

/// Classifies an HTTP status and response body from any of the supported providers.
///
/// ```
/// use agentmem::pipeline::overflow::{classify_provider_error, ProviderError};
/// let openai = r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","code":"context_length_exceeded"}}"#;
/// assert!(matches!(classify_provider_error(400, openai), ProviderError::ContextOverflow { .. }));
/// let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
/// assert!(matches!(classify_provider_error(400, anthropic), ProviderError::ContextOverflow { .. }));
/// assert!(matches!(classify_provider_error(429, "rate limited"), ProviderError::Other { status: 429, .. }));
/// ```
pub fn classify_provider_error(status: u16, body: &str) -> ProviderError {
    let message = error_message(body);
    let lower = body.to_ascii_lowercase();
    let overflow = status == 413
        || lower.contains("context_length_exceeded")
        || lower.contains("prompt is too long")
        || lower.contains("maximum context length")
        || lower.contains("context window")
        || (lower.contains("input token count") && lower.contains("exceeds"))
        || (lower.contains("token") && lower.contains("exceeds the maximum"))
        || lower.contains("request too large");
    if overflow && status != 429 {
        ProviderError::ContextOverflow { message }
    } else {
        ProviderError::Other { status, message }
    }
}

/// The sizes an overflow message names, in the provider's tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OverflowSizes {
    /// What the provider counted for the prompt that did not fit.
    pub prompt_tokens: u64,
    /// The most it takes.
    pub limit_tokens: u64,
}

/// Reads the prompt size and the limit from an overflow message, when it
/// names both: Anthropic's `prompt is too long: 210000 tokens > 200000
/// maximum`, OpenAI's `maximum context length is 128000 tokens. However,
/// your messages resulted in 130542 tokens` (or `(130000 in the messages,
/// …)`), Gemini's `The input token count (1100000) exceeds the maximum
/// number of tokens allowed (1048576)`.
///
/// ```
/// use agentmem::pipeline::overflow::{sizes_named_in, OverflowSizes};
/// let sizes = sizes_named_in("prompt is too long: 210000 tokens > 200000 maximum");
/// assert_eq!(sizes, Some(OverflowSizes { prompt_tokens: 210_000, limit_tokens: 200_000 }));
/// assert_eq!(sizes_named_in("Request Entity Too Large"), None);
/// ```
pub fn sizes_named_in(message: &str) -> Option<OverflowSizes> {
    static PATTERNS: std::sync::LazyLock<[regex::Regex; 3]> = std::sync::LazyLock::new(|| {
        [
            r"(?P<prompt>\d+) tokens > (?P<limit>\d+) maximum",
            r"maximum context length is (?P<limit>\d+) tokens\..*?(?:resulted in (?P<prompt>\d+) tokens|\((?P<in_messages>\d+) in the messages)",
            r"input token count \((?P<prompt>\d+)\) exceeds the maximum number of tokens allowed \((?P<limit>\d+)\)",
        ]
        .map(|pattern| regex::Regex::new(&format!("(?is){pattern}")).expect("a valid pattern"))
    });
    PATTERNS.iter().find_map(|pattern| {
        let found = pattern.captures(message)?;
        let number = |name: &str| found.name(name)?.as_str().parse::<u64>().ok();
        Some(OverflowSizes {
            prompt_tokens: number("prompt").or_else(|| number("in_messages"))?,
            limit_tokens: number("limit")?,
        })
    })
}

/// The human message in a provider's JSON error body, or the body itself.
fn error_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    parsed
        .as_ref()
        .and_then(|v| v.pointer("/error/message").or_else(|| v.get("message")))
        .and_then(serde_json::Value::as_str)
        .unwrap_or(body)
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_each_providers_overflow() {
        let cases = [
            (
                400,
                r#"{"error":{"message":"Your input exceeds the context window of this model.","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
            ),
            (
                400,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 201234 tokens > 200000 maximum"}}"#,
            ),
            (
                400,
                r#"{"error":{"code":400,"message":"The input token count (1100000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}"#,
            ),
            (413, "Request Entity Too Large"),
        ];
        for (status, body) in cases {
            assert!(
                matches!(
                    classify_provider_error(status, body),
                    ProviderError::ContextOverflow { .. }
                ),
                "{body}"
            );
        }
    }

    #[test]
    fn each_providers_sizes_are_read_from_its_message() {
        let cases = [
            (
                "prompt is too long: 201234 tokens > 200000 maximum",
                Some((201_234, 200_000)),
            ),
            (
                "This model's maximum context length is 128000 tokens. However, your messages resulted in 130542 tokens. Please reduce the length of the messages.",
                Some((130_542, 128_000)),
            ),
            (
                "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (8500 in the messages, 500 in the completion). Please reduce the length of the messages or completion.",
                Some((8_500, 8_192)),
            ),
            (
                "The input token count (1100000) exceeds the maximum number of tokens allowed (1048576).",
                Some((1_100_000, 1_048_576)),
            ),
            ("Your input exceeds the context window of this model.", None),
            ("This model's maximum context length is 128000 tokens.", None),
        ];
        for (message, expected) in cases {
            let read = sizes_named_in(message).map(|s| (s.prompt_tokens, s.limit_tokens));
            assert_eq!(read, expected, "{message}");
        }
    }

    #[test]
    fn other_errors_are_not_overflows() {
        for (status, body) in [
            (
                401,
                r#"{"error":{"message":"Incorrect API key provided","code":"invalid_api_key"}}"#,
            ),
            (
                429,
                r#"{"error":{"message":"Request too large for gpt-4o on tokens per min (TPM)","code":"rate_limit_exceeded"}}"#,
            ),
            (500, "internal error"),
            (
                400,
                r#"{"error":{"message":"messages.1.content: Input should be a valid list"}}"#,
            ),
        ] {
            assert!(
                matches!(
                    classify_provider_error(status, body),
                    ProviderError::Other { .. }
                ),
                "{body}"
            );
        }
    }
}
