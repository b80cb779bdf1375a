#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# pktmap switch with a NIC, its host stack and a second NIC attached (as
# vale-ctl -a / -h), over veth pairs across three namespaces, and a client
# process on the switch:
#
#   netns sA$$          netns sB$$                                 netns sC$$
#   +-----------+       +-------------------------------------+   +---------+
#   | ping, gen |       |  host stack 10.77.0.2 (vb)          |   | recv    |
#   | xdp:va    +=veth==+  xdp:vb  xdp:vb^  xdp:vd  valeX:m   +===+ xdp:vc  |
#   | 10.77.0.1 |       |  \______ pktmap switch valeX ___/   |   |         |
#   +-----------+       +-------------------------------------+   +---------+
#
# 1. ping A -> B's host stack: 5 of 5 answered. With the host rings open,
#    frames reach B's stack only through the switch (NIC port -> host
#    port) and the answers leave only through it (host port -> NIC port).
#    Once both MACs are learned the pings are unicast: the client m sees
#    only the first, flooded, frame.
# 2. gen on xdp:va, 500 frames to an unknown MAC: flooded, recv on xdp:vc
#    gets exactly those 500, in order, intact (checksums), and m too.
# 3. a persistent port (-n: a tap device), detach and attach while running.
# 4. SIGTERM: the switch exits 0, no XDP or TC program is left on vb or vd,
#    no tap device.
# 5. -p 2 between two-queue veths: a queue per thread, every frame counted.
# Needs root; under CI=true it may not skip. Everything is removed on exit.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

A=sA$$
B=sB$$
C=sC$$
S=valev$$
on_exit() {
	local rc=$? p ns
	set +e
	for p in "${BG_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${BG_PIDS[@]}"; do wait "$p" 2>/dev/null; done
	for ns in "$A" "$B" "$C"; do ip netns del "$ns" 2>/dev/null; done
	(exit "$rc")
	cleanup
}
trap on_exit EXIT

need_root
need_cmd ip
need_cmd ping

ip netns add "$A"
ip netns add "$B"
ip netns add "$C"
ip link add va netns "$A" type veth peer name vb netns "$B"
ip link add vd netns "$B" type veth peer name vc netns "$C"
for ns in "$A" "$B" "$C"; do
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
done
ip -n "$A" addr add 10.77.0.1/24 dev va
ip -n "$B" addr add 10.77.0.2/24 dev vb
ip -n "$A" link set va up
ip -n "$B" link set vb up
ip -n "$B" link set vd up
ip -n "$C" link set vc up
# No ARP chatter: every frame that crosses is one the test sent.
mac_a=$(ip -n "$A" -o link show va | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)
mac_b=$(ip -n "$B" -o link show vb | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)
ip -n "$A" neigh add 10.77.0.2 lladdr "$mac_b" dev va nud permanent
ip -n "$B" neigh add 10.77.0.1 lladdr "$mac_a" dev vb nud permanent

nsx() { local ns=$1; shift; ip netns exec "$ns" "$@"; }
list() { nsx "$B" "$PKTMAP" switch --list "$S" "$@"; }
port_json() { # PORT KEY
	list --json | grep -o "{\"port\":\"$1\"[^}]*}" | grep -o "\"$2\":[0-9]*" |
		cut -d: -f2
}

BG_TIMEOUT=120 bg ip netns exec "$B" "$PKTMAP" switch "$S" -T 0 --json \
	-a xdp:vb -a 'xdp:vb^' -a xdp:vd -n "st$$" >"$TMP/sw.json" 2>"$TMP/sw.err"
sw=$BG_PID
for _ in $(seq 300); do
	list >/dev/null 2>&1 && break
	kill -0 "$sw" 2>/dev/null || fail "switch exited: $(cat "$TMP/sw.err")"
	sleep 0.1
done
list | grep -q '^vb\^ *host' || fail "no host port: $(list)"
bg ip netns exec "$B" "$PKTMAP" recv -i "$S:m" -T 0 -q --json >"$TMP/m.json"
recv_m=$BG_PID
for _ in $(seq 300); do
	list | grep -q '^m ' && break
	sleep 0.1
done

# 1. the host stack through the switch. B speaks first (one ping to A):
# its request, to a MAC the switch does not know yet, is flooded (m sees
# it); A's answer teaches the switch A's MAC. Then A pings B: requests and
# answers are unicast to learned MACs, m sees none of them.
nsx "$B" ping -c 1 -W 5 10.77.0.1 >"$TMP/ping" ||
	fail "ping from B's host stack through the switch: $(cat "$TMP/ping")"
nsx "$A" ping -c 5 -i 0.2 -W 5 10.77.0.2 >"$TMP/ping" ||
	fail "ping through the switch: $(cat "$TMP/ping")"
grep -q '5 received' "$TMP/ping" || fail "ping: $(cat "$TMP/ping")"
[ "$(port_json 'vb\^' tx_frames)" -ge 5 ] || fail "host port got $(port_json 'vb\^' tx_frames)"
[ "$(port_json 'vb\^' rx_frames)" -ge 5 ] || fail "host port sent $(port_json 'vb\^' rx_frames)"
expect_eq "frames to m during the pings" "$(port_json m tx_frames)" 1

# 2. a NIC to a NIC (flooded: the destination MAC is nobody's)
bg ip netns exec "$C" "$PKTMAP" recv -i xdp:vc -n 500 --csum -T 0 -q --json \
	>"$TMP/c.json"
recv_c=$BG_PID
for _ in $(seq 200); do
	nsx "$C" ip link show dev vc | grep -q prog/xdp && break
	sleep 0.05
done
nsx "$A" "$PKTMAP" gen -i xdp:va -S 02:00:00:00:77:01 -D 02:00:00:00:77:99 \
	-n 500 -R 20k -T 0 -q
wait_bg "$recv_c"
expect_eq "recv c exit" "$WAIT_RC" 0
expect_eq "c packets" "$(json "$TMP/c.json" packets)" 500
expect_eq "c gaps" "$(json "$TMP/c.json" gaps)" 0
expect_eq "c reordered" "$(json "$TMP/c.json" reordered)" 0
expect_eq "c bad" "$(json "$TMP/c.json" bad)" 0
expect_eq "c bad checksums" "$(json "$TMP/c.json" bad_csum)" 0
wait_output 501 port_json m tx_frames
expect_eq "frames to m" "$(port_json m tx_frames)" 501
expect_eq "drops to m" "$(port_json m drop_nospace)" 0

# 3. vale-ctl's -n, -d, -a and -l: the persistent port is a tap device of
# B; vd is detached (its XDP program goes) and attached again while the
# switch runs
list | grep -q "^st$$ *tap" || fail "no persistent port: $(list)"
nsx "$B" ip link show dev "st$$" >/dev/null || fail "no tap device st$$"
nsx "$B" "$PKTMAP" switch "$S" -d vd
refute "vd still attached" '^vd ' list
for _ in $(seq 100); do
	nsx "$B" ip link show dev vd | grep -q prog/xdp || break
	sleep 0.1
done
refute "vd keeps its XDP program" prog/xdp nsx "$B" ip link show dev vd
nsx "$B" "$PKTMAP" switch "$S" -a xdp:vd
list | grep -q '^vd *nic' || fail "vd not attached again: $(list)"
out=$(nsx "$B" "$PKTMAP" switch "$S" -d nosuch 2>&1) && fail "detached a port that is not there"
printf '%s\n' "$out" | grep -q "no port 'nosuch'" || fail "bad error: $out"

# 4. clean exit, nothing left on the links
kill "$recv_m"
wait "$recv_m" 2>/dev/null || true
kill -TERM "$sw"
wait_bg "$sw"
expect_eq "switch exit" "$WAIT_RC" 0
# (a BPF link lets go of its program after the last close: wait for it)
for _ in $(seq 100); do
	nsx "$B" ip -o link | grep -qE 'xdp|prog' || break
	sleep 0.1
done
left=$(nsx "$B" ip -o link | grep -E 'xdp|prog' || true)
nsx "$B" ip link show dev "st$$" >/dev/null 2>&1 && fail "tap st$$ left behind"
[ -z "$left" ] || fail "XDP program left: $left"
for i in vb vd; do
	f=$(nsx "$B" tc filter show dev "$i" egress 2>/dev/null || true)
	[ -z "$f" ] || fail "TC filter left on $i: $f"
done
# 5. two threads (-p 2) between two-queue veths: thread T opens queue T of
# each interface; gen -p 2 sends on both of va2's queues (a thread each),
# recv counts every frame on vc2's two queues, each stream in order, and
# each switch thread switches the frames of its own queue
ip link add va2 numtxqueues 2 numrxqueues 2 netns "$A" type veth peer name vb2 \
	numtxqueues 2 numrxqueues 2 netns "$B"
ip link add vd2 numtxqueues 2 numrxqueues 2 netns "$B" type veth peer name vc2 \
	numtxqueues 2 numrxqueues 2 netns "$C"
ip -n "$A" link set va2 up
ip -n "$B" link set vb2 up
ip -n "$B" link set vd2 up
ip -n "$C" link set vc2 up
BG_TIMEOUT=120 bg ip netns exec "$B" "$PKTMAP" switch "$S" -p 2 -T 0 --json \
	-a xdp:vb2 -a xdp:vd2 >"$TMP/sw2.json" 2>"$TMP/sw2.err"
sw=$BG_PID
for _ in $(seq 300); do
	list >/dev/null 2>&1 && break
	kill -0 "$sw" 2>/dev/null || fail "switch -p 2 exited: $(cat "$TMP/sw2.err")"
	sleep 0.1
done
bg ip netns exec "$C" "$PKTMAP" recv -i xdp:vc2 -n 1000 --csum -T 0 -q --json \
	>"$TMP/c2.json"
recv_c=$BG_PID
for _ in $(seq 200); do
	nsx "$C" ip link show dev vc2 | grep -q prog/xdp && break
	sleep 0.05
done
nsx "$A" "$PKTMAP" gen -i xdp:va2 -p 2 -S 02:00:00:00:77:01 -D 02:00:00:00:77:99 \
	-n 1000 -b 50 -R 20k -T 0 -q
wait_bg "$recv_c"
expect_eq "recv c2 exit" "$WAIT_RC" 0
expect_eq "c2 packets" "$(json "$TMP/c2.json" packets)" 1000
expect_eq "c2 gaps" "$(json "$TMP/c2.json" gaps)" 0
expect_eq "c2 bad" "$(json "$TMP/c2.json" bad)" 0
kill -TERM "$sw"
wait_bg "$sw"
expect_eq "switch -p 2 exit" "$WAIT_RC" 0
per=$(grep -o '"frames_per_thread":\[[0-9,]*\]' "$TMP/sw2.json" | grep -o '[0-9][0-9,]*')
# (the split between the threads is reported, the sum is exact, and
# gen's thread on each of va2's queues gives each switch thread a share)
echo "   -p 2 over two-queue veths: frames per thread $per"
[[ $per =~ ^[0-9]+,[0-9]+$ ]] || fail "not two threads' counts: $per"
[ "${per%%,*}" -gt 0 ] && [ "${per##*,}" -gt 0 ] ||
	fail "a thread switched nothing (frames per thread $per): not a queue each"
expect_eq "frames switched" "$((${per%%,*} + ${per##*,}))" 1000

echo "switch_veth: ok"
