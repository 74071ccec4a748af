//! One provider endpoint and the blocking HTTP client that calls it, with
//! typed errors and retries: rate limits wait as long as the provider asks
//! (within reason), server errors and timeouts are retried a bounded number
//! of times, everything else is returned at once.

use std::io::BufReader;
use std::time::Duration;

use agentmem::base::message::messages_from_events;
use agentmem::pipeline::overflow::{classify_provider_error, ProviderError};
use agentmem::render::{render, RenderRequest};
use agentmem::{Event, PromptCache, Target, TraceType};
use serde_json::{json, Value};

use crate::error::LlmError;
use crate::response::{parse_completion, Completion, StreamAccumulator};
use crate::sse::SseReader;

/// How long one call may take, streaming included.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// When a failed call is tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts per call, the first included.
    pub attempts: u32,
    /// The wait after a server error or a timeout (or a rate limit without
    /// `retry-after`); it doubles each time.
    pub first_backoff: Duration,
    /// The longest wait a `retry-after` header is honoured for.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 4,
            first_backoff: Duration::from_millis(500),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

/// Where a provider API is and how to authenticate to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub target: Target,
    /// e.g. `https://api.openai.com/v1`, or a local server's `http://localhost:11434/v1`.
    pub base_url: String,
    /// The environment variable holding the API key. The key itself is read
    /// when the client is made and kept in memory only.
    pub api_key_env: String,
    /// Whether a call may go without a key (local OpenAI-compatible servers).
    pub key_optional: bool,
    /// Gemini names the model in the URL.
    pub model: String,
}

impl Endpoint {
    /// The provider's public endpoint for `target`, with the environment
    /// variable its users already have.
    pub fn official(target: Target, model: &str) -> Endpoint {
        let (base_url, api_key_env) = match target {
            Target::OpenAiChat | Target::OpenAiResponses => {
                ("https://api.openai.com/v1", "OPENAI_API_KEY")
            }
            Target::Anthropic => ("https://api.anthropic.com/v1", "ANTHROPIC_API_KEY"),
            Target::Gemini => (
                "https://generativelanguage.googleapis.com/v1beta",
                "GEMINI_API_KEY",
            ),
        };
        Endpoint {
            target,
            base_url: base_url.into(),
            api_key_env: api_key_env.into(),
            key_optional: false,
            model: model.into(),
        }
    }

    /// An OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio,
    /// OpenRouter) at `base_url`; a key is sent when `api_key_env` is set.
    pub fn openai_compatible(base_url: &str, model: &str) -> Endpoint {
        Endpoint {
            base_url: base_url.trim_end_matches('/').into(),
            key_optional: true,
            ..Endpoint::official(Target::OpenAiChat, model)
        }
    }

    fn url(&self, streaming: Streaming) -> String {
        let base = self.base_url.trim_end_matches('/');
        match (self.target, streaming) {
            (Target::OpenAiChat, _) => format!("{base}/chat/completions"),
            (Target::OpenAiResponses, _) => format!("{base}/responses"),
            (Target::Anthropic, _) => format!("{base}/messages"),
            (Target::Gemini, Streaming::Off) => {
                format!("{base}/models/{}:generateContent", self.model)
            }
            (Target::Gemini, Streaming::On) => {
                format!("{base}/models/{}:streamGenerateContent?alt=sse", self.model)
            }
        }
    }
}

/// Whether the answer comes whole or as server-sent events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Streaming {
    Off,
    On,
}

/// A client of one endpoint.
pub struct Client {
    endpoint: Endpoint,
    agent: ureq::Agent,
    key: Option<String>,
    timeout: Duration,
    retry: RetryPolicy,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is never printed.
        f.debug_struct("Client")
            .field("endpoint", &self.endpoint)
            .field("has_key", &self.key.is_some())
            .finish()
    }
}

impl Client {
    /// A client for `endpoint`, its key read from the environment.
    pub fn new(endpoint: Endpoint) -> Result<Client, LlmError> {
        Client::with_timeout(endpoint, DEFAULT_TIMEOUT)
    }

    /// [`Client::new`] with a timeout per call.
    pub fn with_timeout(endpoint: Endpoint, timeout: Duration) -> Result<Client, LlmError> {
        let key = std::env::var(&endpoint.api_key_env)
            .ok()
            .filter(|k| !k.trim().is_empty());
        if key.is_none() && !endpoint.key_optional {
            return Err(LlmError::MissingKey {
                env: endpoint.api_key_env.clone(),
            });
        }
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build();
        Ok(Client {
            endpoint,
            agent: config.into(),
            key,
            timeout,
            retry: RetryPolicy::default(),
        })
    }

    /// The same client with another retry policy.
    pub fn with_retry_policy(mut self, retry: RetryPolicy) -> Client {
        self.retry = retry;
        self
    }

    /// The endpoint this client calls.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Sends a rendered payload and waits for the whole answer.
    pub fn complete(&self, payload: &Value) -> Result<Completion, LlmError> {
        self.with_retries(|| {
            let body = self.post(payload, Streaming::Off)?;
            let value: Value = serde_json::from_str(&body).map_err(|e| LlmError::BadResponse {
                message: format!("{e}: {}", excerpt(&body)),
            })?;
            parse_completion(self.endpoint.target, &value)
        })
    }

    /// Asks `model` one question (`system` brief, one user `prompt`, no
    /// tools, no prompt cache) and returns the text of its answer: how a
    /// summarizer or a reranker uses a model, as opposed to an agent's turn.
    pub fn ask(
        &self,
        model: &str,
        system: &str,
        prompt: &str,
        max_output_tokens: u64,
    ) -> Result<String, LlmError> {
        let messages = messages_from_events(&[Event::user(prompt)]);
        let payload = render(
            self.endpoint.target,
            &RenderRequest {
                model,
                system: Some(system),
                messages: &messages,
                tools: &[],
                max_output_tokens,
                // One call per question: a cache write would only cost more.
                cache: PromptCache::Off,
                live_context: None,
            },
        );
        let completion = self.complete(&payload)?;
        Ok(completion
            .events
            .iter()
            .filter(|e| e.trace_type == TraceType::Assistant)
            .map(|e| e.content.as_str())
            .collect())
    }

    /// Sends a rendered payload with streaming on; `on_text` gets each
    /// piece of visible text as it arrives.
    pub fn stream(
        &self,
        payload: &Value,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Completion, LlmError> {
        let payload = with_streaming(self.endpoint.target, payload);
        self.with_retries(|| {
            let response = self.send(&payload, Streaming::On)?;
            let mut accumulator = StreamAccumulator::new(self.endpoint.target);
            let reader = BufReader::new(response.into_body().into_reader());
            for message in SseReader::new(reader) {
                let message = message.map_err(|e| self.transport_error(&e.to_string()))?;
                if let Some(text) = accumulator.push(message.event.as_deref(), &message.data)? {
                    on_text(&text);
                }
            }
            accumulator.finish()
        })
    }

    /// Posts `payload` to `path` under the endpoint's base URL (e.g.
    /// `embeddings`) and returns the answer's JSON, with the retries and
    /// typed errors of a completion.
    pub fn post_json(&self, path: &str, payload: &Value) -> Result<Value, LlmError> {
        let url = format!(
            "{}/{}",
            self.endpoint.base_url.trim_end_matches('/'),
            path.trim_start_matches('/')
        );
        self.with_retries(|| {
            let body = self
                .send_to(&url, payload)?
                .into_body()
                .read_to_string()
                .map_err(|e| self.transport_error(&e.to_string()))?;
            serde_json::from_str(&body).map_err(|e| LlmError::BadResponse {
                message: format!("{e}: {}", excerpt(&body)),
            })
        })
    }

    fn with_retries<T>(
        &self,
        mut call: impl FnMut() -> Result<T, LlmError>,
    ) -> Result<T, LlmError> {
        let mut backoff = self.retry.first_backoff;
        let mut attempt = 1;
        loop {
            let wait = match call() {
                Ok(completion) => return Ok(completion),
                Err(error) if attempt >= self.retry.attempts => return Err(error),
                Err(LlmError::RateLimited { retry_after, .. }) => retry_after
                    .unwrap_or(backoff)
                    .min(self.retry.max_retry_after),
                Err(LlmError::Server { .. } | LlmError::Timeout { .. }) => backoff,
                Err(other) => return Err(other),
            };
            std::thread::sleep(wait);
            backoff = backoff.saturating_mul(2);
            attempt += 1;
        }
    }

    /// Posts `payload` and returns the body of a successful answer.
    fn post(&self, payload: &Value, streaming: Streaming) -> Result<String, LlmError> {
        self.send(payload, streaming)?
            .into_body()
            .read_to_string()
            .map_err(|e| self.transport_error(&e.to_string()))
    }

    /// Posts `payload`; a failed status becomes its typed error.
    fn send(
        &self,
        payload: &Value,
        streaming: Streaming,
    ) -> Result<ureq::http::Response<ureq::Body>, LlmError> {
        self.send_to(&self.endpoint.url(streaming), payload)
    }

    /// Posts `payload` to `url` with the endpoint's headers.
    fn send_to(
        &self,
        url: &str,
        payload: &Value,
    ) -> Result<ureq::http::Response<ureq::Body>, LlmError> {
        let mut request = self
            .agent
            .post(url)
            .header("content-type", "application/json");
        if let Some(key) = &self.key {
            request = match self.endpoint.target {
                Target::OpenAiChat | Target::OpenAiResponses => {
                    request.header("authorization", &format!("Bearer {key}"))
                }
                Target::Anthropic => request.header("x-api-key", key),
                Target::Gemini => request.header("x-goog-api-key", key),
            };
        }
        if self.endpoint.target == Target::Anthropic {
            request = request.header("anthropic-version", ANTHROPIC_VERSION);
        }
        let mut response = match request.send(payload.to_string()) {
            Ok(response) => response,
            Err(ureq::Error::Timeout(_)) => {
                return Err(LlmError::Timeout {
                    url: url.to_owned(),
                    after: self.timeout,
                })
            }
            Err(other) => return Err(self.transport_error(&other.to_string())),
        };
        let status = response.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(response);
        }
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map(Duration::from_secs_f64);
        let body = response.body_mut().read_to_string().unwrap_or_default();
        Err(self.status_error(status, &body, retry_after))
    }

    fn status_error(&self, status: u16, body: &str, retry_after: Option<Duration>) -> LlmError {
        let message = match classify_provider_error(status, body) {
            ProviderError::ContextOverflow { message } => {
                return LlmError::Overflow { status, message }
            }
            ProviderError::Other { message, .. } => message,
        };
        match status {
            429 => LlmError::RateLimited {
                retry_after,
                message,
            },
            401 | 403 => LlmError::Auth {
                status,
                message,
                env: self.endpoint.api_key_env.clone(),
            },
            500..=599 => LlmError::Server { status, message },
            _ => LlmError::BadRequest { status, message },
        }
    }

    fn transport_error(&self, message: &str) -> LlmError {
        LlmError::Transport {
            url: self.endpoint.base_url.clone(),
            message: message.to_owned(),
        }
    }
}

/// The Messages API version agentmem's renderer follows.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The payload with streaming asked for, in the provider's way (Gemini's is
/// in the URL).
fn with_streaming(target: Target, payload: &Value) -> Value {
    let mut payload = payload.clone();
    match target {
        Target::OpenAiChat => {
            payload["stream"] = json!(true);
            payload["stream_options"] = json!({"include_usage": true});
        }
        Target::OpenAiResponses | Target::Anthropic => payload["stream"] = json!(true),
        Target::Gemini => {}
    }
    payload
}

fn excerpt(body: &str) -> String {
    body.chars().take(200).collect()
}
