#!/usr/bin/env bash
# 4 KiB PUTs overwriting 5,000 keys for 10 s with 64 clients on a fresh
# 4-dir (2+2, fsync) server, with the server's CPU ticks (1/100 s).
#
#   benches/put-small.sh BIN [OP]     # OP: put (AWS SDK) or put-raw (light client)
set -uo pipefail
. "$(dirname "$0")/bench-env.sh"
bin=$1 op=${2:-put-raw}
dir=${BENCH_DIR:-/var/tmp/granary-put-bench}
rm -rf "$dir"; mkdir -p "$dir"
"$bin" server "$dir"/d1 "$dir"/d2 "$dir"/d3 "$dir"/d4 --address 127.0.0.1:9410 \
    --read-cache-mib 0 > "$dir.log" 2>&1 &
pid=$!
until curl -s -o /dev/null http://127.0.0.1:9410/; do sleep 0.1; done
a=$(awk '{print $14+$15}' "/proc/$pid/stat")
r=$("$load" --endpoint http://127.0.0.1:9410 --op "$op" --size 4096 --concurrency 64 \
    --seconds 10 --objects 5000 | awk 'NR==1')
b=$(awk '{print $14+$15}' "/proc/$pid/stat")
echo "$(basename "$bin") $op: $(echo "$r" | grep -oE '[0-9.]+ ops/s|[0-9.]+ p99_ms|[0-9]+ errors' | paste -sd' ') server ticks $((b - a))"
kill "$pid"; wait "$pid"
