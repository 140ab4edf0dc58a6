#!/usr/bin/env bash
# Creates (once) the compatibility suite's virtualenv with the pinned aws
# CLI, boto3 and botocore of requirements.txt, and prints its path.
# GRANARY_COMPAT_VENV chooses where; by default it sits in the target
# directory, which runs share.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${CARGO_TARGET_DIR:-$(dirname "$here")/target}"
venv="${GRANARY_COMPAT_VENV:-$target/compat-venv}"
want="$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)"
if [ ! -x "$venv/bin/aws" ] || [ "$(cat "$venv/requirements.sha256" 2>/dev/null)" != "$want" ]; then
    echo "== creating virtualenv $venv (awscli, boto3 from PyPI)" >&2
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --upgrade pip >&2
    "$venv/bin/pip" install --quiet -r "$here/requirements.txt" >&2
    echo "$want" >"$venv/requirements.sha256"
fi
echo "$venv"
