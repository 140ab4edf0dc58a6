#!/usr/bin/env bash
# LIST at a million keys: fill a fresh 4-dir (2+2) server with N one-byte
# keys, or list them all with one client and report keys/s and the server's
# CPU ticks (1/100 s) per full listing. Comparing two builds: fill with one,
# copy the directories (`cp -a`), and list each copy with its build in turn.
#
#   benches/list-million.sh fill BIN DIR [N] [PORT]
#   benches/list-million.sh list BIN DIR [PORT] [OP] [ROUNDS]
#
# OP is `list-raw` (requests signed by the load generator, responses only
# scanned for the key count and token) or `list` (the AWS SDK). The server
# runs with the hot-object cache off; a warm-up listing precedes the rounds.
set -euo pipefail
. "$(dirname "$0")/bench-env.sh"

mode=$1 bin=$2 dir=$3
start_server() {
    "$bin" server "$dir"/d1 "$dir"/d2 "$dir"/d3 "$dir"/d4 --address "127.0.0.1:$1" \
        --read-cache-mib 0 >> "$dir.log" 2>&1 &
    pid=$!
    until curl -s -o /dev/null "http://127.0.0.1:$1/"; do sleep 0.1; done
}
case $mode in
fill)
    n=${4:-1000000} port=${5:-9401}
    rm -rf "$dir"; mkdir -p "$dir"
    start_server "$port"
    "$load" --endpoint "http://127.0.0.1:$port" --op put-raw --size 1 --concurrency 64 \
        --count "$n" --objects "$n" --prefix l | awk 'NR==1'
    ;;
list)
    port=${4:-9402} op=${5:-list-raw} rounds=${6:-2}
    t0=$(date +%s.%N)
    start_server "$port"
    echo "started in $(echo "$(date +%s.%N) - $t0" | bc) s"
    ticks() { awk '{print $14+$15}' "/proc/$pid/stat"; }
    list() {
        "$load" --endpoint "http://127.0.0.1:$port" --op "$op" --size 1 --objects 1000000 \
            --prefix l --concurrency 1 --count 1 --seconds 600 --no-prepare | awk 'NR==1'
    }
    list > /dev/null
    for _ in $(seq "$rounds"); do
        a=$(ticks)
        r=$(list)
        b=$(ticks)
        echo "$(basename "$bin") $op: $(echo "$r" | grep -o '[0-9.]* items/s') server ticks $((b - a))"
    done
    ;;
*) echo "usage: $0 fill|list BIN DIR ..." >&2; exit 2 ;;
esac
kill "$pid"; wait "$pid" || true
