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
        match std::fs::read(&path) {
            Ok(bytes) if bytes.len() == KEY_BYTES => {
                let mut key = [0; KEY_BYTES];
                key.copy_from_slice(&bytes);
                return Ok(HiddenKey(key));
            }
            // A key cut short by a crash before anything used it: made anew.
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).io("read", &path),
        }
        let mut key = [0; KEY_BYTES];
        getrandom::fill(&mut key)
            .map_err(|e| std::io::Error::other(e.to_string()))
            .io("make a key for", &path)?;
        crate::base::fs::write_atomic(&path, &key)?;
        Ok(HiddenKey(key))
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
