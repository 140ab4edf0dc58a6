#!/usr/bin/env bash
# The rclone part of the compatibility suite: copy, sync and check a tree
# (with multipart uploads) against Granary. Prints PASS/FAIL lines.
# Needs GRANARY_ENDPOINT, GRANARY_WORK and AWS credentials in the
# environment (and AWS_CA_BUNDLE over HTTPS).
set -uo pipefail

w="$GRANARY_WORK/rclone"
mkdir -p "$w"
# The remote "granary:" is configured entirely from the environment.
export RCLONE_CONFIG_GRANARY_TYPE=s3
export RCLONE_CONFIG_GRANARY_PROVIDER=Other
export RCLONE_CONFIG_GRANARY_ENV_AUTH=false
export RCLONE_CONFIG_GRANARY_ACCESS_KEY_ID="$AWS_ACCESS_KEY_ID"
export RCLONE_CONFIG_GRANARY_SECRET_ACCESS_KEY="$AWS_SECRET_ACCESS_KEY"
export RCLONE_CONFIG_GRANARY_ENDPOINT="$GRANARY_ENDPOINT"
export RCLONE_CONFIG_GRANARY_REGION=us-east-1
export RCLONE_CONFIG_GRANARY_FORCE_PATH_STYLE=true
# Parts of 5 MiB above 8 MiB, so the large files go multipart.
export RCLONE_S3_UPLOAD_CUTOFF=8M RCLONE_S3_CHUNK_SIZE=5M
export RCLONE_CONFIG="$w/empty.conf"
: >"$RCLONE_CONFIG"
rc=(rclone --retries 1 --low-level-retries 2)
# rclone takes the certificate as a flag (its S3 SDK would choke on
# AWS_CA_BUNDLE beside rclone's own transport).
if [ -n "${AWS_CA_BUNDLE:-}" ]; then
    rc+=(--ca-cert "$AWS_CA_BUNDLE")
    unset AWS_CA_BUNDLE
fi

check() { # check NAME COMMAND... : passes when the command succeeds
    local name="$1"; shift
    if out="$("$@" 2>&1)"; then echo "PASS rclone $name"; else echo "FAIL rclone $name"; echo "$out" | tail -n 5 | sed 's/^/    /'; fi
}

python3 - "$w/src" <<'PY'
import os, random, sys
root = sys.argv[1]
rng = random.Random(11)
for i in range(150):
    d = os.path.join(root, f"shard{i % 6}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"part-{i:05}.bin"), "wb") as f:
        f.write(rng.randbytes(rng.randint(0, 40000)))
os.makedirs(os.path.join(root, "weights"), exist_ok=True)
for name, size in [("model.safetensors", 23 * 1024 * 1024 + 17), ("optimizer.pt", 9 * 1024 * 1024)]:
    with open(os.path.join(root, "weights", name), "wb") as f:
        f.write(rng.randbytes(size))
PY

check "mkdir" "${rc[@]}" mkdir granary:compat-rclone
check "copy (150 files + 2 multipart)" "${rc[@]}" copy "$w/src" granary:compat-rclone/data
check "check after copy" "${rc[@]}" check "$w/src" granary:compat-rclone/data
check "lsf counts 152" bash -c "[ \$(${rc[*]} lsf -R --files-only granary:compat-rclone/data | wc -l) -eq 152 ]"
bytes=$(find "$w/src" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
check "size reports the bytes" bash -c "${rc[*]} size --json granary:compat-rclone/data | grep -q '\"bytes\":$bytes'"

# Change the source: edit, add, delete; sync mirrors it.
python3 - "$w/src" <<'PY'
import os, sys
root = sys.argv[1]
with open(os.path.join(root, "shard0", "part-00000.bin"), "wb") as f:
    f.write(b"rewritten")
with open(os.path.join(root, "shard1", "new.bin"), "wb") as f:
    f.write(os.urandom(12345))
os.remove(os.path.join(root, "shard2", "part-00002.bin"))
PY
check "sync" "${rc[@]}" sync "$w/src" granary:compat-rclone/data
check "check after sync" "${rc[@]}" check "$w/src" granary:compat-rclone/data
check "cat returns the rewritten file" bash -c "[ \"\$(${rc[*]} cat granary:compat-rclone/data/shard0/part-00000.bin)\" = rewritten ]"
check "copy back down" "${rc[@]}" copy granary:compat-rclone/data "$w/back"
check "downloaded tree is identical" diff -r "$w/src" "$w/back"
check "server-side copy" "${rc[@]}" copyto granary:compat-rclone/data/weights/optimizer.pt granary:compat-rclone/copy/optimizer.pt
check "copied object matches" "${rc[@]}" check "$w/src/weights" granary:compat-rclone/copy --one-way --include optimizer.pt
check "purge" "${rc[@]}" purge granary:compat-rclone
check "bucket gone" bash -c "! ${rc[*]} lsd granary: | grep -q compat-rclone"
