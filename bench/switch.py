#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""pktmap switch: its own cost per frame, end to end over client
processes, and between veths beside the Linux bridge.

    bench/switch.py [--quick] [--no-veth]

1. The switch's work per frame (build/bench/switch_cost, one process,
   pinned to CPU 1): 2, 4 and 8 client pipes, 60-byte frames, every client
   sending to the next one's learned MAC (one copy per frame); only the
   switch's rounds are timed: TSC ticks per frame switched (rxsync, the
   descriptor checks, the lookup, grouping, the copy, txsync). And the
   same under callgrind (--toggle-collect=sw_round): instructions per
   frame, exact and repeatable whatever the machine is doing.
2. End to end, 2 ports: pktmap gen -i valeX:a (broadcast) -> pktmap
   switch (CPU 1) -> pktmap recv --fast -i valeX:b (gen and recv on CPU
   0), beside gen -> pipe -> recv (no switch, same CPUs) in the same run.
   Frames that do not fit the receiver's ring are dropped by the switch
   (as VALE does; a pipe alone has backpressure): the rate is what recv
   counted over its own time, with the fraction delivered.
3. veth (root): gen on xdp:va (netns A, CPU 0) -> vb1 [B: pktmap switch
   -a xdp:vb1 -a xdp:vb2, pinned to CPU 1; or the Linux bridge] vb2 -> vc
   (netns C), counted by vc's kernel rx_packets (bench/forward.py's
   set-up and measurement).

The machine is a shared 2-vCPU VM: absolute figures move with whatever
else runs; the ratios measured side by side in one run are the figures
to quote.

Results: bench/results/switch.json.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

QUICK = "--quick" in sys.argv
VETH = "--no-veth" not in sys.argv
RUNS = 1 if QUICK else 3
PM = common.pktmap_bin()
BUILD = os.path.dirname(os.path.dirname(os.path.abspath(PM)))
COST = os.path.join(BUILD, "bench", "switch_cost")
TMP = tempfile.mkdtemp(prefix="pmsw.")


def cost_points():
    frames = 2_000_000 if QUICK else 10_000_000
    pts = []
    for n in (2, 4, 8):
        cyc = []
        for _ in range(RUNS):
            out = subprocess.run(["taskset", "-c", "1", COST, str(n),
                                  str(frames)], capture_output=True,
                                 text=True, check=True).stdout
            cyc.append(json.loads(out)["cycles_per_frame"])
        cg = os.path.join(TMP, f"cg.{n}")
        out = subprocess.run(["valgrind", "--tool=callgrind",
                              f"--callgrind-out-file={cg}",
                              "--toggle-collect=sw_round", COST, str(n),
                              "200000"], capture_output=True, text=True,
                             check=True).stdout
        switched = json.loads(out)["frames"]
        ir = None
        for line in open(cg):
            if line.startswith("summary:"):
                ir = int(line.split()[1])
        p = {"ports": n, "tsc_cycles_per_frame": common.summarize(cyc),
             "instructions_per_frame": ir / switched}
        print(f"switch work, {n} ports: {p['tsc_cycles_per_frame']['median']:.1f} "
              f"TSC cycles/frame (min {min(cyc):.1f}), "
              f"{p['instructions_per_frame']:.1f} instructions/frame")
        pts.append(p)
    return pts


def run_json(cmd, timeout=120):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return json.loads(out.stdout)


def e2e_once(count):
    sw_name = f"valeb{os.getpid() % 100000}"
    sw = subprocess.Popen([PM, "switch", sw_name, "--affinity", "1", "-T", "0",
                           "--json"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True)
    for _ in range(100):
        if subprocess.run([PM, "switch", "--list", sw_name],
                          capture_output=True).returncode == 0:
            break
        time.sleep(0.05)
    # recv shares CPU 0 with gen: a ring of 16384 slots rides out the
    # time slices in which it does not run
    recv = subprocess.Popen(["taskset", "-c", "0", PM, "recv", "-i",
                             f"{sw_name}:b@conf:slots=16384", "--fast", "--idle",
                             "3", "-T", "0", "-q", "--json"],
                            stdout=subprocess.PIPE, text=True)
    for _ in range(100):
        out = subprocess.run([PM, "switch", "--list", sw_name],
                             capture_output=True, text=True).stdout
        if re.search(r"^b ", out, re.M):
            break
        time.sleep(0.05)
    # not --fast: through a pipe --fast leaves stale bytes (MACs) in the
    # buffers it gets back, and the switch would filter those frames
    subprocess.run(["taskset", "-c", "0", PM, "gen", "-i", f"{sw_name}:a",
                    "-D", "ff:ff:ff:ff:ff:ff", "-n", str(count), "-T", "0",
                    "-q"], check=True)
    r = json.loads(recv.communicate(timeout=120)[0])
    sw.send_signal(15)
    s = json.loads(sw.communicate(timeout=60)[0])
    return r["pps"], r["packets"], s["cycles_per_frame"]


def pipe_once(count):
    name = f"pipe:swb{os.getpid()}"
    recv = subprocess.Popen(["taskset", "-c", "0", PM, "recv", "-i", name + "}0",
                             "--fast", "-n", str(count), "-T", "0", "-q",
                             "--json"], stdout=subprocess.PIPE, text=True)
    time.sleep(0.3)
    subprocess.run(["taskset", "-c", "0", PM, "gen", "-i", name + "{0",
                    "-n", str(count), "-T", "0", "-q"], check=True)
    return json.loads(recv.communicate(timeout=120)[0])["pps"]


def e2e_points():
    count = 5_000_000 if QUICK else 20_000_000
    sw_pps, sw_cyc, sw_frac, pipe_pps = [], [], [], []
    for _ in range(RUNS):
        pps, got, cyc = e2e_once(count)
        sw_pps.append(pps)
        sw_cyc.append(cyc)
        sw_frac.append(got / count)
        pipe_pps.append(pipe_once(count))
    p = {"switch_pps": common.summarize(sw_pps),
         "switch_delivered_fraction": common.summarize(sw_frac),
         "switch_cycles_per_frame": common.summarize(sw_cyc),
         "pipe_pps": common.summarize(pipe_pps)}
    print(f"end to end, 2 ports: switch {p['switch_pps']['median'] / 1e6:.2f} Mpps "
          f"({100 * p['switch_delivered_fraction']['median']:.0f}% delivered, "
          f"{p['switch_cycles_per_frame']['median']:.1f} TSC cycles/frame), "
          f"plain pipe {p['pipe_pps']['median'] / 1e6:.2f} Mpps")
    return p


def veth_points():
    if os.geteuid() != 0 or not shutil.which("ip"):
        print("veth: needs root and iproute2: skipped")
        return {}
    import forward  # the veth set-up and measurement of bench/forward.py
    v = forward.Veth()
    A, B, C = v.ns
    res = {"pktmap switch (xdp)": [], "Linux bridge": []}
    try:
        vc = v.mac(C, "vc")
        sw = f"valev{os.getpid() % 100000}"
        for _ in range(RUNS):
            pps = forward.veth_measure(
                v, [PM, "switch", sw, "-a", "xdp:vb1", "-a", "xdp:vb2",
                    "--affinity", "1", "-T", "0", "-q"], ["-D", vc],
                stop_sig="TERM")
            res["pktmap switch (xdp)"].append(pps)
            forward.sh("ip", "-n", B, "link", "add", "br0", "type", "bridge")
            for d in ("vb1", "vb2"):
                forward.sh("ip", "-n", B, "link", "set", d, "master", "br0")
            forward.sh("ip", "-n", B, "link", "set", "br0", "up")
            bpps = forward.veth_measure(v, None, ["-D", vc])
            forward.sh("ip", "-n", B, "link", "del", "br0")
            res["Linux bridge"].append(bpps)
            print(f"veth: pktmap switch {pps / 1e6:.3f} Mpps, Linux bridge "
                  f"{bpps / 1e6:.3f} Mpps, ratio {pps / bpps:.2f}")
    finally:
        v.close()
    out = {k: common.summarize(x) for k, x in res.items()}
    out["ratio_median"] = (out["pktmap switch (xdp)"]["median"] /
                           out["Linux bridge"]["median"])
    return out


def main():
    common.quiet_note()
    common.tsc_hz()
    params = {"runs": RUNS, "frame": "60 bytes + 4 CRC", "quick": QUICK,
              "note": "shared 2-vCPU VM, other jobs running: quote the "
                      "ratios measured side by side"}
    cost = cost_points()
    e2e = e2e_points()
    veth = veth_points() if VETH else {}
    common.write_result("switch", params, {"cost": cost, "end_to_end": e2e,
                                           "veth": veth})
    shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    main()
