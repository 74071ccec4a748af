//! What redaction hid from a fact, as a keyed fingerprint: two facts that
//! read the same once redacted ("the password is [REDACTED:secret]") are
//! told apart by it, in this process and the next, without the secret
//! itself being kept anywhere but the raw record.
//!
//! The fingerprint is SipHash-2-4 (128 bits) of the hidden words under a
//! random key of the agent's (`facts.key`, mode 0600): without the key a
//! fingerprint cannot be checked against guessed words.

use std::collections::BTreeSet;
use std::hash::Hasher;
use std::path::Path;

use siphasher::sip128::{Hasher128, SipHasher24};

use crate::base::error::{IoContext, Result};

/// The key's file name inside the agent folder.
pub(crate) const KEY_FILE: &str = "facts.key";
const KEY_BYTES: usize = 16;

/// The agent's key for fingerprints of hidden words.
#[derive(Clone, Copy)]
pub(crate) struct HiddenKey([u8; KEY_BYTES]);

impl std::fmt::Debug for HiddenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HiddenKey(..)")
    }
}

impl HiddenKey {
    /// The key of the agent whose folder is `agent_dir`, made the first
    /// time it is needed; call it holding the agent's memory lock.
    pub(crate) fn of_agent(agent_dir: &Path) -> Result<HiddenKey> {
        let path = agent_dir.join(KEY_FILE);
        let proposed = crate::base::hash::random_key().io("make a key for", &path)?;
        Ok(HiddenKey(key_file(agent_dir, proposed)?))
    }

    /// The key `bytes`.
    pub(crate) fn from_bytes(bytes: [u8; KEY_BYTES]) -> HiddenKey {
        HiddenKey(bytes)
    }

    /// The key of the agent kept behind the storage seam, made the first
    /// time it is needed.
    pub(crate) fn of_seam(
        memory: &dyn crate::storage::memory::MemoryStorage,
        agent: &crate::base::id::AgentId,
    ) -> Result<HiddenKey> {
        let proposed =
            crate::base::hash::random_key().map_err(|source| crate::base::error::Error::Io {
                action: "make a key for",
                path: std::path::PathBuf::from(format!("the facts of agent {agent}")),
                source,
            })?;
        Ok(HiddenKey(memory.facts_key(agent, proposed)?))
    }

    /// The fingerprint of `words`, hex.
    pub(crate) fn fingerprint(&self, words: &BTreeSet<String>) -> String {
        let mut hasher = SipHasher24::new_with_key(&self.0);
        for word in words {
            hasher.write(word.as_bytes());
            hasher.write_u8(0xff); // no word holds this byte: the words stay apart
        }
        format!("{:032x}", hasher.finish128().as_u128())
    }
}

/// The key in the agent folder `agent_dir`, `proposed` written as it when
/// there is none (or one cut short by a crash before anything used it);
/// call it holding the agent's memory lock.
pub(crate) fn key_file(agent_dir: &Path, proposed: [u8; KEY_BYTES]) -> Result<[u8; KEY_BYTES]> {
    let path = agent_dir.join(KEY_FILE);
    match std::fs::read(&path) {
        Ok(bytes) if bytes.len() == KEY_BYTES => {
            let mut key = [0; KEY_BYTES];
            key.copy_from_slice(&bytes);
            return Ok(key);
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).io("read", &path),
    }
    crate::base::fs::create_dir_all(agent_dir).io("create", agent_dir)?;
    crate::base::fs::write_atomic(&path, &proposed)?;
    Ok(proposed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> BTreeSet<String> {
        text.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn one_key_an_agent_kept_across_processes_and_fingerprints_that_tell_words_apart() {
        let dir = tempfile::tempdir().unwrap();
        let key = HiddenKey::of_agent(dir.path()).unwrap();
        let again = HiddenKey::of_agent(dir.path()).unwrap();
        assert_eq!(
            key.fingerprint(&words("hunter2")),
            again.fingerprint(&words("hunter2"))
        );
        assert_ne!(
            key.fingerprint(&words("hunter2")),
            key.fingerprint(&words("hunter3"))
        );
        assert_ne!(
            key.fingerprint(&words("ab c")),
            key.fingerprint(&words("a bc"))
        );
        let other = tempfile::tempdir().unwrap();
        let other_key = HiddenKey::of_agent(other.path()).unwrap();
        assert_ne!(
            key.fingerprint(&words("hunter2")),
            other_key.fingerprint(&words("hunter2")),
            "another agent's key gives other fingerprints"
        );
    }
}
