#!/usr/bin/env python3
"""Checks two rules of docs/ARCHITECTURE.md that no compiler checks:

- inside a crate, no two modules import each other (a module and its own
  submodules aside: a parent declares its children, and they use its types);
- no Rust source file is longer than MAX_LINES, but the tables listed in
  TABLES (data, one row a line).

A module is a file: `a/b.rs` or `a/b/mod.rs` is `a::b`. A reference is any
`crate::…` or `super::…` path outside comments and outside an inline
`#[cfg(test)] mod tests { … }`; it counts for the longest prefix of it that
is a module. Prints each broken rule and exits 1; prints one line and exits
0 when both hold.
"""

import os
import re
import sys

CRATES = ["src", "shared/src", "bundler/src", "mirror/src", "fixture/src"]
MAX_LINES = 520
TABLES = {"fixture/src/packages/table.rs"}

PATH = re.compile(r"\b(crate|super)((?:::\w+)+)")
COMMENT = re.compile(r"//[^\n]*")


def modules(root):
    """Module path (a tuple) -> file, for every .rs file under root."""
    found = {}
    for folder, _, files in os.walk(root):
        for name in files:
            if not name.endswith(".rs"):
                continue
            parts = os.path.relpath(os.path.join(folder, name), root)[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib", "main"):
                parts = parts[:-1]
            found[tuple(parts)] = os.path.join(folder, name)
    return found


def references(module, text, known):
    """The modules `module`'s text refers to, parents and children aside."""
    inline_tests = text.find("#[cfg(test)]\nmod tests {")
    if inline_tests >= 0:
        text = text[:inline_tests]
    text = COMMENT.sub("", text)
    out = set()
    for m in PATH.finditer(text):
        parts = [p for p in m.group(2).split("::") if p]
        base = [] if m.group(1) == "crate" else list(module[:-1])
        while parts and parts[0] == "super":
            base, parts = base[:-1], parts[1:]
        full = base + parts
        target = next(
            (tuple(full[:k]) for k in range(len(full), 0, -1) if tuple(full[:k]) in known),
            None,
        )
        if target is None or target == module:
            continue
        if module[: len(target)] == target or target[: len(module)] == module:
            continue
        out.add(target)
    return out


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    broken = []
    for crate in CRATES:
        known = modules(crate)
        edges = set()
        for module, path in known.items():
            if module and module[-1] == "tests":
                continue
            with open(path, encoding="utf-8") as f:
                for target in references(module, f.read(), known):
                    edges.add((module, target))
        for a, b in sorted(edges):
            if (b, a) in edges and a < b:
                broken.append(f"{crate}: {'::'.join(a)} and {'::'.join(b)} import each other")
    for crate in CRATES + ["tests"] + [c.replace("/src", "/tests") for c in CRATES[1:]]:
        for folder, _, files in os.walk(crate):
            for name in files:
                path = os.path.join(folder, name)
                if not name.endswith(".rs") or path in TABLES:
                    continue
                with open(path, encoding="utf-8") as f:
                    n = sum(1 for _ in f)
                if n > MAX_LINES:
                    broken.append(f"{path}: {n} lines, more than {MAX_LINES}; split it by idea")
    for line in broken:
        print(f"structure: {line}", file=sys.stderr)
    if broken:
        sys.exit(1)
    print("structure: no import cycles, no file over the line limit")


if __name__ == "__main__":
    main()
