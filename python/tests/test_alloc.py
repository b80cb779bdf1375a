# SPDX-License-Identifier: BSD-2-Clause
"""Nothing is allocated per packet on the batch path: the blocks a numpy
consumer of a batch holds (its arrays and what the batch keeps for it;
tracemalloc counts numpy's data too) are as many for 8 packets as for
512. Nor on the per-packet path: a loop over a batch's packets holds
none of them once it has moved on (a memoryview a packet, kept by the
batch until its release, held two blocks a packet)."""
import tracemalloc

import numpy as np

from conftest import frame


def consume(batch, out):
    """The numpy batch consumer of bench/python.sh: count packets, sum
    lengths, histogram of a header byte."""
    lengths = batch.lengths
    heads = batch.headers(16)
    hist = np.bincount(heads[:, 14], minlength=256)
    # kept, so that the count below sees them (it counts live blocks)
    out.append((len(batch), int(lengths.sum()), hist, lengths, heads))


def blocks_for(a, b, n, fn, mine=False):
    a.send([frame(i, 60 + i % 100) for i in range(n)], timeout=10)
    batch = b.recv(timeout=5)
    assert len(batch) == n
    kept = []
    fn(batch, kept)  # warm up (first calls fill caches)
    kept.clear()
    # not tracemalloc's own blocks, nor this file's (ints, tuples: what
    # a consumer keeps, not what pktmap or numpy allocate)
    skip = [tracemalloc.Filter(False, tracemalloc.__file__)]
    if not mine:
        skip.append(tracemalloc.Filter(False, __file__))
    before = tracemalloc.take_snapshot().filter_traces(skip)
    fn(batch, kept)
    after = tracemalloc.take_snapshot().filter_traces(skip)
    batch.release()
    assert b.recv(timeout=0) is None  # the sync that hands the slots back
    return sum(d.count_diff for d in after.compare_to(before, "filename")
               if d.count_diff > 0)


def test_allocations_per_batch_constant(pipe_pair):
    a, b = pipe_pair
    tracemalloc.start()
    try:
        for n in (8, 512, 8):  # numpy's first calls fill caches
            blocks_for(a, b, n, consume)
        # the least of 5 runs: numpy and the interpreter cache things
        # now and then (a block or two), a per-packet cost is 504 more
        small = min(blocks_for(a, b, 8, consume) for _ in range(5))
        large = min(blocks_for(a, b, 512, consume) for _ in range(5))
    finally:
        tracemalloc.stop()
    assert large <= small + 2, (small, large)


def loop(batch, out):
    """The per-packet loop of bench/python_rx.py: a header byte of every
    packet."""
    s = 0
    for v in batch:
        s += v[23]
    out.append(s)


def test_per_packet_loop_holds_nothing_per_packet(pipe_pair):
    a, b = pipe_pair
    tracemalloc.start()
    try:
        for n in (8, 512, 8):
            blocks_for(a, b, n, loop, mine=True)
        # (the packets are made on this file's lines: count them)
        small = min(blocks_for(a, b, 8, loop, mine=True) for _ in range(5))
        large = min(blocks_for(a, b, 512, loop, mine=True) for _ in range(5))
        # a loop that keeps something a packet: the count sees it
        keep_small = blocks_for(a, b, 8, lambda bt, k: k.append(
            [bytes(v) for v in bt]), mine=True)
        keep_large = blocks_for(a, b, 512, lambda bt, k: k.append(
            [bytes(v) for v in bt]), mine=True)
    finally:
        tracemalloc.stop()
    assert large <= small + 2, (small, large)
    assert keep_large >= keep_small + 504, (keep_small, keep_large)


def test_headers_into_reused_array(pipe_pair):
    a, b = pipe_pair
    out = np.empty(64 * 16, dtype=np.uint8)
    a.send([frame(i) for i in range(64)])
    with b.recv(timeout=5) as batch:
        h = batch.headers(16, out=out)
        assert h is out
        assert bytes(out[16 * 3:16 * 4]) == frame(3)[:16]


def test_preallocated_arrays_allocate_nothing_per_batch(pipe_pair):
    """The bench's consumer (bench/python_rx.py numpy): one C call fills
    arrays made once; a batch of 512 holds no more blocks than one of 8."""
    a, b = pipe_pair
    heads = np.empty((1024, 16), dtype=np.uint8)
    lens = np.empty(1024, dtype=np.uint32)
    hist = np.zeros(256, dtype=np.int64)

    def consume(batch, out):
        k = len(batch)
        batch.headers(16, out=heads, lengths=lens)
        hist[:] += np.bincount(heads[:k, 15], minlength=256)
        out.append((k, int(lens[:k].sum())))

    tracemalloc.start()
    try:
        for n in (8, 512, 8):
            blocks_for(a, b, n, consume)
        small = min(blocks_for(a, b, 8, consume) for _ in range(5))
        large = min(blocks_for(a, b, 512, consume) for _ in range(5))
    finally:
        tracemalloc.stop()
    assert large <= small + 2, (small, large)
    # every packet counted once a call (blocks_for() calls twice)
    assert int(hist.sum()) == 2 * (8 + 512 + 8 + 5 * 8 + 5 * 512)
