//! `agentmem bench --serve`: the HTTP API under load, over loopback, with
//! `agentmem serve` processes of its own (this binary, started with a fresh
//! data folder each) on the configured backend: one server on files; one or
//! more on PostgreSQL, all on the same database.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use agentmem::config::DATABASE_URL_ENV;
use agentmem::storage::Backend;
use agentmem::Durability;
use serde_json::{json, Value};

use super::bench::Backing;
use super::bench_load::{self as load, LoadOptions};

/// The longest a phase of the load test starts new turns.
const MAX_PHASE_DURATION: Duration = Duration::from_secs(120);

/// What the load test runs.
pub(super) struct Load<'a> {
    /// The numbers of servers to measure, one run each.
    pub(super) servers: &'a [usize],
    pub(super) clients: usize,
    /// Turns each client appends and prepares, per phase.
    pub(super) turns: usize,
    pub(super) model: &'a str,
}

/// Why the servers could not be started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ServeBenchError {
    #[error("the files backend serves a data folder from one process: measure {0} servers on postgres (set AGENTMEM_DATABASE_URL), or pass --servers 1")]
    FilesTakeOneServer(usize),
    #[error("--servers needs at least one server")]
    NoServers,
    #[error("`agentmem serve` did not start (run the bench from the agentmem binary): {0}")]
    NotStarted(String),
}

pub(super) fn run(
    backing: &Backing<'_>,
    root: &Path,
    durability: Durability,
    load: &Load<'_>,
) -> anyhow::Result<Vec<Value>> {
    let mut rows = Vec::new();
    for &count in load.servers {
        match (backing.backend(), count) {
            (_, 0) => return Err(ServeBenchError::NoServers.into()),
            (Backend::Files, 2..) => return Err(ServeBenchError::FilesTakeOneServer(count).into()),
            (Backend::Files | Backend::Postgres, _) => {}
        }
        let servers = (0..count)
            .map(|n| {
                Server::start(
                    backing,
                    &root.join(format!("serve-{count}-{n}")),
                    durability,
                )
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let options = LoadOptions {
            base_urls: servers.iter().map(|s| s.url.clone()).collect(),
            token: None,
            clients: load.clients,
            turns_per_client: load.turns,
            max_duration: MAX_PHASE_DURATION,
            model: load.model.to_owned(),
        };
        let reports = load::run(&options);
        drop(servers);
        rows.extend(reports?.iter().map(|r| {
            json!({
                "bench": format!("serve {} ({} server{})", r.phase, r.servers, if r.servers == 1 { "" } else { "s" }),
                "figure": format!("{:.0} req/s, append p99 {:.1} ms, prepare p99 {:.1} ms", r.requests_per_second, r.append_p99_ms, r.prepare_p99_ms),
                "detail": format!(
                    "{} clients on {} session(s) through {} server(s), durability {durability}, {} requests in {:.2} s, {:.0} events/s; p50 append {:.2} ms, prepare {:.2} ms; {} errors, {} sent on because another server held the session; events acknowledged {}, logged {}, lost {}, duplicated {}; clients whose events are out of order {}; sessions read back {} of {}",
                    r.clients, r.sessions, r.servers, r.requests, r.seconds, r.events_per_second, r.append_p50_ms, r.prepare_p50_ms, r.errors, r.redirects, r.events_sent, r.events_logged, r.events_lost, r.events_duplicated, r.clients_out_of_order, r.sessions_read, r.sessions
                ),
                "report": r,
            })
        }));
    }
    Ok(rows)
}

/// An `agentmem serve` process on loopback, killed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    /// Starts this binary's `serve` on a free loopback port with the data
    /// folder `dir`, its sessions on the bench's backend; returns once it
    /// listens.
    fn start(backing: &Backing<'_>, dir: &Path, durability: Durability) -> anyhow::Result<Server> {
        let mut command = Command::new(std::env::current_exe()?);
        command
            .arg("--dir")
            .arg(dir)
            .args(["--agent", backing.agent.as_str()])
            .args(["--durability", &durability.to_string()])
            .args(["serve", "--addr", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        match (backing.backend(), &backing.settings.url) {
            (Backend::Postgres, Some(url)) => command.env(DATABASE_URL_ENV, url.expose()),
            (Backend::Postgres, None) | (Backend::Files, _) => command.env_remove(DATABASE_URL_ENV),
        };
        let mut child = command.spawn()?;
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr is piped"));
        let mut said = String::new();
        loop {
            let mut line = String::new();
            if stderr.read_line(&mut line)? == 0 {
                let _ = child.wait();
                return Err(ServeBenchError::NotStarted(said).into());
            }
            if let Some(url) = line.trim().strip_prefix("agentmem: listening on ") {
                let url = url.to_owned();
                // Keeps reading what it says, so it never blocks on a full pipe.
                std::thread::spawn(move || {
                    std::io::copy(&mut stderr.into_inner(), &mut std::io::sink())
                });
                return Ok(Server { child, url });
            }
            said.push_str(&line);
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
