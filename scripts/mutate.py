#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Mutation testing of pktmap's checks: put one realistic one-line bug at a
time into the checks, bounds and parsers, rebuild, run the tests, and say
which bugs the tests caught (killed) and which they let through (survived).

    scripts/mutate.py                      every target of scripts/mutate.targets
    scripts/mutate.py src/check.h          one file, its tests from the table
    scripts/mutate.py src/name.c@pm_name_parse --tests name
    scripts/mutate.py src/capfile.c:100-180 --cmd 'meson test -C {build} --no-rebuild pcapfile'
    scripts/mutate.py --list src/check.h   the mutants, nothing built or run
    scripts/mutate.py --quick              one mutant a line, at most 12 a file

It never touches your files: it works on a copy of the tree (tracked and
untracked files, what `git ls-files -co --exclude-standard` lists) in
--workdir (default /tmp/pktmap-mutate.UID, kept between runs so that the
build is incremental: build-mutate in it). Each mutant is written into the
copy, built with ninja (only the targets its tests need), tested, and the
copy's file is put back, also on Ctrl-C, SIGTERM or an error. docs/testing.md
says how to read and use the result.

The mutation operators (each one a bug seen in real code):
  rel     a boundary flipped: < <=, <= <, > >=, >= >
  eq      == !=, != ==
  const   an integer constant in a comparison's line off by one (+1, -1)
  drop    an if's condition replaced by 0 (the check dropped)
  term    one operand of a condition's top-level || replaced by 0, of a
          top-level && by 1 (one half of a check dropped)
  logic   && ||, || &&
  bswap   htons/ntohs/htonl/ntohl/be16toh/... removed (byte order swapped)
  flag    a FLAG_CONSTANT dropped from an |-expression or an |= (a flag lost)

Exit status: 0 when every mutant that built was killed, 1 when some survived,
2 on a usage error, 3 when the tree could not be built before mutating.
"""
import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_TARGETS = os.path.join(TOP, "scripts", "mutate.targets")


class Interrupted(Exception):
    pass


def on_signal(signum, frame):
    raise Interrupted(signal.Signals(signum).name)


# ---------------------------------------------------------------------------
# Reading C: comments and literals masked so that no operator is found in
# them; line ranges; functions.

def mask_c(text):
    """The text with comments, string and char literals replaced by spaces
    (newlines kept), and preprocessor lines other than #define blanked: same
    length, same offsets."""
    out = list(text)
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c in " \t":
            i += 1
            continue
        if at_line_start and c == "#":
            # a directive (with its continuation lines)
            j = i
            while j < n:
                if text[j] == "\n" and (j == 0 or text[j - 1] != "\\"):
                    break
                j += 1
            if not re.match(r"#\s*define\b", text[i:j]):
                for k in range(i, j):
                    if out[k] != "\n":
                        out[k] = " "
            else:
                # keep the macro body, mask its name and the '#define'
                m = re.match(r"#\s*define\s+\w+(\([^)]*\))?", text[i:j])
                for k in range(i, i + m.end()):
                    out[k] = " "
            at_line_start = False
            i = j
            continue
        at_line_start = False
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            for k in range(i + 1, min(j, n)):
                if out[k] != "\n":
                    out[k] = " "
            i = j + 1
            continue
        if c == "\n":
            at_line_start = True
        i += 1
    return "".join(out)


def line_starts(text):
    starts = [0]
    for m in re.finditer("\n", text):
        starts.append(m.end())
    return starts


def line_of(starts, off):
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= off:
            lo = mid
        else:
            hi = mid - 1
    return lo + 1


def function_lines(text, name):
    """(first, last) lines of the definition of function NAME: its name at
    the start of a line or after its return type, up to the first '}' in
    column 0 after it."""
    lines = text.split("\n")
    for i, l in enumerate(lines):
        if re.match(r"^(?:[A-Za-z_][\w \*]*[\s\*])?%s\s*\(" % re.escape(name), l) \
                and not l.rstrip().endswith(";"):
            # a prototype spread over lines ends with ');'
            j = i
            while j < len(lines) and "{" not in lines[j] and not lines[j].rstrip().endswith(";"):
                j += 1
            if j < len(lines) and lines[j].rstrip().endswith(";") and "{" not in lines[j]:
                continue
            k = j
            while k < len(lines) and lines[k] != "}":
                k += 1
            return i + 1, k + 1
    return None


def balanced(masked, open_at):
    """Offset just past the ')' matching the '(' at open_at, or -1."""
    depth = 0
    for j in range(open_at, len(masked)):
        if masked[j] == "(":
            depth += 1
        elif masked[j] == ")":
            depth -= 1
            if depth == 0:
                return j + 1
    return -1


def top_level_split(masked, lo, hi, op):
    """Spans [a, b) of the operands of the top-level `op` ('&&' or '||') in
    masked[lo:hi] (parenthesis depth 0 there), or [] when there is none."""
    spans, depth, start, j = [], 0, lo, lo
    while j < hi:
        c = masked[j]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and masked.startswith(op, j):
            spans.append((start, j))
            start = j + 2
            j += 2
            continue
        elif depth == 0 and c in "?,":
            return []  # a ternary or a comma: not a plain chain
        j += 1
    if not spans:
        return []
    spans.append((start, hi))
    return spans


def strip_span(text, a, b):
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


# ---------------------------------------------------------------------------
# The mutants.

BSWAP = ("htons", "ntohs", "htonl", "ntohl", "be16toh", "be32toh", "be64toh",
         "htobe16", "htobe32", "htobe64", "le16toh", "le32toh", "htole16",
         "htole32", "bswap_16", "bswap_32", "__builtin_bswap16",
         "__builtin_bswap32")
REL_FLIP = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}
OPS = ("rel", "eq", "const", "drop", "term", "logic", "bswap", "flag")
OPS_PRIO = ("drop", "rel", "bswap", "flag", "term", "logic", "eq", "const")


def mutants_of(text, ranges, ops):
    """[(offset, length, replacement, op)] for the lines in ranges (a list
    of (first, last), 1-based inclusive)."""
    masked = mask_c(text)
    starts = line_starts(text)
    out = []

    def in_range(off):
        ln = line_of(starts, off)
        return any(a <= ln <= b for a, b in ranges)

    def add(off, length, repl, op):
        if op in ops and in_range(off):
            out.append((off, length, repl, op))

    # rel: a relational operator, not part of << >> -> <<= >>=
    for m in re.finditer(r"(?<![<>\-])(<=|>=|<|>)(?![<>=])", masked):
        if m.group(1) == ">" and masked[m.start() - 1:m.start()] == "-":
            continue
        add(m.start(), len(m.group(1)), REL_FLIP[m.group(1)], "rel")
    for m in re.finditer(r"(?<![=!<>])(==|!=)(?!=)", masked):
        add(m.start(), 2, "!=" if m.group(1) == "==" else "==", "eq")
    # const: integer constants on lines with a comparison, off by one
    cmp_re = re.compile(r"(?<![<>\-])(<=|>=|<|>|==|!=)(?![<>])")
    for m in re.finditer(r"(?<![\w.])(\d+|0[xX][0-9a-fA-F]+)([uU]?[lL]{0,2})(?![\w.])", masked):
        ln = line_of(starts, m.start())
        lo = starts[ln - 1]
        hi = starts[ln] if ln < len(starts) else len(masked)
        line = masked[lo:hi]
        if not cmp_re.search(line.replace("->", "  ")):
            continue
        before_ = masked[lo:m.start()].rstrip()
        after_ = masked[m.end():hi].lstrip()
        if before_.endswith("[") or after_.startswith("]"):
            continue  # a subscript or an array's size: not a bound
        if re.search(r"(?<![=!<>])=$", before_) or before_.endswith(("?", ":")) \
                or before_.endswith(("<<", ">>")) or after_.startswith(("<<", ">>")):
            continue  # an initial value, a choice, a shift: not a bound
        lit = m.group(1)
        if lit[0] == "0" and len(lit) > 1 and lit[1] not in "xX":
            continue  # octal: modes, not bounds
        v = int(lit, 0)
        suffix = m.group(2)
        for d in (1, -1):
            if v + d < 0:
                continue
            new = ("%#x" if lit[:2] in ("0x", "0X") else "%d") % (v + d)
            add(m.start(), len(m.group(0)), new + suffix, "const")
    # drop, term: an if's condition
    for m in re.finditer(r"\bif\s*\(", masked):
        o = m.end() - 1
        e = balanced(masked, o)
        if e < 0:
            continue
        a, b = strip_span(masked, o + 1, e - 1)
        add(a, b - a, "0", "drop")
        for op, neutral in (("||", "0"), ("&&", "1")):
            for sa, sb in top_level_split(masked, a, b, op):
                sa, sb = strip_span(masked, sa, sb)
                add(sa, sb - sa, neutral, "term")
    # logic
    for m in re.finditer(r"&&|\|\|", masked):
        add(m.start(), 2, "||" if m.group(0) == "&&" else "&&", "logic")
    # bswap: the call's name removed, its parentheses kept
    for m in re.finditer(r"\b(%s)\s*(?=\()" % "|".join(BSWAP), masked):
        add(m.start(), m.end() - m.start(), "", "bswap")
    # bswap: the two bytes of a 16-bit value stored swapped
    # (`a = (uint8_t)(v >> 8), b = (uint8_t)v` on one line)
    for m in re.finditer(r"\(uint8_t\)\((\w+) >> 8\)([^\n;]*?)\(uint8_t\)\1\b(?!\s*>>)", masked):
        v = m.group(1)
        add(m.start(), m.end() - m.start(),
            "(uint8_t)%s%s(uint8_t)(%s >> 8)" % (v, text[m.start(2):m.end(2)], v), "bswap")
    # flag: FLAG dropped from `x | FLAG`, `FLAG | x`, `x |= FLAG`
    for m in re.finditer(r"(?<!\|)\|\s*([A-Z][A-Z0-9_]{2,})\b(?!\s*\()", masked):
        if masked[m.start():m.start() + 2] == "|=":
            continue
        add(m.start(), m.end() - m.start(), "", "flag")
    for m in re.finditer(r"\b([A-Z][A-Z0-9_]{2,})\s*\|(?![|=])", masked):
        add(m.start(), m.end() - m.start(), "", "flag")
    for m in re.finditer(r"\|=\s*([A-Z][A-Z0-9_]{2,})\b(?!\s*\()", masked):
        add(m.start(1), len(m.group(1)), "0", "flag")
    # one mutant per (offset, replacement)
    seen, uniq = set(), []
    for mu in sorted(out):
        key = (mu[0], mu[1], mu[2])
        if key not in seen:
            seen.add(key)
            uniq.append(mu)
    return uniq


# ---------------------------------------------------------------------------
# Targets: "FILE[:A-B,C-D][@func,func] [TEST,TEST...]" lines, and
# "equivalent FILE LINE-TEXT -> MUTATED-LINE-TEXT  # why" for mutants
# that change nothing a test could see.

def parse_spec(spec):
    m = re.match(r"^([^:@]+)(?::([\d,\-]+))?(?:@([\w,]+))?$", spec)
    if not m:
        raise ValueError("bad target '%s' (FILE[:A-B,...][@func,...])" % spec)
    ranges = []
    if m.group(2):
        for part in m.group(2).split(","):
            a, _, b = part.partition("-")
            ranges.append((int(a), int(b or a)))
    funcs = m.group(3).split(",") if m.group(3) else []
    return m.group(1), ranges, funcs


def read_targets(path):
    targets, equivalent = [], []
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
            if not line:
                continue
            if line.startswith("equivalent "):
                m = re.match(r"equivalent\s+(\S+)\s+`(.*)`\s*->\s*`(.*)`$", line)
                if not m:
                    raise ValueError("%s:%d: equivalent FILE `LINE` -> `MUTATED`" % (path, n))
                equivalent.append((m.group(1), m.group(2).strip(), m.group(3).strip()))
                continue
            parts = line.split()
            tests = parts[1].split(",") if len(parts) > 1 else []
            targets.append((parts[0], tests))
    return targets, equivalent


# ---------------------------------------------------------------------------
# The copy of the tree and its build.

def sh(cmd, **kw):
    return subprocess.run(cmd, **kw)


def sync_copy(work):
    """Bring WORK/tree up to the working tree's files (copying only what
    differs, so that ninja rebuilds only what changed)."""
    tree = os.path.join(work, "tree")
    os.makedirs(tree, exist_ok=True)
    files = subprocess.run(["git", "-C", TOP, "ls-files", "-co", "--exclude-standard", "-z"],
                           check=True, capture_output=True).stdout.split(b"\0")
    n = 0
    for f in files:
        if not f:
            continue
        rel = f.decode()
        if rel.startswith("build") and "/" in rel and rel.split("/")[0].startswith("build"):
            continue
        src, dst = os.path.join(TOP, rel), os.path.join(tree, rel)
        if not os.path.isfile(src) or os.path.islink(src):
            continue
        try:
            with open(src, "rb") as a, open(dst, "rb") as b:
                if a.read() == b.read() and os.stat(src).st_mode == os.stat(dst).st_mode:
                    continue
        except FileNotFoundError:
            pass
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        # a new mtime, not the source's: ninja must see the change
        shutil.copyfile(src, dst)
        shutil.copymode(src, dst)
        n += 1
    return tree, n


def setup_build(tree, build, jobs):
    if not os.path.exists(os.path.join(build, "build.ninja")):
        # No -Werror: a mutant is judged by the tests, not by a warning.
        r = sh(["meson", "setup", build, tree, "--buildtype=debugoptimized",
                "-Dwerror=false"], capture_output=True, text=True)
        if r.returncode:
            sys.stderr.write(r.stdout + r.stderr)
            return False
    r = sh(["ninja", "-C", build, "-j%d" % jobs], capture_output=True, text=True)
    if r.returncode:
        sys.stderr.write(r.stdout[-4000:] + r.stderr[-2000:])
        return False
    return True


def test_targets(build, names):
    """The ninja targets (paths relative to the build dir) the named meson
    tests need: their executables and their depends."""
    tests = json.loads(subprocess.run(["meson", "introspect", build, "--tests"],
                                      check=True, capture_output=True, text=True).stdout)
    targets = json.loads(subprocess.run(["meson", "introspect", build, "--targets"],
                                        check=True, capture_output=True, text=True).stdout)
    by_id = {t["id"]: t for t in targets}
    by_file = {}
    for t in targets:
        for f in t.get("filename", []):
            by_file[f] = t
    out, known = set(), {t["name"] for t in tests}
    for n in names:
        if n not in known:
            raise ValueError("no meson test '%s' (meson test -C %s --list)" % (n, build))
    for t in tests:
        if names and t["name"] not in names:
            continue
        for d in t.get("depends", []):
            if d in by_id:
                for f in by_id[d]["filename"]:
                    out.add(os.path.relpath(f, build))
        for c in t["cmd"]:
            if c in by_file:
                out.add(os.path.relpath(c, build))
    return sorted(out)


def run_group(cmd, timeout, cwd, log):
    """Run cmd (a list) in its own process group; kill the group on a
    timeout or an interrupt. Returns (returncode or 'timeout')."""
    with open(log, "w") as out:
        p = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                             start_new_session=True)
        try:
            return p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            return "timeout"
        except BaseException:
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=10)
            except Exception:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            raise


# ---------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(
        description="One-line mutations of pktmap's checks against its tests.",
        epilog="Targets: FILE[:A-B,...][@func,...]; with none, every line of "
               "scripts/mutate.targets (or --targets FILE).",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target", nargs="*")
    ap.add_argument("--targets", help="a table of targets (default scripts/mutate.targets)")
    ap.add_argument("--tests", help="meson tests to run against each mutant "
                    "(comma-separated; default: the table's, else the unit suite)")
    ap.add_argument("--cmd", help="a shell command instead of meson test; {build} "
                    "is the build dir, {tree} the copy; exit 0 = the mutant survived")
    ap.add_argument("--ops", default=",".join(OPS), help="operators (default all: %s)" % ",".join(OPS))
    ap.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    ap.add_argument("--only", help="only these mutant ids (as --list shows them), comma-separated")
    ap.add_argument("--quick", action="store_true",
                    help="one mutant a line (the likeliest bug: drop, rel, bswap, flag, "
                    "term, logic, eq, const), at most 12 a file unless --max says")
    ap.add_argument("--max", type=int, default=0,
                    help="at most this many mutants a file, spread over it")
    ap.add_argument("--workdir", default="/tmp/pktmap-mutate.%d" % os.getuid())
    ap.add_argument("--timeout", type=int, default=600, help="seconds per mutant's tests (a timeout kills)")
    ap.add_argument("--budget", type=int, default=0, help="start no mutant after this many seconds")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="ninja's jobs")
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()
    if a.quick and not a.max:
        a.max = 12

    ops = set(a.ops.split(","))
    if not ops <= set(OPS):
        ap.error("unknown operator(s): %s" % ",".join(sorted(ops - set(OPS))))
    equivalent = []
    if a.target:
        targets = [(t, []) for t in a.target]
        if os.path.exists(a.targets or DEFAULT_TARGETS):
            _, equivalent = read_targets(a.targets or DEFAULT_TARGETS)
            # a file named on the command line keeps the table's tests
            table, _ = read_targets(a.targets or DEFAULT_TARGETS)
            # a file named alone takes the table's lines and tests
            for i, (t, _) in enumerate(targets):
                for spec, tests in table:
                    if parse_spec(spec)[0] == parse_spec(t)[0]:
                        targets[i] = (spec if t == parse_spec(t)[0] else t, tests)
                        break
    else:
        try:
            targets, equivalent = read_targets(a.targets or DEFAULT_TARGETS)
        except (OSError, ValueError) as e:
            ap.error(str(e))

    # The mutants, from the working tree's files.
    texts = {}
    plan = []  # (id, file, tests, off, len, repl, op, line, before, after)
    for spec, tests in targets:
        try:
            path, ranges, funcs = parse_spec(spec)
        except ValueError as e:
            ap.error(str(e))
        if a.tests:
            tests = a.tests.split(",")
        full = os.path.join(TOP, path)
        try:
            text = open(full).read()
        except OSError as e:
            ap.error("%s: %s" % (path, e.strerror))
        for fn in funcs:
            r = function_lines(text, fn)
            if not r:
                ap.error("%s: no function %s" % (path, fn))
            ranges.append(r)
        if not ranges:
            ranges = [(1, text.count("\n") + 1)]
        texts[path] = text
        starts = line_starts(text)
        lines = text.split("\n")
        n = 0
        mine = []
        for off, ln_, repl, op in mutants_of(text, ranges, ops):
            ln = line_of(starts, off)
            mutated = text[:off] + repl + text[off + ln_:]
            lo = starts[ln - 1]
            after = mutated[lo:mutated.find("\n", lo)].strip()
            before = lines[ln - 1].strip()
            n += 1
            if any(e[0] == path and e[1] in before and e[2] in after for e in equivalent):
                continue
            mid = "%s#%d" % (os.path.basename(path), n)
            mine.append((mid, path, tests, off, ln_, repl, op, ln, before, after))
        if a.quick:
            # one mutant a line, the likeliest bug first
            best = {}
            for m in mine:
                if m[7] not in best or OPS_PRIO.index(m[6]) < OPS_PRIO.index(best[m[7]][6]):
                    best[m[7]] = m
            mine = [m for m in mine if best[m[7]] is m]
        if a.max and len(mine) > a.max:
            # spread over the file: every k-th
            k = len(mine) / a.max
            mine = [mine[int(i * k)] for i in range(a.max)]
        plan += mine
    if a.only:
        want = set(a.only.split(","))
        plan = [p for p in plan if p[0] in want]
    if a.list:
        for mid, path, tests, _, _, _, op, ln, before, after in plan:
            print("%-14s %s:%d %-5s %s  ->  %s" % (mid, path, ln, op, before, after))
        print("%d mutants" % len(plan))
        return 0
    if not plan:
        print("mutate: no mutants")
        return 0

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    work = os.path.abspath(a.workdir)
    os.makedirs(work, exist_ok=True)
    tree, ncopied = sync_copy(work)
    build = os.path.join(work, "build-mutate")
    print("mutate: copy in %s (%d files updated), building %s" % (tree, ncopied, build), flush=True)
    if not setup_build(tree, build, a.jobs):
        print("mutate: the unmutated tree does not build", file=sys.stderr)
        return 3

    results = []
    t0 = time.time()
    logdir = os.path.join(work, "logs")
    os.makedirs(logdir, exist_ok=True)
    cache = {}
    try:
        for mid, path, tests, off, ln_, repl, op, ln, before, after in plan:
            if a.budget and time.time() - t0 > a.budget:
                print("mutate: budget spent, %d mutants not run" % (len(plan) - len(results)))
                break
            key = tuple(tests)
            if key not in cache:
                cache[key] = test_targets(build, list(tests)) if not a.cmd else []
            dst = os.path.join(tree, path)
            orig = open(dst).read()
            if orig != texts[path]:
                raise RuntimeError("%s changed since the mutants were made: run again" % path)
            start = time.time()
            log = os.path.join(logdir, mid.replace("#", "_") + ".log")
            try:
                with open(dst, "w") as f:
                    f.write(orig[:off] + repl + orig[off + ln_:])
                b = run_group(["ninja", "-C", build, "-j%d" % a.jobs] + cache[key], a.timeout, tree, log)
                if b != 0:
                    verdict = "build-fails"
                else:
                    if a.cmd:
                        cmd = ["sh", "-c", a.cmd.format(build=shlex.quote(build), tree=shlex.quote(tree))]
                    elif tests:
                        cmd = ["meson", "test", "-C", build, "--no-rebuild", "--num-processes", "1",
                               "--maxfail", "1", "--print-errorlogs"] + list(tests)
                    else:
                        cmd = ["meson", "test", "-C", build, "--no-rebuild", "--num-processes", "1",
                               "--maxfail", "1", "--print-errorlogs", "--suite", "unit"]
                    with open(log, "a") as lf:
                        lf.write("\n$ %s\n" % " ".join(cmd))
                    r = run_group(cmd, a.timeout, tree, log + ".test")
                    with open(log + ".test") as tf, open(log, "a") as lf:
                        lf.write(tf.read())
                    os.unlink(log + ".test")
                    verdict = "survived" if r == 0 else ("killed (timeout)" if r == "timeout" else "killed")
            finally:
                with open(dst, "w") as f:
                    f.write(orig)
            secs = time.time() - start
            results.append(dict(id=mid, file=path, line=ln, op=op, before=before, after=after,
                                tests=list(tests), verdict=verdict, seconds=round(secs, 1)))
            print("%-14s %-17s %5.0fs  %s:%d %-5s %s  ->  %s" % (mid, verdict, secs, path, ln, op, before, after),
                  flush=True)
    except (KeyboardInterrupt, Interrupted) as e:
        print("\nmutate: interrupted (%s); the copy is restored" % (e or "Ctrl-C"), file=sys.stderr)
    finally:
        # Leave the copy's build matching its restored files.
        pass

    # The score, per file and in all.
    print()
    print("%-28s %6s %8s %6s %6s" % ("file", "killed", "survived", "built", "score"))
    by_file = {}
    for r in results:
        by_file.setdefault(r["file"], []).append(r)
    tk = ts = 0
    for f, rs in by_file.items():
        k = sum(r["verdict"].startswith("killed") for r in rs)
        s = sum(r["verdict"] == "survived" for r in rs)
        tk, ts = tk + k, ts + s
        print("%-28s %6d %8d %6d %5.0f%%" % (f, k, s, k + s, 100.0 * k / (k + s) if k + s else 100))
    print("%-28s %6d %8d %6d %5.0f%%" % ("all", tk, ts, tk + ts, 100.0 * tk / (tk + ts) if tk + ts else 100))
    nb = sum(r["verdict"] == "build-fails" for r in results)
    if nb:
        print("(%d mutants did not build: not counted)" % nb)
    survivors = [r for r in results if r["verdict"] == "survived"]
    if survivors:
        print("\nsurvived:")
        for r in survivors:
            print("  %s %s:%d %s: %s  ->  %s" % (r["id"], r["file"], r["line"], r["op"], r["before"], r["after"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(results=results, killed=tk, survived=ts), f, indent=1)
    return 1 if ts else 0


if __name__ == "__main__":
    sys.exit(main())
