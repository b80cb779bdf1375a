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
