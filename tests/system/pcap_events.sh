#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# libpcap tools that wait in select()/poll()/epoll on the descriptor the
# library hands out (pcap_get_selectable_fd, pcap_fileno) instead of in
# pcap_loop(): pktmap_fd() wakes them on its own, with no required select
# timeout and no spinning, on pipes (no kernel in the way: counts exact).
#
#   pktmap gen -i pipe:tPIDx{0 ==== pipe ====> libpcap program / dumpcap /
#                                              tshark on pipe:tPIDx}0
#
# 1. a libpcap program in non-blocking mode waiting with no timeout in
#    select, poll and epoll gets every packet, with no more empty
#    dispatches than full ones (+2);
# 2. dumpcap -c N -w and tshark -c N -w: the file holds exactly what gen
#    sent, in order (they wait in select() on the fd);
# 3. tcpdump -D and tshark -D list pktmap's ports (pkt:IF, xdp:IF, an open
#    pipe) after the system's interfaces.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

need_cmd tcpdump
need_cmd tshark
need_cmd dumpcap
: "${PCAP_COMPAT_PROG:?PCAP_COMPAT_PROG must name tests/pcap_compat_prog}"
N=${N:-20000}
LIB=("env" "LD_LIBRARY_PATH=$PKTMAP_PCAP_LIBDIR")

recv_file() {
	"$PKTMAP" recv -i "pcap:$1/R" -T 0 -q --json >"$TMP/r.json"
	echo "$(json "$TMP/r.json" packets) $(json "$TMP/r.json" gaps)" \
	     "$(json "$TMP/r.json" reordered)"
}

gen() {
	timeout 60 "$PKTMAP" gen -i "pipe:${PIPE}$1{0" -T 0 -q -n "$2"
}

echo "1. non-blocking libpcap program waiting with no timeout"
for how in select poll epoll; do
	bg "${LIB[@]}" "$PCAP_COMPAT_PROG" wait "pipe:${PIPE}w$how}0" "$N" "$how" \
		>"$TMP/w$how.out"
	ppid=$BG_PID
	wait_for "$TMP/w$how.out" '^ready$'
	gen "w$how" "$N"
	wait_bg "$ppid"
	expect_eq "1: $how exit" "$WAIT_RC" 0
	expect_eq "1: $how" "$(tail -n 1 "$TMP/w$how.out")" "got $N"
done

echo "2. dumpcap and tshark -c $N -w"
for tool in dumpcap tshark; do
	bg "$PKTMAP" pcap-run "$tool" -i "pipe:${PIPE}$tool}0" -c "$N" \
		-w "$TMP/$tool.pcapng" 2>"$TMP/$tool.err"
	tpid=$BG_PID
	wait_for "$TMP/$tool.err" "^Capturing on"
	# dumpcap says so before it opens the port: wait until the pipe's
	# wake-up FIFOs exist (its open made them). The tool must make the
	# pipe: having dropped its capabilities, it cannot take over the
	# memory of a region gen made.
	for _ in $(seq 300); do
		ls "/dev/shm/pktmap-$(id -u)/pipe.${PIPE}$tool".w* >/dev/null 2>&1 && break
		sleep 0.1
	done
	gen "$tool" "$N"
	wait_bg "$tpid"
	expect_eq "2: $tool exit ($(tr '\n' ';' <"$TMP/$tool.err"))" "$WAIT_RC" 0
	expect_eq "2: $tool file" "$(recv_file "$TMP/$tool.pcapng")" "$N 0 0"
	grep -q "Packets captured: $N\|^$N packets captured\|Packets: $N\b" \
		"$TMP/$tool.err" || fail "2: $tool: $(cat "$TMP/$tool.err")"
done

echo "3. tcpdump -D and tshark -D"
# An open pipe end is listed too.
bg "${LIB[@]}" "$PCAP_COMPAT_PROG" wait "pipe:${PIPE}d}0" 1 poll >"$TMP/d.out"
dpid=$BG_PID
wait_for "$TMP/d.out" '^ready$'
"${LIB[@]}" tcpdump -D >"$TMP/D.tcpdump" 2>&1
"$PKTMAP" pcap-run tshark -D >"$TMP/D.tshark" 2>&1
gen d 1
wait_bg "$dpid"
for tool in tcpdump tshark; do
	for dev in pkt:lo xdp:lo "pipe:${PIPE}d}0"; do
		grep -qF "$dev" "$TMP/D.$tool" || fail "3: $tool -D lacks $dev: $(cat "$TMP/D.$tool")"
	done
	# The system's own come first, numbered as stock libpcap numbers them.
	stock=$(env -u LD_LIBRARY_PATH tcpdump -D 2>&1 | wc -l)
	refute "3: $tool -D renumbers" pktmap head -n "$stock" "$TMP/D.$tool"
done
echo "   $(grep -c pktmap "$TMP/D.tcpdump") pktmap entries"
echo "PASS"
