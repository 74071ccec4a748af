//! What long-term memory a session's prompt gets: its project files and
//! MEMORY.md, and what earlier sessions left — recalled for the latest
//! question when the agent's index has something to recall, else the
//! agent's best facts and latest summaries. Rebuilt only when a memory file
//! or the question changed.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::project::{
    cross_session_block, cross_session_block_on, memory_block, memory_block_of, memory_stamp,
    MemorySettings, CROSS_SESSION_HEADING, DEFAULT_CROSS_SESSION_TOKENS,
};
use crate::base::event::{Event, TraceType};
use crate::base::id::AgentId;
use crate::memory::recall::{recall, refresh_memories, Embedder, RecallRequest};
use crate::redact::RedactionPolicy;
use crate::search::vectors::SharedEmbedder;
use crate::search::{HistoryIndex, IndexFeeder};
use crate::storage::memory::MemoryStorage;
use crate::storage::search::SearchIndex;
use crate::storage::Storage;
use crate::tokens::{Encoding, Tokenizer};

/// How long a look at the memory files stands for calls that come faster.
///
/// Looking costs a `stat` per file (a few microseconds each on a virtual
/// machine, the largest cost of a call that needs no counting), while an
/// agent's calls come seconds apart: a change made by another process shows
/// from the first call after this interval. This process's own memory
/// writes show at once ([`crate::memory::writes`]).
pub const MEMORY_RECHECK_INTERVAL: Duration = Duration::from_secs(1);

/// Long-term memory as it is injected: what stays the same from call to
/// call in the system prompt, what follows the latest question in the live
/// context, so a new question does not change the prefix a provider cached.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct MemoryBlocks {
    /// Project files and MEMORY.md.
    pub(crate) lasting: Option<String>,
    /// What was recalled for the latest question, or else the agent's best
    /// facts and latest summaries.
    pub(crate) recalled: Option<String>,
}

/// The memory one session injects, and what it was built from (see the
/// module docs).
#[derive(Debug)]
pub(crate) struct MemoryInjector {
    /// The agent's folder: its memory files and its search index.
    agent_dir: PathBuf,
    /// The session injected into, whose own history recall leaves out.
    session: String,
    settings: MemorySettings,
    /// Personal data kept out of what other sessions left.
    redaction: RedactionPolicy,
    /// Adds its vectors' score to recall, when the store has one.
    embedder: Option<SharedEmbedder>,
    cache: Option<MemoryCache>,
    index: IndexReader,
    /// What this session may do to the index.
    index_use: IndexUse,
    /// The agent's memory when it is kept behind the storage seam (the
    /// agent's folder holds none of it then, and no search index).
    seam: Option<SeamMemory>,
    /// Behind the seam, the agent's history index as opened, caught up,
    /// to see whether there is anything to recall: the recall that
    /// follows in the same call reads it.
    seam_index: Option<Box<dyn SearchIndex>>,
}

/// An agent's memory kept behind the storage seam.
#[derive(Debug, Clone)]
pub(crate) struct SeamMemory {
    pub(crate) memory: Arc<dyn MemoryStorage>,
    /// The sessions, whose history index recall reads.
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) agent: AgentId,
}

impl SeamMemory {
    /// A fingerprint of the notebook, facts and episodes as kept now: the
    /// same while none of them changed.
    fn stamp(&self) -> Option<(std::time::SystemTime, u64)> {
        use std::hash::Hasher;
        let mut hasher = crate::base::hash::fingerprint_hasher();
        hasher.write(self.memory.read_notebook(&self.agent).ok()?.hash.as_bytes());
        for fact in self.memory.read_facts(&self.agent).ok()? {
            hasher.write(serde_json::to_string(&fact).ok()?.as_bytes());
        }
        for episode in self.memory.read_episodes(&self.agent).ok()? {
            hasher.write(episode.id.as_bytes());
        }
        Some((std::time::UNIX_EPOCH, hasher.finish()))
    }
}

/// The session's read handle on the agent's search index.
#[derive(Debug)]
enum IndexReader {
    /// Opened at the first recall, as the session may use it.
    Unopened,
    Open(Box<HistoryIndex>),
    /// Opening failed (or a reader found none): recall falls back to the
    /// salience-ordered block.
    Failed,
}

/// What a session may do to the agent's search index when it recalls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IndexUse {
    /// A writer's: made when missing, its copy of facts and episodes kept
    /// up to date.
    Maintain,
    /// A reader's (a dry run's): read as it is when it is there, never
    /// made or changed.
    ReadAsIs,
}

/// The modification stamps of the files the memory block is made of.
type MemoryStamp = Vec<Option<(std::time::SystemTime, u64)>>;

/// The memory block, kept while its files, the encoding and the query that
/// recalled its cross-session part are unchanged.
#[derive(Debug)]
struct MemoryCache {
    stamp: MemoryStamp,
    /// When the files were last looked at for `stamp`.
    looked_at: Instant,
    /// [`crate::memory::writes`] just before that look.
    writes: u64,
    encoding: Encoding,
    query: Option<String>,
    /// Project files and MEMORY.md.
    own: Option<String>,
    /// The agent's best facts and latest summaries of its other sessions.
    cross_session: Option<String>,
    /// What is injected: `own`, with what was recalled or `cross_session`.
    blocks: MemoryBlocks,
    tokens: u64,
}

impl MemoryInjector {
    /// The injector of `session`, an agent's in `agent_dir`; nothing read yet.
    pub(crate) fn new(
        agent_dir: PathBuf,
        session: String,
        settings: MemorySettings,
        redaction: RedactionPolicy,
        embedder: Option<SharedEmbedder>,
        index_use: IndexUse,
    ) -> MemoryInjector {
        MemoryInjector {
            agent_dir,
            session,
            settings,
            redaction,
            embedder,
            cache: None,
            index: IndexReader::Unopened,
            index_use,
            seam: None,
            seam_index: None,
        }
    }

    /// The same injector, reading the agent's memory from behind the seam.
    pub(crate) fn on_seam(self, seam: Option<SeamMemory>) -> MemoryInjector {
        MemoryInjector { seam, ..self }
    }

    /// The tokens of the blocks built last (0 before the first).
    pub(crate) fn tokens(&self) -> u64 {
        self.cache.as_ref().map_or(0, |cache| cache.tokens)
    }

    /// MEMORY.md, project files, and what earlier sessions left: recalled
    /// for the latest user message of `events` that says something (not an
    /// "ok") when there is one, else the agent's best facts and latest
    /// summaries. Rebuilt only when a memory file or that message changed.
    /// `feeder`, the session's indexer, may already know whether there is
    /// anything to recall.
    pub(crate) fn blocks(
        &mut self,
        events: &[Arc<Event>],
        feeder: Option<&IndexFeeder>,
        tokenizer: Tokenizer,
    ) -> MemoryBlocks {
        let (stamp, looked_at, writes) = self.memory_files_stamp();
        let query = latest_question(events);
        let encoding = tokenizer.encoding();
        let files_unchanged = self
            .cache
            .as_ref()
            .is_some_and(|c| c.stamp == stamp && c.encoding == encoding);
        if let Some(cache) = &mut self.cache {
            if files_unchanged && cache.query == query {
                // The look stands for the next calls: it found nothing new.
                cache.looked_at = looked_at;
                cache.writes = writes;
                return cache.blocks.clone();
            }
        }
        // The parts made of files alone are rebuilt only when a file changed.
        let (own, cross_session) = match (&self.cache, files_unchanged) {
            (Some(cache), true) => (cache.own.clone(), cache.cross_session.clone()),
            _ => match &self.seam {
                None => (
                    memory_block(Some(&self.agent_dir), &self.settings, tokenizer),
                    cross_session_block(
                        &self.agent_dir,
                        &self.session,
                        &self.settings,
                        self.redaction,
                        tokenizer,
                    ),
                ),
                Some(seam) => (
                    memory_block_of(
                        Some(
                            seam.memory
                                .read_notebook(&seam.agent)
                                .map(|v| v.content)
                                .unwrap_or_default(),
                        ),
                        &self.settings,
                        tokenizer,
                    ),
                    cross_session_block_on(
                        seam.memory.as_ref(),
                        &seam.agent,
                        &self.session,
                        &self.settings,
                        self.redaction,
                        tokenizer,
                    ),
                ),
            },
        };
        let blocks = if query.is_none() || self.nothing_to_recall(feeder) {
            // What stands in for recall then changes only with its files:
            // it lasts, in the system prompt.
            let lasting = [own.as_deref(), cross_session.as_deref()];
            let lasting: Vec<&str> = lasting.into_iter().flatten().collect();
            MemoryBlocks {
                lasting: (!lasting.is_empty()).then(|| lasting.join("\n\n")),
                recalled: None,
            }
        } else {
            let recalled = query
                .as_deref()
                .and_then(|q| self.recall_block(q, tokenizer));
            MemoryBlocks {
                lasting: own.clone(),
                recalled: recalled.or_else(|| cross_session.clone()),
            }
        };
        let tokens = match &self.cache {
            Some(cache) if cache.blocks == blocks && cache.encoding == encoding => cache.tokens,
            _ => [&blocks.lasting, &blocks.recalled]
                .into_iter()
                .flatten()
                .map(|b| tokenizer.count(b) as u64)
                .sum(),
        };
        self.cache = Some(MemoryCache {
            stamp,
            looked_at,
            writes,
            encoding,
            query,
            own,
            cross_session,
            blocks: blocks.clone(),
            tokens,
        });
        blocks
    }

    /// The memory files' stamp, when it was taken, and this process's
    /// memory writes just before: the cached stamp while this process wrote
    /// no memory since and it is younger than [`MEMORY_RECHECK_INTERVAL`],
    /// else a fresh look at the files.
    fn memory_files_stamp(&self) -> (MemoryStamp, Instant, u64) {
        let writes = super::writes();
        if let Some(cache) = &self.cache {
            if cache.writes == writes && cache.looked_at.elapsed() < MEMORY_RECHECK_INTERVAL {
                return (cache.stamp.clone(), cache.looked_at, writes);
            }
        }
        let mut stamp = memory_stamp(&self.agent_dir, &self.settings);
        if let Some(seam) = &self.seam {
            stamp.push(seam.stamp());
        }
        (stamp, Instant::now(), writes)
    }

    /// Whether recall can find nothing: the session is alone with its own
    /// history in the agent's index (whose facts its summary holds; facts
    /// given by hand are in the block that stands in), or the index cannot
    /// be read. Alone, a session does not refresh the index's copy of the
    /// facts after each of its compactions. A writer's indexer (`feeder`)
    /// has the answer ready, as of the latest events it indexed.
    fn nothing_to_recall(&mut self, feeder: Option<&IndexFeeder>) -> bool {
        if let Some(seam) = &self.seam {
            // The backend's index, caught up with every session but for
            // what this process's indexer is adding: anything of another
            // session there is something to recall.
            self.seam_index = seam.storage.search_index_as_fed(&seam.agent).ok();
            let session = &self.session;
            return self.seam_index.as_ref().is_none_or(|index| {
                !index.indexed_sessions().is_ok_and(|sessions| {
                    sessions
                        .iter()
                        .any(|(other, count)| other != session && *count > 0)
                })
            });
        }
        match feeder.and_then(IndexFeeder::memories_beyond) {
            Some(beyond) => !beyond,
            None => {
                let session = self.session.clone();
                self.index_mut()
                    .is_none_or(|index| !index.has_memories_beyond(&session).unwrap_or(false))
            }
        }
    }

    /// Facts, episodes and other sessions' events recalled for `query`,
    /// under the cross-session budget, when there is something to recall
    /// ([`MemoryInjector::nothing_to_recall`]); `None` when nothing matched
    /// (the salience-ordered block stands in).
    fn recall_block(&mut self, query: &str, tokenizer: Tokenizer) -> Option<String> {
        let budget = self
            .settings
            .cross_session_tokens
            .unwrap_or(DEFAULT_CROSS_SESSION_TOKENS);
        let heading = CROSS_SESSION_HEADING;
        let budget = budget.checked_sub(tokenizer.count(heading) as u64 + 1)?;
        let agent_dir = self.agent_dir.clone();
        let session = self.session.clone();
        let embedder = self.embedder.clone();
        let redaction = self.redaction;
        let maintain = self.index_use == IndexUse::Maintain;
        let mut request = RecallRequest::new(query, budget);
        request.exclude_session = Some(session);
        if let Some(index) = self.seam_index.take() {
            // Behind the seam the index catches up as it is opened: its
            // vectors are the backend's, embedded in the background.
            let vectors = embedder.as_ref().map(|e| &*e.0 as &dyn Embedder);
            let recall = |vectors| recall(&*index, &request, tokenizer, vectors, None, redaction);
            let recalled = match recall(vectors) {
                Ok(recalled) => recalled,
                Err(_) if vectors.is_some() => recall(None).ok()?,
                Err(_) => return None,
            };
            return (!recalled.items.is_empty()).then(|| format!("{heading}\n{}", recalled.block));
        }
        let index = self.index_mut()?;
        if maintain {
            refresh_memories(index, &agent_dir).ok()?;
        }
        // Recall embeds only the query: the documents are embedded in the
        // background, and those without a vector yet compete by their words.
        let vectors = embedder.as_ref().map(|e| &*e.0 as &dyn Embedder);
        let recall = |vectors| recall(index, &request, tokenizer, vectors, None, redaction);
        let recalled = match recall(vectors) {
            Ok(recalled) => recalled,
            // An embedder that is down must not cost the context its
            // memories: lexical recall still answers.
            Err(_) if vectors.is_some() => recall(None).ok()?,
            Err(_) => return None,
        };
        (!recalled.items.is_empty()).then(|| format!("{heading}\n{}", recalled.block))
    }

    /// The agent's search index for reading, opened on first use; `None` once it failed.
    fn index_mut(&mut self) -> Option<&mut HistoryIndex> {
        if let IndexReader::Unopened = self.index {
            let opened = match self.index_use {
                IndexUse::Maintain => HistoryIndex::open(&self.agent_dir).ok(),
                IndexUse::ReadAsIs => HistoryIndex::open_read_only(&self.agent_dir).ok().flatten(),
            };
            self.index = match opened {
                Some(index) => IndexReader::Open(Box::new(index)),
                None => IndexReader::Failed,
            };
        }
        match &mut self.index {
            IndexReader::Open(index) => Some(index),
            IndexReader::Unopened | IndexReader::Failed => None,
        }
    }
}

/// The latest question of `events`, not an "ok, go ahead" after it: that
/// would recall noise and change the live context for nothing.
fn latest_question(events: &[Arc<Event>]) -> Option<String> {
    events
        .iter()
        .rev()
        .filter(|e| e.trace_type == TraceType::User)
        .find(|e| crate::search::query::says_something(&e.content))
        .map(|e| e.content.clone())
}

#[cfg(test)]
#[path = "injector_tests.rs"]
mod tests;
