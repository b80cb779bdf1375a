#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""gen -> pipe -> recv across two processes pinned to two cores: batch
sweep (the netmap paper's Figure 7, on a pipe) and size sweep; gen -> null
for pktmap's own cost per packet (TSC cycles, callgrind instructions);
and DPDK's ring_perf_autotest in the same run as the peer.

    bench/pipe.py [--quick]     (env: BATCHES="256 512" SIZES="" for a
                                 subset, e.g. the ratio to rte_ring alone)
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

QUICK = "--quick" in sys.argv
RUNS = 1 if QUICK else 3
# BATCHES="256 512" SIZES="" (env): a subset, e.g. the ratio alone.
BATCHES = [int(b) for b in os.environ.get(
    "BATCHES", "1 2 4 8 16 32 64 128 256 512").split()]
SIZES = [int(b) for b in os.environ.get("SIZES", "60 128 256 512 1024 1514").split()]
CPU_GEN, CPU_RECV = 0, 1 if (os.cpu_count() or 1) > 1 else 0


# Where the time goes, per run at batch >= 256: CPU time per packet of
# each whole core (/proc/stat: user + system + irq + softirq) and system
# calls per 1,000 packets of each side.
WHERE = []


def run_pipe(batch, size, fast, count, conf=""):
    """One gen -> recv run; returns the receiver's packets per second.
    conf: "@conf:..." appended to the receiver's port name."""
    pm = common.pktmap_bin()
    name = f"bench{os.getpid()}"
    extra = ["--fast"] if fast else []
    recv = subprocess.Popen(
        [pm, "recv", "-i", f"pipe:{name}}}0{conf}", "-n", str(count), "-b", str(batch),
         "-a", str(CPU_RECV), "-T", "0", "--json"] + extra,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    where = batch >= 256 and not conf
    if where:
        rsys = common.Syscalls().start(recv.pid)
        b0 = [common.cpu_busy(c)[0] for c in (CPU_GEN, CPU_RECV)]
    genp = subprocess.Popen(
        [pm, "gen", "-i", f"pipe:{name}{{0", "-n", str(count), "-b", str(batch),
         "-l", str(size), "-a", str(CPU_GEN), "-T", "0", "--json"] + extra,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if where:
        gsys = common.Syscalls().start(genp.pid)
    gout, _ = genp.communicate(timeout=300)
    gen = subprocess.CompletedProcess(genp.args, genp.returncode, gout)
    out, _ = recv.communicate(timeout=300)
    if where:
        hz = os.sysconf("SC_CLK_TCK")
        b1 = [common.cpu_busy(c)[0] for c in (CPU_GEN, CPU_RECV)]
        ng, nr = gsys.stop(), rsys.stop()
        WHERE.append({
            "batch": batch, "size": size, "fast": fast, "packets": count,
            "cpu_ns_per_pkt_gen_core": (b1[0] - b0[0]) / hz * 1e9 / count,
            "cpu_ns_per_pkt_recv_core": (b1[1] - b0[1]) / hz * 1e9 / count,
            "syscalls_per_1000_gen": ng * 1000 / count if ng is not None else None,
            "syscalls_per_1000_recv": nr * 1000 / count if nr is not None else None})
    r = json.loads(out)
    g = json.loads(gen.stdout)
    if r["packets"] != count or g["packets"] != count:
        raise SystemExit(f"lost packets: sent {g['packets']} got {r['packets']}")
    if not fast and (r.get("gaps", 0) or r.get("reordered", 0) or r.get("bad", 0)):
        raise SystemExit(f"receiver saw errors: {r}")
    return r["pps"]


def count_for(batch):
    n = max(10_000_000, batch * 1_500_000)
    return min(n, 400_000_000) // (4 if QUICK else 1)


def sweep_batches():
    points = []
    for fast in (True, False):
        for b in BATCHES:
            runs = [run_pipe(b, 60, fast, count_for(b)) for _ in range(RUNS)]
            s = common.summarize(runs)
            mode = "no payload writes" if fast else "seq stamped+checked"
            print(f"pipe batch {b:4d} {mode:20s} {s['median'] / 1e6:8.1f} Mpps")
            points.append({"batch": b, "size": 60, "fast": fast, "pps": s})
    return points


def sweep_sizes():
    points = []
    for fast in (True, False):
        for size in SIZES:
            runs = [run_pipe(256, size, fast, count_for(256) // 2)
                    for _ in range(RUNS)]
            s = common.summarize(runs)
            gbps = s["median"] * size * 8 / 1e9
            print(f"pipe size {size:5d} {'fast' if fast else 'stamped':8s} "
                  f"{s['median'] / 1e6:8.1f} Mpps {gbps:7.1f} Gbit/s (frame bits)")
            points.append({"batch": 256, "size": size, "fast": fast, "pps": s})
    return points


def no_spin():
    """The receiver without pktmap_poll()'s spin before sleeping
    (@conf:spin-us=0): what the spin buys at batch 256."""
    runs = [run_pipe(256, 60, True, count_for(256) // 8, "@conf:spin-us=0")
            for _ in range(RUNS)]
    s = common.summarize(runs)
    print(f"pipe batch  256 receiver without spin  {s['median'] / 1e6:8.1f} Mpps")
    return {"batch": 256, "size": 60, "fast": True, "spin_us": 0, "pps": s}


def gen_null(fast, count=200_000_000):
    pm = common.pktmap_bin()
    extra = ["--fast"] if fast else []
    runs = []
    for _ in range(RUNS):
        out = subprocess.run(
            [pm, "gen", "-i", "null:", "-n", str(count // (4 if QUICK else 1)),
             "-b", "512", "-a", str(CPU_GEN), "-T", "0", "--json"] + extra,
            capture_output=True, text=True, check=True, timeout=300)
        runs.append(json.loads(out.stdout)["pps"])
    s = common.summarize(runs)
    hz = common.tsc_hz()
    cyc = common.summarize([hz / p for p in runs])
    print(f"gen -> null {'fast' if fast else 'stamped':8s} {s['median'] / 1e6:8.1f} Mpps"
          f"  {cyc['median']:.1f} TSC cycles/packet")
    return {"fast": fast, "pps": s, "tsc_cycles_per_packet": cyc}


def callgrind_null(fast):
    """Instructions per packet, exact: the difference between two runs of
    different lengths divided by the difference in packets."""
    if not shutil.which("valgrind"):
        return None
    pm = common.pktmap_bin()
    extra = ["--fast"] if fast else []

    def instr(n):
        p = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
             pm, "gen", "-i", "null:", "-n", str(n), "-b", "512", "-T", "0",
             "-q"] + extra, capture_output=True, text=True, timeout=600)
        n = common.callgrind_collected(p.stderr)
        if n is None:
            raise SystemExit("callgrind: no count in output:\n" + p.stderr[-2000:])
        return n

    a, b = instr(1_000_000), instr(3_000_000)
    ipp = (b - a) / 2_000_000
    print(f"gen -> null {'fast' if fast else 'stamped':8s} {ipp:.2f} instructions/packet (callgrind)")
    return ipp


def pipe_cost():
    """Instructions per packet of a pipe's txsync + rxsync (and a minimal
    loop around them), one thread, under callgrind: exact, and the same
    on a loaded machine (bench/pipe_cost.c)."""
    if not shutil.which("valgrind"):
        return None
    exe = os.path.join(common.ROOT, "build", "bench", "pipe_cost")

    def instr(n):
        p = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
             exe, str(n)], capture_output=True, text=True, timeout=600)
        n = common.callgrind_collected(p.stderr)
        if p.returncode or n is None:
            raise SystemExit("pipe_cost: " + p.stderr[-2000:])
        return n

    a, b = instr(2000), instr(6000)
    ipp = (b - a) / (4000 * 256)
    print(f"pipe txsync+rxsync+loop: {ipp:.2f} instructions/packet (callgrind)")
    return ipp


def rte_ring():
    """DPDK's ring_perf_autotest: SP/SC bulk 32 between two cores."""
    exe = shutil.which("dpdk-test")
    if not exe:
        print("dpdk-test not installed (Debian package dpdk-dev): no peer figure")
        return None
    p = subprocess.run([exe, "--no-huge", "--no-pci", "-l", f"{CPU_GEN},{CPU_RECV}",
                        "-m", "512", "--log-level=lib.eal:error"],
                       input="ring_perf_autotest\n", capture_output=True,
                       text=True, timeout=600)
    out = p.stdout
    res = {}
    section = None
    for line in out.splitlines():
        m = re.match(r"### Testing (.*) ###", line)
        if m:
            section = m.group(1)
            continue
        m = re.match(r"(legacy APIs|elem APIs: element size 16B): SP/SC: bulk "
                     r"\(size: 32\): ([\d.]+)", line.strip())
        if m and section:
            api = "ptr8" if m.group(1).startswith("legacy") else "elem16"
            res.setdefault(api, {})[section] = float(m.group(2))
    two = res.get("ptr8", {}).get("using two physical cores")
    if two is None:
        print("ring_perf_autotest gave no two-core figure:\n" + out[-1500:])
        return {"raw": res}
    hz = common.tsc_hz()
    print(f"rte_ring SP/SC bulk 32, two cores: {two:.2f} cycles/element "
          f"= {hz / two / 1e6:.1f} M elements/s")
    two16 = res.get("elem16", {}).get("using two physical cores")
    return {"sections": res, "two_core_cycles_per_elem": two,
            "two_core_elems_per_s": hz / two,
            "two_core_16B_elems_per_s": hz / two16 if two16 else None,
            "single_core_cycles_per_elem": res.get("ptr8", {}).get("bulk enq/deq")}


def main():
    common.quiet_note()
    params = {"runs": RUNS, "cpu_gen": CPU_GEN, "cpu_recv": CPU_RECV,
              "frame": "60 bytes + 4 CRC unless size given", "counted_at": "receiver"}
    peer = rte_ring()
    batches = sweep_batches()
    sizes = sweep_sizes()
    spin_off = no_spin() if 256 in BATCHES else None
    null = [gen_null(True), gen_null(False)]
    instr = {"fast": callgrind_null(True), "stamped": callgrind_null(False),
             "pipe_one_thread": pipe_cost()}
    best = max(p["pps"]["median"] for p in batches if p["batch"] >= 256 and p["fast"])
    best_st = max(p["pps"]["median"] for p in batches if p["batch"] >= 256 and not p["fast"])
    summary = {"pipe_mpps_batch256plus_fast": best / 1e6,
               "pipe_mpps_batch256plus_stamped": best_st / 1e6}
    if peer and peer.get("two_core_elems_per_s"):
        summary["ratio_vs_rte_ring_fast"] = best / peer["two_core_elems_per_s"]
        summary["ratio_vs_rte_ring_stamped"] = best_st / peer["two_core_elems_per_s"]
    if peer and peer.get("two_core_16B_elems_per_s"):
        # The issue's yardstick: rte_ring elements of 16 bytes (a pipe
        # descriptor is 8), SP/SC bulk 32, two cores, same run.
        e16 = peer["two_core_16B_elems_per_s"]
        summary["ratio_vs_rte_ring16_fast"] = best / e16
        summary["ratio_vs_rte_ring16_stamped"] = best_st / e16
    print("summary:", json.dumps(summary))
    common.write_result("pipe", params, {
        "batch_sweep": batches, "size_sweep": sizes, "no_spin": spin_off,
        "gen_null": null, "where_time_goes": WHERE,
        "callgrind_instr_per_packet": instr, "rte_ring": peer,
        "summary": summary})


if __name__ == "__main__":
    main()
