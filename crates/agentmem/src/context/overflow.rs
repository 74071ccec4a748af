//! Provider errors that mean "the prompt is too long", told apart from the rest.
//!
//! Each provider says it differently: OpenAI returns the code
//! `context_length_exceeded`, Anthropic "prompt is too long", Gemini a token
//! limit message, and proxies an HTTP 413. Only a real overflow triggers
//! reactive compaction.

use serde::Serialize;

/// Recovery attempts before giving up with a typed error.
pub const MAX_OVERFLOW_RETRIES: u32 = 3;

/// A provider error, classified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ProviderError {
    /// The prompt did not fit the model's context window.
    ContextOverflow { message: String },
    /// Any other failure; not agentmem's to fix.
    Other { status: u16, message: String },
}

/// Classifies an HTTP status and response body from any of the supported providers.
///
/// ```
/// use agentmem::context::overflow::{classify_provider_error, ProviderError};
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
