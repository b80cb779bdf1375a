#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Capture on a veth pair across two namespaces: the real tcpdump on
# pktmap's libpcap (xdp: and pkt: ports), the stock tcpdump, and pktmap
# capture, each given the same frames at a low rate.
#
#   netns pcA$$                          netns pcB$$
#   +---------------------+              +--------------------------------+
#   | pktmap gen          |              | tcpdump on pktmap's libpcap    |
#   |   -i pkt:vethA      |              |   -i xdp:vethB | pkt:vethB     |
#   |        vethA -------+==== veth ====+-- vethB   (stock tcpdump too)  |
#   |        vethC -------+== veth, 2 q =+-- vethD   pktmap capture       |
#   +---------------------+              +--------------------------------+
#
# 1. tcpdump -i xdp:vethB, pkt:vethB, and vethB with PKTMAP_PCAP_MAP=xdp:
#    N frames captured, every seq in order, exit lines "N packets
#    captured / N received by filter / 0 dropped by kernel", and packet
#    for packet the same bytes as the stock tcpdump on vethB.
# 2. filters apply on the wire: "udp port 9" over ports 8-10.
# 3. pktmap capture -i xdp:vethB and pkt:vethB (V3 blocks, and V2 frames
#    with @conf:rx=frames): N written, seqs in order, stock's bytes.
# 4. two queues (gen -p 2 on xdp:vethC): pktmap capture -i xdp:vethD into
#    one file (both streams whole) and --per-queue (one file per queue).
# 5. tcpdump's exit lines with drops (stopped while its small ring
#    overflows): captured + dropped by kernel = sent = received by filter.
# After each step no XDP program is left on any interface. Needs root.
set -euo pipefail

PKTMAP=${PKTMAP:-pktmap}
N=${N:-20000}
RATE=${RATE:-50000}
A=pcA$$
B=pcB$$

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

need_root
need_cmd ip
need_cmd tcpdump

ns_pair "$A" "$B"
netns_veth "$A" vethC "$B" vethD 2

# Wait until a capture is listening: its line on stderr (tcpdump's, or
# pktmap capture's, printed once every port is open and bound).
wait_listening() {
	local f=$1 _
	for _ in $(seq 300); do
		grep -q "listening on" "$f" 2>/dev/null && return 0
		sleep 0.05
	done
	fail "the capture did not start: $(cat "$f")"
}

send() { inA "$PKTMAP" gen -i pkt:vethA -R "$RATE" -T 0 -q "$@"; }

recv_file() {
	"$PKTMAP" recv -i "pcap:$1/R" -T 0 -q --json >"$TMP/r.json"
	echo "$(json "$TMP/r.json" packets) $(json "$TMP/r.json" gaps)" \
	     "$(json "$TMP/r.json" reordered)"
}

# The packets of a file without their time stamps.
bytes_of() { tcpdump -nn -t -x -r "$1" 2>/dev/null; }

# tcpdump_run NAME ENV... -- TCPDUMP_ARGS: tcpdump in B, in the background.
tcpdump_run() {
	local name=$1
	shift
	bg ip netns exec "$B" env "$@" 2>"$TMP/$name.err"
	TPID=$BG_PID
	wait_listening "$TMP/$name.err"
}

echo "== 1. stock tcpdump -i vethB, $N frames at $RATE pps"
tcpdump_run stock tcpdump -Z root -i vethB -c "$N" -w "$TMP/stock.pcap"
send -n "$N"
wait_bg "$TPID"
expect_eq "stock file" "$(recv_file "$TMP/stock.pcap")" "$N 0 0"
bytes_of "$TMP/stock.pcap" >"$TMP/stock.txt"

# pkt: reads TPACKET_V3 blocks in place (the library's default), or
# TPACKET_V2 frames in place (@conf:rx=frames, and tcpdump --immediate-mode)
for dev in xdp:vethB pkt:vethB pkt:vethB@conf:rx=frames vethB; do
	echo "== 1. tcpdump on pktmap's libpcap -i $dev"
	tcpdump_run lib PKTMAP_PCAP_MAP=xdp "$PKTMAP" pcap-run tcpdump -Z root \
		-i "$dev" -c "$N" -w "$TMP/lib.pcap"
	send -n "$N"
	wait_bg "$TPID"
	expect_eq "$dev: tcpdump exit" "$WAIT_RC" 0
	expect_eq "$dev: file" "$(recv_file "$TMP/lib.pcap")" "$N 0 0"
	bytes_of "$TMP/lib.pcap" >"$TMP/lib.txt"
	cmp -s "$TMP/stock.txt" "$TMP/lib.txt" ||
		fail "$dev: packets differ from the stock tcpdump's"
	grep -q "^$N packets captured$" "$TMP/lib.err" || fail "$(cat "$TMP/lib.err")"
	grep -q "^$N packets received by filter$" "$TMP/lib.err" ||
		fail "$(cat "$TMP/lib.err")"
	grep -q "^0 packets dropped by kernel$" "$TMP/lib.err" ||
		fail "$(cat "$TMP/lib.err")"
	echo "   $(tail -3 "$TMP/lib.err" | tr '\n' ';') same bytes as stock"
	no_leftovers
done

echo "== 2. filter udp port 9 on xdp:vethB"
tcpdump_run f "$PKTMAP" pcap-run tcpdump -Z root -i xdp:vethB -c 5000 \
	-w "$TMP/f.pcap" udp port 9
send -n 15000 -d 10.1.0.1:8-10
wait_bg "$TPID"
expect_eq "filter packets" "$(tcpdump -nn -r "$TMP/f.pcap" 2>/dev/null | wc -l)" 5000
expect_eq "filter port 9" \
	"$(tcpdump -nn -r "$TMP/f.pcap" 2>/dev/null | grep -c '\.9: UDP')" 5000
no_leftovers

for port in xdp:vethB pkt:vethB pkt:vethB@conf:rx=frames; do
	echo "== 3. pktmap capture -i $port"
	bg ip netns exec "$B" "$PKTMAP" capture -i "$port" -c "$N" \
		-w "$TMP/c.pcap" --json >"$TMP/c.json" 2>"$TMP/c.err"
	cpid=$BG_PID
	wait_listening "$TMP/c.err"
	send -n "$N"
	wait_bg "$cpid"
	expect_eq "$port: capture exit" "$WAIT_RC" 0
	case $port in # how the frames were read: the line says it
	pkt:vethB) grep -q "listening on $port (TPACKET_V3 blocks)" "$TMP/c.err" ||
		fail "$port: not read in blocks: $(cat "$TMP/c.err")" ;;
	*) ! grep -q "TPACKET_V3 blocks" "$TMP/c.err" ||
		fail "$port: read in blocks: $(cat "$TMP/c.err")" ;;
	esac
	expect_eq "$port: written" "$(json "$TMP/c.json" written)" "$N"
	expect_eq "$port: file" "$(recv_file "$TMP/c.pcap")" "$N 0 0"
	bytes_of "$TMP/c.pcap" >"$TMP/c.txt"
	cmp -s "$TMP/stock.txt" "$TMP/c.txt" ||
		fail "$port: packets differ from the stock tcpdump's"
	no_leftovers
done

echo "== 4. two queues: xdp:vethD merged, then --per-queue"
bg ip netns exec "$B" "$PKTMAP" capture -i xdp:vethD -c "$N" -w "$TMP/m.pcap" \
	--json >"$TMP/m.json" 2>"$TMP/m.err"
cpid=$BG_PID
wait_listening "$TMP/m.err"
inA "$PKTMAP" gen -i xdp:vethC -p 2 -n "$N" -R "$RATE" -T 0 -q
wait_bg "$cpid"
expect_eq "merged: written" "$(json "$TMP/m.json" written)" "$N"
expect_eq "merged: file" "$(recv_file "$TMP/m.pcap")" "$N 0 0"
no_leftovers
bg ip netns exec "$B" "$PKTMAP" capture -i xdp:vethD -c "$N" -w "$TMP/q.pcap" \
	--per-queue --json >"$TMP/q.json" 2>"$TMP/q.err"
cpid=$BG_PID
wait_listening "$TMP/q.err"
inA "$PKTMAP" gen -i xdp:vethC -p 2 -n "$N" -R "$RATE" -T 0 -q
wait_bg "$cpid"
read -r q0 g0 _ <<<"$(recv_file "$TMP/q-q0.pcap")"
read -r q1 g1 _ <<<"$(recv_file "$TMP/q-q1.pcap")"
echo "   queue 0: $q0, queue 1: $q1"
[ "$q0" -gt 0 ] && [ "$q1" -gt 0 ] || fail "a queue got nothing"
expect_eq "per queue: sum" "$((q0 + q1))" "$N"
expect_eq "per queue: gaps" "$g0 $g1" "0 0"
no_leftovers

echo "== 5. exit lines with drops: tcpdump on pkt:vethB@conf:slots=256, stopped"
# While tcpdump is stopped its 16 MiB ring (the least a pkt: port has:
# 10500 frames of 1514 bytes in TPACKET_V3 blocks) fills and the kernel
# drops the rest; what it then prints must add up: captured + dropped =
# sent, and "received by filter" counts both (libpcap's meaning on Linux).
tcpdump_run d "$PKTMAP" pcap-run tcpdump -Z root -i 'pkt:vethB@conf:slots=256' \
	-w "$TMP/d.pcap"
tdpid=$(pgrep -P "$TPID" | head -1)
[ -n "$tdpid" ] || fail "no tcpdump process under $TPID"
kill -STOP "$tdpid"
send -n "$N" -l 1514
kill -CONT "$tdpid"
sleep 1
kill -INT "$tdpid"
wait_bg "$TPID"
cap=$(grep -o '^[0-9]* packets captured' "$TMP/d.err" | cut -d' ' -f1)
rcv=$(grep -o '^[0-9]* packets received by filter' "$TMP/d.err" | cut -d' ' -f1)
drp=$(grep -o '^[0-9]* packets dropped by kernel' "$TMP/d.err" | cut -d' ' -f1)
echo "   $cap captured, $rcv received by filter, $drp dropped by kernel"
[ "${drp:-0}" -gt 0 ] || fail "no drops: $(cat "$TMP/d.err")"
# TPACKET_V2 frames of 2 KiB would have kept exactly 8192.
[ "$cap" -gt 8192 ] || fail "$cap kept: were the blocks used?"
expect_eq "captured + dropped" "$((cap + drp))" "$N"
expect_eq "received by filter" "$rcv" "$N"
expect_eq "file" "$(recv_file "$TMP/d.pcap" | cut -d' ' -f1)" "$cap"

echo "PASS"
