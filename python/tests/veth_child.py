# SPDX-License-Identifier: BSD-2-Clause
"""Run by test_veth.py inside its namespace: open PORT on vethA for RX
(with OPTS, a JSON object of pktmap.open() options, if given),
send N frames from vethB with pkt:, receive them through pktmap's Python
batches, and print what arrived as JSON (count, bytes intact, stats)."""
import json
import sys

import pktmap

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from conftest import frame, packet_bytes  # noqa: E402

name, n = sys.argv[1], int(sys.argv[2])
opts = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
frames = [frame(i, 60 + i % 200) for i in range(n)]
with pktmap.open(name, dir="rx", **opts) as rx, \
        pktmap.open("pkt:vethB", dir="tx") as tx:
    mode = rx.mode
    blocks = rx.info()["rx_blocks"]
    tx.send(frames)
    got = []
    for batch in rx.rx(timeout=10):
        lens = batch.lengths
        heads = batch.headers(14)
        for i, v in enumerate(batch):
            if bytes(heads[i, 12:14]) == b"\x88\xb5":  # ours, not the kernel's
                assert lens[i] == len(v)
                got.append(packet_bytes(v))
        if len(got) >= n:
            break
    st = rx.stats()
print(json.dumps({"mode": mode, "count": len(got), "intact": got == frames,
                  "bytes": sum(map(len, got)), "rx_blocks": blocks,
                  "rx_packets": st["rx_packets"]}))
