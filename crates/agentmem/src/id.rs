//! Identifiers that become file or directory names.
//!
//! An agent id, a session id and a tool call id each end up in a path
//! (`agents/<agent_id>/sessions/<session_id>/evicted/<tool_call_id>.txt`), so each
//! is checked before anything touches the disk: a bad id is a typed error and
//! nothing is created.

use std::fmt;

use crate::error::{Error, Result};

/// Longest id accepted, in bytes.
pub const MAX_ID_BYTES: usize = 128;

/// What kind of id was being validated; named in the error message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdKind {
    Agent,
    Session,
    ToolCall,
}

impl fmt::Display for IdKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IdKind::Agent => "agent id",
            IdKind::Session => "session id",
            IdKind::ToolCall => "tool call id",
        })
    }
}

/// Checks that `id` is safe to use as one path component.
///
/// Refused: empty ids, ids over [`MAX_ID_BYTES`], a leading `.`, `..` anywhere,
/// `/`, `\`, NUL and other control characters.
///
/// ```
/// use agentmem::id::{validate_path_id, IdKind};
/// assert!(validate_path_id(IdKind::Session, "s_2026-01-01").is_ok());
/// assert!(validate_path_id(IdKind::Session, "../x").is_err());
/// assert!(validate_path_id(IdKind::Agent, "/etc").is_err());
/// assert!(validate_path_id(IdKind::ToolCall, "a\0b").is_err());
/// ```
pub fn validate_path_id(kind: IdKind, id: &str) -> Result<()> {
    let reason = if id.is_empty() {
        Some("it is empty")
    } else if id.len() > MAX_ID_BYTES {
        Some("it is longer than 128 bytes")
    } else if id.starts_with('.') {
        Some("it starts with '.'")
    } else if id.contains("..") {
        Some("it contains '..'")
    } else if id.contains('/') || id.contains('\\') {
        Some("it contains a path separator")
    } else if id.chars().any(char::is_control) {
        Some("it contains a control character (NUL, newline, …)")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(Error::InvalidId {
            kind,
            id: id.escape_debug().to_string(),
            reason,
        }),
        None => Ok(()),
    }
}

macro_rules! path_id {
    ($(#[$doc:meta])* $name:ident, $kind:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            /// Validates `id` (see [`validate_path_id`]) and wraps it.
            pub fn new(id: impl Into<String>) -> Result<Self> {
                let id = id.into();
                validate_path_id($kind, &id)?;
                Ok(Self(id))
            }

            /// The id as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::str::FromStr for $name {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self> {
                Self::new(s)
            }
        }
    };
}

path_id!(
    /// The id of an agent: the folder `agents/<agent_id>/`.
    AgentId,
    IdKind::Agent
);
path_id!(
    /// The id of a session: the folder `agents/<agent_id>/sessions/<session_id>/`.
    SessionId,
    IdKind::Session
);

/// The agent used when none is named: `default`.
impl Default for AgentId {
    fn default() -> Self {
        Self("default".to_owned())
    }
}

impl SessionId {
    /// A fresh, time-ordered session id such as `s_0196f3c2a1b27c30a8f1b2c3`.
    pub fn generate() -> Self {
        let uuid = uuid::Uuid::now_v7().simple().to_string();
        Self(format!("s_{}", &uuid[..24]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_every_path_trick() {
        let long = "x".repeat(MAX_ID_BYTES + 1);
        for bad in [
            "", "../x", "/etc", "a\0b", ".hidden", "a/b", "a\\b", "..", "x..y", &long,
        ] {
            assert!(SessionId::new(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn accepts_ordinary_ids() {
        for good in [
            "default",
            "s_0196",
            "toolu_01ABC",
            "call-1.2",
            &"x".repeat(MAX_ID_BYTES),
        ] {
            assert!(AgentId::new(good).is_ok(), "{good:?} was refused");
        }
    }

    #[test]
    fn generated_session_ids_are_valid_and_distinct() {
        let a = SessionId::generate();
        let b = SessionId::generate();
        assert_ne!(a, b);
        assert!(SessionId::new(a.as_str()).is_ok());
    }
}
