//! The HTTP JSON API (`agentmem serve`): the service's operations as routes
//! (see [`routes::ROUTES`] and [`crate::openapi`]), MCP's streamable HTTP
//! transport at `/mcp`, `/healthz` and Prometheus `/metrics`.
//!
//! hyper reads and writes HTTP/1.1 (keep-alive connections) on a small async
//! runtime; the engine's work, which is synchronous and may fsync, runs on a
//! pool of blocking threads. The service serialises requests on one session
//! and runs different sessions in parallel.
//!
//! ```no_run
//! use std::sync::Arc;
//! use agentmem::{Store, Durability};
//! use agentmem_server::http::{HttpServer, ServerOptions};
//! use agentmem_server::service::Service;
//! let store = Store::open("data", Durability::Batch).unwrap();
//! let service = Arc::new(Service::new(store, Default::default()));
//! let server = HttpServer::bind(service, ServerOptions::default()).unwrap();
//! println!("listening on http://{}", server.local_addr());
//! server.run().unwrap();
//! ```

pub mod guard;
pub mod routes;

use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentmem::SessionId;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{HeaderMap, Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::{Map, Value};
use tokio::sync::watch;

use crate::error::{ErrorKind, ServiceError};
use crate::service::{Op, Service};
use guard::{Exposure, Guard};
use routes::Endpoint;

/// Where `agentmem serve` listens unless told otherwise.
pub const DEFAULT_ADDR: &str = "127.0.0.1:7077";
/// The largest request body accepted, in bytes.
pub const DEFAULT_MAX_BODY_BYTES: usize = 8 * 1024 * 1024;
/// Requests the engine works on at the same time.
pub const DEFAULT_WORKER_THREADS: usize = 16;
/// Threads that read and write connections (the engine's work runs elsewhere).
const IO_THREADS: usize = 2;
/// The shortest token a server bound beyond loopback takes, in characters:
/// anyone who can reach the port can try tokens.
pub const MIN_NETWORK_TOKEN_CHARS: usize = 16;
/// How long a client may take to send a request's headers; hyper also
/// bounds a kept-alive connection's idle wait with it, so it is longer than
/// a slow model call between two requests of an agent loop.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(300);
/// How long requests in progress get to finish once shutdown is asked for.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// How the server listens and whom it admits.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    pub addr: SocketAddr,
    /// Required of every request but `/healthz` when set; mandatory when
    /// `addr` is not loopback.
    pub token: Option<String>,
    pub max_body_bytes: usize,
    pub worker_threads: usize,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            addr: DEFAULT_ADDR.parse().expect("a valid address"),
            token: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            worker_threads: DEFAULT_WORKER_THREADS,
        }
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("refusing to listen on {addr} without a token: anyone on the network could read and write this agent's memory; pass --token-file with a secret, or bind to 127.0.0.1")]
    TokenRequired { addr: SocketAddr },
    #[error("the token file's token is empty; write a secret of at least 16 characters into it")]
    EmptyToken,
    #[error("the token is {chars} characters; a server bound to {addr} is reachable from the network, so its token must have at least {MIN_NETWORK_TOKEN_CHARS} characters (e.g. `openssl rand -hex 32`)")]
    ShortToken { addr: SocketAddr, chars: usize },
    #[error("cannot listen on {addr}: {source}; is another server using the port?")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("the server stopped: {0}")]
    Io(#[from] std::io::Error),
}

/// A bound server; [`HttpServer::run`] answers requests until shut down.
pub struct HttpServer {
    listener: TcpListener,
    app: Arc<App>,
    worker_threads: usize,
    stop: Arc<watch::Sender<bool>>,
}

/// Stops a running server from another thread.
#[derive(Clone)]
pub struct ShutdownHandle {
    stop: Arc<watch::Sender<bool>>,
}

impl ShutdownHandle {
    /// Stops accepting connections and makes [`HttpServer::run`] return
    /// once the requests in progress are answered.
    pub fn shutdown(&self) {
        self.stop.send_replace(true);
    }
}

/// What every request needs: the service and the admission rules.
struct App {
    service: Arc<Service>,
    guard: Guard,
}

impl HttpServer {
    /// Binds `options.addr`; refuses a network address without a token.
    pub fn bind(service: Arc<Service>, options: ServerOptions) -> Result<HttpServer, ServeError> {
        let exposure = Exposure::of(options.addr);
        match (&options.token, exposure) {
            (Some(token), _) if token.trim().is_empty() => return Err(ServeError::EmptyToken),
            (Some(token), Exposure::Network) if token.chars().count() < MIN_NETWORK_TOKEN_CHARS => {
                return Err(ServeError::ShortToken {
                    addr: options.addr,
                    chars: token.chars().count(),
                })
            }
            (None, Exposure::Network) => {
                return Err(ServeError::TokenRequired { addr: options.addr })
            }
            (Some(_), _) | (None, Exposure::Loopback) => {}
        }
        let listener = TcpListener::bind(options.addr).map_err(|source| ServeError::Bind {
            addr: options.addr,
            source,
        })?;
        Ok(HttpServer {
            listener,
            app: Arc::new(App {
                service,
                guard: Guard {
                    exposure,
                    token: options.token,
                    max_body_bytes: options.max_body_bytes,
                },
            }),
            worker_threads: options.worker_threads.max(1),
            stop: Arc::new(watch::Sender::new(false)),
        })
    }

    /// The address bound (with the port chosen, when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// A handle that stops [`HttpServer::run`] from another thread.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle {
            stop: self.stop.clone(),
        }
    }

    /// Answers requests until shut down through a [`ShutdownHandle`].
    pub fn run(&self) -> Result<(), ServeError> {
        self.run_until(StopOn::Handle)
    }

    /// Answers requests until shut down, or until the process is sent
    /// SIGINT (Ctrl-C) or SIGTERM: what a command-line server wants.
    pub fn run_until_interrupted(&self) -> Result<(), ServeError> {
        self.run_until(StopOn::HandleOrSignal)
    }

    fn run_until(&self, stop_on: StopOn) -> Result<(), ServeError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(IO_THREADS)
            .max_blocking_threads(self.worker_threads)
            .enable_all()
            .build()?;
        let listener = self.listener.try_clone()?;
        listener.set_nonblocking(true)?;
        let stop = self.stop.clone();
        let result = runtime.block_on(async {
            if stop_on == StopOn::HandleOrSignal {
                tokio::spawn(async move {
                    interrupted().await;
                    stop.send_replace(true);
                });
            }
            accept(listener, self.app.clone(), self.stop.subscribe()).await
        });
        runtime.shutdown_timeout(SHUTDOWN_GRACE);
        result
    }
}

/// What ends [`HttpServer::run_until`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StopOn {
    Handle,
    HandleOrSignal,
}

/// Resolves on SIGINT or SIGTERM (on Ctrl-C elsewhere).
async fn interrupted() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut terminate) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// Accepts connections until `stop` turns true; each is served by hyper.
async fn accept(
    listener: TcpListener,
    app: Arc<App>,
    mut stop: watch::Receiver<bool>,
) -> Result<(), ServeError> {
    let listener = tokio::net::TcpListener::from_std(listener)?;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    // Out of file descriptors, or a connection reset while
                    // queued: the listener itself is fine, so go on.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let app = app.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| answer(app.clone(), request));
                    let _ = hyper::server::conn::http1::Builder::new()
                        // Connections that never send a request are closed.
                        .timer(TokioTimer::new())
                        .header_read_timeout(HEADER_READ_TIMEOUT)
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
            _ = stop.wait_for(|stopping| *stopping) => return Ok(()),
        }
    }
}

async fn answer(
    app: Arc<App>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let started = Instant::now();
    let path = request.uri().path().to_owned();
    let (label, outcome) = app.clone().handle(request).await;
    let (status, body, content_type) = outcome.unwrap_or_else(|error| {
        (
            error.kind.status(),
            error.to_json().to_string().into_bytes(),
            "application/json",
        )
    });
    app.service
        .metrics()
        .observe_request(label, status, started.elapsed());
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() =
        hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    if status == hyper::StatusCode::METHOD_NOT_ALLOWED.as_u16() {
        // RFC 9110: a 405 lists the methods the resource does take.
        let allowed = routes::allowed_methods(&path).join(", ");
        if let Ok(value) = HeaderValue::from_str(&allowed) {
            headers.insert(hyper::header::ALLOW, value);
        }
    }
    Ok(response)
}

impl App {
    /// The route's metrics label, and the reply.
    async fn handle(
        self: Arc<Self>,
        request: Request<Incoming>,
    ) -> (&'static str, Result<Reply, ServiceError>) {
        let (parts, body) = request.into_parts();
        let matched = match routes::find(parts.method.as_str(), parts.uri.path()) {
            Ok(matched) => matched,
            Err(error) => return ("unrouted", Err(error)),
        };
        let endpoint = matched.route.endpoint;
        let reply = async {
            self.guard
                .admit(&parts.headers, endpoint != Endpoint::Health)?;
            let body = match endpoint {
                Endpoint::Op(_) | Endpoint::Mcp => self.read_body(&parts.headers, body).await?,
                Endpoint::Health | Endpoint::Metrics | Endpoint::OpenApi => Bytes::new(),
            };
            let query = parts.uri.query().unwrap_or_default().to_owned();
            let app = self.clone();
            // The engine is synchronous and may fsync: off the I/O threads.
            tokio::task::spawn_blocking(move || {
                app.dispatch(endpoint, &parts.headers, matched.captures, &query, &body)
            })
            .await
            .map_err(|e| {
                ServiceError::new(ErrorKind::Internal, format!("the request failed: {e}"))
            })?
        }
        .await;
        (endpoint.name(), reply)
    }

    /// The body, refused when it is over the limit (before reading it, when
    /// the length is announced).
    async fn read_body(&self, headers: &HeaderMap, body: Incoming) -> Result<Bytes, ServiceError> {
        let announced =
            guard::header(headers, CONTENT_LENGTH.as_str()).and_then(|n| n.parse::<usize>().ok());
        if announced.is_some_and(|n| n > self.guard.max_body_bytes) {
            return Err(self.guard.too_large());
        }
        match Limited::new(body, self.guard.max_body_bytes)
            .collect()
            .await
        {
            Ok(collected) => Ok(collected.to_bytes()),
            Err(error) if error.is::<http_body_util::LengthLimitError>() => {
                Err(self.guard.too_large())
            }
            Err(error) => Err(ServiceError::bad_request(format!(
                "cannot read the request body: {error}"
            ))),
        }
    }

    fn dispatch(
        &self,
        endpoint: Endpoint,
        headers: &HeaderMap,
        captures: Map<String, Value>,
        query: &str,
        body: &[u8],
    ) -> Result<Reply, ServiceError> {
        match endpoint {
            Endpoint::Health => {
                let health = crate::replies::Health {
                    status: crate::replies::HealthStatus::Ok,
                };
                Ok(json_reply(200, &serde_json::to_value(health)?))
            }
            Endpoint::Metrics => Ok((
                200,
                self.service
                    .metrics()
                    .render(self.service.open_sessions())
                    .into_bytes(),
                "text/plain; version=0.0.4",
            )),
            Endpoint::OpenApi => Ok((
                200,
                crate::openapi::text().as_bytes().to_vec(),
                "application/json",
            )),
            Endpoint::Mcp => self.mcp(headers, query, body),
            Endpoint::Op(op) => {
                let args = arguments(body, query, captures)?;
                let result = self.service.execute_text(op, &args, body)?;
                let status = if op == Op::CreateSession { 201 } else { 200 };
                Ok(json_reply(status, &result))
            }
        }
    }

    /// MCP's streamable HTTP transport: a JSON-RPC message (or a batch) per
    /// POST, answered with JSON; notifications get 202 and no body.
    fn mcp(&self, headers: &HeaderMap, query: &str, body: &[u8]) -> Result<Reply, ServiceError> {
        if let Some(version) = guard::header(headers, "mcp-protocol-version") {
            if !crate::mcp::KNOWN_VERSIONS.contains(&version) {
                return Err(ServiceError::bad_request(format!(
                    "unsupported MCP-Protocol-Version {version:?}; this server speaks {}",
                    crate::mcp::KNOWN_VERSIONS.join(", ")
                )));
            }
        }
        let query = Value::Object(routes::query_arguments(query)?);
        let tools: crate::requests::Tools = agentmem::base::arguments::parse("mcp", &query)?;
        let session = tools.session.map(SessionId::new).transpose()?;
        let host = self.service.tool_host(session);
        let message: Value = match serde_json::from_slice(body) {
            Ok(message @ (Value::Object(_) | Value::Array(_))) => message,
            Ok(_) => return Ok(json_reply(400, &crate::mcp::invalid_request())),
            Err(e) => return Ok(json_reply(400, &crate::mcp::parse_error(&e))),
        };
        let answer = match &message {
            Value::Array(batch) => match crate::mcp::answer_batch(&host, batch) {
                Ok(answers) => answers,
                Err(refused) if batch.is_empty() => return Ok(json_reply(400, &refused)),
                Err(refused) => return Ok(json_reply(413, &refused)),
            },
            single => crate::mcp::answer(&host, single),
        };
        Ok(match answer {
            Some(answer) => json_reply(200, &answer),
            None => (202, Vec::new(), "application/json"),
        })
    }
}

/// Status, body and content type.
type Reply = (u16, Vec<u8>, &'static str);

fn json_reply(status: u16, value: &(impl serde::Serialize + ?Sized)) -> Reply {
    let body = serde_json::to_vec(value).expect("an answer serializes");
    (status, body, "application/json")
}

/// The request's arguments: the JSON body, the query string and the path's
/// captures, which must agree where they overlap.
fn arguments(
    body: &[u8],
    query: &str,
    captures: Map<String, Value>,
) -> Result<Value, ServiceError> {
    let mut arguments = if body.iter().all(u8::is_ascii_whitespace) {
        Map::new()
    } else {
        match serde_json::from_slice(body) {
            Ok(Value::Object(map)) => map,
            Ok(_) => {
                return Err(ServiceError::bad_request(
                    "the request body must be a JSON object",
                ))
            }
            Err(e) => {
                return Err(ServiceError::bad_request(format!(
                    "the request body is not JSON: {e}"
                )))
            }
        }
    };
    for (key, value) in routes::query_arguments(query)?.into_iter().chain(captures) {
        match arguments.get(&key) {
            Some(existing) if existing != &value => {
                return Err(ServiceError::new(
                    ErrorKind::BadRequest,
                    format!(
                        "\"{key}\" is {value} in the URL but {existing} in the body; send it once"
                    ),
                ))
            }
            Some(_) | None => {
                arguments.insert(key, value);
            }
        }
    }
    Ok(Value::Object(arguments))
}
