# SPDX-License-Identifier: BSD-2-Clause
"""pipe: ports from Python: frames cross intact, batches carry their
lengths and flags, TX batches fill and send, options reach the open."""
import array
import ctypes
import selectors

import numpy as np
import pytest

import pktmap
from conftest import frame, packet_bytes


def drain(port, want):
    """Every frame up to `want`, as bytes copies, batch by batch."""
    got = []
    for batch in port.rx(timeout=5):
        got += [packet_bytes(v) for v in batch]
        if len(got) >= want:
            break
    return got


def test_roundtrip_exact(pipe_pair):
    a, b = pipe_pair
    frames = [frame(i, 60 + i) for i in range(300)]
    assert a.send(frames) == 300
    assert drain(b, 300) == frames
    st = b.stats()
    assert st["rx_packets"] == 300
    assert st["rx_bytes"] == sum(map(len, frames))


def test_batch_arrays(pipe_pair):
    a, b = pipe_pair
    frames = [frame(i, 60 + 3 * i) for i in range(20)]
    a.send(frames)
    batch = b.recv(timeout=5)
    assert len(batch) == 20
    assert batch.lengths.dtype == np.uint32
    assert list(batch.lengths) == [len(f) for f in frames]
    # a pipe swaps buffers: NS_BUF_CHANGED, nothing else
    assert set(batch.flags & ~pktmap.NS_BUF_CHANGED) == {0}
    h = batch.headers(16)
    assert h.shape == (20, 16) and h.dtype == np.uint8
    assert all(bytes(h[i]) == frames[i][:16] for i in range(20))
    # past a frame's end the row is zeros
    h2 = batch.headers(100)
    assert bytes(h2[0]) == frames[0] + bytes(40)
    # arrays are copies: still right after the batch is gone
    batch.release()
    assert bytes(h[5]) == frames[5][:16]


def test_packets_are_readonly_zero_copy_views(pipe_pair):
    a, b = pipe_pair
    frames = [frame(i, 60 + i) for i in range(3)]
    a.send(frames)
    with b.recv(timeout=5) as batch:
        v = batch[0]
        assert isinstance(v, pktmap.Packet) and v.readonly
        assert v.batch is batch and not isinstance(v, memoryview)
        with pytest.raises(TypeError):
            v[0] = 1
        with pytest.raises(TypeError):
            memoryview(v)[0] = 1  # its exports are read-only too
        with pytest.raises(ValueError):
            np.frombuffer(v, dtype=np.uint8).setflags(write=True)
        with pytest.raises(IndexError):
            batch[3]
        with pytest.raises(TypeError):
            v["x"]
        # the sequence protocol's item (C code's PySequence_GetItem()):
        # a negative index counted from the end once, not twice
        get = ctypes.pythonapi.PySequence_GetItem
        get.restype, get.argtypes = ctypes.py_object, [ctypes.py_object,
                                                       ctypes.c_ssize_t]
        assert (get(v, -1), get(v, 3)) == (frames[0][-1], frames[0][3])
        with pytest.raises(IndexError):
            get(v, -len(v) - 5)
        # zero-copy: each packet's buffer is its slot's in the pool
        # (two views of one packet, one address; packets apart by their
        # buffer indices times the buffer size)
        def addr(p):
            return np.frombuffer(p, dtype=np.uint8).ctypes.data
        assert addr(batch[0]) == addr(v)
        idx, size = batch.buffer_indices, b.info()["buf_size"]
        for i, p in enumerate(batch):
            assert addr(p) - addr(v) == (int(idx[i]) - int(idx[0])) * size
            assert p == frames[i]
        assert batch.exports == 0
        assert repr(v).startswith("<pktmap.Packet of 60 bytes")
        # nobody but the batch's packets exports from it
        with pytest.raises(BufferError):
            memoryview(batch)
    assert repr(v) == "<pktmap.Packet released>" and v.released
    with pytest.raises(ValueError):
        addr(v)


def test_tx_batch_next_and_append(pipe_pair):
    a, b = pipe_pair
    with a.tx(max=4) as t:
        assert t.capacity == 4
        w = t.next(70)
        assert not w.readonly and len(w) == 70
        w[:] = frame(7, 70)
        assert t.append(frame(8)) == 1
        assert len(t) == 2
        with pytest.raises(ValueError):
            t.next(100000)
    with pytest.raises(ValueError):
        w[0]  # sent: the view is gone
    assert drain(b, 2) == [frame(7, 70), frame(8)]


def test_tx_batch_full(pipe_pair):
    a, _ = pipe_pair
    with a.tx(max=1) as t:
        t.append(frame(1))
        with pytest.raises(BufferError):
            t.append(frame(2))


def test_no_numpy_arrays(pipe_pair, monkeypatch):
    a, b = pipe_pair
    monkeypatch.setattr(pktmap, "_np", None)
    a.send([frame(1, 61), frame(2, 62)])
    with b.recv(timeout=5) as batch:
        assert isinstance(batch.lengths, array.array)
        assert list(batch.lengths) == [61, 62]
        with pytest.raises(RuntimeError):
            batch.headers(4)


def test_fileno_selectors(pipe_pair):
    a, b = pipe_pair
    sel = selectors.DefaultSelector()
    sel.register(b.fileno(), selectors.EVENT_READ)
    assert b.recv(timeout=0) is None  # the empty sync that arms the fd
    a.send([frame(3)])
    assert sel.select(timeout=10)
    with b.recv(timeout=0) as batch:
        assert bytes(batch[0]) == frame(3)
    sel.close()


def test_poll(pipe_pair):
    a, b = pipe_pair
    assert b.poll(pktmap.POLLIN, 0) == 0
    a.send([frame(4)])
    assert b.poll(pktmap.POLLIN, 10000) & pktmap.POLLIN


def test_open_options_and_errors(uniq):
    with pktmap.open(f"pipe:{uniq}{{0", slots=64, dir="tx") as p:
        i = p.info()
        assert i["tx_slots"] == 64 and i["backend"] == "pipe"
        with pytest.raises(ValueError):
            p.recv(timeout=0)  # not open for RX
    with pytest.raises(TypeError):
        pktmap.open(f"pipe:{uniq}{{0", no_such_option=1)
    with pytest.raises(ValueError):
        pktmap.open(f"pipe:{uniq}{{0", dir="sideways")
    with pytest.raises(OSError) as e:
        pktmap.open("nosuchbackend:x")
    assert "nosuchbackend" in str(e.value)


def test_closed_port(uniq):
    p = pktmap.open(f"pipe:{uniq}{{0")
    p.close()
    p.close()  # twice is fine
    assert p.closed
    for call in (p.fileno, p.stats, p.info, lambda: p.recv(0)):
        with pytest.raises(ValueError):
            call()


def test_bad_arguments(pipe_pair, uniq):
    a, b = pipe_pair
    a.send([frame(1), frame(2)])
    batch = b.recv(timeout=5)
    with pytest.raises(ValueError):
        batch.lengths_into(bytearray(7))  # 2 uint32 need 8 bytes
    with pytest.raises(ValueError):
        batch.headers_into(bytearray(15), 8)
    with pytest.raises(ValueError):
        batch.headers_into(bytearray(100), -1)
    with pytest.raises(BufferError):
        batch.lengths_into(b"12345678")  # not writable
    with pktmap.open(f"pipe:{uniq}c{{0") as c, pktmap.open(f"pipe:{uniq}c}}0"):
        with pytest.raises(ValueError):
            c.forward(batch, b"\x01")  # a mask of 1 for 2 packets
        with pytest.raises(TypeError):
            c.forward(batch, 7)
        assert batch.alive  # refused before anything moved
    with pytest.raises(ValueError):
        pktmap.open(f"pipe:{uniq}d{{0", slots=1 << 40)
    with pytest.raises(OverflowError):
        pktmap.open(f"pipe:{uniq}d{{0", slots=-1)


def test_more_bad_arguments(pipe_pair, uniq):
    a, b = pipe_pair
    a.send([frame(1), frame(2), frame(3)])
    batch = b.recv(timeout=5)
    with pytest.raises(ValueError):
        batch.headers_into(bytearray(16), 1 << 62)  # n * len overflows
    # an unaligned out buffer is fine
    buf = bytearray(13)
    assert batch.lengths_into(memoryview(buf)[1:]) == 3
    assert bytes(buf[1:5]) == (64).to_bytes(4, "little")
    with pktmap.open(f"pipe:{uniq}c{{0") as c, \
            pktmap.open(f"pipe:{uniq}c}}0") as d:
        with pytest.raises(ValueError):
            c.forward(batch, [True, False])  # bools: one per packet
        assert c.forward(batch, [False, True, True]) == 2
        got = [bytes(v) for v in d.recv(timeout=5)]
    assert got == [frame(2), frame(3)]


def test_fileno_asyncio(pipe_pair):
    import asyncio
    a, b = pipe_pair

    async def main():
        loop = asyncio.get_running_loop()
        got, done = [], loop.create_future()

        def readable():
            while (batch := b.recv(timeout=0)) is not None:
                got.extend(packet_bytes(v) for v in batch)
            if len(got) >= 50 and not done.done():
                done.set_result(None)
        assert b.recv(timeout=0) is None  # arms the descriptor
        loop.add_reader(b.fileno(), readable)
        a.send([frame(i) for i in range(50)])
        await asyncio.wait_for(done, 60)
        loop.remove_reader(b.fileno())
        return got
    assert asyncio.run(main()) == [frame(i) for i in range(50)]
