# SPDX-License-Identifier: BSD-2-Clause
"""pkt: and xdp: ports from Python on a veth pair, in a network namespace
this test creates and removes (root; under CI=true it may not skip).

    [ namespace pyPID ]  pkt:vethB --(frames)--> vethA: pkt: or xdp: RX
"""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def ip(*args, ns=None):
    pre = ["ip", "netns", "exec", ns] if ns else []
    subprocess.run(pre + ["ip", *args], check=True)


@pytest.fixture
def netns():
    if os.geteuid() != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true: this test needs root")
        pytest.skip("needs root (network namespaces)")
    ns = f"py{os.getpid()}"
    ip("netns", "add", ns)
    try:
        # no IPv6 chatter on the links
        subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw",
                        "net.ipv6.conf.all.disable_ipv6=1",
                        "net.ipv6.conf.default.disable_ipv6=1"], check=True)
        ip("link", "add", "vethA", "type", "veth", "peer", "name", "vethB", ns=ns)
        ip("link", "set", "vethA", "up", ns=ns)
        ip("link", "set", "vethB", "up", ns=ns)
        yield ns
    finally:
        # the links, and any XDP program on them, go with the namespace
        ip("netns", "del", ns)


# (port, open options, RX in the kernel's blocks?): Python's pkt: RX
# reads in place in blocks unless told otherwise
@pytest.mark.parametrize("port,opts,blocks", [
    ("pkt:vethA", {}, True),
    ("pkt:vethA", {"rx_blocks": False}, False),
    ("pkt:vethA@conf:rx=frames", {}, False),
    ("pkt:vethA@conf:rx=blocks", {"rx_blocks": False}, True),
    ("xdp:vethA", {}, False)])
def test_veth_rx(netns, port, opts, blocks):
    n = 500
    out = subprocess.run(["ip", "netns", "exec", netns, sys.executable,
                          os.path.join(HERE, "veth_child.py"), port, str(n),
                          json.dumps(opts)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["count"] == n and r["intact"], r
    assert r["bytes"] == sum(60 + i % 200 for i in range(n))
    assert r["rx_blocks"] is blocks, r
    assert r["rx_packets"] >= n
