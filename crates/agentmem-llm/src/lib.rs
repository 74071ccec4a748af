//! agentmem's network edge: clients for the provider APIs whose payloads the
//! engine renders (OpenAI Chat Completions and every compatible server,
//! OpenAI Responses, Anthropic Messages, Gemini generateContent). The engine
//! crate stays free of network code; this crate sends what it prepared and
//! turns the answers back into events.

#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod call;
pub mod client;
pub mod embedder;
pub mod error;
pub mod reranker;
pub mod response;
pub mod sse;
pub mod summarizer;

pub use call::{call_model, Delivery};
pub use client::{Client, Endpoint, RetryPolicy};
pub use embedder::OpenAiEmbedder;
pub use error::LlmError;
pub use reranker::LlmReranker;
pub use response::Completion;
pub use summarizer::LlmSummarizer;
