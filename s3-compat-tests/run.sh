#!/usr/bin/env bash
# S3 compatibility suite: drives a real `granary server` with the aws CLI
# and boto3 from PyPI (in a virtualenv venv.sh creates) and rclone, sends
# every header of HEADERS.md and every unsupported operation with boto3,
# first over HTTP and then over HTTPS (a self-signed certificate; over TLS
# the AWS SDKs stream aws-chunked bodies with trailing checksums). Prints
# "N passed, N failed" and exits non-zero on any failure.
#
#   s3-compat-tests/run.sh            # builds granary (dev profile) first
#   GRANARY_BIN=path/to/granary s3-compat-tests/run.sh
#   GRANARY_COMPAT_TRANSPORTS=http s3-compat-tests/run.sh   # one transport
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
target="${CARGO_TARGET_DIR:-$repo/target}"
venv="$("$here/venv.sh")"
command -v rclone >/dev/null || { echo "rclone is missing: run scripts/install-deps.sh"; exit 1; }

bin="${GRANARY_BIN:-}"
if [ -z "$bin" ]; then
    (cd "$repo" && cargo build --quiet --bin granary)
    bin="$target/debug/granary"
fi

work="$(mktemp -d)"
server_pid=""
stop_server() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    server_pid=""
}
cleanup() { stop_server; rm -rf "$work"; }
trap cleanup EXIT

export GRANARY_ROOT_USER=compat-root
export GRANARY_ROOT_PASSWORD=compat-secret-key-0123
export AWS_ACCESS_KEY_ID="$GRANARY_ROOT_USER" AWS_SECRET_ACCESS_KEY="$GRANARY_ROOT_PASSWORD"
export AWS_DEFAULT_REGION=us-east-1 AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
export GRANARY_BIN="$bin" PATH="$venv/bin:$PATH"

# Starts a server over fresh directories under $1 (extra flags after it):
# a hot pool of four, a cold pool of four, lifecycle days of 2 s. Sets
# $endpoint.
start_server() {
    local dir="$1"; shift
    mkdir -p "$dir"
    # The background server opens its output only when the shell has
    # forked it; the file exists before the first read of it.
    : >"$dir/server.out"
    "$bin" server "$dir"/disk{1,2,3,4} --cold "$dir"/cold{1,2,3,4} --lifecycle-day-secs 2 --body-timeout 3 \
        --address 127.0.0.1:0 "$@" >"$dir/server.out" 2>"$dir/server.log" &
    server_pid=$!
    endpoint=""
    for _ in $(seq 1 100); do
        endpoint="$(sed -n 's/^Granary listening on \(https\{0,1\}:\/\/[0-9.:]*\).*/\1/p' "$dir/server.out")"
        [ -n "$endpoint" ] && break
        kill -0 "$server_pid" 2>/dev/null || { cat "$dir/server.log"; exit 1; }
        sleep 0.1
    done
    [ -n "$endpoint" ] || { echo "server did not start"; cat "$dir/server.log"; exit 1; }
}

status=0
for transport in ${GRANARY_COMPAT_TRANSPORTS:-http https}; do
    dir="$work/$transport"
    if [ "$transport" = https ]; then
        mkdir -p "$dir"
        # A self-signed server (not CA) certificate: rustls-based clients
        # refuse a CA certificate used as a server's.
        cat >"$dir/cert.cnf" <<'CNF'
[req]
distinguished_name = dn
prompt = no
x509_extensions = server
[dn]
CN = localhost
[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
CNF
        openssl req -x509 -newkey rsa:2048 -nodes -days 2 -config "$dir/cert.cnf" \
            -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null
        start_server "$dir" --tls-cert "$dir/cert.pem" --tls-key "$dir/key.pem"
        export AWS_CA_BUNDLE="$dir/cert.pem"
    else
        start_server "$dir"
        unset AWS_CA_BUNDLE
    fi
    echo "== granary at $endpoint"
    export GRANARY_ENDPOINT="$endpoint" GRANARY_WORK="$dir"
    for suite in "bash $here/awscli_suite.sh" "$venv/bin/python $here/boto3_suite.py" "bash $here/rclone_suite.sh" \
        "$venv/bin/python $here/header_suite.py"; do
        set +e
        $suite >"$dir/suite.txt" 2>&1 || status=1
        set -e
        sed "s/^\(PASS\|FAIL\) /\1 [$transport] /" "$dir/suite.txt" | tee -a "$work/results.txt"
    done
    if grep -q "^FAIL \[$transport\]" "$work/results.txt" || [ "$status" -ne 0 ]; then
        echo "== server log (tail)"; tail -n 40 "$dir/server.log"
    fi
    stop_server
done

passed=$(grep -c '^PASS' "$work/results.txt" || true)
failed=$(grep -c '^FAIL' "$work/results.txt" || true)
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$status" -eq 0 ]
