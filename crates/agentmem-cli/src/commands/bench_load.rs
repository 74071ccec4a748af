//! `agentmem bench --serve`'s client: a load test against a running server: concurrent clients walk agent
//! loops (append a turn, prepare the next call) on sessions of their own and
//! then all on one shared session; afterwards every session's log is read
//! back to prove that no event was lost or written twice.
//!
//! Every client also sends one batch twice, as a client retrying after a
//! timeout would: the retry must be recognised by its event ids.
//!
//! With several servers (on one database) client `c` starts on server
//! `c mod n`. A server keeps a session it wrote to open, holding its lock,
//! so a session is written through one server at a time: a client another
//! server turns away (`423 locked`) goes on to the next server, as the
//! service's clients are told to, and the report counts those redirects.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{json, Value};

/// What to run.
#[derive(Debug, Clone)]
pub(crate) struct LoadOptions {
    /// `http://host:port` of each server, all on the same sessions.
    pub(crate) base_urls: Vec<String>,
    pub(crate) token: Option<String>,
    pub(crate) clients: usize,
    /// Turns each client appends (and prepares after) in each phase.
    pub(crate) turns_per_client: usize,
    /// A phase stops starting turns after this long.
    pub(crate) max_duration: Duration,
    pub(crate) model: String,
}

/// How one phase went.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PhaseReport {
    pub(crate) phase: &'static str,
    pub(crate) servers: usize,
    pub(crate) clients: usize,
    pub(crate) sessions: usize,
    pub(crate) requests: usize,
    pub(crate) seconds: f64,
    pub(crate) requests_per_second: f64,
    pub(crate) events_per_second: f64,
    pub append_p50_ms: f64,
    pub append_p99_ms: f64,
    pub prepare_p50_ms: f64,
    pub prepare_p99_ms: f64,
    pub(crate) errors: usize,
    /// Requests a server turned away because another one holds the
    /// session (each then sent to the next server).
    pub(crate) redirects: usize,
    /// Events the clients sent once (retries not counted).
    pub(crate) events_sent: usize,
    /// Events the logs hold afterwards.
    pub(crate) events_logged: usize,
    pub(crate) events_lost: usize,
    pub(crate) events_duplicated: usize,
    /// Clients whose acknowledged events the log does not hold in the
    /// order they were sent.
    pub(crate) clients_out_of_order: usize,
    /// Sessions read back whole afterwards, of [`PhaseReport::sessions`].
    pub(crate) sessions_read: usize,
}

/// Why the load test could not run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LoadError {
    #[error("request to {url} failed: {message}")]
    Request { url: String, message: String },
    #[error("{url} answered {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
}

/// Runs the separate-sessions phase, then the shared-session phase.
pub(crate) fn run(options: &LoadOptions) -> Result<Vec<PhaseReport>, LoadError> {
    let client = Client::new(options);
    // Unique to this run, so runs against one database never share sessions.
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let run_id = format!("load-{}-{}", std::process::id(), started.as_micros());
    let separate: Vec<String> = (0..options.clients)
        .map(|c| format!("{run_id}-client-{c}"))
        .collect();
    let shared = vec![format!("{run_id}-shared"); options.clients];
    Ok(vec![
        phase(&client, options, "separate_sessions", &separate)?,
        phase(&client, options, "shared_session", &shared)?,
    ])
}

/// Client `c` works on `sessions[c]`; sessions may repeat (shared).
fn phase(
    client: &Client,
    options: &LoadOptions,
    name: &'static str,
    sessions: &[String],
) -> Result<PhaseReport, LoadError> {
    let mut created = BTreeSet::new();
    for (c, session) in sessions.iter().enumerate() {
        // Through the server of the session's first client.
        if created.insert(session) {
            client.call(
                client.home(c),
                "POST",
                "/v1/sessions",
                &json!({"session": session}),
            )?;
        }
    }
    let started = Instant::now();
    let outcomes: Vec<ClientOutcome> = std::thread::scope(|scope| {
        let workers: Vec<_> = sessions
            .iter()
            .enumerate()
            .map(|(c, session)| {
                scope.spawn(move || walk(client, options, name, c, session, started))
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a load client panicked"))
            .collect()
    });
    let seconds = started.elapsed().as_secs_f64();
    let mut sent: HashMap<&str, Vec<&[String]>> = HashMap::new();
    for (outcome, session) in outcomes.iter().zip(sessions) {
        sent.entry(session).or_default().push(&outcome.event_ids);
    }
    let mut audit = Audit::default();
    for (session, by_client) in &sent {
        audit.compare(by_client, &client.logged_ids(session)?);
    }
    let appends: Vec<f64> = outcomes
        .iter()
        .flat_map(|o| o.append_ms.iter().copied())
        .collect();
    let prepares: Vec<f64> = outcomes
        .iter()
        .flat_map(|o| o.prepare_ms.iter().copied())
        .collect();
    let requests = appends.len() + prepares.len();
    Ok(PhaseReport {
        phase: name,
        servers: client.bases.len(),
        clients: sessions.len(),
        sessions: created.len(),
        requests,
        seconds,
        requests_per_second: requests as f64 / seconds,
        events_per_second: audit.sent as f64 / seconds,
        append_p50_ms: percentile(&appends, 0.50),
        append_p99_ms: percentile(&appends, 0.99),
        prepare_p50_ms: percentile(&prepares, 0.50),
        prepare_p99_ms: percentile(&prepares, 0.99),
        errors: outcomes.iter().map(|o| o.errors).sum(),
        redirects: outcomes.iter().map(|o| o.redirects).sum(),
        events_sent: audit.sent,
        events_logged: audit.logged,
        events_lost: audit.lost,
        events_duplicated: audit.duplicated,
        clients_out_of_order: audit.out_of_order,
        sessions_read: audit.sessions,
    })
}

#[derive(Debug, Default)]
struct ClientOutcome {
    event_ids: Vec<String>,
    append_ms: Vec<f64>,
    prepare_ms: Vec<f64>,
    errors: usize,
    redirects: usize,
}

/// One client's agent loop: a turn of four events, then a prepare.
fn walk(
    client: &Client,
    options: &LoadOptions,
    phase: &str,
    c: usize,
    session: &str,
    started: Instant,
) -> ClientOutcome {
    let mut outcome = ClientOutcome::default();
    let mut server = client.home(c);
    let events_path = format!("/v1/sessions/{session}/events");
    let prepare_path = format!("/v1/sessions/{session}/prepare");
    for turn in 0..options.turns_per_client {
        if started.elapsed() > options.max_duration {
            break;
        }
        let batch = turn_events(phase, c, turn);
        let body = json!({"events": batch});
        let (elapsed, ok) = client.timed(&mut server, &mut outcome, "POST", &events_path, &body);
        outcome.append_ms.push(elapsed);
        if ok {
            outcome.event_ids.extend(
                batch
                    .iter()
                    .map(|e| e["id"].as_str().unwrap_or_default().to_owned()),
            );
        } else {
            outcome.errors += 1;
        }
        if turn == 0 {
            // The retry of a batch that already landed.
            let (_, ok) = client.timed(&mut server, &mut outcome, "POST", &events_path, &body);
            outcome.errors += usize::from(!ok);
        }
        let body = json!({"model": options.model});
        let (elapsed, ok) = client.timed(&mut server, &mut outcome, "POST", &prepare_path, &body);
        outcome.prepare_ms.push(elapsed);
        outcome.errors += usize::from(!ok);
    }
    outcome
}

/// A user message, a tool call with its result, and the assistant's answer,
/// with ids unique to the phase, client and turn.
fn turn_events(phase: &str, c: usize, turn: usize) -> Vec<Value> {
    let id = |k: &str| format!("{phase}-c{c}-t{turn}-{k}");
    let call_id = format!("call_{c}_{turn}");
    vec![
        json!({"id": id("user"), "trace_type": "user", "content": format!("client {c} asks for step {turn}: list the files touched by the failing test")}),
        json!({"id": id("call"), "trace_type": "tool_call", "tool_name": "shell", "tool_call_id": call_id, "tool_args": {"cmd": format!("grep -rn step_{turn} src")}}),
        json!({"id": id("result"), "trace_type": "tool_result", "tool_name": "shell", "tool_call_id": call_id, "content": format!("src/step_{turn}.rs:12: fn step_{turn}() {{}}\n").repeat(20)}),
        json!({"id": id("answer"), "trace_type": "assistant", "content": format!("Step {turn} touches src/step_{turn}.rs; next I will run the test again.")}),
    ]
}

/// Sent ids against logged ids.
#[derive(Debug, Default)]
struct Audit {
    sent: usize,
    logged: usize,
    lost: usize,
    duplicated: usize,
    out_of_order: usize,
    sessions: usize,
}

impl Audit {
    /// One session's log against what each of its clients sent, in order.
    fn compare(&mut self, by_client: &[&[String]], logged: &[String]) {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for id in logged {
            *counts.entry(id).or_default() += 1;
        }
        self.sessions += 1;
        self.logged += logged.len();
        self.duplicated += counts.values().map(|n| n.saturating_sub(1)).sum::<usize>();
        for sent in by_client {
            self.sent += sent.len();
            self.lost += sent
                .iter()
                .filter(|id| !counts.contains_key(id.as_str()))
                .count();
            let mine: std::collections::HashSet<&str> = sent.iter().map(String::as_str).collect();
            let order: Vec<&str> = logged
                .iter()
                .map(String::as_str)
                .filter(|id| mine.contains(id))
                .collect();
            if !order.iter().copied().eq(sent.iter().map(String::as_str)) {
                self.out_of_order += 1;
            }
        }
    }
}

fn percentile(samples: &[f64], q: f64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The status a server answers when another server holds the session.
const LOCKED: u16 = 423;

/// A small JSON client over one keep-alive connection pool.
struct Client {
    agent: ureq::Agent,
    bases: Vec<String>,
    token: Option<String>,
}

impl Client {
    fn new(options: &LoadOptions) -> Client {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .max_idle_connections_per_host(options.clients.max(1))
            .max_idle_connections(options.clients.max(1) * options.base_urls.len().max(1))
            .build();
        Client {
            agent: config.into(),
            bases: options
                .base_urls
                .iter()
                .map(|url| url.trim_end_matches('/').to_owned())
                .collect(),
            token: options.token.clone(),
        }
    }

    /// The server client `c` starts on.
    fn home(&self, c: usize) -> usize {
        c % self.bases.len().max(1)
    }

    /// Sends through `server`, going on to the next server while one turns
    /// the request away as locked (`server` is then the one that took it):
    /// milliseconds taken in all, and whether the answer was a success.
    fn timed(
        &self,
        server: &mut usize,
        outcome: &mut ClientOutcome,
        method: &str,
        path: &str,
        body: &Value,
    ) -> (f64, bool) {
        let started = Instant::now();
        let mut answer = self.call(*server, method, path, body);
        for _ in 1..self.bases.len() {
            match answer {
                Err(LoadError::Status { status: LOCKED, .. }) => {
                    outcome.redirects += 1;
                    *server = (*server + 1) % self.bases.len();
                    answer = self.call(*server, method, path, body);
                }
                _ => break,
            }
        }
        (started.elapsed().as_secs_f64() * 1e3, answer.is_ok())
    }

    fn call(
        &self,
        server: usize,
        method: &str,
        path: &str,
        body: &Value,
    ) -> Result<Value, LoadError> {
        let url = format!("{}{path}", self.bases[server]);
        let failed = |e: ureq::Error| LoadError::Request {
            url: url.clone(),
            message: e.to_string(),
        };
        let authorization = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let mut response = if method == "GET" {
            let mut request = self.agent.get(&url);
            if let Some(value) = &authorization {
                request = request.header("authorization", value);
            }
            request.call().map_err(failed)?
        } else {
            let mut request = self
                .agent
                .post(&url)
                .header("content-type", "application/json");
            if let Some(value) = &authorization {
                request = request.header("authorization", value);
            }
            request.send(body.to_string()).map_err(failed)?
        };
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().map_err(failed)?;
        if !(200..300).contains(&status) {
            return Err(LoadError::Status {
                url,
                status,
                body: text,
            });
        }
        serde_json::from_str(&text).map_err(|e| LoadError::Request {
            url,
            message: format!("not JSON: {e}"),
        })
    }

    /// The ids of every event in the session's history.
    fn logged_ids(&self, session: &str) -> Result<Vec<String>, LoadError> {
        let history = self.call(
            0,
            "GET",
            &format!("/v1/sessions/{session}/events"),
            &Value::Null,
        )?;
        Ok(history["events"]
            .as_array()
            .map(|events| {
                events
                    .iter()
                    .filter_map(|e| e["id"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    //! Concurrent writers over loopback, on sessions of their own and on
    //! one shared session: afterwards every event sent is in its log
    //! exactly once.

    use std::sync::Arc;

    use agentmem::{Durability, Store};
    use agentmem_server::http::{HttpServer, ServerOptions};
    use agentmem_server::service::Service;

    use super::*;

    #[test]
    fn concurrent_clients_lose_and_duplicate_no_event() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), Durability::Batch).unwrap();
        let service = Arc::new(Service::new(store, Default::default()));
        let options = ServerOptions {
            addr: "127.0.0.1:0".parse().unwrap(),
            ..ServerOptions::default()
        };
        let server = HttpServer::bind(service, options).unwrap();
        let options = LoadOptions {
            base_urls: vec![format!("http://{}", server.local_addr())],
            token: None,
            clients: 6,
            turns_per_client: 8,
            max_duration: Duration::from_secs(600),
            model: "gpt-4o".into(),
        };
        let shutdown = server.shutdown_handle();
        let reports = std::thread::scope(|scope| {
            let serving = scope.spawn(|| server.run());
            let reports = run(&options);
            shutdown.shutdown();
            serving.join().unwrap().unwrap();
            reports.unwrap()
        });
        assert_eq!(reports.len(), 2);
        for report in &reports {
            assert_eq!(report.errors, 0, "{report:?}");
            assert_eq!(report.events_sent, 6 * 8 * 4, "{report:?}");
            assert_eq!(report.events_logged, report.events_sent, "{report:?}");
            assert_eq!(
                (report.events_lost, report.events_duplicated),
                (0, 0),
                "{report:?}"
            );
            assert_eq!(report.clients_out_of_order, 0, "{report:?}");
            assert_eq!(report.sessions_read, report.sessions, "{report:?}");
        }
        assert_eq!(
            reports[1].sessions, 1,
            "the second phase shares one session"
        );
    }
}
