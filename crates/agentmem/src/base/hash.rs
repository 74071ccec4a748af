//! Fixed hashes, not for security: FNV-1a (64-bit, dependency-free) for ids,
//! cache keys and version stamps that are written down, and a fast hasher for
//! in-memory fingerprints of long texts.

/// The FNV-1a hash of `bytes`.
///
/// ```
/// assert_eq!(agentmem::base::hash::fnv1a(b""), 0xcbf2_9ce4_8422_2325);
/// ```
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A hasher for in-memory fingerprints of texts that may be megabytes long
/// (a tool output seen before, an event already scanned, a text already
/// counted): seeded the same every time, so equal inputs agree from call to
/// call, and several times faster than the standard library's SipHash.
pub(crate) fn fingerprint_hasher() -> impl std::hash::Hasher {
    use std::hash::BuildHasher;
    foldhash::quality::FixedState::with_seed(0).build_hasher()
}

/// Sixteen random bytes (a new key).
pub(crate) fn random_key() -> std::io::Result<[u8; 16]> {
    let mut key = [0; 16];
    getrandom::fill(&mut key).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(key)
}
