#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Frames, rules and expectations for tests/system/scrub_pipe.sh.

    scrub_frames.py kinds DIR     DIR/kinds.rules, DIR/in.pcap (a frame of
                                  every rule kind and reason, IPv4 and
                                  IPv6), DIR/want.pcap (the frames that
                                  must pass, in order), DIR/want.txt
                                  ("reason NAME N" and "rule ID N" lines)
    scrub_frames.py corpus DIR    DIR/scrub_malformed.pcap and .txt: the
                                  malformed frames, one per reason case
                                  (tests/data/ holds the committed copy)
    scrub_frames.py ban DIR       DIR/ban.pcap: 5 frames of one source
    scrub_frames.py count PCAP    the number of frames in PCAP
    scrub_frames.py same GOT WANT the frames of two pcap files are equal,
                                  byte for byte, in order (exit 1 if not)
    scrub_frames.py reload OUT SENT  gen's frames to 10.1.0.1 and .2 after
                                  a run of reloads between "drop dst .1"
                                  and "drop dst .2": print the number of
                                  runs of frames judged by one set; exit 1
                                  when a frame was judged by neither or
                                  appears twice
    scrub_frames.py ctl SOCK REQUEST...  one request to pktmap scrub's
                                  control socket, its answer on stdout
"""
import socket
import struct
import sys

ETH = bytes.fromhex('020000000002' '020000000001')


def csum(b):
    if len(b) % 2:
        b += b'\0'
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def ip4(a):
    return bytes(int(x) for x in a.split('.'))


def ip6(a):
    head, _, tail = a.partition('::')
    h = [int(x, 16) for x in head.split(':') if x]
    t = [int(x, 16) for x in tail.split(':') if x]
    words = h + [0] * (8 - len(h) - len(t)) + t
    return struct.pack('!8H', *words)


def l4(proto, sport, dport, flags=0, payload=b''):
    if proto == 6:
        return struct.pack('!HHIIBBHHH', sport, dport, 1, 0, 5 << 4, flags,
                           8192, 0, 0) + payload
    if proto == 17:
        return struct.pack('!HHHH', sport, dport, 8 + len(payload), 0) + payload
    return struct.pack('!BBHI', sport, dport, 0, 0) + payload


def v4(src, dst, proto, sport=1, dport=2, flags=0, payload=b'', tag=0,
       ttl=64, frag=0, ihl=5, tot=None):
    body = l4(proto, sport, dport, flags, payload)
    opts = b'\0' * (max(ihl, 5) * 4 - 20)
    n = 20 + len(opts) + len(body) if tot is None else tot
    h = struct.pack('!BBHHHBBH4s4s', 0x40 | ihl, 0, n, tag, frag, ttl, proto,
                    0, ip4(src), ip4(dst)) + opts
    h = h[:10] + struct.pack('!H', csum(h)) + h[12:]
    return ETH + b'\x08\x00' + h + body


def v6(src, dst, proto, sport=1, dport=2, flags=0, payload=b'', hlim=64,
       nh=None, ext=b'', plen=None):
    body = ext + l4(proto, sport, dport, flags, payload)
    n = len(body) if plen is None else plen
    h = struct.pack('!IHBB16s16s', 0x60000000, n, proto if nh is None else nh,
                    hlim, ip6(src), ip6(dst))
    return ETH + b'\x86\xdd' + h + body


def write_pcap(path, frames):
    with open(path, 'wb') as f:
        f.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack('<IIII', 1000, i, len(fr), len(fr)))
            f.write(fr)


def read_pcap(path):
    with open(path, 'rb') as f:
        data = f.read()
    magic = struct.unpack('<I', data[:4])[0]
    end = '<' if magic in (0xa1b2c3d4, 0xa1b23c4d) else '>'
    at, out = 24, []
    while at + 16 <= len(data):
        _, _, cap, _ = struct.unpack(end + 'IIII', data[at:at + 16])
        out.append(data[at + 16:at + 16 + cap])
        at += 16 + cap
    return out


RULES = """\
# every kind of rule scrub_pipe.sh counts (rule ids from 0, in order)
allow 192.0.2.0/24 2001:db8:a::/48
deny 198.51.100.0/24
deny 2001:db8:bad::/48
drop proto udp dport 19
drop proto tcp flags F/FSRPAU
pass proto tcp src 203.0.113.0/24 dport 22
drop proto tcp dport 22
limit packets 3 ban 60
syn-limit 2
fragments drop
"""


def kinds(d):
    """(frame, reason, rule id or None); the clock stands still."""
    c = []
    ok = lambda f: c.append((f, 'passed', None))
    c.append((v4('192.0.2.9', '10.0.0.1', 17, dport=19, tag=1), 'allowed', 0))
    c.append((v6('2001:db8:a::1', '2001:db8::1', 17, dport=19), 'allowed', 0))
    c.append((v4('198.51.100.7', '10.0.0.1', 17, tag=2), 'deny', 1))
    c.append((v6('2001:db8:bad::7', '2001:db8::1', 17), 'deny', 2))
    c.append((v4('10.9.0.1', '10.0.0.1', 17, dport=19, tag=3), 'drop_rule', 3))
    c.append((v6('2001:db8:1::1', '2001:db8::1', 17, dport=19), 'drop_rule', 3))
    c.append((v4('10.9.0.2', '10.0.0.1', 6, dport=80, flags=0x01, tag=4), 'drop_rule', 4))
    ok(v4('10.9.0.2', '10.0.0.1', 6, dport=80, flags=0x11, tag=5))
    c.append((v4('203.0.113.5', '10.0.0.1', 6, dport=22, flags=0x10, tag=6), 'pass_rule', 5))
    c.append((v4('10.9.0.3', '10.0.0.1', 6, dport=22, flags=0x10, tag=7), 'drop_rule', 6))
    # limit: source 10.8.0.1 has 3 frames, the 4th bans it, then banned
    for i in range(3):
        ok(v4('10.8.0.1', '10.0.0.1', 17, tag=10 + i))
    c.append((v4('10.8.0.1', '10.0.0.1', 17, tag=13), 'src_pps', 7))
    c.append((v4('10.8.0.1', '10.0.0.1', 17, tag=14), 'banned', None))
    c.append((v6('2001:db8:8::1', '2001:db8::1', 17), 'passed', None))
    # syn-limit 2 for 10.0.0.99, from several sources
    ok(v4('10.7.0.1', '10.0.0.99', 6, dport=80, flags=0x02, tag=20))
    ok(v4('10.7.0.2', '10.0.0.99', 6, dport=80, flags=0x02, tag=21))
    c.append((v4('10.7.0.3', '10.0.0.99', 6, dport=80, flags=0x02, tag=22), 'dst_syn', 8))
    ok(v4('10.7.0.3', '10.0.0.99', 6, dport=80, flags=0x12, tag=23))  # SYN-ACK
    # malformed, fragments, non-IP
    c.append((v4('10.6.0.1', '10.0.0.1', 17, ttl=0, tag=30), 'ttl0', None))
    c.append((v4('10.6.0.1', '10.0.0.1', 17, frag=0x2000, tag=31), 'fragment', None))
    c.append((v4('10.6.0.1', '10.0.0.1', 17, ihl=4, tag=32), 'bad_ihl', None))
    c.append((v4('10.6.0.1', '10.0.0.1', 17, tot=200, tag=33), 'bad_len', None))
    c.append((v6('2001:db8:6::1', '2001:db8::1', 17, hlim=0), 'ttl0', None))
    c.append((ETH + b'\x08\x06' + bytes(28), 'not_ip', None))
    c.append((ETH + b'\x08\x00' + bytes(10), 'truncated', None))
    with open(d + '/kinds.rules', 'w') as f:
        f.write(RULES)
    write_pcap(d + '/in.pcap', [f for f, _, _ in c])
    passing = ('passed', 'allowed', 'pass_rule', 'not_ip')
    write_pcap(d + '/want.pcap', [f for f, why, _ in c if why in passing])
    write_pcap(d + '/dropped.pcap', [f for f, why, _ in c if why not in passing])
    reasons, rules = {}, {}
    for _, why, rule in c:
        reasons[why] = reasons.get(why, 0) + 1
        if rule is not None:
            rules[rule] = rules.get(rule, 0) + 1
    with open(d + '/want.txt', 'w') as f:
        for k in sorted(reasons):
            f.write('reason %s %d\n' % (k, reasons[k]))
        for k in sorted(rules):
            f.write('rule %d %d\n' % (k, rules[k]))


def corpus(d):
    """Malformed frames and the reason each must be dropped for."""
    base = v4('10.5.0.1', '10.0.0.1', 6, dport=80, flags=0x02)
    c = []
    for n in (0, 1, 13, 14, 20, 33):
        c.append((base[:n], 'truncated'))
    c.append((ETH + b'\x81\x00' + b'\x00', 'truncated'))        # VLAN cut
    c.append((v4('10.5.0.1', '10.0.0.1', 17, ihl=0), 'bad_ihl'))
    long_ihl = bytearray(v4('10.5.0.1', '10.0.0.1', 17))
    long_ihl[14] = 0x4f                                           # 60 > 28 bytes
    c.append((bytes(long_ihl), 'bad_ihl'))
    c.append((v4('10.5.0.1', '10.0.0.1', 17, tot=19), 'bad_len'))
    c.append((v4('10.5.0.1', '10.0.0.1', 17, tot=1500), 'bad_len'))
    tcp = bytearray(base)
    tcp[14 + 20 + 12] = 0x40                                      # data offset 4
    c.append((bytes(tcp), 'bad_len'))
    tcp[14 + 20 + 12] = 0xf0                                      # 60 > what is there
    c.append((bytes(tcp), 'bad_len'))
    udp = bytearray(v4('10.5.0.1', '10.0.0.1', 17))
    udp[14 + 20 + 5] = 7
    c.append((bytes(udp), 'bad_len'))
    c.append((v4('10.5.0.1', '10.0.0.1', 17, ttl=0), 'ttl0'))
    c.append((v4('10.5.0.1', '10.0.0.1', 17, frag=0x0001), 'fragment'))
    c.append((v4('10.5.0.1', '10.0.0.1', 17, frag=0x2000), 'fragment'))
    bad = bytearray(base)
    bad[14] = 0x65
    c.append((bytes(bad), 'bad_version'))
    c.append((v6('2001:db8::5', '2001:db8::1', 17, plen=200), 'bad_len'))
    c.append((v6('2001:db8::5', '2001:db8::1', 17, hlim=0), 'ttl0'))
    c.append((v6('2001:db8::5', '2001:db8::1', 17, nh=44,
                 ext=struct.pack('!BBHI', 17, 0, 0, 1)), 'fragment'))
    c.append((v6('2001:db8::5', '2001:db8::1', 17, nh=60,
                 ext=struct.pack('!BB6x', 17, 9)), 'bad_exthdr'))
    # nine hop-by-hop headers in a row: more than scrub follows
    c.append((v6('2001:db8::5', '2001:db8::1', 17, nh=0,
                 ext=struct.pack('!BB6x', 0, 0) * 8 + struct.pack('!BB6x', 17, 0)),
              'bad_exthdr'))
    c.append((v6('2001:db8::5', '2001:db8::1', 6)[:50], 'truncated'))
    c.append((v6('2001:db8::5', '2001:db8::1', 6)[:60], 'bad_len'))
    write_pcap(d + '/scrub_malformed.pcap', [f for f, _ in c])
    with open(d + '/scrub_malformed.txt', 'w') as f:
        f.write('# the reason scrub drops each frame of scrub_malformed.pcap for,\n'
                '# in order (tests/system/scrub_frames.py corpus DIR writes both)\n')
        for _, why in c:
            f.write(why + '\n')


def ban(d):
    write_pcap(d + '/ban.pcap', [v4('10.4.0.1', '10.0.0.1', 17, tag=i)
                                 for i in range(5)])


def same(got, want):
    g, w = read_pcap(got), read_pcap(want)
    if g != w:
        for i, (a, b) in enumerate(zip(g, w)):
            if a != b:
                print('frame %d differs: %s vs %s' % (i, a.hex(), b.hex()))
                break
        print('%d frames, want %d' % (len(g), len(w)))
        sys.exit(1)
    print('%d frames, byte for byte' % len(g))


def reload(out, sent):
    """Each of gen's frames (seq 0..sent-1, to .1 and .2 in turn) was
    judged by set A (drops .1) or B (drops .2); a frame in the output
    says which, and so does a frame missing from it."""
    seen = {}
    dst_of = {}
    for fr in read_pcap(out):
        seq = struct.unpack('!Q', fr[50:58])[0]
        if seq in seen:
            print('frame %d twice' % seq)
            sys.exit(1)
        seen[seq] = fr[30:34]
        dst_of[fr[30:34]] = True
    one, two = ip4('10.1.0.1'), ip4('10.1.0.2')
    if set(seen.values()) - {one, two}:
        print('a frame to neither destination')
        sys.exit(1)
    # gen alternates the destination: even sequence numbers go to .1
    runs, last = 0, None
    for seq in range(sent):
        dst = one if seq % 2 == 0 else two
        passed = seq in seen
        if passed and seen[seq] != dst:
            print('frame %d to the other destination' % seq)
            sys.exit(1)
        judge = ('B' if passed else 'A') if dst == one else ('A' if passed else 'B')
        if judge != last:
            runs += 1
            last = judge
    print(runs)


def ctl(path, req):
    """One request (words joined by spaces) to the control socket at
    path; its whole answer on stdout."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.sendall((' '.join(req) + '\n').encode())
    out = b''
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
    s.close()
    sys.stdout.write(out.decode())


def main():
    cmd = sys.argv[1]
    if cmd == 'kinds':
        kinds(sys.argv[2])
    elif cmd == 'corpus':
        corpus(sys.argv[2])
    elif cmd == 'ban':
        ban(sys.argv[2])
    elif cmd == 'count':
        print(len(read_pcap(sys.argv[2])))
    elif cmd == 'same':
        same(sys.argv[2], sys.argv[3])
    elif cmd == 'reload':
        reload(sys.argv[2], int(sys.argv[3]))
    elif cmd == 'ctl' and len(sys.argv) >= 4:
        ctl(sys.argv[2], sys.argv[3:])
    else:
        sys.exit('usage: see the docstring')


if __name__ == '__main__':
    main()
