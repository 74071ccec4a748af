//! A loopback HTTP server that speaks just enough HTTP/1.1 to stand in for a
//! provider: it records each request and answers with the next canned reply.

// Each test file uses part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// One canned answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn json(status: u16, body: Value) -> Reply {
        Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string(),
        }
    }

    /// Server-sent events: `(event name, data)` pairs.
    pub fn sse(messages: &[(Option<&str>, Value)]) -> Reply {
        let mut body = String::from(": stream opened\n\n");
        for (event, data) in messages {
            if let Some(event) = event {
                body.push_str(&format!("event: {event}\n"));
            }
            body.push_str(&format!("data: {data}\n\n"));
        }
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body,
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The longest a held reply waits for its release.
pub const HELD_REPLY_MAX: std::time::Duration = std::time::Duration::from_secs(60);

pub struct Loopback {
    pub url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl Loopback {
    /// Serves `replies` in order, then 500s.
    pub fn start(replies: Vec<Reply>) -> Loopback {
        Loopback::serve(replies, None)
    }

    /// Like [`Loopback::start`], but each reply waits for a message on
    /// `release` after its request is recorded: a model still thinking for
    /// as long as the test wants (at most [`HELD_REPLY_MAX`], so a test
    /// that never releases it fails instead of hanging).
    pub fn start_held(replies: Vec<Reply>, release: std::sync::mpsc::Receiver<()>) -> Loopback {
        Loopback::serve(replies, Some(release))
    }

    fn serve(replies: Vec<Reply>, release: Option<std::sync::mpsc::Receiver<()>>) -> Loopback {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&requests);
        std::thread::spawn(move || {
            let mut replies = replies.into_iter();
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let Some(request) = read_request(&mut stream) else {
                    continue;
                };
                recorded.lock().unwrap().push(request);
                if let Some(release) = &release {
                    let _ = release.recv_timeout(HELD_REPLY_MAX);
                }
                let reply = replies.next().unwrap_or_else(|| {
                    Reply::json(
                        500,
                        serde_json::json!({"error": {"message": "no more replies"}}),
                    )
                });
                let mut head = format!("HTTP/1.1 {} Canned\r\n", reply.status);
                for (name, value) in &reply.headers {
                    head.push_str(&format!("{name}: {value}\r\n"));
                }
                head.push_str(&format!(
                    "content-length: {}\r\nconnection: close\r\n\r\n",
                    reply.body.len()
                ));
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(reply.body.as_bytes());
                let _ = stream.flush();
            }
        });
        Loopback { url, requests }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

fn read_request(stream: &mut std::net::TcpStream) -> Option<Recorded> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        let (name, value) = trimmed.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v): &(String, String)| v.clone())
    };
    let body = if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        let mut body = Vec::new();
        loop {
            line.clear();
            reader.read_line(&mut line).ok()?;
            let size = usize::from_str_radix(line.trim(), 16).ok()?;
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).ok()?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
        body
    } else {
        let length: usize = header("content-length")?.parse().ok()?;
        let mut body = vec![0; length];
        reader.read_exact(&mut body).ok()?;
        body
    };
    Some(Recorded {
        method,
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}
