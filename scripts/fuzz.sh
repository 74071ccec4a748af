#!/usr/bin/env bash
# Runs every fuzz target under libFuzzer, each for RUNS executions (default
# 1,000,000), starting from seeds made from the shared transcripts. Needs a
# nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`); the stable
# smoke run of the same targets is part of `cargo test`.
#
#   scripts/fuzz.sh [RUNS] [TARGET...]
#
# Corpora and logs go to target/fuzz-work (FUZZ_WORK overrides); a crash's
# input is saved under fuzz/artifacts/TARGET/ and replays with
# `cargo +nightly fuzz run --fuzz-dir fuzz TARGET ARTIFACT`.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-1000000}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(importers log event guard render pipeline service mcp)
fi
work=${FUZZ_WORK:-target/fuzz-work}

cargo run -q --release -p agentmem-fuzz --bin fuzz-seeds -- "$work/seeds"
for target in "${targets[@]}"; do
    mkdir -p "$work/corpus/$target"
    echo "== $target: $runs runs"
    cargo +nightly fuzz run --fuzz-dir fuzz --sanitizer none --debug-assertions "$target" \
        "$work/corpus/$target" "$work/seeds/$target" -- \
        -runs="$runs" -max_len=65536 -rss_limit_mb=4096 -print_final_stats=1 \
        >"$work/$target.log" 2>&1 || { tail -40 "$work/$target.log"; exit 1; }
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb|Done" "$work/$target.log" || true
done
