#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# tcpdump -Q in|out|inout on pkt: ports, the real tcpdump through pktmap's
# libpcap beside the stock tcpdump, and pktmap capture -Q, on the same
# traffic: frames vethB receives (gen on vethA) and frames vethB's host
# stack sends (UDP from a socket in netns B). Counts are exact (in: the
# received, out: the sent, inout: both) and every captured frame's bytes
# equal the stock tcpdump's, frame for frame, in each direction. A filter
# ("udp and not port 7") runs in the kernel: the frames it rejects (port
# 7, sent the same way) are in no file and no count.
#
#   netns pdA$$                         netns pdB$$ (10.77.0.2)
#   pktmap gen -i pkt:vethA  vethA ==== vethB  tcpdump (stock, library),
#                                              pktmap capture; UDP sender
set -euo pipefail

PKTMAP=${PKTMAP:-pktmap}
NIN=${NIN:-1000}
NOUT=${NOUT:-300}
A=pdA$$
B=pdB$$

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

need_root
need_cmd ip
need_cmd tcpdump
need_cmd python3

ns_pair "$A" "$B"
ip -n "$B" addr add 10.77.0.2/24 dev vethB
# no ARP: the peer's address is known
ip -n "$B" neigh add 10.77.0.1 lladdr 02:00:00:00:00:01 dev vethB

# Records in a capture file.
records() {
	"$PKTMAP" recv -i "pcap:$1/R" --fast -T 0 -q --json >"$TMP/r.json"
	json "$TMP/r.json" packets
}

# The frames of a file as hex, one line each (no time stamps).
frames() {
	tcpdump -r "$1" -nn -xx 2>/dev/null | awk '
		/^[0-9]/ { if (f != "") print f; f = ""; next }
		{ for (i = 2; i <= NF; i++) f = f $i }
		END { if (f != "") print f }'
}

# Wait until a capture file holds n records (they are written as they come).
wait_records() {
	local f=$1 n=$2 t=300
	until [ -s "$f" ] && [ "$(records "$f")" -ge "$n" ]; do
		[ "$t" -gt 0 ] || fail "$f: $(records "$f" 2>/dev/null || echo 0) records, want $n"
		sleep 0.1
		t=$((t - 1))
	done
}

# Frames vethB receives (gen on vethA), and frames its host stack sends
# (and, filtered out, 50 to port 7).
send_in() {
	inA "$PKTMAP" gen -i pkt:vethA -n "$NIN" -l 100 -q -T 0 >/dev/null
}
send_out() {
	inB python3 -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range($NOUT):
    s.sendto(bytes([i % 256]) * (20 + i % 50), ('10.77.0.1', 9))
for i in range(50):
    s.sendto(b'rejected', ('10.77.0.1', 7))
"
}

FILTER="udp and not port 7"
for Q in in out inout; do
	case $Q in
	in) want=$NIN ;;
	out) want=$NOUT ;;
	inout) want=$((NIN + NOUT)) ;;
	esac
	rm -f "$TMP"/*.pcap "$TMP"/*.err
	bg ip netns exec "$B" tcpdump -Z root -U -n -Q "$Q" -i vethB -w "$TMP/stock.pcap" \
		"$FILTER" 2>"$TMP/stock.err"
	STOCK=$BG_PID
	bg ip netns exec "$B" "$PKTMAP" pcap-run tcpdump -Z root -U -n -Q "$Q" -i pkt:vethB \
		-w "$TMP/lib.pcap" "$FILTER" 2>"$TMP/lib.err"
	LIB=$BG_PID
	# shellcheck disable=SC2086
	# it stops at -c (timeout(1) would pass a SIGINT on twice, which
	# pktmap capture takes as "stop now")
	bg ip netns exec "$B" "$PKTMAP" capture -i pkt:vethB -Q "$Q" -w "$TMP/cap.pcap" \
		-c "$want" --json $FILTER >"$TMP/cap.json" 2>"$TMP/cap.err"
	CAP=$BG_PID
	wait_for "$TMP/stock.err" "listening on"
	wait_for "$TMP/lib.err" "listening on"
	wait_for "$TMP/cap.err" "listening on pkt:vethB \(TPACKET_V3 blocks, filter in the kernel\)"
	# The direction -Q leaves out goes first: capture stops at -c, so a
	# frame of that direction it took by mistake would be among its
	# first $want and show in the comparison with stock tcpdump's.
	if [ "$Q" = in ]; then
		send_out
		send_in
	else
		send_in
		send_out
	fi
	wait_records "$TMP/stock.pcap" "$want"
	wait_records "$TMP/lib.pcap" "$want"
	wait_records "$TMP/cap.pcap" "$want"
	for p in $STOCK $LIB; do kill -INT "$p" 2>/dev/null || true; done
	wait_bg "$STOCK"; [ "$WAIT_RC" = 0 ] || fail "-Q $Q: stock tcpdump: $(cat "$TMP/stock.err")"
	wait_bg "$LIB"; [ "$WAIT_RC" = 0 ] || fail "-Q $Q: tcpdump on the library: $(cat "$TMP/lib.err")"
	wait_bg "$CAP"; [ "$WAIT_RC" = 0 ] || fail "-Q $Q: pktmap capture exited $WAIT_RC: $(cat "$TMP/cap.err")"
	expect_eq "-Q $Q: stock tcpdump records" "$(records "$TMP/stock.pcap")" "$want"
	expect_eq "-Q $Q: library tcpdump records" "$(records "$TMP/lib.pcap")" "$want"
	expect_eq "-Q $Q: pktmap capture records" "$(records "$TMP/cap.pcap")" "$want"
	grep -q "^$want packets captured" "$TMP/lib.err" ||
		fail "-Q $Q: library tcpdump's exit lines: $(cat "$TMP/lib.err")"
	expect_eq "-Q $Q: pktmap capture written" "$(json "$TMP/cap.json" written)" "$want"
	frames "$TMP/stock.pcap" >"$TMP/stock.hex"
	frames "$TMP/lib.pcap" >"$TMP/lib.hex"
	frames "$TMP/cap.pcap" >"$TMP/cap.hex"
	expect_eq "-Q $Q: frames in the stock file" "$(wc -l <"$TMP/stock.hex")" "$want"
	cmp -s "$TMP/stock.hex" "$TMP/lib.hex" ||
		fail "-Q $Q: the library's frames differ from stock tcpdump's"
	cmp -s "$TMP/stock.hex" "$TMP/cap.hex" ||
		fail "-Q $Q: pktmap capture's frames differ from stock tcpdump's"
	echo "-Q $Q: $want frames, stock = library = pktmap capture, byte for byte"
done
echo "pkt_direction: ok"
