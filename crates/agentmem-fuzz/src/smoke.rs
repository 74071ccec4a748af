//! A fuzzer that runs on the stable toolchain: every seed, then mutations
//! of the seeds (bytes flipped, inserted, deleted, repeated, spliced with
//! another seed, JSON-shaped tokens dropped in), from a fixed random seed
//! so a failure reproduces. It has no coverage feedback; libFuzzer
//! (`fuzz/`) does the long runs, and this keeps every target exercised in
//! `cargo test`.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::Target;

/// Fragments that steer a mutation toward JSON's edges.
const TOKENS: [&[u8]; 16] = [
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b"\\",
    b":",
    b",",
    b"\n",
    b"null",
    b"123456789012345678901234567890",
    b"-1e400",
    b"\\u0000",
    b"\xff\xfe",
    b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
    b"{\"id\":\"x\",\"trace_type\":\"tool_result\",\"tool_call_id\":\"c\"}",
];

/// A failing input and what the target said.
#[derive(Debug)]
pub struct Failure {
    pub input: Vec<u8>,
    pub message: String,
}

/// Runs `target` on each seed and on `mutations` mutations in all, drawn
/// from `seed`; the inputs that made it panic (none when it holds).
pub fn run(target: Target, seeds: &[Vec<u8>], mutations: usize, seed: u64) -> Vec<Failure> {
    let mut random = Xorshift(seed.max(1));
    let mut failures = Vec::new();
    let mut attempt = |input: Vec<u8>| {
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| target(&input))) {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            failures.push(Failure { input, message });
        }
    };
    seeds.iter().cloned().for_each(&mut attempt);
    if seeds.is_empty() {
        return failures;
    }
    for _ in 0..mutations {
        let base = &seeds[random.below(seeds.len())];
        let other = &seeds[random.below(seeds.len())];
        attempt(mutate(base, other, &mut random));
    }
    failures
}

/// `base` changed in one to four places.
fn mutate(base: &[u8], other: &[u8], random: &mut Xorshift) -> Vec<u8> {
    let mut bytes = base.to_vec();
    for _ in 0..1 + random.below(4) {
        let at = random.below(bytes.len() + 1);
        match random.below(6) {
            0 if at < bytes.len() => bytes[at] ^= 1 << random.below(8),
            1 => bytes.insert(at, random.next() as u8),
            2 => {
                let end = (at + random.below(64)).min(bytes.len());
                bytes.drain(at..end);
            }
            3 => {
                let end = (at + random.below(64)).min(bytes.len());
                let repeated = bytes[at..end].to_vec();
                bytes.splice(at..at, repeated);
            }
            4 => {
                let from = random.below(other.len() + 1);
                let end = (from + random.below(256)).min(other.len());
                bytes.splice(at..at, other[from..end].iter().copied());
            }
            _ => {
                let token = TOKENS[random.below(TOKENS.len())];
                bytes.splice(at..at, token.iter().copied());
            }
        }
    }
    bytes
}

/// A small deterministic generator (xorshift64).
struct Xorshift(u64);

impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (0 when `n` is 0).
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (self.next() % n as u64) as usize
    }
}
