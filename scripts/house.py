#!/usr/bin/env python3
"""The house plan's figures, counted from the source as text: rooms, import arrows that run
back up or in a circle, long functions and raw spec reads.

    scripts/house.py            # a summary of the whole workspace; exit 1 on a break
    scripts/house.py --detail   # and every long function, circle and raw read by name

Exits 1, naming each, on a break of the house rules: a circle, a back-arrow, an arrow between
the two executors (executors/local and executors/cluster), or a function over 80 lines outside
tests. `.ci/run` runs it. HOUSE_ROOT points it at another checkout (its self-test plants one).

How it counts (the rules the figures in docs/architecture.md and the closing notes name):
- A room is a folder of a crate's src/, and each .rs file a module in it. Test code is left
  out: files named tests.rs, folders named tests or fixtures, `#[cfg(test)]` modules, and the
  files of modules declared under `#[cfg(test)]`.
- An arrow is a `use crate::...`, `use super::...` or `crate::`/`super::` path in code (not in a
  comment, so not a doc link), from the module that writes it to the module the path names (the
  longest prefix that is a file). A name a module re-exports (`pub use spec::{...}` in
  resource/mod.rs) is followed to the module that defines it, so that importing through a
  re-export hides no arrow.
- A circle is a set of modules that reach each other through arrows (a strongly connected
  component of more than one module); counted among files, and among the rooms of each folder
  (arrows between its direct sub-rooms).
- A back-arrow runs from a wing of the operator to a wing above it, in the order
  resource < engine < run_metrics < frontends < executors < the door (main.rs, cli.rs,
  lib.rs); run_metrics is the module the operator and `benchmatrix metrics` share.
- A long function is one whose body (from the `fn` line to its closing brace) runs over 80
  lines, outside test code.
- A raw spec read is a line of code (not a comment) in executors/ or frontends/, outside tests,
  that reads a `BenchmarkRun`'s spec itself: `run.spec` (a field of it, or the whole spec taken
  as `&run.spec`) or `.run().spec`, rather than a `ValidatedRun`'s.
All of the workspace's crates are counted, the `target` crate (a folder named target/) too.
"""
import os
import re
import sys
from collections import defaultdict

ROOT = os.environ.get("HOUSE_ROOT") or os.path.normpath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
CRATES = ["quota", "podsecurity", "target", "loadgen", "operator", "tests"]
WINGS = ["resource", "engine", "run_metrics", "frontends", "executors"]
LONG = 80
RAW_READ = re.compile(r"\brun\.spec\b(?!\()|\.run\(\)\.spec\b")


def rust_files(crate):
    src = os.path.join(ROOT, crate, "src")
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = sorted(d for d in dirnames if d not in ("tests", "fixtures"))
        for f in sorted(filenames):
            if f.endswith(".rs") and f != "tests.rs":
                yield os.path.join(dirpath, f)


def strip_tests(text):
    """The text without `#[cfg(test)]` items (a module or a function and its braces)."""
    out, i = [], 0
    lines = text.split("\n")
    while i < len(lines):
        if lines[i].strip() == "#[cfg(test)]":
            depth, started, j = 0, False, i + 1
            while j < len(lines):
                depth += lines[j].count("{") - lines[j].count("}")
                started = started or "{" in lines[j]
                if started and depth <= 0 or (not started and lines[j].rstrip().endswith(";")):
                    break
                j += 1
            out.extend([""] * (j - i + 1))
            i = j + 1
            continue
        out.append(lines[i])
        i += 1
    return "\n".join(out)


TEST_MOD = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;")


def without_test_modules(files):
    """`files` without the modules declared under `#[cfg(test)]` (`#[cfg(test)] mod corpus;`),
    and everything below them: test code kept in files of its own."""
    test_roots = set()
    for module, path in files.items():
        for m in TEST_MOD.finditer(open(path, encoding="utf-8").read()):
            test_roots.add(tuple(module) + (m.group(1),))
    return {m: p for m, p in files.items()
            if not any(m[:len(r)] == r for r in test_roots)}


def module_path(crate, path):
    rel = os.path.relpath(path, os.path.join(ROOT, crate, "src"))[:-3].split(os.sep)
    if rel[-1] == "mod":
        rel = rel[:-1]
    if rel in (["lib"], ["main"]):
        return ()
    return tuple(rel)


LITERAL = re.compile(r"b?'(?:[^'\\\n]|\\.)'|\"(?:[^\"\\]|\\.)*\"|//[^\n]*", re.S)


def blank_literals(text):
    """`text` with string and character literals and comments blanked, keeping every newline,
    so that a brace inside one (`b'{'`, `"}"`) is not counted as code."""
    return LITERAL.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def long_functions(text):
    found = []
    lines = blank_literals(text).split("\n")
    fn = re.compile(r"^(\s*)(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)")
    for i, line in enumerate(lines):
        m = fn.match(line)
        if not m:
            continue
        depth, started = 0, False
        for j in range(i, len(lines)):
            depth += lines[j].count("{") - lines[j].count("}")
            if "{" in lines[j]:
                started = True
            if not started and lines[j].rstrip().endswith(";"):
                break
            if started and depth <= 0:
                if j - i + 1 > LONG:
                    found.append((m.group(7), i + 1, j - i + 1))
                break
    return found


PATH = re.compile(r"\b(crate|super)((?:::(?:\w+|\{[^;]*?\}))+)")


def code_only(text):
    """`text` without comments (doc comments' links are not imports) or string literals."""
    text = re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', text)
    return re.sub(r"//[^\n]*", "", text)


REEXPORT = re.compile(r"\bpub(?:\([^)]*\))?\s+use\s+((?:crate|super|self|\w+)(?:::(?:\w+|\{[^;]*?\}))+)\s*;")


def resolve(full, modules, reexports):
    """The module a path (a list of names from the crate root) names: the longest prefix that
    is a module, and where the name after it is a re-export of that module's, the module it
    re-exports from."""
    for _ in range(8):
        for k in range(len(full), 0, -1):
            if tuple(full[:k]) in modules:
                module = tuple(full[:k])
                break
        else:
            return None
        item = full[k] if k < len(full) else None
        source = reexports.get((module, item))
        if source is None:
            return module
        full = list(source) + full[k:]
    return module


def absolute(kind, tail, here):
    """The names of a `crate::`/`super::`/`self::` path (`tail` after the first word) from
    the crate root, as written in module `here`."""
    parts = [p for p in tail.split("::") if p]
    if kind == "crate":
        return parts
    if kind == "self":
        return list(here) + parts
    base = list(here)[:-1]
    while parts and parts[0] == "super":
        base, parts = base[:-1], parts[1:]
    return base + parts


def reexports_of(texts, modules):
    """(module, name) -> the module a `pub use` of that module re-exports `name` from."""
    out = {}
    for here, text in texts.items():
        for m in REEXPORT.finditer(code_only(text)):
            path = m.group(1)
            first, _, rest = path.partition("::")
            for tail in expand("::" + rest):
                if first in ("crate", "super", "self"):
                    full = absolute(first, tail, here)
                elif tuple(list(here) + [first]) in modules:
                    full = list(here) + [first] + [p for p in tail.split("::") if p]
                else:
                    continue  # another crate's item
                if len(full) < 2:
                    continue
                source = tuple(full[:-1])
                if any(tuple(full[:k]) in modules for k in range(len(full) - 1, 0, -1)):
                    out[(here, full[-1])] = source
    return out


def targets(text, here, modules, reexports):
    """The modules the paths in `text` name, from module `here`."""
    out = set()
    for m in PATH.finditer(code_only(text)):
        for tail in expand(m.group(2)):
            full = absolute(m.group(1), tail, here)
            module = resolve(full, modules, reexports)
            if module is not None and module != here:
                out.add(module)
    return out


def expand(tail):
    """`::a::{b, c::{d}}` -> ["::a::b", "::a::c::d"]."""
    m = re.match(r"^((?:::\w+)*)::\{(.*)\}$", tail, re.S)
    if not m:
        return [tail]
    head, inner = m.group(1), m.group(2)
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    parts.append(cur)
    out = []
    for p in parts:
        p = p.strip().split(" as ")[0].strip()
        if not p or p == "self":
            out.append(head)
            continue
        out.extend(head + t for t in expand("::" + p))
    return out


def sccs(graph):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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
    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def back_or_all(graph):
    """Every arrow of `graph`, as (from, to) pairs."""
    return [(a, b) for a, bs in graph.items() for b in bs]


def failing(*found):
    """True when any of the lists of breaks is non-empty: they are listed even without --detail."""
    return any(found)


def wing(module):
    return WINGS.index(module[0]) if module and module[0] in WINGS else len(WINGS)


def main():
    detail = "--detail" in sys.argv
    totals = defaultdict(int)
    for crate in CRATES:
        files = {module_path(crate, p): p for p in rust_files(crate)}
        if not files:
            continue
        files = without_test_modules(files)
        texts = {m: strip_tests(open(p, encoding="utf-8").read()) for m, p in files.items()}
        reexports = reexports_of(texts, files)
        graph = {m: targets(t, m, files, reexports) for m, t in texts.items()}
        rooms = defaultdict(int)
        for m in files:
            rooms[m[:-1]] += 1
        file_circles = sccs(graph)
        room_circles = []
        for room in rooms:
            depth = len(room)
            sub = defaultdict(set)
            for a, bs in graph.items():
                for b in bs:
                    if a[:depth] == room == b[:depth] and len(a) > depth and len(b) > depth:
                        if a[depth] != b[depth]:
                            sub[a[depth]].add(b[depth])
            for c in sccs(sub):
                room_circles.append(("/".join(room) or "src", c))
        back = [(a, b) for a, bs in graph.items() for b in bs
                if crate == "operator" and wing(b) > wing(a)]
        # The two executors drive the same engine each its own way: neither may lean on the
        # other, or a change to one silently changes the other.
        between = [(a, b) for a, b in back_or_all(graph)
                   if crate == "operator" and len(a) > 1 and len(b) > 1
                   and a[0] == b[0] == "executors" and a[1] != b[1]]
        longs = [(files[m], name, line, n) for m, t in texts.items()
                 for name, line, n in long_functions(t)]
        raw = []
        if crate == "operator":
            for m, t in texts.items():
                if m and m[0] in ("executors", "frontends"):
                    for i, line in enumerate(code_only(t).split("\n")):
                        if RAW_READ.search(line):
                            raw.append((files[m], i + 1, line.strip()))
        lines = sum(len(open(p, encoding="utf-8").read().split("\n")) for p in files.values())
        print(f"{crate}: {len(files)} files, {len(rooms)} rooms, {lines} lines; "
              f"circles: {len(file_circles)} among files, {len(room_circles)} among rooms; "
              f"back-arrows: {len(back)}; arrows between executors: {len(between)}; "
              f"functions over {LONG} lines: {len(longs)}; "
              f"raw spec reads: {len(raw)}")
        biggest = max(rooms.items(), key=lambda kv: kv[1])
        print(f"  most files in one room: {'/'.join(biggest[0]) or 'src'} ({biggest[1]})")
        totals["circles"] += len(file_circles) + len(room_circles)
        totals["back"] += len(back)
        totals["between"] += len(between)
        totals["long"] += len(longs)
        totals["raw"] += len(raw)
        if detail or failing(file_circles, room_circles, back, between, longs):
            for c in file_circles:
                print("  circle:", " <-> ".join("::".join(m) for m in c))
            for room, c in room_circles:
                print(f"  circle in {room}:", " <-> ".join(c))
            for a, b in back:
                print("  back-arrow:", "::".join(a), "->", "::".join(b))
            for a, b in between:
                print("  between executors:", "::".join(a), "->", "::".join(b))
            for path, name, line, n in sorted(longs, key=lambda x: -x[3]):
                print(f"  long: {os.path.relpath(path, ROOT)}:{line} {name} ({n} lines)")
            for path, line, text in raw:
                print(f"  raw: {os.path.relpath(path, ROOT)}:{line} {text}")
    print(f"total: circles {totals['circles']}, back-arrows {totals['back']}, "
          f"arrows between executors {totals['between']}, "
          f"functions over {LONG} lines {totals['long']}, raw spec reads {totals['raw']}")
    broken = totals["circles"] + totals["back"] + totals["between"] + totals["long"]
    if broken:
        print(f"house.py: {broken} break(s) of the house rules (listed above): no circle, no "
              f"back-arrow, no arrow between the executors, no function over {LONG} lines "
              "outside tests", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
