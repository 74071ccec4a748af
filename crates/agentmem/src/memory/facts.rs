//! Semantic memory: lasting facts (preferences, decisions, constraints) kept
//! per agent in `agents/<agent>/semantic.jsonl`, each linked to the events it
//! came from.
//!
//! A fact is never silently lost: correcting one supersedes it (the old one
//! stays, with `valid_to` and `superseded_by`), and a near duplicate of a
//! current fact is merged into it instead of being added twice. Every change
//! rewrites the (small) file atomically.

use std::collections::{BTreeSet, HashMap};
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
        let mut near_index = NearIndex::default();
        for (position, these) in words.iter().enumerate() {
            near_index.add(position, these);
        }
        let mut outcomes = Vec::with_capacity(new.len());
        for new in new {
            let text = redact(new.fact.trim(), self.redaction).0;
            if text.is_empty() {
                return Err(Error::MemoryEdit {
                    message: "a fact needs text".into(),
                });
            }
            let these = word_set(&text);
            let same = near_index
                .candidates(&these)
                .into_iter()
                .find(|&i| facts[i].is_current() && near(&words[i], &these));
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
            near_index.add(words.len(), &these);
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
    crate::search::query::word_sequence(text).collect()
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

/// Which word sets a new one may be [`near`], so that a fact is compared
/// with a handful of others rather than with every fact of the store (the
/// store grows with every compaction). Prefix filtering: sets near each
/// other share at least [`NEAR_DUPLICATE_JACCARD`] of the larger one's
/// words, so each shares a word with the other's first few words in one
/// fixed order, and only those first words are indexed.
#[derive(Default)]
struct NearIndex {
    by_first_words: HashMap<String, Vec<usize>>,
    empty: Vec<usize>,
}

impl NearIndex {
    fn add(&mut self, position: usize, words: &BTreeSet<String>) {
        if words.is_empty() {
            self.empty.push(position);
        }
        for word in first_words(words) {
            self.by_first_words
                .entry(word.clone())
                .or_default()
                .push(position);
        }
    }

    /// The positions of the sets that may be near `words`, in order.
    fn candidates(&self, words: &BTreeSet<String>) -> Vec<usize> {
        let mut found: Vec<usize> = if words.is_empty() {
            self.empty.clone()
        } else {
            first_words(words)
                .filter_map(|word| self.by_first_words.get(word))
                .flatten()
                .copied()
                .collect()
        };
        found.sort_unstable();
        found.dedup();
        found
    }
}

/// The words of `words` a near set must share at least one of: with `n`
/// words, a near set shares at least `floor(J·n)` of them, so it meets the
/// first `n − floor(J·n) + 1` in any fixed order. Longer words come first,
/// as they are the rarer ones and keep the index's lists short.
fn first_words(words: &BTreeSet<String>) -> impl Iterator<Item = &String> {
    let mut ordered: Vec<&String> = words.iter().collect();
    ordered.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    let shared_at_least = (NEAR_DUPLICATE_JACCARD * words.len() as f64).floor() as usize;
    ordered
        .into_iter()
        .take(words.len().saturating_sub(shared_at_least) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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

    fn word_sets() -> impl Strategy<Value = BTreeSet<String>> {
        // Few, short words, so that near sets are common.
        proptest::collection::btree_set("[a-e]{1,2}", 0..14)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        #[test]
        fn the_near_index_never_misses_a_near_set(
            sets in proptest::collection::vec(word_sets(), 1..40),
            pick in any::<proptest::sample::Index>(),
            dropped in any::<proptest::sample::Index>(),
            added in "[a-e]{1,2}",
        ) {
            // The probe is one of the sets with a word swapped: often near
            // it, yet not starting with the same words.
            let mut probe = sets[pick.index(sets.len())].clone();
            if let Some(word) = probe.iter().nth(dropped.index(probe.len().max(1))).cloned() {
                probe.remove(&word);
            }
            probe.insert(added);
            let mut index = NearIndex::default();
            for (position, words) in sets.iter().enumerate() {
                index.add(position, words);
            }
            let candidates = index.candidates(&probe);
            prop_assert!(candidates.windows(2).all(|w| w[0] < w[1]));
            let near_ones: Vec<usize> = (0..sets.len()).filter(|&i| near(&sets[i], &probe)).collect();
            for position in &near_ones {
                prop_assert!(candidates.contains(position), "{:?} near {:?}", sets[*position], probe);
            }
        }
    }

    #[test]
    fn the_near_index_offers_only_sets_sharing_a_first_word() {
        let mut index = NearIndex::default();
        for n in 0..200 {
            index.add(
                n,
                &word_set(&format!("deploy service{n} through staging cluster{n}")),
            );
        }
        assert!(index
            .candidates(&word_set("the parser lives in src/parse.rs"))
            .is_empty());
        assert_eq!(
            index.candidates(&word_set("Deploy service7 through staging cluster7.")),
            [7]
        );
    }
}
