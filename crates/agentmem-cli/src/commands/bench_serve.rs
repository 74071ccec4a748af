//! `agentmem bench --serve`: the HTTP API under load, over loopback, with a
//! server of its own on a fresh data folder.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agentmem::{Durability, Store};
use agentmem_server::http::{HttpServer, ServerOptions};
use agentmem_server::service::Service;
use serde_json::{json, Value};

use super::bench_load::{self as load, LoadOptions};

/// The longest a phase of the load test starts new turns.
const MAX_PHASE_DURATION: Duration = Duration::from_secs(120);

pub fn run(root: &Path, clients: usize, turns: usize, model: &str) -> anyhow::Result<Vec<Value>> {
    let store = Store::open(root.join("serve"), Durability::Batch)?;
    let service = Arc::new(Service::new(store, Default::default()));
    let options = ServerOptions {
        addr: "127.0.0.1:0".parse()?,
        ..ServerOptions::default()
    };
    let server = HttpServer::bind(service.clone(), options)?;
    let load_options = LoadOptions {
        base_url: format!("http://{}", server.local_addr()),
        token: None,
        clients,
        turns_per_client: turns,
        max_duration: MAX_PHASE_DURATION,
        model: model.to_owned(),
    };
    let shutdown = server.shutdown_handle();
    let (served, reports) = std::thread::scope(|scope| {
        let serving = scope.spawn(|| server.run());
        let reports = load::run(&load_options);
        shutdown.shutdown();
        (serving.join(), reports)
    });
    served.map_err(|_| anyhow::anyhow!("the server thread panicked"))??;
    let reports = reports?;
    service.close()?;
    Ok(reports
        .iter()
        .map(|r| {
            json!({
                "bench": format!("serve {}", r.phase),
                "figure": format!("{:.0} req/s, append p99 {:.1} ms, prepare p99 {:.1} ms", r.requests_per_second, r.append_p99_ms, r.prepare_p99_ms),
                "detail": format!(
                    "{} clients on {} session(s), {} requests in {:.2} s, {:.0} events/s; p50 append {:.2} ms, prepare {:.2} ms; {} errors; events sent {}, logged {}, lost {}, duplicated {}",
                    r.clients, r.sessions, r.requests, r.seconds, r.events_per_second, r.append_p50_ms, r.prepare_p50_ms, r.errors, r.events_sent, r.events_logged, r.events_lost, r.events_duplicated
                ),
                "report": r,
            })
        })
        .collect())
}
