//! Semantic memory: lasting facts (preferences, decisions, constraints) kept
//! per agent in `agents/<agent>/semantic.jsonl`, each linked to the events it
//! came from.
//!
//! A fact is never silently lost: correcting one supersedes it (the old one
//! stays, with `valid_to` and `superseded_by`), and a near duplicate of a
//! current fact is merged into it instead of being added twice.
//!
//! The file grows by appending: a new fact, or a new version of a merged
//! one, is a line at the end, and the last line with an id is that fact.
//! Corrections and deletions rewrite it atomically, and so does an append
//! once old versions would make up most of the file. The parsed store is kept
//! in memory while the file stays as this process left it, so a compaction
//! adding a few facts to an agent's thousands reads and writes only those few.

use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::SystemTime;

use serde::Serialize;

use super::hidden::HiddenKey;
use super::keeping::Keeping;
use crate::base::error::{Error, IoContext, Result};
use crate::base::event::now_ts;
use crate::base::fs::write_atomic;
use crate::base::hash::fnv1a;
use crate::base::id::AgentId;
use crate::files::lock::MemoryLock;
use crate::files::paths::SEMANTIC_FILE;
#[cfg(test)]
use crate::files::records::Trust;
use crate::files::records::{NewFact, Provenance};
use crate::redact::{redact, Redacted, RedactionPolicy};
use crate::storage::memory::MemoryStorage;

/// Two facts whose word sets overlap at least this much are the same fact.
pub(crate) const NEAR_DUPLICATE_JACCARD: f64 = 0.8;

pub use crate::files::records::Fact;

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
    keeping: Keeping,
    redaction: RedactionPolicy,
}

impl FactStore {
    /// The facts of the agent whose folder is `agent_dir`.
    pub fn new(agent_dir: &Path, redaction: RedactionPolicy) -> FactStore {
        FactStore {
            keeping: Keeping::File(agent_dir.join(SEMANTIC_FILE)),
            redaction,
        }
    }

    /// The facts of `agent` kept by `memory` (in its file when `memory` is
    /// the files backend).
    pub fn on(
        memory: Arc<dyn MemoryStorage>,
        agent: &AgentId,
        redaction: RedactionPolicy,
    ) -> FactStore {
        FactStore {
            keeping: Keeping::of(memory, agent, SEMANTIC_FILE),
            redaction,
        }
    }

    /// Every fact, superseded ones included, oldest first.
    pub fn all(&self) -> Result<Vec<Fact>> {
        match &self.keeping {
            Keeping::File(path) => with_loaded(path, |loaded| Ok(loaded.facts.clone())),
            Keeping::Seam { memory, agent } => memory.read_facts(agent),
        }
    }

    /// The facts that hold now.
    pub fn current(&self) -> Result<Vec<Fact>> {
        Ok(self.all()?.into_iter().filter(Fact::is_current).collect())
    }

    /// Adds a fact, or merges it into a current one that says the same.
    ///
    /// ```
    /// use agentmem::files::records::{NewFact, Provenance, Trust};
    /// use agentmem::memory::facts::{Added, FactStore};
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

    /// Adds several facts with one append to the store.
    pub(crate) fn add_all(&self, new: Vec<NewFact>) -> Result<Vec<Added>> {
        self.add_facts(new, Adding::Always)
    }

    /// Adds the facts the store does not hold yet: a fact whose source
    /// events a near-identical fact already names is left out. A step that
    /// may run again after a crash (a compaction finished on open) adds
    /// each fact once.
    pub(crate) fn add_all_once(&self, new: Vec<NewFact>) -> Result<Vec<Added>> {
        self.add_facts(new, Adding::Once)
    }

    fn add_facts(&self, new: Vec<NewFact>, adding: Adding) -> Result<Vec<Added>> {
        match &self.keeping {
            Keeping::File(path) => {
                let _lock = lock(path)?;
                let new = match adding {
                    Adding::Always => new,
                    Adding::Once => {
                        let known = with_loaded(path, |loaded| Ok(loaded.facts.clone()))?;
                        not_held(&known, new, self.redaction)
                    }
                };
                let texts = cleaned(&new, self.redaction, &mut self.key())?;
                with_loaded(path, |loaded| {
                    let (outcomes, changed) = loaded.add_each(new, texts);
                    loaded.write(path, changed)?;
                    Ok(outcomes)
                })
            }
            Keeping::Seam { memory, agent } => {
                let mut key = self.key();
                let mut outcomes = Vec::new();
                let mut new = Some(new);
                memory.change_facts(agent, &mut |facts| {
                    let new = new.take().unwrap_or_default();
                    let new = match adding {
                        Adding::Always => new,
                        Adding::Once => not_held(&facts, new, self.redaction),
                    };
                    let texts = cleaned(&new, self.redaction, &mut key)?;
                    let mut loaded = Loaded::of(None, facts, 0, false);
                    outcomes = loaded.add_each(new, texts).0;
                    Ok(loaded.facts)
                })?;
                super::count_write();
                Ok(outcomes)
            }
        }
    }

    /// The agent's key for fingerprints, got the first time it is needed.
    fn key(&self) -> HiddenKeyOnce<'_> {
        HiddenKeyOnce {
            source: KeySource::Keeping(&self.keeping),
            key: None,
        }
    }

    /// Corrects a fact: a new fact takes its place, and the old one stays in
    /// the history with `valid_to` and `superseded_by` set.
    pub fn supersede(&self, id: &str, text: &str, provenance: Provenance) -> Result<String> {
        let mut key = self.key();
        let mut provenance = Some(provenance);
        self.rewrite_all(|facts| {
            let old = facts
                .iter()
                .position(|f| f.id == id && f.is_current())
                .ok_or_else(|| Error::FactEdit {
                    message: format!("no current fact {id}; list the facts to see their ids"),
                })?;
            let now = now_ts();
            let (clean, found) = redact(text.trim(), self.redaction);
            let (clean, hidden) = Cleaned::of(clean, found, text.trim(), &mut key)?.into_parts();
            let new_id = format!(
                "fact-{:04}-{:08x}",
                facts.len() + 1,
                fnv1a(clean.as_bytes()) as u32
            );
            let replacement = Fact {
                id: new_id.clone(),
                ts: now,
                fact: clean,
                provenance: provenance.take().unwrap_or_default(),
                valid_from: now,
                valid_to: None,
                superseded_by: None,
                hidden,
                ..facts[old].clone()
            };
            facts[old].valid_to = Some(now);
            facts[old].superseded_by = Some(new_id.clone());
            facts.push(replacement);
            Ok(new_id)
        })
    }

    /// Deletes a fact for good (an explicit request, never a side effect).
    pub fn delete(&self, id: &str) -> Result<()> {
        self.rewrite_all(|facts| {
            let before = facts.len();
            facts.retain(|f| f.id != id);
            if facts.len() == before {
                return Err(Error::FactEdit {
                    message: format!(
                        "no fact {id}; list every fact, superseded ones too, to see their ids"
                    ),
                });
            }
            Ok(())
        })
    }

    /// Runs `change` on every fact under the agent's memory lock and keeps
    /// the whole list it leaves (the file rewritten atomically).
    fn rewrite_all<R>(&self, mut change: impl FnMut(&mut Vec<Fact>) -> Result<R>) -> Result<R> {
        match &self.keeping {
            Keeping::File(path) => {
                let _lock = lock(path)?;
                let mut facts = self.all()?;
                let result = change(&mut facts)?;
                save(path, &facts)?;
                Ok(result)
            }
            Keeping::Seam { memory, agent } => {
                let mut result = None;
                memory.change_facts(agent, &mut |mut facts| {
                    result = Some(change(&mut facts)?);
                    Ok(facts)
                })?;
                super::count_write();
                Ok(result.expect("a change that succeeded ran"))
            }
        }
    }
}

/// `facts` with those of `new` they do not hold yet added, as a
/// compaction adds its facts ([`FactStore`]'s merge of near duplicates, each
/// fact once): for a backend that keeps a compaction's facts in a
/// transaction of its own. `key` gives the agent's key for fingerprints of
/// redacted facts, asked for only when redaction hid something.
pub fn add_once_to(
    facts: Vec<Fact>,
    new: Vec<NewFact>,
    redaction: RedactionPolicy,
    key: &mut dyn FnMut() -> Result<[u8; 16]>,
) -> Result<Vec<Fact>> {
    let new = not_held(&facts, new, redaction);
    let mut key = HiddenKeyOnce {
        source: KeySource::Given(key),
        key: None,
    };
    let texts = cleaned(&new, redaction, &mut key)?;
    let mut loaded = Loaded::of(None, facts, 0, false);
    loaded.add_each(new, texts);
    Ok(loaded.facts)
}

/// A new random key for fingerprints of redacted facts: what a backend
/// keeps as an agent's first when it has none (see
/// [`crate::storage::memory::MemoryStorage::facts_key`]).
pub fn new_facts_key() -> Result<[u8; 16]> {
    crate::base::hash::random_key().map_err(|e| Error::Storage {
        backend: "files",
        action: "make a key for the facts' fingerprints".to_owned(),
        message: e.to_string(),
    })
}

/// `new` without the facts `known` holds already.
fn not_held(known: &[Fact], new: Vec<NewFact>, redaction: RedactionPolicy) -> Vec<NewFact> {
    new.into_iter()
        .filter(|new| !already_holds(known, new, redaction))
        .collect()
}

/// Whether `known` has a fact near `new` that names all its source events.
fn already_holds(known: &[Fact], new: &NewFact, redaction: RedactionPolicy) -> bool {
    let sources = &new.provenance.source_event_ids;
    let words = word_set(&redact(new.fact.trim(), redaction).0);
    !sources.is_empty()
        && known.iter().any(|fact| {
            sources
                .iter()
                .all(|id| fact.provenance.source_event_ids.contains(id))
                && near(&word_set(&fact.fact), &words)
        })
}

/// The texts of `new` as they are kept.
fn cleaned(
    new: &[NewFact],
    redaction: RedactionPolicy,
    key: &mut HiddenKeyOnce,
) -> Result<Vec<Cleaned>> {
    let mut texts = Vec::with_capacity(new.len());
    for new in new {
        let (text, found) = redact(new.fact.trim(), redaction);
        if text.is_empty() {
            return Err(Error::FactEdit {
                message: "a fact needs text".into(),
            });
        }
        texts.push(Cleaned::of(text, found, new.fact.trim(), key)?);
    }
    Ok(texts)
}

/// Whether facts are added as given or only when not held yet.
#[derive(Debug, Clone, Copy)]
enum Adding {
    Always,
    Once,
}

/// Runs `work` on the store as the file at `path` holds it now: the parsed
/// copy kept in memory when the file is unchanged, else the file read
/// again. A failed `work` drops the copy, which it may have changed.
fn with_loaded<R>(path: &Path, work: impl FnOnce(&mut Loaded) -> Result<R>) -> Result<R> {
    let mut cache = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
    let stamp = stamp_of(path)?;
    if cache.get(path).is_none_or(|loaded| loaded.stamp != stamp) {
        let loaded = Loaded::read(path, stamp)?;
        if cache.len() >= LOADED_MAX_STORES {
            cache.clear();
        }
        cache.insert(path.to_path_buf(), loaded);
    }
    let loaded = cache.get_mut(path).expect("kept above");
    let result = work(loaded);
    if result.is_err() {
        cache.remove(path);
    }
    result
}

/// The agent's memory lock, which every change of the store at `path` holds.
fn lock(path: &Path) -> Result<MemoryLock> {
    MemoryLock::acquire(path.parent().unwrap_or(Path::new(".")))
}

fn save(path: &Path, facts: &[Fact]) -> Result<()> {
    let mut cache = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
    cache.remove(path);
    rewrite(path, facts).map(drop)
}

/// The files backend's [`MemoryStorage::change_facts`]: the facts of the
/// agent folder `agent_dir`, changed under its memory lock and kept whole.
pub(crate) fn change_file(
    agent_dir: &Path,
    change: &mut dyn FnMut(Vec<Fact>) -> Result<Vec<Fact>>,
) -> Result<()> {
    let path = agent_dir.join(SEMANTIC_FILE);
    let _lock = lock(&path)?;
    let facts = with_loaded(&path, |loaded| Ok(loaded.facts.clone()))?;
    let changed = change(facts.clone())?;
    if changed != facts {
        save(&path, &changed)?;
    }
    Ok(())
}

/// Stores kept parsed in memory at most; the cache starts over when full.
const LOADED_MAX_STORES: usize = 16;
/// Old versions of facts a file may hold beyond its current lines before an
/// append rewrites it instead.
const STALE_LINES_BEFORE_REWRITE: usize = 64;

/// The parsed stores of this process, by file.
static LOADED: LazyLock<Mutex<HashMap<PathBuf, Loaded>>> = LazyLock::new(Mutex::default);

/// One state of a file: its length, modification time and (on Unix) inode,
/// which an atomic rewrite always changes; `None` when there is no file.
type Stamp = Option<(u64, SystemTime, u64)>;

fn stamp_of(path: &Path) -> Result<Stamp> {
    match std::fs::metadata(path) {
        Ok(meta) => Ok(Some((
            meta.len(),
            meta.modified().io("stat", path)?,
            inode(&meta),
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).io("stat", path),
    }
}

#[cfg(unix)]
fn inode(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(meta)
}

#[cfg(not(unix))]
fn inode(_: &std::fs::Metadata) -> u64 {
    0
}

/// A store as its file held it, with the word sets near duplicates are
/// found by.
struct Loaded {
    stamp: Stamp,
    facts: Vec<Fact>,
    /// Built by the first add: a process that only reads the facts (a
    /// command building a context) never needs it.
    matching: Option<Matching>,
    /// Lines the file holds: one per fact, plus older versions of some.
    lines: usize,
    /// The file ends inside a line (a write cut short): appending to it
    /// would join that line, so the next write rewrites the file.
    torn: bool,
}

/// The word set of each fact, by position, and the index of their words.
#[derive(Default)]
struct Matching {
    words: Vec<BTreeSet<String>>,
    near_index: NearIndex,
}

impl Matching {
    fn of(facts: &[Fact]) -> Matching {
        let mut matching = Matching::default();
        for (i, fact) in facts.iter().enumerate() {
            let these = word_set(&fact.fact);
            matching.near_index.add(i, &these);
            matching.words.push(these);
        }
        matching
    }
}

impl Loaded {
    /// Reads the store; the last line with an id is that fact, in the place
    /// of its first line.
    fn read(path: &Path, stamp: Stamp) -> Result<Loaded> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e).io("read", path),
        };
        let mut facts: Vec<Fact> = Vec::new();
        let mut position: HashMap<String, usize> = HashMap::new();
        let mut lines = 0;
        for line in text.lines() {
            lines += 1;
            let Ok(fact) = serde_json::from_str::<Fact>(line) else {
                continue;
            };
            match position.get(&fact.id) {
                Some(&i) => facts[i] = fact,
                None => {
                    position.insert(fact.id.clone(), facts.len());
                    facts.push(fact);
                }
            }
        }
        let torn = !text.is_empty() && !text.ends_with('\n');
        Ok(Loaded::of(stamp, facts, lines, torn))
    }

    /// The store of `facts`, as a file of `lines` lines (`torn` when cut
    /// inside its last) with `stamp` holds them.
    fn of(stamp: Stamp, facts: Vec<Fact>, lines: usize, torn: bool) -> Loaded {
        Loaded {
            stamp,
            facts,
            matching: None,
            lines,
            torn,
        }
    }

    /// Adds each of `new` (their texts cleaned to `texts`): what happened
    /// to each, and the positions of the facts changed.
    fn add_each(&mut self, new: Vec<NewFact>, texts: Vec<Cleaned>) -> (Vec<Added>, Vec<usize>) {
        let mut outcomes = Vec::with_capacity(new.len());
        let mut changed = Vec::new();
        for (new, text) in new.into_iter().zip(texts) {
            let (outcome, position) = self.add(new, text);
            outcomes.push(outcome);
            changed.push(position);
        }
        (outcomes, changed)
    }

    /// Merges `new` (its text cleaned to `text`) into the current fact that
    /// says the same, or adds it; what happened, and the fact's position.
    fn add(&mut self, new: NewFact, text: Cleaned) -> (Added, usize) {
        let these = word_set(text.as_str());
        let matching = self
            .matching
            .get_or_insert_with(|| Matching::of(&self.facts));
        let same = matching
            .near_index
            .candidates(&these)
            .into_iter()
            .find(|&i| {
                let existing = &self.facts[i];
                existing.is_current()
                    && near(&matching.words[i], &these)
                    && text.may_merge_into(existing, &new.provenance)
            });
        if let Some(i) = same {
            let existing = &mut self.facts[i];
            existing.confidence = existing.confidence.max(new.confidence);
            existing.salience = existing.salience.max(new.salience);
            for id in new.provenance.source_event_ids {
                if !existing.provenance.source_event_ids.contains(&id) {
                    existing.provenance.source_event_ids.push(id);
                }
            }
            return (Added::Merged(existing.id.clone()), i);
        }
        let (text, hidden) = text.into_parts();
        let now = now_ts();
        let id = format!(
            "fact-{:04}-{:08x}",
            self.facts.len() + 1,
            fnv1a(text.as_bytes()) as u32
        );
        self.facts.push(Fact {
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
            hidden,
        });
        let position = self.facts.len() - 1;
        matching.near_index.add(position, &these);
        matching.words.push(these);
        (Added::Added(id), position)
    }

    /// Writes the facts at `changed` (positions, in any order): appended,
    /// or the whole store rewritten when the file is torn or old versions
    /// would outnumber the facts.
    fn write(&mut self, path: &Path, mut changed: Vec<usize>) -> Result<()> {
        changed.sort_unstable();
        changed.dedup();
        if changed.is_empty() {
            return Ok(());
        }
        let lines = self.lines.saturating_add(changed.len());
        let stale = lines.saturating_sub(self.facts.len());
        let expected_len = if self.torn || stale > self.facts.len().max(STALE_LINES_BEFORE_REWRITE)
        {
            self.lines = self.facts.len();
            self.torn = false;
            rewrite(path, &self.facts)?
        } else {
            let facts: Vec<&Fact> = changed.iter().map(|&i| &self.facts[i]).collect();
            self.lines = lines;
            self.stamp.map_or(0, |(len, _, _)| len) + append(path, &facts)?
        };
        // Another writer's lines in between would make the file longer than
        // ours alone: then the file is read again next time.
        self.stamp = stamp_of(path)?.filter(|(len, _, _)| *len == expected_len);
        Ok(())
    }
}

/// A fact's text as it is kept.
enum Cleaned {
    /// Nothing in it was redacted.
    AsGiven(String),
    /// Redaction replaced something: two such facts may read the same and
    /// hold different secrets ("the password is [REDACTED:secret]"). The
    /// fingerprint of the words it hid tells them apart.
    Redacted { text: String, hidden: String },
}

impl Cleaned {
    fn of(text: String, found: Redacted, said: &str, key: &mut HiddenKeyOnce) -> Result<Cleaned> {
        if found.is_empty() {
            return Ok(Cleaned::AsGiven(text));
        }
        let kept = exact_words(&text);
        let hidden = exact_words(said).difference(&kept).cloned().collect();
        let hidden = key.get()?.fingerprint(&hidden);
        Ok(Cleaned::Redacted { text, hidden })
    }

    fn as_str(&self) -> &str {
        match self {
            Cleaned::AsGiven(text) | Cleaned::Redacted { text, .. } => text,
        }
    }

    /// The text, and the fingerprint of what was hidden from it.
    fn into_parts(self) -> (String, Option<String>) {
        match self {
            Cleaned::AsGiven(text) => (text, None),
            Cleaned::Redacted { text, hidden } => (text, Some(hidden)),
        }
    }

    /// Whether a fact with this text, drawn from what `provenance` names,
    /// may merge into `existing`, a near duplicate once redacted: a
    /// redacted one only when it hid the same, or came from one of the same
    /// events, so two that differ only in what was redacted stay two.
    fn may_merge_into(&self, existing: &Fact, provenance: &Provenance) -> bool {
        match self {
            Cleaned::AsGiven(_) => true,
            Cleaned::Redacted { hidden, .. } => {
                existing.hidden.as_ref() == Some(hidden)
                    || provenance
                        .source_event_ids
                        .iter()
                        .any(|id| existing.provenance.source_event_ids.contains(id))
            }
        }
    }
}

/// The agent's key for fingerprints, read (or made) the first time a fact
/// needs it.
struct HiddenKeyOnce<'a> {
    source: KeySource<'a>,
    key: Option<HiddenKey>,
}

/// Where the agent's key is got.
enum KeySource<'a> {
    /// From where its facts are kept.
    Keeping(&'a Keeping),
    /// From the caller.
    Given(&'a mut dyn FnMut() -> Result<[u8; 16]>),
}

impl HiddenKeyOnce<'_> {
    fn get(&mut self) -> Result<HiddenKey> {
        if let Some(key) = self.key {
            return Ok(key);
        }
        let key = match &mut self.source {
            KeySource::Keeping(Keeping::File(path)) => {
                HiddenKey::of_agent(path.parent().unwrap_or(Path::new(".")))?
            }
            KeySource::Keeping(Keeping::Seam { memory, agent }) => {
                HiddenKey::of_seam(memory.as_ref(), agent)?
            }
            KeySource::Given(give) => HiddenKey::from_bytes(give()?),
        };
        self.key = Some(key);
        Ok(key)
    }
}

/// The words of a text, case kept: secrets differ in case too.
fn exact_words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Replaces the file with `facts`, one line each, atomically; its new length.
fn rewrite(path: &Path, facts: &[Fact]) -> Result<u64> {
    if let Some(dir) = path.parent() {
        crate::base::fs::create_dir_all(dir).io("create", dir)?;
    }
    let bytes = lines_of(facts.iter());
    let written = write_atomic(path, &bytes);
    super::count_write();
    written?;
    Ok(bytes.len() as u64)
}

/// Appends `facts` to the file, one line each, and syncs it; the bytes added.
fn append(path: &Path, facts: &[&Fact]) -> Result<u64> {
    if let Some(dir) = path.parent() {
        crate::base::fs::create_dir_all(dir).io("create", dir)?;
    }
    let mut file = crate::base::fs::open_append(path).io("open", path)?;
    let bytes = lines_of(facts.iter().copied());
    let written = file
        .write_all(&bytes)
        .io("append to", path)
        .and_then(|()| file.sync_data().io("fsync", path));
    super::count_write();
    written?;
    Ok(bytes.len() as u64)
}

fn lines_of<'f>(facts: impl Iterator<Item = &'f Fact>) -> Vec<u8> {
    let mut out = Vec::new();
    for fact in facts {
        serde_json::to_writer(&mut out, fact).expect("a fact serializes");
        out.push(b'\n');
    }
    out
}

/// The words of a text, case and punctuation aside.
pub(crate) fn word_set(text: &str) -> BTreeSet<String> {
    crate::search::query::word_sequence(text).collect()
}

/// Same words (order aside), or nearly: a Jaccard overlap of at least
/// [`NEAR_DUPLICATE_JACCARD`]. Sets whose sizes alone rule that out are not
/// compared (most pairs, when many texts are checked against each other),
/// and the comparison stops as soon as the words left cannot make the
/// overlap: a store of a small vocabulary offers many candidates, and most
/// differ within their first few words.
pub(crate) fn near(a: &BTreeSet<String>, b: &BTreeSet<String>) -> bool {
    near_sorted(a.iter(), b.iter())
}

/// [`near`] for two sets given as their members in ascending order, each
/// once.
pub(crate) fn near_sorted<I>(a: I, b: I) -> bool
where
    I: ExactSizeIterator,
    I::Item: Ord,
{
    let (a_len, b_len) = (a.len(), b.len());
    let (small, large) = if a_len <= b_len { (a, b) } else { (b, a) };
    if large.len() == 0 {
        return true;
    }
    if (small.len() as f64) < NEAR_DUPLICATE_JACCARD * large.len() as f64 {
        return false;
    }
    let overlaps = |shared: usize| {
        let union = a_len + b_len - shared;
        shared as f64 >= NEAR_DUPLICATE_JACCARD * union as f64
    };
    // Both are sorted: walk them together.
    let mut small_left = small.len();
    let (mut xs, mut ys) = (small.peekable(), large.peekable());
    let mut shared = 0;
    while let (Some(x), Some(y)) = (xs.peek(), ys.peek()) {
        if !overlaps(shared + small_left) {
            return false;
        }
        match x.cmp(y) {
            std::cmp::Ordering::Less => {
                xs.next();
                small_left -= 1;
            }
            std::cmp::Ordering::Greater => {
                ys.next();
            }
            std::cmp::Ordering::Equal => {
                (shared, small_left) = (shared + 1, small_left - 1);
                xs.next();
                ys.next();
            }
        }
    }
    overlaps(shared)
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
#[path = "facts_tests.rs"]
mod tests;
