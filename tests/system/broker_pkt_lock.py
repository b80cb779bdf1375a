#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A client of pktmap broker that lies: it asks for a pkt: socket of
GRANTED, then binds it to every interface (ifindex 0) and tries to take
the broker's filter off. Run as a user without CAP_NET_RAW.

  broker_pkt_lock.py SOCKET GRANTED OTHER

Prints "ready" once bound, then reads frames until one of GRANTED
arrives; exits 0 when no frame of OTHER came first and the filter could
be neither removed nor replaced, 1 otherwise (one line says why).
"""
import ctypes
import socket
import struct
import sys

SO_ATTACH_FILTER, SO_DETACH_FILTER = 26, 27
ETH_P_ALL = 3


def main():
    path, granted, other = sys.argv[1:4]
    c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    c.connect(path)
    c.sendmsg([f"pkt if={granted} dir=rx ns=0".encode()])
    msg, fds, _, _ = socket.recv_fds(c, 512, 2)
    if not msg.startswith(b"ok") or len(fds) != 1:
        print(f"no socket: {msg.decode(errors='replace')}")
        return 1
    s = socket.socket(fileno=fds[0])
    for opt, val in ((SO_DETACH_FILTER, b"\0" * 4),
                     (SO_ATTACH_FILTER, b"\0" * 16)):
        try:
            s.setsockopt(socket.SOL_SOCKET, opt, val)
            print(f"the broker's filter could be changed (option {opt})")
            return 1
        except OSError:
            pass
    # Every interface (ifindex 0, which Python's bind() cannot say): the
    # lie the filter must defeat.
    sll = struct.pack("=HHiHBB8s", socket.AF_PACKET, socket.htons(ETH_P_ALL),
                      0, 0, 0, 0, b"")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.bind(s.fileno(), sll, len(sll)) != 0:
        print(f"bind: {ctypes.get_errno()}")
        return 1
    print("ready", flush=True)
    s.settimeout(30)
    others = 0
    while True:
        _, addr = s.recvfrom(65536)
        if addr[0] == granted:
            break
        others += addr[0] == other
    if others:
        print(f"{others} frames of {other} came through")
        return 1
    print(f"only {granted}'s frames")
    return 0


if __name__ == "__main__":
    sys.exit(main())
