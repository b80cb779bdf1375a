# SPDX-License-Identifier: BSD-2-Clause
"""pktmap for Python: netmap-style packet rings, handed over as zero-copy batches.

    import pktmap
    with pktmap.open("pcap:in.pcap") as port:
        for batch in port.rx():
            for pkt in batch:          # a Packet: a view of the shared buffer
                ...
            batch.lengths              # numpy arrays (copies of the slots)
            batch.headers(34)          # first 34 bytes of every packet, 2-D

A batch is the packets of one sync. Its packets (``pktmap.Packet``,
read-only views: ``len(pkt)``, ``pkt[i]``, ``pkt[a:b]`` (bytes), the
buffer protocol) are valid until the batch is released: at the end of
its ``with`` block, at the next ``rx()`` step, or when the port closes.
A packet touched after that raises ValueError; a release while a buffer
is still exported from one (``memoryview(pkt)`` kept, a numpy array over
a packet) raises BufferError and keeps the slots, so no packet ever
reads a buffer the ring has reused. docs/python.md has the rest.
"""
from __future__ import annotations

import array as _array
from typing import Any, Iterator, Optional, Sequence, Union

from . import _pktmap
from ._pktmap import (DIR_BOTH, DIR_RX, DIR_TX, NS_BUF_CHANGED, NS_FORWARD,
                      NS_MOREFRAG, NS_REPORT, POLLERR, POLLHUP, POLLIN,
                      POLLOUT, Packet, lib_version)

try:
    import numpy as _np
except ImportError:  # numpy is optional: arrays become array.array
    _np = None

__version__ = _pktmap.VERSION
__all__ = ["open", "Port", "Batch", "Packet", "lib_version", "POLLIN", "POLLOUT",
           "POLLHUP", "POLLERR", "DIR_RX", "DIR_TX", "DIR_BOTH",
           "NS_BUF_CHANGED", "NS_REPORT", "NS_FORWARD", "NS_MOREFRAG"]


def _array_of(code: str, dtype: str, n: int) -> Any:
    if _np is not None:
        return _np.empty(n, dtype=dtype)
    return _array.array(code, bytes(_array.array(code).itemsize * n))


class Batch(_pktmap.Batch):
    """The packets of one sync (``Port.rx()``) or the free slots of one
    (``Port.tx()``).

    ``len(batch)``, ``batch[i]`` and iteration give the packets, nothing
    copied: for RX as ``Packet`` objects (read-only views of the shared
    buffers, valid until the batch is released), for TX as writable
    memoryviews of the slots filled.
    The arrays below are copies of the slots' fields, made with one
    allocation each whatever the batch's size (numpy arrays when numpy is
    installed, else ``array.array``).
    """

    __slots__ = ()

    @property
    def lengths(self) -> Any:
        """The packets' lengths (uint32)."""
        out = _array_of("I", "uint32", len(self))
        self.lengths_into(out)
        return out

    @property
    def timestamps(self) -> Any:
        """The receive time stamps in ns since the epoch (uint64), where
        the port stamps them (pkt:, tap:, pcap:), else what the sender
        left in the slot (0 for pktmap's own senders)."""
        out = _array_of("Q", "uint64", len(self))
        self.timestamps_into(out)
        return out

    @property
    def flags(self) -> Any:
        """The slots' flags (uint16, NS_*)."""
        out = _array_of("H", "uint16", len(self))
        self.flags_into(out)
        return out

    @property
    def buffer_indices(self) -> Any:
        """The slots' buffer indices in the port's pool (uint32): the
        same index on two ports of one memory is the same buffer."""
        out = _array_of("I", "uint32", len(self))
        self.buffer_indices_into(out)
        return out

    def headers(self, n: int, out: Any = None, lengths: Any = None) -> Any:
        """The first ``n`` bytes of every packet as a 2-D uint8 array of
        ``len(batch)`` rows, zero-padded past a packet's end.

        One copy (a gather in C) into one array, never a view of the
        shared buffers, so the array stays valid after the batch is
        released. Pass ``out`` (a C-contiguous array of at least
        ``len(batch) * n`` bytes) to reuse one array across batches;
        it is returned as it is (its first ``len(batch)`` rows filled).
        With ``lengths`` (a writable array of at least ``len(batch)``
        uint32), the packets' lengths are written there in the same
        pass over the slots: one C call fills both preallocated arrays.
        """
        if out is None:
            if _np is None:
                raise RuntimeError("pktmap: Batch.headers() needs numpy")
            out = _np.empty((len(self), n), dtype=_np.uint8)
        self.headers_into(out, n, lengths)
        return out


_pktmap._set_batch_class(Batch)


def _ms(timeout: Optional[float]) -> int:
    if timeout is None:
        return -1
    if timeout < 0:
        raise ValueError("pktmap: timeout must be >= 0 or None")
    return int(timeout * 1000)


class Port(_pktmap.Port):
    """An open pktmap port. Use ``pktmap.open()`` to make one.

    A context manager: leaving the ``with`` block closes the port.
    ``fileno()`` is its event descriptor, for ``selectors`` and asyncio's
    ``loop.add_reader()``.
    """

    __slots__ = ()

    def __enter__(self) -> "Port":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        if self.closed:
            return "<pktmap.Port closed>"
        i = self.info()
        return f"<pktmap.Port {i['name']!r} {i['backend']} {i['mode']}>"

    def recv(self, timeout: Optional[float] = None,
             max: int = 0) -> Optional[Batch]:
        """Release the previous RX batch, sync, and return the next one
        (at most ``max`` packets, 0: all the rings hold): waits up to
        ``timeout`` seconds (None: until packets come) and returns None
        on timeout or when the source has ended (the end of a pcap:
        file)."""
        return self._batch(False, _ms(timeout), max)

    def rx(self, timeout: Optional[float] = None,
           max: int = 0) -> Iterator[Batch]:
        """Yield a Batch per sync (at most ``max`` packets each, 0: all
        the rings hold), each released when the next is asked for (or
        the loop ends). Stops at the end of the source, or after
        ``timeout`` seconds without packets (None: waits forever)."""
        ms = _ms(timeout)
        while True:
            b = self._batch(False, ms, max)
            if b is None:
                return
            with b:
                yield b

    def tx(self, timeout: Optional[float] = None, max: int = 0) -> Batch:
        """The free TX slots (at most ``max``, 0: all) as a Batch to fill
        with ``append(data)`` or ``next(length)``: what it holds is sent
        when it is released (``with port.tx() as b: ...``). Waits up to
        ``timeout`` seconds for room (None: forever); TimeoutError if
        there is none."""
        b = self._batch(True, _ms(timeout), max)
        if b is None:
            raise TimeoutError("pktmap: no TX room")
        return b

    def send(self, frames: Sequence[Union[bytes, bytearray, memoryview]],
             timeout: Optional[float] = None) -> int:
        """Copy ``frames`` into TX slots and send them, waiting for room
        as needed. Returns the number sent."""
        i = 0
        while i < len(frames):
            with self.tx(timeout) as b:
                while i < len(frames) and len(b) < b.capacity:
                    b.append(frames[i])
                    i += 1
        return i

    def forward(self, batch: Batch, keep: Any = None) -> int:
        """Move the packets of an RX batch (all, or those ``keep`` selects:
        a mask of one byte per packet, e.g. a numpy bool array, or a
        sequence of indices) to this port's TX rings and send them. When
        both ports share one memory (two ends of a pipe, ports with one
        ``@mem:``) the slots swap buffer indices, as ``pktmap bridge``
        does, and no byte is copied; otherwise each frame is copied.
        The batch is released (what did not fit is dropped). Returns the
        number forwarded."""
        return self._forward(batch, keep)

    def shares_memory(self, other: "Port") -> bool:
        """True when this port's buffers and ``other``'s are one pool
        (forward() then swaps buffer indices instead of copying)."""
        a, b = self.info(), other.info()
        return bool(a["region_dev"] and a["region_ino"]) and \
            (a["region_dev"], a["region_ino"]) == \
            (b["region_dev"], b["region_ino"])

    @property
    def mode(self) -> str:
        """"zerocopy", "copy", "emulated" or "live" (docs/design.md)."""
        return str(self.info()["mode"])


_DIRS = {"rx": DIR_RX, "tx": DIR_TX, "both": DIR_BOTH}


def open(name: str, **options: Any) -> Port:
    """Open a port by name: any name ``pktmap_open()`` takes ("pipe:a{0",
    "pcap:in.pcap", "null:", "pkt:eth0", "xdp:eth0-2", "vale0:p", with
    ``@conf:``/``@mem:`` suffixes).

    Options (all optional, as struct pktmap_open_opts): ``dir`` ("rx",
    "tx", "both"), ``rings``, ``slots``, ``bufs``, ``buf_size``,
    ``extra_bufs``, ``hugepages``, ``region``, ``rx_block_ms``, and the
    flags ``zerocopy``, ``copy``, ``busy_poll``, ``events``,
    ``rx_blocks``, ``exclusive``, ``tx_frames``, ``nowait`` (True/False).
    Values in the name (``@conf:slots=512``) win. ``rx_blocks`` is True
    unless given: a ``pkt:`` port receives in place in the kernel's
    blocks, the fastest RX for a reader (``rx_blocks=False`` or
    ``@conf:rx=frames`` for the library's default engine).

    Raises OSError (FileNotFoundError, PermissionError, ... as its errno
    says) with the library's one-line message, TypeError for an unknown
    option, ValueError for a bad ``dir``.
    """
    # Capture is what a Python program does with pkt:: its RX reads the
    # kernel's TPACKET_V3 blocks in place (rx=blocks, docs/packet.md)
    # unless told otherwise (rx_blocks=False, or @conf:rx=frames in the
    # name, which wins). Nothing here swaps an RX buffer: forward()
    # swaps only between ports of one memory, and a pkt: port on a
    # shared region copies out of its blocks anyway. Other back ends
    # ignore the flag.
    options.setdefault("rx_blocks", True)
    d = options.get("dir")
    if isinstance(d, str):
        if d not in _DIRS:
            raise ValueError(f"pktmap: dir must be one of {sorted(_DIRS)}")
        options["dir"] = _DIRS[d]
    return Port(name, **options)
