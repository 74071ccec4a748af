//! What a model call can fail with, typed so callers can act on it.

use std::time::Duration;

/// A failed model call.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("the prompt does not fit the model's context window ({message}); compact the session and retry")]
    Overflow { status: u16, message: String },

    #[error("rate limited by the provider ({message}); retry after {retry_after:?}")]
    RateLimited {
        retry_after: Option<Duration>,
        message: String,
    },

    #[error("the provider refused the API key ({status}: {message}); check the key in ${env}")]
    Auth {
        status: u16,
        message: String,
        env: String,
    },

    #[error("the provider rejected the request ({status}: {message})")]
    BadRequest { status: u16, message: String },

    #[error("the provider failed ({status}: {message}), also when retried")]
    Server { status: u16, message: String },

    #[error("no answer from {url} within {after:?}")]
    Timeout { url: String, after: Duration },

    #[error("cannot reach {url}: {message}")]
    Transport { url: String, message: String },

    #[error("no API key: set ${env} (it is read from the environment, never stored)")]
    MissingKey { env: String },

    #[error("cannot read the provider's answer: {message}")]
    BadResponse { message: String },

    /// The engine failed around the call (preparing, recording, recovering).
    #[error(transparent)]
    Engine(#[from] agentmem::Error),
}
