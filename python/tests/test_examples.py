# SPDX-License-Identifier: BSD-2-Clause
"""python/examples/: the pandas/numpy flow summary and the forwarding
filter, run as a user runs them, on traffic whose answer is known."""
import json
import os
import subprocess
import sys

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether

import pktmap
from test_ports import write_pcap

EX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")


def traffic():
    """10.0.0.1 sends 30 UDP/53 frames of 100 bytes to 10.0.0.9, and
    10.0.0.2 sends 6 TCP/80 frames of 600 bytes; 3 ARP-type frames."""
    e = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    udp = [bytes(e / IP(src="10.0.0.1", dst="10.0.0.9") /
                 UDP(sport=4000, dport=53) / (b"q" * 58)) for _ in range(30)]
    tcp = [bytes(e / IP(src="10.0.0.2", dst="10.0.0.9") /
                 TCP(sport=5000, dport=80) / (b"w" * 546)) for _ in range(6)]
    arp = [bytes(Ether(dst="ff:ff:ff:ff:ff:ff", type=0x0806) / (b"\0" * 46))] * 3
    assert len(udp[0]) == 100 and len(tcp[0]) == 600
    return udp[:15] + arp + tcp + udp[15:]


def run(*args):
    out = subprocess.run([sys.executable, *args], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_flows(tmp_path):
    path = tmp_path / "t.pcap"
    write_pcap(path, traffic())
    r = run(os.path.join(EX, "flows.py"), f"pcap:{path}/R", "--json")
    assert r["packets"] == 36 and r["bytes"] == 30 * 100 + 6 * 600
    assert r["flow_count"] == 2
    assert r["flows"][0] == {"src": "10.0.0.2", "dst": "10.0.0.9", "proto": 6,
                             "sport": 5000, "dport": 80, "packets": 6,
                             "bytes": 3600}
    assert r["flows"][1]["packets"] == 30 and r["flows"][1]["dport"] == 53
    assert r["sizes"]["[64, 128)"] == 30 and r["sizes"]["[512, 1024)"] == 6
    assert [t["src"] for t in r["top_talkers"]] == ["10.0.0.2", "10.0.0.1"]


def test_filter_copy_and_zero_copy(tmp_path, uniq):
    path = tmp_path / "t.pcap"
    frames = traffic()
    write_pcap(path, frames)
    dns = [f for f in frames if len(f) == 100]
    # pcap -> pipe: copied
    with pktmap.open(f"pipe:{uniq}o}}0") as sink:
        r = run(os.path.join(EX, "filter.py"), f"pcap:{path}/R",
                f"pipe:{uniq}o{{0", "--dport", "53", "--json")
        assert r == {"seen": 39, "kept": 30, "forwarded": 30, "dropped": 9,
                     "zerocopy": False}
        got = [bytes(v) for v in sink.recv(timeout=10)]
    assert got == dns
    # pipe -> pipe in one memory: swapped, and the same bytes arrive
    conf = f"@mem:{uniq}@conf:bufs=9000"
    with pktmap.open(f"pipe:{uniq}a{{0{conf}") as feed, \
            pktmap.open(f"pipe:{uniq}b}}0{conf}") as sink:
        feed.send(frames)
        r = run(os.path.join(EX, "filter.py"), f"pipe:{uniq}a}}0{conf}",
                f"pipe:{uniq}b{{0{conf}", "--proto", "6", "--idle", "0.5",
                "--json")
        assert r["zerocopy"] and r["forwarded"] == 6 and r["seen"] == 39
        got = [bytes(v) for v in sink.recv(timeout=10)]
    assert got == [f for f in frames if len(f) == 600]
