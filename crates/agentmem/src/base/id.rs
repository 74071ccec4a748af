//! Identifiers that become file or directory names.
//!
//! An agent id, a session id and a tool call id each end up in a path
//! (`agents/<agent_id>/sessions/<session_id>/evicted/<tool_call_id>.txt`), so each
//! is checked before anything touches the disk: a bad id is a typed error and
//! nothing is created. Event ids, which a session gives its events, are made
//! here too.

use std::fmt;

use crate::base::error::{Error, IdKind, Result};

/// Longest id accepted, in bytes.
pub(crate) const MAX_ID_BYTES: usize = 128;

/// Checks that `id` is safe to use as one path component.
///
/// Refused: empty ids, ids over `MAX_ID_BYTES`, a leading `.`, `..` anywhere,
/// `/`, `\`, NUL and other control characters.
///
/// ```
/// use agentmem::base::error::IdKind;
/// use agentmem::base::id::validate_path_id;
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

/// Ids for the events of one writer: `ev_` and a UUIDv7, ordered by time
/// and, within a millisecond, by the order they were made.
///
/// A v7 id has 74 free bits after its timestamp; here they hold a 26-bit
/// counter and 48 bits drawn once per generator. `Uuid::now_v7` draws fresh
/// random bytes from the system on every call instead: a system call per
/// event, on every turn.
///
/// ```
/// use agentmem::base::id::EventIds;
/// let mut ids = EventIds::new();
/// let (first, second) = (ids.next_id(1_700_000_000_000), ids.next_id(1_700_000_000_000));
/// assert!(first.starts_with("ev_") && first < second);
/// ```
#[derive(Debug)]
pub struct EventIds {
    counter: u32,
    random: [u8; 6],
}

/// The counter's bits: the v7 bits left between the version and variant.
const EVENT_ID_COUNTER_MASK: u32 = (1 << 26) - 1;

impl EventIds {
    /// A generator with its own random bits.
    pub fn new() -> Self {
        let (_, low) = uuid::Uuid::now_v7().as_u64_pair();
        let mut random = [0; 6];
        random.copy_from_slice(&low.to_be_bytes()[2..]);
        EventIds { counter: 0, random }
    }

    /// The next id, for an event made at `unix_millis`.
    pub fn next_id(&mut self, unix_millis: u64) -> String {
        let counter = self.counter;
        // The builder keeps the low 4 bits of byte 0 and the low 6 of byte 2
        // (the rest carry the version and variant), so the counter is split
        // to fill exactly the bits that stay, highest first.
        let mut bits = [
            (counter >> 22) as u8 & 0x0f,
            (counter >> 14) as u8,
            (counter >> 8) as u8 & 0x3f,
            counter as u8,
            0,
            0,
            0,
            0,
            0,
            0,
        ];
        bits[4..].copy_from_slice(&self.random);
        self.counter = counter.wrapping_add(1) & EVENT_ID_COUNTER_MASK;
        let uuid = uuid::Builder::from_unix_timestamp_millis(unix_millis, &bits).into_uuid();
        let mut buffer = uuid::Uuid::encode_buffer();
        let mut id = String::with_capacity(EVENT_ID_PREFIX.len() + uuid::fmt::Simple::LENGTH);
        id.push_str(EVENT_ID_PREFIX);
        id.push_str(uuid.simple().encode_lower(&mut buffer));
        id
    }
}

/// What every event id agentmem makes starts with.
const EVENT_ID_PREFIX: &str = "ev_";

impl Default for EventIds {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_are_version_7_and_ordered_across_every_bit_of_the_counter() {
        let millis = 1_700_000_000_000;
        for boundary in [1 << 8, 1 << 14, 1 << 22] {
            let mut ids = EventIds::new();
            ids.counter = boundary - 2;
            let made: Vec<String> = (0..4).map(|_| ids.next_id(millis)).collect();
            assert!(made.windows(2).all(|pair| pair[0] < pair[1]), "{made:?}");
        }
        let mut ids = EventIds::new();
        let first = ids.next_id(millis);
        let uuid = uuid::Uuid::parse_str(&first[3..]).unwrap();
        assert_eq!(uuid.get_version(), Some(uuid::Version::SortRand));
        assert_eq!(uuid.get_timestamp().unwrap().to_unix().0, millis / 1000);
        assert!(first < EventIds::new().next_id(millis + 1));
        assert_ne!(
            first,
            EventIds::new().next_id(millis),
            "each draws its own bits"
        );
    }

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
