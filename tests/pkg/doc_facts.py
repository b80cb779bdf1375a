#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Facts the docs repeat from the code, checked against the code.

    tests/pkg/doc_facts.py SOURCE_ROOT

- every version the docs quote of pktmap ("version":"X.Y.Z", "pktmap
  X.Y.Z") is the project's version (meson.build);
- every metric family apps/metrics/ serves is named in pktmap-metrics(8)
  and in docs/metrics.md;
- the man pages render what they say: no line of text starts with a dot
  (roff takes it for a request: "...)" printed as "..)"), and an option's
  term line holds its names and arguments (capitals), not its description.

Exits 1 with one line per difference.
"""
import glob
import os
import re
import sys


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def main():
    root = sys.argv[1]
    bad = []
    version = re.search(r"version\s*:\s*'([^']+)'",
                        read(os.path.join(root, "meson.build"))).group(1)
    docs = sorted(glob.glob(os.path.join(root, "docs", "*.md")) +
                  glob.glob(os.path.join(root, "docs", "man", "*.scd*")) +
                  [os.path.join(root, "README.md")])
    quoted = re.compile(r'"version":\s*"([0-9][^"]*)"|'
                        r'\bpktmap ([0-9]+\.[0-9]+\.[0-9]+)\b')
    for path in docs:
        for m in quoted.finditer(read(path)):
            v = m.group(1) or m.group(2)
            if v != version:
                bad.append(f"doc_facts: {os.path.relpath(path, root)} quotes "
                           f"version {v}; the project is {version}")
    names = set()
    for path in glob.glob(os.path.join(root, "apps", "metrics", "*.c")):
        names |= set(re.findall(r'"(pktmap_[a-z_]+)"', read(path)))
    man = read(os.path.join(root, "docs", "man",
                            "pktmap-metrics.8.scd")).replace("\\_", "_")
    md = read(os.path.join(root, "docs", "metrics.md"))
    for n in sorted(names):
        if not re.search(r"\b%s\b" % n, man):
            bad.append(f"doc_facts: pktmap-metrics(8) does not name {n}")
        if not re.search(r"\b%s\b" % n, md):
            bad.append(f"doc_facts: docs/metrics.md does not name {n}")
    for path in sorted(glob.glob(os.path.join(root, "docs", "man", "*.scd*"))):
        rel = os.path.relpath(path, root)
        literal = False
        for n, line in enumerate(read(path).splitlines(), 1):
            if line.lstrip("\t ").startswith("```"):
                literal = not literal
            if not literal and line.lstrip("\t ").startswith("."):
                bad.append(f"doc_facts: {rel}:{n}: a line starting with a "
                           "dot is a roff request: reflow it")
            if line.startswith("*-") and re.search(r"(?<![\w])_[a-z]", line):
                bad.append(f"doc_facts: {rel}:{n}: an option's term line "
                           "holds prose: put the description on the next "
                           "line, indented by a tab")
    for line in bad:
        print(line)
    if bad:
        return 1
    print(f"doc_facts: version {version} everywhere; {len(names)} metric "
          "families, each in pktmap-metrics(8) and docs/metrics.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
