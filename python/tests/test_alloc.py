# SPDX-License-Identifier: BSD-2-Clause
"""Nothing is allocated per packet on the batch path: the blocks a numpy
consumer allocates per batch (tracemalloc counts numpy's data too) are the
same for 8 packets and for 512."""
import tracemalloc

import numpy as np

from conftest import frame


def consume(batch, out):
    """The numpy batch consumer of bench/python.sh: count packets, sum
    lengths, histogram of a header byte."""
    n = len(batch)
    total = int(batch.lengths.sum())
    hist = np.bincount(batch.headers(16)[:, 14], minlength=256)
    out.append((n, total, hist))


def blocks_for(a, b, n, fn, mine=False):
    a.send([frame(i, 60 + i % 100) for i in range(n)])
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
    return sum(d.count_diff for d in after.compare_to(before, "filename")
               if d.count_diff > 0)


def test_allocations_per_batch_constant(pipe_pair):
    a, b = pipe_pair
    tracemalloc.start()
    try:
        blocks_for(a, b, 8, consume)  # numpy's first calls fill caches
        small = blocks_for(a, b, 8, consume)
        large = blocks_for(a, b, 512, consume)
        # the per-packet path does allocate per packet: the count sees it
        # (the views are made on this file's line: count it)
        perpkt_small = blocks_for(a, b, 8, lambda bt, k: k.append(list(bt)),
                                  mine=True)
        perpkt_large = blocks_for(a, b, 512, lambda bt, k: k.append(list(bt)),
                                  mine=True)
    finally:
        tracemalloc.stop()
    assert small == large, (small, large)
    assert perpkt_large > perpkt_small + 500


def test_headers_into_reused_array(pipe_pair):
    a, b = pipe_pair
    out = np.empty(64 * 16, dtype=np.uint8)
    a.send([frame(i) for i in range(64)])
    with b.recv(timeout=5) as batch:
        h = batch.headers(16, out=out)
        assert h is out
        assert bytes(out[16 * 3:16 * 4]) == frame(3)[:16]
