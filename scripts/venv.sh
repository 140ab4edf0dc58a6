#!/usr/bin/env bash
# Creates (once) a virtualenv with the pinned packages of a requirements
# file, and prints its path; made again when the file changes.
#
#   scripts/venv.sh REQUIREMENTS DIR WHAT
#
# WHAT says what it holds in the line shown while it is made.
set -euo pipefail
requirements=$1 venv=$2 what=$3
want="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/requirements.sha256" 2>/dev/null)" != "$want" ]; then
    echo "== creating virtualenv $venv ($what from PyPI)" >&2
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --upgrade pip >&2
    "$venv/bin/pip" install --quiet -r "$requirements" >&2
    echo "$want" >"$venv/requirements.sha256"
fi
echo "$venv"
