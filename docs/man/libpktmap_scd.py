#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Write libpktmap(3)'s scdoc source from its template and the headers.

  libpktmap_scd.py TEMPLATE INCLUDE_DIR OUTPUT

A line "@FUNCTIONS@" in TEMPLATE becomes one section per exported
function of <pktmap/pktmap.h>, <pktmap/pcapfile.h>, <pktmap/spsc.h> and
<pktmap/broker.h>:
its prototype and the comment above it in the header. "@STRUCTURES@"
becomes the option, info, stats and poll structures as the header
defines them. The headers stay the one place the API is described.
"""
import os
import re
import sys

HEADERS = [
    ("pktmap.h", "PORTS"),
    ("pcapfile.h", "CAPTURE FILES (<pktmap/pcapfile.h>)"),
    ("spsc.h", "LOCK-FREE QUEUE (<pktmap/spsc.h>)"),
    ("broker.h", "THE BROKER'S PRIVILEGED HALF (<pktmap/broker.h>, pktmap-broker(8))"),
]
STRUCTS = ["pktmap_open_opts", "pktmap_info", "pktmap_stats",
           "pktmap_pollreq"]


def esc(text):
    return text.replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_")


def comment_text(raw):
    raw = re.sub(r"^/\*+", "", raw.strip())
    raw = re.sub(r"\*/$", "", raw)
    return "\n".join(re.sub(r"^\s*\* ?", "", l) for l in raw.split("\n")).strip()


def paragraphs(text):
    """Paragraphs of a comment, a "- " item each its own."""
    out = []
    for para in text.split("\n\n"):
        items, cur = [], []
        for line in para.split("\n"):
            if line.lstrip().startswith("- ") and cur:
                items.append(cur)
                cur = []
            cur.append(line.strip())
        items.append(cur)
        for item in items:
            p = " ".join(item)
            out.append("\u2014 " + p[2:] if p.startswith("- ") else p)
    return out


def functions(path):
    """(name, prototype, comment) of each PKTMAP_EXPORT function."""
    src = open(path).read()
    out = []
    for m in re.finditer(r"PKTMAP_EXPORT ([^;]*?\b(pktmap_\w+)\s*\([^;]*\));",
                         src):
        proto = re.sub(r"\s+", " ", m.group(1)).replace("( ", "(") + ";"
        before = src[:m.start()]
        comments = list(re.finditer(r"/\*(?:(?!\*/).)*\*/", before, re.S))
        text = ""
        # the comment directly above (#defines and forward declarations
        # may stand in between)
        between = re.sub(r"#define[^\n]*|struct \w+;", "",
                         before[comments[-1].end():] if comments else ";")
        if comments and ";" not in between:
            text = comment_text(comments[-1].group(0))
        out.append((m.group(2), proto, text))
    return out


def function_sections(incdir):
    lines = []
    for header, title in HEADERS:
        lines += ["# " + title, ""]
        prev = None
        for name, proto, text in functions(os.path.join(incdir, header)):
            lines += ["## " + esc(name) + "()", "", "```", proto, "```", ""]
            if text and text == prev:
                lines += ["As above.", ""]
            elif text:
                for p in paragraphs(text):
                    lines += [esc(p), ""]
            prev = text
    return "\n".join(lines).rstrip("\n")


def structures(incdir):
    src = open(os.path.join(incdir, "pktmap.h")).read()
    blocks = []
    for name in STRUCTS:
        m = re.search(r"(struct " + name + r" \{.*?\n\};)", src, re.S)
        if not m:
            sys.exit(f"libpktmap_scd.py: no struct {name} in pktmap.h")
        blocks.append("```\n" + m.group(1).replace("\t", "        ") + "\n```")
    return "\n\n".join(blocks)


def main():
    template, incdir, output = sys.argv[1:4]
    text = open(template).read()
    text = re.sub(r"^@FUNCTIONS@$", lambda _: function_sections(incdir), text,
                  flags=re.M)
    text = re.sub(r"^@STRUCTURES@$", lambda _: structures(incdir), text,
                  flags=re.M)
    with open(output, "w") as f:
        f.write(text)


main()
