#!/usr/bin/env bash
# What finding a key's pool costs: a cluster on loopback whose hot pool is
# 4 disks (2+2) on two `granary node`s, measured alone and then with a
# second hot pool of 4 disks on two more nodes added to the cluster file
# (the gateway restarted). With two hot pools every single-key request asks
# both pools for the key's records at once. Measures 4 KiB PUT (overwrites
# of 1,000 keys) and GET with 16 clients, and the gateway's CPU per request
# from /proc/PID/stat ticks (1/100 s). Release builds first:
#   cargo build --release --locked -p granary -p granary-benches --bins
# usage: benches/pools.sh [WORKDIR]
# env:   SECS (10 per measurement)
set -euo pipefail
d="${1:-/var/tmp/granary-pools-bench}"
secs="${SECS:-10}"
port=9943
. "$(dirname "$0")/cluster-env.sh"
rm -rf "$d"; mkdir -p "$d"
gw=
for i in 1 2 3 4; do node $i; done
trap 'kill $gw ${pids[*]} 2>/dev/null; wait 2>/dev/null; rm -rf "$d"' EXIT
deployment=$(python3 -c 'import uuid; print(uuid.uuid4())')
cat > "$d/cluster.toml" <<TOML
deployment = "$deployment"
[[pool]]
tier = "hot"
parity = 2
disks = ["127.0.0.2:$d/n1/d{1...2}", "127.0.0.3:$d/n2/d{1...2}"]
TOML
gateway() {
    "$t/granary" gateway --cluster "$d/cluster.toml" --address 127.0.0.1:$port --read-cache-mib 0 \
        >>"$d/gw.out" 2>>"$d/gw.log" &
    gw=$!
    for _ in $(seq 300); do curl -fs http://127.0.0.1:$port/granary/health/ready >/dev/null && break; sleep 0.1; done
}
L="$t/granary-load --endpoint http://127.0.0.1:$port"
ticks() { awk '{print $14+$15}' "/proc/$gw/stat"; }
measure() { # measure LABEL OP [ARGS...]
    local label=$1; shift
    local a b r
    a=$(ticks)
    r=$($L "$@" --size 4096 --concurrency 16 --seconds "$secs" --objects 1000 | tail -1)
    b=$(ticks)
    echo "$r" | python3 -c '
import json, sys
r = json.load(sys.stdin)
label, ticks = sys.argv[1], int(sys.argv[2])
print("%s: %.0f ops/s, p50 %.1f ms, p99 %.1f ms, %d errors, gateway %.0f us CPU per request"
      % (label, r["ops_per_s"], r["p50_ms"], r["p99_ms"], r["errors"], ticks * 10000 / r["ops"]))
' "$label" $((b - a))
}
gateway
measure "one pool: PUT 4 KiB" --op put-raw --prefix a
measure "one pool: GET 4 KiB" --op get-raw --prefix a --no-prepare
kill "$gw"; wait "$gw" 2>/dev/null || true
cat >> "$d/cluster.toml" <<TOML
[[pool]]
tier = "hot"
parity = 2
disks = ["127.0.0.4:$d/n3/d{1...2}", "127.0.0.5:$d/n4/d{1...2}"]
TOML
gateway
# The keys "a" live in the first pool; the keys "b" are new, spread over both.
measure "two pools: GET 4 KiB, keys of the first pool" --op get-raw --prefix a --no-prepare
measure "two pools: PUT 4 KiB, keys of the first pool" --op put-raw --prefix a --no-prepare
measure "two pools: PUT 4 KiB, keys placed by free space" --op put-raw --prefix b
measure "two pools: GET 4 KiB, keys placed by free space" --op get-raw --prefix b --no-prepare
