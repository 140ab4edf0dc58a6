"""The header part of the compatibility suite: every row of HEADERS.md is
sent to its operation with boto3 and checked, and every operation the
compatibility table calls Not supported is sent and must answer 501
NotImplemented. Prints one PASS/FAIL line per check (with the rows it
covered) and exits non-zero on any failure.

A refused row (`refused <status> <Code>`) is sent with a value generated
from the model and must get exactly that error, while the same request
without the header succeeds and the object it would have changed is
unchanged. An honoured row names the checks below (`headers:<check>`) that
send the header and verify its effect; a row proven only by other suites'
tests is checked there. Needs GRANARY_ENDPOINT and AWS credentials in the
environment.
"""

import base64
import datetime
import hashlib
import json
import os
import sys
import traceback

import boto3
import botocore.httpchecksum as hc
from botocore import xform_name
from botocore.config import Config
from botocore.exceptions import ClientError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compat_tables as ct  # noqa: E402

ENDPOINT = os.environ["GRANARY_ENDPOINT"]
BUCKET = "compat-headers"
MODEL = ct.model()
s3 = boto3.client(
    "s3",
    endpoint_url=ENDPOINT,
    config=Config(
        s3={"addressing_style": "path"},
        retries={"max_attempts": 1},
        inject_host_prefix=False,
        # Checksums only where S3 requires one, so a check controls
        # exactly which checksum headers a request carries.
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
    ),
)

# Headers set on the next request just before it is signed: a value, or a
# function of the request's body. `None` removes a header boto3 added.
EXTRA = {}


def _body(request):
    body = request.body
    if hasattr(body, "read"):
        pos = body.tell()
        data = body.read()
        body.seek(pos)
        return data
    return body.encode() if isinstance(body, str) else (body or b"")


def _add_headers(request, **_):
    for name, value in EXTRA.items():
        if name in request.headers:
            del request.headers[name]
        if callable(value):
            value = value(_body(request))
        if value is not None:
            request.headers[name] = value


s3.meta.events.register("before-sign.s3", _add_headers)


def call(op, kwargs, headers=None):
    """Runs `op`; returns (response, None) or (None, (status, code))."""
    EXTRA.clear()
    EXTRA.update(headers or {})
    try:
        return getattr(s3, xform_name(op))(**kwargs), None
    except ClientError as e:
        return None, (e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"])
    finally:
        EXTRA.clear()


def ok(op, kwargs, headers=None):
    r, err = call(op, kwargs, headers)
    assert err is None, f"{op} failed: {err}"
    return r


def fails(op, kwargs, status, code, headers=None):
    _, err = call(op, kwargs, headers)
    # A HEAD answer has no body: its code is the status.
    assert err is not None and err[0] == status and err[1] in (code, str(status)), \
        f"{op}: wanted {status} {code}, got {err}"


def read(key, bucket=BUCKET):
    return s3.get_object(Bucket=bucket, Key=key)["Body"].read()


def b64(raw):
    return base64.b64encode(raw).decode()


CHECKSUMS = {
    "CRC32": hc.Crc32Checksum,
    "CRC32C": hc.CrtCrc32cChecksum,
    "CRC64NVME": hc.CrtCrc64NvmeChecksum,
    "SHA1": hc.Sha1Checksum,
    "SHA256": hc.Sha256Checksum,
}


def checksum(alg, data):
    c = CHECKSUMS[alg]()
    c.update(data)
    return c.digest()


# -- fixtures: for every supported or partial operation, arguments of a
# request that succeeds. Each call makes fresh state where the request
# consumes it. `KEPT[op]` names the object a refused request must leave
# unchanged.

DATA = b"granary header suite\n" * 8
# Every part but the last is at least 5 MiB.
BIG = bytes(range(256)) * (5 << 12)


def part_bodies(parts):
    return [BIG] * (parts - 1) + [DATA] if parts else []


def upload(key="mpu", parts=1, **create):
    """Creates an upload of `parts` parts; returns its id and the parts
    to complete it with."""
    uid = s3.create_multipart_upload(Bucket=BUCKET, Key=key, **create)["UploadId"]
    done = []
    for n, body in enumerate(part_bodies(parts), start=1):
        extra = {}
        if "ChecksumAlgorithm" in create:
            alg = create["ChecksumAlgorithm"]
            extra["Checksum" + alg] = b64(checksum(alg, body))
        r = s3.upload_part(Bucket=BUCKET, Key=key, UploadId=uid, PartNumber=n, Body=body, **extra)
        part = {"ETag": r["ETag"], "PartNumber": n}
        if "ChecksumAlgorithm" in create:
            part["Checksum" + create["ChecksumAlgorithm"]] = r["Checksum" + create["ChecksumAlgorithm"]]
        done.append(part)
    return uid, done


def fresh_bucket():
    fresh_bucket.n += 1
    return f"{BUCKET}-new-{fresh_bucket.n}"


fresh_bucket.n = 0
CORS = {"CORSRules": [{"AllowedMethods": ["GET"], "AllowedOrigins": ["*"]}]}
LIFECYCLE = {"Rules": [{"ID": "r", "Status": "Enabled", "Filter": {"Prefix": "tmp/"}, "Expiration": {"Days": 30}}]}
POLICY = json.dumps({"Version": "2012-10-17", "Statement": [{
    "Effect": "Deny", "Principal": "*", "Action": "s3:GetObject",
    "Resource": f"arn:aws:s3:::{BUCKET}/never/*"}]})
TAGS = {"TagSet": [{"Key": "team", "Value": "ml"}]}


def _complete():
    uid, parts = upload("kept")
    return {"Bucket": BUCKET, "Key": "kept", "UploadId": uid, "MultipartUpload": {"Parts": parts}}


def _abort():
    uid, _ = upload("mpu", parts=0)
    return {"Bucket": BUCKET, "Key": "mpu", "UploadId": uid}


def _list_parts():
    uid, _ = upload("mpu")
    return {"Bucket": BUCKET, "Key": "mpu", "UploadId": uid}


def _upload_part():
    uid, _ = upload("mpu", parts=0)
    return {"Bucket": BUCKET, "Key": "mpu", "UploadId": uid, "PartNumber": 1, "Body": DATA}


def _upload_part_copy():
    uid, _ = upload("mpu", parts=0)
    return {"Bucket": BUCKET, "Key": "mpu", "UploadId": uid, "PartNumber": 1,
            "CopySource": {"Bucket": BUCKET, "Key": "obj"}}


def _delete_bucket():
    name = fresh_bucket()
    s3.create_bucket(Bucket=name)
    return {"Bucket": name}


def _with(setup, args):
    def make():
        setup()
        return dict(args)
    return make


B = {"Bucket": BUCKET}
O = {"Bucket": BUCKET, "Key": "obj"}
FIXTURES = {
    "AbortMultipartUpload": _abort,
    "CompleteMultipartUpload": _complete,
    "CopyObject": lambda: {"Bucket": BUCKET, "Key": "kept", "CopySource": {"Bucket": BUCKET, "Key": "obj"}},
    "CreateBucket": lambda: {"Bucket": fresh_bucket()},
    "CreateMultipartUpload": lambda: {"Bucket": BUCKET, "Key": "mpu"},
    "DeleteBucket": _delete_bucket,
    "DeleteBucketCors": lambda: dict(B),
    "DeleteBucketLifecycle": lambda: dict(B),
    "DeleteBucketPolicy": lambda: dict(B),
    "DeleteBucketTagging": lambda: dict(B),
    "DeleteObject": lambda: {"Bucket": BUCKET, "Key": "kept"},
    "DeleteObjectTagging": lambda: dict(O),
    "DeleteObjects": lambda: {"Bucket": BUCKET, "Delete": {"Objects": [{"Key": "kept"}]}},
    "GetBucketAcl": lambda: dict(B),
    "GetBucketCors": _with(lambda: s3.put_bucket_cors(Bucket=BUCKET, CORSConfiguration=CORS), B),
    "GetBucketLifecycleConfiguration": _with(
        lambda: s3.put_bucket_lifecycle_configuration(Bucket=BUCKET, LifecycleConfiguration=LIFECYCLE), B),
    "GetBucketLifecycle": _with(
        lambda: s3.put_bucket_lifecycle_configuration(Bucket=BUCKET, LifecycleConfiguration=LIFECYCLE), B),
    "GetBucketLocation": lambda: dict(B),
    "GetBucketPolicy": _with(lambda: s3.put_bucket_policy(Bucket=BUCKET, Policy=POLICY), B),
    "GetBucketTagging": _with(lambda: s3.put_bucket_tagging(Bucket=BUCKET, Tagging=TAGS), B),
    "GetBucketVersioning": lambda: dict(B),
    "GetObject": lambda: dict(O),
    "GetObjectAcl": lambda: dict(O),
    "GetObjectAttributes": lambda: {**O, "ObjectAttributes": ["ETag", "ObjectSize"]},
    "GetObjectTagging": lambda: dict(O),
    "HeadBucket": lambda: dict(B),
    "HeadObject": lambda: dict(O),
    "ListMultipartUploads": lambda: dict(B),
    "ListObjects": lambda: dict(B),
    "ListObjectsV2": lambda: dict(B),
    "ListObjectVersions": lambda: dict(B),
    "ListParts": _list_parts,
    "PutBucketAcl": lambda: {**B, "ACL": "private"},
    "PutBucketCors": lambda: {**B, "CORSConfiguration": CORS},
    "PutBucketLifecycle": lambda: {**B, "LifecycleConfiguration": {"Rules": [
        {"ID": "v1", "Prefix": "tmp/", "Status": "Enabled", "Expiration": {"Days": 30}}]}},
    "PutBucketLifecycleConfiguration": lambda: {**B, "LifecycleConfiguration": LIFECYCLE},
    "PutBucketPolicy": lambda: {**B, "Policy": POLICY},
    "PutBucketTagging": lambda: {**B, "Tagging": TAGS},
    "PutBucketVersioning": lambda: {"Bucket": f"{BUCKET}-versioned",
                                    "VersioningConfiguration": {"Status": "Enabled"}},
    "PutObject": lambda: {"Bucket": BUCKET, "Key": "kept", "Body": b"replacement"},
    "PutObjectAcl": lambda: {**O, "ACL": "private"},
    "PutObjectTagging": lambda: {**O, "Tagging": TAGS},
    "RestoreObject": lambda: {"Bucket": BUCKET, "Key": "cold", "RestoreRequest": {"Days": 2}},
    "UploadPart": _upload_part,
    "UploadPartCopy": _upload_part_copy,
}
KEPT = {"CopyObject": "kept", "DeleteObject": "kept", "DeleteObjects": "kept", "PutObject": "kept",
        "CompleteMultipartUpload": "kept"}


def setup():
    for b in (BUCKET, f"{BUCKET}-versioned"):
        s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=BUCKET, Key="obj", Body=DATA)
    s3.put_object(Bucket=BUCKET, Key="cold", Body=DATA, StorageClass="GLACIER")


def reset_kept():
    s3.put_object(Bucket=BUCKET, Key="kept", Body=b"kept")


# -- values generated from the model's shapes


def sample(shape, everything=False):
    """A value of `shape` that passes boto3's validation: its first enum
    value, or the smallest value of its type; a structure gets its required
    members (or all of them with `everything`)."""
    t = shape.type_name
    if getattr(shape, "enum", None):
        return shape.enum[0]
    if t == "string":
        return "x" * max(1, shape.metadata.get("min", 1))
    if t in ("integer", "long"):
        return max(1, shape.metadata.get("min", 1))
    if t in ("float", "double"):
        return 1.0
    if t == "boolean":
        return True
    if t == "timestamp":
        return datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)
    if t == "blob":
        return b"x"
    if t == "list":
        return [sample(shape.member)]
    if t == "map":
        return {"k": sample(shape.value)}
    if t == "structure":
        names = shape.members if everything else shape.required_members
        if getattr(shape, "is_tagged_union", False):
            names = list(shape.members)[:1]
        return {name: sample(shape.members[name]) for name in names}
    raise ValueError(f"no sample for {t}")


def member_of(op, header):
    for member, name, shape in ct.model_headers(MODEL, op):
        if name.lower() == header.lower():
            return member, shape
    raise KeyError(f"{op} has no header {header}")


# -- checks. Each takes a row (or None for checks of whole operations) and
# raises when the header is not handled as the row says.

CHECKS = {}


def check(name):
    def register(fn):
        CHECKS[name] = fn
        return fn
    return register


def unknown(row):
    raise AssertionError(f"the check does not know {row.op} {row.header}")


@check("refused")
def refused(row):
    status, code = row.refused
    member, shape = member_of(row.op, row.header)
    reset_kept()
    kwargs = FIXTURES[row.op]()
    kwargs[member] = {"k": "v"} if row.header.endswith("*") else sample(shape)
    fails(row.op, kwargs, status, code)
    if row.op in KEPT:
        assert read(KEPT[row.op]) == b"kept", f"{row.op} changed {KEPT[row.op]}"
    # The same request without the header is accepted.
    ok(row.op, FIXTURES[row.op]())


OWNER = None
WRONG_OWNER = "111122223333"


@check("expected owner")
def expected_owner(row):
    member, _ = member_of(row.op, row.header)
    if row.header == "x-amz-source-expected-bucket-owner" and row.op not in ("CopyObject", "UploadPartCopy"):
        unknown(row)
    fails(row.op, {**FIXTURES[row.op](), member: WRONG_OWNER}, 403, "AccessDenied")
    ok(row.op, {**FIXTURES[row.op](), member: OWNER})


@check("request payer")
def request_payer(row):
    member, _ = member_of(row.op, row.header)
    ok(row.op, {**FIXTURES[row.op](), member: "requester"})


DOCUMENT_OPS = {"PutBucketAcl", "PutBucketCors", "PutBucketLifecycle", "PutBucketLifecycleConfiguration", "PutBucketPolicy",
                "PutBucketTagging", "PutBucketVersioning", "PutObjectAcl", "PutObjectTagging",
                "RestoreObject", "DeleteObjects", "PutObject", "UploadPart"}


def _no_checksums():
    """Headers removing the checksums boto3 adds on its own."""
    return {h: None for h in ["content-md5", "x-amz-sdk-checksum-algorithm"]
            + [f"x-amz-checksum-{a.lower()}" for a in CHECKSUMS]}


@check("content-md5")
def content_md5(row):
    if row.op not in DOCUMENT_OPS or row.header != "Content-MD5":
        unknown(row)
    wrong = b64(hashlib.md5(b"something else").digest())
    fails(row.op, FIXTURES[row.op](), 400, "BadDigest", {**_no_checksums(), "Content-MD5": wrong})
    fails(row.op, FIXTURES[row.op](), 400, "InvalidDigest", {**_no_checksums(), "Content-MD5": "not-base64!"})
    ok(row.op, FIXTURES[row.op](), {**_no_checksums(), "Content-MD5": lambda body: b64(hashlib.md5(body).digest())})


@check("sdk checksum algorithm")
def sdk_checksum_algorithm(row):
    if row.op not in DOCUMENT_OPS or row.header != "x-amz-sdk-checksum-algorithm":
        unknown(row)
    for alg in ("SHA256", "CRC32C"):
        h = f"x-amz-checksum-{alg.lower()}"
        right = {**_no_checksums(), "x-amz-sdk-checksum-algorithm": alg,
                 h: lambda body, alg=alg: b64(checksum(alg, body))}
        if row.op == "UploadPart":
            # A part's checksum is the upload's algorithm.
            uid, _ = upload("mpu", parts=0, ChecksumAlgorithm=alg)
            args = lambda: {"Bucket": BUCKET, "Key": "mpu", "UploadId": uid, "PartNumber": 1, "Body": DATA}  # noqa: E731
        else:
            args = FIXTURES[row.op]
        ok(row.op, args(), right)
        fails(row.op, args(), 400, "BadDigest", {**right, h: b64(checksum(alg, b"something else"))})
        # The algorithm named must be the one of the checksum sent.
        other = "SHA1" if alg == "SHA256" else "CRC32"
        fails(row.op, args(), 400, "InvalidRequest", {**right, "x-amz-sdk-checksum-algorithm": other})
        # And a checksum must be sent: the name alone is refused.
        fails(row.op, args(), 400, "InvalidRequest", {**right, h: None})


@check("checksum header")
def checksum_header(row):
    alg = row.header.removeprefix("x-amz-checksum-").upper()
    if alg not in CHECKSUMS:
        unknown(row)
    member, _ = member_of(row.op, row.header)
    if row.op == "PutObject":
        ok(row.op, {"Bucket": BUCKET, "Key": "ck", "Body": DATA, member: b64(checksum(alg, DATA))})
        head = s3.head_object(Bucket=BUCKET, Key="ck", ChecksumMode="ENABLED")
        assert head.get(member) == b64(checksum(alg, DATA)), head
        fails(row.op, {"Bucket": BUCKET, "Key": "ck", "Body": b"other", member: b64(checksum(alg, DATA))},
              400, "BadDigest")
        assert read("ck") == DATA
    elif row.op == "UploadPart":
        uid, _ = upload("mpu", parts=0, ChecksumAlgorithm=alg)
        args = {"Bucket": BUCKET, "Key": "mpu", "UploadId": uid, "PartNumber": 1}
        fails(row.op, {**args, "Body": b"other", member: b64(checksum(alg, DATA))}, 400, "BadDigest")
        r = ok(row.op, {**args, "Body": DATA, member: b64(checksum(alg, DATA))})
        assert r[member] == b64(checksum(alg, DATA)), r
    elif row.op == "CompleteMultipartUpload":
        full = alg.startswith("CRC")
        kind = "FULL_OBJECT" if full else "COMPOSITE"
        for good in (True, False):
            uid, parts = upload("ck-mpu", parts=2, ChecksumAlgorithm=alg, ChecksumType=kind)
            if full:
                value = b64(checksum(alg, BIG + DATA))
            else:
                value = b64(checksum(alg, checksum(alg, BIG) + checksum(alg, DATA))) + "-2"
            if not good:
                value = b64(checksum(alg, b"other")) + ("" if full else "-2")
            args = {"Bucket": BUCKET, "Key": "ck-mpu", "UploadId": uid, "MultipartUpload": {"Parts": parts},
                    member: value}
            if good:
                ok(row.op, args)
                attrs = s3.get_object_attributes(Bucket=BUCKET, Key="ck-mpu", ObjectAttributes=["Checksum"])
                assert attrs["Checksum"][member] == value and attrs["Checksum"]["ChecksumType"] == kind, attrs
            else:
                fails(row.op, args, 400, "BadDigest")
        # A checksum in another algorithm than the upload's.
        uid, parts = upload("ck-mpu", parts=1, ChecksumAlgorithm="CRC32" if alg != "CRC32" else "CRC32C")
        fails(row.op, {"Bucket": BUCKET, "Key": "ck-mpu", "UploadId": uid, "MultipartUpload": {"Parts": parts},
                       member: b64(checksum(alg, DATA))}, 400, "InvalidRequest")
    else:
        unknown(row)


# Stored with the object and answered by HEAD: (parameter value, how HEAD
# reports it).
STORED = {
    "Cache-Control": ("max-age=7", lambda h: h.get("CacheControl")),
    "Content-Disposition": ('attachment; filename="w.bin"', lambda h: h.get("ContentDisposition")),
    "Content-Encoding": ("identity", lambda h: h.get("ContentEncoding")),
    "Content-Language": ("de-CH", lambda h: h.get("ContentLanguage")),
    "Content-Type": ("application/x-weights", lambda h: h.get("ContentType")),
    "Expires": (datetime.datetime(2031, 5, 6, 7, 8, 9, tzinfo=datetime.timezone.utc),
                lambda h: h.get("Expires")),
    "x-amz-meta-*": ({"shard": "0007"}, lambda h: h.get("Metadata")),
    "x-amz-storage-class": ("STANDARD_IA", lambda h: h.get("StorageClass")),
    "x-amz-tagging": ("team=ml&stage=dev", lambda h: "&".join(
        f"{t['Key']}={t['Value']}" for t in s3.get_object_tagging(Bucket=BUCKET, Key="meta")["TagSet"])),
    "x-amz-checksum-algorithm": ("SHA1", lambda h: "SHA1" if "ChecksumSHA1" in h else None),
    "x-amz-checksum-type": ("COMPOSITE", lambda h: h.get("ChecksumType")),
}


def _written(op, member, value, **extra):
    """Writes object `meta` with op (a multipart upload is completed)."""
    args = {"Bucket": BUCKET, "Key": "meta", member: value, **extra}
    if op == "PutObject":
        ok(op, {**args, "Body": DATA})
    elif op == "CopyObject":
        ok(op, {**args, "CopySource": {"Bucket": BUCKET, "Key": "obj"}})
    elif op == "CreateMultipartUpload":
        if member == "ChecksumType":
            args["ChecksumAlgorithm"] = "SHA256"
        uid = ok(op, args)["UploadId"]
        alg = args.get("ChecksumAlgorithm")
        part = {"Bucket": BUCKET, "Key": "meta", "UploadId": uid, "PartNumber": 1, "Body": DATA}
        if alg:
            part["Checksum" + alg] = b64(checksum(alg, DATA))
        r = s3.upload_part(**part)
        done = {"ETag": r["ETag"], "PartNumber": 1}
        if alg:
            done["Checksum" + alg] = r["Checksum" + alg]
        s3.complete_multipart_upload(Bucket=BUCKET, Key="meta", UploadId=uid, MultipartUpload={"Parts": [done]})
    else:
        raise AssertionError(f"no write for {op}")
    return s3.head_object(Bucket=BUCKET, Key="meta", ChecksumMode="ENABLED")


@check("stored")
def stored(row):
    if row.header not in STORED or row.op not in ("PutObject", "CopyObject", "CreateMultipartUpload"):
        unknown(row)
    member, _ = member_of(row.op, row.header)
    value, reported = STORED[row.header]
    extra = {}
    if row.op == "CopyObject":
        extra = {"TaggingDirective": "REPLACE"} if row.header == "x-amz-tagging" else {"MetadataDirective": "REPLACE"}
    head = _written(row.op, member, value, **extra)
    got = reported(head)
    want = "team=ml&stage=dev" if row.header == "x-amz-tagging" else value
    assert got == want, f"{row.op} {row.header}: stored {value!r}, HEAD reports {got!r}"


@check("directives")
def directives(row):
    if row.op != "CopyObject" or row.header not in ("x-amz-metadata-directive", "x-amz-tagging-directive"):
        unknown(row)
    s3.put_object(Bucket=BUCKET, Key="src", Body=DATA, Metadata={"from": "source"}, Tagging="from=source")
    src = {"Bucket": BUCKET, "Key": "src"}
    if row.header == "x-amz-metadata-directive":
        ok(row.op, {"Bucket": BUCKET, "Key": "dst", "CopySource": src, "MetadataDirective": "COPY",
                    "Metadata": {"from": "request"}})
        assert s3.head_object(Bucket=BUCKET, Key="dst")["Metadata"] == {"from": "source"}
        ok(row.op, {"Bucket": BUCKET, "Key": "dst", "CopySource": src, "MetadataDirective": "REPLACE",
                    "Metadata": {"from": "request"}})
        assert s3.head_object(Bucket=BUCKET, Key="dst")["Metadata"] == {"from": "request"}
    else:
        tags = lambda: s3.get_object_tagging(Bucket=BUCKET, Key="dst")["TagSet"]  # noqa: E731
        ok(row.op, {"Bucket": BUCKET, "Key": "dst", "CopySource": src, "TaggingDirective": "COPY"})
        assert tags() == [{"Key": "from", "Value": "source"}]
        ok(row.op, {"Bucket": BUCKET, "Key": "dst", "CopySource": src, "TaggingDirective": "REPLACE",
                    "Tagging": "from=request"})
        assert tags() == [{"Key": "from", "Value": "request"}]


@check("acl")
def acl(row):
    if row.header != "x-amz-acl":
        unknown(row)
    reset_kept()
    ok(row.op, {**FIXTURES[row.op](), "ACL": "private"})
    reset_kept()
    fails(row.op, {**FIXTURES[row.op](), "ACL": "public-read"}, 501, "NotImplemented")
    if row.op in KEPT:
        assert read(KEPT[row.op]) == b"kept"


def _etag(key="obj"):
    return s3.head_object(Bucket=BUCKET, Key=key)["ETag"]


PAST = datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc)
FUTURE = datetime.datetime(2099, 1, 1, tzinfo=datetime.timezone.utc)


@check("conditions")
def conditions(row):
    member, _ = member_of(row.op, row.header)
    h, op = row.header, row.op
    if op in ("GetObject", "HeadObject"):
        cases = {"If-Match": ('"0000"', _etag(), 412), "If-None-Match": (_etag(), '"0000"', 304),
                 "If-Modified-Since": (FUTURE, PAST, 304), "If-Unmodified-Since": (PAST, FUTURE, 412)}
        failing, passing, status = cases[h]
        fails(op, {**O, member: failing}, status, "PreconditionFailed" if status == 412 else "NotModified")
        ok(op, {**O, member: passing})
        return
    if op in ("CopyObject", "UploadPartCopy") and h.startswith("x-amz-copy-source-if-"):
        cases = {"x-amz-copy-source-if-match": ('"0000"', _etag()),
                 "x-amz-copy-source-if-none-match": (_etag(), '"0000"'),
                 "x-amz-copy-source-if-modified-since": (FUTURE, PAST),
                 "x-amz-copy-source-if-unmodified-since": (PAST, FUTURE)}
        failing, passing = cases[h]
        reset_kept()
        fails(op, {**FIXTURES[op](), member: failing}, 412, "PreconditionFailed")
        if op in KEPT:
            assert read(KEPT[op]) == b"kept"
        ok(op, {**FIXTURES[op](), member: passing})
        return
    if op in ("PutObject", "CopyObject", "CompleteMultipartUpload", "DeleteObject"):
        if h == "If-Match":
            reset_kept()
            fails(op, {**FIXTURES[op](), member: '"0000"'}, 412, "PreconditionFailed")
            assert read("kept") == b"kept"
            ok(op, {**FIXTURES[op](), member: _etag("kept")})
            return
        if h == "If-None-Match":
            reset_kept()
            fails(op, {**FIXTURES[op](), member: "*"}, 412, "PreconditionFailed")
            assert read("kept") == b"kept"
            s3.delete_object(Bucket=BUCKET, Key="kept")
            ok(op, {**FIXTURES[op](), member: "*"})
            return
        if op == "DeleteObject" and h in ("x-amz-if-match-size", "x-amz-if-match-last-modified-time"):
            reset_kept()
            head = s3.head_object(Bucket=BUCKET, Key="kept")
            failing, passing = {"x-amz-if-match-size": (head["ContentLength"] + 1, head["ContentLength"]),
                                "x-amz-if-match-last-modified-time": (PAST, head["LastModified"])}[h]
            fails(op, {**FIXTURES[op](), member: failing}, 412, "PreconditionFailed")
            assert read("kept") == b"kept"
            ok(op, {**FIXTURES[op](), member: passing})
            return
    unknown(row)


@check("range")
def range_(row):
    if row.header != "Range" or row.op not in ("GetObject", "HeadObject"):
        unknown(row)
    r = ok(row.op, {**O, "Range": "bytes=2-5"})
    assert r["ContentLength"] == 4 and r["ContentRange"] == f"bytes 2-5/{len(DATA)}", r
    if row.op == "GetObject":
        assert r["Body"].read() == DATA[2:6]
    fails(row.op, {**O, "Range": f"bytes={len(DATA) + 10}-"}, 416, "InvalidRange")


@check("copy source")
def copy_source(row):
    if row.op == "CopyObject" and row.header == "x-amz-copy-source":
        ok(row.op, FIXTURES[row.op]())
        assert read("kept") == DATA
        fails(row.op, {**FIXTURES[row.op](), "CopySource": {"Bucket": BUCKET, "Key": "missing"}}, 404, "NoSuchKey")
    elif row.op == "UploadPartCopy" and row.header in ("x-amz-copy-source", "x-amz-copy-source-range"):
        args = FIXTURES[row.op]()
        ok(row.op, {**args, "CopySourceRange": "bytes=3-9"})
        parts = s3.list_parts(Bucket=BUCKET, Key="mpu", UploadId=args["UploadId"])["Parts"]
        assert parts[0]["Size"] == 7, parts
        # Past the end of the source: S3 answers InvalidArgument here.
        fails(row.op, {**args, "CopySourceRange": f"bytes=0-{len(DATA)}"}, 400, "InvalidArgument")
    else:
        unknown(row)


@check("checksum mode")
def checksum_mode(row):
    if row.op not in ("GetObject", "HeadObject"):
        unknown(row)
    s3.put_object(Bucket=BUCKET, Key="cm", Body=DATA, ChecksumSHA256=b64(checksum("SHA256", DATA)))
    assert "ChecksumSHA256" not in ok(row.op, {"Bucket": BUCKET, "Key": "cm"})
    r = ok(row.op, {"Bucket": BUCKET, "Key": "cm", "ChecksumMode": "ENABLED"})
    assert r["ChecksumSHA256"] == b64(checksum("SHA256", DATA)), r


@check("attributes")
def attributes(row):
    if row.op != "GetObjectAttributes":
        unknown(row)
    uid, parts = upload("attrs", parts=3, ChecksumAlgorithm="CRC32")
    s3.complete_multipart_upload(Bucket=BUCKET, Key="attrs", UploadId=uid, MultipartUpload={"Parts": parts})
    args = {"Bucket": BUCKET, "Key": "attrs"}
    if row.header == "x-amz-object-attributes":
        r = ok(row.op, {**args, "ObjectAttributes": ["ObjectSize"]})
        assert r["ObjectSize"] == 2 * len(BIG) + len(DATA) and "ETag" not in r, r
        fails(row.op, {**args, "ObjectAttributes": ["Nonsense"]}, 400, "InvalidArgument")
    elif row.header in ("x-amz-max-parts", "x-amz-part-number-marker"):
        r = ok(row.op, {**args, "ObjectAttributes": ["ObjectParts"], "MaxParts": 1, "PartNumberMarker": 1})
        op = r["ObjectParts"]
        assert [p["PartNumber"] for p in op["Parts"]] == [2] and op["IsTruncated"], op
    else:
        unknown(row)


@check("restore status")
def restore_status(row):
    if row.header != "x-amz-optional-object-attributes":
        unknown(row)
    key = "Versions" if row.op == "ListObjectVersions" else "Contents"
    plain = ok(row.op, {**B, "Prefix": "cold"})[key]
    assert plain and all("RestoreStatus" not in o for o in plain), plain
    asked = ok(row.op, {**B, "Prefix": "cold", "OptionalObjectAttributes": ["RestoreStatus"]})[key]
    assert asked[0]["RestoreStatus"]["IsRestoreInProgress"] is False, asked


@check("object size")
def object_size(row):
    if row.op != "CompleteMultipartUpload" or row.header != "x-amz-mp-object-size":
        unknown(row)
    fails(row.op, {**FIXTURES[row.op](), "MpuObjectSize": len(DATA) + 1}, 400, "InvalidRequest")
    ok(row.op, {**FIXTURES[row.op](), "MpuObjectSize": len(DATA)})


@check("transition minimum size")
def transition_minimum_size(row):
    if row.op != "PutBucketLifecycleConfiguration":
        unknown(row)
    for value in ("varies_by_storage_class", "all_storage_classes_128K"):
        r = ok(row.op, {**FIXTURES[row.op](), "TransitionDefaultMinimumObjectSize": value})
        assert r["TransitionDefaultMinimumObjectSize"] == value, r
        got = s3.get_bucket_lifecycle_configuration(Bucket=BUCKET)
        assert got["TransitionDefaultMinimumObjectSize"] == value, got


@check("ownership")
def ownership(row):
    if row.op != "CreateBucket" or row.header != "x-amz-object-ownership":
        unknown(row)
    ok(row.op, {**FIXTURES[row.op](), "ObjectOwnership": "BucketOwnerEnforced"})
    for other in ("BucketOwnerPreferred", "ObjectWriter"):
        fails(row.op, {**FIXTURES[row.op](), "ObjectOwnership": other}, 501, "NotImplemented")


@check("object lock flag")
def object_lock_flag(row):
    if row.op != "CreateBucket" or row.header != "x-amz-bucket-object-lock-enabled":
        unknown(row)
    ok(row.op, {**FIXTURES[row.op](), "ObjectLockEnabledForBucket": False})
    fails(row.op, {**FIXTURES[row.op](), "ObjectLockEnabledForBucket": True}, 501, "NotImplemented")


@check("content length")
def content_length(row):
    if row.op not in ("PutObject", "UploadPart"):
        unknown(row)
    # A body shorter than its Content-Length: once the server has waited
    # its --body-timeout for the rest, the request fails and nothing is
    # stored.
    reset_kept()
    args = FIXTURES[row.op]()
    fails(row.op, {**args, "ContentLength": len(args["Body"]) + 5}, 400, "RequestTimeout")
    assert read("kept") == b"kept"
    ok(row.op, {**FIXTURES[row.op](), "ContentLength": len(args["Body"])})


@check("not supported")
def not_supported(row):
    """Every operation the table calls Not supported answers 501
    NotImplemented: with its required members only, and with every
    member of its input (its headers too)."""
    ops = [op for op, (status, _) in ct.operations().items() if status == "Not supported"]
    assert len(ops) > 50, ops
    bad = []
    for op in ops:
        shape = MODEL.operation_model(op).input_shape
        for everything in (False, True):
            kwargs = sample(shape, everything) if shape else {}
            for name in ("Bucket", "Key"):
                if name in kwargs:
                    kwargs[name] = {"Bucket": BUCKET, "Key": "obj"}[name]
            try:
                fails(op, kwargs, 501, "NotImplemented")
            except Exception as e:
                bad.append(f"{e} ({'all members' if everything else 'required members'})")
    assert read("obj") == DATA
    assert not bad, "\n".join(bad)
    return ops


def main():
    global OWNER
    setup()
    OWNER = s3.list_buckets()["Owner"]["ID"]
    failed = 0
    by_check = {}
    for row in ct.header_rows():
        names = [r.split(":", 1)[1] for r in row.refs() if r.startswith("headers:")]
        for name in names:
            by_check.setdefault(name, []).append(row)
    for name, rows in by_check.items():
        bad = []
        for row in rows:
            try:
                CHECKS[name](row)
            except Exception:
                bad.append((row, traceback.format_exc(limit=3)))
        if bad:
            failed += 1
            print(f"FAIL headers {name} ({len(bad)} of {len(rows)} rows)")
            for row, tb in bad:
                print(f"    {row.op} {row.header}:\n        " + tb.strip().replace("\n", "\n        "))
        else:
            print(f"PASS headers {name} ({len(rows)} rows)")
    try:
        ops = not_supported(None)
        print(f"PASS headers not supported operations answer NotImplemented ({len(ops)} operations)")
    except Exception:
        failed += 1
        print("FAIL headers not supported operations answer NotImplemented")
        print("    " + traceback.format_exc().replace("\n", "\n    "))
    sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
