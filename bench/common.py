# SPDX-License-Identifier: BSD-2-Clause
"""Shared helpers of pktmap's benchmarks: machine facts, repeated runs
with median/min/max, JSON results (see ../../shared/BENCH.md)."""
import json
import os
import platform
import statistics
import subprocess
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
    }


def summarize(values):
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "runs": values,
    }


def write_result(name, params, points):
    os.makedirs(RESULTS, exist_ok=True)
    doc = {"benchmark": name, "machine": machine(), "params": params,
           "points": points}
    path = os.path.join(RESULTS, name + ".json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {os.path.relpath(path, ROOT)}")
    return doc
