# SPDX-License-Identifier: BSD-2-Clause
"""Views of a batch die with it: a stale view raises, and a release that
would leave a live view over a reused buffer is refused (BufferError)."""
import gc

import numpy as np
import pytest

import pktmap
from conftest import frame


def one_batch(a, b, n=4):
    a.send([frame(i) for i in range(n)])
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


def test_slice_kept_refuses_release(pipe_pair):
    a, b = pipe_pair
    batch = one_batch(a, b)
    s = batch[2][14:20]  # a slice is a view of its own
    with pytest.raises(BufferError):
        batch.release()
    assert batch.alive and batch.exports == 1
    # the memory was not given back: the slice still reads frame 2
    assert bytes(s) == frame(2)[14:20]
    with pytest.raises(BufferError):
        b.close()
    assert not b.closed
    del s
    batch.release()
    assert batch.exports == 0


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
    for _ in range(6):  # more frames than the ring holds, over 6 batches
        batch = one_batch(a, b, total // 4)
        v = batch[0]
        del batch, v  # a cycle (batch -> views -> batch): gc frees it
        gc.collect()


def test_port_outlives_closing_handle(uniq):
    a = pktmap.open(f"pipe:{uniq}{{0")
    b = pktmap.open(f"pipe:{uniq}}}0")
    batch = one_batch(a, b)
    v = batch[3]
    del b  # the batch still holds the port: nothing is unmapped
    gc.collect()
    assert bytes(v) == frame(3)
    batch.release()
    a.close()
