#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Clients that hold an HTTP listener (tests/system/metrics.sh).

    http_attack.py HOST PORT NTRICKLE NIDLE LOG

NTRICKLE clients send a request head one byte every 0.2 s, never
complete; NIDLE clients connect and send nothing. Each one reconnects as
soon as the server drops it, and writes a line to LOG: its kind and the
status line it got ("trickle HTTP/1.1 408 Request Timeout"), or
"closed" when the server closed with no answer. Prints "ready" once all
have started to connect; runs until killed.
"""
import socket
import sys
import time

host, port = sys.argv[1], int(sys.argv[2])
ntrickle, nidle = int(sys.argv[3]), int(sys.argv[4])
log = open(sys.argv[5], "a", buffering=1)
head = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200 + b"\r\n"
conns = []


def connect(kind):
    # Not waiting for the connection: a listener that takes one client
    # at a time would hold the attackers up too.
    s = socket.socket()
    s.setblocking(False)
    s.connect_ex((host, port))
    conns.append([s, kind, 0, b""])


for _ in range(ntrickle):
    connect("trickle")
for _ in range(nidle):
    connect("idle")
print("ready", flush=True)
while True:
    time.sleep(0.2)  # the attackers' pace
    for c in list(conns):
        s, kind, sent = c[0], c[1], c[2]
        closed = False
        try:
            d = s.recv(65536)
            c[3] += d
            closed = not d
        except BlockingIOError:
            pass
        except OSError:
            closed = True
        if not closed and kind == "trickle":
            try:
                s.send(head[sent % len(head):sent % len(head) + 1])
                c[2] += 1
            except BlockingIOError:
                pass
            except OSError:
                closed = True
        if closed:
            first = c[3].split(b"\r\n", 1)[0].decode("latin-1")
            log.write("%s %s\n" % (kind, first or "closed"))
            s.close()
            conns.remove(c)
            connect(kind)
