//! Fuzz targets for every path that reads input agentmem did not write:
//! the importers, the JSONL log and snapshot readers, event parsing, the
//! write-time guard, the pair passes and renderers over arbitrary event
//! sequences, a whole session's pipeline, and the service's requests (JSON
//! lines and MCP).
//!
//! Each target takes any bytes and panics only when an invariant breaks: a
//! value read back unlike what was written, pairs left broken, a cut over
//! its budget. `fuzz/` runs them under libFuzzer (`cargo +nightly fuzz run
//! TARGET`, see `scripts/fuzz.sh`); [`smoke`] runs each on the stable
//! toolchain over seeds from real transcripts and their mutations, which
//! `cargo test` does.

pub mod seeds;
pub mod smoke;
mod targets;

pub use targets::{event, guard, importers, log, mcp, pipeline, render, service};

/// A fuzz target: any bytes in, a panic only on a broken invariant.
pub type Target = fn(&[u8]);

/// Every target, by the name `fuzz/` gives it.
pub const TARGETS: [(&str, Target); 8] = [
    ("importers", importers),
    ("log", log),
    ("event", event),
    ("guard", guard),
    ("render", render),
    ("pipeline", pipeline),
    ("service", service),
    ("mcp", mcp),
];
