#!/usr/bin/env bash
# Small-object benchmarks: PUT then GET of 4 KiB and 64 KiB objects with 64
# clients, packed (the default) against packing disabled, with the files
# created and the space used after the PUTs. GETs run twice: through the
# SDK, and with the load generator's light signed client (`get-raw`), whose
# own CPU cost does not cap the rate on a machine it shares with the server.
#
#   benches/small-objects.sh                    # both sizes, both modes
#   SIZES=4096 OBJECTS=20000 benches/small-objects.sh
#
# Each run starts a fresh server over 4 directories (2+2, fsync) with the
# hot-object cache off, so GETs read the disks' metadata stores.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$here/target}
dir=${BENCH_DIR:-/var/tmp/granary-small-bench}
sizes=${SIZES:-4096 65536}
objects=${OBJECTS:-5000}
seconds=${SECONDS_PER_RUN:-10}
port=9210
source "$here/benches/bench-env.sh"

(cd "$here" && cargo build --release --quiet -p granary --bin granary && \
    cargo build --release --quiet -p granary-benches --bin granary-load)
trap stop_server EXIT

load() {
    "$load" --endpoint "http://127.0.0.1:$port" --concurrency 64 \
        --seconds "$seconds" --objects "$objects" "$@" | tail -2 | head -1
}

for size in $sizes; do
    for pack in 128 0; do
        start_server "$target/release/granary" "$port" --read-cache-mib 0 --pack-threshold-kib "$pack"
        echo "== $size B, --pack-threshold-kib $pack"
        echo "put: $(load --op put --size "$size")"
        echo "files: $(find "$dir"/d1 "$dir"/d2 "$dir"/d3 "$dir"/d4 -type f | wc -l), space: $(du -sm "$dir"/d1 "$dir"/d2 "$dir"/d3 "$dir"/d4 | awk '{s += $1} END {print s}') MiB"
        echo "get: $(load --op get --size "$size")"
        echo "get, light client: $(load --op get-raw --size "$size")"
    done
done
