#!/usr/bin/env bash
# Pools of 1, 2 and 4 erasure sets of 4 directories (2+2, fsync) on the same
# disk: 4 KiB PUTs overwriting 5,000 keys for 10 s with 64 clients, then a
# fill of N one-byte keys and full listings of them by one client, with the
# server's CPU ticks (1/100 s) per run, so the cost of the listing merge
# over the sets is known. One build, the three pools in turn.
#
#   benches/sets.sh BIN [N]
set -uo pipefail
. "$(dirname "$0")/bench-env.sh"
bin=$1 n=${2:-100000}
dir=${BENCH_DIR:-/var/tmp/granary-sets-bench}
port=9420
for sets in 1 2 4; do
    rm -rf "$dir"; mkdir -p "$dir"
    dirs=$(for i in $(seq 1 $((sets * 4))); do echo "$dir/d$i"; done)
    # shellcheck disable=SC2086
    "$bin" server $dirs --set-width 4 --parity 2 --address 127.0.0.1:$port \
        --read-cache-mib 0 > "$dir.log" 2>&1 &
    pid=$!
    until curl -fs -o /dev/null "http://127.0.0.1:$port/granary/health/ready"; do sleep 0.1; done
    ticks() { awk '{print $14+$15}' "/proc/$pid/stat"; }
    a=$(ticks)
    r=$("$load" --endpoint "http://127.0.0.1:$port" --op put-raw --size 4096 --concurrency 64 \
        --seconds 10 --objects 5000 | awk 'NR==1')
    b=$(ticks)
    ops=$(echo "$r" | grep -oE '[0-9.]+ ops/s' | grep -oE '[0-9.]+')
    echo "$sets sets PUT 4 KiB: $(echo "$r" | grep -oE '[0-9.]+ ops/s|[0-9.]+ p99_ms|[0-9]+ errors' | paste -sd' ') server ticks $((b - a)) ($(echo "scale=1; ($b - $a) * 10000 / ($ops * 10)" | bc) us CPU per PUT)"
    "$load" --endpoint "http://127.0.0.1:$port" --op put-raw --size 1 --concurrency 64 \
        --count "$n" --objects "$n" --prefix l > /dev/null
    for round in 1 2 3; do
        a=$(ticks)
        t0=$(date +%s.%N)
        "$load" --endpoint "http://127.0.0.1:$port" --op list-raw --size 1 --objects "$n" \
            --prefix l --concurrency 1 --count 1 --seconds 600 --no-prepare > /dev/null
        t1=$(date +%s.%N)
        b=$(ticks)
        [ "$round" = 1 ] && continue   # warm-up
        echo "$sets sets LIST $n keys: $(echo "scale=0; $n / ($t1 - $t0)" | bc) keys/s, server ticks $((b - a)) ($(echo "scale=2; ($b - $a) * 10000 / $n" | bc) us CPU per key)"
    done
    kill "$pid"; wait "$pid" 2>/dev/null
done
rm -rf "$dir" "$dir.log"
