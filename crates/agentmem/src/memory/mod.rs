//! Long-term memory.
//!
//! - [`notebook`]: the agent's `MEMORY.md`, read, appended to and edited
//!   with compare-and-swap, injected into every context;
//! - [`facts`]: semantic facts with provenance, trust and validity;
//! - [`episodic`]: one summarized item per compaction, per agent;
//! - [`redact`]: secrets and personal data removed before anything is kept;
//! - [`tools`]: the memory tools an agent's model is given, and running them;
//! - [`project`]: project memory files (`AGENT.md`, `MEMORY.md`,
//!   `.agent-context.md`) discovered in the working directory, the user's
//!   agentmem folder and the system folder.

pub mod episodic;
pub mod facts;
pub mod notebook;
pub mod project;
pub mod redact;
pub mod tools;
