#!/usr/bin/env bash
# Large-object data path benchmarks: the machine's limits and Granary's
# figures in one run, so every figure can be read as a ratio to its limit.
#
#   benches/data-path.sh            # everything (~10 minutes, ~40 GB of disk)
#   BENCH_ONLY="limits get" benches/data-path.sh
#
# Sections: limits null put get pull shared burst. Needs fio and iperf3, root
# (to drop the page cache) and a release build (made here). Prints one line
# per measurement; the load generator's JSON lines are kept in $BENCH_DIR/*.json.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$here/target}
dir=${BENCH_DIR:-/var/tmp/granary-bench}
only=${BENCH_ONLY:-limits null put get pull shared burst}
port=9200
null_port=9300
export AWS_ACCESS_KEY_ID=benchuser AWS_SECRET_ACCESS_KEY=benchsecret123
export GRANARY_ROOT_USER=$AWS_ACCESS_KEY_ID GRANARY_ROOT_PASSWORD=$AWS_SECRET_ACCESS_KEY

(cd "$here" && cargo build --release --quiet -p granary --bin granary && \
    cargo build --release --quiet -p granary-benches --bins)
granary=$target/release/granary
load=$target/release/granary-load
null=$target/release/granary-null
mkdir -p "$dir"
server_pid=

want() { [[ " $only " == *" $1 "* ]]; }
drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches; }
stop_server() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    server_pid=
}
trap 'stop_server; pkill -f "granary-null --address 127.0.0.1:$null_port" || true; rm -rf "$dir"/d1 "$dir"/d2 "$dir"/d3 "$dir"/d4' EXIT

# start_server [fresh] [granary server options...]
start_server() {
    stop_server
    if [ "${1:-}" = fresh ]; then rm -rf "$dir"/d1 "$dir"/d2 "$dir"/d3 "$dir"/d4; fi
    shift || true
    "$granary" server "$dir"/d1 "$dir"/d2 "$dir"/d3 "$dir"/d4 --address 127.0.0.1:$port "$@" \
        > "$dir/server.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 100); do
        curl -fs "http://127.0.0.1:$port/granary/health/ready" > /dev/null && return
        sleep 0.1
    done
    echo "server did not start:"; cat "$dir/server.log"; exit 1
}

# run NAME load-generator-args...: prints the summary, keeps the JSON line.
run() {
    local name=$1; shift
    "$load" --endpoint "http://127.0.0.1:${PORT:-$port}" "$@" > "$dir/$name.out"
    tail -1 "$dir/$name.out" > "$dir/$name.json"
    echo "$name: $(head -n -1 "$dir/$name.out" | tail -1)"
}

rss_mib() { awk '/VmHWM/ {print int($2/1024)}' "/proc/$server_pid/status"; }
sectors_read() { awk -v d="$(basename "$(df --output=source "$dir" | tail -1)")" '$3 == d {print $6}' /proc/diskstats; }

if want limits; then
    f=$dir/fio.tmp
    for rw in write read; do
        echo "fio $rw O_DIRECT 1 MiB QD16: $(fio --name=$rw --rw=$rw --bs=1M --direct=1 --ioengine=io_uring \
            --iodepth=16 --size=4G --runtime=10 --time_based --filename="$f" --output-format=terse \
            | awk -F';' -v rw=$rw '{ print int((rw == "read" ? $7 : $48) * 1.024 / 1000) " MB/s" }')"
    done
    echo "fio read O_DIRECT 1 MiB QD16, 4 files at once: $(fio --name=r4 --rw=read --bs=1M --direct=1 --ioengine=io_uring \
        --iodepth=16 --size=1G --numjobs=4 --group_reporting --runtime=10 --time_based --directory="$dir" \
        --output-format=terse | awk -F';' '{ print int($7 * 1.024 / 1000) " MB/s" }')"
    rm -f "$dir"/r4.*
    drop_caches
    echo "fio read buffered 1 MiB (cold): $(fio --name=br --rw=read --bs=1M --ioengine=psync --size=4G \
        --filename="$f" --output-format=terse | awk -F';' '{ print int($7 * 1.024 / 1000) " MB/s" }')"
    rm -f "$f"
    iperf3 -s -D -1 -p 5299 > /dev/null; sleep 0.5
    echo "iperf3 loopback 1 stream: $(iperf3 -c 127.0.0.1 -p 5299 -t 5 -J | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/8e6), "MB/s")')"
    iperf3 -s -D -1 -p 5299 > /dev/null; sleep 0.5
    echo "iperf3 loopback 4 streams: $(iperf3 -c 127.0.0.1 -p 5299 -t 5 -P 4 -J | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/8e6), "MB/s")')"
fi

if want null; then
    "$null" --address 127.0.0.1:$null_port --size $((64 << 20)) > /dev/null &
    sleep 0.5
    PORT=$null_port run null-get-64m --op get --size $((64 << 20)) --concurrency 4 --seconds 10 --objects 4
    PORT=$null_port run null-put-64m --op put --size $((64 << 20)) --concurrency 4 --seconds 10 --objects 4
    pkill -f "granary-null --address 127.0.0.1:$null_port" || true
    "$null" --address 127.0.0.1:$null_port --size $((1 << 30)) > /dev/null &
    sleep 0.5
    PORT=$null_port run null-pull-4x1g --op pull --size $((1 << 30)) --objects 4 --range-size $((16 << 20)) --concurrency 16
    pkill -f "granary-null --address 127.0.0.1:$null_port" || true
fi

if want put; then
    start_server fresh
    run put-64m --op put --size $((64 << 20)) --concurrency 4 --seconds 15 --objects 16
    run put-64m-unsigned --op put --size $((64 << 20)) --concurrency 4 --seconds 15 --objects 16 --unsigned-payload
    "$null" --address 127.0.0.1:$null_port --size $((64 << 20)) > /dev/null &
    sleep 0.5
    PORT=$null_port run null-put-64m-unsigned --op put --size $((64 << 20)) --concurrency 4 --seconds 10 --objects 4 --unsigned-payload
    pkill -f "granary-null --address 127.0.0.1:$null_port" || true
fi

if want get; then
    start_server fresh
    run get-64m-prepare --op put --size $((64 << 20)) --concurrency 4 --count 32 --objects 32
    run get-64m-warmup --op get --size $((64 << 20)) --concurrency 4 --seconds 3 --objects 4
    run get-64m-cached --op get --size $((64 << 20)) --concurrency 4 --seconds 10 --objects 4
    start_server keep --read-cache-mib 0
    drop_caches
    run get-64m-cold --op get --size $((64 << 20)) --concurrency 4 --seconds 10 --objects 32
fi

if want pull; then
    start_server fresh --read-cache-mib 5120
    run pull-prepare --op multipart --size $((1 << 30)) --part-size $((64 << 20)) --concurrency 4 --count 4 --objects 4
    drop_caches
    start_server keep --read-cache-mib 0
    run pull-4x1g-cold --op pull --size $((1 << 30)) --objects 4 --range-size $((16 << 20)) --concurrency 16
    start_server keep --read-cache-mib 5120
    run pull-4x1g-warmup --op pull --size $((1 << 30)) --objects 4 --range-size $((16 << 20)) --concurrency 16
    run pull-4x1g-cached --op pull --size $((1 << 30)) --objects 4 --range-size $((16 << 20)) --concurrency 16
fi

if want shared; then
    start_server fresh
    run shared-prepare --op multipart --prefix shared --size $((1 << 30)) --part-size $((64 << 20)) --concurrency 1 --count 1 --objects 1
    start_server keep
    drop_caches
    before=$(sectors_read)
    run shared-1-puller-cold --op pull --prefix shared --size $((1 << 30)) --objects 1 --range-size $((16 << 20)) --concurrency 4
    echo "  disk read: $(( ($(sectors_read) - before) * 512 >> 20 )) MiB"
    start_server keep
    drop_caches
    before=$(sectors_read)
    run shared-16-pullers-cold --op pull --prefix shared --size $((1 << 30)) --objects 1 --range-size $((16 << 20)) --concurrency 4 --pullers 16
    echo "  disk read: $(( ($(sectors_read) - before) * 512 >> 20 )) MiB"
    "$granary" admin --endpoint "http://127.0.0.1:$port" stats
fi

if want burst; then
    start_server fresh
    # The burst alone: wall time, fairness, memory.
    start=$(date +%s.%N)
    run burst-16x1g --op put --size $((1 << 30)) --concurrency 16 --count 16 --objects 16
    echo "  burst wall time: $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s, server peak RSS $(rss_mib) MiB"
    # Again, with one client reading 1 MiB objects through it: the latency a
    # small request sees (its GETs take CPU, so this burst runs longer).
    start_server fresh
    run ttfb-prepare --op put --prefix ttfb --size $((1 << 20)) --concurrency 4 --count 64 --objects 64
    run ttfb-1m-quiet --op get --prefix ttfb --size $((1 << 20)) --concurrency 1 --seconds 5 --objects 64
    run burst-16x1g-with-reader --op put --size $((1 << 30)) --concurrency 16 --count 16 --objects 16 &
    burst=$!
    sleep 2
    run ttfb-1m-during-burst --op get --prefix ttfb --size $((1 << 20)) --concurrency 1 --seconds 15 --objects 64
    wait $burst
    echo "  server peak RSS $(rss_mib) MiB"
fi
