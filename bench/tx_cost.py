# SPDX-License-Identifier: BSD-2-Clause
"""Instructions per packet of pktmap's own code when `pktmap gen` sends on
a veth (the TX rows of bench/xdp_veth.sh and bench/pkt_veth.sh), under
callgrind: the difference between two runs of different lengths divided
by the difference in packets, so start-up cancels out. The kernel's work
is not counted (callgrind sees user space only).

    tx_cost.callgrind_tx() -> {"tx_xdp": N, "tx_pkt": N, "tx_pkt_copy": N}

(gen's pkt: TX sends from the kernel's frames, tx=frames; tx_pkt_copy is
the copying TX beside it.)

The veth pair lives in two namespaces of this process's own (pid-named),
removed at the end; frames go to a foreign unicast MAC, as in the rate
benchmarks."""
import os
import shutil
import subprocess

import common

NSA, NSB = f"ptcA{os.getpid()}", f"ptcB{os.getpid()}"


def _sh(*cmd):
    subprocess.run(list(cmd), check=True)


def _setup():
    _sh("ip", "netns", "add", NSA)
    _sh("ip", "netns", "add", NSB)
    _sh("ip", "link", "add", "vethA", "netns", NSA, "type", "veth", "peer",
        "name", "vethB", "netns", NSB)
    _sh("ip", "-n", NSA, "link", "set", "vethA", "up")
    _sh("ip", "-n", NSB, "link", "set", "vethB", "up")


def _cleanup():
    for ns in (NSA, NSB):
        subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)


def _instr(port, n):
    p = subprocess.run(
        ["ip", "netns", "exec", NSA, "valgrind", "--tool=callgrind",
         "--callgrind-out-file=/dev/null", common.pktmap_bin(), "gen",
         "-i", port, "-n", str(n), "-l", "60", "-D", "02:00:00:00:00:00",
         "-T", "0", "-q"], capture_output=True, text=True, timeout=900)
    got = common.callgrind_collected(p.stderr)
    if p.returncode or got is None:
        raise SystemExit(f"tx_cost {port}: " + p.stderr[-2000:])
    return got


def callgrind_tx():
    if not shutil.which("valgrind") or os.geteuid() != 0:
        return {}
    res = {}
    _setup()
    try:
        for key, port in (("tx_xdp", "xdp:vethA"), ("tx_pkt", "pkt:vethA"),
                          ("tx_pkt_copy", "pkt:vethA@conf:tx=copy")):
            a, b = _instr(port, 200_000), _instr(port, 600_000)
            res[key] = (b - a) / 400_000
            print(f"gen -> {port:10s} {res[key]:.2f} instructions/packet (callgrind)")
    finally:
        _cleanup()
    return res
