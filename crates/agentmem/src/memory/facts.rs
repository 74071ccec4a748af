//! Semantic memory: lasting facts (preferences, decisions, constraints) kept
//! per agent in `agents/<agent>/semantic.jsonl`, each linked to the events it
//! came from.
//!
//! A fact is never silently lost: correcting one supersedes it (the old one
//! stays, with `valid_to` and `superseded_by`), and a near duplicate of a
//! current fact is merged into it instead of being added twice. Every change
//! rewrites the (small) file atomically.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::redact::{redact, RedactionPolicy};
use crate::error::{Error, IoContext, Result};
use crate::event::now_ts;
use crate::hash::fnv1a;
use crate::store::atomic::write_atomic;

/// The semantic store's file name inside the agent folder.
pub const SEMANTIC_FILE: &str = "semantic.jsonl";
/// Two facts whose word sets overlap at least this much are the same fact.
pub const NEAR_DUPLICATE_JACCARD: f64 = 0.8;

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

/// One semantic fact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fact {
    pub id: String,
    pub ts: f64,
    pub fact: String,
    #[serde(default)]
    pub tags: Vec<String>,
    pub confidence: f32,
    pub salience: f32,
    pub provenance: Provenance,
    pub trust: Trust,
    pub valid_from: f64,
    #[serde(default)]
    pub valid_to: Option<f64>,
    #[serde(default)]
    pub superseded_by: Option<String>,
}

impl Fact {
    /// Whether the fact holds now (not superseded or retired).
    pub fn is_current(&self) -> bool {
        self.valid_to.is_none()
    }
}

/// A fact to add.
#[derive(Debug, Clone, PartialEq)]
pub struct NewFact {
    pub fact: String,
    pub tags: Vec<String>,
    pub confidence: f32,
    pub salience: f32,
    pub provenance: Provenance,
    pub trust: Trust,
}

/// What adding a fact did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", content = "id", rename_all = "lowercase")]
pub enum Added {
    /// A new fact with this id.
    Added(String),
    /// Merged into the existing current fact with this id.
    Merged(String),
}

/// An agent's facts.
#[derive(Debug, Clone)]
pub struct FactStore {
    path: PathBuf,
    redaction: RedactionPolicy,
}

impl FactStore {
    /// The facts of the agent whose folder is `agent_dir`.
    pub fn new(agent_dir: &Path, redaction: RedactionPolicy) -> FactStore {
        FactStore {
            path: agent_dir.join(SEMANTIC_FILE),
            redaction,
        }
    }

    /// Every fact, superseded ones included, oldest first.
    pub fn all(&self) -> Result<Vec<Fact>> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e).io("read", &self.path),
        };
        Ok(text
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect())
    }

    /// The facts that hold now.
    pub fn current(&self) -> Result<Vec<Fact>> {
        Ok(self.all()?.into_iter().filter(Fact::is_current).collect())
    }

    /// Adds a fact, or merges it into a current one that says the same.
    ///
    /// ```
    /// use agentmem::memory::facts::{Added, FactStore, NewFact, Provenance, Trust};
    /// let dir = tempfile::tempdir().unwrap();
    /// let store = FactStore::new(dir.path(), Default::default());
    /// let fact = |text: &str| NewFact { fact: text.into(), tags: vec![], confidence: 0.8, salience: 0.5,
    ///     provenance: Provenance { extractor: "cli".into(), ..Default::default() }, trust: Trust::User };
    /// let Added::Added(id) = store.add(fact("The user prefers tabs over spaces.")).unwrap() else { panic!() };
    /// assert_eq!(store.add(fact("the user prefers tabs over spaces")).unwrap(), Added::Merged(id));
    /// ```
    pub fn add(&self, new: NewFact) -> Result<Added> {
        Ok(self.add_all(vec![new])?.remove(0))
    }

    /// Adds several facts with one read and one rewrite of the store.
    pub fn add_all(&self, new: Vec<NewFact>) -> Result<Vec<Added>> {
        let mut facts = self.all()?;
        let mut words: Vec<BTreeSet<String>> = facts.iter().map(|f| word_set(&f.fact)).collect();
        let mut outcomes = Vec::with_capacity(new.len());
        for new in new {
            let text = redact(new.fact.trim(), self.redaction).0;
            if text.is_empty() {
                return Err(Error::MemoryEdit {
                    message: "a fact needs text".into(),
                });
            }
            let these = word_set(&text);
            let same = (0..facts.len()).find(|&i| facts[i].is_current() && near(&words[i], &these));
            if let Some(i) = same {
                let existing = &mut facts[i];
                existing.confidence = existing.confidence.max(new.confidence);
                existing.salience = existing.salience.max(new.salience);
                for id in new.provenance.source_event_ids {
                    if !existing.provenance.source_event_ids.contains(&id) {
                        existing.provenance.source_event_ids.push(id);
                    }
                }
                outcomes.push(Added::Merged(existing.id.clone()));
                continue;
            }
            let now = now_ts();
            let id = format!(
                "fact-{:04}-{:08x}",
                facts.len() + 1,
                fnv1a(text.as_bytes()) as u32
            );
            facts.push(Fact {
                id: id.clone(),
                ts: now,
                fact: text,
                tags: new.tags,
                confidence: new.confidence,
                salience: new.salience,
                provenance: new.provenance,
                trust: new.trust,
                valid_from: now,
                valid_to: None,
                superseded_by: None,
            });
            words.push(these);
            outcomes.push(Added::Added(id));
        }
        self.save(&facts)?;
        Ok(outcomes)
    }

    /// Corrects a fact: a new fact takes its place, and the old one stays in
    /// the history with `valid_to` and `superseded_by` set.
    pub fn supersede(&self, id: &str, text: &str, provenance: Provenance) -> Result<String> {
        let mut facts = self.all()?;
        let old = facts
            .iter()
            .position(|f| f.id == id && f.is_current())
            .ok_or_else(|| Error::MemoryEdit {
                message: format!("no current fact {id}; `agentmem facts list` shows them"),
            })?;
        let now = now_ts();
        let clean = redact(text.trim(), self.redaction).0;
        let new_id = format!(
            "fact-{:04}-{:08x}",
            facts.len() + 1,
            fnv1a(clean.as_bytes()) as u32
        );
        let replacement = Fact {
            id: new_id.clone(),
            ts: now,
            fact: clean,
            provenance,
            valid_from: now,
            valid_to: None,
            superseded_by: None,
            ..facts[old].clone()
        };
        facts[old].valid_to = Some(now);
        facts[old].superseded_by = Some(new_id.clone());
        facts.push(replacement);
        self.save(&facts)?;
        Ok(new_id)
    }

    /// Deletes a fact for good (an explicit request, never a side effect).
    pub fn delete(&self, id: &str) -> Result<()> {
        let mut facts = self.all()?;
        let before = facts.len();
        facts.retain(|f| f.id != id);
        if facts.len() == before {
            return Err(Error::MemoryEdit {
                message: format!("no fact {id}; `agentmem facts list --all` shows them"),
            });
        }
        self.save(&facts)
    }

    fn save(&self, facts: &[Fact]) -> Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).io("create", dir)?;
        }
        let mut out = Vec::new();
        for fact in facts {
            serde_json::to_writer(&mut out, fact).expect("a fact serializes");
            out.push(b'\n');
        }
        write_atomic(&self.path, &out)
    }
}

/// The words of a text, case and punctuation aside.
pub(crate) fn word_set(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Same words (order aside), or nearly: a Jaccard overlap of at least
/// [`NEAR_DUPLICATE_JACCARD`]. Sets whose sizes alone rule that out are not
/// compared (most pairs, when many texts are checked against each other).
pub(crate) fn near(a: &BTreeSet<String>, b: &BTreeSet<String>) -> bool {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if large.is_empty() {
        return true;
    }
    if (small.len() as f64) < NEAR_DUPLICATE_JACCARD * large.len() as f64 {
        return false;
    }
    let shared = small.iter().filter(|w| large.contains(*w)).count();
    let union = a.len() + b.len() - shared;
    shared as f64 >= NEAR_DUPLICATE_JACCARD * union as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(text: &str, trust: Trust) -> NewFact {
        NewFact {
            fact: text.into(),
            tags: vec!["preference".into()],
            confidence: 0.7,
            salience: 0.5,
            provenance: Provenance {
                source_event_ids: vec!["ev1".into()],
                extractor: "test".into(),
                ..Default::default()
            },
            trust,
        }
    }

    #[test]
    fn supersede_keeps_the_history_and_contradictions_do_not_delete() {
        let dir = tempfile::tempdir().unwrap();
        let store = FactStore::new(dir.path(), RedactionPolicy::default());
        let Added::Added(id) = store
            .add(fact("Deploys go through staging.", Trust::User))
            .unwrap()
        else {
            panic!()
        };
        // A contradicting fact is added beside it, not over it.
        store
            .add(fact("Deploys skip staging on Fridays.", Trust::Assistant))
            .unwrap();
        assert_eq!(store.current().unwrap().len(), 2);
        let new_id = store
            .supersede(
                &id,
                "Deploys go through staging, then canary.",
                Provenance::default(),
            )
            .unwrap();
        let all = store.all().unwrap();
        let old = all.iter().find(|f| f.id == id).unwrap();
        assert_eq!(old.superseded_by.as_deref(), Some(new_id.as_str()));
        assert!(old.valid_to.is_some());
        assert_eq!(store.current().unwrap().len(), 2);
        assert_eq!(all.len(), 3);
        store.delete(&new_id).unwrap();
        assert!(store.delete(&new_id).is_err());
    }

    #[test]
    fn near_duplicates_merge_and_secrets_never_enter() {
        let dir = tempfile::tempdir().unwrap();
        let store = FactStore::new(dir.path(), RedactionPolicy::default());
        let first = store
            .add(fact(
                "Use API key sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2 for staging",
                Trust::User,
            ))
            .unwrap();
        let mut again = fact(
            "use api key sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2 for staging.",
            Trust::User,
        );
        again.provenance.source_event_ids = vec!["ev2".into()];
        let Added::Added(id) = first else { panic!() };
        assert_eq!(store.add(again).unwrap(), Added::Merged(id));
        let facts = store.current().unwrap();
        assert_eq!(facts.len(), 1);
        assert_eq!(facts[0].provenance.source_event_ids, ["ev1", "ev2"]);
        assert!(!facts[0].fact.contains("sk-proj"), "{}", facts[0].fact);
    }
}
