# SPDX-License-Identifier: BSD-2-Clause
"""Fixtures of the pktmap Python tests (python/tests/): unique names per
process, so that two copies of the suite can run at once."""
import itertools
import os

import pytest

_seq = itertools.count()


@pytest.fixture
def uniq():
    """A name no other test, and no other copy of the suite, uses."""
    return f"py{os.getpid()}x{next(_seq)}"


@pytest.fixture
def pipe_pair(uniq):
    """The two ends of a fresh pipe: (writer {0, reader }0)."""
    import pktmap
    a = pktmap.open(f"pipe:{uniq}{{0")
    b = pktmap.open(f"pipe:{uniq}}}0")
    yield a, b
    b.close()
    a.close()


def frame(i, n=64):
    """A recognisable Ethernet frame of n bytes: byte 14 and on carry i."""
    head = bytes.fromhex("020000000002" "020000000001" "88b5")
    body = bytes(((i + k) & 0xFF) for k in range(n - len(head)))
    return head + body


def packet_bytes(v):
    """The bytes of v, a pktmap.Packet of a live batch, after checking
    that it reads as a read-only memoryview of them would: len, indices
    (negative too) and their bounds, slices (bytes), ==, !=, hash, the
    buffer protocol (counted as an export of the batch, given back)."""
    import pktmap
    b = v.tobytes()
    n = len(b)
    assert type(v) is pktmap.Packet and v.readonly and not v.released
    assert len(v) == n == v.nbytes and bytes(v) == b
    assert v == b and v == bytearray(b) and not v != b and v != b + b"x"
    assert hash(v) == hash(b) and v.tolist() == list(b)
    if n:
        assert (v[0], v[-1], v[-n], v[n - 1]) == (b[0], b[-1], b[0], b[-1])
    for bad in (n, -n - 1):
        with pytest.raises(IndexError):
            v[bad]
    assert v[14:20] == b[14:20] and v[-4:] == b[-4:] and v[::3] == b[::3]
    assert list(v) == list(b) and v.hex() == b.hex()
    exports = v.batch.exports
    m = memoryview(v)
    assert m.readonly and m.obj is v and m.tobytes() == b
    assert v.batch.exports == exports + 1
    m.release()
    assert v.batch.exports == exports
    return b
