#!/usr/bin/env python3
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
exit), the same clock for all three; medians of RUNS interleaved runs.

    bench/netmap.py [--quick]
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

QUICK = "--quick" in sys.argv
RUNS = 3 if QUICK else 7
COUNT = 10_000_000 if QUICK else 40_000_000
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
    if gen.returncode or recv.returncode:
        raise SystemExit(f"{way} {mode}: sender {gen.returncode} "
                         f"{gen.stderr.strip()} receiver {recv.returncode} "
                         f"{err.strip()}")
    if way != "pktmap" and f"received {COUNT} in order" not in out:
        raise SystemExit(f"{way} {mode}: receiver says: {out}")
    return COUNT / (t1 - t0)


def main():
    for exe in (NMT_LIB, NMT_RAW):
        if not os.access(exe, os.X_OK):
            raise SystemExit(f"{exe}: not built (ninja -C build)")
    ways = ["pktmap", "source", "binary"]
    points = []
    for mode in ("stamp", "fast"):
        runs = {w: [] for w in ways}
        for k in range(RUNS):
            for w in ways:  # interleaved: the machine's noise hits all
                runs[w].append(run_one(w, mode, k))
        base = common.summarize(runs["pktmap"])
        for w in ways:
            s = common.summarize(runs[w])
            ratio = s["median"] / base["median"]
            ratios = [a / b for a, b in zip(runs[w], runs["pktmap"])]
            print(f"{mode:5s} {w:7s} {s['median'] / 1e6:7.2f} Mpps "
                  f"(min {s['min'] / 1e6:.2f} max {s['max'] / 1e6:.2f})  "
                  f"{ratio:5.3f}x pktmap gen/recv "
                  f"(per-run ratios {min(ratios):.3f}..{max(ratios):.3f})")
            points.append({"mode": mode, "way": w, "pps": s,
                           "ratio_to_pktmap": ratio,
                           "run_ratios": ratios})
    common.write_result("netmap", {
        "count": COUNT, "size": SIZE, "runs": RUNS,
        "cpus": [CPU_GEN, CPU_RECV],
        "what": "netmap-API gen -> pipe -> recv through libpktmap-netmap "
                "(source) and netmap-run (binary) vs pktmap gen/recv",
    }, points)


if __name__ == "__main__":
    main()
