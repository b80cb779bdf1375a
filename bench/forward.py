#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Forwarding: pktmap bridge and pktmap router (MapRouter) over pipes, and
over veth (xdp) beside the Linux bridge, kernel IP forwarding and
dpdk-testpmd io forwarding on two net_af_xdp ports.

    bench/forward.py [--quick] [--no-veth]

Pipes (60-byte frames, counted at the receivers):
  - bridge: gen --fast -> pipe -> bridge (pinned to CPU 1) -> pipe ->
    recv --fast, gen and recv on CPU 0; zero-copy (one region) and --copy.
  - router: N inputs and N outputs (N = 2, 4: "N x N", N^2 queues in use),
    random (--outputs) and lpm (256 /24 routes spread over the outputs,
    every frame's TTL decremented); the router's RX stages and the gens
    on CPU 0, its TX stages and the recvs on CPU 1.
  For each: Mpps delivered (sum over receivers), the forwarder's cost per
  frame (the router's per stage) in cycles, and the one-core (bridge) or
  two-core pipeline (router: TSC rate / slowest stage) rate that cost
  allows. The forwarders measure their rounds two ways, both upper bounds
  of their own work: TSC ticks of the rounds that moved something (which
  also count the time the thread was preempted by the gens and recvs
  sharing the cores) and the thread's CPU time of its rounds (which also
  counts a clock read per wait and the last empty round before it, a lot
  per frame when batches are small); the cost is the smaller of the two. The router's zero-loss rate is
  found by binary search on gen -R (the highest offered rate at which the
  router dropped nothing and every frame arrived).

These VMs have 2 vCPUs, so the generators and receivers share the cores
with the forwarder: the delivered rates say what the whole chain does on
2 cores; the cycles say what the forwarder itself costs.

veth (root): gen on xdp:va (netns A, CPU 0) -> vb1 [forwarder in netns B,
CPU 1] vb2 -> vc (netns C), counted by vc's kernel rx_packets over a
window: pktmap bridge (zero-copy, one UMEM), pktmap router (2 ports,
static), the Linux bridge, kernel IP forwarding, dpdk-testpmd io.

The bridge's instructions per frame under callgrind (exact, library syncs
included) are the figure to track from commit to commit.

Results: bench/results/forward.json; bench/plot draws forward.png.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

QUICK = "--quick" in sys.argv
VETH = "--no-veth" not in sys.argv
RUNS = 1 if QUICK else 3
SCALE = 4 if QUICK else 1
PM = common.pktmap_bin()
TMP = tempfile.mkdtemp(prefix="pmfwd.")
_seq = [0]


def uniq(tag):
    _seq[0] += 1
    return f"fw{os.getpid()}{tag}{_seq[0]}"


def popen(cmd, **kw):
    return subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, **kw)


def out_json(p, timeout=300):
    out, _ = p.communicate(timeout=timeout)
    return json.loads(out)


def rm_region(name):
    for f in os.listdir("/dev/shm"):
        if f.startswith("pktmap." + name):
            try:
                os.unlink(os.path.join("/dev/shm", f))
            except OSError:
                pass


# ---------------------------------------------------------------- pipes

def bridge_once(zerocopy, count):
    r = uniq("b")
    mem = f"@mem:{r}"
    extra = [] if zerocopy else ["--copy"]
    br = popen([PM, "bridge", f"pipe:x}}0{mem}", f"pipe:x{{1{mem}", "-a", "1",
                "-n", str(count), "-T", "0", "-q", "--json"] + extra)
    time.sleep(0.3)
    rc = popen([PM, "recv", "-i", f"pipe:x}}1{mem}", "-n", str(count), "--fast",
                "-a", "0", "-T", "0", "-q", "--json"])
    time.sleep(0.1)
    g = subprocess.run([PM, "gen", "-i", f"pipe:x{{0{mem}", "-n", str(count),
                        "--fast", "-a", "0", "-T", "0", "-q", "--json"],
                       capture_output=True, text=True, timeout=300)
    rj, bj = out_json(rc), out_json(br)
    rm_region(r)
    if rj["packets"] != count or g.returncode:
        raise SystemExit(f"bridge lost frames: {rj['packets']} of {count}")
    cpu = bj["cpu_ns_per_packet"] * common.tsc_hz() / 1e9
    return rj["pps"], min(cpu, bj["cycles_per_packet"]), cpu, \
        bj["cycles_per_packet"]


def bridge_points():
    hz = common.tsc_hz()
    pts = []
    for zc in (True, False):
        runs = [bridge_once(zc, 50_000_000 // SCALE) for _ in range(RUNS)]
        pps = common.summarize([r[0] for r in runs])
        cyc = common.summarize([r[1] for r in runs])
        cpu = common.summarize([r[2] for r in runs])
        wall = common.summarize([r[3] for r in runs])
        cap = hz / cyc["median"]
        mode = "zero-copy" if zc else "copy"
        print(f"bridge pipe {mode:9s} delivered {pps['median'] / 1e6:6.2f} Mpps,"
              f" {cyc['median']:6.1f} cycles/frame -> {cap / 1e6:6.1f} Mpps on one core")
        pts.append({"mode": mode, "pps": pps, "cycles_per_packet": cyc,
                    "cpu_time_cycles_per_packet": cpu,
                    "tsc_wall_cycles_per_packet": wall, "one_core_pps": cap,
                    "callgrind_instructions_per_packet": callgrind_bridge(zc)})
    return pts


def callgrind_bridge(zerocopy):
    """Instructions per frame of the bridge process, exact whatever the
    machine is doing: the difference between two runs of different
    lengths under valgrind (gen and recv run natively and keep it busy)."""
    if not shutil.which("valgrind"):
        return None

    def instr(n):
        r = uniq("c")
        mem = f"@mem:{r}"
        extra = [] if zerocopy else ["--copy"]
        br = subprocess.Popen(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
             PM, "bridge", f"pipe:x}}0{mem}", f"pipe:x{{1{mem}", "-n", str(n),
             "-T", "0", "-q"] + extra, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True)
        time.sleep(3)
        rc = popen([PM, "recv", "-i", f"pipe:x}}1{mem}", "-n", str(n), "--fast",
                    "-T", "0", "-q", "--json"])
        subprocess.run([PM, "gen", "-i", f"pipe:x{{0{mem}", "-n", str(n),
                        "--fast", "-T", "0", "-q"], capture_output=True,
                       timeout=600)
        out_json(rc, timeout=600)
        _, err = br.communicate(timeout=600)
        rm_region(r)
        return common.callgrind_collected(err)

    a, b = instr(1_000_000), instr(3_000_000)
    ipp = (b - a) / 2_000_000
    print(f"bridge pipe {'zero-copy' if zerocopy else 'copy':9s} "
          f"{ipp:.1f} instructions/frame (callgrind, library syncs included)")
    return ipp


def write_routes(path, nin, nout):
    with open(path, "w") as f:
        for x in range(256):
            f.write(f"10.0.{x}.0/24 {nin + x % nout}\n")


def router_once(n, mode, count, rate=None, queue=None):
    """n inputs, n outputs. Returns (delivered pps, router JSON, recv sum,
    gen sum)."""
    r = uniq("r")
    mem = f"@mem:{r}"
    ports = []
    for k in range(2 * n):
        ports += ["-i", f"pipe:x{{{k}{mem}"]
    outs = ",".join(str(n + k) for k in range(n))
    args = ["-m", mode]
    if mode == "random":
        args += ["--outputs", outs]
    else:
        routes = os.path.join(TMP, f"routes{n}")
        write_routes(routes, n, n)
        args += ["-r", routes]
    if queue:
        args += ["--queue", str(queue)]
    rt = popen([PM, "router"] + ports + args + ["-p", "2", "-a", "0,1",
               "--idle", "1", "-T", "0", "-q", "--json"])
    time.sleep(0.5)
    recvs = [popen([PM, "recv", "-i", f"pipe:x}}{n + k}{mem}", "--fast",
                    "-a", "1", "--idle", "1", "-T", "0", "-q", "--json"])
             for k in range(n)]
    gen_args = ["--fast"] if mode == "random" else ["-d", "10.0.0.1-10.0.255.254"]
    if rate:
        gen_args += ["-R", str(int(rate))]
    gens = [popen([PM, "gen", "-i", f"pipe:x}}{k}{mem}", "-n", str(count),
                   "-a", "0", "-T", "0", "-q", "--json"] + gen_args)
            for k in range(n)]
    gj = [out_json(g) for g in gens]
    rj = [out_json(x) for x in recvs]
    tj = out_json(rt)
    rm_region(r)
    if not tj["conserved"]:
        raise SystemExit(f"router: buffers not conserved: {tj}")
    got = sum(x["packets"] for x in rj)
    return sum(x["pps"] for x in rj), tj, got, sum(x["packets"] for x in gj)


def router_points():
    hz = common.tsc_hz()
    pts = []
    for n in (2, 4):
        for mode in ("random", "lpm"):
            count = (20_000_000 if mode == "random" else 5_000_000) // SCALE
            runs = [router_once(n, mode, count) for _ in range(RUNS)]
            pps = common.summarize([x[0] for x in runs])
            crx = common.summarize([min(x[1]["rx_cpu_ns_per_packet"] * hz / 1e9,
                                        x[1]["rx_cycles_per_packet"])
                                    for x in runs])
            ctx = common.summarize([min(x[1]["tx_cpu_ns_per_packet"] * hz / 1e9,
                                        x[1]["tx_cycles_per_packet"])
                                    for x in runs])
            cap = hz / max(crx["median"], ctx["median"])
            drop = statistics.median([x[1]["dropped"] / max(1, x[3]) for x in runs])
            print(f"router {n}x{n} {mode:6s} delivered {pps['median'] / 1e6:6.2f} Mpps"
                  f" ({drop * 100:4.1f}% dropped), RX {crx['median']:5.1f} TX"
                  f" {ctx['median']:5.1f} cycles/frame -> {cap / 1e6:6.1f} Mpps"
                  " on 2 cores")
            pts.append({"ports": f"{n}x{n}", "mode": mode, "pps": pps,
                        "dropped_fraction": drop, "rx_cycles_per_packet": crx,
                        "tx_cycles_per_packet": ctx, "two_core_pps": cap})
    return pts


def zero_loss(n, mode):
    """Binary search on the offered rate (all gens together): the highest
    at which every frame arrived. A few short trials."""
    lo, hi = 0.0, 12e6
    best = 0.0
    for _ in range(4 if QUICK else 6):
        mid = (lo + hi) / 2
        per_gen = mid / n
        count = int(max(per_gen * 0.5, 20000))   # half a second
        _, tj, got, sent = router_once(n, mode, count, rate=per_gen, queue=4096)
        ok = got == sent and tj["dropped"] == 0
        print(f"  zero-loss {n}x{n} {mode}: {mid / 1e6:5.2f} Mpps offered:"
              f" {'no loss' if ok else f'lost {sent - got}'}")
        if ok:
            best, lo = mid, mid
        else:
            hi = mid
    print(f"router {n}x{n} {mode} zero-loss rate {best / 1e6:.2f} Mpps")
    return {"ports": f"{n}x{n}", "mode": mode, "zero_loss_pps": best,
            "queue": 4096, "searched_up_to": hi}


# ----------------------------------------------------------------- veth

def sh(*cmd, check=True):
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


class Veth:
    """gen in A (xdp:va) -> vb1 [B] vb2 -> vc (C, counted)."""

    def __init__(self):
        p = os.getpid()
        self.ns = [f"pmfA{p}", f"pmfB{p}", f"pmfC{p}"]
        A, B, C = self.ns
        for ns in self.ns:
            sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", "va", "netns", A, "type", "veth", "peer",
           "name", "vb1", "netns", B)
        sh("ip", "link", "add", "vb2", "netns", B, "type", "veth", "peer",
           "name", "vc", "netns", C)
        for ns in self.ns:
            sh("ip", "netns", "exec", ns, "sysctl", "-qw",
               "net.ipv6.conf.all.disable_ipv6=1")
            sh("ip", "netns", "exec", ns, "sysctl", "-qw",
               "net.ipv6.conf.default.disable_ipv6=1")
        sh("ip", "-n", A, "link", "set", "va", "up")
        sh("ip", "-n", B, "link", "set", "vb1", "up")
        sh("ip", "-n", B, "link", "set", "vb2", "up")
        sh("ip", "-n", C, "link", "set", "vc", "up")

    def mac(self, ns, dev):
        return sh("ip", "netns", "exec", ns, "cat",
                  f"/sys/class/net/{dev}/address").stdout.strip()

    def rx(self):
        return int(sh("ip", "netns", "exec", self.ns[2], "cat",
                      "/sys/class/net/vc/statistics/rx_packets").stdout)

    def close(self):
        for ns in self.ns:
            sh("ip", "netns", "del", ns, check=False)


def veth_measure(v, fwd_cmd, gen_extra, secs=2.0, warm=1.0, stop_sig="INT"):
    """Start the forwarder in B (it pins itself to CPU 1), gen in A on
    CPU 0; Mpps counted at vc over `secs` after `warm`."""
    A, B, _ = v.ns
    fwd = None
    if fwd_cmd:
        fwd = subprocess.Popen(["ip", "netns", "exec", B] + fwd_cmd,
                               stdin=subprocess.PIPE,
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        time.sleep(2.0)
    gen = subprocess.Popen(["ip", "netns", "exec", A, PM, "gen", "-i", "xdp:va",
                            "--fast", "-a", "0", "-T", "0", "-q"] + gen_extra,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(warm)
    r0, t0 = v.rx(), time.monotonic()
    time.sleep(secs)
    r1, t1 = v.rx(), time.monotonic()
    gen.send_signal(2)
    gen.wait(timeout=30)
    if fwd:
        fwd.send_signal(2 if stop_sig == "INT" else 15)
        try:
            fwd.wait(timeout=30)
        except subprocess.TimeoutExpired:
            fwd.kill()
            fwd.wait()
    return (r1 - r0) / (t1 - t0)


def veth_points():
    if os.geteuid() != 0 or not shutil.which("ip"):
        print("veth: needs root and iproute2: skipped")
        return []
    v = Veth()
    A, B, C = v.ns
    res = {}
    try:
        vb1 = v.mac(B, "vb1")
        vc = v.mac(C, "vc")
        mem = f"@mem:{uniq('v')}"
        tools = {
            "pktmap bridge (xdp, zero-copy)": (
                [PM, "bridge", f"xdp:vb1{mem}", f"xdp:vb2{mem}", "-a", "1",
                 "-T", "0", "-q"], ["-D", vc]),
            "pktmap router 2 ports (xdp, static)": (
                [PM, "router", "-i", f"xdp:vb1{mem}", "-i", f"xdp:vb2{mem}",
                 "-p", "1", "-a", "1", "-T", "0", "-q"], ["-D", vc]),
            "Linux bridge": ("linux-bridge", ["-D", vc]),
            "kernel IP forwarding": ("ip-forward", ["-d", "10.2.0.2", "-D", vb1]),
        }
        if shutil.which("dpdk-testpmd"):
            tools["dpdk-testpmd io (2 x net_af_xdp)"] = (
                # forwarding lcore 1 (the main lcore 0 only waits)
                ["dpdk-testpmd", "--no-huge", "-m", "1024", "--no-pci", "-l", "0,1",
                 "--main-lcore", "0", "--file-prefix", f"pmf{os.getpid()}",
                 "--vdev", "net_af_xdp0,iface=vb1", "--vdev", "net_af_xdp1,iface=vb2",
                 "--", "--forward-mode=io", "--nb-cores=1",
                 "--total-num-mbufs=16384", "--stats-period", "1"], ["-D", vc])
        for name in tools:
            res[name] = []
        for _ in range(RUNS):
            for name, (cmd, gx) in tools.items():
                if cmd == "linux-bridge":
                    sh("ip", "-n", B, "link", "add", "br0", "type", "bridge")
                    for d in ("vb1", "vb2"):
                        sh("ip", "-n", B, "link", "set", d, "master", "br0")
                    sh("ip", "-n", B, "link", "set", "br0", "up")
                    pps = veth_measure(v, None, gx)
                    sh("ip", "-n", B, "link", "del", "br0")
                elif cmd == "ip-forward":
                    sh("ip", "-n", B, "addr", "add", "10.1.0.1/24", "dev", "vb1")
                    sh("ip", "-n", B, "addr", "add", "10.2.0.1/24", "dev", "vb2")
                    sh("ip", "-n", B, "neigh", "add", "10.2.0.2", "lladdr", vc,
                       "dev", "vb2")
                    sh("ip", "netns", "exec", B, "sysctl", "-qw",
                       "net.ipv4.ip_forward=1")
                    pps = veth_measure(v, None, gx)
                    sh("ip", "netns", "exec", B, "sysctl", "-qw",
                       "net.ipv4.ip_forward=0")
                    sh("ip", "-n", B, "addr", "flush", "dev", "vb1")
                    sh("ip", "-n", B, "addr", "flush", "dev", "vb2")
                else:
                    pps = veth_measure(v, cmd, gx)
                res[name].append(pps)
                print(f"veth {name:40s} {pps / 1e6:6.3f} Mpps")
    finally:
        v.close()
    return [{"label": k, "pps": common.summarize(x)} for k, x in res.items()]


def tsc_from_build():
    """common.tsc_hz() runs build/bench/tsc_hz; use the one of the build
    that PKTMAP comes from when there is one."""
    exe = os.path.join(os.path.dirname(os.path.abspath(PM)), "..", "bench",
                       "tsc_hz")
    if os.path.exists(exe) and not common._tsc:
        common._tsc = float(subprocess.run([exe], capture_output=True,
                                           text=True, check=True).stdout)


def main():
    common.quiet_note()
    tsc_from_build()
    params = {"runs": RUNS, "frame": "60 bytes + 4 CRC", "quick": QUICK,
              "cpus": os.cpu_count(),
              "note": "2 vCPUs shared by the forwarder, the generators, the "
                      "receivers and other users of the machine"}
    bridge = bridge_points()
    router = router_points()
    zl = [zero_loss(n, m) for n in (2, 4) for m in ("random", "lpm")]
    veth = veth_points() if VETH else []
    bars = []
    for b in bridge:
        bars.append({"label": f"bridge pipe {b['mode']}", "pps": b["pps"],
                     "capacity_pps": b["one_core_pps"]})
    for r in router:
        bars.append({"label": f"router {r['ports']} {r['mode']}", "pps": r["pps"],
                     "capacity_pps": r["two_core_pps"]})
    summary = {
        "bridge_zc_one_core_mpps": bridge[0]["one_core_pps"] / 1e6,
        "router_4x4_random_two_core_mpps":
            [r for r in router if r["ports"] == "4x4" and r["mode"] == "random"][0]
            ["two_core_pps"] / 1e6,
    }
    if veth:
        by = {v["label"]: v["pps"]["median"] for v in veth}
        tp = [k for k in by if k.startswith("dpdk-testpmd")]
        if tp and by[tp[0]]:
            summary["veth_bridge_vs_testpmd"] = \
                by["pktmap bridge (xdp, zero-copy)"] / by[tp[0]]
    print("summary:", json.dumps(summary))
    common.write_result("forward", params, {
        "bridge_pipe": bridge, "router_pipe": router, "zero_loss": zl,
        "veth": veth, "bars": bars, "summary": summary})
    shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    main()
