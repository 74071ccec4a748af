//! Episodic memory: one item per compaction, kept per agent in
//! `agents/<agent>/episodic.jsonl` — what happened in a session, in which
//! turns, summarized — so later sessions can recall it.

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{IoContext, Result};

/// The episodic store's file name inside the agent folder.
pub const EPISODIC_FILE: &str = "episodic.jsonl";

/// A summarized stretch of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodicItem {
    pub id: String,
    pub ts: f64,
    pub session_id: String,
    /// The turns the summary covers, in order.
    pub turn_ids: Vec<String>,
    pub summary: String,
    #[serde(default)]
    pub tags: Vec<String>,
    /// How much the item matters for recall, 0 to 1.
    pub salience: f32,
}

/// Appends `item` to the agent's episodic store (one line, synced).
pub fn append_episode(agent_dir: &Path, item: &EpisodicItem) -> Result<()> {
    std::fs::create_dir_all(agent_dir).io("create", agent_dir)?;
    let path = agent_dir.join(EPISODIC_FILE);
    let mut line = serde_json::to_vec(item).expect("an episodic item serializes");
    line.push(b'\n');
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .io("open", &path)?;
    file.write_all(&line).io("append to", &path)?;
    file.sync_data().io("fsync", &path)
}

/// Every episodic item of the agent, oldest first; a torn or foreign line is skipped.
pub fn read_episodes(agent_dir: &Path) -> Result<Vec<EpisodicItem>> {
    let path = agent_dir.join(EPISODIC_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).io("read", &path),
    };
    Ok(text
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect())
}
