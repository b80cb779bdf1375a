#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Time pktmap broker's grants, as a client without capabilities sees
them: for each interface of IFACES (comma-separated), COUNT rounds of:
connect, ask for an AF_XDP socket of its queue 0 over a 4 MiB memfd
region (`xsk`), have it steered (`attach`), and close (the broker frees
the queue). The grant's time is from the request to the second answer
(the connection and its close outside it). A "busy" answer (the queue
just freed, still being released) is asked again and its time not
counted, and so is the broker's release of the previous round's socket
(a refused request on the new connection waits it out first) unless
the fourth argument is "nowait": then each grant is asked right after
the previous client left, as a client sees it when another has just
gone. With COUNT 1 and one interface each, every grant is the first on
its interface.

  broker_grant.py SOCKET IFACES COUNT [nowait]

Prints one JSON object: count, median_ms, max_ms, times_ms."""
import json
import os
import socket
import statistics
import sys
import time

UMEM = 4 << 20


def ask(c, line, fds=()):
    socket.send_fds(c, [line.encode()], list(fds)) if fds else c.send(line.encode())
    msg, got, _, _ = socket.recv_fds(c, 512, 2)
    for fd in got:
        os.close(fd)
    return msg.decode(errors="replace")


def grant(path, iface, region, wait):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    c.connect(path)
    try:
        # The broker serves one thing at a time and frees the previous
        # round's socket (the kernel's AF_XDP release waits for an RCU
        # grace period) before it reads this connection: an attach of a
        # queue never granted, refused at once, waits that out, so the
        # time below is the grant's own.
        if wait:
            ask(c, "attach q=0")
        t0 = time.perf_counter()
        a = ask(c, f"xsk if={iface} q=0 mode=copy dir=rx off=0 umem={UMEM} "
                   "chunk=2048 rx=2048 tx=0 fq=2048 cq=64 sg=0 share=0 ns=0",
                [region])
        if a.startswith("busy"):
            return None
        if not a.startswith("ok"):
            sys.exit(f"xsk: {a}")
        a = ask(c, "attach q=0")
        t1 = time.perf_counter()
        if not a.startswith("ok"):
            sys.exit(f"attach: {a}")
        return (t1 - t0) * 1e3
    finally:
        c.close()


def main():
    path, ifaces, count = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
    wait = sys.argv[4:5] != ["nowait"]
    region = os.memfd_create("grant")
    os.ftruncate(region, UMEM)
    # its pages allocated now, as the library's regions are (MAP_POPULATE
    # at creation): the first grant's time is the broker's, not the first
    # touch of the region
    os.posix_fallocate(region, 0, UMEM)
    times = []
    for iface in ifaces:
        n = 0
        while n < count:
            t = grant(path, iface, region, wait)
            if t is not None:
                times.append(round(t, 3))
                n += 1
    print(json.dumps({"count": len(times), "median_ms": statistics.median(times),
                      "max_ms": max(times), "times_ms": times}))


if __name__ == "__main__":
    main()
