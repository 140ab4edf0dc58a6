#!/usr/bin/env bash
# Builds Granary and runs every test: unit tests of each crate, the
# end-to-end tests (the real binary driven by the Rust AWS SDK), and the S3
# compatibility suite (aws CLI and boto3 from PyPI, rclone; over HTTP and
# HTTPS; every request header of the S3 model), after checking the
# compatibility tables against the pinned S3 model and their tests, the
# crates' structure (scripts/check-structure.py)
# and that the Kubernetes manifests in ops/ are valid.
#
# GRANARY_E2E_LARGE_BYTES sets the size of the large-object test (default
# 2 GiB); GRANARY_E2E_SET_KEYS the keys of the many-sets test (default
# 2,000; 100,000 checks their spread over the sets within 5%). The full-disk test mounts a tmpfs and needs root; it says SKIPPED
# otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
target="${CARGO_TARGET_DIR:-$PWD/target}"

echo "== compatibility tables (against the pinned S3 model; every named test exists)"
venv="$(s3-compat-tests/venv.sh)"
"$venv/bin/python" scripts/check-compat-table.py --self-test

echo "== structure (crate rules; no import cycle between a crate's files)"
python3 scripts/check-structure.py --self-test

echo "== Kubernetes manifests (validated against the API schemas)"
scripts/check-manifests.sh

echo "== cargo test (unit and end-to-end)"
# With fault points compiled in: the fault tests crash, delay and fail the
# real binary at named steps (the release build has none).
cargo test --workspace --locked --features granary/failpoints

echo "== object, multipart, versioning, listing, lifecycle and tier tests on a pool of 4 erasure sets"
# The same end-to-end suites with every one- or four-directory server
# replaced by 32 directories in sets of 8 (parity 2); see wider_pool in
# tests/e2e/harness.rs.
GRANARY_E2E_POOL=32:8:2 cargo test --workspace --locked --features granary/failpoints --test e2e -- \
    objects:: multipart:: versioning:: listing:: lifecycle:: tiers::

echo "== S3 compatibility suite"
# `cargo test --workspace` has just built the binary the e2e tests start
# (with the workspace's unified features); `cargo build --bin granary` alone
# would resolve features differently and rebuild half the tree. Its fault
# points are inert unless a test configures them.
GRANARY_BIN="$target/debug/granary" s3-compat-tests/run.sh
