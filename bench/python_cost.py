#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Instructions per packet of the Python receivers of bench/python.sh,
under callgrind: exact, and the same on a busy machine (so it may run
beside other work, unlike the rates of bench/python.sh).

    bench/python_cost.py [BUILD]   (env: RESULT=python_cost,
                                    BATCHES="256 1023 4095", LOOP=1,
                                    LOOP_FLOOR=0)

`pktmap gen` (not under callgrind) fills a pipe; python_rx.py's numpy
batch consumer (count, sum of lengths, histogram of a header byte) and
its per-packet loop read it under callgrind, at most B packets a batch
(B >= 1024: over a pipe of B + 1 slots a ring).
The receiver is far slower under callgrind than gen, so batches are
full, mostly: on a busy machine gen may not refill a whole ring in time,
so each point also gives the mean batch the receiver saw (exact for
B = 256, well below the ring). The figure is (instructions of N2
packets - those of N1) / (N2 - N1), interpreter start, imports and open
cancelled out. LOOP_FLOOR=1 adds the same loop over a list of bytes
objects in memory (python_rx.py loop-bytes, no port, no gen): what the
interpreter's loop costs by itself.
"""
import json
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
    gen = None if mode == "loop-bytes" else subprocess.Popen(
        [pm, "gen", "-i", f"pipe:{name}{{0{conf}", "-n", str(n),
         "-l", "60", "-T", "0", "-q"], stdout=subprocess.DEVNULL)
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
            stdout=subprocess.PIPE, text=True, env=env)
        out = p.communicate(timeout=1800)[0]
        rc = p.returncode
    finally:
        if gen:
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
    # the batches the receiver saw (numpy): a ring gen did not keep full
    # makes smaller batches than asked for, and the figure says so
    batches = json.loads(out.splitlines()[-1]).get("batches")
    return got, batches


def per_packet(build, mode, batch):
    a, ba = instructions(build, mode, N1, batch)
    b, bb = instructions(build, mode, N2, batch)
    ipp = (b - a) / (N2 - N1)
    seen = round((N2 - N1) / (bb - ba), 1) if ba is not None and bb > ba else None
    print(f"{mode:6s} batch {batch:5d}: {ipp:8.1f} instructions/packet "
          f"(callgrind; mean batch {seen})")
    return round(ipp, 1), seen


def main():
    if not shutil.which("valgrind"):
        raise SystemExit("python_cost: valgrind is not installed")
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(common.ROOT, "build")
    pts = {}
    for b in [int(x) for x in os.environ.get("BATCHES", "256 1023 4095").split()]:
        pts[f"numpy_batch_{b}"], pts[f"numpy_batch_{b}_seen"] = \
            per_packet(build, "numpy", b)
    if os.environ.get("LOOP", "1") != "0":
        pts["loop"] = per_packet(build, "loop", 0)[0]
    if os.environ.get("LOOP_FLOOR", "0") != "0":
        pts["loop_bytes"] = per_packet(build, "loop-bytes", 0)[0]
    common.write_result(os.environ.get("RESULT", "python_cost"),
                        {"what": "callgrind instructions per packet of the "
                         "Python receiver (python_rx.py), 60-byte frames "
                         "over a pipe", "n1": N1, "n2": N2}, pts)


if __name__ == "__main__":
    main()
