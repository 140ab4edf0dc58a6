#!/usr/bin/env bash
# The aws CLI part of the compatibility suite. Prints PASS/FAIL lines.
# Needs GRANARY_ENDPOINT, GRANARY_WORK and AWS credentials in the environment.
set -uo pipefail

aws_() { aws --endpoint-url "$GRANARY_ENDPOINT" "$@"; }
w="$GRANARY_WORK/cli"
mkdir -p "$w"

check() { # check NAME COMMAND... : passes when the command succeeds
    local name="$1"; shift
    if out="$("$@" 2>&1)"; then echo "PASS $name"; else echo "FAIL $name"; echo "$out" | tail -n 5 | sed 's/^/    /'; fi
}
expect_error() { # expect_error NAME CODE COMMAND... : passes when it fails with CODE
    local name="$1" code="$2"; shift 2
    if out="$("$@" 2>&1)"; then echo "FAIL $name (succeeded)"; 
    elif echo "$out" | grep -q "$code"; then echo "PASS $name";
    else echo "FAIL $name (wanted $code)"; echo "$out" | tail -n 3 | sed 's/^/    /'; fi
}

check "s3 mb" aws_ s3 mb s3://compat-cli
check "s3 ls shows the bucket" bash -c "aws --endpoint-url $GRANARY_ENDPOINT s3 ls | grep -q compat-cli"
expect_error "s3 mb invalid name" InvalidBucketName aws_ s3 mb s3://Bad_Name

# A tree of a few hundred files, synced up and back.
python3 - "$w/tree" <<'PY'
import os, random, sys
root = sys.argv[1]
rng = random.Random(7)
for i in range(320):
    d = os.path.join(root, f"group{i % 8}", f"sub{i % 5}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"file {i}.bin"), "wb") as f:
        f.write(rng.randbytes(rng.randint(0, 70000)))
PY
check "s3 sync up (320 files)" aws_ s3 sync --no-progress "$w/tree" s3://compat-cli/tree
check "s3 ls --recursive counts 320" bash -c "[ \$(aws --endpoint-url $GRANARY_ENDPOINT s3 ls --recursive s3://compat-cli/tree/ | wc -l) -eq 320 ]"
check "s3 ls prefixes" bash -c "[ \$(aws --endpoint-url $GRANARY_ENDPOINT s3 ls s3://compat-cli/tree/ | grep -c PRE) -eq 8 ]"
check "s3 sync down" aws_ s3 sync --no-progress s3://compat-cli/tree "$w/back"
check "synced tree is identical" diff -r "$w/tree" "$w/back"
check "second sync uploads nothing" bash -c "[ -z \"\$(aws --endpoint-url $GRANARY_ENDPOINT s3 sync --no-progress $w/tree s3://compat-cli/tree)\" ]"

# A 100 MiB file: multipart upload and download.
head -c $((100 * 1024 * 1024)) /dev/urandom > "$w/big.bin"
check "s3 cp 100 MiB up (multipart)" aws_ s3 cp --no-progress "$w/big.bin" s3://compat-cli/big.bin
check "multipart ETag has a part count" bash -c "aws --endpoint-url $GRANARY_ENDPOINT s3api head-object --bucket compat-cli --key big.bin | grep -q 'ETag.*-[0-9]'"
check "s3 cp 100 MiB down" aws_ s3 cp --no-progress s3://compat-cli/big.bin "$w/big.back"
check "100 MiB round trip is identical" cmp "$w/big.bin" "$w/big.back"
check "s3 cp within the store" aws_ s3 cp --no-progress s3://compat-cli/big.bin s3://compat-cli/big-copy.bin
check "s3 mv" aws_ s3 mv --no-progress s3://compat-cli/big-copy.bin s3://compat-cli/moved.bin
check "moved object has the same size" bash -c "aws --endpoint-url $GRANARY_ENDPOINT s3api head-object --bucket compat-cli --key moved.bin | grep -q '\"ContentLength\": 104857600'"

# s3api calls.
echo "hello granary" > "$w/small.txt"
check "s3api put-object with metadata" aws_ s3api put-object --bucket compat-cli --key api/small.txt --body "$w/small.txt" --content-type text/plain --metadata team=ml,stage=dev
check "s3api head-object metadata" bash -c "aws --endpoint-url $GRANARY_ENDPOINT s3api head-object --bucket compat-cli --key api/small.txt | grep -q '\"team\": \"ml\"'"
check "s3api get-object" aws_ s3api get-object --bucket compat-cli --key api/small.txt "$w/small.back"
check "get-object content" cmp "$w/small.txt" "$w/small.back"
check "s3api get-object range" bash -c "aws --endpoint-url $GRANARY_ENDPOINT s3api get-object --bucket compat-cli --key api/small.txt --range bytes=0-4 $w/range.out >/dev/null && [ \"\$(cat $w/range.out)\" = hello ]"
check "s3api list-objects-v2 delimiter" bash -c "aws --endpoint-url $GRANARY_ENDPOINT s3api list-objects-v2 --bucket compat-cli --delimiter / | grep -q '\"Prefix\": \"tree/\"'"
check "s3api list-objects (v1)" bash -c "aws --endpoint-url $GRANARY_ENDPOINT s3api list-objects --bucket compat-cli --prefix api/ | grep -q small.txt"
check "s3api copy-object" aws_ s3api copy-object --bucket compat-cli --key api/copy.txt --copy-source compat-cli/api/small.txt
check "s3api get-bucket-location" aws_ s3api get-bucket-location --bucket compat-cli
check "s3api head-bucket" aws_ s3api head-bucket --bucket compat-cli
expect_error "s3api get missing key" NoSuchKey aws_ s3api get-object --bucket compat-cli --key nope "$w/nope"
expect_error "s3api head missing bucket" 404 aws_ s3api head-bucket --bucket no-such-bucket-here
expect_error "s3api precondition" PreconditionFailed aws_ s3api get-object --bucket compat-cli --key api/small.txt --if-match '"0000"' "$w/x"

upload_id=$(aws_ s3api create-multipart-upload --bucket compat-cli --key api/mp.bin --query UploadId --output text)
head -c $((5 * 1024 * 1024)) /dev/urandom > "$w/p1"; echo -n "z" > "$w/p2"
e1=$(aws_ s3api upload-part --bucket compat-cli --key api/mp.bin --upload-id "$upload_id" --part-number 1 --body "$w/p1" --query ETag --output text)
e2=$(aws_ s3api upload-part --bucket compat-cli --key api/mp.bin --upload-id "$upload_id" --part-number 2 --body "$w/p2" --query ETag --output text)
check "s3api list-parts" bash -c "[ \$(aws --endpoint-url $GRANARY_ENDPOINT s3api list-parts --bucket compat-cli --key api/mp.bin --upload-id $upload_id --query 'length(Parts)') -eq 2 ]"
check "s3api list-multipart-uploads" bash -c "aws --endpoint-url $GRANARY_ENDPOINT s3api list-multipart-uploads --bucket compat-cli | grep -q $upload_id"
cat > "$w/parts.json" <<JSON
{"Parts": [{"PartNumber": 1, "ETag": $e1}, {"PartNumber": 2, "ETag": $e2}]}
JSON
check "s3api complete-multipart-upload" aws_ s3api complete-multipart-upload --bucket compat-cli --key api/mp.bin --upload-id "$upload_id" --multipart-upload "file://$w/parts.json"
check "completed object is the parts joined" bash -c "aws --endpoint-url $GRANARY_ENDPOINT s3api get-object --bucket compat-cli --key api/mp.bin $w/mp.back >/dev/null && cat $w/p1 $w/p2 | cmp - $w/mp.back"
abort_id=$(aws_ s3api create-multipart-upload --bucket compat-cli --key api/abort.bin --query UploadId --output text)
check "s3api abort-multipart-upload" aws_ s3api abort-multipart-upload --bucket compat-cli --key api/abort.bin --upload-id "$abort_id"
expect_error "upload to an aborted upload" NoSuchUpload aws_ s3api upload-part --bucket compat-cli --key api/abort.bin --upload-id "$abort_id" --part-number 1 --body "$w/p2"
check "s3api delete-objects" aws_ s3api delete-objects --bucket compat-cli --delete '{"Objects":[{"Key":"api/copy.txt"},{"Key":"api/mp.bin"}]}'
url=$(aws_ s3 presign s3://compat-cli/api/small.txt --expires-in 60)
check "s3 presign + plain HTTP GET" bash -c "curl -sf ${AWS_CA_BUNDLE:+--cacert $AWS_CA_BUNDLE} '$url' | cmp - $w/small.txt"
expect_error "wrong secret" SignatureDoesNotMatch env AWS_SECRET_ACCESS_KEY=wrong-secret-0000 aws --endpoint-url "$GRANARY_ENDPOINT" s3 ls s3://compat-cli

# Removal.
# Storage classes and lifecycle: rule JSON through the CLI, then the rules
# at work (the server's lifecycle day is 2 s).
check "s3 cp --storage-class GLACIER" aws_ s3 cp --no-progress --storage-class GLACIER "$w/small.txt" s3://compat-cli/cold/small.txt
check "head-object shows GLACIER" bash -c "aws --endpoint-url $GRANARY_ENDPOINT s3api head-object --bucket compat-cli --key cold/small.txt | grep -q '\"StorageClass\": \"GLACIER\"'"
check "cold object reads back" bash -c "aws --endpoint-url $GRANARY_ENDPOINT s3 cp --no-progress s3://compat-cli/cold/small.txt - | cmp - $w/small.txt"
# GLACIER objects are read in place and always reported restored
# (x-amz-restore), so a single-object download needs no flag; a recursive
# one decides from the listing and needs --force-glacier-transfer, as on
# S3. GLACIER_IR needs neither.
check "s3 cp of one GLACIER object to a file, no flags" bash -c "aws --endpoint-url $GRANARY_ENDPOINT s3 cp --no-progress s3://compat-cli/cold/small.txt $w/glacier-dl.txt && cmp $w/glacier-dl.txt $w/small.txt"
check "head-object shows x-amz-restore" bash -c "aws --endpoint-url $GRANARY_ENDPOINT s3api head-object --bucket compat-cli --key cold/small.txt | grep '\"Restore\"' | grep -q 'ongoing-request=.*false'"
check "s3api restore-object answers" aws_ s3api restore-object --bucket compat-cli --key cold/small.txt --restore-request '{"Days": 3, "GlacierJobParameters": {"Tier": "Standard"}}'
check "s3 cp GLACIER_IR objects" bash -c "aws --endpoint-url $GRANARY_ENDPOINT s3 cp --no-progress --storage-class GLACIER_IR $w/small.txt s3://compat-cli/ir/a.txt && aws --endpoint-url $GRANARY_ENDPOINT s3 cp --no-progress --storage-class GLACIER_IR $w/p2 s3://compat-cli/ir/b.bin"
check "s3 sync of a GLACIER_IR prefix, no flags" bash -c "aws --endpoint-url $GRANARY_ENDPOINT s3 sync --no-progress s3://compat-cli/ir/ $w/ir/ && cmp $w/ir/a.txt $w/small.txt && cmp $w/ir/b.bin $w/p2"
check "s3 sync of GLACIER objects with --force-glacier-transfer" bash -c "aws --endpoint-url $GRANARY_ENDPOINT s3 sync --no-progress --force-glacier-transfer --exclude 'big.bin' s3://compat-cli/cold/ $w/coldsync/ && cmp $w/coldsync/small.txt $w/small.txt"
head -c $((20 * 1024 * 1024)) /dev/urandom > "$w/cold.bin"
check "s3 cp 20 MiB --storage-class DEEP_ARCHIVE (multipart)" aws_ s3 cp --no-progress --storage-class DEEP_ARCHIVE "$w/cold.bin" s3://compat-cli/cold/big.bin
check "multipart cold object has its class" bash -c "aws --endpoint-url $GRANARY_ENDPOINT s3api head-object --bucket compat-cli --key cold/big.bin | grep -q DEEP_ARCHIVE"
check "multipart cold object reads back" bash -c "aws --endpoint-url $GRANARY_ENDPOINT s3 cp --no-progress s3://compat-cli/cold/big.bin - | cmp - $w/cold.bin"
expect_error "unknown storage class" InvalidStorageClass aws_ s3api put-object --bucket compat-cli --key x --body "$w/small.txt" --storage-class REDUCED_REDUNDANCY
cat > "$w/lifecycle.json" <<'JSON'
{"Rules": [
  {"ID": "expire-tmp", "Filter": {"Prefix": "tmp/"}, "Status": "Enabled", "Expiration": {"Days": 1}},
  {"ID": "ckpt-cold", "Filter": {"And": {"Prefix": "ckpt/", "ObjectSizeGreaterThan": 0}}, "Status": "Enabled",
   "Transitions": [{"Days": 1, "StorageClass": "GLACIER"}]},
  {"ID": "uploads", "Filter": {"Prefix": ""}, "Status": "Enabled", "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7}}
]}
JSON
cat > "$w/lifecycle-bad.json" <<'JSON'
{"Rules": [{"ID": "ia", "Filter": {}, "Status": "Enabled", "Transitions": [{"Days": 5, "StorageClass": "STANDARD_IA"}]}]}
JSON
check "s3api put-bucket-lifecycle-configuration" aws_ s3api put-bucket-lifecycle-configuration --bucket compat-cli --lifecycle-configuration "file://$w/lifecycle.json"
check "s3api get-bucket-lifecycle-configuration" bash -c "aws --endpoint-url $GRANARY_ENDPOINT s3api get-bucket-lifecycle-configuration --bucket compat-cli | grep -q '\"ID\": \"ckpt-cold\"'"
expect_error "lifecycle: IA before 30 days" InvalidArgument aws_ s3api put-bucket-lifecycle-configuration --bucket compat-cli --lifecycle-configuration "file://$w/lifecycle-bad.json"
check "put-object tmp/ and ckpt/" bash -c "aws --endpoint-url $GRANARY_ENDPOINT s3api put-object --bucket compat-cli --key tmp/a --body $w/small.txt >/dev/null && aws --endpoint-url $GRANARY_ENDPOINT s3api put-object --bucket compat-cli --key ckpt/a --body $w/small.txt >/dev/null"
check "lifecycle expires tmp/a" bash -c "for i in \$(seq 80); do aws --endpoint-url $GRANARY_ENDPOINT s3api head-object --bucket compat-cli --key tmp/a >/dev/null 2>&1 || exit 0; sleep 0.5; done; exit 1"
check "lifecycle moves ckpt/a to GLACIER" bash -c "for i in \$(seq 80); do aws --endpoint-url $GRANARY_ENDPOINT s3api head-object --bucket compat-cli --key ckpt/a | grep -q GLACIER && exit 0; sleep 0.5; done; exit 1"
check "s3api delete-bucket-lifecycle" aws_ s3api delete-bucket-lifecycle --bucket compat-cli
expect_error "no lifecycle after delete" NoSuchLifecycleConfiguration aws_ s3api get-bucket-lifecycle-configuration --bucket compat-cli
check "s3 rm one" aws_ s3 rm s3://compat-cli/big.bin
expect_error "s3 rb non-empty" BucketNotEmpty aws_ s3 rb s3://compat-cli
check "s3 rm --recursive" aws_ s3 rm --recursive --quiet s3://compat-cli
check "bucket is empty" bash -c "[ -z \"\$(aws --endpoint-url $GRANARY_ENDPOINT s3 ls --recursive s3://compat-cli)\" ]"
check "s3 rb" aws_ s3 rb s3://compat-cli
check "s3 mb + rb --force" bash -c "aws --endpoint-url $GRANARY_ENDPOINT s3 mb s3://compat-force && aws --endpoint-url $GRANARY_ENDPOINT s3 cp --no-progress $w/small.txt s3://compat-force/x && aws --endpoint-url $GRANARY_ENDPOINT s3 rb --force s3://compat-force"
expect_error "bucket gone" NoSuchBucket aws_ s3 ls s3://compat-cli
