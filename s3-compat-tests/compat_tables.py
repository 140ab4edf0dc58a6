"""The compatibility tables and the S3 model they are checked against.

`README.md` holds one row per S3 operation (its status and the tests that
prove it); `HEADERS.md` one row per (operation, header) pair of the pinned
botocore S3 model for every operation the first table calls Supported or
Partial, each honoured (its effect checked by the tests the row names) or
refused (with the exact error the row names, which `header_suite.py` sends
and checks). Used by `scripts/check-compat-table.py` (the static checks)
and `header_suite.py` (the live ones).
"""

import functools
import pathlib
import re

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent
STATUSES = ("Supported", "Partial", "Not supported")
# A row of HEADERS.md: `refused <status> <Code>` or `honoured`.
REFUSED = re.compile(r"^refused (\d{3}) ([A-Za-z]+)$")


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def operations():
    """{operation: (status, proof cell)} from README.md, in table order."""
    ops = {}
    for line in (HERE / "README.md").read_text().splitlines():
        c = cells(line)
        if len(c) == 4 and c[1] in STATUSES:
            ops[c[0]] = (c[1], c[3])
    return ops


class HeaderRow:
    def __init__(self, op, header, handling, notes, proof):
        self.op, self.header, self.handling, self.notes, self.proof = op, header, handling, notes, proof

    @property
    def refused(self):
        """(status, code) for a refused header, None for an honoured one."""
        m = REFUSED.match(self.handling)
        return (int(m.group(1)), m.group(2)) if m else None

    def refs(self):
        return refs(self.proof)


def header_rows():
    """The rows of HEADERS.md, in order."""
    rows = []
    for line in (HERE / "HEADERS.md").read_text().splitlines():
        c = cells(line)
        if len(c) == 5 and (c[2] == "honoured" or REFUSED.match(c[2])):
            rows.append(HeaderRow(*c))
    return rows


def refs(proof):
    """The tests a proof cell names (`kind:name`)."""
    return re.findall(r"`([a-z0-9]+:[^`]+)`", proof)


def model():
    """The pinned botocore's S3 service model."""
    import botocore.session

    return botocore.session.get_session().get_service_model("s3")


def model_headers(service_model, op):
    """[(member name, header name, shape)] of an operation's input members
    sent as headers; a header map (`location: headers`) is named by its
    prefix followed by `*`."""
    shape = service_model.operation_model(op).input_shape
    out = []
    for name, member in (shape.members.items() if shape else []):
        loc = member.serialization.get("location")
        if loc == "header":
            out.append((name, member.serialization["name"], member))
        elif loc == "headers":
            out.append((name, member.serialization["name"] + "*", member))
    return out


SUITES = {
    "boto3": HERE / "boto3_suite.py",
    "cli": HERE / "awscli_suite.sh",
    "rclone": HERE / "rclone_suite.sh",
    "headers": HERE / "header_suite.py",
}


@functools.lru_cache(maxsize=None)
def test_source(ref):
    """The source of the test `ref` names (`e2e:<file>::<fn>`,
    `boto3:<fn>`, `cli:<check>`, `rclone:<check>`, `headers:<check>`),
    or None when there is no such test."""
    kind, _, name = ref.partition(":")
    if kind == "e2e":
        file, _, fn = name.partition("::")
        path = REPO / "tests" / "e2e" / f"{file}.rs"
        if not path.exists():
            return None
        src = path.read_text()
        m = re.search(rf"#\[tokio::test[^\]]*\]\s*(?:#\[[^\]]*\]\s*)*async fn {re.escape(fn)}\(", src)
        if m is None:
            return None
        end = src.find("\n}\n", m.end())
        return src[m.start(): end if end >= 0 else len(src)]
    path = SUITES.get(kind)
    if path is None or not path.exists():
        return None
    src = path.read_text()
    # A Python suite's test: its decorated function, up to the next
    # decorator, function or top-level assignment.
    decorated = {"boto3": (rf"@test\s*\ndef {re.escape(name)}\(", "@test"),
                 "headers": (rf'@check\("{re.escape(name)}"\)\s*\ndef ', "@check")}
    if kind in decorated:
        start, decorator = decorated[kind]
        m = re.search(start, src)
        if m is None:
            return None
        nxt = re.search(rf"\n(?:{decorator}|def |[A-Za-z_]+ *=)", src[m.end():])
        return src[m.start(): m.end() + (nxt.start() if nxt else len(src))]
    # A shell check: its line, with the lines since the previous check
    # (which set up what it checks).
    lines = src.splitlines()
    for i, line in enumerate(lines):
        if re.match(rf'\s*(check|expect_error) "{re.escape(name)}"', line):
            j = i
            while j > 0 and not re.match(r'\s*(check|expect_error) "', lines[j - 1]):
                j -= 1
            return "\n".join(lines[j: i + 1])
    return None


def spellings(member, header):
    """How a test may spell a header: its name, the model member's name
    (boto3), in snake case (the Rust SDK) and in kebab case (the CLI)."""
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", member).lower()
    return {header.rstrip("*").lower(), member.lower(), snake, snake.replace("_", "-")}


def mentions(source, member, header):
    low = source.lower()
    return any(s in low for s in spellings(member, header))
