#!/usr/bin/env python3
"""Checks s3-compat-tests/README.md: every test a row names exists, and
every supported or partial row names at least one. Exits non-zero otherwise.
"""

import pathlib
import re
import sys

repo = pathlib.Path(__file__).resolve().parent.parent
table = (repo / "s3-compat-tests" / "README.md").read_text()
suites = {
    "boto3": (repo / "s3-compat-tests" / "boto3_suite.py").read_text(),
    "cli": (repo / "s3-compat-tests" / "awscli_suite.sh").read_text(),
    "rclone": (repo / "s3-compat-tests" / "rclone_suite.sh").read_text(),
}


def exists(ref):
    kind, _, name = ref.partition(":")
    if kind == "e2e":
        file, _, test = name.partition("::")
        path = repo / "tests" / "e2e" / f"{file}.rs"
        if not path.exists():
            return False
        # A test function, marked as a test right above it.
        return re.search(rf"#\[tokio::test\]\s*async fn {re.escape(test)}\(", path.read_text()) is not None
    if kind == "boto3":
        return re.search(rf"@test\s*\ndef {re.escape(name)}\(", suites["boto3"]) is not None
    if kind in ("cli", "rclone"):
        return re.search(rf'check "{re.escape(name)}"', suites[kind]) is not None or \
            re.search(rf'expect_error "{re.escape(name)}"', suites[kind]) is not None
    return False


problems = []
rows = 0
counts = {}
for line in table.splitlines():
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) != 4 or cells[1] not in ("Supported", "Partial", "Not supported"):
        continue
    rows += 1
    op, status, _, proof = cells
    counts[status] = counts.get(status, 0) + 1
    refs = re.findall(r"`([a-z0-9]+:[^`]+)`", proof)
    if status != "Not supported" and not refs:
        problems.append(f"{op}: {status} but names no test")
    for ref in refs:
        if not exists(ref):
            problems.append(f"{op}: test {ref} does not exist")

if rows < 100:
    problems.append(f"only {rows} rows found; is the table intact?")
for p in problems:
    print(f"compat table: {p}", file=sys.stderr)
print("compat table: " + ", ".join(f"{n} {s.lower()}" for s, n in sorted(counts.items())) + f" ({rows} rows)")
sys.exit(1 if problems else 0)
