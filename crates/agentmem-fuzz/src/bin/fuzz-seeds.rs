//! Writes every target's seeds (see `agentmem_fuzz::seeds`) under the
//! folder given, one folder per target: the corpora `scripts/fuzz.sh`
//! starts libFuzzer from.

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let Some(out) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: fuzz-seeds OUT_DIR");
        std::process::exit(2);
    };
    let trajectories = agentmem_fuzz::seeds::trajectories_dir();
    for (name, _) in agentmem_fuzz::TARGETS {
        let dir = out.join(name);
        std::fs::create_dir_all(&dir)?;
        let seeds = agentmem_fuzz::seeds::for_target(name, &trajectories);
        for (n, seed) in seeds.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{n:05}")), seed)?;
        }
        println!("{name}: {} seeds", seeds.len());
    }
    Ok(())
}
