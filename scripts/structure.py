#!/usr/bin/env python3
"""Checks the rules of docs/ARCHITECTURE.md that no compiler checks:

- no import cycle of any length inside a crate: between files (a child's
  use of its parent aside: a parent declares its children, and they use its
  types; a parent's use of a child counts), and between rooms, a room being
  a folder, which answers for everything inside it, or a file beside
  folders (`fsutil.rs` is a room beside `store/`; an edge between a folder
  and what it holds is no edge between rooms);
- no error's message repeats its source: a `thiserror` variant whose
  `#[source]`/`#[from]` field (or field named `source`) is interpolated in
  its own `#[error(...)]` message, since the chain prints the source after
  it (`shared::chain`) and it would be said twice;
- no Rust source file is longer than MAX_LINES, and no function of the
  product code longer than MAX_FN_LINES, but the tables listed in TABLES
  (data, one row a line) and the functions listed in LONG_FNS (each with
  why it is still long).

A module is a file: `a/b.rs` or `a/b/mod.rs` is `a::b`. A reference is any
`crate::…`, `super::…` or `self::…` path, or a path starting at one of the
module's own children by its bare name (`plan::…`), outside comments and
outside an inline `#[cfg(test)] mod tests { … }`, brace groups of `use`
expanded (`use super::{a, b::c}` refers to `a` and `b::c`); it counts for
the longest prefix of it that is a module. Every run prints the ten longest
files and functions (and how many functions sit within ten lines of the
limit), then each broken rule, and exits 1 on any; else one line, exit 0.
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

# Cycles still to untangle, each with its way out, as (crate, the rooms of
# the cycle sorted, as printed); the check fails on any other cycle, and on
# a listed one that is gone (so these lists only shrink).
KNOWN_FOLDER_CYCLES: set[tuple[str, tuple[str, ...]]] = set()

# Cycles between files still to untangle, as above.
KNOWN_FILE_CYCLES: set[tuple[str, tuple[str, ...]]] = set()

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
    # A module declared with `#[path = "x.rs"]` (a path relative to the
    # declaring file's folder) is its declarer's child, whatever its name.
    for module, path in list(found.items()):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for m in PATH_MOD.finditer(text):
            target = os.path.normpath(os.path.join(os.path.dirname(path), m.group(1)))
            for other, p in list(found.items()):
                if os.path.normpath(p) == target and other != module + (m.group(2),):
                    del found[other]
                    found[module + (m.group(2),)] = p
    return found


PATH_MOD = re.compile(r'#\[path\s*=\s*"([^"]+)"\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;')


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


def references(module, text, known):
    """The modules `module`'s text refers to, its ancestors aside: a child
    uses its parent's types, and a parent declares its children, but what a
    parent uses of a child is an edge like any other (`plan::plan(..)` in
    `create/mod.rs` leads to `create/plan.rs`), so a circle that leaves a
    folder through a child and comes back to the parent is seen."""
    inline_tests = text.find("#[cfg(test)]\nmod tests {")
    if inline_tests >= 0:
        text = text[:inline_tests]
    text = COMMENT.sub("", BLOCK_COMMENT.sub("", text))
    # A path starting at one of the module's own children, by its bare
    # name (`plan::x`, `use plan::{..}`), as the 2018 edition allows; the
    # name must not follow `::` (then it is part of another path).
    children = sorted(m[-1] for m in known if len(m) == len(module) + 1 and m[:-1] == module)
    starts = [(m.start(), m.end(), m.group(1)) for m in HEAD.finditer(text)]
    if children:
        bare = re.compile(r"(?<![\w:])(" + "|".join(map(re.escape, children)) + r")::")
        starts += [(m.start(), m.start(), "child") for m in bare.finditer(text)]
    out = set()
    for _, at, head in starts:
        for parts in use_paths(text, at):
            if head == "crate":
                base = []
            elif head in ("self", "child"):
                # `self` is the file's own module, whether `a/mod.rs` or
                # `a.rs` (whose children are in `a/`).
                base = list(module)
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
            if module[: len(target)] == target:
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


def sides(a, b):
    """The two rooms an edge between modules `a` and `b` runs between: the
    folders or files just under the folder holding both, a file being a
    sibling of the folders beside it (`fsutil.rs` of `store/` at a crate's
    root); None when one holds the other (a folder answers for everything
    inside it)."""
    if a[: len(b)] == b or b[: len(a)] == a:
        return None
    k = next(i for i in range(min(len(a), len(b))) if a[i] != b[i])
    return a[: k + 1], b[: k + 1]


def function_lengths(path):
    """(name, lines) of each function in the file with a body."""
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
        out.append((m.group(1), clean.count("\n", m.start(), i) + 1))
    return out


def rust_files(roots, product_only=False):
    """Every .rs file under `roots` but the TABLES; with `product_only`,
    test code (a `tests.rs` or `*_tests.rs`, anything under a `tests/`
    folder) aside."""
    for root in roots:
        for folder, _, files in os.walk(root):
            for fname in sorted(files):
                path = os.path.join(folder, fname)
                test_code = (
                    fname == "tests.rs"
                    or fname.endswith("_tests.rs")
                    or "tests" in path.split(os.sep)[:-1]
                )
                if fname.endswith(".rs") and path not in TABLES:
                    if not (product_only and test_code):
                        yield path


def room_name(crate, known, module):
    """A module as the room it is: `store/` for a folder, `fsutil.rs` for a file."""
    if not module:
        return "(crate root)"
    path = os.path.relpath(known[module], crate)
    if os.path.basename(path) == "mod.rs":
        return os.path.dirname(path) + "/"
    return path


def crate_cycles(crate):
    """The cycles in one crate: (kind, its rooms sorted, one loop through
    them as text) for each, kind "files" or "folders"."""
    known = modules(crate)
    edges, room_edges = set(), set()
    for module, path in known.items():
        if module and (module[-1] == "tests" or module[-1].endswith("_tests")):
            continue
        with open(path, encoding="utf-8") as f:
            for target in references(module, f.read(), known):
                edges.add((module, target))
                rooms = sides(module, target)
                if rooms is not None:
                    room_edges.add(rooms)
    out = []
    for kind, graph in (("files", edges), ("folders", room_edges)):
        for comp in cycles(graph):
            rooms = tuple(sorted(room_name(crate, known, m) for m in comp))
            loop = " -> ".join(room_name(crate, known, m) for m in a_cycle(comp, graph))
            out.append((kind, rooms, loop))
    return out


def check_cycles(broken):
    """Cycles between files and between rooms in each crate, but the known."""
    listed = {"files": KNOWN_FILE_CYCLES, "folders": KNOWN_FOLDER_CYCLES}
    seen = set()
    for crate in CRATES:
        for kind, rooms, loop in crate_cycles(crate):
            if (crate, rooms) in listed[kind]:
                seen.add((kind, (crate, rooms)))
            else:
                broken.append(f"{crate}: import cycle between {kind}: {loop}")
    for kind, keys in listed.items():
        for key in sorted(keys):
            if (kind, key) not in seen:
                broken.append(
                    f"{key[0]}: {', '.join(key[1])} no longer form a cycle between {kind}: "
                    f"take them off KNOWN_{kind.upper()[:-1]}_CYCLES"
                )


def check_lengths(broken):
    """Files over MAX_LINES and functions over MAX_FN_LINES (but LONG_FNS);
    the lengths of all, longest first, for the run's own report."""
    files, fns = [], []
    for path in rust_files(CRATES + ["tests"] + [c.replace("/src", "/tests") for c in CRATES[1:]]):
        with open(path, encoding="utf-8") as f:
            n = sum(1 for _ in f)
        files.append((n, path))
        if n > MAX_LINES:
            broken.append(f"{path}: {n} lines, more than {MAX_LINES}; split it by idea")
    seen_long = set()
    for path in rust_files(CRATES, product_only=True):
        for fn, n in function_lengths(path):
            key = f"{path}:{fn}"
            fns.append((n, key))
            if n <= MAX_FN_LINES:
                continue
            seen_long.add(key)
            if key not in LONG_FNS:
                broken.append(f"{key}: {n} lines, more than {MAX_FN_LINES}; split it into named steps")
    for key in sorted(LONG_FNS - seen_long):
        broken.append(f"{key}: is listed in LONG_FNS but no longer long: take it off the list")
    return sorted(files, reverse=True), sorted(fns, reverse=True)


def check_error_sources(broken):
    """Errors whose message repeats their source."""
    for path in rust_files(CRATES):
        for variant in repeated_sources(path):
            broken.append(
                f"{path}: {variant}'s message repeats its source, which the error chain "
                "prints after it: say this layer only"
            )


def print_longest(files, fns, n=10):
    """The `n` longest files and functions, so what creeps up on a limit
    is seen on every run, not only once it passes it."""
    bunched = sum(1 for lines, _ in fns if MAX_FN_LINES - 10 <= lines <= MAX_FN_LINES)
    print(f"structure: the {n} longest files (limit {MAX_LINES}):")
    for lines, path in files[:n]:
        print(f"  {lines:5} {path}")
    print(
        f"structure: the {n} longest functions (limit {MAX_FN_LINES}; "
        f"{bunched} at {MAX_FN_LINES - 10}-{MAX_FN_LINES}):"
    )
    for lines, key in fns[:n]:
        print(f"  {lines:5} {key}")


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    broken = []
    check_cycles(broken)
    files, fns = check_lengths(broken)
    check_error_sources(broken)
    print_longest(files, fns)
    sys.stdout.flush()
    for line in broken:
        print(f"structure: {line}", file=sys.stderr)
    if broken:
        sys.exit(1)
    print(
        f"structure: no import cycle between files but {len(KNOWN_FILE_CYCLES)} listed, none "
        f"between folders but {len(KNOWN_FOLDER_CYCLES)} listed; no error message repeating "
        f"its source; no file over the line limit; no function over {MAX_FN_LINES} lines but "
        f"{len(LONG_FNS)} listed"
    )


if __name__ == "__main__":
    main()
