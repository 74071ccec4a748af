//! agentmem as a local service, for agents in any language: the engine's
//! operations ([`service`]) over HTTP ([`http`]) and JSON lines, and the
//! memory tools over the Model Context Protocol ([`mcp`]).
//!
//! The engine crate stays free of network code; this crate is the edge
//! that listens. [`load`] drives a running server to measure it.

pub mod error;
pub mod http;
pub mod load;
pub mod mcp;
pub mod metrics;
pub mod requests;
pub mod service;

pub use error::{ErrorKind, ServiceError};
