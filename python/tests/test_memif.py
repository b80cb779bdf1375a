# SPDX-License-Identifier: BSD-2-Clause
"""memif: ports from Python (docs/memif.md): a server and a client on an
abstract socket, in two threads of one process (each its own port)."""
import threading

import pktmap
from conftest import frame, packet_bytes


def test_memif_client_to_server(uniq):
    sock = f"@{uniq}"
    frames = [frame(i, 60 + i) for i in range(200)]
    got, err = [], []

    def server():
        try:
            with pktmap.open(f"memif:{sock}@conf:role=server") as s:
                for batch in s.rx(timeout=30):
                    got.extend(packet_bytes(v) for v in batch)
                    if len(got) >= len(frames):
                        break
        except Exception as e:  # reported by the main thread
            err.append(e)

    t = threading.Thread(target=server)
    t.start()
    with pktmap.open(f"memif:{sock}") as c:
        # until the handshake is done (syncs drive it): frames sent
        # before it would find no peer
        for _ in range(3000):
            if c.stats()["peer_connects"]:
                break
            c.poll(pktmap.POLLIN, 10)  # nothing comes: a 10 ms wait
        assert c.stats()["peer_connects"] == 1
        assert c.send(frames, timeout=30) == len(frames)
        t.join(60)
    assert not t.is_alive() and not err, err
    assert got == frames
