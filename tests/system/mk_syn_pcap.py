#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
# mk_syn_pcap.py OUT N DST_MAC SRC_MAC: N TCP SYNs as a pcap file (tests).
import struct, sys
# TCP SYNs from 10.1.0.2 (a Linux-like SYN: MSS, SACK, TS, NOP, WS) to
# 10.1.0.1:80, one per source port, as a pcap file.
def csum(b):
    if len(b) % 2: b += b'\0'
    s = sum(struct.unpack('!%dH' % (len(b)//2), b))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
def ip4(a): return bytes(int(x) for x in a.split('.'))
def syn(dmac, smac, sport):
    src, dst = ip4('10.1.0.2'), ip4('10.1.0.1')
    opts = struct.pack('!BBH', 2, 4, 1460) + b'\x04\x02' + struct.pack('!BBII', 8, 10, 12345+sport, 0) + b'\x01' + struct.pack('!BBB', 3, 3, 7)
    thl = 20 + len(opts)
    tcp = struct.pack('!HHIIBBHHH', sport, 80, 1000+sport, 0, (thl//4) << 4, 0x02, 64240, 0, 0) + opts
    ph = src + dst + struct.pack('!BBH', 0, 6, len(tcp))
    tcp = tcp[:16] + struct.pack('!H', csum(ph + tcp)) + tcp[18:]
    iph = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20+len(tcp), sport, 0x4000, 64, 6, 0, src, dst)
    iph = iph[:10] + struct.pack('!H', csum(iph)) + iph[12:]
    return dmac + smac + b'\x08\x00' + iph + tcp
out, n, dmac, smac = sys.argv[1], int(sys.argv[2]), bytes.fromhex(sys.argv[3].replace(':','')), bytes.fromhex(sys.argv[4].replace(':',''))
with open(out, 'wb') as f:
    f.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    for i in range(n):
        fr = syn(dmac, smac, 20000 + i)
        f.write(struct.pack('<IIII', 1000 + i // 1000, (i % 1000) * 1000, len(fr), len(fr)))
        f.write(fr)
