//! Long-term memory.
//!
//! - [`notebook`]: the agent's `MEMORY.md`, read, appended to and edited
//!   with compare-and-swap, injected into every context;
//! - [`facts`]: semantic facts with provenance, trust and validity;
//! - [`episodic`]: one summarized item per compaction, per agent;
//! - [`redact`](crate::redact): secrets and personal data removed before anything is kept;
//! - [`recall`]: what earlier sessions said about the current question,
//!   ranked and fitted to a budget;
//! - [`project`]: project memory files (`AGENT.md`, `MEMORY.md`,
//!   `.agent-context.md`) discovered in the working directory, the user's
//!   agentmem folder and the system folder;
//! - `injector`: what of all this a session's prompt gets, rebuilt only
//!   when a memory file or the question changed.

use std::sync::atomic::{AtomicU64, Ordering};

pub mod episodic;
pub mod facts;
pub(crate) mod hidden;
pub(crate) mod injector;
mod keeping;
pub mod notebook;
pub(crate) mod passages;
pub mod project;
pub mod recall;

/// Writes this process has made to agents' memory files.
static WRITES: AtomicU64 = AtomicU64::new(0);

/// Counts a write (or an attempt that may have changed the file) to an
/// agent's `MEMORY.md`, facts or episodes, once it is done.
pub(crate) fn count_write() {
    WRITES.fetch_add(1, Ordering::Release);
}

/// How many writes this process has made to agents' memory files: a
/// session whose memory block was built at an earlier count rebuilds it
/// without waiting to notice the change on disk.
pub fn writes() -> u64 {
    WRITES.load(Ordering::Acquire)
}
