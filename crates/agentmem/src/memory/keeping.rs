//! Where one of an agent's memory stores is kept: its file in the agent's
//! folder, read and written by the store's own file code, or behind the
//! memory seam ([`crate::storage::memory`]).

use std::path::PathBuf;
use std::sync::Arc;

use crate::base::id::AgentId;
use crate::storage::memory::MemoryStorage;

/// Where a memory store is kept.
#[derive(Debug, Clone)]
pub(crate) enum Keeping {
    /// In this file, changed under the agent's `memory.lock`.
    File(PathBuf),
    /// Behind the memory seam.
    Seam {
        memory: Arc<dyn MemoryStorage>,
        agent: AgentId,
    },
}

impl Keeping {
    /// The store `file` of `agent` as `memory` keeps it: that file of the
    /// agent's folder when `memory` is the files backend.
    pub(crate) fn of(memory: Arc<dyn MemoryStorage>, agent: &AgentId, file: &str) -> Keeping {
        match memory.folder(agent) {
            Some(dir) => Keeping::File(dir.join(file)),
            None => Keeping::Seam {
                memory,
                agent: agent.clone(),
            },
        }
    }
}
