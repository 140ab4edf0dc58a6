#!/usr/bin/env bash
# Creates (once) the virtualenv of the clients benches/model-pull.sh
# measures, pinned in requirements.txt, and prints its path. It is large
# (about 5.6 GB: PyTorch with its CUDA libraries) and is never made by the
# tests. GRANARY_MODEL_VENV chooses where; by default it sits in the target
# directory beside the compatibility suite's.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${CARGO_TARGET_DIR:-$(dirname "$(dirname "$here")")/target}"
exec "$here/../../scripts/venv.sh" "$here/requirements.txt" \
    "${GRANARY_MODEL_VENV:-$target/model-venv}" "model loaders, PyTorch, boto3, the aws CLI"
