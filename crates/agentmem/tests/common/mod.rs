//! What several test files share.

use agentmem::{AgentId, Durability, Store};

/// A store in a fresh folder (kept while the returned guard lives) and its default agent.
pub fn fresh_store() -> (tempfile::TempDir, Store, AgentId) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), Durability::Os).unwrap();
    (dir, store, AgentId::default())
}

/// The live context an OpenAI Chat Completions payload closes with (recalled
/// memories, the working memory): its last message, a system message.
#[allow(dead_code)] // not every test file that shares this module reads it
pub fn live_context(payload: &agentmem::Payload) -> String {
    let messages = payload["messages"].as_array().expect("a message list");
    let last = messages.last().expect("a message");
    assert_eq!(
        last["role"], "system",
        "no live context closes {messages:?}"
    );
    last["content"].as_str().expect("text").to_owned()
}
