#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Frames for tests/system/scrub_xdp.sh, with what scrub's kernel path
must do with each under the test's two lists (LIST1, LIST2 below, the
bans of BANS in both).

usage: scrub_xdp_frames.py DIR
       scrub_xdp_frames.py send IFACE FILE.pcap   send its frames on IFACE
       scrub_xdp_frames.py same A.pcap B.pcap     the same frames, in order?
       scrub_xdp_frames.py verdicts USER KERNEL RECV   scrub's per-rule
           counts alone (scrub_xdp_ctl's "judged" line USER) equal the
           kernel's ("counts" line KERNEL, its growth) plus those of user
           space on what the kernel let through ("judged" line RECV)?

Writes into DIR: list1, list2 (scrub_xdp_ctl's "load" format), in.pcap
(every frame), and for each list N: passN.pcap (the frames that must
reach the AF_XDP socket, in order, byte for byte) and countsN (the
"counts" line of scrub_xdp_ctl after in.pcap was sent once under that
list, counting from zero).
"""
import os
import struct
import sys

LIST1 = """deny 10.9.0.0/16 3
allow 10.9.1.0/24 1
deny 2001:db8:bad::/48 5
deny 10.1.0.9 4
deny 2001:db8::99 6
deny 10.1.0.10 4
allow 10.1.0.10 2
"""
LIST2 = """deny 10.1.2.0/24 10
deny 10.9.0.0/16 11
"""
# ban ADDR SECONDS RULE (negative: already expired), as the test sends
# them to scrub_xdp_ctl.
BANS = [("10.1.0.7", 600, 7), ("10.1.0.8", -1, 8), ("2001:db8::7", 600, 9),
        ("10.9.0.4", 600, 7)]

BCAST = b"\xff" * 6
SMAC = bytes.fromhex("020000000001")


def ip4(a):
    return bytes(int(x) for x in a.split("."))


def ip6(a):
    import ipaddress
    return ipaddress.IPv6Address(a).packed


def v4(src, size=60, ttl=64, frag=0, ihl=5, tot=None, vlans=0, proto=17):
    """An Ethernet frame of `size` bytes with an IPv4/UDP packet from src
    (tot: the IPv4 total length field, default what fits)."""
    head = BCAST + SMAC
    for _ in range(vlans):
        head += struct.pack("!HH", 0x8100, 7)
    head += b"\x08\x00"
    body = size - len(head)
    tl = tot if tot is not None else body
    iph = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, tl, 1, frag, ttl, proto,
                      0, ip4(src), ip4("10.1.0.1"))
    udp = struct.pack("!HHHH", 1234, 4321, max(8, body - 20), 0)
    fr = head + iph + udp
    return fr + bytes(range(256))[: size - len(fr)]


def v6(src, size=80, hlim=64, nh=17, plen=None):
    head = BCAST + SMAC + b"\x86\xdd"
    pl = size - len(head) - 40
    iph = struct.pack("!IHBB16s16s", 0x60000000, pl if plen is None else plen,
                      nh, hlim, ip6(src), ip6("2001:db8::1:1"))
    fr = head + iph + struct.pack("!HHHH", 1234, 4321, pl, 0)
    return fr + bytes(range(256))[: size - len(fr)]


def arp():
    fr = BCAST + SMAC + b"\x08\x06" + struct.pack("!HHBBH", 1, 0x800, 6, 4, 1)
    return fr + b"\x00" * (60 - len(fr))


def frames():
    """(frame, rule under list 1 or None, rule under list 2 or None)."""
    out = []

    def add(n, fr, r1, r2):
        out.extend([(fr, r1, r2)] * n)

    add(4, v4("10.9.0.1", 60), 3, 11)
    add(2, v4("10.9.0.2", 64, vlans=1), 3, 11)
    add(1, v4("10.9.0.3", 68, vlans=2), 3, 11)
    add(3, v4("10.9.1.5", 70), None, 11)          # allow-listed in list 1
    add(2, v4("10.1.0.9", 90), 4, None)           # a host: the hash
    add(2, v4("10.1.0.10", 90), None, None)       # a host on both lists: allowed
    add(3, v4("10.1.0.7", 61), 7, 7)              # banned
    add(2, v4("10.9.0.4", 66), 7, 7)              # banned and denied: bans first
    add(2, v4("10.1.0.8", 62), None, None)        # ban expired
    add(5, v4("10.1.2.3", 100), None, 10)
    add(3, v6("2001:db8:bad::1", 80), 5, None)
    add(2, v6("2001:db8::99", 82), 6, None)
    add(2, v6("2001:db8::7", 84), 9, 9)           # banned
    add(3, v6("2001:db8::1", 86), None, None)
    # next to the edges of prefixes: one address out is not in
    add(1, v4("10.8.255.255", 60), None, None)
    add(1, v4("10.10.0.0", 60), None, None)
    add(1, v6("2001:db8:bae::", 80), None, None)
    add(1, v6("2001:db8:bac:ffff:ffff:ffff:ffff:ffff", 80), None, None)
    add(1, v6("2001:db8::98", 80), None, None)
    add(1, v6("2001:db8::9a", 80), None, None)
    # Not the kernel's to judge: user space sees them, whatever the lists.
    add(1, v4("10.9.0.1", 60, ttl=0), None, None)
    add(1, v4("10.9.0.1", 60, frag=0x2000), None, None)   # MF
    add(1, v4("10.9.0.1", 60, frag=0x0010), None, None)   # offset
    add(1, v4("10.9.0.1", 60, ihl=4), None, None)
    add(1, v4("10.9.0.1", 60, tot=200), None, None)
    add(1, v4("10.9.0.1", 60, tot=10), None, None)        # below the IHL
    add(1, v6("2001:db8:bad::1", 80, nh=0), None, None)   # hop-by-hop
    add(1, v6("2001:db8:bad::1", 80, nh=44), None, None)  # fragment
    add(1, v6("2001:db8:bad::1", 80, hlim=0), None, None)
    add(1, v6("2001:db8:bad::1", 80, plen=400), None, None)
    add(1, v4("10.9.0.1", 60, proto=6), None, None)      # TCP header cut
    add(1, v4("10.9.0.1", 60, proto=1, tot=22), None, None)  # ICMP cut
    add(1, v4("10.9.0.1", 80, tot=30), None, None)        # UDP length > IP
    add(1, arp(), None, None)
    return out


def write_pcap(path, frs):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frs):
            f.write(struct.pack("<IIII", 1000, i, len(fr), len(fr)))
            f.write(fr)


def counts_line(fs, which):
    c = {}
    for fr, r1, r2 in fs:
        r = r1 if which == 1 else r2
        if r is not None:
            p, b = c.get(r, (0, 0))
            c[r] = (p + 1, b + len(fr))
    return "counts" + "".join(" %d:%d:%d" % (r, p, b)
                              for r, (p, b) in sorted(c.items()))


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    out, off = [], 24
    while off + 16 <= len(data):
        n = struct.unpack_from("<I", data, off + 8)[0]
        out.append(data[off + 16:off + 16 + n])
        off += 16 + n
    return out


def send(ifname, path):
    import socket
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    for fr in read_pcap(path):
        s.send(fr)


def same(a, b):
    fa, fb = read_pcap(a), read_pcap(b)
    for i, (x, y) in enumerate(zip(fa, fb)):
        if x != y:
            sys.exit("frame %d differs: %s / %s" % (i, x.hex(), y.hex()))
    if len(fa) != len(fb):
        sys.exit("%d frames, want %d" % (len(fa), len(fb)))


def verdicts(user, kernel, recv):
    def hits(line):
        return {int(r): int(n) for r, n in
                (w.split(":")[:2] for w in line.split()[1:])}
    u, k, r = hits(user), hits(kernel), hits(recv)
    both = {i: k.get(i, 0) + r.get(i, 0) for i in set(k) | set(r)}
    if u != both:
        sys.exit("per-rule counts: user space alone %s, kernel %s + user "
                 "space %s" % (sorted(u.items()), sorted(k.items()),
                               sorted(r.items())))


def main():
    if sys.argv[1] == "verdicts":
        return verdicts(sys.argv[2], sys.argv[3], sys.argv[4])
    if sys.argv[1] == "send":
        return send(sys.argv[2], sys.argv[3])
    if sys.argv[1] == "same":
        return same(sys.argv[2], sys.argv[3])
    d = sys.argv[1]
    fs = frames()
    for name, text in (("list1", LIST1), ("list2", LIST2)):
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    with open(os.path.join(d, "bans"), "w") as f:
        for a, s, r in BANS:
            f.write("ban %s %d %d\n" % (a, s, r))
    write_pcap(os.path.join(d, "in.pcap"), [f for f, _, _ in fs])
    # the marker scrub_xdp_ctl's recvm stops at: an ARP frame from
    # 02:00:00:00:00:ee
    write_pcap(os.path.join(d, "marker.pcap"),
               [BCAST + bytes.fromhex("0200000000ee") + arp()[12:]])
    for which in (1, 2):
        keep = [f for f, r1, r2 in fs if (r1 if which == 1 else r2) is None]
        write_pcap(os.path.join(d, "pass%d.pcap" % which), keep)
        with open(os.path.join(d, "counts%d" % which), "w") as f:
            f.write(counts_line(fs, which) + "\n")
        with open(os.path.join(d, "npass%d" % which), "w") as f:
            f.write("%d\n" % len(keep))


if __name__ == "__main__":
    main()
