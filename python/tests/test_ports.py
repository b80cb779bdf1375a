# SPDX-License-Identifier: BSD-2-Clause
"""pcap: read and write (dpkt and scapy on the frames), null:, and
forwarding between ports: zero-copy in one memory, copied across."""
import dpkt
import numpy as np
import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

import pktmap
from conftest import frame, packet_bytes

T0 = 1_700_000_000_123_456_789  # ns


def write_pcap(path, frames):
    with pktmap.open(f"pcap:{path}/T") as w:
        with w.tx() as t:
            for i, f in enumerate(frames):
                t.append(f, timestamp=T0 + i * 1000)
        assert w.stats()["tx_packets"] == len(frames)


def test_pcap_write_read(tmp_path):
    path = tmp_path / "x.pcap"
    frames = [frame(i, 60 + i) for i in range(50)]
    write_pcap(path, frames)
    got, ts = [], []
    with pktmap.open(f"pcap:{path}/R") as r:
        assert r.info()["linktype"] == 1
        for batch in r.rx():  # ends at the end of the file
            got += [packet_bytes(v) for v in batch]
            ts += list(batch.timestamps)
    assert got == frames
    assert ts == [T0 + i * 1000 for i in range(50)]
    # dpkt reads what the port wrote (ns stamps by default)
    with open(path, "rb") as f:
        rd = dpkt.pcap.Reader(f)
        assert [bytes(b) for _, b in rd] == frames


def test_pcap_scapy_dpkt_parse(tmp_path):
    path = tmp_path / "u.pcap"
    pkts = [Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") /
            IP(src="10.0.0.1", dst=f"10.0.1.{i}") / UDP(sport=1000 + i, dport=53) /
            (b"x" * i) for i in range(10)]
    write_pcap(path, [bytes(p) for p in pkts])
    with pktmap.open(f"pcap:{path}/R") as r:
        batch = r.recv(timeout=5)
        assert len(batch) == 10
        for i, v in enumerate(batch):
            e = Ether(bytes(v))
            assert e[IP].dst == f"10.0.1.{i}" and e[UDP].sport == 1000 + i
            d = dpkt.ethernet.Ethernet(bytes(v))
            assert d.data.data.dport == 53
        # the 2-D header view: byte 33 is the last of the IPv4 destination
        assert list(batch.headers(34)[:, 33]) == list(range(10))


def test_pcap_refuses_both_directions(tmp_path):
    with pytest.raises(OSError):
        pktmap.open(f"pcap:{tmp_path}/y.pcap")


def test_null():
    with pktmap.open("null:") as n:
        assert n.send([frame(i) for i in range(100)]) == 100
        assert n.stats()["tx_packets"] == 100
        assert n.recv(timeout=0) is None


def forward_all(src, dst, n):
    moved = 0
    while moved < n:
        batch = src.recv(timeout=5)
        assert batch is not None
        moved += dst.forward(batch)
    return moved


def test_forward_zero_copy(uniq):
    conf = f"@mem:{uniq}@conf:bufs=9000"
    s = pktmap.open(f"pipe:{uniq}a{{0{conf}")
    a = pktmap.open(f"pipe:{uniq}a}}0{conf}")
    b = pktmap.open(f"pipe:{uniq}b{{0{conf}")
    r = pktmap.open(f"pipe:{uniq}b}}0{conf}")
    assert a.shares_memory(b)
    frames = [frame(i, 60 + i) for i in range(200)]
    s.send(frames)
    sent_idx, moved = [], 0
    while moved < 200:
        batch = a.recv(timeout=5)
        sent_idx += list(batch.buffer_indices)
        moved += b.forward(batch)
    got, got_idx = [], []
    for batch in r.rx(timeout=5):
        got += [packet_bytes(v) for v in batch]
        got_idx += list(batch.buffer_indices)
        if len(got) == 200:
            break
    assert got == frames
    # the same buffers arrived: swapped through, never copied
    assert got_idx == sent_idx
    for p in (r, b, a, s):
        p.close()


def test_forward_copy_with_mask(tmp_path, pipe_pair):
    w, r = pipe_pair
    path = tmp_path / "f.pcap"
    frames = [frame(i, 60 + i) for i in range(40)]
    write_pcap(path, frames)
    kept = []
    with pktmap.open(f"pcap:{path}/R") as src:
        assert not src.shares_memory(w)
        for batch in src.rx():
            keep = np.arange(len(batch)) % 2 == 0  # every other frame
            kept += [bytes(batch[i]) for i in range(len(batch)) if keep[i]]
            w.forward(batch, keep)
    got = []
    for batch in r.rx(timeout=5):
        got += [packet_bytes(v) for v in batch]
        if len(got) == len(kept):
            break
    assert got == kept == frames[::2]


def test_forward_revokes_views(pipe_pair, uniq):
    a, b = pipe_pair
    with pktmap.open(f"pipe:{uniq}c{{0") as c, pktmap.open(f"pipe:{uniq}c}}0"):
        a.send([frame(1)])
        batch = b.recv(timeout=5)
        v = batch[0]
        assert c.forward(batch, [0]) == 1
        assert not batch.alive
        with pytest.raises(ValueError):
            bytes(v)
        a.send([frame(2), frame(3)])
        batch = b.recv(timeout=5)
        with pytest.raises(IndexError):
            c.forward(batch, [1, 5])  # refused whole: frame 3 not sent
        assert batch.alive and batch[1] == frame(3)
        assert c.stats()["tx_packets"] == 1


def test_forward_reads_keep_before_anything_moves(pipe_pair, uniq):
    """keep's items run Python code (__index__, __bool__): forward()
    reads them all before a buffer changes hands, so the code sees the
    batch whole, and an export it makes refuses the forward with nothing
    moved; a keep list changed meanwhile does not change what is read."""
    a, b = pipe_pair
    with pktmap.open(f"pipe:{uniq}c{{0") as c, \
            pktmap.open(f"pipe:{uniq}c}}0") as d:
        a.send([frame(0), frame(1), frame(2)])
        batch = b.recv(timeout=5)
        p, kept = batch[0], []

        class Export:
            def __index__(self):
                assert p == frame(0)  # nothing has moved yet
                kept.append(memoryview(p))
                return 1

        with pytest.raises(BufferError):
            c.forward(batch, [0, Export()])
        assert batch.alive and batch.exports == 1
        assert d.recv(timeout=0) is None  # nothing was sent
        assert c.stats()["tx_packets"] == 0
        kept.clear()

        keep = [True, None, True]

        class Shrink:
            def __bool__(self):
                keep.clear()  # the list forward() was given
                return True

        keep[1] = Shrink()
        assert c.forward(batch, keep) == 3
        assert not batch.alive and batch.exports == 0
        got = [packet_bytes(v) for v in d.recv(timeout=5)]
        assert got == [frame(0), frame(1), frame(2)]
        assert d.recv(timeout=0) is None
        assert c.stats()["tx_packets"] == 3
