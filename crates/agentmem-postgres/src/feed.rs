//! [`Feeder`]: the history index fed as events are appended, not when it
//! is next searched. A process's writers hand each committed append to one
//! background thread, which indexes it on a connection of its own while the
//! agent goes on: the append costs what it cost before, and the index is
//! caught up by the time a question reaches recall, whose catch-up then
//! finds nothing to add.
//!
//! The events table, not the index, is the record: an append the thread
//! has not indexed when the process dies, or cannot index, is added by the
//! next index opened on the agent (see [`crate::search`]'s catch-up). An
//! index opened for a prepare's recall in the same process leaves to the
//! thread what it was handed ([`Feeder::will_index`]), rather than add the
//! same events beside it and wait on it for the agent's lock: that recall
//! may lack the latest events then, as recall in a session on files does.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use agentmem::{AgentId, Event};
use postgres::Client;

use crate::pool::Connections;
use crate::search::{feed_session, IndexedRun};

/// What the thread is asked.
enum Job {
    /// Index `events`, the first at position `first_ord` of the session's full history.
    Add {
        agent: AgentId,
        session: String,
        first_ord: u64,
        events: Vec<Event>,
    },
}

/// The background indexer of one store's writers. Dropping it waits for
/// the appends already handed over to be indexed.
pub(crate) struct Feeder {
    jobs: Mutex<Option<Sender<Job>>>,
    worker: Option<JoinHandle<()>>,
    handed: Arc<Handed>,
}

/// How far each session's events were handed to the thread and not
/// indexed yet, while it runs.
#[derive(Default)]
struct Handed {
    /// Per agent and session, the events handed so far, counted from the
    /// start of the session's full history.
    through: Mutex<HashMap<(AgentId, String), u64>>,
    /// Set once the thread stopped: what it was handed may never be indexed.
    stopped: AtomicBool,
}

impl std::fmt::Debug for Feeder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feeder").finish_non_exhaustive()
    }
}

impl Handed {
    /// Whether the thread was handed the first `events` of `agent`'s
    /// `session`, has not indexed them all yet, and is still running.
    fn will_index(&self, agent: &AgentId, session: &str, events: u64) -> bool {
        let through = self.through.lock().unwrap_or_else(|e| e.into_inner());
        !self.stopped.load(Ordering::Acquire)
            && through
                .get(&(agent.clone(), session.to_owned()))
                .is_some_and(|handed| *handed >= events)
    }

    /// Forgets `agent`'s `session` once the thread indexed all it was
    /// handed of it (its first `through` events), so the map holds only
    /// the sessions still waiting, however many a long-lived process writes.
    fn indexed(&self, agent: &AgentId, session: &str, through: u64) {
        let mut handed = self.through.lock().unwrap_or_else(|e| e.into_inner());
        let key = (agent.clone(), session.to_owned());
        if handed.get(&key) == Some(&through) {
            handed.remove(&key);
        }
    }
}

impl Feeder {
    /// Starts the indexer, on a connection from `pool` once it has work.
    pub(crate) fn start(pool: Arc<Connections>) -> Feeder {
        let (jobs, queue) = mpsc::channel();
        let handed = Arc::new(Handed::default());
        let indexed = Arc::clone(&handed);
        let worker = std::thread::Builder::new()
            .name("agentmem-pg-index".into())
            .spawn(move || {
                work(&pool, &queue, &indexed);
                indexed.stopped.store(true, Ordering::Release);
            })
            .ok();
        Feeder {
            jobs: Mutex::new(worker.as_ref().map(|_| jobs)),
            worker,
            handed,
        }
    }

    /// Whether the thread will index the first `events` of `agent`'s
    /// `session`: it was handed them, has not indexed them all yet, and is
    /// still running. (Once it indexed them, the index holds them.)
    pub(crate) fn will_index(&self, agent: &AgentId, session: &str, events: u64) -> bool {
        self.handed.will_index(agent, session, events)
    }

    fn send(&self, job: Job) -> bool {
        let jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        jobs.as_ref().is_some_and(|jobs| jobs.send(job).is_ok())
    }

    /// Hands `events` (appended to `agent`'s `session`, the first at
    /// position `first_ord` of its full history) to the indexer.
    pub(crate) fn add(&self, agent: &AgentId, session: &str, first_ord: u64, events: &[Event]) {
        let mut through = self
            .handed
            .through
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let sent = self.send(Job::Add {
            agent: agent.clone(),
            session: session.to_owned(),
            first_ord,
            events: events.to_vec(),
        });
        let key = (agent.clone(), session.to_owned());
        match sent {
            true => {
                through.insert(key, first_ord.saturating_add(events.len() as u64));
            }
            false => {
                through.remove(&key);
            }
        }
    }
}

impl Drop for Feeder {
    fn drop(&mut self) {
        self.jobs.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

/// `client`, set to commit without waiting for the server's disk: the
/// index is derived data, and what a crash of the server loses of it the
/// next catch-up adds again (its counts commit with its documents).
fn derived_data_commits(mut client: Client) -> agentmem::Result<Client> {
    client
        .batch_execute("SET synchronous_commit = off")
        .map_err(|e| crate::db_error("set up the indexer's connection", &e))?;
    Ok(client)
}

/// The indexer's loop: each append, or every append waiting for one
/// session in a row, indexed in one transaction. It stops at its first
/// failure (the next search catches up).
fn work(pool: &Connections, queue: &Receiver<Job>, handed: &Handed) {
    let mut client: Option<Client> = None;
    let mut waiting: Option<Job> = None;
    loop {
        let job = match waiting.take() {
            Some(job) => job,
            None => match queue.recv() {
                Ok(job) => job,
                Err(_) => break,
            },
        };
        match job {
            Job::Add {
                agent,
                session,
                first_ord,
                mut events,
            } => {
                // What is already waiting for the same session joins this run.
                while let Ok(next) = queue.try_recv() {
                    match next {
                        Job::Add {
                            agent: ref a,
                            session: ref s,
                            first_ord: f,
                            events: ref more,
                        } if *a == agent
                            && *s == session
                            && f == first_ord + events.len() as u64 =>
                        {
                            events.extend_from_slice(more);
                        }
                        other => {
                            waiting = Some(other);
                            break;
                        }
                    }
                }
                let connection = match client.take() {
                    Some(open) => Ok(open),
                    None => pool.take().and_then(derived_data_commits),
                };
                let Ok(mut open) = connection else { break };
                let run = IndexedRun {
                    agent: &agent,
                    session: &session,
                    first_ord,
                    events: &events,
                };
                if feed_session(&mut open, &run).is_err() {
                    break;
                }
                handed.indexed(&agent, &session, first_ord + events.len() as u64);
                client = Some(open);
            }
        }
    }
    if let Some(open) = client {
        pool.give_back(open);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem::config::DatabaseUrl;

    fn pool(url: &DatabaseUrl) -> Arc<Connections> {
        let config: postgres::Config = url.expose().parse().unwrap();
        Arc::new(Connections::new(
            config,
            url.clone(),
            crate::pool::Nearest::ExactScan,
        ))
    }

    #[test]
    fn an_indexer_will_index_what_it_was_handed_until_it_has() {
        let handed = Handed::default();
        let agent = AgentId::new("a").unwrap();
        let session = (agent.clone(), "s".to_owned());
        assert!(!handed.will_index(&agent, "s", 1));
        handed.through.lock().unwrap().insert(session.clone(), 2);
        assert!(handed.will_index(&agent, "s", 2));
        assert!(!handed.will_index(&agent, "s", 3));
        assert!(!handed.will_index(&agent, "other", 1));
        // An earlier run indexed: the later one is still waiting.
        handed.indexed(&agent, "s", 1);
        assert!(handed.will_index(&agent, "s", 2));
        handed.indexed(&agent, "s", 2);
        assert!(!handed.will_index(&agent, "s", 2));
        assert!(handed.through.lock().unwrap().is_empty());
        handed.through.lock().unwrap().insert(session, 2);
        handed.stopped.store(true, Ordering::Release);
        assert!(!handed.will_index(&agent, "s", 2));
    }

    #[test]
    fn what_a_stopped_indexer_was_handed_is_left_to_the_catch_up() {
        let url = DatabaseUrl::new("postgres://nobody@127.0.0.1:1/none?connect_timeout=2");
        let mut feeder = Feeder::start(pool(&url));
        let agent = AgentId::new("a").unwrap();
        feeder.add(&agent, "s", 0, &[Event::user("one")]);
        // The thread cannot connect, so it stops at its first job.
        feeder.worker.take().unwrap().join().unwrap();
        assert!(!feeder.will_index(&agent, "s", 1));
    }
}
