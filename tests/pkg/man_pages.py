#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The man pages say what the command and the library do.

  man_pages.py PKTMAP_BINARY SOURCE_DIR

- every subcommand `pktmap --help` lists has docs/man/pktmap-NAME.8.scd,
  and pktmap(8) lists every subcommand (and nothing else) under COMMANDS;
- every option in the option table of `pktmap help NAME` is in the
  OPTIONS section of pktmap-NAME(8), and every option there is in
  --help;
- libpktmap(3), as docs/man/libpktmap_scd.py writes it from the
  headers, has a section with a description for every function
  <pktmap/*.h> exports.
Prints one line per page; exits 1 listing every difference.
"""
import glob
import os
import re
import subprocess
import sys

OPT_LINE = re.compile(r"^ {2,6}(-[A-Za-z0-9])?(?:, )?(--[a-z][\w-]*)?")


def help_text(pktmap, *args):
    r = subprocess.run([pktmap, *args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: {pktmap} {' '.join(args)}: exit {r.returncode}")
    return r.stdout


def subcommands(pktmap):
    text = help_text(pktmap, "--help")
    body = text.split("Commands:", 1)[1]
    return [m.group(1) for m in re.finditer(r"^  ([a-z][\w-]*) ", body, re.M)]


def help_options(text):
    opts = set()
    for line in text.splitlines():
        m = OPT_LINE.match(line)
        if m and (m.group(1) or m.group(2)):
            opts |= {o for o in m.groups() if o}
    return opts


def section(scd, name):
    m = re.search(r"^# " + name + r"\n(.*?)(?=^# |\Z)", scd, re.M | re.S)
    return m.group(1) if m else ""


def man_options(scd):
    opts = set()
    for line in section(scd, "OPTIONS").splitlines():
        if line.startswith("*-"):
            opts |= set(re.findall(r"\*(--?[A-Za-z0-9][\w\\-]*)\*", line))
    return {o.replace("\\", "") for o in opts}


def main():
    pktmap, src = sys.argv[1], sys.argv[2]
    man = os.path.join(src, "docs", "man")
    errors = []
    cmds = subcommands(pktmap)
    if not cmds:
        errors.append("pktmap --help lists no commands")
    top = open(os.path.join(man, "pktmap.8.scd")).read()
    listed = set(re.findall(r"^\*([a-z][\w-]*)\*$", section(top, "COMMANDS"),
                            re.M))
    for c in sorted(set(cmds) - listed):
        errors.append(f"pktmap.8: COMMANDS lacks {c}: add \"*{c}*\" and an "
                      f"indented line naming *pktmap-{c}*(8) to "
                      "docs/man/pktmap.8.scd")
    for c in sorted(listed - set(cmds)):
        errors.append(f"pktmap.8: COMMANDS lists {c}, which pktmap --help "
                      "does not")
    for c in cmds:
        page = os.path.join(man, f"pktmap-{c}.8.scd")
        if not os.path.exists(page):
            errors.append(f"{c}: no docs/man/pktmap-{c}.8.scd (write one: "
                          "NAME, SYNOPSIS, DESCRIPTION, OPTIONS with one "
                          "\"*-x*, *--long* _ARG_\" line per option, as "
                          "pktmap-gen.8.scd)")
            continue
        want = help_options(help_text(pktmap, "help", c))
        got = man_options(open(page).read())
        if not want:
            errors.append(f"{c}: --help lists no options (parse error?)")
        for o in sorted(want - got):
            errors.append(f"pktmap-{c}.8: no {o} (pktmap help {c} has it)")
        for o in sorted(got - want):
            errors.append(f"pktmap-{c}.8: {o} is not in pktmap help {c}")
        print(f"pktmap-{c}.8: {len(want)} options, as --help")
    gen = subprocess.run(
        [sys.executable, os.path.join(man, "libpktmap_scd.py"),
         os.path.join(man, "libpktmap.3.scd.in"),
         os.path.join(src, "include", "pktmap"), "/dev/stdout"],
        capture_output=True, text=True, check=True)
    lib = gen.stdout
    documented = {n.replace("\\", "") for n in
                  re.findall(r"^## ([\w\\]+)\(\)$", lib, re.M)}
    exported = set()
    for h in glob.glob(os.path.join(src, "include", "pktmap", "*.h")):
        exported |= set(re.findall(r"PKTMAP_EXPORT [^;]*?\b(pktmap_\w+)\s*\(",
                                   open(h).read()))
    for f in sorted(exported - documented):
        errors.append(f"libpktmap.3: no section for {f}()")
    # a section is its prototype and at least one line of description
    for m in re.finditer(r"^## ([\w\\]+)\(\)\n\n```\n[^\n]*\n```\n\n(.*?)\n",
                         lib, re.M):
        if not m.group(2).strip() or m.group(2).startswith("#"):
            errors.append("libpktmap.3: " + m.group(1).replace("\\", "") +
                          "() has no comment in its header")
    for f in sorted(documented - exported):
        errors.append(f"libpktmap.3: {f}() is not in <pktmap/*.h>")
    print(f"libpktmap.3: {len(exported)} functions")
    for e in errors:
        print("FAIL: " + e, file=sys.stderr)
    return 1 if errors else 0


sys.exit(main())
