#!/usr/bin/env bash
# Validates the Kubernetes manifests in ops/kubernetes against the
# Kubernetes API schemas (strict: unknown fields are errors), with the
# kubernetes-validate package from PyPI in a virtualenv of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-$PWD/target}"
venv="${GRANARY_MANIFEST_VENV:-$target/manifest-venv}"
if [ ! -x "$venv/bin/kubernetes-validate" ]; then
    echo "== creating virtualenv $venv (kubernetes-validate from PyPI)"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --upgrade pip
    "$venv/bin/pip" install --quiet "kubernetes-validate>=1.31"
fi
"$venv/bin/kubernetes-validate" --strict ops/kubernetes/*.yaml
