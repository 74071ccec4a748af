//! The long-term memory records the files hold — an episodic item, a fact
//! to add with its provenance and trust — as plain data: the compaction
//! snapshot keeps them, and the memory stores (`memory/`) append and read them.

use serde::{Deserialize, Serialize};

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

/// Where a fact came from — and so how far it may be trusted: a fact drawn
/// from tool output is information, never an instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Trust {
    User,
    Assistant,
    Tool,
}

/// The events and the extractor a fact came from.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Provenance {
    #[serde(default)]
    pub source_event_ids: Vec<String>,
    #[serde(default)]
    pub session_id: Option<String>,
    pub extractor: String,
    #[serde(default)]
    pub extractor_version: String,
}

/// A fact to add.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewFact {
    pub fact: String,
    pub tags: Vec<String>,
    pub confidence: f32,
    pub salience: f32,
    pub provenance: Provenance,
    pub trust: Trust,
}
