#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Instructions per packet of the Python receivers of bench/python.sh,
under callgrind: exact, and the same on a busy machine (so it may run
beside other work, unlike the rates of bench/python.sh).

    bench/python_cost.py [BUILD]   (env: RESULT=python_cost,
                                    BATCHES="256 1023 4095", LOOP=1)

`pktmap gen` (not under callgrind) fills a pipe; python_rx.py's numpy
batch consumer (count, sum of lengths, histogram of a header byte) and
its per-packet loop read it under callgrind, at most B packets a batch
(B >= 1024: over a pipe of B + 1 slots a ring).
The receiver is far slower under callgrind than gen, so every batch is
full: the figure is (instructions of N2 packets - those of N1) / (N2 - N1),
interpreter start, imports and open cancelled out.
"""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402

PY = "/usr/bin/python3"
N1, N2 = 100_000, 400_000


def instructions(build, mode, n, batch):
    name = f"pyc{os.getpid()}{mode}{n}x{batch}"
    # batches of more than the default ring holds: a pipe that large
    conf = f"@conf:slots={batch + 1}" if batch >= 1024 else ""
    pm = os.path.join(build, "apps", "pktmap")
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "python"),
               PYTHONDONTWRITEBYTECODE="1")
    gen = subprocess.Popen([pm, "gen", "-i", f"pipe:{name}{{0{conf}", "-n", str(n),
                            "-l", "60", "-T", "0", "-q"],
                           stdout=subprocess.DEVNULL)
    # valgrind's log in a file of the process's own (%p): the port's
    # cleaner, forked under valgrind too, outlives the receiver with its
    # stderr until gen has left the pipe
    log = f"/tmp/{name}.%p.log"
    try:
        p = subprocess.Popen(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
             f"--log-file={log}", PY, os.path.join(HERE, "python_rx.py"),
             mode, f"pipe:{name}}}0{conf}", str(n)] +
            ([str(batch)] if mode == "numpy" else []),
            stdout=subprocess.DEVNULL, env=env)
        rc = p.wait(timeout=1800)
    finally:
        gen.wait(timeout=600)
    path = log.replace("%p", str(p.pid))
    with open(path) as f:
        text = f.read()
    for fn in os.listdir("/tmp"):
        if fn.startswith(name + "."):
            os.unlink(os.path.join("/tmp", fn))
    got = common.callgrind_collected(text)
    if rc or got is None:
        raise SystemExit(f"python_cost: {mode} {n}: " + text[-2000:])
    return got


def per_packet(build, mode, batch):
    a = instructions(build, mode, N1, batch)
    b = instructions(build, mode, N2, batch)
    ipp = (b - a) / (N2 - N1)
    print(f"{mode:6s} batch {batch:5d}: {ipp:8.1f} instructions/packet (callgrind)")
    return round(ipp, 1)


def main():
    if not shutil.which("valgrind"):
        raise SystemExit("python_cost: valgrind is not installed")
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(common.ROOT, "build")
    pts = {}
    for b in [int(x) for x in os.environ.get("BATCHES", "256 1023 4095").split()]:
        pts[f"numpy_batch_{b}"] = per_packet(build, "numpy", b)
    if os.environ.get("LOOP", "1") != "0":
        pts["loop"] = per_packet(build, "loop", 0)
    common.write_result(os.environ.get("RESULT", "python_cost"),
                        {"what": "callgrind instructions per packet of the "
                         "Python receiver (python_rx.py), 60-byte frames "
                         "over a pipe", "n1": N1, "n2": N2}, pts)


if __name__ == "__main__":
    main()
