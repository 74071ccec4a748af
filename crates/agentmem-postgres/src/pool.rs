//! [`Connections`]: the connections a store's history indexes search
//! on, kept open between searches instead of one opened per call.

use std::sync::Mutex;

use agentmem::config::DatabaseUrl;
use agentmem::Result;
use postgres::Client;

use crate::nearest::Indexed;
use crate::storage::connect;

/// Idle connections kept for the next searches; more are opened when
/// more search at once, and closed when handed back beyond this.
const MAX_IDLE: usize = 4;

/// How the database finds the vectors nearest a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nearest {
    /// pgvector's HNSW index, per model, over the vectors' `embedding` copy.
    Hnsw,
    /// Every vector in scope read and compared (no pgvector).
    ExactScan,
}

/// A small pool of connections to one database.
pub(crate) struct Connections {
    config: postgres::Config,
    url: DatabaseUrl,
    idle: Mutex<Vec<Client>>,
    nearest: Nearest,
    indexed: Indexed,
}

impl Connections {
    pub(crate) fn new(config: postgres::Config, url: DatabaseUrl, nearest: Nearest) -> Connections {
        Connections {
            config,
            url,
            idle: Mutex::new(Vec::new()),
            nearest,
            indexed: Indexed::default(),
        }
    }

    /// How the database finds the nearest vectors.
    pub(crate) fn nearest(&self) -> Nearest {
        self.nearest
    }

    /// The models whose HNSW index is known to be built.
    pub(crate) fn indexed(&self) -> &Indexed {
        &self.indexed
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Client>> {
        // Nothing is left half-done in the list by a panic elsewhere.
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An open connection: an idle one, or a new one.
    pub(crate) fn take(&self) -> Result<Client> {
        while let Some(client) = self.idle().pop() {
            if !client.is_closed() {
                return Ok(client);
            }
        }
        connect(&self.config, &self.url)
    }

    /// Keeps `client` for the next search, unless it is closed or enough
    /// are kept already.
    pub(crate) fn give_back(&self, client: Client) {
        if client.is_closed() {
            return;
        }
        let mut idle = self.idle();
        if idle.len() < MAX_IDLE {
            idle.push(client);
        }
    }
}
