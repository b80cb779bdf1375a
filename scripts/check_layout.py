#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The layout rules of docs/architecture.md, checked from the build:

  1. no product function longer than MAX_LINES (120) lines (src/, apps/,
     compat/; tests and bench are not product code), measured by
     universal-ctags from the opening line to the closing brace;
  2. no cycle between files: file A uses file B when A's object refers to
     a symbol B's object defines (nm of the build's objects, as listed in
     compile_commands.json); within the library, within each app and
     within the netmap compatibility layer the "uses" graph has no cycle.

    scripts/check_layout.py [BUILD_DIR]     (default: build)

Exits 1 with one line per violation, 0 when the tree keeps the rules.
"""
import json
import os
import subprocess
import sys
from collections import defaultdict

MAX_LINES = 120
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRODUCT = ("src/", "apps/", "compat/")


def product_sources():
    out = []
    for top in PRODUCT:
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            out += [os.path.join(d, f) for f in files if f.endswith((".c", ".h"))]
    return sorted(out)


def long_functions():
    fmt = "%{name}\t%{line}\t%{end}\t%{input}"
    p = subprocess.run(["ctags", "-x", "--kinds-C=f", "--fields=+ne",
                        f"--_xformat={fmt}"] + product_sources(),
                       capture_output=True, text=True, check=True)
    bad = []
    for line in p.stdout.splitlines():
        name, start, end, path = line.split("\t")
        if not end:
            continue
        n = int(end) - int(start) + 1
        if n > MAX_LINES:
            bad.append((n, name, os.path.relpath(path, ROOT), int(start)))
    return sorted(bad, reverse=True)


def objects(build):
    with open(os.path.join(build, "compile_commands.json")) as f:
        cc = json.load(f)
    objs = {}
    for e in cc:
        src = os.path.relpath(os.path.join(e["directory"], e["file"]), ROOT)
        if not src.startswith(PRODUCT):
            continue
        obj = os.path.join(e["directory"], e["output"])
        # the unit a file belongs to: the library, an app, the compat layer
        unit = os.path.dirname(e["output"])
        if os.path.exists(obj):
            objs.setdefault(unit, {})[src] = obj
    return objs


def symbols(obj):
    p = subprocess.run(["nm", obj], capture_output=True, text=True, check=True)
    defined, used = set(), set()
    for line in p.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRC":
            defined.add(parts[2])
    return defined, used


def cycles(unit_objs):
    syms = {src: symbols(o) for src, o in unit_objs.items()}
    owner = {}
    for src, (d, _) in syms.items():
        for s in d:
            owner[s] = src
    uses = defaultdict(set)
    for src, (_, u) in syms.items():
        for s in u:
            if s in owner and owner[s] != src:
                uses[src].add(owner[s])
    # Tarjan's strongly connected components
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in uses[v]:
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
    for v in sorted(syms):
        if v not in index:
            visit(v)
    return out, uses


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
    bad = 0
    for n, name, path, line in long_functions():
        print(f"check_layout: {path}:{line}: {name}() is {n} lines "
              f"(at most {MAX_LINES}): split it into named steps")
        bad += 1
    for unit, objs in sorted(objects(build).items()):
        comps, uses = cycles(objs)
        for comp in comps:
            edges = [f"{a} -> {b}" for a in comp for b in sorted(uses[a])
                     if b in comp]
            print(f"check_layout: cycle between files: {', '.join(edges)}")
            bad += 1
    if bad:
        print(f"check_layout: {bad} violation(s)")
        return 1
    print("check_layout: no function over "
          f"{MAX_LINES} lines, no cycle between files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
