//! agentmem's PostgreSQL storage backend: the engine's storage seam
//! ([`agentmem::storage`]) over one database that many agent servers, on
//! many hosts, share.
//!
//! - **Schema**: created and upgraded by versioned migrations
//!   ([`migrations`]), each in its own transaction, recorded in
//!   `agentmem_schema_migrations`; servers starting at once take turns.
//! - **Events**: one row each, keyed by `(agent, session, seq)`, `seq`
//!   numbering the session's appends from 1, with the event's id unique in
//!   its session (so an append is idempotent by id, archive included) and
//!   the event kept as the exact JSON line the files backend would write.
//!   An append is one transaction: all of a batch or none of it.
//! - **Compaction**: the snapshot, the move of the compacted events to the
//!   archive (a flag on their rows) and the session's counts commit in one
//!   transaction.
//! - **One writer per session, across hosts**: a writer holds a
//!   session-level advisory lock on a connection of its own, and writes
//!   only through that connection. A second writer anywhere gets
//!   [`agentmem::Error::SessionLocked`], naming the holder's pid and host.
//!   The lock dies with its connection: at once when the holder's process
//!   exits or is killed (its kernel closes the socket), and within
//!   [`DEAD_HOST_RECLAIM`] when its host vanishes, by the server-side TCP
//!   keepalives and user timeout set on every writer's connection. A writer
//!   whose connection died cannot write any more: its appends fail.
//! - **Search and recall**: each agent's history index is in the database
//!   too ([`PgSearch`]): a `tsvector` of every event under a GIN index,
//!   each lexeme's document count in a table kept with it, ranked by BM25
//!   as the files index ranks, vectors compared by an exact scan or, with
//!   pgvector on the server, found through an HNSW index; searched on
//!   connections a store keeps open between searches.
//! - **Readers never block**: reads take no lock and see the last
//!   committed state.
//! - **The URL's password** is never logged or shown: errors name the
//!   database by [`agentmem::config::DatabaseUrl::masked`].

mod feed;
mod memory;
pub mod migrations;
mod nearest;
mod pool;
mod search;
mod storage;
mod writer;

use std::io::Write as _;
use std::time::Duration;

pub use search::PgSearch;
pub use storage::PgStorage;

/// How long after a writer's host vanishes (power loss, network cut) its
/// sessions' locks are free again, at most: the server probes an idle
/// connection after [`KEEPALIVE_IDLE`], every [`KEEPALIVE_INTERVAL`],
/// [`KEEPALIVE_COUNT`] times (10 + 3 × 5 = 25 s), and drops one whose sent
/// data stays unacknowledged for [`USER_TIMEOUT`] (20 s); the advisory
/// lock goes with the connection.
pub const DEAD_HOST_RECLAIM: Duration = Duration::from_secs(30);

/// Idle time before the first keepalive probe, both ways.
pub const KEEPALIVE_IDLE: Duration = Duration::from_secs(10);
/// Time between keepalive probes.
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);
/// Unanswered probes before a connection is dropped.
pub const KEEPALIVE_COUNT: u32 = 3;
/// Longest a connection's sent data may stay unacknowledged.
pub const USER_TIMEOUT: Duration = Duration::from_secs(20);
/// Longest a connection attempt may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The environment variable naming the database tests run against
/// (`scripts/postgres run` sets it).
pub const TEST_DATABASE_ENV: &str = "AGENTMEM_TEST_DATABASE_URL";
/// Set to `1` (as CI does), a test that finds no test database fails
/// instead of skipping.
pub const REQUIRE_DATABASE_ENV: &str = "AGENTMEM_REQUIRE_POSTGRES";

/// The database tests run against, from [`TEST_DATABASE_ENV`]. Without
/// one, a test skips with a loud message on stderr (once a test binary),
/// unless [`REQUIRE_DATABASE_ENV`] is `1`: then this panics, failing the test.
pub fn test_database(test: &str) -> Option<agentmem::config::DatabaseUrl> {
    match std::env::var(TEST_DATABASE_ENV) {
        Ok(url) if !url.is_empty() => Some(agentmem::config::DatabaseUrl::new(url)),
        _ => {
            assert!(
                std::env::var(REQUIRE_DATABASE_ENV).as_deref() != Ok("1"),
                "{REQUIRE_DATABASE_ENV}=1 but {TEST_DATABASE_ENV} is not set: \
                 run the tests through `scripts/postgres run`"
            );
            // Straight to the process's stderr, past the test harness's
            // capture, once a test binary: a skip is seen.
            static ONCE: std::sync::Once = std::sync::Once::new();
            ONCE.call_once(|| {
                let _ = writeln!(
                    std::io::stderr(),
                    "\n*** SKIPPED {test} and every other postgres test of this binary: \
                     no PostgreSQL ({TEST_DATABASE_ENV} is not set); run the tests through \
                     `scripts/postgres run` to test the postgres backend ***\n"
                );
            });
            None
        }
    }
}

/// The backend's name in errors.
const BACKEND: &str = "postgres";

/// The engine's error for a failed database call, saying what was being
/// done; a server's own message (with its detail) when there is one.
fn db_error(action: impl Into<String>, error: &postgres::Error) -> agentmem::Error {
    let message = match error.as_db_error() {
        Some(db) => match db.detail() {
            Some(detail) => format!("{} ({detail})", db.message()),
            None => db.message().to_owned(),
        },
        None => match std::error::Error::source(error) {
            Some(source) => format!("{error}: {source}"),
            None => error.to_string(),
        },
    };
    agentmem::Error::Storage {
        backend: BACKEND,
        action: action.into(),
        message,
    }
}

/// The engine's error for data in the database that does not read back.
fn data_error(action: impl Into<String>, message: impl std::fmt::Display) -> agentmem::Error {
    agentmem::Error::Storage {
        backend: BACKEND,
        action: action.into(),
        message: message.to_string(),
    }
}
