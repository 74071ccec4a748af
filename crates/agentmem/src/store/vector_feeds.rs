//! The background embedders of a store and its clones: one per agent index
//! (see [`crate::search::vector_feed`]), started when a session that writes
//! to that index opens, or when a recall or a wait asks for it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use crate::base::id::AgentId;
use crate::search::vector_feed::IndexOpener;
use crate::search::vectors::SharedEmbedder;
use crate::search::VectorFeed;

/// Which index a feed embeds into.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum FeedKey {
    /// The files backend's index in an agent's folder.
    Files(PathBuf),
    /// A database backend's index of an agent (the backend by its name).
    Backend(&'static str, AgentId),
}

/// A store's embedder and the feeds that run it.
#[derive(Debug)]
pub(crate) struct VectorFeeds {
    embedder: SharedEmbedder,
    feeds: Mutex<HashMap<FeedKey, Arc<VectorFeed>>>,
}

impl VectorFeeds {
    pub(crate) fn new(embedder: SharedEmbedder) -> VectorFeeds {
        VectorFeeds {
            embedder,
            feeds: Mutex::new(HashMap::new()),
        }
    }

    /// The feed of the index `key` names, started with `open` when there
    /// is none yet.
    pub(crate) fn feed(&self, key: FeedKey, open: impl FnOnce() -> IndexOpener) -> Arc<VectorFeed> {
        let mut feeds = self.feeds.lock().unwrap_or_else(PoisonError::into_inner);
        let feed = feeds
            .entry(key)
            .or_insert_with(|| Arc::new(VectorFeed::start(self.embedder.clone(), open())));
        Arc::clone(feed)
    }

    /// Stops every feed (each after its batch under way) and waits for
    /// them; later asks start new ones.
    pub(crate) fn stop_all(&self) {
        let stopped: Vec<Arc<VectorFeed>> = {
            let mut feeds = self.feeds.lock().unwrap_or_else(PoisonError::into_inner);
            feeds.drain().map(|(_, feed)| feed).collect()
        };
        stopped.iter().for_each(|feed| feed.stop());
    }

    /// The feed of the index `key` names, if one runs.
    pub(crate) fn running(&self, key: &FeedKey) -> Option<Arc<VectorFeed>> {
        let feeds = self.feeds.lock().unwrap_or_else(PoisonError::into_inner);
        feeds.get(key).cloned()
    }
}
