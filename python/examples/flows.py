#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Flows, sizes and top talkers of a port's traffic, with numpy and pandas.

    python3 flows.py PORT [--count N] [--idle SEC] [--top K] [--json]

    python3 flows.py pcap:trace.pcap/R
    python3 flows.py pkt:eth0 --count 1000000 --top 5

Each batch is turned into columns with one copy (Batch.headers(): the
first 54 bytes of every packet, a 2-D uint8 array) and numpy arithmetic;
no Python code runs per packet. The columns of all batches are joined in a
pandas DataFrame at the end: packets and bytes per flow (IPv4 5-tuple),
a histogram of sizes, and the sources that sent the most bytes.
"""
import argparse
import json
import sys

import numpy as np
import pandas as pd

import pktmap

HDR = 54  # Ethernet + IPv4 without options + TCP/UDP ports, and room


def columns(batch):
    """One batch as numpy columns (IPv4 frames only)."""
    h = batch.headers(HDR)
    lens = batch.lengths
    ipv4 = (h[:, 12] == 0x08) & (h[:, 13] == 0x00) & (h[:, 14] >> 4 == 4)
    h, lens = h[ipv4], lens[ipv4]
    rows = np.arange(len(h))
    ihl = (h[:, 14] & 0x0F).astype(np.intp) * 4
    l4 = np.minimum(14 + ihl, HDR - 4)  # ports, where the header allows
    proto = h[:, 23]
    has_ports = (proto == 6) | (proto == 17)

    def be16(off):
        return (h[rows, off].astype(np.uint32) << 8) | h[rows, off + 1]

    def be32(col):
        return h[:, col:col + 4].astype(np.uint32) @ np.array(
            [1 << 24, 1 << 16, 1 << 8, 1], dtype=np.uint32)
    return {
        "src": be32(26), "dst": be32(30), "proto": proto,
        "sport": np.where(has_ports, be16(l4), 0),
        "dport": np.where(has_ports, be16(l4 + 2), 0),
        "len": lens,
    }


def ip(x):
    x = int(x)
    return f"{x >> 24}.{(x >> 16) & 255}.{(x >> 8) & 255}.{x & 255}"


def summary(df, top):
    flows = (df.groupby(["src", "dst", "proto", "sport", "dport"])["len"]
             .agg(packets="count", bytes="sum").reset_index()
             .sort_values(["bytes", "packets"], ascending=False))
    bins = [0, 64, 128, 256, 512, 1024, 1519, 65536]
    sizes = pd.cut(df["len"], bins=bins, right=False).value_counts(sort=False)
    talkers = (df.groupby("src")["len"].sum().sort_values(ascending=False)
               .head(top))
    return {
        "packets": int(len(df)), "bytes": int(df["len"].sum()),
        "flows": [{"src": ip(r.src), "dst": ip(r.dst), "proto": int(r.proto),
                   "sport": int(r.sport), "dport": int(r.dport),
                   "packets": int(r.packets), "bytes": int(r.bytes)}
                  for r in flows.head(top).itertuples()],
        "flow_count": int(len(flows)),
        "sizes": {str(k): int(v) for k, v in sizes.items()},
        "top_talkers": [{"src": ip(s), "bytes": int(b)}
                        for s, b in talkers.items()],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("port")
    ap.add_argument("--count", type=int, default=0,
                    help="stop after N packets (0: at the source's end)")
    ap.add_argument("--idle", type=float, default=None,
                    help="stop after SEC seconds without packets")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    parts, seen = [], 0
    try:
        port = pktmap.open(a.port, dir="rx")
    except OSError as e:
        print(f"flows: {e.strerror or e}", file=sys.stderr)
        return 1
    with port:
        try:
            for batch in port.rx(timeout=a.idle):
                parts.append(columns(batch))
                seen += len(batch)
                if a.count and seen >= a.count:
                    break
        except KeyboardInterrupt:
            pass
    cols = {k: np.concatenate([p[k] for p in parts]) if parts else
            np.zeros(0, np.uint32)
            for k in ("src", "dst", "proto", "sport", "dport", "len")}
    out = summary(pd.DataFrame(cols), a.top)
    if a.json:
        print(json.dumps(out))
        return 0
    print(f"{out['packets']} IPv4 packets, {out['bytes']} bytes, "
          f"{out['flow_count']} flows")
    for f in out["flows"]:
        print(f"  {f['src']}:{f['sport']} -> {f['dst']}:{f['dport']} "
              f"proto {f['proto']}: {f['packets']} packets, {f['bytes']} bytes")
    print("sizes:", ", ".join(f"{k} {v}" for k, v in out["sizes"].items()))
    print("top talkers:", ", ".join(f"{t['src']} {t['bytes']}"
                                    for t in out["top_talkers"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
