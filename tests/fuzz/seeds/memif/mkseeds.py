#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Seeds for tests/fuzz/fuzz_memif.c: a whole server handshake (INIT,
ADD_REGION, ADD_RING C2S and S2C, CONNECT, then a message after CONNECT)
and a whole client one (HELLO, the ACKs, CONNECTED). Run it in this
directory to write server.bin and client.bin."""
import struct

MEMFD_COOKIE, EVENTFD = 1 | 32, 2


def msg(mtype, body=b"", fd=0):
    m = struct.pack("<H", mtype) + body
    m += b"\0" * (127 - len(m))
    return m + bytes([fd])


ring = 128 + 16 * 16  # a ring of 2^4 descriptors
server = bytes([1])
server += msg(3, struct.pack("<HIB24s32s", 0x0200, 0, 0, b"", b"fuzz"))
server += msg(4, struct.pack("<HQ", 0, 65536), MEMFD_COOKIE)
server += msg(5, struct.pack("<HHHIBH", 1, 0, 0, 0, 4, 0), EVENTFD)
server += msg(5, struct.pack("<HHHIBH", 0, 0, 0, ring, 4, 0), EVENTFD)
server += msg(6, b"fuzz")
server += msg(1)
client = bytes([0])
client += msg(2, struct.pack("<32sHHHHHB", b"fuzz", 0x0200, 0x0200, 1, 1, 1, 10))
client += msg(1) * 7
client += msg(7, b"fuzz")
client += msg(1)
with open("server.bin", "wb") as f:
    f.write(server)
with open("client.bin", "wb") as f:
    f.write(client)
