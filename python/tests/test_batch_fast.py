# SPDX-License-Identifier: BSD-2-Clause
"""The batch path of the numpy consumer: one C call fills preallocated
arrays (headers and lengths, batch.headers(n, out=, lengths=)) walking
the slots in batch order, across a ring's wrap and over several rings;
RX batches of at most `max` packets; a released batch fills nothing."""
import numpy as np
import pytest

import pktmap
from conftest import frame, packet_bytes


def check_rows(batch, heads, lens, n):
    """Rows and lengths against the packets' own views (batch[i])."""
    views = [bytes(v) for v in batch]
    assert list(lens[:len(views)]) == [len(v) for v in views]
    for i, v in enumerate(views):
        row = v[:n] + bytes(max(0, n - len(v)))
        assert bytes(heads[i]) == row, i
    return views


# the sizes gathered by inlined code (14, 16, 34, 54, 64) and others
@pytest.mark.parametrize("n", [14, 16, 34, 54, 64, 80, 7])
def test_headers_and_lengths_one_call(pipe_pair, n):
    a, b = pipe_pair
    # 14 bytes (shorter than the rows) to 210, around every row size
    frames = [frame(i, 14 + 7 * i) for i in range(29)]
    a.send(frames, timeout=5)
    heads = np.full((64, n), 0xAB, dtype=np.uint8)
    lens = np.full(64, 0xDEAD, dtype=np.uint32)
    with b.recv(timeout=5) as batch:
        assert len(batch) == 29
        assert batch.headers(n, out=heads, lengths=lens) is heads
        assert check_rows(batch, heads, lens, n) == frames
    # exact: rows and lengths past the batch are not touched
    assert (heads[29:] == 0xAB).all() and (lens[29:] == 0xDEAD).all()
    assert int(lens[:29].sum()) == sum(map(len, frames))
    # and the arrays are copies: still right after the release
    assert bytes(heads[3][:len(frames[3])]) == frames[3][:n]


def test_headers_across_the_ring_wrap(pipe_pair):
    a, b = pipe_pair
    slots = b.info()["rx_slots"]
    first = [frame(i) for i in range(slots - 24)]
    a.send(first, timeout=5)
    got = 0
    for batch in b.rx(timeout=5):
        got += len(batch)
        if got == len(first):
            break
    assert b.recv(timeout=0) is None  # the sync that hands the slots back
    # the next batch starts 24 slots before the ring's end and wraps
    frames = [frame(i, 60 + i) for i in range(100)]
    a.send(frames, timeout=5)
    heads = np.empty((slots, 80), dtype=np.uint8)
    lens = np.empty(slots, dtype=np.uint32)
    with b.recv(timeout=5) as batch:
        assert len(batch) == 100
        batch.headers(80, out=heads, lengths=lens)
        assert check_rows(batch, heads, lens, 80) == frames


def test_headers_over_two_rings(uniq):
    with pktmap.open(f"pipe:{uniq}{{0", rings=2) as a, \
            pktmap.open(f"pipe:{uniq}}}0", rings=2) as b:
        assert b.info()["rx_rings"] == 2
        frames = [frame(i, 60 + i) for i in range(40)]
        with a.tx(timeout=5) as t:
            for f in frames:
                t.append(f)
        heads = np.empty((4096, 32), dtype=np.uint8)
        lens = np.empty(4096, dtype=np.uint32)
        got = []
        for batch in b.rx(timeout=5):
            batch.headers(32, out=heads, lengths=lens)
            got += check_rows(batch, heads, lens, 32)
            assert list(lens[:len(batch)]) == list(batch.lengths)
            if len(got) == 40:
                break
        assert sorted(got) == sorted(frames)


def test_rx_batches_of_at_most_max(pipe_pair):
    a, b = pipe_pair
    frames = [frame(i, 60 + i) for i in range(10)]
    a.send(frames, timeout=5)
    sizes, got = [], []
    for batch in b.rx(timeout=5, max=4):
        sizes.append(len(batch))
        got += [packet_bytes(v) for v in batch]
        if len(got) == 10:
            break
    assert sizes == [4, 4, 2] and got == frames
    a.send(frames[:3])
    batch = b.recv(timeout=5, max=2)
    assert [bytes(v) for v in batch] == frames[:2]
    batch = b.recv(timeout=5, max=2)
    assert [bytes(v) for v in batch] == frames[2:3]
    assert b.recv(timeout=0) is None
    assert b.stats()["rx_packets"] == 13


def test_released_batch_fills_nothing(pipe_pair):
    a, b = pipe_pair
    a.send([frame(i) for i in range(4)])
    batch = b.recv(timeout=5)
    views = list(batch)
    batch.release()
    heads = np.full((8, 16), 7, dtype=np.uint8)
    lens = np.full(8, 9, dtype=np.uint32)
    with pytest.raises(ValueError):
        batch.headers(16, out=heads, lengths=lens)
    assert (heads == 7).all() and (lens == 9).all()
    for v in views:  # the views it handed out are stale
        with pytest.raises(ValueError):
            bytes(v)


def test_bad_lengths_buffer_fills_nothing(pipe_pair):
    a, b = pipe_pair
    a.send([frame(i) for i in range(4)])
    heads = np.full((4, 16), 7, dtype=np.uint8)
    with b.recv(timeout=5) as batch:
        with pytest.raises(ValueError):  # 4 uint32 need 16 bytes
            batch.headers(16, out=heads, lengths=bytearray(15))
        with pytest.raises((TypeError, BufferError)):  # not writable
            batch.headers(16, out=heads, lengths=bytes(16))
        assert (heads == 7).all()
