//! What several test files share.

use agentmem::id::AgentId;
use agentmem::store::Store;
use agentmem::Durability;

/// A store in a fresh folder (kept while the returned guard lives) and its default agent.
pub fn fresh_store() -> (tempfile::TempDir, Store, AgentId) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), Durability::Os).unwrap();
    (dir, store, AgentId::default())
}
