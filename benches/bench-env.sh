# Sourced by the bench scripts: the load generator they run (LOAD, or the
# release build's) and the credentials shared by the servers they start and
# the load generator.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
load=${LOAD:-${CARGO_TARGET_DIR:-$here/target}/release/granary-load}
export GRANARY_ROOT_USER=${GRANARY_ROOT_USER:-benchuser}
export GRANARY_ROOT_PASSWORD=${GRANARY_ROOT_PASSWORD:-benchsecret123}
export AWS_ACCESS_KEY_ID=$GRANARY_ROOT_USER AWS_SECRET_ACCESS_KEY=$GRANARY_ROOT_PASSWORD

# One server of 4 fresh directories under $dir (d1..d4) at a time:
# `start_server BINARY PORT [FLAGS...]` starts it and waits until it is
# ready; `stop_server` stops it and removes its directories and the
# unseal key the server writes beside them (a script
# traps EXIT with it).
server_pid=
stop_server() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    server_pid=
    if [ -n "${dir:-}" ]; then rm -rf "$dir"/d1 "$dir"/d2 "$dir"/d3 "$dir"/d4 "$dir"/granary-unseal.key; fi
}
start_server() {
    local bin=$1 port=$2
    shift 2
    stop_server
    mkdir -p "$dir"
    "$bin" server "$dir"/d1 "$dir"/d2 "$dir"/d3 "$dir"/d4 --address 127.0.0.1:"$port" "$@" \
        > "$dir/server.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 100); do
        curl -fs "http://127.0.0.1:$port/granary/health/ready" > /dev/null && break
        sleep 0.1
    done
    kill -0 "$server_pid" || { cat "$dir/server.log"; exit 1; }
}
