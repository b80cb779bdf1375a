#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Hostile clients of pktmap broker (tests/system/broker_hostile.sh).

  broker_hostile.py SOCKET STEP [ARG]

Steps (each exits 0 when the broker answered as it must, 1 with one line
saying what it did instead):
  garbage   malformed requests, oversized messages (600 B, 64 KiB), a NUL,
            every verb with a bad field: each refused, the connection kept
  fds       a request with 200 descriptors, then one with 3: refused; the
            broker keeps none of them (the shell counts its fds)
  region    xsk with a pipe, then with a memfd too small, as the region:
            refused, nothing bound
  grants    70 pkt grants on one connection: 64 granted, then refused
  attach    attach of a queue this connection was never granted: refused
  netns     ns=1 with a pipe, or with the host's network namespace (not
            one the client owns), or on a verb without namespaces
  flood N   N connections held open at once (printed: how many the broker
            kept), until stdin closes
  deaf      2000 requests without reading an answer: the broker drops us
"""
import os
import socket
import sys


def conn(path):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    c.connect(path)
    c.settimeout(30)
    return c


def ask(c, data, fds=()):
    if fds:
        socket.send_fds(c, [data], list(fds))
    else:
        c.send(data)
    msg, got, _, _ = socket.recv_fds(c, 600, 4)
    for fd in got:
        os.close(fd)
    return msg.decode(errors="replace"), len(got)


def refused(c, data, what, fds=()):
    a, n = ask(c, data, fds)
    if not a.startswith("refused: ") or n:
        sys.exit(f"{what}: answered '{a}' with {n} descriptors")
    return a


def garbage(path):
    c = conn(path)
    for data in (b"\x00\xff\xfe", b"hello", b"xsk", b"pkt if=", b"pkt  if=x",
                 b"pkt if=a/b dir=rx", b"pkt if=eth0 if=eth0 dir=rx",
                 b"pkt if=0123456789abcdef dir=rx", b"attach q=99999",
                 b"attach q=-1", b"xsk if=x q=0 umem=100 chunk=2048 fq=64 cq=64 dir=rx",
                 b"xsk if=x q=0 umem=4096 chunk=2048 fq=63 cq=64 dir=rx rx=64",
                 b"pkt if=x dir=up", b"tap if=x ns=2", b"pkt if=x\x00 dir=rx",
                 b"A" * 600, b"B" * 65536):
        refused(c, data, repr(data[:20]))
    print("garbage: every one refused, the connection kept")


def fds(path):
    c = conn(path)
    r, w = os.pipe()
    refused(c, b"pkt if=vethB dir=rx ns=0", "200 descriptors", [r] * 200)
    refused(c, b"pkt if=vethB dir=rx ns=0", "3 descriptors", [r, w, r])
    refused(c, b"pkt if=vethB dir=rx ns=0", "1 descriptor too many", [r])
    print("fds: refused")


def region(path):
    c = conn(path)
    r, _ = os.pipe()
    line = (b"xsk if=vethB q=0 mode=copy dir=rx off=0 umem=1048576 chunk=2048 "
            b"rx=64 tx=0 fq=64 cq=64 sg=0 share=0 ns=0")
    a, _ = ask(c, line, [r])
    if not a.startswith("error: the region is not a memfd"):
        sys.exit(f"region: a pipe: '{a}'")
    m = os.memfd_create("small")
    os.ftruncate(m, 4096)
    a, _ = ask(c, line, [m])
    if not a.startswith("error: the region has 4096 bytes"):
        sys.exit(f"region: a small memfd: '{a}'")
    print("region: refused")


def grants(path):
    c = conn(path)
    ok = 0
    for i in range(70):
        a, n = ask(c, b"pkt if=vethB dir=rx ns=0")
        if a == "ok" and n == 1:
            ok += 1
        elif not (i >= 64 and a.startswith("refused: too many grants")):
            sys.exit(f"grants: request {i}: '{a}'")
    if ok != 64:
        sys.exit(f"grants: {ok} granted")
    print("grants: 64 granted, the rest refused")


def attach(path):
    refused(conn(path), b"attach q=0", "attach")
    print("attach: refused")


def netns(path):
    """Lies about a namespace: a pipe for one; the broker's own (the
    host's: not ours to give); ns=1 on a verb that takes none."""
    r, _ = os.pipe()
    c = conn(path)
    a = refused(c, b"attach if=vethB q=0 ns=1", "a pipe as the namespace", [r, r])
    if "not a network namespace" not in a:
        sys.exit(f"netns: a pipe: '{a}'")
    host = os.open("/proc/self/ns/net", os.O_RDONLY)
    a = refused(c, b"attach if=vethB q=0 ns=1", "the host's namespace", [r, host])
    if "is not one of uid" not in a:
        sys.exit(f"netns: the host's: '{a}'")
    refused(c, b"pkt if=vethB dir=rx ns=1", "ns=1 on pkt", [r, host])
    refused(c, b"attach if=vethB q=0 ns=1", "one descriptor", [host])
    print("netns: refused (a pipe, the host's namespace, ns=1 on pkt)")


def flood(path, n):
    """Each connection asks once: one the broker kept gets an answer to
    the request (no rule for this user), one it did not gets "too many
    connections" (sent when it was accepted) and its end."""
    held, kept = [], 0
    for _ in range(n):
        held.append(conn(path))
    for c in held:
        try:
            c.send(b"pkt if=vethB dir=rx ns=0")
        except OSError:
            pass
        try:
            msg = c.recv(600)
        except OSError:
            msg = b""
        # not kept: the refusal, or the end (the broker closed it: a
        # request sent on meanwhile makes that a reset)
        if not msg or msg.startswith(b"refused: too many connections"):
            continue
        if not msg.startswith(b"refused: "):
            sys.exit(f"flood: '{msg.decode(errors='replace')}'")
        kept += 1
    print(f"flood: {kept} kept of {n}", flush=True)
    sys.stdin.read()


def deaf(path):
    c = conn(path)
    c.setblocking(False)
    sent = 0
    try:
        for _ in range(2000):
            c.send(b"attach q=0")
            sent += 1
    except (BlockingIOError, BrokenPipeError, ConnectionResetError):
        pass
    print(f"deaf: {sent} sent", flush=True)


def main():
    path, step = sys.argv[1], sys.argv[2]
    if step == "flood":
        flood(path, int(sys.argv[3]))
    else:
        {"garbage": garbage, "fds": fds, "region": region, "grants": grants,
         "attach": attach, "netns": netns, "deaf": deaf}[step](path)


if __name__ == "__main__":
    main()
