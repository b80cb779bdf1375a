#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# pkt: (AF_PACKET) ports on a veth pair across two namespaces.
#
#   netns pmA$$                          netns pmB$$
#   +---------------------+              +-------------------------+
#   | pktmap gen          |              | pktmap recv             |
#   |   -i pkt:vethA      |              |   -i pkt:vethB[...]     |
#   |        vethA -------+==== veth ====+------- vethB            |
#   +---------------------+              +-------------------------+
#
# 1. pkt -> pkt: N frames, exact count (received + the drops the kernel
#    counted at a starved socket = N, those drops at most MAX_DROP_PCT
#    percent, lib.sh's drops_ok), no gaps beyond them, no bad payload.
# 2. fanout: 4 rings in one process, then 2 rings opened apart
#    (pkt:vethB-0 and pkt:vethB-1 in two processes): every frame once.
# 3. pkt -> kernel: vethB's rx_packets grows by exactly N.
# 4. xdp <-> pkt: gen on xdp:vethA into recv on pkt:vethB and back.
# 5. errors: one line with the remedy.
# Needs root; under CI=true it may not skip. Everything it makes is
# removed on exit.
set -euo pipefail

PKTMAP=${PKTMAP:-pktmap}
# Exact counts at a rate a machine whose cores are shared with busy loops
# sustains (the AF_PACKET ring absorbs stalls of a few hundred ms at this
# rate); rates are bench/pkt_veth.sh's business.
N=${N:-50000}
RATE=${RATE:-50000}
A=pmA$$
B=pmB$$

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# At exit the namespaces go, and with them every veth and TAP made inside.

need_root
need_cmd ip

ns_pair "$A" "$B"
rx_packets() { inB cat /sys/class/net/vethB/statistics/rx_packets; }

# recv in B in the background until it has N packets (or 5 s of silence).
start_recv() {
	local out=$1
	shift
	bg ip netns exec "$B" "$PKTMAP" recv "$@" -n "$N" --idle 5 -T 0 -q \
		--json >"$out"
	RPID=$BG_PID
}
# Wait until a background recv has its socket open: poll its port in B.
wait_bound() {
	local want=$1 _
	for _ in $(seq 100); do
		# AF_PACKET sockets bound to vethB, as /proc/net/packet lists them.
		local idx n
		idx=$(inB cat /sys/class/net/vethB/ifindex)
		n=$(inB awk -v i="$idx" 'NR > 1 && $5 == i' /proc/net/packet | wc -l)
		[ "$n" -ge "$want" ] && return 0
		sleep 0.05
	done
	fail "recv did not open pkt:vethB"
}

# Wait until an xdp: receiver is ready: it attaches its XDP program to
# vethB once its sockets are in the program's map.
wait_xsk() {
	local _
	for _ in $(seq 100); do
		ip -n "$B" link show vethB | grep -q 'prog/xdp' && return 0
		sleep 0.05
	done
	fail "recv did not open xdp:vethB"
}

# counted FILE: a receiver got N frames, less those the kernel dropped at
# its socket and counted (tp_drops: the JSON's drop_backend; a receiver
# starved of CPU beside busy loops lets its ring fill), intact and in
# order.
counted() {
	local got drops
	got=$(json "$1" packets)
	drops=$(json "$1" drop_backend)
	echo "   received $got, gaps $(json "$1" gaps), bad $(json "$1" bad), kernel drops $drops"
	[ "$got" -gt 0 ] || fail "received nothing"
	[ $((got + drops)) = "$N" ] || fail "received $got + $drops counted drops of $N"
	drops_ok "$1" "$drops" "$N"
	[ "$(json "$1" bad)" = 0 ] || fail "bad frames"
}

echo "== 1. pkt -> pkt, $N frames at $RATE pps"
start_recv "$TMP/r1.json" -i pkt:vethB
wait_bound 1
inA "$PKTMAP" gen -i pkt:vethA -n "$N" -R "$RATE" -T 0 -q --json >"$TMP/g1.json"
wait_bg "$RPID"; expect_eq "recv status" "$WAIT_RC" 0
got=$(json "$TMP/r1.json" packets)
echo "   sent $(json "$TMP/g1.json" packets), received $got, gaps $(json "$TMP/r1.json" gaps), bad $(json "$TMP/r1.json" bad)"
[ "$(json "$TMP/g1.json" packets)" = "$N" ] || fail "gen sent $(json "$TMP/g1.json" packets)"
counted "$TMP/r1.json"
# one stream on one ring: what is missing is what the kernel dropped
[ "$(json "$TMP/r1.json" gaps)" -le "$(json "$TMP/r1.json" drop_backend)" ] ||
	fail "gaps beyond the counted drops"
[ "$(json "$TMP/r1.json" reordered)" = 0 ] || fail "reordered frames"

echo "== 2a. fanout: pkt:vethB@conf:rings=4, flows over 64 source ports"
start_recv "$TMP/r2.json" -i "pkt:vethB@conf:rings=4"
wait_bound 4
inA "$PKTMAP" gen -i pkt:vethA -n "$N" -R "$RATE" -s 10.0.0.1:1000-1063 -T 0 -q \
	--json >"$TMP/g2.json"
wait_bg "$RPID"; expect_eq "recv status" "$WAIT_RC" 0
counted "$TMP/r2.json"

echo "== 2b. fanout: pkt:vethB-0 and pkt:vethB-1 (rings=2) in two processes"
bg ip netns exec "$B" "$PKTMAP" recv -i "pkt:vethB-0@conf:rings=2" \
	--idle 2 -T 0 -q --json >"$TMP/r3a.json"
R0=$BG_PID
bg ip netns exec "$B" "$PKTMAP" recv -i "pkt:vethB-1@conf:rings=2" \
	--idle 2 -T 0 -q --json >"$TMP/r3b.json"
R1=$BG_PID
wait_bound 2
inA "$PKTMAP" gen -i pkt:vethA -n "$N" -R "$RATE" -s 10.0.0.1:1000-1063 -T 0 -q \
	--json >/dev/null
wait_bg "$R0"; expect_eq "recv ring 0 status" "$WAIT_RC" 0
wait_bg "$R1"; expect_eq "recv ring 1 status" "$WAIT_RC" 0
a=$(json "$TMP/r3a.json" packets)
b=$(json "$TMP/r3b.json" packets)
da=$(json "$TMP/r3a.json" drop_backend)
db=$(json "$TMP/r3b.json" drop_backend)
echo "   ring 0: $a, ring 1: $b, kernel drops $da + $db"
[ $((a + b + da + db)) = "$N" ] || fail "received $((a + b)) + $((da + db)) counted drops of $N"
drops_ok "two processes" $((da + db)) "$N"
[ "$(json "$TMP/r3a.json" bad)" = 0 ] && [ "$(json "$TMP/r3b.json" bad)" = 0 ] || fail "bad frames"
[ "$a" -gt 0 ] && [ "$b" -gt 0 ] || fail "one process got nothing"

echo "== 3. pkt -> kernel: vethB rx_packets"
before=$(rx_packets)
inA "$PKTMAP" gen -i pkt:vethA -n "$N" -R "$RATE" -T 0 -q --json >"$TMP/g4.json"
after=$(rx_packets)
echo "   vethB rx_packets +$((after - before))"
[ $((after - before)) = "$N" ] || fail "kernel counted $((after - before)) of $N"

echo "== 4. xdp <-> pkt: AF_XDP on one end, AF_PACKET on the other"
for dir in "xdp pkt" "pkt xdp"; do
	set -- $dir
	start_recv "$TMP/r5.json" -i "$2:vethB"
	if [ "$2" = pkt ]; then
		wait_bound 1
	else
		wait_xsk
	fi
	inA "$PKTMAP" gen -i "$1:vethA" -n "$N" -R "$RATE" -T 0 -q --json >/dev/null
	wait_bg "$RPID"; expect_eq "recv status" "$WAIT_RC" 0
	got=$(json "$TMP/r5.json" packets)
	echo "   $1 -> $2: received $got, gaps $(json "$TMP/r5.json" gaps), bad $(json "$TMP/r5.json" bad)"
	expect_eq "$1 -> $2 received" "$got" "$N"
	expect_eq "$1 -> $2 gaps" "$(json "$TMP/r5.json" gaps)" 0
	expect_eq "$1 -> $2 bad" "$(json "$TMP/r5.json" bad)" 0
done

echo "== 5. errors"
if msg=$(inA "$PKTMAP" gen -i pkt:nosuch0 -n 1 -q 2>&1); then
	fail "no error for a missing interface"
fi
echo "   $msg"
echo "$msg" | grep -q "pkt:nosuch0: no such interface" || fail "message: $msg"
if msg=$(inA "$PKTMAP" recv -i "pkt:vethA-2@conf:rings=2" -n 1 -q 2>&1); then
	fail "no error for ring 2 of 2"
fi
echo "   $msg"
echo "$msg" | grep -q "ring 2 does not exist" || fail "message: $msg"

echo "PASS"
