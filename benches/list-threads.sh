#!/usr/bin/env bash
# One full listing of a million-key store (filled by `list-million.sh
# fill`), after a warm-up listing, with the client's CPU (`/usr/bin/time`)
# and the server's CPU ticks (1/100 s) summed over all its threads from
# `/proc/<pid>/task/*/stat` (the process total misses threads that ended
# during the listing).
#
#   benches/list-threads.sh BIN DIR [PORT]
#
# LIST_ARGS adds load generator arguments (e.g. LIST_ARGS="--delimiter /").
set -euo pipefail
. "$(dirname "$0")/bench-env.sh"
bin=$1 dir=$2 port=${3:-9405}
"$bin" server "$dir"/d1 "$dir"/d2 "$dir"/d3 "$dir"/d4 --address "127.0.0.1:$port" \
    --read-cache-mib 0 >> "$dir.log" 2>&1 &
pid=$!
until curl -s -o /dev/null "http://127.0.0.1:$port/"; do sleep 0.1; done
args=(--endpoint "http://127.0.0.1:$port" --op list-raw --size 1 --objects 1000000
    --prefix l --concurrency 1 --count 1 --seconds 600 --no-prepare)
# shellcheck disable=SC2206
args+=(${LIST_ARGS:-})
ticks() {
    for t in /proc/"$pid"/task/*; do
        echo "$(basename "$t") $(awk '{print $14+$15}' "$t/stat")"
    done | sort
}
"$load" "${args[@]}" > /dev/null
before=$(mktemp) after=$(mktemp)
ticks > "$before"
/usr/bin/time -f 'client %U s user %S s sys %e s wall' "$load" "${args[@]}" 2>&1 |
    grep -o '[0-9.]* items/s\|client.*'
ticks > "$after"
join "$before" "$after" | awk '{t += $3 - $2} END {print "server ticks", t}'
rm -f "$before" "$after"
kill "$pid"; wait "$pid" || true
