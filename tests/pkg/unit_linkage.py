#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The unit tests link the library the way tests/meson.build says.

  unit_linkage.py LIBPKTMAP_SO SOURCE_DIR public EXE SRC ... internal EXE SRC ...

A public test (public_unit_tests) runs against the exported symbol list
users get:
  - its source, and the test headers it includes, include nothing of
    src/ but the forwarding component (src/fwd, built on the public API);
  - it defines no pktmap_* or pm_* function of its own (no static copy
    of the library inside), but those of the utility layer under the
    library, src/fwd and the commands (src/util.h: libpktmap_util, which
    src/fwd links too);
  - every pktmap_* function it calls is undefined in it, bound to the
    version node PKTMAP_1.0 and exported by LIBPKTMAP_SO, and it needs
    libpktmap.so.0 (readelf -d); a test of the headers alone (test_abi:
    struct layouts) calls none.
An internal test (internal_unit_tests) does include an internal header:
one that no longer needs to is said, to be moved to the public table.
Prints one line per test; exits 1 on the first difference.
"""
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# src/util.h's functions: a static library of their own, linked by the
# library and by src/fwd alike (not a copy of libpktmap's code)
UTIL = {"pm_printable", "pm_parse_ipv4", "pm_user_dir_drop"}
# Headers of src/ that are a wire format only (no library internals):
# the switch's control protocol, spoken by the switch component of
# src/fwd and by its clients
WIRE = {"vale_proto.h"}


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def quoted_includes(src, root, seen=None):
    """The quoted includes of src, following those found beside it (the
    test harness headers) once each."""
    seen = set() if seen is None else seen
    found = []
    with open(src, encoding="utf-8") as f:
        text = f.read()
    for name in INCLUDE.findall(text):
        found.append(name)
        local = os.path.join(os.path.dirname(src), name)
        if os.path.exists(local) and local not in seen:
            seen.add(local)
            found += quoted_includes(local, root, seen)
    return found


def internal_headers(src, root):
    """The headers src includes that are neither public (<pktmap/...>,
    include/) nor the test harness nor the forwarding component."""
    public = os.path.join(root, "include")
    fwd = os.path.join(root, "src", "fwd")
    here = os.path.dirname(src)
    bad = []
    for name in quoted_includes(src, root):
        if name in WIRE:
            continue
        if any(os.path.exists(os.path.join(d, name)) for d in (public, here, fwd)):
            continue
        bad.append(name)
    return bad


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def check_public(exe, src, root, exported):
    name = os.path.basename(exe)
    bad = internal_headers(src, root)
    if bad:
        fail(f"{name}: a public test includes internal headers {bad}: "
             f"move it to internal_unit_tests, saying why")
    own = [l.split()[2] for l in run("nm", "--defined-only", exe).splitlines()
           if len(l.split()) == 3 and l.split()[1] == "T"
           and re.match(r"(pktmap|pm)_", l.split()[2])
           and l.split()[2] not in UTIL]
    if own:
        fail(f"{name}: carries a copy of the library's code "
             f"({len(own)} functions, e.g. {own[0]}): link pktmap_dep")
    calls = {}
    for line in run("nm", "-D", "--undefined-only", exe).splitlines():
        sym = line.split()[-1]
        base, _, ver = sym.partition("@")
        if base.startswith("pktmap_"):
            calls[base] = ver.lstrip("@")
    if not calls:
        # The headers alone (struct layouts, inline helpers): nothing to
        # bind, and no copy of the library inside either.
        print(f"public   {name}: the headers only (calls no library function)")
        return
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^]]+)\]",
                        run("readelf", "-d", exe))
    if "libpktmap.so.0" not in needed:
        fail(f"{name}: does not link libpktmap.so.0 (needs {needed})")
    for base, ver in sorted(calls.items()):
        if ver != "PKTMAP_1.0" or exported.get(base) != "PKTMAP_1.0":
            fail(f"{name}: {base} binds to version '{ver}', libpktmap "
                 f"exports it as '{exported.get(base)}'")
    print(f"public   {name}: libpktmap.so.0, {len(calls)} pktmap_* "
          f"functions, all PKTMAP_1.0 exports")


def check_internal(exe, src, root):
    name = os.path.basename(exe)
    bad = internal_headers(src, root)
    if not bad:
        fail(f"{name}: uses only the public API: move it to "
             f"public_unit_tests (it would run against libpktmap.so)")
    print(f"internal {name}: {', '.join(sorted(set(bad)))}")


def main(argv):
    if len(argv) < 4:
        fail(__doc__.strip().splitlines()[2].strip())
    lib, root = argv[1], argv[2]
    exported = {}
    for line in run("nm", "-D", "--defined-only", lib).splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] != "A":
            base, _, ver = parts[2].partition("@")
            exported[base] = ver.lstrip("@")
    kind, counts = None, {"public": 0, "internal": 0}
    args = argv[3:]
    i = 0
    while i < len(args):
        if args[i] in counts:
            kind = args[i]
            i += 1
            continue
        exe, src = args[i], os.path.join(root, "tests", args[i + 1]) \
            if not os.path.isabs(args[i + 1]) else args[i + 1]
        i += 2
        if kind == "public":
            check_public(exe, src, root, exported)
        else:
            check_internal(exe, src, root)
        counts[kind] += 1
    if counts["public"] == 0:
        fail("no public unit test: every unit test links the internals")
    print(f"{counts['public']} unit tests on libpktmap.so, "
          f"{counts['internal']} on the internals")


if __name__ == "__main__":
    main(sys.argv)
