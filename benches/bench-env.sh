# Sourced by the bench scripts: the load generator they run (LOAD, or the
# release build's) and the credentials shared by the servers they start and
# the load generator.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
load=${LOAD:-${CARGO_TARGET_DIR:-$here/target}/release/granary-load}
export GRANARY_ROOT_USER=${GRANARY_ROOT_USER:-benchuser}
export GRANARY_ROOT_PASSWORD=${GRANARY_ROOT_PASSWORD:-benchsecret123}
export AWS_ACCESS_KEY_ID=$GRANARY_ROOT_USER AWS_SECRET_ACCESS_KEY=$GRANARY_ROOT_PASSWORD
