#!/usr/bin/env python3
"""The structure check: which crate may import which, and no import cycle
between the files of a crate.

For every crate of the workspace (and the `granary` binary in `src/`) it
reads each file under `src/`, resolves every `crate::`, `super::` and
`self::` path — in `use` trees and in code — to the file of the module it
names, and reports the cycles of that file graph (Tarjan's strongly
connected components). A module's `mod` declarations and its `pub use`
re-exports of its own descendants are its door, not imports: a path
through a re-export resolves to the file that defines the name.

A path may also begin with a child module the file declares (`mod x;` then
`x::f()`): that is how Rust resolves it, and a module that dispatches to its
children while they import its helpers is a cycle.

Crate rules (from each crate's Cargo.toml and its `use` of other crates):
erasure-set must not import placement, lifecycle or gateway; gateway must
not import erasure-set or disk-engine; placement must not import lifecycle
or the remote tier; lifecycle must not import the remote tier; the remote
tier must not import the gateway, lifecycle or the layers under placement;
the outbound signer and the background-work runner import no crate of the
workspace.

  scripts/check-structure.py              # report; exit 1 on a broken rule
  scripts/check-structure.py --self-test  # also: the fixture's known cycle is found

Cycles fail the check for the crates listed in ACYCLIC, which is every
crate of the workspace; a crate left out of it would only have its cycles
reported.
"""

import pathlib
import re
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
# Every crate of the workspace but the benches and the binary.
WORKSPACE_CRATES = {
    "disk-format",
    "disk-engine",
    "record-format",
    "pool-layout",
    "erasure-set",
    "placement",
    "lifecycle-rules",
    "lifecycle",
    "remote-tier",
    "request-signer",
    "background-work",
    "s3-wire",
    "gateway",
    "fuzz-targets",
}
# The pure crates (formats, rules and parsers, built without RocksDB for
# the fuzz targets) and the crates each may import.
PURE = {
    "disk-format": set(),
    "record-format": {"disk-format"},
    "pool-layout": {"disk-format"},
    "lifecycle-rules": set(),
    # placement only for the conversion of its errors into S3's, behind
    # the gateway's `placement` feature.
    "s3-wire": {"lifecycle-rules", "placement"},
    "request-signer": set(),
    "background-work": set(),
    # The fuzz targets' functions, replayed as tests: the pure crates only.
    "fuzz-targets": {"disk-format", "record-format", "pool-layout", "lifecycle-rules", "s3-wire", "request-signer"},
}
FORBIDDEN = {
    "erasure-set": {"placement", "lifecycle", "gateway", "s3-wire"},
    "gateway": {"erasure-set", "disk-engine", "disk-format", "record-format"},
    "placement": {"lifecycle", "remote-tier", "s3-wire"},
    "lifecycle": {"remote-tier", "s3-wire"},
    "remote-tier": {"gateway", "lifecycle", "erasure-set", "disk-engine", "disk-format", "record-format", "s3-wire"},
    **{name: WORKSPACE_CRATES - allowed - {name} for name, allowed in PURE.items()},
}
# Crates whose files must not import each other in a cycle.
ACYCLIC = {
    "granary",
    "disk-format",
    "record-format",
    "pool-layout",
    "lifecycle-rules",
    "s3-wire",
    "fuzz-targets",
    "disk-engine",
    "lifecycle",
    "granary-benches",
    "erasure-set",
    "remote-tier",
    "request-signer",
    "background-work",
    "placement",
    "gateway",
}


def strip(src):
    """The source without comments, string and char literals (kept as
    blanks of the same length, so offsets still match)."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', src[i:i + 10]) and not (i and (src[i - 1].isalnum() or src[i - 1] == "_")):
            hashes = re.match(r"r(#*)\"", src[i:]).group(1)
            end = src.find('"' + hashes, i + 2 + len(hashes))
            end = n if end < 0 else end + 1 + len(hashes)
            out.append(re.sub(r"[^\n]", " ", src[i:end]))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", src[i:j + 1]))
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", src[i:i + 4]) or re.match(r"'\\u\{[0-9a-fA-F]+\}'", src[i:i + 12]):
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", src[i:])
            out.append(" " * len(m.group(0)))
            i += len(m.group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def expand_use(tree):
    """The paths of a `use` tree: `a::{b, c::{d, e}}` -> a::b, a::c::d, a::c::e."""
    tree = re.sub(r"\s+", "", tree)
    m = re.match(r"^(.*?)\{(.*)\}$", tree)
    if not m:
        return [re.sub(r"as\w+$", "", tree) if "as" in tree.split("::")[-1] else tree]
    prefix, inner = m.group(1), m.group(2)
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    if cur:
        parts.append(cur)
    out = []
    for p in parts:
        for sub in expand_use(p):
            out.append(prefix + sub if sub != "self" else prefix.rstrip(":"))
    return out


class Crate:
    def __init__(self, name, src_dir):
        self.name = name
        self.files = {}  # module path (tuple) -> file
        for f in sorted(src_dir.rglob("*.rs")):
            rel = f.relative_to(src_dir).with_suffix("")
            parts = list(rel.parts)
            if parts in (["lib"], ["main"]):
                parts = []
            elif parts[-1] == "mod":
                parts = parts[:-1]
            elif len(parts) > 1 and parts[0] == "bin":
                continue
            self.files[tuple(parts)] = f
        self.reexports = {}  # (module, name) -> module that defines it
        self.sources = {m: strip(f.read_text()) for m, f in self.files.items()}
        # Each module's `pub use` paths: its door.
        self.doors = {
            m: {path for tree in re.findall(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", src)
                for path in expand_use(tree)}
            for m, src in self.sources.items()
        }
        for m, door in self.doors.items():
            for path in door:
                segs = path.split("::")
                target = self.absolute(m, segs[:-1], m)
                if target is not None and target[: len(m)] == m and target != m:
                    self.reexports[(m, segs[-1])] = self.module_of(target)

    def absolute(self, module, segs, at):
        """`segs` (a path as written in module `at`, inside file module
        `module`) as an absolute path, or None when it is not in this crate.
        A path may also start with a child module `at` declares."""
        if not segs:
            return None
        if at == module and (module + (segs[0],)) in self.files:
            return module + tuple(segs)
        if segs[0] == "crate":
            return tuple(segs[1:])
        if segs[0] in ("super", "self"):
            base = list(at)
            while segs and segs[0] in ("super", "self"):
                if segs[0] == "super":
                    base = base[:-1]
                segs = segs[1:]
            return tuple(base) + tuple(segs)
        return None

    def module_of(self, path):
        """The file module a path lands in: its longest prefix with a file,
        through re-exports."""
        path = tuple(path)
        for n in range(len(path), -1, -1):
            prefix = path[:n]
            if prefix in self.files:
                if n < len(path) and (prefix, path[n]) in self.reexports:
                    return self.reexports[(prefix, path[n])]
                return prefix
        return ()

    def edges(self):
        """{file module: {file module it imports}}."""
        graph = {m: set() for m in self.files}
        for m, src in self.sources.items():
            door = self.doors[m]
            # Inline modules (`mod tests { … }`) shift what `super::` means.
            inline = []
            for im in re.finditer(r"\bmod\s+(\w+)\s*\{", src):
                depth, j = 1, im.end()
                while j < len(src) and depth:
                    depth += src[j] == "{"
                    depth -= src[j] == "}"
                    j += 1
                inline.append((im.start(), j, im.group(1)))

            def at(pos):
                path = list(m)
                for start, end, name in inline:
                    if start <= pos < end:
                        path.append(name)
                return tuple(path)

            refs = []
            for u in re.finditer(r"\buse\s+([^;]+);", src):
                for path in expand_use(u.group(1)):
                    if path not in door:
                        refs.append((u.start(), path))
            code = re.sub(r"\buse\s+[^;]+;", lambda x: " " * len(x.group(0)), src)
            for r in re.finditer(r"(?<![\w:])(?:crate|super|self|[a-z_][a-z0-9_]*)(?:::\w+)+", code):
                refs.append((r.start(), r.group(0)))
            for pos, path in refs:
                segs = [s for s in path.split("::") if s]
                target = self.absolute(m, segs, at(pos))
                if target is None:
                    continue
                dest = self.module_of(target)
                if dest != m and dest in self.files:
                    graph[m].add(dest)
        return graph

    def crates_used(self):
        used = set()
        for src in self.sources.values():
            used.update(re.findall(r"\b([a-z_]+)::", src))
        return used

    def name_of(self, module):
        return str(self.files[module].relative_to(REPO))


def cycles(graph):
    """The strongly connected components of more than one node."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def workspace():
    """(crate name, its directory) for the binary and every member."""
    root = (REPO / "Cargo.toml").read_text()
    members = re.search(r"members\s*=\s*\[([^\]]*)\]", root).group(1)
    out = [("granary", REPO)]
    for d in re.findall(r'"([^"]+)"', members):
        toml = (REPO / d / "Cargo.toml").read_text()
        out.append((re.search(r'^name\s*=\s*"([^"]+)"', toml, re.M).group(1), REPO / d))
    return out


def dependencies(crate_dir):
    path = crate_dir / "Cargo.toml"
    toml = path.read_text() if path.exists() else ""
    deps = set()
    for section in re.findall(r"^\[(?:dev-|build-)?dependencies\]\n(.*?)(?=^\[|\Z)", toml, re.M | re.S):
        deps.update(re.findall(r"^([A-Za-z0-9_-]+)\s*[=.]", section, re.M))
    return deps


def check_crate(name, crate_dir, problems, report):
    crate = Crate(name, crate_dir / "src")
    for bad in sorted(FORBIDDEN.get(name, ())):
        if bad in dependencies(crate_dir) or bad.replace("-", "_") in crate.crates_used():
            problems.append(f"{name} imports {bad}")
    found = cycles(crate.edges())
    for comp in found:
        line = f"{name}: import cycle between {len(comp)} files: " + ", ".join(crate.name_of(m) for m in comp)
        (problems if name in ACYCLIC else report).append(line)
    return found


def self_test(problems):
    """The fixture crate has a cycle a -> inner -> b -> a through a `use`
    group, a path in code and `super::`, and an acyclic d that uses
    disk_engine; the cycle and the broken crate rule must be seen."""
    fixture = REPO / "scripts" / "fixtures" / "structure"
    crate = Crate("fixture", fixture / "src")
    found = cycles(crate.edges())
    names = [sorted(crate.name_of(m).rsplit("/", 1)[-1] for m in comp) for comp in found]
    if names != [["a.rs", "b.rs", "mod.rs"]]:
        problems.append(f"self-test: the fixture's cycle a.rs -> inner/mod.rs -> b.rs -> a.rs was not found as it is: {names}")
    # Its d.rs uses disk_engine: a broken rule were the fixture the gateway.
    found_rules, report = [], []
    check_crate("gateway", fixture, found_rules, report)
    if "gateway imports disk-engine" not in found_rules:
        problems.append(f"self-test: a gateway importing disk-engine passes the crate rules: {found_rules}")


def main():
    problems, report = [], []
    for name, crate_dir in workspace():
        check_crate(name, crate_dir, problems, report)
    if "--self-test" in sys.argv[1:]:
        self_test(problems)
    for line in report:
        print(f"structure (not enforced yet): {line}")
    for line in problems:
        print(f"structure: {line}", file=sys.stderr)
    print(f"structure: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
