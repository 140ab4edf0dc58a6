#!/usr/bin/env bash
# Coverage-guided fuzzing of Granary's parsers and decoders (the targets
# of fuzz-targets/, run by cargo-fuzz from fuzz/), outside CI.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Runs each TARGET (default: every target) for SECONDS (default 60),
# growing its corpus in fuzz/corpus/TARGET/ and then minimising it
# (`cargo fuzz cmin`: only inputs that add coverage stay); an input that
# fails a target is kept in fuzz/artifacts/TARGET/. One line per run —
# target, seconds, CPU seconds it got, executions, edges covered, corpus
# size, and whether it crashed — is appended to fuzz/runs.log
# (scripts/fuzz-summary.sh totals it per target). An input of at most 64 KiB that
# takes over 10 s, or (with FUZZ_ASAN=1, whose hooks libFuzzer needs to see
# allocations) makes one allocation over 256 MiB, fails like a panic. Runs at the lowest CPU
# priority, so it can fill a machine's idle time. Installs cargo-fuzz when missing.
#
# Optimised with debug assertions and overflow checks; without sanitizers
# by default (the stable toolchain); FUZZ_ASAN=1 builds with
# AddressSanitizer (through RUSTC_BOOTSTRAP=1). The build lives in
# CARGO_TARGET_DIR (default /var/tmp/granary-fuzz-target, with `-asan`
# for the sanitised build), apart from the main workspace's.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
shift || true
target_dir="${CARGO_TARGET_DIR:-/var/tmp/granary-fuzz-target}"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
sanitizer=(--sanitizer none -O -a)
if [ "${FUZZ_ASAN:-0}" = 1 ]; then
    export RUSTC_BOOTSTRAP=1
    sanitizer=(--sanitizer address -O -a)
    target_dir="$target_dir-asan"
fi
export CARGO_TARGET_DIR="$target_dir"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo fuzz list)
fi
cargo fuzz build "${sanitizer[@]}"
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t"
    log="$(mktemp)"
    cpu_log="$(mktemp)"
    status=ok
    # `time` reports the CPU seconds the run got, which is less than its
    # wall-clock SECONDS when builds or tests share the cores.
    { TIMEFORMAT='%U'; time nice -n 19 cargo fuzz run "${sanitizer[@]}" "$t" "fuzz/corpus/$t" -- \
        -max_total_time="$secs" -print_final_stats=1 -rss_limit_mb=2048 \
        -malloc_limit_mb=256 -max_len=65536 -timeout=10 >"$log" 2>&1 || status=crashed; } 2>"$cpu_log"
    cpu=$(printf '%.0f' "$(tail -1 "$cpu_log")")
    nice -n 19 cargo fuzz cmin "${sanitizer[@]}" "$t" "fuzz/corpus/$t" -- \
        -rss_limit_mb=2048 -timeout=10 >/dev/null 2>&1 || true
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo 0)
    corpus=$(find "fuzz/corpus/$t" -type f | wc -l)
    line="$(date -u +%FT%TZ) $t ${secs}s cpu=${cpu}s execs=$execs edges=$cov corpus=$corpus $status"
    echo "$line" | tee -a fuzz/runs.log
    if [ "$status" = crashed ]; then
        grep -iE 'panicked|SUMMARY|ERROR|Test unit written' "$log" | head -20 || true
    fi
    rm -f "$log" "$cpu_log"
done
