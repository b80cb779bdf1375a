#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# tap: ports, in a namespace of the test's own.
#
#   netns pmT$$
#   +------------------------------------------------------------+
#   |  pktmap recv -i tap:pmtX    <== /dev/net/tun ==>  pmtX      |
#   |  pktmap gen  -i pkt:pmtX    --- AF_PACKET ----->  (kernel)  |
#   |                                                             |
#   |  pktmap gen  -i tap:pmtY    <== /dev/net/tun ==>  pmtY      |
#   |  pktmap recv -i pkt:pmtY    <-- AF_PACKET ------  (kernel)  |
#   +------------------------------------------------------------+
#
# 1. kernel -> tap: recv creates pmtX (and brings it up); what the kernel
#    sends out of pmtX (here: a pkt: gen on it) arrives whole and exactly.
#    After recv exits pmtX is gone.
# 2. tap -> kernel: a persistent pmtY (ip tuntap); gen on tap:pmtY; the
#    device's rx_packets grows by N and a pkt: recv on it sees every frame
#    intact. pmtY stays after gen exits (pktmap did not create it).
# 3. the host stack's own IP datagrams, sent through a created TAP, show
#    up on the port: exactly the five sent (49-byte frames carrying
#    "hello1" to "hello5", seen in recv's dump), nothing else.
# 4. errors: a name that exists but is not a TAP.
# Needs root; under CI=true it may not skip.
set -euo pipefail

PKTMAP=${PKTMAP:-pktmap}
N=${N:-50000}
RATE=${RATE:-100000}
NS=pmT$$

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# At exit the namespace goes, and with it every veth and TAP made inside.

need_root
[ -c /dev/net/tun ] || skip "no /dev/net/tun"

at_exit netns_del "$NS"
netns_new "$NS"
inNS() { ip netns exec "$NS" "$@"; }
inNS ip link set lo up
exists() { inNS test -e "/sys/class/net/$1"; }
wait_until() {
	local i
	for i in $(seq 100); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
}
# AF_PACKET sockets bound to a device.
packet_socks() {
	local idx
	idx=$(inNS cat "/sys/class/net/$1/ifindex")
	inNS awk -v i="$idx" 'NR > 1 && $5 == i' /proc/net/packet | wc -l
}
has_socks() { [ "$(packet_socks "$1")" -ge "$2" ]; }

echo "== 1. kernel -> tap:pmtX ($N frames at $RATE pps)"
exists pmtX && fail "pmtX exists before the test"
bg ip netns exec "$NS" "$PKTMAP" recv -i tap:pmtX -n "$N" --idle 5 -T 0 -q \
	--json >"$TMP/r1.json"
RPID=$BG_PID
wait_until exists pmtX || fail "recv did not create pmtX"
inNS ip link show pmtX | grep -q ',UP' || fail "pmtX is not up"
inNS "$PKTMAP" gen -i pkt:pmtX -n "$N" -R "$RATE" -T 0 -q --json >"$TMP/g1.json"
wait_bg "$RPID"; expect_eq "recv status" "$WAIT_RC" 0
got=$(json "$TMP/r1.json" packets)
echo "   sent $(json "$TMP/g1.json" packets), received $got, gaps $(json "$TMP/r1.json" gaps), bad $(json "$TMP/r1.json" bad)"
[ "$got" = "$N" ] || fail "received $got of $N"
[ "$(json "$TMP/r1.json" gaps)" = 0 ] || fail "gaps"
[ "$(json "$TMP/r1.json" bad)" = 0 ] || fail "bad frames"
exists pmtX && fail "pmtX still exists after recv exited"
echo "   pmtX removed"

echo "== 2. tap:pmtY -> kernel ($N frames)"
inNS ip tuntap add dev pmtY mode tap
inNS ip link set pmtY up
bg ip netns exec "$NS" "$PKTMAP" recv -i pkt:pmtY -n "$N" --idle 5 -T 0 -q \
	--json >"$TMP/r2.json"
RPID=$BG_PID
wait_until has_socks pmtY 1 || fail "recv did not open pkt:pmtY"
before=$(inNS cat /sys/class/net/pmtY/statistics/rx_packets)
inNS "$PKTMAP" gen -i tap:pmtY -n "$N" -R "$RATE" -T 0 -q --json >"$TMP/g2.json"
after=$(inNS cat /sys/class/net/pmtY/statistics/rx_packets)
wait_bg "$RPID"; expect_eq "recv status" "$WAIT_RC" 0
echo "   gen sent $(json "$TMP/g2.json" packets); pmtY rx_packets +$((after - before)); pkt: recv got $(json "$TMP/r2.json" packets), bad $(json "$TMP/r2.json" bad)"
[ "$(json "$TMP/g2.json" packets)" = "$N" ] || fail "gen sent too few"
[ $((after - before)) = "$N" ] || fail "kernel counted $((after - before)) of $N"
[ "$(json "$TMP/r2.json" packets)" = "$N" ] || fail "pkt: recv missed frames"
[ "$(json "$TMP/r2.json" bad)" = 0 ] || fail "bad frames"
exists pmtY || fail "pmtY (not ours) was removed"
inNS ip link del pmtY

echo "== 3. the kernel's own IP traffic through tap:pmtZ"
BG_TIMEOUT=30 bg ip netns exec "$NS" "$PKTMAP" recv -i tap:pmtZ --no-verify -n 5 \
	--dump 5 -T 0 -q --json >"$TMP/r3.json" 2>"$TMP/r3.dump"
RPID=$BG_PID
wait_until exists pmtZ || fail "recv did not create pmtZ"
inNS ip addr add 192.0.2.1/24 dev pmtZ
inNS ip neigh add 192.0.2.2 lladdr 02:00:00:00:00:02 dev pmtZ
# Five UDP datagrams from the host stack leave through the TAP.
for i in 1 2 3 4 5; do
	inNS bash -c "echo hello$i > /dev/udp/192.0.2.2/9"
done
wait_bg "$RPID"; expect_eq "recv status (124: timed out)" "$WAIT_RC" 0
echo "   received $(json "$TMP/r3.json" packets) frames"
[ "$(json "$TMP/r3.json" packets)" = 5 ] || fail "datagrams missing"
# each of the five is one of ours, once: Ethernet + IPv4 + UDP + "helloN\n"
expect_eq "49-byte frames" "$(grep -c ' len 49 ' "$TMP/r3.dump")" 5
for i in 1 2 3 4 5; do
	expect_eq "frames carrying hello$i" "$(grep -c "hello$i\$" "$TMP/r3.dump")" 1
done
wait_until sh -c "! ip netns exec $NS test -e /sys/class/net/pmtZ" ||
	fail "pmtZ still exists"

echo "== 4. errors"
inNS ip link add pmvA type veth peer name pmvB
if msg=$(inNS "$PKTMAP" recv -i tap:pmvA -n 1 -q 2>&1); then
	fail "no error for a non-TAP device"
fi
echo "   $msg"
echo "$msg" | grep -q "tap:pmvA: 'pmvA' exists but is not a TAP" || fail "message: $msg"
inNS ip link del pmvA

echo "PASS"
