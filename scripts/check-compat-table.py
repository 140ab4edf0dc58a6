#!/usr/bin/env python3
"""Checks the compatibility tables in s3-compat-tests/ (exits non-zero on a
problem):

- README.md: every operation of the pinned botocore S3 model has a row;
  every test a row names exists; every supported or partial row names one.
- HEADERS.md: every (operation, header) pair of the model's supported and
  partial operations has exactly one row and every row is in the model;
  every row names a test that exists, a refused row `headers:refused`, and
  a test of another suite mentions the header it proves.
- The summary counts of both tables are the ones their rows give;
  `--write` rewrites them.

`--self-test` also checks that tables with a missing, an unknown or an
unsent row fail the header check.

Run with a Python that has the pinned botocore (the compatibility suite's
virtualenv, `s3-compat-tests/venv.sh`).
"""

import collections
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "s3-compat-tests"))
import compat_tables as ct  # noqa: E402

write = "--write" in sys.argv[1:]
problems = []
model = ct.model()
ops = ct.operations()

# The operations table.
counts = collections.Counter()
for op, (status, proof) in ops.items():
    if op.startswith("POST Object"):
        continue
    counts[status] += 1
    if op not in model.operation_names:
        problems.append(f"{op}: not an operation of the S3 model")
    refs = ct.refs(proof)
    if status != "Not supported" and not refs:
        problems.append(f"{op}: {status} but names no test")
    for ref in refs:
        if ct.test_source(ref) is None:
            problems.append(f"{op}: test {ref} does not exist")
for op in model.operation_names:
    if op not in ops:
        problems.append(f"{op}: an operation of the S3 model with no row")
if len(ops) < 100:
    problems.append(f"only {len(ops)} operation rows found; is the table intact?")

def header_problems(rows):
    """What is wrong with HEADERS.md's rows against the model."""
    problems = []
    wanted = {}
    for op, (status, _) in ops.items():
        if status in ("Supported", "Partial") and op in model.operation_names:
            for member, header, _ in ct.model_headers(model, op):
                wanted[(op, header)] = member
    seen = set()
    for row in rows:
        pair = (row.op, row.header)
        if pair in seen:
            problems.append(f"headers: {row.op} {row.header} has two rows")
        seen.add(pair)
        if pair not in wanted:
            problems.append(f"headers: {row.op} {row.header} is not a header of the model's {row.op}"
                            " (or the operation is not supported)")
            continue
        refs = row.refs()
        if not refs:
            problems.append(f"headers: {row.op} {row.header} names no test")
        if row.refused and "headers:refused" not in refs:
            problems.append(f"headers: {row.op} {row.header} is refused but not sent by `headers:refused`")
        if not row.refused and "headers:refused" in refs:
            problems.append(f"headers: {row.op} {row.header} is honoured but names `headers:refused`")
        for ref in refs:
            src = ct.test_source(ref)
            if src is None:
                problems.append(f"headers: {row.op} {row.header}: test {ref} does not exist")
            elif not ref.startswith("headers:") and not ct.mentions(src, wanted[pair], row.header):
                problems.append(f"headers: {row.op} {row.header}: test {ref} does not mention the header")
    for pair in sorted(set(wanted) - seen):
        problems.append(f"headers: {pair[0]} {pair[1]} is a header of the model with no row")
    return problems


# The headers table.
rows = ct.header_rows()
problems += header_problems(rows)
if "--self-test" in sys.argv[1:]:
    # The check itself: a header of the model without its row, a row the
    # model does not have, and a refused row that is not sent must fail it.
    import copy

    fake = copy.copy(rows[0])
    fake.header = "x-amz-not-in-the-model"
    honoured = next(r for r in rows if not r.refused)
    unsent = copy.copy(next(r for r in rows if r.refused))
    unsent.proof = f"`{honoured.refs()[0]}`"
    for broken, wanted_problem in (
        (rows[1:], "with no row"),
        (rows + [fake], "is not a header of the model"),
        ([unsent if r.op == unsent.op and r.header == unsent.header else r for r in rows], "not sent by"),
    ):
        found = header_problems(broken)
        if not any(wanted_problem in p for p in found):
            problems.append(f"self-test: a table missing its {wanted_problem!r} problem passes the check")
    print("compat table: self-test done")

# The summaries.
import botocore  # noqa: E402

refused = collections.Counter(row.refused for row in rows if row.refused)
ops_summary = (
    f"Counts (generated from the rows): {sum(counts.values())} S3 API operations — "
    f"{counts['Supported']} supported, {counts['Partial']} partial, {counts['Not supported']} not supported — "
    "plus POST Object (supported)."
)
headers_summary = (
    f"Summary (generated from the rows): {len(rows)} headers of "
    f"{len({r.op for r in rows})} operations in botocore {botocore.__version__}'s S3 model — "
    f"{sum(1 for r in rows if not r.refused)} honoured, {sum(refused.values())} refused ("
    + ", ".join(f"{n} with {s} {c}" for (s, c), n in sorted(refused.items(), key=lambda x: -x[1]))
    + ")."
)
for name, pattern, summary in (
    ("README.md", r"^Counts \(generated from the rows\):.*$|^SUMMARY$", ops_summary),
    ("HEADERS.md", r"^Summary \(generated from the rows\):.*$|^SUMMARY$", headers_summary),
):
    path = ct.HERE / name
    text = path.read_text()
    found = re.search(pattern, text, re.M)
    if found is None:
        problems.append(f"{name}: no summary line")
    elif found.group(0) != summary:
        if write:
            path.write_text(text[: found.start()] + summary + text[found.end():])
        else:
            problems.append(f"{name}: the summary is not the rows' (run scripts/check-compat-table.py --write):"
                            f"\n    {summary}")

for p in problems:
    print(f"compat table: {p}", file=sys.stderr)
print(f"compat table: {ops_summary}")
print(f"compat table: {headers_summary}")
sys.exit(1 if problems else 0)
