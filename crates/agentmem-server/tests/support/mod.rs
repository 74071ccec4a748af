//! A server on loopback over a fresh data folder, and a raw HTTP/1.1
//! client that sends exactly the bytes a test asks for.

#![allow(dead_code)] // each test binary uses a part

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::thread::JoinHandle;

use agentmem::{Durability, Store};
use agentmem_server::http::{HttpServer, ServerOptions, ShutdownHandle};
use agentmem_server::service::Service;
use serde_json::Value;

pub struct TestServer {
    pub addr: SocketAddr,
    pub service: Arc<Service>,
    pub dir: tempfile::TempDir,
    shutdown: ShutdownHandle,
    thread: Option<JoinHandle<()>>,
}

impl TestServer {
    pub fn start() -> TestServer {
        TestServer::with_options(ServerOptions {
            addr: "127.0.0.1:0".parse().unwrap(),
            ..ServerOptions::default()
        })
    }

    pub fn with_options(options: ServerOptions) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), Durability::Batch).unwrap();
        let service = Arc::new(Service::new(store, Default::default()));
        let server = HttpServer::bind(service.clone(), options).unwrap();
        let port = server.local_addr().port();
        let shutdown = server.shutdown_handle();
        let thread = std::thread::spawn(move || server.run().unwrap());
        TestServer {
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            service,
            dir,
            shutdown,
            thread: Some(thread),
        }
    }

    /// Sends a request with a JSON body (or none) and the usual headers.
    pub fn call(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let body = body.map(Value::to_string).unwrap_or_default();
        let (status, text) = self.raw(method, path, &[], body.as_bytes());
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, value)
    }

    /// Sends exactly these headers (plus Host, Content-Length, Connection)
    /// and body; the status and the body as text.
    pub fn raw(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> (u16, String) {
        let mut stream = TcpStream::connect(self.addr).unwrap();
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
            body.len()
        );
        if !headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("host"))
        {
            head.push_str(&format!("Host: {}\r\n", self.addr));
        }
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).unwrap();
        // The server may answer (413) before reading a large body.
        let _ = stream.write_all(body);
        let mut response = Vec::new();
        let _ = stream.read_to_end(&mut response);
        parse_response(&response)
    }
}

fn parse_response(response: &[u8]) -> (u16, String) {
    let text = String::from_utf8_lossy(response);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {head:?}"));
    (status, body.to_owned())
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown.shutdown();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
