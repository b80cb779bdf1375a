#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Capture at saturation on a veth pair, every tool writing a pcap file to
/dev/shm, side by side in one run (docs/performance.md, "Method"):

  tcpdump_stock      stock tcpdump -w, vethB (AF_PACKET TPACKET_V3, 2 MiB)
  tcpdump_stock_B32M the same with -B 32768: pkt:'s ring memory (32 MiB)
  tcpdump_lib_pkt    the same tcpdump binary on pktmap's libpcap, pkt:vethB
  tcpdump_stock_B32M_v2  stock -B 32768 --immediate-mode: libpcap then uses
                     TPACKET_V2, a frame per packet, as pkt: in place does
  tcpdump_lib_xdp    ... on xdp:vethB (what `pktmap pcap-run` maps vethB to)
  capture_pkt        pktmap capture -i pkt:vethB
  capture_xdp        pktmap capture -i xdp:vethB
  netsniff_ng        netsniff-ng --in vethB --out FILE (TPACKET_V3, 32 MiB)
  dumpcap_stock      stock dumpcap -w (pcapng), vethB (libpcap's 2 MiB)
  dumpcap_stock_B32M the same with -B 32: pkt:'s ring memory
  dumpcap_lib_pkt    the same dumpcap on pktmap's libpcap, pkt:vethB (it
                     waits in select() on the library's fd; it drops
                     CAP_BPF before opening, so xdp: is not open to it)
  recv_pkt           pktmap recv --fast -i pkt:vethB@conf:rx=blocks: the
                     least an AF_PACKET reader can do (count the frames in
                     the blocks and hand them back; no file)
  no_reader          nothing captures: CPU 1's busy time per frame that
                     reached vethB is the kernel's receive work alone (RPS,
                     the stack dropping the frame), the floor under every
                     AF_PACKET reader's CPU per packet

    netns pbcA<pid>                       netns pbcB<pid>
    [ pktmap gen -i xdp:vethA, CPU 0 ] vethA ==== vethB [ capture, CPU 1 ]

The receive work goes to the capture core: RPS on vethB (rps_cpus = CPU 1)
for the AF_PACKET tools. For xdp: ports the XDP program runs before RPS:
by default in the sender's softirq (on CPU 0: the sender pays for the
receive path, and veth has no queue to overflow), or ("_napi1", as in
bench/xdp_veth_rx.sh) in veth's NAPI thread pinned to CPU 1, the capture
core, where it competes with the capture. Captured = records in the file
(read back with pktmap recv), loss = 1 - captured / the frames that reached
vethB (its rx_packets, over gen's run and the drain), CPU = user+sys
of the capture process, and CPU 1's busy time per captured packet
(process and kernel work on that core; the machine is shared, so this is
an upper bound).

Second part, the library's own ceiling: gen -> pipe -> tcpdump -w
/dev/shm/FILE on the library (no kernel in the way; gen is held back by
the pipe, so its rate is the consumer's), beside pktmap capture.

    sudo bench/capture.py [--quick]        (env: SECS=3 RUNS=3 PKTMAP=...
                                            TOOLS=a,b,...|none PIPE=0 SIZE=60
                                            SENDER=xdp|live PROFILE=1
                                            RATE=PPS: offered rate, below
                                            saturation, where CPU per
                                            packet compares the tools'
                                            costs and not their losses)
                                            RESULT=capture: results file name
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

QUICK = "--quick" in sys.argv
RUNS = int(os.environ.get("RUNS", "1" if QUICK else "3"))
SECS = float(os.environ.get("SECS", "2" if QUICK else "3"))
SIZE = int(os.environ.get("SIZE", "60"))
PID = os.getpid()
NSA, NSB = f"pbcA{PID}", f"pbcB{PID}"
SHM = f"/dev/shm/pmcap{PID}"
CPU_GEN, CPU_CAP = 0, 1
# The sender: AF_XDP copy mode (~0.8 Mpps here, about what one core of
# capture takes), or SENDER=live: BPF_PROG_RUN live frames (2-3 Mpps,
# docs/xdp.md), which saturates every tool, so that captured rates are
# the tools' own limits.
SENDER = os.environ.get("SENDER", "xdp")
SENDER_PORT = "xdp:vethA@conf:tx=live" if SENDER == "live" else "xdp:vethA"
RATE = os.environ.get("RATE")

TOOLS = ["no_reader", "tcpdump_stock", "tcpdump_stock_B32M", "tcpdump_lib_pkt",
         "capture_pkt", "netsniff_ng",
         "tcpdump_lib_xdp", "capture_xdp", "tcpdump_lib_xdp_napi1",
         "capture_xdp_napi1", "dumpcap_stock", "dumpcap_stock_B32M",
         "dumpcap_lib_pkt"]


def sh(*cmd, check=True, **kw):
    return subprocess.run(list(cmd), check=check, **kw)


def in_ns(ns, *cmd):
    return ["ip", "netns", "exec", ns] + list(cmd)


def setup():
    sh("ip", "netns", "add", NSA)
    sh("ip", "netns", "add", NSB)
    sh("ip", "link", "add", "vethA", "netns", NSA, "type", "veth", "peer",
       "name", "vethB", "netns", NSB)
    for ns in (NSA, NSB):
        for k in ("all", "default"):
            sh(*in_ns(ns, "sysctl", "-qw", f"net.ipv6.conf.{k}.disable_ipv6=1"))
    sh("ip", "-n", NSA, "link", "set", "vethA", "up")
    sh("ip", "-n", NSB, "link", "set", "vethB", "up")
    if SENDER == "live":
        # redirected frames reach a veth whose peer runs no XDP program
        # only through its NAPI, which GRO turns on
        sh(*in_ns(NSB, "ethtool", "-K", "vethB", "gro", "on"),
           stdout=subprocess.DEVNULL)


def cleanup():
    for ns in (NSA, NSB):
        subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)
    for f in os.listdir("/dev/shm"):
        if f.startswith(os.path.basename(SHM)):
            os.unlink(os.path.join("/dev/shm", f))


def rps(mask):
    sh(*in_ns(NSB, "sh", "-c",
              f"echo {mask} > /sys/class/net/vethB/queues/rx-0/rps_cpus"))


def napi(threaded):
    """veth's NAPI threaded with its thread on the capture core, or back in
    the sender's softirq. Only there once an XDP program is attached."""
    sh(*in_ns(NSB, "sh", "-c", f"echo {1 if threaded else 0} > "
              "/sys/class/net/vethB/threaded"), check=False)
    if not threaded:
        return
    time.sleep(0.2)
    out = subprocess.run(["ps", "-eo", "pid,comm"], capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and "napi/vethB" in parts[1]:
            sh("taskset", "-pc", str(CPU_CAP), parts[0],
               stdout=subprocess.DEVNULL)


def ready(kind, timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        if kind == "xdp":
            out = subprocess.run(["ip", "-n", NSB, "link", "show", "dev", "vethB"],
                                 capture_output=True, text=True).stdout
            if "prog/xdp" in out:
                return True
        else:
            out = subprocess.run(in_ns(NSB, "cat", "/proc/net/packet"),
                                 capture_output=True, text=True).stdout
            if len(out.strip().splitlines()) > 1:
                return True
        time.sleep(0.05)
    return False


def vethb_rx():
    """Frames that reached vethB (its rx_packets): what a tool could
    capture. It counts frames XDP redirects to a socket too."""
    out = subprocess.run(in_ns(NSB, "cat", "/sys/class/net/vethB/statistics/"
                               "rx_packets"), capture_output=True, text=True)
    return int(out.stdout.strip() or 0)


def rss_kib(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def proc_cpu(pid, user_only=False):
    """Seconds of CPU (user + system, or user alone) process pid has used
    so far. System time includes the softirq work (the kernel's receive
    path, its copy into the ring) that ran while the process was the one
    on the CPU: a process that runs more often (woken per frame) is
    charged more of it; user time is the tool's and its library's own."""
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + (0 if user_only else int(f[12]))) / \
            os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def count_records(path):
    if not os.path.exists(path):
        return 0
    out = subprocess.run([common.pktmap_bin(), "recv", "-i", f"pcap:{path}/R",
                          "--fast", "-T", "0", "-q", "--json"],
                         capture_output=True, text=True)
    try:
        return json.loads(out.stdout)["packets"]
    except (ValueError, KeyError):
        return 0


def tool_cmd(tool, out):
    pm = common.pktmap_bin()
    td = ["tcpdump", "-Z", "root", "-n", "-w", out]
    if tool == "tcpdump_stock":
        return td + ["-i", "vethB"], "pkt"
    if tool == "tcpdump_stock_B32M":
        # the ring memory pktmap's pkt: port gets (libpcap's default: 2 MiB)
        return td + ["-B", "32768", "-i", "vethB"], "pkt"
    if tool == "tcpdump_lib_pkt":
        return [pm, "pcap-run", "tcpdump"] + td[1:] + ["-i", "pkt:vethB"], "pkt"
    if tool == "tcpdump_stock_B32M_v2":
        # libpcap uses TPACKET_V2 (a frame per packet, as pkt: in place)
        # in immediate mode: the kernel's V2 path against its V3 path
        return td + ["-B", "32768", "--immediate-mode", "-i", "vethB"], "pkt"
    if tool == "tcpdump_lib_xdp":
        return [pm, "pcap-run", "tcpdump"] + td[1:] + ["-i", "vethB"], "xdp"
    if tool == "recv_pkt":
        return [pm, "recv", "-i", "pkt:vethB@conf:rx=blocks", "--fast",
                "-T", "0", "-q", "--json"], "pkt"
    if tool == "capture_pkt":
        return [pm, "capture", "-i", "pkt:vethB", "-w", out, "-q"], "pkt"
    if tool == "capture_xdp":
        return [pm, "capture", "-i", "xdp:vethB", "-w", out, "-q"], "xdp"
    dc = ["dumpcap", "-q", "-w", out]
    if tool == "dumpcap_stock":
        return dc + ["-i", "vethB"], "pkt"
    if tool == "dumpcap_stock_B32M":
        return dc + ["-B", "32", "-i", "vethB"], "pkt"
    if tool == "dumpcap_lib_pkt":
        return [pm, "pcap-run"] + dc + ["-i", "pkt:vethB"], "pkt"
    if tool == "netsniff_ng":
        # -A -Q: leave the machine's socket memory and IRQ settings alone;
        # -b: its CPU (the one it is pinned to); -S: a 32 MiB ring, the
        # memory pkt: gets (8192 slots of 2 KiB, twice) -- its default is
        # a tenth of the machine's memory, which holds a whole 3-second
        # run at any rate and measures nothing
        return ["netsniff-ng", "--in", "vethB", "--out", out, "--silent",
                "-A", "-Q", "-b", str(CPU_CAP), "-S", "32MiB"], "pkt"
    raise ValueError(tool)


class NoReader:
    """Stands in for a tool's process when nothing captures."""
    pid = 0

    def kill(self):
        pass

    def send_signal(self, sig):
        pass

    def wait(self, timeout=None):
        return 0


class Profile:
    """PROFILE=1: `perf record` of the capture core (software clock, the
    only sampling event these VMs have) over the sender's window; stop()
    returns the top symbols with their share of the samples. A sample
    due while interrupts are off lands where they come back on
    (_raw_spin_unlock_irq*, handle_softirqs): those rows hold the receive
    path's work, not the locks'. The sampling costs CPU 1 time too."""

    def __init__(self, tool):
        self.proc = None
        self.data = f"{SHM}.{tool}.perf"
        if os.environ.get("PROFILE") == "1" and shutil.which("perf"):
            self.proc = subprocess.Popen(
                ["perf", "record", "-q", "-e", "cpu-clock", "-C", str(CPU_CAP),
                 "-o", self.data], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL)
            time.sleep(0.3)

    def stop(self, top=25):
        if not self.proc:
            return None
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=30)
        out = subprocess.run(["perf", "report", "-i", self.data, "--stdio",
                              "--sort", "sym", "--percent-limit", "0.5"],
                             capture_output=True, text=True).stdout
        os.unlink(self.data)
        syms = []
        for line in out.splitlines():
            m = re.match(r"\s*([\d.]+)%\s+\[([k.])\]\s+(\S+)", line)
            if m:
                syms.append([m.group(3), float(m.group(1)),
                             "kernel" if m.group(2) == "k" else "user"])
        return syms[:top]


def run_one(tool):
    out = f"{SHM}.{tool}.pcap"
    napi_cpu = CPU_CAP if tool.endswith("_napi1") else CPU_GEN
    errf = open(f"{SHM}.{tool}.err", "w+")
    if tool == "no_reader":
        kind = "pkt"
        rps(1 << CPU_CAP)
        p = NoReader()
    else:
        cmd, kind = tool_cmd(tool.removesuffix("_napi1"), out)
        rps(1 << CPU_CAP if kind == "pkt" else 0)
        # ip netns exec, taskset and pcap-run all exec: p.pid is the tool's
        full = in_ns(NSB, "taskset", "-c", str(CPU_CAP)) + cmd
        # recv's count is its JSON summary on stdout
        outf = open(out, "w") if tool == "recv_pkt" else subprocess.DEVNULL
        p = subprocess.Popen(full, stdout=outf, stderr=errf)
    if p.pid and not ready(kind):
        p.kill()
        p.wait()
        errf.seek(0)
        raise SystemExit(f"{tool} did not start: {errf.read()}")
    if kind == "xdp" and napi_cpu == CPU_CAP:
        napi(True)
    if tool == "netsniff_ng":
        # its socket comes first, then it allocates and touches its ring
        # (its "Running!" line is buffered): ready once its memory is in
        end = time.time() + 30
        while time.time() < end and rss_kib(p.pid) < 32 * 1024:
            time.sleep(0.1)
    time.sleep(0.5)
    c0 = proc_cpu(p.pid)
    u0 = proc_cpu(p.pid, True)
    sysc = common.Syscalls().start(p.pid) if p.pid else common.Syscalls()
    prof = Profile(tool)
    fault = False
    for attempt in range(3):
        a0 = vethb_rx()
        b0, t0 = common.cpu_busy(CPU_CAP)
        g = subprocess.run(
            ["timeout", "-s", "INT", str(SECS)] +
            in_ns(NSA, "taskset", "-c", str(CPU_GEN), common.pktmap_bin(),
                  "gen", "-i", SENDER_PORT, "-l", str(SIZE), "-D",
                  "02:00:00:00:00:00", "-T", "0", "-q", "--json") +
            (["-R", RATE] if RATE else []),
            capture_output=True, text=True)
        b1, t1 = common.cpu_busy(CPU_CAP)
        if g.stdout.strip():
            break
        if vethb_rx() > a0:
            # it sent, then said nothing: the tool holds frames no count
            # of this run accounts for
            print(f"  (gen sent {vethb_rx() - a0} frames and printed "
                  f"nothing (exit {g.returncode}): {g.stderr.strip()}; this run "
                  "is not counted)",
                  flush=True)
            fault = True
        # vethA's queue can look busy for a moment after the previous
        # sender closed it (docs/xdp.md)
        print(f"  (gen did not start: {g.stderr.strip()}; again)", flush=True)
        time.sleep(1)
    time.sleep(0.5)  # let the tool drain what its ring holds
    arrived = vethb_rx() - a0
    nsys = sysc.stop()
    profile = prof.stop()
    c1 = proc_cpu(p.pid)
    u1 = proc_cpu(p.pid, True)
    if kind == "xdp" and napi_cpu == CPU_CAP:
        napi(False)  # while the program is there: veth then has NAPI
    p.send_signal(signal.SIGINT)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    errf.seek(0)
    err = errf.read()
    errf.close()
    os.unlink(errf.name)
    gen = json.loads(g.stdout)
    sent = gen["packets"]
    # no reader: what it would have had to capture
    if tool == "recv_pkt":
        outf.close()
        got = json.load(open(out))["packets"]
    else:
        got = count_records(out) if p.pid else arrived
    if os.path.exists(out):
        os.unlink(out)
    hz = os.sysconf("SC_CLK_TCK")
    busy_s = (b1 - b0) / hz
    # Loss against what reached vethB (its kernel counter), not gen's own
    # count: a gen attempt that printed nothing still sent frames.
    res = {"sent": sent, "arrived": arrived, "captured": got,
           "gen_seconds": gen["seconds"],
           "captured_pps": got / gen["seconds"] if gen["seconds"] else 0,
           "sent_pps": gen["pps"],
           "loss": 1 - got / arrived if arrived else 0,
           "proc_cpu_s": c1 - c0,
           "proc_ns_per_pkt": (c1 - c0) * 1e9 / got if got else None,
           "user_ns_per_pkt": (u1 - u0) * 1e9 / got if got else None,
           "cpu1_busy_fraction": (b1 - b0) / (t1 - t0) if t1 > t0 else None,
           "cpu1_ns_per_pkt": busy_s * 1e9 / got if got else None,
           "syscalls_per_1000_pkts": nsys * 1000 / got if got and nsys is not None
           else None}
    if profile is not None:
        res["profile_cpu1"] = profile
    if fault:
        res["count_fault"] = True
    if got > arrived:
        print(f"  {tool}: {got} records of {arrived} frames that reached "
              "vethB: this run's counts are wrong", flush=True)
        res["count_fault"] = True
    m = re.search(r"(\d+) packets dropped by kernel", err or "")
    if m:
        res["tool_reported_kernel_drops"] = int(m.group(1))
    print(f"  {tool:16s} sent {sent / gen['seconds'] / 1e6:5.2f} Mpps, "
          f"captured {res['captured_pps'] / 1e6:5.2f} Mpps, "
          f"loss {res['loss'] * 100:5.1f}%, "
          f"proc {res['proc_ns_per_pkt'] or 0:6.0f} ns/pkt "
          f"(user {res['user_ns_per_pkt'] or 0:4.0f}), "
          f"cpu1 {res['cpu1_ns_per_pkt'] or 0:6.0f} ns/pkt "
          f"({(res['cpu1_busy_fraction'] or 0) * 100:.0f}% busy), "
          f"{res['syscalls_per_1000_pkts'] or 0:.1f} syscalls/1000 pkts", flush=True)
    for sym, pct, where in (profile or [])[:12]:
        print(f"      {pct:5.1f}% {where:6s} {sym}", flush=True)
    return res


def pipe_ceiling(consumer, count):
    """gen -> pipe -> consumer writing /dev/shm; returns the rate."""
    pm = common.pktmap_bin()
    name = f"pbc{PID}{consumer}"
    out = f"{SHM}.pipe.pcap"
    if consumer == "tcpdump_lib":
        cmd = [pm, "pcap-run", "tcpdump", "-Z", "root", "-n", "-i",
               f"pipe:{name}}}0", "-c", str(count), "-w", out]
    else:
        cmd = [pm, "capture", "-i", f"pipe:{name}}}0", "-c", str(count),
               "-w", out, "-q"]
    p = subprocess.Popen(["taskset", "-c", str(CPU_CAP)] + cmd,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    time.sleep(1.0)
    g = subprocess.run(["taskset", "-c", str(CPU_GEN), pm, "gen", "-i",
                        f"pipe:{name}{{0", "-n", str(count), "-l", str(SIZE),
                        "-T", "0", "-q", "--json"],
                       capture_output=True, text=True, timeout=300)
    p.communicate(timeout=120)
    # no reader: what it would have had to capture
    if tool == "recv_pkt":
        outf.close()
        got = json.load(open(out))["packets"]
    else:
        got = count_records(out) if p.pid else arrived
    if os.path.exists(out):
        os.unlink(out)
    for f in os.listdir("/dev/shm"):
        if f.startswith(f"pktmap.pipe.{name}"):
            os.unlink(os.path.join("/dev/shm", f))
    pps = json.loads(g.stdout)["pps"]
    if got != count:
        raise SystemExit(f"pipe -> {consumer}: wrote {got} of {count}")
    print(f"  pipe -> {consumer:12s} {pps / 1e6:6.2f} Mpps into /dev/shm "
          f"({count} packets, all written)", flush=True)
    return pps


def tsc_from_build():
    """common.tsc_hz() looks in build/; use the build PKTMAP comes from."""
    exe = os.path.join(os.path.dirname(os.path.dirname(common.pktmap_bin())),
                       "bench", "tsc_hz")
    if os.path.exists(exe):
        common._tsc = float(subprocess.run([exe], capture_output=True,
                                           text=True).stdout.strip())


def main():
    common.quiet_note()
    if os.geteuid() != 0:
        raise SystemExit("needs root")
    tsc_from_build()
    want = os.environ.get("TOOLS")
    tools = [t for t in (want.split(",") if want else TOOLS)
             if t != "none" and (t != "netsniff_ng" or shutil.which("netsniff-ng"))]
    load = os.getloadavg()
    print(f"capture at {'saturation' if not RATE else RATE + ' pps'}, {SIZE}-byte frames, {SECS:g} s x {RUNS} runs, "
          f"load average {load[0]:.2f} before the run")
    results = {t: [] for t in tools}
    try:
        setup()
        for r in range(RUNS):
            print(f"run {r + 1}/{RUNS}")
            for t in tools:
                results[t].append(run_one(t))
        pipe = {"tcpdump_lib": [], "capture": []}
        if os.environ.get("PIPE") == "0":
            pipe = {}
        count = 5_000_000 if QUICK else 20_000_000
        print("pipe source (the library's own ceiling)")
        for r in range(RUNS):
            for c in pipe:
                pipe[c].append(pipe_ceiling(c, count))
    finally:
        cleanup()
    bars, points = [], {}
    for t, runs in results.items():
        good = [x for x in runs if not x.get("count_fault")]
        pts = {k: common.summarize([x[k] for x in good if x.get(k) is not None])
               for k in ("captured_pps", "sent_pps", "loss", "proc_ns_per_pkt",
                         "user_ns_per_pkt", "cpu1_ns_per_pkt",
                         "syscalls_per_1000_pkts")
               if any(x.get(k) is not None for x in good)}
        points[t] = {"summary": pts, "runs": runs}
        bars.append({"label": t, "pps": pts["captured_pps"]})
    for c, v in pipe.items():
        bars.append({"label": f"pipe->{c}", "pps": common.summarize(v)})
    med = {t: points[t]["summary"]["captured_pps"]["median"] for t in points}
    stock = med.get("tcpdump_stock")
    summary = {
        "captured_mpps": {t: v / 1e6 for t, v in med.items()},
        "loss_median": {t: points[t]["summary"]["loss"]["median"] for t in points},
        "pipe_mpps": {c: common.summarize(v)["median"] / 1e6 for c, v in pipe.items()},
        "load_average_before": load[0],
    }
    if stock:
        summary["ratio_vs_stock_tcpdump"] = {t: v / stock for t, v in med.items()}
    if med.get("netsniff_ng"):
        summary["ratio_vs_netsniff_ng"] = {t: v / med["netsniff_ng"]
                                           for t, v in med.items()}
    # the issue's comparisons: equal 32 MiB buffers, same run
    def cpu(t, k):
        return points[t]["summary"].get(k, {}).get("median")
    for peer, tool in (("tcpdump_stock_B32M", "tcpdump_lib_pkt"),
                       ("netsniff_ng", "capture_pkt"),
                       ("dumpcap_stock", "dumpcap_lib_pkt"),
                       ("dumpcap_stock_B32M", "dumpcap_lib_pkt")):
        if med.get(peer) and med.get(tool):
            summary[f"{tool}_vs_{peer}"] = {
                "captured": med[tool] / med[peer],
                "proc_cpu_per_pkt": (cpu(tool, "proc_ns_per_pkt") or 0) /
                                    (cpu(peer, "proc_ns_per_pkt") or 1),
                "user_cpu_per_pkt": (cpu(tool, "user_ns_per_pkt") or 0) /
                                    (cpu(peer, "user_ns_per_pkt") or 1)}
    # the floor: CPU 1 per frame with no reader, against each reader's
    floor = cpu("no_reader", "cpu1_ns_per_pkt") if "no_reader" in points else None
    if floor:
        summary["cpu1_floor_ns_per_pkt"] = floor
        summary["cpu1_vs_floor"] = {
            t: cpu(t, "cpu1_ns_per_pkt") / floor for t in points
            if cpu(t, "cpu1_ns_per_pkt")}
    print("summary:", json.dumps(summary, indent=1))
    name = os.environ.get("RESULT", "capture")
    doc = common.write_result(name, {
        "runs": RUNS, "rate": RATE, "seconds": SECS, "size": SIZE, "cpu_gen": CPU_GEN,
        "cpu_capture": CPU_CAP, "sender": "pktmap gen -i " + SENDER_PORT,
        "output": "/dev/shm pcap file (every tool)",
        "receive_work": "RPS to CPU 1 (AF_PACKET tools); veth NAPI threaded on "
                        "CPU 1 (xdp: ports)",
        "counted": "records in the written file"},
        {"tools": points, "pipe": pipe, "bars": bars, "summary": summary})
    doc["title"] = "capture at saturation on veth, captured Mpps (written to /dev/shm)"
    with open(os.path.join(common.RESULTS, name + ".json"), "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
