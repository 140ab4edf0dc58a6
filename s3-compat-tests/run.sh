#!/usr/bin/env bash
# S3 compatibility suite: drives a real `granary server` with the aws CLI
# and boto3 from PyPI (in a virtualenv this script creates), and prints
# "N passed, N failed". Exits non-zero on any failure.
#
#   s3-compat-tests/run.sh            # builds granary (dev profile) first
#   GRANARY_BIN=path/to/granary s3-compat-tests/run.sh
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
target="${CARGO_TARGET_DIR:-$repo/target}"
venv="${GRANARY_COMPAT_VENV:-$target/compat-venv}"

if [ ! -x "$venv/bin/aws" ] || ! "$venv/bin/python" -c "import boto3" 2>/dev/null; then
    echo "== creating virtualenv $venv (awscli, boto3 from PyPI)"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --upgrade pip
    "$venv/bin/pip" install --quiet -r "$here/requirements.txt"
fi

bin="${GRANARY_BIN:-}"
if [ -z "$bin" ]; then
    (cd "$repo" && cargo build --quiet --bin granary)
    bin="$target/debug/granary"
fi

work="$(mktemp -d)"
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

export GRANARY_ROOT_USER=compat-root
export GRANARY_ROOT_PASSWORD=compat-secret-key-0123
"$bin" server "$work"/disk{1,2,3,4} --address 127.0.0.1:0 >"$work/server.out" 2>"$work/server.log" &
server_pid=$!
for _ in $(seq 1 100); do
    endpoint="$(sed -n 's/^Granary listening on \(http:\/\/[0-9.:]*\).*/\1/p' "$work/server.out")"
    [ -n "$endpoint" ] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log"; exit 1; }
    sleep 0.1
done
[ -n "$endpoint" ] || { echo "server did not start"; cat "$work/server.log"; exit 1; }
echo "== granary at $endpoint"

export AWS_ACCESS_KEY_ID="$GRANARY_ROOT_USER" AWS_SECRET_ACCESS_KEY="$GRANARY_ROOT_PASSWORD"
export AWS_DEFAULT_REGION=us-east-1 AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
export GRANARY_ENDPOINT="$endpoint" GRANARY_WORK="$work" PATH="$venv/bin:$PATH"

status=0
bash "$here/awscli_suite.sh" | tee "$work/cli.txt" || status=1
"$venv/bin/python" "$here/boto3_suite.py" | tee "$work/boto3.txt" || status=1

passed=$(cat "$work/cli.txt" "$work/boto3.txt" | grep -c '^PASS' || true)
failed=$(cat "$work/cli.txt" "$work/boto3.txt" | grep -c '^FAIL' || true)
if [ "$failed" -gt 0 ] || [ "$status" -ne 0 ]; then
    echo "== server log (tail)"; tail -n 40 "$work/server.log"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$status" -eq 0 ]
