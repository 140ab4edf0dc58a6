#!/usr/bin/env bash
# Builds Granary (release) and runs `granary server`, by default over ./data
# on 127.0.0.1:9000. Any arguments are passed to `granary server`, e.g.
#   scripts/server.sh /mnt/d1 /mnt/d2 /mnt/d3 /mnt/d4 --address 0.0.0.0:9000
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
if [ $# -eq 0 ]; then set -- ./data; fi
exec cargo run --release --quiet --bin granary -- server "$@"
