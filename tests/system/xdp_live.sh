#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# xdp: TX through BPF_PROG_RUN live frames (xdp:IFACE@conf:tx=live) on veth
# pairs across two namespaces.
#
#   netns pmlA$$                         netns pmlB$$
#   +---------------------------+        +-------------------------+
#   | pktmap gen                |        | pktmap recv             |
#   |   -i xdp:vethA@conf:tx=live        |   -i xdp:vethB          |
#   |        vethA -------------+= veth =+------- vethB            |
#   |        vethC -------------+= veth, 2 queues = vethD          |
#   +---------------------------+        +-------------------------+
#
# recv attaches pktmap's XDP program to vethB, so the veth accepts frames
# redirected to vethA (ndo_xdp_xmit).
# 1. gen at full speed, lengths 60..1514: every frame arrives intact and
#    in order, or is counted dropped by gen (the kernel dropped it after
#    the TX program) or by recv (its socket's ring was full); exact sum.
#    1b: with vethB's NAPI threaded the veth's ring overflows: gen's count
#    of the drops equals the veth's own xdp_xmit_errors.
# 2. two queues: gen -p 2 on xdp:vethC, recv -p 2 on xdp:vethD.
# 2b. without CAP_SYS_ADMIN (the program cannot be kept in the kernel's XDP
#    dispatcher): a one-line notice, every frame still arrives.
# 3. no XDP program on the peer: the veth drops every redirected frame;
#    gen counts all of them (drop_backend) and says why in one line.
# 4. errors: one line with the remedy.
# After each step no XDP program is left on any interface; the namespaces
# go on exit. Needs root; under CI=true it may not skip.
set -euo pipefail

PKTMAP=${PKTMAP:-pktmap}
N=${N:-200000}
RX=@conf:rx-slots=4096
LIVE=@conf:tx=live
A=pmlA$$
B=pmlB$$
# shellcheck disable=SC2034 # read by bg() of lib.sh, sourced below
BG_TIMEOUT=120

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

need_root
need_cmd ip
need_cmd ethtool
need_cmd python3

ns_pair "$A" "$B"
netns_veth "$A" vethC "$B" vethD 2

# recv in B until it has every frame or 5 s of silence. Its open's info
# line (in FILE.err) says when its sockets are in the program's map.
start_recv() {
	local out=$1
	shift
	bg ip netns exec "$B" "$PKTMAP" recv "$@" -n "$N" --idle 5 -T 0 -q --json -v \
		>"$out" 2>"$out.err"
	RECV=$BG_PID
}
wait_recv() {
	wait_bg "$RECV"
	[ "$WAIT_RC" = 0 ] || fail "recv failed ($WAIT_RC): $(cat "$1.err")"
}
# check FILE_GEN FILE_RECV: every frame gen submitted arrived intact and
# in order, or was counted dropped by one of the two ports.
check() {
	local g=$1 r=$2 sent got drops
	sent=$(json "$g" packets)
	got=$(json "$r" packets)
	drops=$(($(json "$g" drop_backend) + $(json "$r" drop_backend)))
	echo "   gen $sent (dropped after the program: $(json "$g" drop_backend)), received $got, gaps $(json "$r" gaps), bad $(json "$r" bad), recv drops $(json "$r" drop_backend)"
	expect_eq "frames gen submitted" "$sent" "$N"
	[ "$got" -gt 0 ] || fail "received nothing"
	expect_eq "received + counted drops" $((got + drops)) "$N"
	[ "$(json "$r" gaps)" -le "$drops" ] || fail "gaps beyond the counted drops"
	expect_eq "reordered frames" "$(json "$r" reordered)" 0
	expect_eq "bad frames" "$(json "$r" bad)" 0
	expect_eq "frames gen's port refused" \
		$(($(json "$g" drop_invalid) + $(json "$g" drop_too_long))) 0
}

echo "== 1. xdp:vethA$LIVE -> xdp:vethB, $N frames of 60..1514 bytes, full speed"
start_recv "$TMP/r1.json" -i "xdp:vethB$RX"
wait_for "$TMP/r1.json.err" 'XDP program'
inA "$PKTMAP" gen -i "xdp:vethA$LIVE" -n "$N" -l 60-1514 -T 0 -q --json -v \
	>"$TMP/g1.json" 2>"$TMP/g1.err"
wait_recv "$TMP/r1.json"
sed 's/^/   /' "$TMP/g1.err"
grep -q "xdp:vethA$LIVE: veth queue 0 of 1, TX live (BPF_PROG_RUN)" "$TMP/g1.err" ||
	fail "gen's open does not report the live mode"
check "$TMP/g1.json" "$TMP/r1.json"
no_leftovers

echo "== 1b. vethB's NAPI in a thread of its own: its ring of 256 frames overflows"
# The sender no longer runs the receiver's work in its softirq, so the
# veth drops what its ring cannot hold, after the TX program returned.
# gen's count of those drops (from the kernel's xdp tracepoints) must be
# the veth's own (ethtool -S: tx_queue_0_xdp_xmit_errors), and every
# other frame must arrive.
xmit_err() { inA ethtool -S vethA | awk '/tx_queue_0_xdp_xmit_errors/ { print $2 }'; }
start_recv "$TMP/r1b.json" -i "xdp:vethB$RX"
wait_for "$TMP/r1b.json.err" 'XDP program'
inB sh -c 'echo 1 > /sys/class/net/vethB/threaded' || fail "cannot thread vethB's NAPI"
e0=$(xmit_err)
inA "$PKTMAP" gen -i "xdp:vethA$LIVE" -n "$N" -l 60-1514 -T 0 -q --json \
	>"$TMP/g1b.json" 2>/dev/null
e1=$(xmit_err)
# (while recv's program keeps the veth's NAPI: without it, no setting)
inB sh -c 'echo 0 > /sys/class/net/vethB/threaded' || fail "cannot unthread vethB's NAPI"
wait_recv "$TMP/r1b.json"
check "$TMP/g1b.json" "$TMP/r1b.json"
echo "   veth's tx_queue_0_xdp_xmit_errors +$((e1 - e0))"
[ "$(json "$TMP/g1b.json" drop_backend)" = $((e1 - e0)) ] ||
	fail "gen counted $(json "$TMP/g1b.json" drop_backend) drops, the veth $((e1 - e0))"
no_leftovers

echo "== 2. two queues: gen -p 2 on xdp:vethC$LIVE, recv -p 2 on xdp:vethD"
# A redirected frame enters the veth's peer on the RX queue of the
# sending CPU (not of the TX queue): gen's thread I is pinned to CPU I,
# so its stream reaches recv's thread I, which checks its sequence.
if [ "$(nproc)" -ge 2 ]; then
	start_recv "$TMP/r2.json" -i "xdp:vethD$RX" -p 2
	wait_for "$TMP/r2.json.err" 'vethD-0.*XDP program'
	wait_for "$TMP/r2.json.err" 'vethD-1.*XDP program'
	inA "$PKTMAP" gen -i "xdp:vethC$LIVE" -p 2 -a 0 -n "$N" -l 60-1514 -T 0 -q \
		--json >"$TMP/g2.json"
	wait_recv "$TMP/r2.json"
	check "$TMP/g2.json" "$TMP/r2.json"
	for t in 0 1; do
		python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["threads"][int(sys.argv[2])]["packets"] == 0)' \
			"$TMP/r2.json" "$t" || fail "queue $t received nothing"
	done
	no_leftovers
else
	echo "   (one CPU: skipped)"
fi

echo "== 2b. without CAP_SYS_ADMIN: slower (a notice says why), every frame"
if command -v setpriv >/dev/null; then
	n2=$N
	N=3000
	start_recv "$TMP/r2b.json" -i "xdp:vethB$RX"
	wait_for "$TMP/r2b.json.err" 'XDP program'
	inA setpriv --bounding-set=-sys_admin "$PKTMAP" gen -i "xdp:vethA$LIVE" -n "$N" \
		-T 0 -q --json >"$TMP/g2b.json" 2>"$TMP/g2b.err"
	wait_recv "$TMP/r2b.json"
	sed 's/^/   /' "$TMP/g2b.err"
	grep -q "cannot keep the TX program in the kernel's XDP dispatcher .*needs CAP_SYS_ADMIN" \
		"$TMP/g2b.err" || fail "no notice without CAP_SYS_ADMIN"
	check "$TMP/g2b.json" "$TMP/r2b.json"
	N=$n2
	no_leftovers
fi

echo "== 3. no XDP program on vethB: every frame dropped by the veth, and counted"
before=$(inB cat /sys/class/net/vethB/statistics/rx_packets)
inA "$PKTMAP" gen -i "xdp:vethA$LIVE" -n 1000 -T 0 -q --json >"$TMP/g3.json" \
	2>"$TMP/g3.err"
after=$(inB cat /sys/class/net/vethB/statistics/rx_packets)
sed 's/^/   /' "$TMP/g3.err"
[ "$(json "$TMP/g3.json" drop_backend)" = 1000 ] ||
	fail "gen counted $(json "$TMP/g3.json" drop_backend) of 1000 frames dropped"
[ "$after" = "$before" ] || fail "vethB received $((after - before)) frames"
grep -q "a veth delivers only to a peer with NAPI on: an XDP program there, or GRO" "$TMP/g3.err" ||
	fail "no notice of the drops"
no_leftovers

echo "== 4. errors"
expect_err "xdp:vethA@conf:tx=fast: '@conf:tx=fast': expected live (BPF_PROG_RUN live frames) or xsk (AF_XDP)" \
	inA "$PKTMAP" gen -i "xdp:vethA@conf:tx=fast" -n 1 -q
expect_err "xdp:eth9$LIVE: no such interface" inA "$PKTMAP" gen -i "xdp:eth9$LIVE" -n 1 -q
no_leftovers

echo "PASS"
