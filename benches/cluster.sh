#!/usr/bin/env bash
# A cluster on loopback: four `granary node`s (127.0.0.2–5, two disk
# directories each, 6+2 across them) and one `granary gateway`. Measures
# 1 MiB PUT and GET with every node up and with one node killed, then how
# fast `granary admin heal` rebuilds what the dead node missed. All nodes
# share this machine's one disk and two cores with the gateway and the load
# generator. Release builds first:
#   cargo build --release && cargo build --release -p granary-benches --bins
# usage: benches/cluster.sh [WORKDIR]
# env:   SECS (10 per measurement), HEAL_MIB (1024 written while a node is down)
set -euo pipefail
d="${1:-/var/tmp/granary-cluster-bench}"
secs="${SECS:-10}"
heal_mib="${HEAL_MIB:-1024}"
port=9941
. "$(dirname "$0")/cluster-env.sh"
rm -rf "$d"; mkdir -p "$d"
for i in 1 2 3 4; do node $i; done
cat > "$d/cluster.toml" <<TOML
deployment = "$(python3 -c 'import uuid; print(uuid.uuid4())')"
[[pool]]
tier = "hot"
parity = 2
disks = ["127.0.0.2:$d/n1/d{1...2}", "127.0.0.3:$d/n2/d{1...2}", "127.0.0.4:$d/n3/d{1...2}", "127.0.0.5:$d/n4/d{1...2}"]
TOML
"$t/granary" gateway --cluster "$d/cluster.toml" --address 127.0.0.1:$port --read-cache-mib 0 \
    >"$d/gw.out" 2>"$d/gw.log" &
gw=$!
trap 'kill $gw ${pids[*]} 2>/dev/null; wait 2>/dev/null; rm -rf "$d"' EXIT
for _ in $(seq 200); do curl -fs http://127.0.0.1:$port/granary/health/ready >/dev/null && break; sleep 0.1; done
L="$t/granary-load --endpoint http://127.0.0.1:$port"
A="$t/granary admin --endpoint http://127.0.0.1:$port"
mib=$((1 << 20))
echo "== all four nodes up"
$L --op put --size $mib --concurrency 16 --seconds "$secs" --objects 256 --prefix up | tail -1
$L --op get-raw --size $mib --concurrency 16 --seconds "$secs" --objects 256 --prefix up --no-prepare | tail -1
echo "== node 4 killed"
kill -9 "${pids[4]}"; wait "${pids[4]}" 2>/dev/null || true
$L --op put --size $mib --concurrency 16 --seconds "$secs" --objects 256 --prefix down | tail -1
$L --op get-raw --size $mib --concurrency 16 --seconds "$secs" --objects 256 --prefix up --no-prepare | tail -1
echo "== $heal_mib MiB written while node 4 is down, then healed"
$L --op put --size $mib --count "$heal_mib" --objects "$heal_mib" --prefix heal --concurrency 16 | tail -1
node 4
sleep 3
start=$(date +%s.%N)
$A heal | tr "\r" "\n" | tail -1
end=$(date +%s.%N)
$A status --json | python3 -c '
import json, sys
p = json.load(sys.stdin)["heal"]
secs = float(sys.argv[2]) - float(sys.argv[1])
mib = p["bytes"] / 2**20
print("heal pass: %d keys, %.0f MiB verified in %.1f s (%.0f MiB/s), %d shards rebuilt"
      % (p["scanned"], mib, secs, mib / secs, p["shardsRebuilt"]))
' "$start" "$end"
du -sh "$d"/n4
