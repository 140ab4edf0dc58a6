#!/usr/bin/env bash
# Model pulls with the clients inference servers use, against Granary, the
# null server (the client's own ceiling) and Garage 2.5, in one run:
#
#   benches/model-pull.sh                                  # the release build
#   benches/model-pull.sh base=/var/tmp/granary-main new=target/release/granary
#   BENCH_ONLY="limits clients" CLIENTS="streamer" benches/model-pull.sh
#
# Every NAME=BINARY given is run in turn inside each section, so several
# builds are alternated in one run; the clients section runs ROUNDS times
# (default 3) and the table shows medians. Sections (BENCH_ONLY):
#   limits   fio O_DIRECT sequential read of the data disk (LIMITS.md)
#   clients  each client of CLIENTS (streamer streamer64 s3torch boto3 awscli)
#            pulls the model from the null server, from each build with the
#            model in its cache (warm), and after a restart with an empty
#            cache and the page cache dropped (cold)
#   garage   the streamer at its defaults against Garage 2.5 (cold and warm;
#            GARAGE=path/to/garage, or skipped)
#   ranks    8 streamer processes pull the model at once (cold)
#   storm    800 concurrent ranged GETs of 1-16 MiB at random offsets of the
#            model (cold), with a cache that holds it and with a 1 GiB one
#   bigger   4 x 512 MiB pulled with 16 MiB ranges through a 1 GiB cache (cold)
# The model (1.5 GiB of random fp16 tensors, safetensors) is generated here;
# the clients write nothing to disk. Granary runs on 4 directories of one
# disk (2+2) with a cache that holds the model (--read-cache-mib 2048),
# except in `bigger`. Bytes read from the disk are the server process's
# (/proc/PID/io read_bytes), its peak RSS is VmHWM; the page cache is
# dropped before every cold pull. Needs root (to drop the page cache),
# fio, and a release build; the clients' virtualenv (about 5.6 GB, PyTorch's
# CUDA wheels) is made once by benches/model-pull/venv.sh. Results: one JSON
# line per measurement in $BENCH_DIR/results.jsonl, and the table at the end.
# Each build's server directories (about 7 GB) are removed at the end
# unless KEEP_DATA=1.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$here/target}
dir=${BENCH_DIR:-/var/tmp/granary-model-bench}
only=${BENCH_ONLY:-limits clients garage ranks storm bigger}
clients=${CLIENTS:-streamer streamer64 s3torch boto3 awscli}
cache_mib=${CACHE_MIB:-2048}
rounds=${ROUNDS:-3}
port=9400
null_port=9401
garage_port=9402
bucket=bench
key=model/model.safetensors
export AWS_ACCESS_KEY_ID=benchuser AWS_SECRET_ACCESS_KEY=benchsecret123
export GRANARY_ROOT_USER=$AWS_ACCESS_KEY_ID GRANARY_ROOT_PASSWORD=$AWS_SECRET_ACCESS_KEY
export AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
export RUNAI_STREAMER_S3_USE_VIRTUAL_ADDRESSING=0 RUNAI_STREAMER_LOG_LEVEL=WARNING

command -v fio > /dev/null || apt-get install -y fio > /dev/null

builds=("$@")
if [ ${#builds[@]} -eq 0 ]; then
    (cd "$here" && cargo build --release --quiet -p granary --bin granary)
    builds=("granary=$target/release/granary")
fi
(cd "$here" && cargo build --release --quiet -p granary-benches --bin granary-load --bin granary-null)
load=$target/release/granary-load
null=$target/release/granary-null
venv=$("$here/benches/model-pull/venv.sh")
py="$venv/bin/python $here/benches/model-pull/clients.py"
mkdir -p "$dir"
results=$dir/results.jsonl
: > "$results"
pid=

want() { [[ " $only " == *" $1 "* ]]; }
# Drops the page cache, then reads the clients' own code back into it, so a
# cold pull times the server's cold reads, not the client's imports.
drop_caches() {
    sync
    echo 3 > /proc/sys/vm/drop_caches
    "$venv/bin/python" -c "import torch, runai_model_streamer, s3torchconnector, boto3, awscli.clidriver"
}
stop() {
    if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    pid=
}
# The servers' directories (the model and 2 GiB more per build, twice over
# at 2+2) go at the end unless KEEP_DATA=1; the model and results stay.
cleanup() {
    stop
    [ "${KEEP_DATA:-0}" = 1 ] && return
    for b in "${builds[@]}"; do rm -rf "${dir:?}/${b%%=*}"; done
    rm -rf "${dir:?}/garage"
}
trap 'cleanup' EXIT
# wait_http URL: waits for the server just started (pid) to answer there.
wait_http() {
    for _ in $(seq 300); do
        kill -0 "$pid" 2> /dev/null || { echo "the server for $1 exited"; exit 1; }
        curl -s -o /dev/null "$1" && return
        sleep 0.1
    done
    echo "no answer from $1"; exit 1
}
# A server left on one of the ports would answer in place of the one started.
for p in $port $null_port $garage_port; do
    if curl -s -o /dev/null "http://127.0.0.1:$p/"; then
        echo "port $p is in use: stop what listens there first"; exit 1
    fi
done
# Bytes the server process caused to be read from the block device (its
# O_DIRECT reads included; the clients' own reads, such as PyTorch's
# libraries after the page cache is dropped, are not counted).
read_bytes() { awk '/^read_bytes/ {print $2}' "/proc/$pid/io"; }
rss_mib() { awk '/VmHWM/ {print int($2/1024)}' "/proc/$pid/status"; }

# start_granary NAME BINARY [server flags...]: a server on NAME's own directories.
start_granary() {
    local name=$1 bin=$2
    shift 2
    stop
    mkdir -p "$dir/$name"
    "$bin" server "$dir/$name"/d1 "$dir/$name"/d2 "$dir/$name"/d3 "$dir/$name"/d4 \
        --address 127.0.0.1:$port "$@" > "$dir/$name.log" 2>&1 &
    pid=$!
    wait_http "http://127.0.0.1:$port/granary/health/ready"
}
start_null() {
    stop
    "$null" --address 127.0.0.1:$null_port --dir "$dir/model-dir" > /dev/null &
    pid=$!
    wait_http "http://127.0.0.1:$null_port/"
}
aws_cli() { "$venv/bin/aws" --endpoint-url "$1" "${@:2}"; }

# pull CLIENT ENDPOINT: one pull, its JSON line on stdout.
pull() {
    local client=$1 ep=$2 url=s3://$bucket/$key
    case $client in
        streamer) AWS_ENDPOINT_URL=$ep $py streamer "$url" ;;
        streamer64) AWS_ENDPOINT_URL=$ep RUNAI_STREAMER_CONCURRENCY=64 $py streamer "$url" ;;
        s3torch) AWS_ENDPOINT_URL=$ep $py s3torch "$url" ;;
        boto3) AWS_ENDPOINT_URL=$ep $py boto3 "$url" ;;
        awscli)
            local t0 t1
            t0=$(date +%s.%N)
            aws_cli "$ep" s3 cp --no-progress "$url" - > /dev/null
            t1=$(date +%s.%N)
            python3 -c "import json,sys; b=$model_bytes; s=$t1-$t0; print(json.dumps({'client':'awscli','bytes':b,'seconds':round(s,3),'mbps':round(b/s/1e6,1),'first_tensor_s':None}))"
            ;;
    esac
}

# record FIELD=VALUE...: the JSON line on stdin with these fields added,
# appended to the results and shown.
record() { $py record "$results" "$@"; }

# measure PHASE CLIENT SERVER ENDPOINT [cold]: one pull, recorded with the
# bytes the disk read during it and the server's peak RSS.
measure() {
    local phase=$1 client=$2 server=$3 ep=$4 before out
    before=$(read_bytes)
    if ! out=$(pull "$client" "$ep" 2> "$dir/client.err") || [ -z "$out" ]; then
        echo "$phase $client $server: FAILED: $(tail -3 "$dir/client.err")"
        return
    fi
    echo "$out" | record phase="$phase" client="$client" server="$server" \
        disk_bytes=$(( $(read_bytes) - before )) model_bytes="$model_bytes" rss_mib="$(rss_mib)"
}

# The model, once per machine.
if [ ! -f "$dir/model-dir/model/model.safetensors" ]; then
    $py generate "$dir/model-dir/model" 1536
fi
model_bytes=$(stat -c %s "$dir/model-dir/model/model.safetensors")

# Each build's directories, with the model uploaded by the aws CLI
# (default multipart: 8 MiB parts).
for b in "${builds[@]}"; do
    name=${b%%=*}
    rm -rf "${dir:?}/$name"
    start_granary "$name" "${b#*=}"
    aws_cli http://127.0.0.1:$port s3 mb "s3://$bucket" > /dev/null
    aws_cli http://127.0.0.1:$port s3 cp --no-progress "$dir/model-dir/model/model.safetensors" "s3://$bucket/$key" > /dev/null
    "$load" --endpoint http://127.0.0.1:$port --bucket $bucket --op multipart --prefix big \
        --size $((512 << 20)) --part-size $((64 << 20)) --concurrency 4 --count 4 --objects 4 > /dev/null
    stop
done

if want limits; then
    f=$dir/fio.tmp
    fio_mbps=$(fio --name=read --rw=read --bs=1M --direct=1 --ioengine=io_uring --iodepth=16 --size=4G \
        --runtime=10 --time_based --filename="$f" --output-format=terse | awk -F';' '{ print int($7 * 1.024 / 1000) }')
    rm -f "$f"
    echo "{\"mbps\": $fio_mbps}" | record phase=limits client=fio server=disk
fi

if want clients; then
    for round in $(seq "$rounds"); do
        for c in $clients; do
            start_null
            pull "$c" http://127.0.0.1:$null_port > /dev/null
            measure warm "$c" null http://127.0.0.1:$null_port
            for b in "${builds[@]}"; do
                name=${b%%=*}
                start_granary "$name" "${b#*=}" --read-cache-mib "$cache_mib"
                drop_caches
                measure cold "$c" "$name" http://127.0.0.1:$port
                measure warm "$c" "$name" http://127.0.0.1:$port
            done
            stop
        done
    done
fi

if want garage; then
    if [ -x "${GARAGE:-}" ]; then
        "$here/benches/model-pull/garage.sh" start "$GARAGE" "$dir/garage" $garage_port
        eval "$("$here/benches/model-pull/garage.sh" env "$GARAGE" "$dir/garage")"
        aws_cli http://127.0.0.1:$garage_port s3 cp --no-progress "$dir/model-dir/model/model.safetensors" "s3://$bucket/$key" > /dev/null
        pid=$(cat "$dir/garage/pid")
        drop_caches
        measure cold streamer garage http://127.0.0.1:$garage_port
        measure warm streamer garage http://127.0.0.1:$garage_port
        "$here/benches/model-pull/garage.sh" stop "$GARAGE" "$dir/garage"
        pid=
        export AWS_ACCESS_KEY_ID=benchuser AWS_SECRET_ACCESS_KEY=benchsecret123
    else
        echo "garage: skipped (set GARAGE to a garage 2.5 binary)"
    fi
fi

if want ranks; then
    for b in "${builds[@]}"; do
        name=${b%%=*}
        start_granary "$name" "${b#*=}" --read-cache-mib "$cache_mib"
        drop_caches
        before=$(read_bytes)
        start=$(( $(date +%s) + 20 ))
        for r in $(seq 8); do
            AWS_ENDPOINT_URL=http://127.0.0.1:$port $py streamer "s3://$bucket/$key" "$start" > "$dir/rank-$r.json" &
        done
        wait $(jobs -p | grep -v "^$pid$")
        out=$(cat "$dir"/rank-*.json | $py ranks "$start")
        echo "$out" | record phase=ranks client=streamer-x8 server="$name" \
            disk_bytes=$(( $(read_bytes) - before )) model_bytes="$model_bytes" rss_mib="$(rss_mib)"
    done
    stop
fi

if want storm; then
    # With a cache that holds the model, and with the default 1 GiB that
    # does not (there only the memory bound is asked for).
    for cache in "$cache_mib" 1024; do
        for b in "${builds[@]}"; do
            name=${b%%=*}
            start_granary "$name" "${b#*=}" --read-cache-mib "$cache"
            drop_caches
            before=$(read_bytes)
            out=$("$load" --endpoint http://127.0.0.1:$port --bucket $bucket --key "$key" --op storm \
                --count 800 --concurrency 800 --range-min $((1 << 20)) --range-size $((16 << 20)) | tail -1)
            echo "$out" | record phase="storm-cache-$cache" client=load-800 server="$name" \
                disk_bytes=$(( $(read_bytes) - before )) model_bytes="$model_bytes" rss_mib="$(rss_mib)"
        done
    done
    stop
fi

if want bigger; then
    for b in "${builds[@]}"; do
        name=${b%%=*}
        start_granary "$name" "${b#*=}" --read-cache-mib 1024
        drop_caches
        before=$(read_bytes)
        out=$("$load" --endpoint http://127.0.0.1:$port --bucket $bucket --prefix big --op pull \
            --size $((512 << 20)) --objects 4 --range-size $((16 << 20)) --concurrency 16 --no-prepare | tail -1)
        echo "$out" | record phase=bigger client=load-pull server="$name" \
            disk_bytes=$(( $(read_bytes) - before )) model_bytes=$((2048 << 20)) rss_mib="$(rss_mib)"
    done
    stop
fi

$py summary "$results"
