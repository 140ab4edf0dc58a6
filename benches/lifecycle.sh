#!/usr/bin/env bash
# Lifecycle transitions: throughput (MiB/s) of moving checkpoints from the
# hot pool to the cold pool, and the p99 of foreground GETs before and
# during the pass. Release builds of `granary` and `granary-load` first:
#   cargo build --release && cargo build --release -p granary-benches --bins
# usage: benches/lifecycle.sh [WORKDIR]
# env:   CKPT_COUNT (default 192 objects of CKPT_MIB=16 MiB), MIBS (the
#        server's --lifecycle-mib-per-sec, default 256), GET_SIZE (65536)
set -euo pipefail
t="${CARGO_TARGET_DIR:-target}/release"
d="${1:-/var/tmp/granary-lifecycle-bench}"
port=9931
count="${CKPT_COUNT:-192}"
ckpt=$(( ${CKPT_MIB:-16} << 20 ))
get_size="${GET_SIZE:-65536}"
export AWS_ACCESS_KEY_ID=benchuser AWS_SECRET_ACCESS_KEY=benchsecret123 AWS_DEFAULT_REGION=us-east-1
export GRANARY_ROOT_USER=benchuser GRANARY_ROOT_PASSWORD=benchsecret123
rm -rf "$d"; mkdir -p "$d"
"$t/granary" server --hot "$d"/h{1,2,3,4} --cold "$d"/c{1,2,3,4} --address 127.0.0.1:$port \
    --read-cache-mib 0 --lifecycle-day-secs 1 --lifecycle-mib-per-sec "${MIBS:-256}" \
    >"$d/server.out" 2>"$d/server.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$d"' EXIT
for _ in $(seq 100); do curl -fs http://127.0.0.1:$port/granary/health/ready >/dev/null && break; sleep 0.1; done
L="$t/granary-load --endpoint http://127.0.0.1:$port"
$L --op put --size "$ckpt" --count "$count" --objects "$count" --prefix ckpt --concurrency 4 | tail -1
$L --op put --size "$get_size" --count 512 --objects 512 --prefix g --concurrency 16 | tail -1
sync
get() { $L --op get-raw --size "$get_size" --objects 512 --prefix g --concurrency 16 --seconds "$1" --no-prepare | tail -1; }
echo "GET, no lifecycle pass:"; get 10
cat > "$d/rules.json" <<'JSON'
{"Rules": [{"ID": "ckpt-cold", "Filter": {"Prefix": "ckpt-"}, "Status": "Enabled",
            "Transitions": [{"Days": 0, "StorageClass": "COLD"}]}]}
JSON
status() {
    "$t/granary" admin --endpoint http://127.0.0.1:$port lifecycle status --json |
        python3 -c 'import json,sys; r=json.load(sys.stdin)["buckets"].get("load",{}).get("rules",{}).get("ckpt-cold",{}); print(r.get("transitionedObjects",0), r.get("transitionedBytes",0))'
}
# Day 0 is due at the next day boundary (at most 1 s away).
aws --endpoint-url http://127.0.0.1:$port s3api put-bucket-lifecycle-configuration \
    --bucket load --lifecycle-configuration "file://$d/rules.json" >/dev/null
start=$(date +%s.%N)
echo "GET, during the pass:"; get 8
while :; do
    read -r objects bytes < <(status)
    [ "$objects" -ge "$count" ] && break
    sleep 0.2
done
end=$(date +%s.%N)
python3 -c "b=$bytes; s=$end-$start; print(f'transitioned {b/2**20:.0f} MiB in {s:.1f} s: {b/2**20/s:.0f} MiB/s (includes up to 1 s until due)')"
echo "GET, after the pass:"; get 10
