#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The command line systemd would run for a unit's ExecStart= or
ExecReload=, NUL-separated on stdout, for tests/system/units.sh.

    unit_cmd.py UNIT KEY INSTANCE [NAME=VALUE...]

%i becomes INSTANCE; $NAME and ${NAME} are expanded as systemd.service(5)
says (a lone $NAME word splits at blanks and an empty one is dropped;
${NAME} inside a word is replaced as is) from the unit's Environment=
lines and then the NAME=VALUE arguments (what its EnvironmentFile= would
hold, and MAINPID). The unit's CapabilityBoundingSet= and
NoNewPrivileges= are put in front as setpriv(1) options, so that the
command runs with the capabilities the unit gives it. Only the subset of
the syntax pktmap's units use is understood; anything else is an error
(a unit that grows beyond it must grow this too).
"""
import re
import sys


def fail(msg):
    print(f"unit_cmd.py: {msg}", file=sys.stderr)
    sys.exit(1)


def read_unit(path):
    """[Section] -> list of (key, value), continuation lines joined."""
    sec, out, cont = None, {}, ""
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = cont + raw.rstrip("\n")
            cont = ""
            if line.endswith("\\"):
                cont = line[:-1] + " "
                continue
            s = line.strip()
            if not s or s[0] in "#;":
                continue
            m = re.fullmatch(r"\[(\w+)\]", s)
            if m:
                sec = m.group(1)
                continue
            k, eq, v = s.partition("=")
            if not eq or sec is None:
                fail(f"{path}: cannot read '{s}'")
            out.setdefault(sec, []).append((k.strip(), v.strip()))
    return out


def specifiers(s, inst):
    def one(m):
        c = m.group(1)
        if c == "i":
            return inst
        if c == "%":
            return "%"
        fail(f"specifier %{c} is not handled")
    return re.sub(r"%(.)", one, s)


def expand(cmd, env):
    words = []
    for w in cmd.split():
        if w.startswith('"') or w.startswith("'"):
            fail(f"quoting is not handled: {cmd}")
        m = re.fullmatch(r"\$(\w+)", w)
        if m:
            words += env.get(m.group(1), "").split()
            continue
        words.append(re.sub(r"\$\{(\w+)\}", lambda m: env.get(m.group(1), ""), w))
    return words


def main():
    if len(sys.argv) < 4:
        fail("usage: unit_cmd.py UNIT KEY INSTANCE [NAME=VALUE...]")
    path, key, inst = sys.argv[1:4]
    unit = read_unit(path)
    svc = dict(unit.get("Service", []))
    env = {}
    for k, v in unit.get("Service", []):
        if k == "Environment":
            for a in v.split():
                n, _, val = a.partition("=")
                env[n] = val
    for a in sys.argv[4:]:
        n, _, val = a.partition("=")
        env[n] = val
    if key not in svc:
        fail(f"{path}: no {key}=")
    cmd = specifiers(svc[key], inst)
    if cmd[:1] in "-@:+!":
        fail(f"{path}: {key}= prefix '{cmd[0]}' is not handled")
    pre = []
    caps = svc.get("CapabilityBoundingSet")
    if caps is not None:
        keep = ",".join("+" + c.lower().removeprefix("cap_") for c in caps.split())
        pre += ["setpriv", "--bounding-set", "-all" + ("," + keep if keep else "")]
    if svc.get("NoNewPrivileges") == "yes":
        pre = (pre or ["setpriv"]) + ["--no-new-privs"]
    sys.stdout.write("\0".join(pre + expand(cmd, env)) + "\0")


main()
