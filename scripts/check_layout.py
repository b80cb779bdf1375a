#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The layout rules of docs/architecture.md, checked from the build:

  1. no product function longer than MAX_LINES (120) lines (src/, apps/,
     compat/, python/; tests and bench are not product code), measured by
     universal-ctags from the opening line to the closing brace;
  2. no cycle between files: file A uses file B when A's object refers to
     a symbol B's object defines (nm of the build's objects, as listed in
     compile_commands.json); within the library, within each app and
     within the netmap compatibility layer the "uses" graph has no cycle;
  3. no comment or doc naming a path of the repository that does not
     exist, or one outside it (rule 3 below);
  4. no product file (src/, apps/, compat/, include/, python/) over
     MAX_FILE_LINES (800) lines unless BIG_FILES names it with the reason
     it is one concern (rule 4 below); an entry for a file that is gone
     or no longer that long is a violation too, so the list stays true.

tests/pkg/check_layout_test.py runs each rule on a made-up tree.

    scripts/check_layout.py [BUILD_DIR]     (default: build)

Exits 1 with one line per violation, 0 when the tree keeps the rules.
"""
import json
import os
import re
import subprocess
import sys
from collections import defaultdict

MAX_LINES = 120
MAX_FILE_LINES = 800
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRODUCT = ("src/", "apps/", "compat/", "python/")
FILE_TOPS = PRODUCT + ("include/",)

# Rule 4: the product files over MAX_FILE_LINES lines that are one concern
# each, and why. A file that is several concerns is split, not listed.
BIG_FILES = {
    "src/region.c": "one region's life under its file's lock protocol: "
                    "create or join (rendezvous, sealed memfd, files), "
                    "leave, reap, list (what is inside: region_alloc.c)",
    "src/capfile.c": "the capture-file reader: pcap and pcapng parsed "
                     "by libpcap's rules (the writer is capfile_write.c)",
    "src/ports/memif.c": "memif's data path: the client's and the "
                         "server's syncs and poll (control channel in "
                         "memif_ctl.c)",
    "src/ports/memif_ctl.c": "memif's control channel: the handshake, the "
                             "peer's regions and rings, disconnect",
    "compat/netmap/libnetmap.c": "netmap's libnetmap API (nmport_*, "
                                 "nmreq_*, nmctx_*, nm_open) as netmap "
                                 "has it, one library",
    "compat/pcap/live.c": "libpcap's live handle over a port: receive, "
                          "send, filter and stats of one pcap_t",
    "src/fwd/scrub_rules.c": "scrub's rules-file parser: one grammar, "
                             "parsed whole or refused",
}


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


# Rule 3: a comment (or a doc) that names a path of this repository names
# one that exists. The words looked at: the comments of C, shell, Python
# and meson files, and the whole text of docs/, the man pages and the
# top-level *.md; a path is a word that starts with one of the top-level
# folders below (a relative Markdown link is resolved from its file and
# must stay inside the repository). Not checked: CHANGELOG.md (history
# names the files as they were), a placeholder (a part in capitals:
# apps/NAME, fuzz_TARGET.c), a program built from PATH.c, and a path in
# netmap's tree, written after netmap's name ("netmap's apps/pkt-gen").
TOPS = ("src", "apps", "compat", "include", "docs", "tests", "scripts",
        "bench", "bpf", "debian", "completions", "contrib", ".ci")
SKIP_DIRS = {".git", "results", "data", "seeds", "__pycache__"}
PATH_RE = re.compile(r"(?<![\w./~$-])((?:%s)/[\w.+/-]*\w)(?![\w*<{$])"
                     % "|".join(re.escape(t) for t in TOPS))
LINK_RE = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
HASH_COMMENT = re.compile(r"(?:^|\s)#[^\n]*")
PLACEHOLDER = re.compile(r"(?:^|[/_.-])[A-Z]{3,}(?:$|[/_.])")
OTHER_TREE = re.compile(r"(?:netmap's|/netmap,) `?$")
# outside the repository: a relative path that climbs out of it, and
# the names of notes kept beside the repository, not in it (its own
# design notes, method and style are docs/design.md, docs/performance.md
# and CONTRIBUTING.md)
UP_RE = re.compile(r"(?<![\w./-])((?:\.\./)+[\w.+/-]*\w)")
OUTSIDE_RE = re.compile(r"\b(?:DESIGN|BENCH|STYLE)(?:\.md)?\b")


def path_ok(p, before, root=ROOT):
    return (os.path.exists(os.path.join(root, p))
            or os.path.exists(os.path.join(root, p + ".c"))
            or PLACEHOLDER.search(p) is not None
            or OTHER_TREE.search(before) is not None)


def text_files(root=ROOT):
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        if rel == ".":
            dirs[:] = [x for x in dirs if x in TOPS]
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS]
        for f in files:
            yield os.path.join(d, f)


def comment_text(path):
    name = os.path.basename(path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (UnicodeDecodeError, OSError):
        return None
    if name.endswith((".md", ".scd", ".scd.in")):
        return text
    if name.endswith((".c", ".h", ".cc", ".map")):
        return "\n".join(C_COMMENT.findall(text))
    if name.endswith(".py"):
        docs = re.findall(r'"""(.*?)"""', text, re.S)
        return "\n".join(docs + HASH_COMMENT.findall(text))
    first = text.split("\n", 1)[0]
    if (name.endswith((".py", ".sh", ".build", ".txt", ".bash"))
            or name in ("run", "rules", "meson_options.txt")
            or first.startswith("#!")):
        return "\n".join(HASH_COMMENT.findall(text))
    return None


def missing_paths(root=ROOT):
    bad = []
    files = [os.path.join(root, f) for f in os.listdir(root)
             if f.endswith(".md") or f in ("run", "meson.build",
                                            "meson_options.txt")]
    for path in sorted(files + list(text_files(root))):
        text = comment_text(path)
        if not text:
            continue
        rel = os.path.relpath(path, root)
        if rel == "CHANGELOG.md":
            continue
        for m in PATH_RE.finditer(text):
            p = m.group(1).rstrip(".")
            if not path_ok(p, text[max(0, m.start() - 60):m.start()], root):
                bad.append((rel, p))
        for m in UP_RE.finditer(text):
            target = os.path.normpath(os.path.join(os.path.dirname(path),
                                                   m.group(1)))
            if os.path.relpath(target, root).startswith(".."):
                bad.append((rel, m.group(1)))
        for m in OUTSIDE_RE.finditer(text):
            bad.append((rel, m.group(0)))
        if rel.endswith(".md"):
            for m in LINK_RE.finditer(text):
                link = m.group(1)
                if "://" in link or link.startswith("mailto:"):
                    continue
                target = os.path.normpath(os.path.join(os.path.dirname(path),
                                                       link))
                if (os.path.relpath(target, root).startswith("..")
                        or not os.path.exists(target)):
                    bad.append((rel, link))
    return sorted(set(bad))


def big_files(root=ROOT, allow=None):
    """Rule 4: (path, lines, why) for each product file over
    MAX_FILE_LINES not in allow, and each allow entry that is stale."""
    allow = BIG_FILES if allow is None else allow
    bad = []
    for top in FILE_TOPS:
        for d, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if not name.endswith((".c", ".h")):
                    continue
                path = os.path.join(d, name)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as f:
                    n = sum(1 for _ in f)
                if n > MAX_FILE_LINES and rel not in allow:
                    bad.append((rel, n, "over"))
    for rel in allow:
        path = os.path.join(root, rel)
        n = 0
        if os.path.exists(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                n = sum(1 for _ in f)
        if n <= MAX_FILE_LINES:
            bad.append((rel, n, "stale"))
    return sorted(bad)


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
    for rel, n, why in big_files():
        if why == "over":
            print(f"check_layout: {rel} is {n} lines (at most "
                  f"{MAX_FILE_LINES}): split it by concern, or, if it is "
                  "one, list it in BIG_FILES with why")
        else:
            print(f"check_layout: BIG_FILES lists {rel}, which is {n} "
                  f"lines (not over {MAX_FILE_LINES}): drop the entry")
        bad += 1
    for rel, p in missing_paths():
        print(f"check_layout: {rel}: names {p}, which is not in the "
              "repository: name the path that exists")
        bad += 1
    if bad:
        print(f"check_layout: {bad} violation(s)")
        return 1
    print("check_layout: no function over "
          f"{MAX_LINES} lines, no cycle between files, no path named "
          "that is not in the repository, no file over "
          f"{MAX_FILE_LINES} lines but the {len(BIG_FILES)} listed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
