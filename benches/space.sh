#!/usr/bin/env bash
# Space used by small objects: OBJECTS (default 262,144 = 1 GiB) objects of
# 4 KiB written to 6 directories at 4+2, measured after a clean stop (so the
# pieces are in pack files, not only in the write-ahead log); then every
# other object deleted with DeleteObjects (1,000 keys per request), the
# garbage collected (`granary admin gc`) and the space measured again.
#
#   benches/space.sh                      # packed (the default)
#   PACK_KIB=0 OBJECTS=26214 benches/space.sh   # packing disabled, 100 MiB
#
# Prints bytes on disk (du, allocated blocks) beside the raw bytes, the
# erasure-coded size (raw × 6/4) and the targets: ≤ 1.25 × raw × 6/4 after
# writing, ≤ 1.3 × the live erasure-coded size after deleting half.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$here/target}
dir=${BENCH_DIR:-/var/tmp/granary-space-bench}
objects=${OBJECTS:-262144}
pack=${PACK_KIB:-128}
size=4096
port=9211
export AWS_ACCESS_KEY_ID=benchuser AWS_SECRET_ACCESS_KEY=benchsecret123
export GRANARY_ROOT_USER=$AWS_ACCESS_KEY_ID GRANARY_ROOT_PASSWORD=$AWS_SECRET_ACCESS_KEY

(cd "$here" && cargo build --release --quiet -p granary --bin granary && \
    cargo build --release --quiet -p granary-benches --bin granary-load)
rm -rf "$dir"
mkdir -p "$dir"
server_pid=
start() {
    "$target/release/granary" server "$dir"/d{1..6} --parity 2 --address "127.0.0.1:$port" \
        --read-cache-mib 0 --pack-threshold-kib "$pack" >>"$dir/server.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 200); do
        curl -fs "http://127.0.0.1:$port/granary/health/ready" >/dev/null && return
        sleep 0.1
    done
    echo "server did not start" >&2
    exit 1
}
stop() {
    kill "$server_pid"
    wait "$server_pid" || true
}
trap 'kill $server_pid 2>/dev/null || true' EXIT
used() { du -s --block-size=1 "$dir"/d{1..6} | awk '{s += $1} END {print s}'; }
load() {
    "$target/release/granary-load" --endpoint "http://127.0.0.1:$port" --concurrency 64 \
        --size "$size" --objects "$objects" "$@" | tail -2 | head -1
}

start
stop
empty=$(used)
start
echo "put:    $(load --op put --count "$objects" --prefix s)"
stop
written=$(($(used) - empty))
start
requests=$(((objects / 2 + 999) / 1000))
echo "delete: $(load --op delete --delete-every 2 --count "$requests" --prefix s --no-prepare)"
"$target/release/granary" admin --endpoint "http://127.0.0.1:$port" gc
stop
after=$(($(used) - empty))
raw=$((objects * size))
awk -v raw="$raw" -v w="$written" -v a="$after" -v pack="$pack" 'BEGIN {
    ec = raw * 6 / 4
    printf "pack threshold %d KiB, %d objects of 4 KiB = %.1f MiB raw, %.1f MiB erasure-coded (4+2)\n", pack, raw / 4096, raw / 1048576, ec / 1048576
    printf "after writing:      %8.1f MiB = %.3f x raw = %.3f x erasure-coded (target <= 1.25)\n", w / 1048576, w / raw, w / ec
    printf "after deleting half: %7.1f MiB = %.3f x the live erasure-coded size (target <= 1.3)\n", a / 1048576, a / (ec / 2)
}'
