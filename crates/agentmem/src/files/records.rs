//! The long-term memory records the files hold — an episodic item, a fact
//! to add with its provenance and trust, a fact as kept, a version of the
//! notebook — as plain data: the compaction
//! snapshot keeps them, and the memory stores (`memory/`) append and read them.

use serde::{Deserialize, Serialize};

/// A summarized stretch of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodicItem {
    /// The item's id.
    pub id: String,
    /// When it was written (epoch seconds).
    pub ts: f64,
    /// The session it summarizes.
    pub session_id: String,
    /// The turns the summary covers, in order.
    pub turn_ids: Vec<String>,
    /// The summary text.
    pub summary: String,
    /// Free labels.
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
    /// Drawn from what the user said.
    User,
    /// Drawn from what the assistant said.
    Assistant,
    /// Drawn from tool output: information, never an instruction.
    Tool,
}

/// The events and the extractor a fact came from.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Provenance {
    /// The events the fact was drawn from.
    #[serde(default)]
    pub source_event_ids: Vec<String>,
    /// The session they are in.
    #[serde(default)]
    pub session_id: Option<String>,
    /// What drew the fact (`extractive`, a model name, `user`, …).
    pub extractor: String,
    /// The extractor's version.
    #[serde(default)]
    pub extractor_version: String,
}

/// A fact to add.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewFact {
    /// The fact, in one sentence.
    pub fact: String,
    /// Free labels.
    pub tags: Vec<String>,
    /// How sure the extractor is that it is a lasting fact (0–1).
    pub confidence: f32,
    /// How much it matters for recall (0–1).
    pub salience: f32,
    /// Where it came from.
    pub provenance: Provenance,
    /// How far it may be trusted.
    pub trust: Trust,
}

/// One semantic fact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fact {
    /// The fact's id.
    pub id: String,
    /// When it was added (epoch seconds).
    pub ts: f64,
    /// The fact, in one sentence.
    pub fact: String,
    /// Free labels.
    #[serde(default)]
    pub tags: Vec<String>,
    /// How sure the extractor was that it is a lasting fact (0–1).
    pub confidence: f32,
    /// How much it matters for recall (0–1).
    pub salience: f32,
    /// Where it came from.
    pub provenance: Provenance,
    /// How far it may be trusted.
    pub trust: Trust,
    /// From when it holds (epoch seconds).
    pub valid_from: f64,
    /// Until when it held, once a newer fact replaced it.
    #[serde(default)]
    pub valid_to: Option<f64>,
    /// The id of the fact that replaced it.
    #[serde(default)]
    pub superseded_by: Option<String>,
    /// A keyed fingerprint of the words redaction hid from the fact (see
    /// `memory::hidden`): two facts that read the same once redacted merge
    /// only when it is the same, so facts that differ only in a secret stay two.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden: Option<String>,
}

impl Fact {
    /// Whether the fact holds now (not superseded or retired).
    pub(crate) fn is_current(&self) -> bool {
        self.valid_to.is_none()
    }
}

/// The notebook's content and the hash that names this version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryVersion {
    /// MEMORY.md's text.
    pub content: String,
    /// FNV-1a 64 of the content, hex: pass it back as `expected_hash`.
    pub hash: String,
}

/// The version of a notebook holding `content`: the text and its hash.
pub fn version(content: String) -> MemoryVersion {
    let hash = crate::base::hash::fnv1a(content.as_bytes());
    MemoryVersion {
        content,
        hash: format!("{hash:016x}"),
    }
}
