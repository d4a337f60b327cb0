#!/usr/bin/env python3
"""Checks the rules of docs/ARCHITECTURE.md that no compiler checks:

- no import cycle of any length inside a crate: between files (a module and
  its own submodules aside: a parent declares its children, and they use its
  types), and between folders, each answering for everything inside it (a
  folder and the folders inside it aside);
- no error's message repeats its source: a `thiserror` variant whose
  `#[source]`/`#[from]` field (or field named `source`) is interpolated in
  its own `#[error(...)]` message, since the chain prints the source after
  it (`shared::chain`) and it would be said twice;
- no Rust source file is longer than MAX_LINES, and no function of the
  product code longer than MAX_FN_LINES, but the tables listed in TABLES
  (data, one row a line) and the functions listed in LONG_FNS (each with
  why it is still long).

A module is a file: `a/b.rs` or `a/b/mod.rs` is `a::b`. A reference is any
`crate::…`, `super::…` or `self::…` path outside comments and outside an
inline `#[cfg(test)] mod tests { … }`, brace groups of `use` expanded
(`use super::{a, b::c}` refers to `a` and `b::c`); it counts for the longest
prefix of it that is a module. Prints each broken rule and exits 1; prints
one line and exits 0 when all hold.
"""

import os
import re
import sys

CRATES = ["src", "shared/src", "bundler/src", "mirror/src", "fixture/src"]
MAX_LINES = 520
MAX_FN_LINES = 100
TABLES = {"fixture/src/packages/table.rs"}

# Functions still over MAX_FN_LINES ("file:name"), each to be split into
# named phases (#27 item 5). The check fails on any function not listed, and
# on a listed one that became short, so this list only shrinks.
LONG_FNS: set[str] = set()

# Folder cycles still to untangle, each with its way out; the check fails on
# any other cycle, and on a listed one that is gone (so this only shrinks).
# None is left: the request types (`spec::oci`, `spec::python`,
# `spec::extras`) live in `spec/`, which no source's folder is imported by
# (#27 item 8).
KNOWN_FOLDER_CYCLES = set()

HEAD = re.compile(r"\b(crate|super|self)::")
# A line comment, found past the literals that may hold `//` (a URL in a
# string is not a comment: cutting the line there would lose its braces).
_LITERAL_OR_COMMENT = re.compile(
    r"""(b?r(#*)".*?"\2)|(b?"(?:\\.|[^"\\])*")|('(?:\\.|[^'\\])')|(//[^\n]*)""", re.S
)


class _LineComments:
    """`COMMENT.sub("", text)`: the text without its line comments."""

    @staticmethod
    def sub(_repl, text):
        return _LITERAL_OR_COMMENT.sub(lambda m: "" if m.group(5) else m.group(0), text)


COMMENT = _LineComments()
BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
CHAR_BRACE = re.compile(r"'[{}]'")
FN = re.compile(r"^[ \t]*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(\w+)", re.M)


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


def use_paths(text, start):
    """The paths of the use tree that begins at text[start:] (after its
    `crate::`/`super::`/`self::`), braces expanded: a list of segment lists."""
    out = []

    def tree(i, prefix):
        segs = list(prefix)
        while True:
            m = re.compile(r"\s*(\w+|\{)").match(text, i)
            if not m:
                out.append(segs)
                return i
            if m.group(1) == "{":
                i = m.end()
                while True:
                    i = tree(i, segs)
                    m2 = re.compile(r"\s*([,}])").match(text, i)
                    if not m2:
                        return i
                    i = m2.end()
                    if m2.group(1) == "}":
                        return i
                    if re.compile(r"\s*\}").match(text, i):
                        return re.compile(r"\s*\}").match(text, i).end()
            segs.append(m.group(1))
            i = m.end()
            m2 = re.compile(r"\s*::").match(text, i)
            if not m2:
                out.append(segs)
                return i
            i = m2.end()

    tree(start, [])
    return out


def references(module, is_mod_file, text, known):
    """The modules `module`'s text refers to, parents and children aside."""
    inline_tests = text.find("#[cfg(test)]\nmod tests {")
    if inline_tests >= 0:
        text = text[:inline_tests]
    text = COMMENT.sub("", BLOCK_COMMENT.sub("", text))
    out = set()
    for m in HEAD.finditer(text):
        for parts in use_paths(text, m.end()):
            if m.group(1) == "crate":
                base = []
            elif m.group(1) == "self":
                base = list(module) if is_mod_file else list(module[:-1])
            else:
                base = list(module[:-1])
            # `super::super::x`, `super::self`
            while parts and parts[0] in ("super", "self"):
                if parts[0] == "super":
                    base = base[:-1]
                parts = parts[1:]
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


def cycles(edges):
    """The strongly connected components of more than one node (Tarjan)."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, on, stack, found = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        # Iterative, so deep graphs do not hit Python's recursion limit.
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            step = next(it, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = counter[0]
                    counter[0] += 1
                    stack.append(step)
                    on.add(step)
                    work.append((step, iter(sorted(graph[step]))))
                elif step in on:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def a_cycle(comp, edges):
    """One cycle through a component, for the message: a path back to its start."""
    nodes = set(comp)
    nxt = {}
    for a, b in sorted(edges):
        if a in nodes and b in nodes:
            nxt.setdefault(a, []).append(b)
    start = comp[0]
    # Breadth-first from start back to start.
    prev, queue, seen = {}, [start], {start}
    while queue:
        v = queue.pop(0)
        for w in nxt.get(v, []):
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w not in seen:
                seen.add(w)
                prev[w] = v
                queue.append(w)
    return comp


ERROR_ATTR = re.compile(r"#\[error\((.*?)\)\]\s*(?:#\[[^\]]*\]\s*)*(\w+)\s*([({,])", re.S)


def group(text, start):
    """The text inside the bracket at text[start] (a `(` or `{`)."""
    opener = text[start]
    close = {"(": ")", "{": "}"}[opener]
    depth = 0
    for i in range(start, len(text)):
        if text[i] == opener:
            depth += 1
        elif text[i] == close:
            depth -= 1
            if depth == 0:
                return text[start + 1 : i]
    return ""


def top_level_commas(text):
    """`text` split at the commas outside any bracket or string."""
    parts, depth, cur, quoted = [], 0, "", False
    for i, c in enumerate(text):
        if c == '"' and (i == 0 or text[i - 1] != "\\"):
            quoted = not quoted
        if not quoted:
            if c in "([{<":
                depth += 1
            elif c in ")]}>":
                depth -= 1
            elif c == "," and depth == 0:
                parts.append(cur)
                cur = ""
                continue
        cur += c
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def repeated_sources(path):
    """Variants of the file whose error message interpolates their source."""
    with open(path, encoding="utf-8") as f:
        text = COMMENT.sub("", f.read())
    out = []
    for m in ERROR_ATTR.finditer(text):
        args = top_level_commas(m.group(1))
        if not args or args[0] == "transparent" or m.group(3) == ",":
            continue
        fields = top_level_commas(group(text, m.end() - 1))
        source = None
        for i, field in enumerate(fields):
            name = str(i) if m.group(3) == "(" else field.split(":")[0].split()[-1]
            if "#[from]" in field or "#[source]" in field or name == "source":
                source = name
        if source is None:
            continue
        named = re.search(r"\{" + re.escape(source) + r"(:[^}]*)?\}", args[0])
        passed = any(a.lstrip(".") == source for a in args[1:])
        if named or passed:
            out.append(m.group(2))
    return out


def folder_of(module, is_mod_file):
    return module if is_mod_file else module[:-1]


def long_functions(path):
    """(name, lines) of each function in the file longer than MAX_FN_LINES."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    inline_tests = text.find("#[cfg(test)]\nmod tests {")
    if inline_tests >= 0:
        text = text[:inline_tests]
    clean = CHAR_BRACE.sub("''", COMMENT.sub("", text))
    out = []
    for m in FN.finditer(clean):
        open_at = clean.find("{", m.end())
        semi = clean.find(";", m.end())
        if open_at < 0 or (0 <= semi < open_at):
            continue  # a declaration without a body
        depth, i = 0, open_at
        while i < len(clean):
            c = clean[i]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        lines = clean.count("\n", m.start(), i) + 1
        if lines > MAX_FN_LINES:
            out.append((m.group(1), lines))
    return out


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    broken = []
    known_seen = set()
    for crate in CRATES:
        known = modules(crate)
        edges, folder_edges = set(), set()
        for module, path in known.items():
            if module and (module[-1] == "tests" or module[-1].endswith("_tests")):
                continue
            is_mod = os.path.basename(path) in ("mod.rs", "lib.rs", "main.rs")
            with open(path, encoding="utf-8") as f:
                for target in references(module, is_mod, f.read(), known):
                    edges.add((module, target))
                    t_mod = os.path.basename(known[target]) in ("mod.rs", "lib.rs", "main.rs")
                    fa, fb = folder_of(module, is_mod), folder_of(target, t_mod)
                    if fa[: len(fb)] != fb and fb[: len(fa)] != fa:
                        # Between the two sibling folders they sit under: a
                        # folder answers for everything inside it.
                        k = next(i for i in range(len(fa)) if fa[i] != fb[i])
                        folder_edges.add((fa[: k + 1], fb[: k + 1]))
        name = lambda m: "::".join(m) or "(crate root)"
        for comp in cycles(edges):
            loop = " -> ".join(name(m) for m in a_cycle(comp, edges))
            broken.append(f"{crate}: import cycle between files: {loop}")
        for comp in cycles(folder_edges):
            key = (crate, tuple(sorted(name(m) for m in comp)))
            if key in KNOWN_FOLDER_CYCLES:
                known_seen.add(key)
                continue
            loop = " -> ".join(name(m) + "/" for m in a_cycle(comp, folder_edges))
            broken.append(f"{crate}: import cycle between folders: {loop}")
    for crate in CRATES + ["tests"] + [c.replace("/src", "/tests") for c in CRATES[1:]]:
        for folder, _, files in os.walk(crate):
            for fname in files:
                path = os.path.join(folder, fname)
                if not fname.endswith(".rs") or path in TABLES:
                    continue
                with open(path, encoding="utf-8") as f:
                    n = sum(1 for _ in f)
                if n > MAX_LINES:
                    broken.append(f"{path}: {n} lines, more than {MAX_LINES}; split it by idea")
    seen_long = set()
    for crate in CRATES:
        for folder, _, files in os.walk(crate):
            for fname in files:
                path = os.path.join(folder, fname)
                test_code = fname == "tests.rs" or "tests" in path.split(os.sep)[:-1]
                if not fname.endswith(".rs") or path in TABLES or test_code:
                    continue
                for fn, n in long_functions(path):
                    key = f"{path}:{fn}"
                    seen_long.add(key)
                    if key not in LONG_FNS:
                        broken.append(
                            f"{key}: {n} lines, more than {MAX_FN_LINES}; split it into named steps"
                        )
    for crate in CRATES:
        for folder, _, files in os.walk(crate):
            for fname in files:
                if fname.endswith(".rs"):
                    path = os.path.join(folder, fname)
                    for variant in repeated_sources(path):
                        broken.append(
                            f"{path}: {variant}'s message repeats its source, which the \
error chain prints after it: say this layer only"
                        )
    for crate, folders in sorted(KNOWN_FOLDER_CYCLES - known_seen):
        broken.append(
            f"{crate}: folders {', '.join(folders)} no longer form a cycle: take them off "
            "KNOWN_FOLDER_CYCLES"
        )
    for key in sorted(LONG_FNS - seen_long):
        broken.append(f"{key}: is listed in LONG_FNS but no longer long: take it off the list")
    for line in broken:
        print(f"structure: {line}", file=sys.stderr)
    if broken:
        sys.exit(1)
    print(
        "structure: no import cycle between files, none between folders but "
        f"{len(KNOWN_FOLDER_CYCLES)} listed; no error message repeating its source; no file "
        f"over the line limit; no function over {MAX_FN_LINES} lines but {len(LONG_FNS)} listed"
    )


if __name__ == "__main__":
    main()
