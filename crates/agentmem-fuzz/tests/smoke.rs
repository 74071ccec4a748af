//! Every fuzz target, on the stable toolchain: each seed made from the
//! shared transcripts, then mutations of them. A failure prints the input
//! that broke the target, to replay under `fuzz/`.

use agentmem_fuzz::{seeds, smoke, TARGETS};

/// Mutations per target: enough to reach past the seeds' paths, few
/// enough for a test run (the long runs are libFuzzer's).
const MUTATIONS: usize = 300;
/// How much of a failing input the report shows.
const INPUT_SHOWN_CHARS: usize = 300;

#[test]
fn every_target_holds_on_real_transcripts_and_their_mutations() {
    let trajectories = seeds::trajectories_dir();
    let mut broken = Vec::new();
    for (name, target) in TARGETS {
        let seeds = seeds::for_target(name, &trajectories);
        assert!(
            !seeds.is_empty(),
            "{name}: no seeds under {}",
            trajectories.display()
        );
        for failure in smoke::run(target, &seeds, MUTATIONS, 0x5eed) {
            let input = String::from_utf8_lossy(&failure.input);
            let shown: String = input.chars().take(INPUT_SHOWN_CHARS).collect();
            broken.push(format!(
                "{name}: {}\n  input ({} bytes): {shown:?}",
                failure.message,
                failure.input.len()
            ));
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}
