//! Who may talk to the server, and how much: the bearer token, the
//! loopback-only checks of `Host` and `Origin`, and the body size limit.

use std::net::SocketAddr;

use hyper::HeaderMap;
use subtle::ConstantTimeEq;

use crate::error::{ErrorKind, ServiceError};

/// Host names that mean this machine.
const LOCAL_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// Where the server listens decides how strict it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposure {
    /// Bound to loopback: only this machine can connect, so `Host` and
    /// `Origin` must name it too (a web page cannot reach the server by DNS
    /// rebinding or a cross-site request).
    Loopback,
    /// Bound to a routable address: a bearer token is mandatory.
    Network,
}

impl Exposure {
    /// How exposed a server bound to `addr` is.
    pub fn of(addr: SocketAddr) -> Exposure {
        if addr.ip().is_loopback() {
            Exposure::Loopback
        } else {
            Exposure::Network
        }
    }
}

/// The checks every request passes before it reaches the service.
#[derive(Debug, Clone)]
pub struct Guard {
    pub exposure: Exposure,
    pub token: Option<String>,
    pub max_body_bytes: usize,
}

impl Guard {
    /// Refuses a request from a foreign origin or without the token.
    pub fn admit(&self, request: &HeaderMap, needs_token: bool) -> Result<(), ServiceError> {
        if self.exposure == Exposure::Loopback {
            self.check_local(request)?;
        }
        match (&self.token, needs_token) {
            (Some(token), true) => check_token(request, token),
            (Some(_), false) | (None, _) => Ok(()),
        }
    }

    fn check_local(&self, request: &HeaderMap) -> Result<(), ServiceError> {
        for name in ["Host", "Origin"] {
            if request.get(name).is_some() && header(request, name).is_none() {
                return Err(ServiceError::new(
                    ErrorKind::Forbidden,
                    format!("the {name} header is not ASCII text, so it cannot be checked to name this machine; send localhost or 127.0.0.1"),
                ));
            }
        }
        if let Some(host) = header(request, "Host") {
            if !is_local(host) {
                return Err(ServiceError::new(
                    ErrorKind::Forbidden,
                    format!("Host {host:?} is not this machine; the server is bound to loopback, use localhost or 127.0.0.1"),
                ));
            }
        }
        if let Some(origin) = header(request, "Origin") {
            let host = origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"));
            if !host.is_some_and(is_local) {
                return Err(ServiceError::new(
                    ErrorKind::Forbidden,
                    format!("requests from origin {origin:?} are refused; only pages on this machine may call the server"),
                ));
            }
        }
        Ok(())
    }

    /// The error for a body over the limit.
    pub fn too_large(&self) -> ServiceError {
        ServiceError::new(
            ErrorKind::TooLarge,
            format!(
                "the request body is over the limit of {} bytes; send fewer events per request, or start the server with a larger --max-body-bytes",
                self.max_body_bytes
            ),
        )
    }
}

fn check_token(request: &HeaderMap, token: &str) -> Result<(), ServiceError> {
    let presented = header(request, "Authorization").and_then(|v| v.strip_prefix("Bearer "));
    let matches = presented.is_some_and(|p| bool::from(p.as_bytes().ct_eq(token.as_bytes())));
    if matches {
        Ok(())
    } else {
        Err(ServiceError::new(
            ErrorKind::Unauthorized,
            "missing or wrong bearer token; send the header \"Authorization: Bearer <token>\" with the token from the server's --token-file",
        ))
    }
}

/// Whether `host` (with or without a port) names this machine.
fn is_local(host: &str) -> bool {
    let name = if host.starts_with('[') {
        host.split_inclusive(']').next().unwrap_or(host)
    } else {
        host.split(':').next().unwrap_or(host)
    };
    LOCAL_HOSTS
        .iter()
        .any(|local| name.eq_ignore_ascii_case(local))
}

/// The value of the header `name`, if the request has it as text.
pub fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_hosts_are_recognised_with_and_without_ports() {
        for host in ["localhost", "127.0.0.1:7077", "[::1]:80", "LOCALHOST:1"] {
            assert!(is_local(host), "{host}");
        }
        for host in [
            "evil.example",
            "127.0.0.1.evil.example",
            "[::2]:80",
            "localhost.example:80",
        ] {
            assert!(!is_local(host), "{host}");
        }
    }
}
