#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The layout checker's own rules, each on a made-up tree (a temporary
directory), so that a rule taken out of scripts/check_layout.py turns
this test red:

  - a product file over MAX_FILE_LINES lines is refused unless listed,
    a listed one passes, and a listed one that is gone or short again is
    refused (the list stays true); tests/ is not product code;
  - a comment naming a path that does not exist is refused, one naming
    a path that exists passes, and so does a placeholder (src/NAME.c).

    tests/pkg/check_layout_test.py
"""
import importlib.util
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "check_layout.py")

spec = importlib.util.spec_from_file_location("check_layout", SCRIPT)
cl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cl)

failed = 0


def check(cond, what):
    global failed
    if not cond:
        print(f"check_layout_test: FAIL: {what}")
        failed += 1


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def lines(n):
    return "".join(f"int x{i};\n" for i in range(n))


def big_files_rule():
    with tempfile.TemporaryDirectory() as root:
        limit = cl.MAX_FILE_LINES
        write(root, "src/big.c", lines(limit + 1))
        write(root, "src/edge.c", lines(limit))
        write(root, "apps/x/listed.c", lines(limit + 50))
        write(root, "include/pktmap/big.h", lines(limit + 1))
        write(root, "tests/unit/long_test.c", lines(limit + 100))
        write(root, "src/short_again.c", lines(10))
        allow = {"apps/x/listed.c": "one concern",
                 "src/short_again.c": "was long",
                 "src/gone.c": "removed since"}
        bad = {(rel, why) for rel, _, why in cl.big_files(root, allow)}
        check(("src/big.c", "over") in bad, "a file over the limit passed")
        check(("include/pktmap/big.h", "over") in bad,
              "a header over the limit passed")
        check(not any(r == "src/edge.c" for r, _ in bad),
              "a file at the limit was refused")
        check(not any(r == "apps/x/listed.c" for r, _ in bad),
              "a listed file was refused")
        check(not any(r.startswith("tests/") for r, _ in bad),
              "a test file counted as product code")
        check(("src/short_again.c", "stale") in bad,
              "a listed file no longer over the limit passed")
        check(("src/gone.c", "stale") in bad, "a listed file that is gone "
              "passed")
        check(len(bad) == 4, f"unexpected verdicts: {sorted(bad)}")


def paths_rule():
    with tempfile.TemporaryDirectory() as root:
        write(root, "src/here.c", "/* see src/there.h and src/NAME.c */\n"
              "int a;\n")
        write(root, "src/there.h", "/* docs/missing.md says why */\n")
        write(root, "apps/y/y.c", "/* as src/here.c does */\n")
        bad = set(cl.missing_paths(root))
        check(("src/there.h", "docs/missing.md") in bad,
              "a comment naming a missing path passed")
        check(not any(rel == "src/here.c" for rel, _ in bad),
              "a comment naming existing paths (or a placeholder) was "
              "refused")
        check(not any(rel == "apps/y/y.c" for rel, _ in bad),
              "a comment naming an existing file was refused")
        check(len(bad) == 1, f"unexpected verdicts: {sorted(bad)}")


def real_tree():
    # the repository's own list: every entry has a reason and is over
    for rel, why in cl.BIG_FILES.items():
        check(isinstance(why, str) and len(why) > 20,
              f"BIG_FILES[{rel}] gives no reason")


big_files_rule()
paths_rule()
real_tree()
if failed:
    print(f"check_layout_test: {failed} failure(s)")
    sys.exit(1)
print("check_layout_test: the file-size and path rules refuse what they "
      "must and pass the rest")
