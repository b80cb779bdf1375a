#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Every callgrind figure of the benchmarks, in one run: instructions per
packet of pktmap's own code, exact and the same on a busy machine (so it
may run beside other work, unlike the rate benchmarks).

    bench/cost.py [--quick]      (env: RESULT=cost: results file name)

  gen_null_fast / gen_null_stamped   pktmap gen -> null:, batch 512
  pipe_sync                          txsync + rxsync + loop (pipe_cost)
  bridge_zerocopy / bridge_copy      pktmap bridge pipe -> pipe
  switch_2/4/8                       the switch's work per frame
  netmap_pktmap/source/binary        sender -> null: through each API
  tx_xdp / tx_pkt                    pktmap gen -> xdp:/pkt: on a veth
                                     (user space only; root)

A refactor that must not change behaviour compares two of these files
(bench/cost.py --compare OLD.json NEW.json: the change of each figure).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def measure():
    import forward
    import netmap
    import pipe
    import switch
    import tx_cost
    res = {
        "gen_null_fast": pipe.callgrind_null(True),
        "gen_null_stamped": pipe.callgrind_null(False),
        "pipe_sync": pipe.pipe_cost(),
        "bridge_zerocopy": forward.callgrind_bridge(True),
        "bridge_copy": forward.callgrind_bridge(False),
    }
    for p in switch.cost_points():
        res[f"switch_{p['ports']}"] = p["instructions_per_frame"]
    for way, v in netmap.instructions().items():
        res[f"netmap_{way}"] = v["instructions_per_packet"]
    res.update(tx_cost.callgrind_tx())
    return res


def compare(old, new):
    a = json.load(open(old))["points"]
    b = json.load(open(new))["points"]
    worst = 0.0
    for k in sorted(set(a) & set(b)):
        if not a[k] or not b[k]:
            continue
        d = (b[k] - a[k]) / a[k]
        worst = max(worst, abs(d))
        print(f"{k:20s} {a[k]:9.2f} -> {b[k]:9.2f}  {d * 100:+6.2f}%")
    print(f"largest change: {worst * 100:.2f}%")


def main():
    if "--compare" in sys.argv:
        i = sys.argv.index("--compare")
        compare(sys.argv[i + 1], sys.argv[i + 2])
        return
    pts = measure()
    for k, v in pts.items():
        print(f"{k:20s} {v:9.2f} instructions/packet")
    common.write_result(os.environ.get("RESULT", "cost"),
                {"what": "callgrind instructions per packet"}, pts)


if __name__ == "__main__":
    main()
