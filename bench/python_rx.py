#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The receivers bench/python.sh measures, one per run (it prints one JSON
line: packets, seconds, packets per second, CPU ns per packet):

    python_rx.py numpy PORT N [B] the numpy batch consumer: count packets,
                                  sum lengths, histogram of a header byte,
                                  until N packets (timed from the first);
                                  B: at most B packets a batch (0: all)
    python_rx.py loop PORT N      a per-packet Python loop reading one
                                  header field (the IPv4 protocol byte)
    python_rx.py loop-bytes - N   the same loop over a list of 1024 bytes
                                  objects (60-byte UDP/IPv4 frames), N
                                  packets in all: no port, the floor of
                                  the loop in this interpreter
    python_rx.py loop-window PORT SECS WARM IFACE   the same loop over a
                                  window, on PORT (a pkt: port of IFACE)
    python_rx.py pypcap IFACE SECS WARM        pypcap's read loop, same work
    python_rx.py pcapy IFACE SECS WARM         pcapy-ng's read loop, same work
      (each also reports the rate IFACE was offered, from its rx_packets
      counter, what the receiver missed of it, and its own drop count)
    python_rx.py summary OUT N SECS            the JSON lines on stdin into
                                               OUT (python.json in bench/results/)

CPU is this process's (user + system, time.process_time()), over the same
span as the packets.
"""
import json
import sys
import time


def report(kind, n, secs, cpu, extra=None):
    out = {"receiver": kind, "packets": n, "seconds": round(secs, 6),
           "pps": round(n / secs) if secs > 0 else 0,
           "cpu_ns_per_packet": round(cpu * 1e9 / n, 1) if n else None}
    out.update(extra or {})
    print(json.dumps(out))


def numpy_consumer(name, want, most=0):
    import numpy as np
    import pktmap
    hist = np.zeros(256, dtype=np.int64)
    n = total = batches = 0
    with pktmap.open(name, dir="rx") as port:
        # arrays for the largest batch, filled by one C call a batch
        info = port.info()
        cap = info["rx_slots"] * info["rx_rings"]
        lens = np.empty(cap, dtype=np.uint32)
        heads = np.empty((cap, 16), dtype=np.uint8)
        for batch in port.rx(timeout=10, max=most):
            if n == 0:
                t0, c0 = time.perf_counter(), time.process_time()
            k = len(batch)
            batch.headers(16, out=heads, lengths=lens)
            total += int(lens[:k].sum())
            hist += np.bincount(heads[:k, 15], minlength=256)
            n += k
            batches += 1
            if n >= want:
                break
    report("pktmap_numpy", n, time.perf_counter() - t0,
           time.process_time() - c0, {"bytes": total, "batches": batches})


def loop_consumer(name, want):
    import pktmap
    n = s = 0
    with pktmap.open(name, dir="rx") as port:
        for batch in port.rx(timeout=10):
            if n == 0:
                t0, c0 = time.perf_counter(), time.process_time()
            for v in batch:
                s += v[23]
            n += len(batch)
            if n >= want:
                break
    report("pktmap_loop", n, time.perf_counter() - t0,
           time.process_time() - c0)


def loop_bytes(want):
    # what `pktmap gen -l 60` sends: UDP/IPv4 (byte 23, the protocol, 17)
    f = bytearray(60)
    f[12:14], f[14], f[23] = b"\x08\x00", 0x45, 17
    frames = [bytes(f) for _ in range(1024)]
    n = s = 0
    t0, c0 = time.perf_counter(), time.process_time()
    while n < want:
        for v in frames:
            s += v[23]
        n += len(frames)
    report("bytes_loop", n, time.perf_counter() - t0,
           time.process_time() - c0)


def rx_packets(iface):
    """What the interface received (its kernel counter): what was offered
    to the receivers, whatever they took."""
    with open(f"/sys/class/net/{iface}/statistics/rx_packets") as f:
        return int(f.read())


def window(kind, rx, secs, warm, iface):
    """Run the receiver `rx` (its packets(): a generator yielding the
    packets of each step, after the same work on each: one header byte
    read; its drops(): what it says it dropped so far) for warm seconds,
    then count over secs seconds. Beside the captured rate: the rate the
    interface was offered (rx_packets), what the receiver missed of it
    and its own drop counter, over the same window."""
    packets = rx.packets()
    t_end_warm = time.perf_counter() + warm
    for _ in packets:
        if time.perf_counter() >= t_end_warm:
            break
    n = 0
    d0, o0 = rx.drops(), rx_packets(iface)
    t0, c0 = time.perf_counter(), time.process_time()
    t_end = t0 + secs
    for k in packets:
        n += k
        if time.perf_counter() >= t_end:
            break
    t1, c1 = time.perf_counter(), time.process_time()
    offered = rx_packets(iface) - o0
    report(kind, n, t1 - t0, c1 - c0,
           {"offered": offered,
            "offered_pps": round(offered / (t1 - t0)),
            "missed": max(0, offered - n),
            "drops": rx.drops() - d0})


class PktmapRx:
    """pktmap's per-packet loop on a pkt: port (batches of one sync)."""

    def __init__(self, name):
        import pktmap
        self.port = pktmap.open(name, dir="rx")

    def packets(self):
        s = 0
        while True:
            batch = self.port.recv(timeout=0.05)
            if batch is None:
                yield 0
                continue
            for v in batch:
                s += v[23]
            yield len(batch)

    def drops(self):
        return self.port.stats()["drop_backend"]


class PypcapRx:
    """pypcap's read loop: readpkts() hands over what one dispatch read."""

    def __init__(self, iface):
        import pcap
        self.pc = pcap.pcap(name=iface, snaplen=65535, promisc=True,
                            immediate=True, timeout_ms=50)

    def packets(self):
        s = 0
        while True:
            k = 0
            for _ts, pkt in self.pc.readpkts():
                s += pkt[23]
                k += 1
            yield k

    def drops(self):
        return self.pc.stats()[1]


class PcapyRx:
    """pcapy-ng's read loop: next(), one packet a call, up to 1024 a
    step (as many as a pktmap batch holds at most), so that the window's
    clock is read once a step as for the others."""

    def __init__(self, iface):
        import pcapy
        self.pc = pcapy.open_live(iface, 65535, 1, 50)

    def packets(self):
        s = 0
        nxt = self.pc.next
        while True:
            k = 0
            while k < 1024:
                hdr, pkt = nxt()
                if hdr is None or not pkt:
                    break
                s += pkt[23]
                k += 1
            yield k

    def drops(self):
        return self.pc.stats()[1]


def summary(path, n, secs):
    import os
    rows = [json.loads(line) for line in sys.stdin if line.strip()]
    out = {"bench": "python",
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "n": n, "seconds": secs,
           # (python.sh's bench/lib.sh reads it before the first receiver)
           "load_before": float(os.environ.get("LOAD_BEFORE", "nan")),
           "load_after": os.getloadavg()[0],
           "noisy": not float(os.environ.get("LOAD_BEFORE", "nan")) < 0.3,
           "results": rows}
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    for r in rows:
        extra = ""
        if "offered" in r:
            extra = (f", offered {r['offered_pps']:,}/s, missed "
                     f"{r['missed']}, drops {r['drops']}")
        print(f"{r['receiver']:>16}: {r['pps']:>12,} packets/s  "
              f"{r['cpu_ns_per_packet']} ns CPU/packet ({r['packets']} "
              f"packets{extra})")


def main():
    mode = sys.argv[1]
    if mode == "summary":
        summary(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    elif mode == "numpy":
        numpy_consumer(sys.argv[2], int(sys.argv[3]),
                       int(sys.argv[4]) if len(sys.argv) > 4 else 0)
    elif mode == "loop":
        loop_consumer(sys.argv[2], int(sys.argv[3]))
    elif mode == "loop-bytes":
        loop_bytes(int(sys.argv[3]))
    else:
        src, secs, warm = sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
        iface = sys.argv[5] if len(sys.argv) > 5 else src
        rx = {"loop-window": PktmapRx, "pypcap": PypcapRx,
              "pcapy": PcapyRx}[mode](src)
        window({"loop-window": "pktmap_loop_pkt"}.get(mode, mode), rx,
               secs, warm, iface)

if __name__ == "__main__":
    main()
