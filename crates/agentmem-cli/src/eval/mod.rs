//! Benchmarks of what agentmem remembers, run on public datasets.

pub mod locomo;
