//! agentmem as a local service, for agents in any language: the engine's
//! operations ([`service`]) over HTTP ([`http`]) and JSON lines, and the
//! memory tools over the Model Context Protocol ([`mcp`]). What each
//! operation takes ([`requests`]) and answers ([`replies`]) are types, and
//! the OpenAPI document ([`openapi`]) is built from them.
//!
//! The engine crate stays free of network code; this crate is the edge
//! that listens. (The load-test client that drives a running server is
//! `agentmem bench --serve`'s, in the CLI.)

#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod error;
pub mod http;
pub mod mcp;
pub mod metrics;
pub mod openapi;
pub mod replies;
pub mod requests;
pub mod schemas;
pub mod service;

pub use error::{ErrorKind, ServiceError};
