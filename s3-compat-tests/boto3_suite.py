"""The boto3 part of the compatibility suite. Prints PASS/FAIL lines.

Needs GRANARY_ENDPOINT and AWS credentials in the environment. Uses boto3's
defaults (flexible checksums on, aws-chunked trailers) plus explicit options.
"""

import base64
import hashlib
import io
import json
import os
import ssl
import subprocess
import sys
import threading
import time
import traceback
import urllib.request
import zlib

import urllib3

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError

ENDPOINT = os.environ["GRANARY_ENDPOINT"]
CA_BUNDLE = os.environ.get("AWS_CA_BUNDLE")
BUCKET = "compat-boto3"
TESTS = []
SSL = ssl.create_default_context(cafile=CA_BUNDLE) if CA_BUNDLE else None
HTTP = urllib3.PoolManager(ca_certs=CA_BUNDLE) if CA_BUNDLE else urllib3.PoolManager()


def urlopen(req):
    return urllib.request.urlopen(req, context=SSL)


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
def metadata_values_round_trip_byte_for_byte():
    # botocore refuses non-ASCII metadata unless this check is taken out;
    # it then sends values as UTF-8 and reads response headers as
    # ISO-8859-1. Granary keeps a value's bytes and sends them back as they
    # came (no RFC 2047 decoding or encoding), so the bytes read back are
    # the UTF-8 bytes sent, and an encoded word comes back as it went.
    from botocore.handlers import validate_ascii_metadata
    event = "before-parameter-build.s3.PutObject"
    s3.meta.events.unregister(event, validate_ascii_metadata)
    try:
        values = {
            "accent": "Hello World\xe9",
            "utf8": "Hello W\u00f6rld \u2713",
            "encoded": "=?UTF-8?B?SGVsbG8gV29ybGTDqQ==?=",
        }
        s3.put_object(Bucket=BUCKET, Key="meta-bytes", Body=b"x", Metadata=values)
        for read in (s3.head_object, s3.get_object):
            got = read(Bucket=BUCKET, Key="meta-bytes")["Metadata"]
            assert {k: v.encode("latin-1") for k, v in got.items()} == {
                k: v.encode("utf-8") for k, v in values.items()
            }, got
    finally:
        s3.meta.events.register(event, validate_ascii_metadata)


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
def delete_objects_keys_with_line_separators():
    # botocore writes U+2028 and U+0085 raw in the XML body. XML 1.0 keeps
    # them (only CR LF and CR become LF); read by XML 1.1's rules they were
    # line feeds, and the other key was deleted.
    odd, plain = "sep/a\u2028b\u0085c", "sep/a\nb\nc"
    for k in (odd, plain):
        s3.put_object(Bucket=BUCKET, Key=k, Body=k.encode())
    r = s3.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": odd}]})
    assert [d["Key"] for d in r["Deleted"]] == [odd], r["Deleted"]
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="sep/").get("Contents", [])]
    assert keys == [plain], keys
    s3.delete_object(Bucket=BUCKET, Key=plain)


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
    assert urlopen(url).read() == b"presigned body"
    v4 = client(signature_version="s3v4")
    url = v4.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": "pre"}, ExpiresIn=60)
    assert "X-Amz-Signature" in url
    assert urlopen(url).read() == b"presigned body"
    put = s3.generate_presigned_url("put_object", Params={"Bucket": BUCKET, "Key": "pre-put"}, ExpiresIn=60)
    # SigV2 signs Content-Type; urllib would add a form type otherwise.
    req = urllib.request.Request(put, data=b"uploaded", method="PUT", headers={"Content-Type": ""})
    urlopen(req).read()
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
def versioning_and_delete_markers():
    b = "compat-versions"
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"
    v1 = s3.put_object(Bucket=b, Key="k", Body=b"one")["VersionId"]
    v2 = s3.put_object(Bucket=b, Key="k", Body=b"two")["VersionId"]
    assert s3.get_object(Bucket=b, Key="k", VersionId=v1)["Body"].read() == b"one"
    marker = s3.delete_object(Bucket=b, Key="k")
    assert marker["DeleteMarker"] is True
    try:
        s3.get_object(Bucket=b, Key="k")
        raise AssertionError("a delete marker hides the key")
    except ClientError as e:
        assert e.response["Error"]["Code"] == "NoSuchKey"
        assert e.response["ResponseMetadata"]["HTTPHeaders"]["x-amz-delete-marker"] == "true"
    try:
        s3.head_object(Bucket=b, Key="k", VersionId=marker["VersionId"])
        raise AssertionError("HEAD of a marker by version id")
    except ClientError as e:
        assert e.response["Error"]["Code"] == "405", e.response
    pages = s3.get_paginator("list_object_versions").paginate(Bucket=b, PaginationConfig={"PageSize": 1})
    versions = [v["VersionId"] for p in pages for v in p.get("Versions", [])]
    assert versions == [v2, v1], versions
    r = s3.delete_objects(Bucket=b, Delete={"Objects": [
        {"Key": "k", "VersionId": v} for v in (v1, v2, marker["VersionId"])]})
    assert len(r["Deleted"]) == 3, r
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})
    assert s3.put_object(Bucket=b, Key="n", Body=b"x").get("VersionId") in (None, "null")
    assert s3.head_object(Bucket=b, Key="n")["VersionId"] == "null"
    s3.delete_object(Bucket=b, Key="n", VersionId="null")
    s3.delete_bucket(Bucket=b)


@test
def multipart_checksums_and_attributes():
    parts = [os.urandom(5 * 1024 * 1024), os.urandom(777)]
    for alg, kind in [("CRC32", "FULL_OBJECT"), ("SHA256", "COMPOSITE"), ("CRC64NVME", "FULL_OBJECT")]:
        key = f"ck/{alg}"
        up = s3.create_multipart_upload(Bucket=BUCKET, Key=key, ChecksumAlgorithm=alg, ChecksumType=kind)
        done = []
        for n, data in enumerate(parts, 1):
            r = s3.upload_part(Bucket=BUCKET, Key=key, UploadId=up["UploadId"], PartNumber=n,
                               Body=data, ChecksumAlgorithm=alg)
            done.append({"PartNumber": n, "ETag": r["ETag"], f"Checksum{alg}": r[f"Checksum{alg}"]})
        c = s3.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=up["UploadId"],
                                         MultipartUpload={"Parts": done})
        assert c["ChecksumType"] == kind, c
        if alg == "CRC32":
            want = base64.b64encode(zlib.crc32(b"".join(parts)).to_bytes(4, "big")).decode()
            assert c["ChecksumCRC32"] == want, (c["ChecksumCRC32"], want)
        if kind == "COMPOSITE":
            raw = b"".join(hashlib.sha256(p).digest() for p in parts)
            assert c["ChecksumSHA256"] == base64.b64encode(hashlib.sha256(raw).digest()).decode() + "-2"
        h = s3.head_object(Bucket=BUCKET, Key=key, ChecksumMode="ENABLED")
        assert h[f"Checksum{alg}"] == c[f"Checksum{alg}"]
        a = s3.get_object_attributes(Bucket=BUCKET, Key=key,
                                     ObjectAttributes=["ETag", "Checksum", "ObjectParts", "ObjectSize", "StorageClass"])
        assert a["ObjectSize"] == sum(map(len, parts))
        assert a["ObjectParts"]["TotalPartsCount"] == 2
        assert a["Checksum"][f"Checksum{alg}"] == c[f"Checksum{alg}"]
        assert a["StorageClass"] == "STANDARD"
    bad = base64.b64encode(b"\0" * 4).decode()
    assert error_code(lambda: s3.put_object(Bucket=BUCKET, Key="ck/bad", Body=b"x", ChecksumCRC32=bad)) == "BadDigest"


@test
def conditional_writes():
    s3.put_object(Bucket=BUCKET, Key="cw", Body=b"first", IfNoneMatch="*")
    assert error_code(lambda: s3.put_object(Bucket=BUCKET, Key="cw", Body=b"again", IfNoneMatch="*")) == "PreconditionFailed"
    etag = s3.head_object(Bucket=BUCKET, Key="cw")["ETag"]
    s3.put_object(Bucket=BUCKET, Key="cw", Body=b"second", IfMatch=etag)
    assert error_code(lambda: s3.put_object(Bucket=BUCKET, Key="cw", Body=b"stale", IfMatch=etag)) == "PreconditionFailed"
    assert s3.get_object(Bucket=BUCKET, Key="cw")["Body"].read() == b"second"
    # Racing creators: exactly one wins.
    results = []
    def racer(i):
        results.append(error_code(lambda: s3.put_object(Bucket=BUCKET, Key="cw-race", Body=b"%d" % i, IfNoneMatch="*")))
    threads = [threading.Thread(target=racer, args=(i,)) for i in range(8)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert results.count(None) == 1, results
    assert all(r in (None, "PreconditionFailed", "ConditionalRequestConflict") for r in results), results


@test
def object_and_bucket_tagging():
    s3.put_object(Bucket=BUCKET, Key="tagged", Body=b"x", Tagging="team=ml&tier=hot")
    tags = s3.get_object_tagging(Bucket=BUCKET, Key="tagged")["TagSet"]
    assert {t["Key"]: t["Value"] for t in tags} == {"team": "ml", "tier": "hot"}
    assert s3.get_object(Bucket=BUCKET, Key="tagged")["TagCount"] == 2
    s3.put_object_tagging(Bucket=BUCKET, Key="tagged", Tagging={"TagSet": [{"Key": "a", "Value": "b"}]})
    assert s3.get_object_tagging(Bucket=BUCKET, Key="tagged")["TagSet"] == [{"Key": "a", "Value": "b"}]
    s3.delete_object_tagging(Bucket=BUCKET, Key="tagged")
    assert s3.get_object_tagging(Bucket=BUCKET, Key="tagged")["TagSet"] == []
    assert error_code(lambda: s3.get_bucket_tagging(Bucket=BUCKET)) == "NoSuchTagSet"
    s3.put_bucket_tagging(Bucket=BUCKET, Tagging={"TagSet": [{"Key": "cost", "Value": "42"}]})
    assert s3.get_bucket_tagging(Bucket=BUCKET)["TagSet"] == [{"Key": "cost", "Value": "42"}]
    s3.delete_bucket_tagging(Bucket=BUCKET)
    assert error_code(lambda: s3.put_object(Bucket=BUCKET, Key="t2", Body=b"", Tagging="k=v&k=w")) == "InvalidTag"


def granary_admin(*args):
    cmd = [os.environ["GRANARY_BIN"], "admin", "--endpoint", ENDPOINT]
    if CA_BUNDLE:
        cmd += ["--ca-bundle", CA_BUNDLE]
    env = dict(os.environ, GRANARY_ROOT_USER=os.environ["AWS_ACCESS_KEY_ID"],
               GRANARY_ROOT_PASSWORD=os.environ["AWS_SECRET_ACCESS_KEY"])
    out = subprocess.run(cmd + list(args), env=env, capture_output=True, text=True, check=True).stdout
    return dict(line.strip().split("=", 1) for line in out.splitlines() if "=" in line)


@test
def users_and_bucket_policies():
    keys = granary_admin("user", "add", "boto-reader")
    reader = boto3.client("s3", endpoint_url=ENDPOINT, aws_access_key_id=keys["AWS_ACCESS_KEY_ID"],
                          aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"],
                          config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
    s3.put_object(Bucket=BUCKET, Key="pol/open", Body=b"open")
    s3.put_object(Bucket=BUCKET, Key="pol/closed/x", Body=b"closed")
    assert error_code(lambda: reader.get_object(Bucket=BUCKET, Key="pol/open")) == "AccessDenied"
    policy = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam:::user/boto-reader"]},
         "Action": ["s3:GetObject", "s3:ListBucket"],
         "Resource": [f"arn:aws:s3:::{BUCKET}", f"arn:aws:s3:::{BUCKET}/pol/*"]},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject",
         "Resource": f"arn:aws:s3:::{BUCKET}/pol/closed/*"},
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
         "Resource": f"arn:aws:s3:::{BUCKET}/pol/open"}]}
    s3.put_bucket_policy(Bucket=BUCKET, Policy=json.dumps(policy))
    assert json.loads(s3.get_bucket_policy(Bucket=BUCKET)["Policy"]) == policy
    assert reader.get_object(Bucket=BUCKET, Key="pol/open")["Body"].read() == b"open"
    assert error_code(lambda: reader.get_object(Bucket=BUCKET, Key="pol/closed/x")) == "AccessDenied"
    assert error_code(lambda: reader.put_object(Bucket=BUCKET, Key="pol/new", Body=b"")) == "AccessDenied"
    assert HTTP.request("GET", f"{ENDPOINT}/{BUCKET}/pol/open").data == b"open"
    assert HTTP.request("GET", f"{ENDPOINT}/{BUCKET}/pol/closed/x").status == 403
    assert error_code(lambda: s3.put_bucket_policy(Bucket=BUCKET, Policy="{")) == "MalformedPolicy"
    s3.delete_bucket_policy(Bucket=BUCKET)
    assert error_code(lambda: s3.get_bucket_policy(Bucket=BUCKET)) == "NoSuchBucketPolicy"
    assert error_code(lambda: reader.get_object(Bucket=BUCKET, Key="pol/open")) == "AccessDenied"
    granary_admin("user", "remove", keys["AWS_ACCESS_KEY_ID"])
    assert error_code(lambda: reader.list_objects_v2(Bucket=BUCKET)) == "InvalidAccessKeyId"


@test
def cors_preflight():
    s3.put_bucket_cors(Bucket=BUCKET, CORSConfiguration={"CORSRules": [{
        "AllowedOrigins": ["https://app.example.com"], "AllowedMethods": ["PUT", "POST"],
        "AllowedHeaders": ["*"], "ExposeHeaders": ["ETag"], "MaxAgeSeconds": 300}]})
    assert s3.get_bucket_cors(Bucket=BUCKET)["CORSRules"][0]["MaxAgeSeconds"] == 300
    ok = HTTP.request("OPTIONS", f"{ENDPOINT}/{BUCKET}/upload.bin", headers={
        "Origin": "https://app.example.com", "Access-Control-Request-Method": "PUT",
        "Access-Control-Request-Headers": "content-type,x-amz-date"})
    assert ok.status == 200 and ok.headers["Access-Control-Allow-Origin"] == "https://app.example.com"
    no = HTTP.request("OPTIONS", f"{ENDPOINT}/{BUCKET}/upload.bin", headers={
        "Origin": "https://evil.example.net", "Access-Control-Request-Method": "PUT"})
    assert no.status == 403 and b"AccessForbidden" in no.data
    s3.delete_bucket_cors(Bucket=BUCKET)
    assert error_code(lambda: s3.get_bucket_cors(Bucket=BUCKET)) == "NoSuchCORSConfiguration"


def post_form(post, data):
    fields = list(post["fields"].items()) + [("file", ("upload.bin", data))]
    body, ctype = urllib3.encode_multipart_formdata(fields)
    return HTTP.request("POST", post["url"], body=body, headers={"Content-Type": ctype}, redirect=False)


@test
def presigned_post_forms():
    # boto3's default client signs forms with SigV2; an s3v4 client, SigV4.
    v4 = client(signature_version="s3v4")
    for i, signer in enumerate([s3, v4]):
        p = signer.generate_presigned_post(BUCKET, f"forms/{i}", Conditions=[["content-length-range", 1, 9]])
        r = post_form(p, b"signed")
        assert r.status == 204, r.data
        assert s3.get_object(Bucket=BUCKET, Key=f"forms/{i}")["Body"].read() == b"signed"
    assert "x-amz-signature" in p["fields"], p["fields"]
    post = v4.generate_presigned_post(
        BUCKET, "forms/${filename}", Fields={"success_action_status": "201"},
        Conditions=[{"success_action_status": "201"}, ["content-length-range", 1, 1024],
                    ["starts-with", "$key", "forms/"]], ExpiresIn=300)
    r = post_form(post, b"form bytes")
    assert r.status == 201, r.data
    assert b"<Key>forms/upload.bin</Key>" in r.data
    assert s3.get_object(Bucket=BUCKET, Key="forms/upload.bin")["Body"].read() == b"form bytes"
    r = post_form(post, b"x" * 2000)
    assert r.status == 400 and b"EntityTooLarge" in r.data, r.data
    expired = v4.generate_presigned_post(BUCKET, "forms/late", ExpiresIn=-10)
    r = post_form(expired, b"late")
    assert r.status == 403 and b"AccessDenied" in r.data, r.data
    redirect = s3.generate_presigned_post(
        BUCKET, "forms/r", Fields={"success_action_redirect": "https://app.example.com/ok"},
        Conditions=[{"success_action_redirect": "https://app.example.com/ok"}])
    r = post_form(redirect, b"r")
    assert r.status == 303 and r.headers["Location"].startswith("https://app.example.com/ok?bucket="), r.headers
    assert error_code(lambda: s3.head_object(Bucket=BUCKET, Key="forms/late")) == "404"


@test
def storage_classes():
    s3.put_object(Bucket=BUCKET, Key="sc", Body=b"x", StorageClass="STANDARD")
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix="sc")["Contents"][0]
    assert listed["StorageClass"] == "STANDARD"
    # Cold classes are stored in the cold pool and read directly.
    s3.put_object(Bucket=BUCKET, Key="sc-cold", Body=b"cold bytes", StorageClass="DEEP_ARCHIVE")
    assert s3.head_object(Bucket=BUCKET, Key="sc-cold")["StorageClass"] == "DEEP_ARCHIVE"
    assert s3.get_object(Bucket=BUCKET, Key="sc-cold")["Body"].read() == b"cold bytes"
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix="sc-cold")["Contents"][0]
    assert listed["StorageClass"] == "DEEP_ARCHIVE"
    s3.copy_object(Bucket=BUCKET, Key="sc-cold", CopySource={"Bucket": BUCKET, "Key": "sc-cold"}, StorageClass="STANDARD")
    assert "StorageClass" not in s3.head_object(Bucket=BUCKET, Key="sc-cold")
    assert error_code(lambda: s3.put_object(Bucket=BUCKET, Key="sc2", Body=b"x", StorageClass="REDUCED_REDUNDANCY")) == "InvalidStorageClass"


@test
def deprecated_lifecycle_calls():
    # PutBucketLifecycle / GetBucketLifecycle are the pre-2018 names of the
    # same requests: a rule-level Prefix instead of a Filter.
    lc = f"{BUCKET}-lifecycle-v1"
    s3.create_bucket(Bucket=lc)
    rule = {"ID": "v1", "Prefix": "tmp/", "Status": "Enabled", "Expiration": {"Days": 1}}
    s3.put_bucket_lifecycle(Bucket=lc, LifecycleConfiguration={"Rules": [rule]})
    assert s3.get_bucket_lifecycle(Bucket=lc)["Rules"] == [rule]
    assert s3.get_bucket_lifecycle_configuration(Bucket=lc)["Rules"] == [rule]
    s3.put_object(Bucket=lc, Key="tmp/a", Body=b"x")
    s3.put_object(Bucket=lc, Key="keep/a", Body=b"x")
    # The rule is applied (a lifecycle day is 2 s in this suite).
    for _ in range(80):
        if error_code(lambda: s3.head_object(Bucket=lc, Key="tmp/a")) == "404":
            break
        time.sleep(0.5)
    assert error_code(lambda: s3.head_object(Bucket=lc, Key="tmp/a")) == "404"
    assert s3.head_object(Bucket=lc, Key="keep/a")["ContentLength"] == 1
    s3.delete_object(Bucket=lc, Key="keep/a")
    s3.delete_bucket_lifecycle(Bucket=lc)
    s3.delete_bucket(Bucket=lc)


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
