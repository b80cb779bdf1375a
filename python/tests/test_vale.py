# SPDX-License-Identifier: BSD-2-Clause
"""Clients of the software switch (pktmap switch, docs/switch.md) from
Python: a broadcast from one port reaches the others, bytes intact."""
import os
import shutil
import subprocess
import time

import pytest

import pktmap
from conftest import frame, packet_bytes


def pktmap_cmd():
    cmd = os.environ.get("PKTMAP") or shutil.which("pktmap")
    if not cmd:
        pytest.skip("no pktmap command (PKTMAP)")
    return cmd


@pytest.fixture
def switch():
    name = f"vale{os.getpid() % 100000}s"
    sw = subprocess.Popen([pktmap_cmd(), "switch", name, "-T", "0"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        # until the switch answers (--list), as tests/system/switch_pipe.sh
        for _ in range(600):
            if subprocess.run([pktmap_cmd(), "switch", "--list", name],
                              capture_output=True).returncode == 0:
                break
            assert sw.poll() is None, sw.stderr.read().decode()
            time.sleep(0.05)
        yield name
    finally:
        sw.terminate()
        sw.wait(timeout=60)


def test_vale_broadcast(switch):
    bcast = [b"\xff" * 6 + frame(i, 60 + i)[6:] for i in range(20)]
    with pktmap.open(f"{switch}:a") as a, pktmap.open(f"{switch}:b") as b, \
            pktmap.open(f"{switch}:c") as c:
        assert a.send(bcast) == 20
        for port in (b, c):
            got = []
            for batch in port.rx(timeout=10):
                got += [packet_bytes(v) for v in batch]
                if len(got) >= 20:
                    break
            assert got == bcast
