#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Every command a system test needs is installed by ./run test.

    tests/pkg/run_deps.py SOURCE_ROOT

A system test that lacks a command skips (need_cmd in tests/system/lib.sh),
so a package that ./run test does not install turns a test into a skip on
a fresh machine. For each `need_cmd NAME` under tests/, the Debian package
that owns the command here (dpkg -S) must be one of ./run's build or test
packages, a package one of them depends on, or a required one. A command
missing from this machine fails under CI=true (./run test installed the
packages) and skips elsewhere (77).
"""
import os
import re
import shutil
import subprocess
import sys


# Debian's commands, not a copy earlier in $PATH (pyenv's python3)
SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def run_lists(root):
    with open(os.path.join(root, "run")) as f:
        text = f.read()
    pkgs = set()
    for name in ("build_pkgs", "test_pkgs"):
        m = re.search(r"^%s=\(([^)]*)\)" % name, text, re.M)
        if not m:
            sys.exit(f"run_deps: no {name}=(...) in ./run")
        pkgs |= set(m.group(1).split())
    return pkgs


def needed(root):
    need = {}
    for d, _, files in os.walk(os.path.join(root, "tests")):
        for f in files:
            if not f.endswith(".sh"):
                continue
            path = os.path.join(d, f)
            with open(path) as fh:
                for line in fh:
                    m = re.match(r"\s*need_cmd\s+([\w.+-]+)\s*(?:#.*)?$", line)
                    if m:
                        need.setdefault(m.group(1), os.path.relpath(path, root))
    return need


def dpkg_query(fmt, pkg):
    p = subprocess.run(["dpkg-query", "-W", "-f", fmt, pkg],
                       capture_output=True, text=True)
    return p.stdout if p.returncode == 0 else ""


def owner(path):
    real = os.path.realpath(path)
    cands = [path, real] + [p[len("/usr"):] for p in (path, real)
                            if p.startswith("/usr/")]
    for p in cands:
        r = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout.split(":", 1)[0].split(",")[0].strip()
    return None


def deps_of(pkgs):
    out = set()
    for p in pkgs:
        for alt in re.split(r"[,|]", dpkg_query("${Depends},${Pre-Depends}", p)):
            name = alt.strip().split(" ")[0].split(":")[0]
            if name:
                out.add(name)
    return out


def main():
    root = sys.argv[1]
    listed = run_lists(root)
    ok_pkgs = listed | deps_of(listed)
    bad, missing = [], []
    for cmd, where in sorted(needed(root).items()):
        path = shutil.which(cmd, path=SYSTEM_PATH)
        if path is None:
            missing.append(f"run_deps: {cmd} (need_cmd in {where}) is not "
                           "installed here")
            continue
        pkg = owner(path)
        if pkg is None:
            bad.append(f"run_deps: {cmd} ({path}) belongs to no Debian package")
        elif pkg not in ok_pkgs and \
                dpkg_query("${Priority}", pkg) != "required":
            bad.append(f"run_deps: {cmd} (need_cmd in {where}) is in the "
                       f"package {pkg}, which ./run test does not install: "
                       "add it to test_pkgs in ./run")
    for line in bad + missing:
        print(line)
    if bad or (missing and os.environ.get("CI") == "true"):
        return 1
    if missing:
        print("run_deps: SKIP (commands missing here; ./run test installs them)")
        return 77
    print(f"run_deps: {len(needed(root))} commands, each from a package "
          "./run test installs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
