//! The service's error: the engine's error (or a bad request) sorted into
//! the kinds a client can act on, each with an HTTP status.

use agentmem::Error as EngineError;

use crate::replies::{ErrorBody, ErrorDetail};

/// What kind of failure a client sees, and so what it should do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The request is malformed or names something invalid: fix it.
    BadRequest,
    /// The session (or evicted output) does not exist.
    NotFound,
    /// The state changed underneath (stale version, id taken): read again.
    Conflict,
    /// Another process holds the session's writer lock: retry later.
    Locked,
    /// The request body is over the size limit.
    TooLarge,
    /// No or wrong bearer token.
    Unauthorized,
    /// The request's `Origin` or `Host` is not this machine's.
    Forbidden,
    /// No such operation or route.
    UnknownOperation,
    /// The method does not apply to the route.
    MethodNotAllowed,
    /// The engine failed (I/O, the index): nothing the request can fix.
    Internal,
}

impl ErrorKind {
    /// Every kind.
    pub const ALL: [ErrorKind; 10] = [
        ErrorKind::BadRequest,
        ErrorKind::NotFound,
        ErrorKind::Conflict,
        ErrorKind::Locked,
        ErrorKind::TooLarge,
        ErrorKind::Unauthorized,
        ErrorKind::Forbidden,
        ErrorKind::UnknownOperation,
        ErrorKind::MethodNotAllowed,
        ErrorKind::Internal,
    ];

    /// The HTTP status that carries this kind.
    pub fn status(self) -> u16 {
        match self {
            ErrorKind::BadRequest => 400,
            ErrorKind::Unauthorized => 401,
            ErrorKind::Forbidden => 403,
            ErrorKind::NotFound | ErrorKind::UnknownOperation => 404,
            ErrorKind::MethodNotAllowed => 405,
            ErrorKind::Conflict => 409,
            ErrorKind::TooLarge => 413,
            ErrorKind::Locked => 423,
            ErrorKind::Internal => 500,
        }
    }

    /// The kind's name in error bodies: `{"error": {"kind": …}}`.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::BadRequest => "bad_request",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Locked => "locked",
            ErrorKind::TooLarge => "too_large",
            ErrorKind::Unauthorized => "unauthorized",
            ErrorKind::Forbidden => "forbidden",
            ErrorKind::UnknownOperation => "unknown_operation",
            ErrorKind::MethodNotAllowed => "method_not_allowed",
            ErrorKind::Internal => "internal",
        }
    }
}

/// A refused or failed request: its kind and a message that says what to do.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct ServiceError {
    pub kind: ErrorKind,
    pub message: String,
}

impl ServiceError {
    /// A request the client must fix.
    pub fn bad_request(message: impl Into<String>) -> ServiceError {
        ServiceError::new(ErrorKind::BadRequest, message)
    }

    /// An error of `kind`; the message should say what to do.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> ServiceError {
        ServiceError {
            kind,
            message: message.into(),
        }
    }

    /// The JSON body an error is answered with.
    pub fn to_json(&self) -> serde_json::Value {
        let body = ErrorBody {
            error: ErrorDetail {
                kind: self.kind,
                message: self.message.clone(),
            },
        };
        serde_json::to_value(body).expect("an error body is JSON")
    }
}

impl From<EngineError> for ServiceError {
    fn from(error: EngineError) -> ServiceError {
        ServiceError::new(kind_of(&error), error.to_string())
    }
}

/// Only the service's own results are turned into JSON with `?`: requests
/// are read with errors that name the field. So a failure here is ours.
impl From<serde_json::Error> for ServiceError {
    fn from(error: serde_json::Error) -> ServiceError {
        ServiceError::new(
            ErrorKind::Internal,
            format!("cannot write the result as JSON: {error}"),
        )
    }
}

/// Every engine error decides its kind here, so a new variant must too.
fn kind_of(error: &EngineError) -> ErrorKind {
    match error {
        EngineError::InvalidId { .. }
        | EngineError::InvalidEvent { .. }
        | EngineError::BadLine { .. }
        | EngineError::NotAnOverflow { .. }
        | EngineError::OverflowUnrecoverable { .. }
        | EngineError::MemoryEdit { .. }
        | EngineError::FactEdit { .. }
        | EngineError::BadQuery { .. }
        | EngineError::InvalidArguments { .. }
        | EngineError::WorkingMemoryPatch { .. }
        | EngineError::WorkingMemoryInvalid { .. }
        | EngineError::WorkingMemorySchema { .. } => ErrorKind::BadRequest,
        EngineError::SessionNotFound { .. }
        | EngineError::TurnNotFound { .. }
        | EngineError::EvictedNotFound { .. } => ErrorKind::NotFound,
        EngineError::SessionExists { .. }
        | EngineError::MemoryConflict { .. }
        | EngineError::WorkingMemoryConflict { .. } => ErrorKind::Conflict,
        EngineError::SessionLocked { .. } => ErrorKind::Locked,
        EngineError::ReadOnly { .. }
        | EngineError::Config { .. }
        | EngineError::Summarizer { .. }
        | EngineError::Embedder { .. }
        | EngineError::EmbeddingBehind { .. }
        | EngineError::Reranker { .. }
        | EngineError::Io { .. }
        | EngineError::Storage { .. }
        | EngineError::Index { .. } => ErrorKind::Internal,
        EngineError::NotOnBackend { .. } => ErrorKind::UnknownOperation,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_written_by_its_name() {
        for kind in ErrorKind::ALL {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.name());
        }
    }
}
