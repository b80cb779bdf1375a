#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Frames for scrub's limits in its kernel path (tests/system/
scrub_klimit.sh, scrub_same.sh).

usage: scrub_klimit.py corpus DIR
           DIR/limits.rules and DIR/limits.pcap: sources over their
           packet and byte limits (IPv4, IPv6), allow- and deny-listed
           ones, a SYN flood against one destination, sources over their
           limits whose frames the kernel sends up (IPv4 fragments, IPv6
           with an extension header), malformed and non-IP frames, for
           scrub_same.sh (user space alone and the kernel path must
           count the same)
       scrub_klimit.py flood IFACE DSTMAC NSRC PER LEGIT
           on IFACE, frames to DSTMAC, 10.77.0.2: NSRC sources
           10.78.0.1.. send PER UDP frames each to port 9, in turn, and
           between them the legitimate flow, 10.77.0.1 to port 9999,
           LEGIT frames numbered 0..LEGIT-1 (the test allow-lists it)
       scrub_klimit.py one IFACE DSTMAC SRC
           one UDP frame from SRC to 10.77.0.2 port 9
       scrub_klimit.py ctl SOCK REQUEST...
           one request to scrub's control socket: print the answer
       scrub_klimit.py recv PORT N READY
           a UDP socket on PORT (touches READY when bound): print how
           many of the numbered frames 0..N-1 arrived, each once and
           intact, when all N have or after 30 s without one; exit 1 on
           a frame twice, out of range or damaged
"""
import os
import socket
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from scrub_frames import csum, ctl, ip4, ip6  # noqa: E402

SMAC = bytes.fromhex("020000000001")
DST = "10.77.0.2"
PAYLOAD = 32


def udp4(dmac, src, dst, dport, payload, ttl=64):
    udp = struct.pack("!HHHH", 1000, dport, 8 + len(payload), 0) + payload
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, ttl, 17,
                      0, ip4(src), ip4(dst))
    hdr = hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:]
    return dmac + SMAC + b"\x08\x00" + hdr + udp


def tcp4(dmac, src, dst, flags):
    tcp = struct.pack("!HHIIBBHHH", 1000, 80, 1, 0, 5 << 4, flags, 8192, 0, 0)
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 1, 0, 64, 6,
                      0, ip4(src), ip4(dst))
    hdr = hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:]
    return dmac + SMAC + b"\x08\x00" + hdr + tcp


def udp6(dmac, src, dst, size, ext=False):
    payload = bytes(max(0, size - 62))
    udp = struct.pack("!HHHH", 1000, 9, 8 + len(payload), 0) + payload
    if ext:  # a destination options header (PadN) before UDP
        udp = bytes([17, 0, 1, 4, 0, 0, 0, 0]) + udp
    hdr = struct.pack("!IHBB16s16s", 6 << 28, len(udp), 60 if ext else 17,
                      64, ip6(src), ip6(dst))
    return dmac + SMAC + b"\x86\xdd" + hdr + udp


def frag4(dmac, src, dst):
    """A first fragment (MF set) of a UDP datagram, 60 bytes."""
    udp = struct.pack("!HHHH", 1000, 9, 8 + 18 + 100, 0) + bytes(18)
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 7, 0x2000, 64,
                      17, 0, ip4(src), ip4(dst))
    hdr = hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:]
    return dmac + SMAC + b"\x08\x00" + hdr + udp


def pad(n):
    return bytes(n)


def corpus(d):
    dmac = bytes.fromhex("020000000002")
    rules = (
        "allow 10.51.0.0/24\n"
        "deny 10.52.0.0/16 2001:db8:52::/48\n"
        "syn-limit 0.001 burst 3000\n"
        # 3 frames of tokens, 180 bytes (burst 3000 s of 0.001 pps and
        # 0.06 B/s: nothing refills while the test runs)
        "limit packets 0.001 bytes 0.06 burst 3000 ban 600\n"
        "sources 4096\n"
        "dests 1024\n"
        # fragments go up unjudged by the kernel: the workers limit them
        "fragments pass\n")
    frs = []
    # in turn, so that the sources' frames mix
    for i in range(8):
        frs.append(udp4(dmac, "10.50.0.1", DST, 9, pad(18)))   # 60 B: pps
        frs.append(udp4(dmac, "10.50.0.2", DST, 9, pad(118)))  # 160 B: bps
        frs.append(udp4(dmac, "10.51.0.7", DST, 9, pad(18)))   # allowed
        frs.append(udp4(dmac, "10.52.1.1", DST, 9, pad(18)))   # denied
        frs.append(udp6(dmac, "2001:db8:50::1", "2001:db8::2", 80))
        frs.append(udp6(dmac, "2001:db8:52::9", "2001:db8::2", 80))
        # a SYN flood from many sources against one destination (3 pass)
        frs.append(tcp4(dmac, "10.53.0.%d" % (i + 1), "10.77.0.99", 0x02))
        frs.append(tcp4(dmac, "10.53.1.%d" % (i + 1), "10.77.0.99", 0x12))
        # not judged by the kernel (it sends them up): the workers limit
        # these sources with their own buckets
        frs.append(udp6(dmac, "2001:db8:55::1", "2001:db8::2", 80, ext=True))
        frs.append(frag4(dmac, "10.50.0.9", DST))
    frs.append(udp4(dmac, "10.50.0.3", DST, 9, pad(18), ttl=0))  # ttl0
    frs.append(dmac + SMAC + b"\x08\x06" + bytes(28))             # ARP
    frs.append(udp4(dmac, "10.50.0.3", DST, 9, pad(18)))
    with open(os.path.join(d, "limits.rules"), "w") as f:
        f.write(rules)
    with open(os.path.join(d, "limits.pcap"), "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frs):
            f.write(struct.pack("<IIII", i, 0, len(fr), len(fr)) + fr)


def sender(ifname):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    return s


def flood(ifname, dmac, nsrc, per, legit):
    s = sender(ifname)
    dmac = bytes.fromhex(dmac.replace(":", ""))
    flood_frames = [udp4(dmac, "10.78.%d.%d" % (k // 250, k % 250 + 1), DST,
                         9, pad(PAYLOAD)) for k in range(nsrc)]
    total = nsrc * per
    every = max(1, total // max(1, legit))
    seq, sent = 0, 0
    for _ in range(per):
        for fr in flood_frames:
            s.send(fr)
            sent += 1
            if seq < legit and sent % every == 0:
                s.send(udp4(dmac, "10.77.0.1", DST, 9999,
                            struct.pack("!I", seq) + pad(PAYLOAD - 4)))
                seq += 1
    while seq < legit:
        s.send(udp4(dmac, "10.77.0.1", DST, 9999,
                    struct.pack("!I", seq) + pad(PAYLOAD - 4)))
        seq += 1


def one(ifname, dmac, src):
    s = sender(ifname)
    s.send(udp4(bytes.fromhex(dmac.replace(":", "")), src, DST, 9,
                pad(PAYLOAD)))


def recv(port, n, ready):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, 33, 1 << 23)  # SO_RCVBUFFORCE
    except OSError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 23)
    s.bind(("0.0.0.0", port))
    s.settimeout(30)
    open(ready, "w").close()
    seen = set()
    while len(seen) < n:
        try:
            b = s.recv(2048)
        except socket.timeout:
            break
        seq = struct.unpack("!I", b[:4])[0] if len(b) == PAYLOAD else -1
        if seq < 0 or seq >= n or seq in seen or b[4:] != pad(PAYLOAD - 4):
            print("bad frame: %r" % b[:16], file=sys.stderr)
            sys.exit(1)
        seen.add(seq)
    print(len(seen))


def main():
    a = sys.argv[1:]
    if a[:1] == ["corpus"] and len(a) == 2:
        corpus(a[1])
    elif a[:1] == ["flood"] and len(a) == 6:
        flood(a[1], a[2], int(a[3]), int(a[4]), int(a[5]))
    elif a[:1] == ["one"] and len(a) == 4:
        one(a[1], a[2], a[3])
    elif a[:1] == ["ctl"] and len(a) >= 3:
        ctl(a[1], a[2:])
    elif a[:1] == ["recv"] and len(a) == 4:
        recv(int(a[1]), int(a[2]), a[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
