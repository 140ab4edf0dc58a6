"""Model pulls with the clients inference servers and training jobs use.

Each subcommand pulls one safetensors model from an S3 endpoint with one
real client and prints one JSON line: bytes, seconds, MB/s and, where the
client hands out tensors or a stream, the time to the first tensor (the
8-byte length, the JSON header and the first tensor's bytes, from the
start of the pull). Nothing is written to disk: tensors are dropped, bytes
go to /dev/null.

    clients.py generate DIR SIZE_MIB      # a random safetensors model
    clients.py streamer s3://b/k [START]  # Run:ai Model Streamer
    clients.py s3torch s3://b/k           # s3torchconnector (AWS CRT)
    clients.py boto3 s3://b/k             # boto3's transfer manager

The endpoint and credentials come from AWS_ENDPOINT_URL,
AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; the streamer's own settings
(RUNAI_STREAMER_CONCURRENCY, RUNAI_STREAMER_CHUNK_BYTESIZE) pass through.
START (seconds since the epoch) makes the streamer wait, once imported,
until then: several processes started together pull at the same moment.

    clients.py summary RESULTS.jsonl      # the table of a run
"""

import json
import os
import struct
import sys
import time


def emit(client, nbytes, seconds, first_tensor=None, **extra):
    out = {
        "end": time.time(),
        "client": client,
        "bytes": nbytes,
        "seconds": round(seconds, 3),
        "mbps": round(nbytes / seconds / 1e6, 1),
        "first_tensor_s": None if first_tensor is None else round(first_tensor, 4),
    }
    out.update(extra)
    print(json.dumps(out), flush=True)


def split(url):
    assert url.startswith("s3://"), url
    bucket, _, key = url[5:].partition("/")
    return bucket, key


def generate(directory, size_mib):
    """A transformer-shaped fp16 model of about SIZE_MIB: an embedding and
    an output head, then layers of four attention and three MLP matrices
    and two norms, until the size is reached. Random bytes, so nothing
    compresses or dedups."""
    import numpy as np
    from safetensors.numpy import save_file

    rng = np.random.default_rng(48)
    hidden, mlp, vocab = 2048, 5632, 32000
    target = size_mib << 20
    tensors, total = {}, 0

    def add(name, shape):
        nonlocal total
        n = int(np.prod(shape))
        tensors[name] = rng.integers(0, 1 << 16, n, dtype=np.uint16).view(np.float16).reshape(shape)
        total += 2 * n

    add("model.embed_tokens.weight", (vocab, hidden))
    layer = 0
    while total + 4 * hidden * hidden * 2 + 3 * hidden * mlp * 2 + 2 * vocab * hidden < target:
        p = f"model.layers.{layer}."
        for m in ("q", "k", "v", "o"):
            add(p + f"self_attn.{m}_proj.weight", (hidden, hidden))
        for m in ("gate", "up", "down"):
            add(p + f"mlp.{m}_proj.weight", (mlp, hidden) if m != "down" else (hidden, mlp))
        add(p + "input_layernorm.weight", (hidden,))
        add(p + "post_attention_layernorm.weight", (hidden,))
        layer += 1
    add("model.norm.weight", (hidden,))
    add("lm_head.weight", (vocab, hidden))
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "model.safetensors")
    save_file(tensors, path)
    print(json.dumps({"path": path, "bytes": os.path.getsize(path), "tensors": len(tensors)}))


def streamer(url, start_at=None):
    from runai_model_streamer import SafetensorsStreamer

    if start_at is not None:
        time.sleep(max(0.0, float(start_at) - time.time()))
    start = time.perf_counter()
    first, nbytes, count = None, 0, 0
    with SafetensorsStreamer() as s:
        s.stream_file(url)
        for _name, tensor in s.get_tensors():
            if first is None:
                first = time.perf_counter() - start
            nbytes += tensor.numel() * tensor.element_size()
            count += 1
    seconds = time.perf_counter() - start
    emit(
        "streamer",
        nbytes,
        seconds,
        first,
        tensors=count,
        concurrency=os.environ.get("RUNAI_STREAMER_CONCURRENCY", "default"),
    )


def s3torch(url):
    from s3torchconnector import S3ClientConfig
    from s3torchconnector._s3client import S3Client

    bucket, key = split(url)
    client = S3Client(
        os.environ.get("AWS_REGION", "us-east-1"),
        endpoint=os.environ["AWS_ENDPOINT_URL"],
        s3client_config=S3ClientConfig(force_path_style=True),
    )
    start = time.perf_counter()
    reader = client.get_object(bucket, key)
    (header_len,) = struct.unpack("<Q", reader.read(8))
    header = json.loads(reader.read(header_len))
    first_end = min(v["data_offsets"][1] for k, v in header.items() if k != "__metadata__")
    nbytes = 8 + header_len
    while nbytes < 8 + header_len + first_end:
        nbytes += len(reader.read(8 + header_len + first_end - nbytes))
    first = time.perf_counter() - start
    while True:
        chunk = reader.read(8 << 20)
        if not chunk:
            break
        nbytes += len(chunk)
    emit("s3torchconnector", nbytes, time.perf_counter() - start, first)


def boto3_pull(url):
    import boto3
    from boto3.s3.transfer import TransferConfig

    bucket, key = split(url)
    s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
    start = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        s3.download_fileobj(bucket, key, sink, Config=TransferConfig())
    seconds = time.perf_counter() - start
    size = s3.head_object(Bucket=bucket, Key=key)["ContentLength"]
    emit("boto3", size, seconds)


def record(path, fields):
    """Adds FIELD=VALUE pairs to the JSON line on stdin, appends it to
    PATH and prints a line for people."""
    line = json.loads(sys.stdin.readline())
    if "mb_per_s" in line:  # the load generator's name
        line["mbps"] = line["mb_per_s"]
    for f in fields:
        k, _, v = f.partition("=")
        try:
            line[k] = int(v)
        except ValueError:
            line[k] = v
    with open(path, "a") as out:
        out.write(json.dumps(line) + "\n")
    text = f"{line.get('phase')} {line.get('client')} {line.get('server')}: {line.get('mbps')} MB/s"
    if line.get("first_tensor_s") is not None:
        text += f", first tensor {line['first_tensor_s']} s"
    if line.get("model_bytes"):
        text += f", disk read {line.get('disk_bytes', 0) / line['model_bytes']:.2f}x"
    if line.get("rss_mib"):
        text += f", peak RSS {line['rss_mib']} MiB"
    print(text, flush=True)


def ranks(start):
    """One line for several streamer processes that started at START: the
    bytes they pulled together over the time to the last one's end."""
    lines = [json.loads(x) for x in sys.stdin if x.strip()]
    nbytes = sum(x["bytes"] for x in lines)
    seconds = max(x["end"] for x in lines) - float(start)
    firsts = sorted(x["first_tensor_s"] for x in lines)
    emit("streamer", nbytes, seconds, firsts[-1], processes=len(lines))


def summary(path):
    """The run as a table: for each phase, client and server the median
    of its rounds, against the client's ceiling (the null server) and the
    disk (fio)."""
    from statistics import median

    rows = [json.loads(x) for x in open(path) if x.strip()]
    groups = {}
    for r in rows:
        groups.setdefault((r["phase"], r["client"], r["server"]), []).append(r)

    def med(rs, field):
        vals = [r[field] for r in rs if r.get(field) is not None]
        return median(vals) if vals else None

    def ratio(a, b):
        return f"{a / b:.2f}" if a and b else ""

    fio = med(groups.get(("limits", "fio", "disk"), []), "mbps")
    print()
    print("| phase | client | server | rounds | MB/s | / null | / fio | first tensor s | / null | disk read / bytes | peak RSS MiB |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (phase, client, server), rs in groups.items():
        mbps, ft = med(rs, "mbps"), med(rs, "first_tensor_s")
        if phase == "limits":
            print(f"| limits | fio O_DIRECT read | disk | {len(rs)} | {mbps:.0f} | | | | | | |")
            continue
        null = groups.get(("warm", client, "null"), [])
        n_mbps, n_ft = med(null, "mbps"), med(null, "first_tensor_s")
        disk = [r["disk_bytes"] / r["model_bytes"] for r in rs if r.get("model_bytes")]
        rss = max((r.get("rss_mib") or 0) for r in rs)
        print(
            f"| {phase} | {client} | {server} | {len(rs)} | {mbps:.0f} "
            f"| {ratio(mbps, n_mbps) if server != 'null' else ''} "
            f"| {ratio(mbps, fio) if phase != 'warm' else ''} "
            f"| {'' if ft is None else f'{ft:.2f}'} "
            f"| {ratio(ft, n_ft) if server != 'null' else ''} "
            f"| {f'{median(disk):.2f}' if disk and phase != 'warm' else ''} "
            f"| {rss or ''} |"
        )


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "generate":
        generate(args[0], int(args[1]))
    elif cmd == "streamer":
        streamer(*args)
    elif cmd == "s3torch":
        s3torch(args[0])
    elif cmd == "boto3":
        boto3_pull(args[0])
    elif cmd == "record":
        record(args[0], args[1:])
    elif cmd == "ranks":
        ranks(args[0])
    elif cmd == "summary":
        summary(args[0])
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
