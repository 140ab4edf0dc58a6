"""The boto3 part of the compatibility suite. Prints PASS/FAIL lines.

Needs GRANARY_ENDPOINT and AWS credentials in the environment. Uses boto3's
defaults (flexible checksums on, aws-chunked trailers) plus explicit options.
"""

import hashlib
import io
import os
import sys
import traceback
import urllib.request

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError

ENDPOINT = os.environ["GRANARY_ENDPOINT"]
BUCKET = "compat-boto3"
TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def client(**cfg):
    return boto3.client(
        "s3",
        endpoint_url=ENDPOINT,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 2}, **cfg),
    )


s3 = client()


def error_code(fn):
    try:
        fn()
    except ClientError as e:
        return e.response["Error"]["Code"]
    return None


@test
def create_bucket():
    s3.create_bucket(Bucket=BUCKET)
    assert BUCKET in [b["Name"] for b in s3.list_buckets()["Buckets"]]


@test
def put_get_with_every_checksum():
    data = os.urandom(300_000)
    for alg in ["CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"]:
        put = s3.put_object(Bucket=BUCKET, Key=f"sum/{alg}", Body=data, ChecksumAlgorithm=alg)
        got = s3.get_object(Bucket=BUCKET, Key=f"sum/{alg}", ChecksumMode="ENABLED")
        assert got["Body"].read() == data
        assert got[f"Checksum{alg}"] == put[f"Checksum{alg}"], alg


@test
def metadata_and_headers():
    s3.put_object(
        Bucket=BUCKET, Key="meta", Body=b"x", ContentType="text/x-test",
        CacheControl="no-cache", ContentDisposition="inline", Metadata={"owner": "ml-team"},
    )
    h = s3.head_object(Bucket=BUCKET, Key="meta")
    assert h["ContentType"] == "text/x-test"
    assert h["CacheControl"] == "no-cache"
    assert h["ContentDisposition"] == "inline"
    assert h["Metadata"] == {"owner": "ml-team"}
    assert h["ETag"] == '"%s"' % hashlib.md5(b"x").hexdigest()


@test
def multipart_transfer_parallel():
    data = os.urandom(40 * 1024 * 1024 + 123)
    cfg = TransferConfig(multipart_threshold=8 * 1024 * 1024, multipart_chunksize=8 * 1024 * 1024, max_concurrency=4)
    s3.upload_fileobj(io.BytesIO(data), BUCKET, "mp/big", Config=cfg)
    h = s3.head_object(Bucket=BUCKET, Key="mp/big")
    assert h["ContentLength"] == len(data)
    assert h["ETag"].endswith('-6"'), h["ETag"]
    out = io.BytesIO()
    s3.download_fileobj(BUCKET, "mp/big", out, Config=cfg)
    assert out.getvalue() == data
    part = s3.get_object(Bucket=BUCKET, Key="mp/big", PartNumber=2)
    assert part["PartsCount"] == 6
    assert part["Body"].read() == data[8 * 1024 * 1024:16 * 1024 * 1024]


@test
def ranged_reads():
    data = bytes(range(256)) * 4000
    s3.put_object(Bucket=BUCKET, Key="range", Body=data)
    for rng, want in [("bytes=0-0", data[:1]), ("bytes=1000-", data[1000:]), ("bytes=-17", data[-17:])]:
        assert s3.get_object(Bucket=BUCKET, Key="range", Range=rng)["Body"].read() == want, rng
    assert error_code(lambda: s3.get_object(Bucket=BUCKET, Key="range", Range=f"bytes={len(data)}-")) == "InvalidRange"


@test
def listing_paginators():
    for i in range(120):
        s3.put_object(Bucket=BUCKET, Key=f"list/d{i % 3}/k{i:03}", Body=b"")
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix="list/", PaginationConfig={"PageSize": 25})
    keys = [o["Key"] for p in pages for o in p.get("Contents", [])]
    assert len(keys) == 120 and keys == sorted(keys)
    r = s3.list_objects_v2(Bucket=BUCKET, Prefix="list/", Delimiter="/")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["list/d0/", "list/d1/", "list/d2/"]
    v1 = s3.get_paginator("list_objects").paginate(Bucket=BUCKET, Prefix="list/d1/", PaginationConfig={"PageSize": 7})
    assert sum(len(p.get("Contents", [])) for p in v1) == 40


@test
def conditional_and_copy():
    etag = s3.put_object(Bucket=BUCKET, Key="cond", Body=b"v1")["ETag"]
    assert error_code(lambda: s3.get_object(Bucket=BUCKET, Key="cond", IfMatch='"nope"')) == "PreconditionFailed"
    assert error_code(lambda: s3.get_object(Bucket=BUCKET, Key="cond", IfNoneMatch=etag)) == "304"
    s3.copy_object(Bucket=BUCKET, Key="cond-copy", CopySource={"Bucket": BUCKET, "Key": "cond"})
    assert s3.get_object(Bucket=BUCKET, Key="cond-copy")["Body"].read() == b"v1"
    s3.copy_object(
        Bucket=BUCKET, Key="cond-copy", CopySource=f"{BUCKET}/cond",
        MetadataDirective="REPLACE", Metadata={"k": "v"}, ContentType="text/plain",
    )
    assert s3.head_object(Bucket=BUCKET, Key="cond-copy")["Metadata"] == {"k": "v"}


@test
def delete_objects_batch():
    for i in range(10):
        s3.put_object(Bucket=BUCKET, Key=f"del/{i}", Body=b"x")
    r = s3.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": f"del/{i}"} for i in range(10)]})
    assert len(r["Deleted"]) == 10
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix="del/")["KeyCount"] == 0


@test
def upload_part_copy_ranges():
    src = os.urandom(12 * 1024 * 1024)
    s3.put_object(Bucket=BUCKET, Key="upc/src", Body=src)
    up = s3.create_multipart_upload(Bucket=BUCKET, Key="upc/dst")["UploadId"]
    p1 = s3.upload_part_copy(Bucket=BUCKET, Key="upc/dst", UploadId=up, PartNumber=1,
                             CopySource={"Bucket": BUCKET, "Key": "upc/src"}, CopySourceRange="bytes=0-5242879")
    p2 = s3.upload_part_copy(Bucket=BUCKET, Key="upc/dst", UploadId=up, PartNumber=2,
                             CopySource={"Bucket": BUCKET, "Key": "upc/src"}, CopySourceRange="bytes=10000000-12582911")
    s3.complete_multipart_upload(Bucket=BUCKET, Key="upc/dst", UploadId=up, MultipartUpload={"Parts": [
        {"PartNumber": 1, "ETag": p1["CopyPartResult"]["ETag"]},
        {"PartNumber": 2, "ETag": p2["CopyPartResult"]["ETag"]},
    ]})
    got = s3.get_object(Bucket=BUCKET, Key="upc/dst")["Body"].read()
    assert got == src[:5242880] + src[10000000:], "copied parts differ"


@test
def presigned_urls():
    s3.put_object(Bucket=BUCKET, Key="pre", Body=b"presigned body")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": "pre"}, ExpiresIn=60)
    assert urllib.request.urlopen(url).read() == b"presigned body"
    v4 = client(signature_version="s3v4")
    url = v4.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": "pre"}, ExpiresIn=60)
    assert "X-Amz-Signature" in url
    assert urllib.request.urlopen(url).read() == b"presigned body"
    put = s3.generate_presigned_url("put_object", Params={"Bucket": BUCKET, "Key": "pre-put"}, ExpiresIn=60)
    # SigV2 signs Content-Type; urllib would add a form type otherwise.
    req = urllib.request.Request(put, data=b"uploaded", method="PUT", headers={"Content-Type": ""})
    urllib.request.urlopen(req).read()
    assert s3.get_object(Bucket=BUCKET, Key="pre-put")["Body"].read() == b"uploaded"


@test
def errors_have_s3_codes():
    assert error_code(lambda: s3.get_object(Bucket=BUCKET, Key="missing")) == "NoSuchKey"
    assert error_code(lambda: s3.get_object(Bucket="no-such-bucket-x", Key="k")) == "NoSuchBucket"
    assert error_code(lambda: s3.delete_bucket(Bucket=BUCKET)) == "BucketNotEmpty"
    assert error_code(lambda: s3.put_object(Bucket=BUCKET, Key="k" * 1025, Body=b"")) == "KeyTooLongError"
    bad = boto3.client("s3", endpoint_url=ENDPOINT, aws_access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
                       aws_secret_access_key="wrong-secret", config=Config(s3={"addressing_style": "path"}))
    assert error_code(lambda: bad.list_objects_v2(Bucket=BUCKET)) == "SignatureDoesNotMatch"


@test
def unsigned_payloads_and_plain_md5():
    plain = client(request_checksum_calculation="when_required")
    plain.put_object(Bucket=BUCKET, Key="plain", Body=b"no flexible checksum")
    assert plain.get_object(Bucket=BUCKET, Key="plain")["Body"].read() == b"no flexible checksum"


@test
def cleanup_bucket():
    keys = [o["Key"] for p in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET) for o in p.get("Contents", [])]
    for i in range(0, len(keys), 1000):
        s3.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": k} for k in keys[i:i + 1000]], "Quiet": True})
    s3.delete_bucket(Bucket=BUCKET)
    assert error_code(lambda: s3.head_bucket(Bucket=BUCKET)) == "404"


def main():
    failed = 0
    for fn in TESTS:
        try:
            fn()
            print(f"PASS boto3 {fn.__name__}")
        except Exception:
            failed += 1
            print(f"FAIL boto3 {fn.__name__}")
            print("    " + traceback.format_exc().replace("\n", "\n    "))
    sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
