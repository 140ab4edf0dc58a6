#!/usr/bin/env bash
# Creates (once) the virtualenv of the clients benches/model-pull.sh
# measures, pinned in requirements.txt, and prints its path. It is large
# (about 5.6 GB: PyTorch with its CUDA libraries) and is never made by the
# tests. GRANARY_MODEL_VENV chooses where; by default it sits beside the
# target directory's other virtualenvs.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${CARGO_TARGET_DIR:-$(dirname "$(dirname "$here")")/target}"
venv="${GRANARY_MODEL_VENV:-$target/model-venv}"
want="$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)"
if [ ! -x "$venv/bin/aws" ] || [ "$(cat "$venv/requirements.sha256" 2>/dev/null)" != "$want" ]; then
    echo "== creating virtualenv $venv (model loaders, PyTorch, boto3, aws CLI from PyPI)" >&2
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --upgrade pip >&2
    "$venv/bin/pip" install --quiet -r "$here/requirements.txt" >&2
    echo "$want" >"$venv/requirements.sha256"
fi
echo "$venv"
