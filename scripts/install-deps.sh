#!/usr/bin/env bash
# Installs the system packages building Granary needs, when they are missing:
# libclang (RocksDB's Rust bindings are generated with bindgen), a C/C++
# compiler (RocksDB and the SIMD Reed-Solomon kernels are C/C++), and for
# the S3 compatibility suite python3-venv, rclone and openssl (its HTTPS
# run's certificate). Debian/Ubuntu (apt-get) only.
set -euo pipefail

need=()
if [ -z "${LIBCLANG_PATH:-}" ] && ! compgen -G "/usr/lib/llvm-*/lib/libclang.so" >/dev/null \
    && ! compgen -G "/usr/lib/*/libclang.so" >/dev/null; then
    need+=(libclang-dev)
fi
command -v cc >/dev/null 2>&1 || need+=(gcc)
command -v c++ >/dev/null 2>&1 || need+=(g++)
command -v make >/dev/null 2>&1 || need+=(make)
python3 -c "import ensurepip, venv" >/dev/null 2>&1 || need+=(python3-venv)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v rclone >/dev/null 2>&1 || need+=(rclone)
command -v openssl >/dev/null 2>&1 || need+=(openssl)

if [ ${#need[@]} -eq 0 ]; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "Please install: ${need[*]} (RocksDB's bindings need libclang)" >&2
    exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "== installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get install -y "${need[@]}" >/dev/null 2>&1 \
    || { $sudo apt-get update >/dev/null && $sudo apt-get install -y "${need[@]}" >/dev/null; }
