# SPDX-License-Identifier: BSD-2-Clause
"""Shared helpers of pktmap's benchmarks: machine facts, repeated runs
with median/min/max, JSON results (docs/performance.md, "Method")."""
import json
import os
import re
import platform
import shutil
import signal
import statistics
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")


def pktmap_bin():
    return os.environ.get("PKTMAP", os.path.join(ROOT, "build", "apps", "pktmap"))


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


_tsc = None


def tsc_hz():
    """TSC ticks per second, measured against CLOCK_MONOTONIC by a tiny C
    helper (these VMs have no cycle counters for perf)."""
    global _tsc
    if _tsc:
        return _tsc
    exe = os.path.join(ROOT, "build", "bench", "tsc_hz")
    out = subprocess.run([exe], capture_output=True, text=True, check=True)
    _tsc = float(out.stdout.strip())
    return _tsc


# docs/performance.md, "Method": a run is a result only on a quiet machine, load average
# under 0.3 before it starts.
QUIET_LOAD = 0.3
LOAD_BEFORE = os.getloadavg()[0]


def load_avg():
    return os.getloadavg()[0]


def quiet_note():
    """Print and return the load average before the run, warning when the
    machine is not quiet (the result is then marked noisy)."""
    if LOAD_BEFORE >= QUIET_LOAD:
        print(f"load average {LOAD_BEFORE:.2f} >= {QUIET_LOAD}: the machine is "
              "busy, this result is marked noisy (not a result: docs/performance.md, Method)")
    return LOAD_BEFORE


def cpu_busy(cpu):
    """(busy, total) jiffies of CPU `cpu` from /proc/stat: busy is user +
    system + irq + softirq (everything but idle and iowait), so the kernel
    work a tool causes on its core is counted, not only its own time."""
    for line in open("/proc/stat"):
        if line.startswith(f"cpu{cpu} "):
            v = [int(x) for x in line.split()[1:]]
            return sum(v) - v[3] - v[4], sum(v)
    return 0, 0


class Syscalls:
    """Counts the system calls of a running process (and its threads)
    with `perf stat -e raw_syscalls:sys_enter -p PID` (tracepoints work on
    these VMs, cycle counters do not). start(pid), then stop() -> count,
    or None without perf."""

    def __init__(self):
        self.proc = None
        self.out = None

    def start(self, pid):
        if not shutil.which("perf"):
            return self
        fd, self.out = tempfile.mkstemp(prefix="pmsys", suffix=".txt")
        os.close(fd)
        self.proc = subprocess.Popen(
            ["perf", "stat", "-e", "raw_syscalls:sys_enter", "-x,", "-o",
             self.out, "-p", str(pid)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.2)  # perf attaches
        return self

    def stop(self):
        if not self.proc:
            return None
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        n = None
        try:
            for line in open(self.out):
                f = line.strip().split(",")
                if len(f) > 2 and "sys_enter" in f[2] and f[0].isdigit():
                    n = int(f[0])
        finally:
            os.unlink(self.out)
        return n


def machine():
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "kernel": platform.release(),
        "tsc_hz": tsc_hz(),
        "commit": commit,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_before": LOAD_BEFORE,
        "load_after": load_avg(),
        "noisy": LOAD_BEFORE >= QUIET_LOAD,
    }


def summarize(values):
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "runs": values,
    }


def callgrind_collected(stderr):
    """The instructions callgrind counted in the process it was started
    on: its "==PID== Collected : N" line, not a forked child's (an opener
    that can change its uid forks a cleaner, which callgrind follows).
    None without one."""
    first = re.search(r"^==(\d+)==", stderr, re.M)
    if not first:
        return None
    m = re.search(rf"^=={first.group(1)}== Collected\s*:\s*(\d+)", stderr, re.M)
    return int(m.group(1)) if m else None


def write_result(name, params, points):
    os.makedirs(RESULTS, exist_ok=True)
    doc = {"benchmark": name, "machine": machine(), "params": params,
           "points": points}
    path = os.path.join(RESULTS, name + ".json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {os.path.relpath(path, ROOT)}")
    return doc
