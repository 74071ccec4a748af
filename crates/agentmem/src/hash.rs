//! FNV-1a, 64-bit: a fixed, dependency-free hash for ids, cache keys and
//! version stamps (not for security).

/// The FNV-1a hash of `bytes`.
///
/// ```
/// assert_eq!(agentmem::hash::fnv1a(b""), 0xcbf2_9ce4_8422_2325);
/// ```
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
