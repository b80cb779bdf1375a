#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A netmap program on pktmap against pktmap's own gen/recv, in one run:
generator -> pipe -> receiver, 60-byte frames, two processes pinned to
two cores, through each way a netmap program runs on pktmap:

  pktmap     pktmap gen / pktmap recv (-b 1024: the ring's worth)
  source     nmt_lib: netmap's libnetmap API, linked against
             libpktmap-netmap (open/ioctl/mmap/poll through the emulation)
  binary     nmt_raw: the raw /dev/netmap ABI, no pktmap library, run
             under `pktmap netmap-run` (LD_PRELOAD)

Two kinds of per-packet work, the same on both sides of the comparison:
"stamp" (the sender writes a sequence number, the receiver checks every
one; pktmap gen/recv without --fast) and "fast" (slot lengths only, no
payload access; --fast). Rate = packets / (sender start .. receiver
exit), the same clock for all three, RUNS interleaved rounds. The machine
is shared: single runs swing by 2x, so the figures to read are the best
run of each way (what it can do when nothing else runs) and the median of
the per-round ratios (the same noise hits the three ways of a round).
Beside it, the CPU time both processes used per packet (user + system,
from getrusage): time the machine gives to other jobs is not charged, so
it moves less than the rate; the ratio pktmap's / this way's is the
"no slower" figure (1.0 = the same cost).

Then the figure the noise cannot touch: instructions per packet under
callgrind, of a sender into the null: port (no peer, no waiting), for
pktmap gen --fast and the netmap program both ways, and how many of them
are the compatibility layer's own (libpktmap-netmap.so): the difference
between a run of 3M and one of 1M packets, divided by 2M.

    bench/netmap.py [--quick]
"""
import os
import re
import resource
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

QUICK = "--quick" in sys.argv
RUNS = 3 if QUICK else 5
COUNT = 10_000_000 if QUICK else 100_000_000
SIZE = 60
CPU_GEN, CPU_RECV = 0, 1 if (os.cpu_count() or 1) > 1 else 0
BUILD = os.path.join(common.ROOT, "build")
NMT_LIB = os.path.join(BUILD, "tests", "nmt_lib")
NMT_RAW = os.path.join(BUILD, "tests", "nmt_raw")


def pin(cpu, argv):
    return ["taskset", "-c", str(cpu)] + argv


def cmds(way, name, mode):
    """(receiver argv, sender argv) for one way and mode."""
    pm = common.pktmap_bin()
    n = str(COUNT)
    if way == "pktmap":
        extra = ["--fast"] if mode == "fast" else []
        rx = [pm, "recv", "-i", f"pipe:{name}}}0", "-n", n, "-b", "1024",
              "-T", "0", "-q"] + extra
        tx = [pm, "gen", "-i", f"pipe:{name}{{0", "-n", n, "-b", "1024",
              "-l", str(SIZE), "-T", "0", "-q"] + extra
        return rx, tx
    if way == "source":
        pre = [NMT_LIB]
    else:
        pre = [pm, "netmap-run", NMT_RAW]
    rx = pre + ["recv", f"netmap:{name}}}0", n, str(SIZE), "poll", mode]
    tx = pre + ["gen", f"netmap:{name}{{0", n, str(SIZE), "poll", mode]
    return rx, tx


def run_one(way, mode, k):
    name = f"bnm{os.getpid()}{way[0]}{k}"
    rx, tx = cmds(way, name, mode)
    recv = subprocess.Popen(pin(CPU_RECV, rx), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    if way != "pktmap":
        # nmt says "ready" once its port is open
        line = recv.stdout.readline()
        if not line.startswith("ready"):
            raise SystemExit(f"{way}: receiver: {line}{recv.stderr.read()}")
    else:
        time.sleep(0.2)
    t0 = time.monotonic()
    gen = subprocess.run(pin(CPU_GEN, tx), capture_output=True, text=True,
                         timeout=300)
    out, err = recv.communicate(timeout=300)
    t1 = time.monotonic()
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = ru.ru_utime + ru.ru_stime - run_one.cpu_before
    run_one.cpu_before = ru.ru_utime + ru.ru_stime
    if gen.returncode or recv.returncode:
        raise SystemExit(f"{way} {mode}: sender {gen.returncode} "
                         f"{gen.stderr.strip()} receiver {recv.returncode} "
                         f"{err.strip()}")
    if way != "pktmap" and f"received {COUNT} in order" not in out:
        raise SystemExit(f"{way} {mode}: receiver says: {out}")
    return COUNT / (t1 - t0), cpu * 1e9 / COUNT


run_one.cpu_before = 0.0


def callgrind(argv, env=None):
    """Instructions in all, and in libpktmap-netmap.so."""
    out = f"/tmp/pktmap-bench-cg.{os.getpid()}"
    e = dict(os.environ)
    e.update(env or {})
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
                   + argv, env=e, capture_output=True, check=True, timeout=600)
    ann = subprocess.run(["callgrind_annotate", out], capture_output=True,
                         text=True, check=True).stdout
    os.unlink(out)
    total = layer = 0
    for line in ann.splitlines():
        m = re.match(r"\s*([\d,]+) .*PROGRAM TOTALS", line)
        if m:
            total = int(m.group(1).replace(",", ""))
        m = re.match(r"\s*([\d,]+) \(.*\[(.*)\]$", line)
        if m and "libpktmap-netmap" in m.group(2):
            layer += int(m.group(1).replace(",", ""))
    return total, layer


def instructions():
    """Per packet, sender into null: (the difference of 3M and 1M)."""
    lib = os.path.join(BUILD, "compat", "netmap", "libpktmap-netmap-preload.so")
    ways = {
        "pktmap": lambda n: ([common.pktmap_bin(), "gen", "-i", "null:", "-n",
                              str(n), "--fast", "-b", "1024", "-T", "0", "-q"],
                             None),
        "source": lambda n: ([NMT_LIB, "gen", "netmap:null:", str(n), "60",
                              "poll", "fast"], None),
        "binary": lambda n: ([NMT_RAW, "gen", "netmap:null:", str(n), "60",
                              "poll", "fast"], {"LD_PRELOAD": lib}),
    }
    res = {}
    for w, mk in ways.items():
        a = callgrind(*mk(1_000_000))
        b = callgrind(*mk(3_000_000))
        per = (b[0] - a[0]) / 2e6
        layer = (b[1] - a[1]) / 2e6
        res[w] = {"instructions_per_packet": per,
                  "layer_instructions_per_packet": layer}
        print(f"callgrind {w:7s} {per:6.2f} instructions/packet, of which "
              f"libpktmap-netmap {layer:5.2f} ({100 * layer / per:4.2f}%)")
    return res


def main():
    common.quiet_note()
    for exe in (NMT_LIB, NMT_RAW):
        if not os.access(exe, os.X_OK):
            raise SystemExit(f"{exe}: not built (ninja -C build)")
    ways = ["pktmap", "source", "binary"]
    points = []
    for mode in ("stamp", "fast"):
        runs = {w: [] for w in ways}
        cpu = {w: [] for w in ways}
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        run_one.cpu_before = ru.ru_utime + ru.ru_stime
        for k in range(RUNS):
            for w in ways:  # interleaved: the machine's noise hits all
                pps, ns = run_one(w, mode, k)
                runs[w].append(pps)
                cpu[w].append(ns)
        base = common.summarize(runs["pktmap"])
        for w in ways:
            s = common.summarize(runs[w])
            best = s["max"] / base["max"]
            ratios = [a / b for a, b in zip(runs[w], runs["pktmap"])]
            med = common.summarize(ratios)["median"]
            c = common.summarize(cpu[w])
            cratio = common.summarize(cpu["pktmap"])["median"] / c["median"]
            print(f"{mode:5s} {w:7s} best {s['max'] / 1e6:7.2f} Mpps, median "
                  f"{s['median'] / 1e6:7.2f} (min {s['min'] / 1e6:.2f})  vs "
                  f"pktmap gen/recv: best/best {best:5.3f}x, median of "
                  f"round ratios {med:5.3f}x; CPU {c['median']:.1f} ns/packet "
                  f"(both processes), pktmap's/this {cratio:5.3f}x")
            points.append({"mode": mode, "way": w, "pps": s,
                           "ratio_best": best, "ratio_median_of_rounds": med,
                           "round_ratios": ratios,
                           "cpu_ns_per_packet": c,
                           "cpu_ratio_pktmap_over_this": cratio})
    cg = instructions() if shutil.which("valgrind") else {}
    common.write_result("netmap", {
        "count": COUNT, "size": SIZE, "runs": RUNS,
        "cpus": [CPU_GEN, CPU_RECV],
        "what": "netmap-API gen -> pipe -> recv through libpktmap-netmap "
                "(source) and netmap-run (binary) vs pktmap gen/recv",
    }, {"throughput": points, "callgrind_sender_to_null": cg})


if __name__ == "__main__":
    main()
