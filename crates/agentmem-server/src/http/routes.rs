//! The route table: which method and path reach which endpoint. It is data,
//! so the OpenAPI document is built from it.

use serde_json::{Map, Value};

use crate::error::{ErrorKind, ServiceError};
use crate::service::Op;

/// What a route leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Health,
    Metrics,
    OpenApi,
    /// MCP's streamable HTTP transport.
    Mcp,
    Op(Op),
}

impl Endpoint {
    /// Its name: the operation's (see [`Op::name`]), or the endpoint's own;
    /// the document's `operationId` and the metrics' label.
    pub fn name(self) -> &'static str {
        match self {
            Endpoint::Health => "healthz",
            Endpoint::Metrics => "metrics",
            Endpoint::OpenApi => "openapi",
            Endpoint::Mcp => "mcp",
            Endpoint::Op(op) => op.name(),
        }
    }
}

/// One method and path pattern; `{name}` segments capture into the arguments.
#[derive(Debug, Clone, Copy)]
pub struct Route {
    pub method: &'static str,
    pub path: &'static str,
    pub endpoint: Endpoint,
}

const fn route(method: &'static str, path: &'static str, endpoint: Endpoint) -> Route {
    Route {
        method,
        path,
        endpoint,
    }
}

/// Every route the server answers.
pub const ROUTES: [Route; 28] = [
    route("GET", "/healthz", Endpoint::Health),
    route("GET", "/metrics", Endpoint::Metrics),
    route("GET", "/openapi.json", Endpoint::OpenApi),
    route("POST", "/mcp", Endpoint::Mcp),
    route("GET", "/v1/sessions", Endpoint::Op(Op::Sessions)),
    route("POST", "/v1/sessions", Endpoint::Op(Op::CreateSession)),
    route(
        "GET",
        "/v1/sessions/{session}",
        Endpoint::Op(Op::ResumeSession),
    ),
    route(
        "DELETE",
        "/v1/sessions/{session}",
        Endpoint::Op(Op::DeleteSession),
    ),
    route(
        "POST",
        "/v1/sessions/{session}/fork",
        Endpoint::Op(Op::Fork),
    ),
    route(
        "POST",
        "/v1/sessions/{session}/events",
        Endpoint::Op(Op::Append),
    ),
    route(
        "GET",
        "/v1/sessions/{session}/events",
        Endpoint::Op(Op::Events),
    ),
    route(
        "POST",
        "/v1/sessions/{session}/prepare",
        Endpoint::Op(Op::Prepare),
    ),
    route(
        "POST",
        "/v1/sessions/{session}/compact",
        Endpoint::Op(Op::Compact),
    ),
    route(
        "POST",
        "/v1/sessions/{session}/recover",
        Endpoint::Op(Op::RecoverOverflow),
    ),
    route(
        "POST",
        "/v1/sessions/{session}/end",
        Endpoint::Op(Op::EndSession),
    ),
    route(
        "GET",
        "/v1/sessions/{session}/state",
        Endpoint::Op(Op::State),
    ),
    route(
        "PATCH",
        "/v1/sessions/{session}/state",
        Endpoint::Op(Op::UpdateState),
    ),
    route(
        "GET",
        "/v1/sessions/{session}/state/history",
        Endpoint::Op(Op::StateHistory),
    ),
    route(
        "PUT",
        "/v1/sessions/{session}/state/schema",
        Endpoint::Op(Op::SetStateSchema),
    ),
    route("POST", "/v1/search", Endpoint::Op(Op::Search)),
    route("POST", "/v1/recall", Endpoint::Op(Op::Recall)),
    route("GET", "/v1/memory", Endpoint::Op(Op::ReadMemory)),
    route("POST", "/v1/memory", Endpoint::Op(Op::AppendMemory)),
    route("PATCH", "/v1/memory", Endpoint::Op(Op::ReplaceMemory)),
    route("GET", "/v1/facts", Endpoint::Op(Op::Facts)),
    route("POST", "/v1/facts", Endpoint::Op(Op::RememberFact)),
    route("GET", "/v1/tools", Endpoint::Op(Op::Tools)),
    route("POST", "/v1/tools/{name}", Endpoint::Op(Op::Tool)),
];

/// A request matched to its route, with the path's captures.
#[derive(Debug)]
pub struct Matched {
    pub route: &'static Route,
    pub captures: Map<String, Value>,
}

/// The route for `method` and `path` (without the query).
pub fn find(method: &str, path: &str) -> Result<Matched, ServiceError> {
    let mut path_matched = false;
    for route in &ROUTES {
        let Some(captures) = captures(route.path, path) else {
            continue;
        };
        if route.method == method {
            let captures = percent_decoded(captures)?;
            return Ok(Matched { route, captures });
        }
        path_matched = true;
    }
    Err(if path_matched {
        ServiceError::new(
            ErrorKind::MethodNotAllowed,
            format!("{method} does not apply to {path}; /openapi.json lists the routes"),
        )
    } else {
        ServiceError::new(
            ErrorKind::UnknownOperation,
            format!("no route {path}; /openapi.json lists the routes"),
        )
    })
}

/// The methods some route takes at `path`.
pub fn allowed_methods(path: &str) -> Vec<&'static str> {
    ROUTES
        .iter()
        .filter(|route| captures(route.path, path).is_some())
        .map(|route| route.method)
        .collect()
}

/// The `{name}` segments of `pattern` filled from `path`, if it matches.
fn captures(pattern: &str, path: &str) -> Option<Map<String, Value>> {
    let mut pattern_segments = pattern.split('/');
    let mut path_segments = path.split('/');
    let mut captures = Map::new();
    loop {
        match (pattern_segments.next(), path_segments.next()) {
            (None, None) => return Some(captures),
            (Some(expected), Some(actual)) => {
                if let Some(name) = expected.strip_prefix('{').and_then(|n| n.strip_suffix('}')) {
                    if actual.is_empty() {
                        return None;
                    }
                    captures.insert(name.to_owned(), Value::String(actual.to_owned()));
                } else if expected != actual {
                    return None;
                }
            }
            (Some(_), None) | (None, Some(_)) => return None,
        }
    }
}

/// Captured path segments percent-decoded (`+` stays itself in a path), so
/// every id the API takes can be named in a URL.
fn percent_decoded(captures: Map<String, Value>) -> Result<Map<String, Value>, ServiceError> {
    captures
        .into_iter()
        .map(|(name, raw)| {
            let raw = raw.as_str().unwrap_or_default();
            let decoded = percent_encoding::percent_decode_str(raw)
                .decode_utf8()
                .map_err(|_| {
                    ServiceError::bad_request(format!(
                        "the path segment {raw:?} is not UTF-8 once percent-decoded"
                    ))
                })?;
            Ok((name, Value::String(decoded.into_owned())))
        })
        .collect()
}

/// The query string as arguments, each a string (percent-decoded); the
/// service reads counts and flags from strings too.
pub fn query_arguments(query: &str) -> Result<Map<String, Value>, ServiceError> {
    let mut arguments = Map::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        arguments.insert(decode(key)?, Value::String(decode(value)?));
    }
    Ok(arguments)
}

fn decode(text: &str) -> Result<String, ServiceError> {
    let spaced = text.replace('+', " ");
    percent_encoding::percent_decode_str(&spaced)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| ServiceError::bad_request("the query string is not UTF-8 once decoded"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_capture_fills_the_arguments() {
        let matched = find("POST", "/v1/sessions/s-1/events").unwrap();
        assert_eq!(matched.route.endpoint, Endpoint::Op(Op::Append));
        assert_eq!(matched.captures["session"], "s-1");
    }

    #[test]
    fn a_known_path_with_the_wrong_method_is_told_apart_from_an_unknown_path() {
        assert_eq!(
            find("PUT", "/v1/sessions").unwrap_err().kind,
            ErrorKind::MethodNotAllowed
        );
        assert_eq!(
            find("GET", "/v1/nothing").unwrap_err().kind,
            ErrorKind::UnknownOperation
        );
        assert!(find("POST", "/v1/sessions//events").is_err());
    }

    #[test]
    fn query_values_are_decoded_strings() {
        let args = query_arguments("all=true&session=123&q=build+fails%21").unwrap();
        assert_eq!(args["all"], "true");
        assert_eq!(
            args["session"], "123",
            "a numeric session id stays a string"
        );
        assert_eq!(args["q"], "build fails!");
    }
}
