#!/usr/bin/env bash
# Creates (once) the compatibility suite's virtualenv with the pinned aws
# CLI, boto3 and botocore of requirements.txt, and prints its path.
# GRANARY_COMPAT_VENV chooses where; by default it sits in the target
# directory, which runs share.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${CARGO_TARGET_DIR:-$(dirname "$here")/target}"
exec "$here/../scripts/venv.sh" "$here/requirements.txt" \
    "${GRANARY_COMPAT_VENV:-$target/compat-venv}" "awscli, boto3"
