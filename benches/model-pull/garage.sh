#!/usr/bin/env bash
# A single-node Garage 2.5 beside the model-pull benchmark, with its
# defaults (it does not fsync data), a key and the bucket `bench`.
#
#   garage.sh start GARAGE_BINARY DIR S3_PORT   # fresh, in DIR
#   eval "$(garage.sh env GARAGE_BINARY DIR)"   # AWS_ACCESS_KEY_ID/SECRET for it
#   garage.sh stop GARAGE_BINARY DIR
#
# Build it with `cargo install --locked garage --version 2.5.0 --root DIR`
# (about 20 minutes of 2 cores).
set -euo pipefail
cmd=$1 garage=$2 dir=$3
conf=$dir/garage.toml
g() { "$garage" -c "$conf" "$@"; }

case $cmd in
start)
    port=$4
    rm -rf "$dir"
    mkdir -p "$dir"
    cat > "$conf" <<TOML
metadata_dir = "$dir/meta"
data_dir = "$dir/data"
db_engine = "lmdb"
replication_factor = 1
rpc_bind_addr = "127.0.0.1:$((port + 1))"
rpc_public_addr = "127.0.0.1:$((port + 1))"
rpc_secret = "$(openssl rand -hex 32)"

[s3_api]
s3_region = "us-east-1"
api_bind_addr = "127.0.0.1:$port"
root_domain = ".s3.garage.localhost"
TOML
    "$garage" -c "$conf" server > "$dir/garage.log" 2>&1 &
    echo $! > "$dir/pid"
    for _ in $(seq 100); do
        g status > /dev/null 2>&1 && break
        sleep 0.2
    done
    node=$(g status 2>/dev/null | awk '/NO ROLE ASSIGNED/ {print $1; exit}')
    g layout assign -z dc1 -c 100G "$node" > /dev/null
    g layout apply --version 1 > /dev/null
    g key create bench > "$dir/key.txt"
    g bucket create bench > /dev/null
    g bucket allow --read --write --owner bench --key bench > /dev/null
    ;;
env)
    id=$(awk '/Key ID/ {print $NF; exit}' "$dir/key.txt")
    secret=$(awk '/Secret key/ {print $NF; exit}' "$dir/key.txt")
    echo "export AWS_ACCESS_KEY_ID=$id AWS_SECRET_ACCESS_KEY=$secret"
    ;;
stop)
    kill "$(cat "$dir/pid")" 2>/dev/null || true
    sleep 1
    ;;
esac
