#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Forward what a filter keeps from one port to another.

    python3 filter.py IN OUT [--ethertype 0x0800] [--proto 17] [--dport 53]
                      [--idle SEC] [--json]

    python3 filter.py 'pipe:a}0@mem:f' 'pipe:b{0@mem:f' --proto 17
    python3 filter.py pcap:in.pcap/R pcap:dns.pcap/T --dport 53

The filter is numpy over Batch.headers(); the packets it keeps go out with
Port.forward(): when both ports share one memory (pipes with one @mem:,
two ends of a pipe) the slots swap buffer indices and no byte is copied,
as `pktmap bridge` does; otherwise each kept frame is copied once.
Ends at the end of IN's source, after --idle seconds without packets, or
at Ctrl-C, and prints what it forwarded and dropped.
"""
import argparse
import json
import sys

import numpy as np

import pktmap


def keep_mask(batch, a):
    h = batch.headers(38)
    keep = np.ones(len(h), dtype=bool)
    if a.ethertype is not None:
        keep &= ((h[:, 12].astype(np.uint16) << 8) | h[:, 13]) == a.ethertype
    if a.proto is not None or a.dport is not None:
        ipv4 = (h[:, 12] == 0x08) & (h[:, 13] == 0) & (h[:, 14] == 0x45)
        keep &= ipv4
        if a.proto is not None:
            keep &= h[:, 23] == a.proto
        if a.dport is not None:  # TCP or UDP, IPv4 without options
            keep &= (h[:, 23] == 6) | (h[:, 23] == 17)
            keep &= ((h[:, 36].astype(np.uint16) << 8) | h[:, 37]) == a.dport
    return keep


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("inp", metavar="IN")
    ap.add_argument("out", metavar="OUT")
    ap.add_argument("--ethertype", type=lambda s: int(s, 0))
    ap.add_argument("--proto", type=int)
    ap.add_argument("--dport", type=int)
    ap.add_argument("--idle", type=float, default=None)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    seen = kept = fwd = 0
    try:
        src = pktmap.open(a.inp, dir="rx")
        dst = pktmap.open(a.out, dir="tx")
    except OSError as e:
        print(f"filter: {e.strerror or e}", file=sys.stderr)
        return 1
    with src, dst:
        zc = src.shares_memory(dst)
        try:
            for batch in src.rx(timeout=a.idle):
                mask = keep_mask(batch, a)
                seen += len(batch)
                kept += int(mask.sum())
                fwd += dst.forward(batch, mask)
        except KeyboardInterrupt:
            pass
    res = {"seen": seen, "kept": kept, "forwarded": fwd,
           "dropped": seen - fwd, "zerocopy": zc}
    print(json.dumps(res) if a.json else
          f"{seen} seen, {kept} kept, {fwd} forwarded"
          f" ({'zero-copy' if zc else 'copied'}), {seen - fwd} dropped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
