# SPDX-License-Identifier: BSD-2-Clause
"""Views of a batch die with it: a stale view raises, and a release that
would leave a live view over a reused buffer is refused (BufferError)."""
import gc

import numpy as np
import pytest

import pktmap
from conftest import frame


def one_batch(a, b, n=4):
    a.send([frame(i) for i in range(n)], timeout=5)
    batch = b.recv(timeout=5)
    assert batch is not None and len(batch) == n
    return batch


def test_stale_after_release(pipe_pair):
    a, b = pipe_pair
    batch = one_batch(a, b)
    views = list(batch)
    batch.release()
    assert not batch.alive
    for v in views:
        with pytest.raises(ValueError):
            bytes(v)
        with pytest.raises(ValueError):
            v[0]
    with pytest.raises(ValueError):
        batch[0]
    with pytest.raises(ValueError):
        batch.lengths


def test_stale_after_next_sync_never_reads_new_data(pipe_pair):
    a, b = pipe_pair
    kept = []
    n = 0
    a.send([frame(i) for i in range(8)])
    for batch in b.rx(timeout=5):
        kept += list(batch)
        n += len(batch)
        if n == 8:
            # the buffers are given back here and refilled below
            a.send([frame(100 + i) for i in range(8)])
        if n == 16:
            break
    for v in kept:
        with pytest.raises(ValueError):
            v.tobytes()


def test_stale_after_with_block(pipe_pair):
    a, b = pipe_pair
    with one_batch(a, b) as batch:
        v = batch[1]
        assert bytes(v) == frame(1)
    with pytest.raises(ValueError):
        bytes(v)


def test_stale_after_close(uniq):
    a = pktmap.open(f"pipe:{uniq}{{0")
    b = pktmap.open(f"pipe:{uniq}}}0")
    batch = one_batch(a, b)
    v = batch[0]
    b.close()
    a.close()
    assert not batch.alive
    with pytest.raises(ValueError):
        v[0]


def test_export_kept_refuses_release(pipe_pair):
    a, b = pipe_pair
    batch = one_batch(a, b)
    p = batch[2]
    s = memoryview(p)[14:20]  # a zero-copy slice: an export of the packet
    assert batch.exports == 1
    with pytest.raises(BufferError):
        batch.release()
    assert batch.alive and batch.exports == 1
    # the memory was not given back: the slice still reads frame 2
    assert bytes(s) == frame(2)[14:20]
    with pytest.raises(BufferError):
        b.close()
    assert not b.closed
    with pytest.raises(BufferError):
        p.release()  # nor can the packet go while its export is there
    del s
    assert batch.exports == 0
    batch.release()
    assert not batch.alive


def test_slice_is_a_copy(pipe_pair):
    a, b = pipe_pair
    batch = one_batch(a, b)
    p = batch[2]
    s, t = p[14:20], p[-8::3]
    assert type(s) is bytes and s == frame(2)[14:20]
    assert t == frame(2)[-8::3]
    assert batch.exports == 0  # nothing holds the batch's memory
    batch.release()
    assert s == frame(2)[14:20]  # a copy: valid after the release
    with pytest.raises(ValueError):
        p[14:20]


def released_by(how, a, b, uniq):
    """A packet of frame 1 and the batch it came from, released `how`."""
    if how == "close":
        a = pktmap.open(f"pipe:{uniq}c{{0")
        b = pktmap.open(f"pipe:{uniq}c}}0")
    batch = one_batch(a, b)
    p = batch[1]
    assert p == frame(1) and len(p) == 64
    if how == "with":
        with batch:
            pass
    elif how == "sync":
        assert b.recv(timeout=0) is None
    elif how == "close":
        b.close()
        a.close()
    elif how == "packet":
        with p:  # p.release() at the end: the packet only
            assert p[0] == 2
        assert batch.alive and batch[1] == frame(1)
        batch.release()
    else:
        batch.release()
    assert not batch.alive and p.released
    return p, batch


STALE = {
    "p[0]": lambda p: p[0], "p[-1]": lambda p: p[-1], "len": len,
    "bytes": bytes, "memoryview": memoryview, "tobytes": lambda p: p.tobytes(),
    "slice": lambda p: p[1:3], "numpy": lambda p: np.frombuffer(p, np.uint8),
    "eq": lambda p: p == frame(1), "ne": lambda p: p != b"", "hash": hash,
    "hex": lambda p: p.hex(), "tolist": lambda p: p.tolist(), "iter": list,
    "nbytes": lambda p: p.nbytes, "readonly": lambda p: p.readonly,
    "with": lambda p: p.__enter__(), "bytearray": bytearray,
}


@pytest.mark.parametrize("how", ["release", "with", "sync", "close", "packet"])
def test_stale_packet_raises_everywhere(pipe_pair, uniq, how):
    a, b = pipe_pair
    p, batch = released_by(how, a, b, uniq)
    for name, use in STALE.items():
        with pytest.raises(ValueError, match="released"):
            use(p)
            pytest.fail(name)
    assert batch.exports == 0
    assert repr(p) == "<pktmap.Packet released>"
    p.release()  # again: nothing to do


def test_stale_packet_never_reads_reused_buffer(pipe_pair):
    """The ring reuses the old packet's buffer for a new frame: the new
    packet reads the new frame there, the old one raises."""
    a, b = pipe_pair
    half = b.info()["rx_slots"] // 2

    def addr(p):
        return np.frombuffer(p, dtype=np.uint8).ctypes.data

    batch = one_batch(a, b, half)
    old = batch[0]
    at = addr(old)
    batch.release()
    assert b.recv(timeout=0) is None  # the sync that hands the slots back
    for r in range(1, 20):
        a.send([frame(r, 60 + r)] * half)
        batch = b.recv(timeout=5)
        assert len(batch) == half
        same = [p for p in batch if addr(p) == at]
        if same:
            break
        batch.release()
        assert b.recv(timeout=0) is None
    assert same, "the pipe never reused the buffer"
    assert same[0] == frame(r, 60 + r) != frame(0)
    with pytest.raises(ValueError):
        bytes(old)
    with pytest.raises(ValueError):
        old[0]
    batch.release()


def test_numpy_over_view_refuses_release(pipe_pair):
    a, b = pipe_pair
    batch = one_batch(a, b)
    arr = np.frombuffer(batch[0], dtype=np.uint8)
    with pytest.raises(BufferError):
        b.recv(timeout=0)  # the next sync releases the batch first
    assert batch.alive
    assert bytes(arr) == frame(0)
    del arr
    assert b.recv(timeout=0) is None  # now it can
    assert not batch.alive


def test_dropped_batch_gives_slots_back(pipe_pair):
    a, b = pipe_pair
    total = b.info()["rx_slots"]
    gc.disable()  # a packet and its batch make no cycle: no gc needed
    try:
        for _ in range(6):  # more frames than the ring holds, over 6 batches
            batch = one_batch(a, b, total // 4)
            v = batch[0]
            s = v[:4]
            del batch, v, s  # the last reference: the batch is released
    finally:
        gc.enable()


def test_port_outlives_closing_handle(uniq):
    a = pktmap.open(f"pipe:{uniq}{{0")
    b = pktmap.open(f"pipe:{uniq}}}0")
    batch = one_batch(a, b)
    v = batch[3]
    del b  # the batch still holds the port: nothing is unmapped
    gc.collect()
    assert bytes(v) == frame(3) and v == frame(3)
    batch.release()
    a.close()
