#!/usr/bin/env bash
# Two granary binaries side by side on the paths a refactoring must not
# slow: 4 KiB PUT and GET (64 clients) and LIST (one client paging through
# OBJECTS keys), on fresh servers started alternately, ROUNDS times, so
# both see the same machine noise. Prints one line per binary, round and
# operation.
#
#   benches/ab.sh OLD_BINARY NEW_BINARY
#   ROUNDS=3 OBJECTS=20000 SECONDS_PER_RUN=10 benches/ab.sh old new
#
# Each server runs over 4 directories (2+2, fsync) with the hot-object
# cache off, so GETs read the disks. GET and LIST use the load generator's
# light signed client (`get-raw`, `list-raw`), whose own CPU does not cap
# the rate on a machine it shares with the server.
set -euo pipefail

old=${1:?old binary}
new=${2:?new binary}
rounds=${ROUNDS:-3}
objects=${OBJECTS:-20000}
seconds=${SECONDS_PER_RUN:-10}
dir=${BENCH_DIR:-/var/tmp/granary-ab-bench}
port=9211
source "$(dirname "$0")/bench-env.sh"
trap stop_server EXIT

[ -x "$load" ] || (cd "$here" && cargo build --release --quiet -p granary-benches --bin granary-load)

run() {
    "$load" --endpoint "http://127.0.0.1:$port" --seconds "$seconds" "$@" | tail -2 | head -1
}

for round in $(seq "$rounds"); do
    for which in old new; do
        bin=$old
        [ "$which" = new ] && bin=$new
        start_server "$bin" "$port" --read-cache-mib 0
        echo "round $round $which put 4 KiB: $(run --op put --size 4096 --objects 5000 --concurrency 64)"
        echo "round $round $which get 4 KiB: $(run --op get-raw --size 4096 --objects 5000 --concurrency 64)"
        echo "round $round $which list $objects keys: $(run --op list-raw --size 1 --objects "$objects" --prefix l --concurrency 1)"
    done
done
