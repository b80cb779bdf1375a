#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Unmodified libpcap tools on pktmap's libpcap-compatible library, fed by
# pktmap gen through a pipe (no kernel in the way: every count is exact).
#
#   pktmap gen -i pipe:tPIDx{0 ==== pipe ====> pktmap pcap-run tcpdump
#                                                 -i 'pipe:tPIDx}0' -w FILE
#
# 1. tcpdump -c N -w: the file holds exactly what gen sent, in order, and
#    tcpdump's exit lines say N captured, N received by filter, 0 dropped.
# 2. filters: "udp port 9" over ports 8-10 keeps exactly a third.
# 3. libpcap's errors: a bad filter, an unknown device, word for word as
#    the stock tcpdump prints them.
# 4. a libpcap program linked against the library: pcap_inject and
#    pcap_sendpacket (every frame of a file, read by the forwarded offline
#    API) arrive in order at pktmap recv; pcap_next_ex/next/dispatch with a
#    filter and pcap_stats; select() on pcap_get_selectable_fd as dumpcap
#    does; the API's answers (activation, datalinks, timeouts, breakloop,
#    dumpers, errors).
# 5. offline files through the library: the same output as stock tcpdump.
# 6. the LD_PRELOAD variant; tshark (through dumpcap) when installed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

need_cmd tcpdump
: "${PCAP_COMPAT_PROG:?PCAP_COMPAT_PROG must name tests/pcap_compat_prog}"
N=${N:-10000}
RUN=("$PKTMAP" pcap-run)

# gen_to CASE ARGS...: send with gen on pipe:$PIPE$CASE{0 once the reader
# of the other end has it open: its "listening on" line in $TMP/CASE.err.
gen_to() {
	local c=$1
	shift
	wait_for "$TMP/$c.err" "listening on" 60
	timeout 60 "$PKTMAP" gen -i "pipe:${PIPE}$c{0" -T 0 -q "$@"
}

recv_file() {
	"$PKTMAP" recv -i "pcap:$1/R" -T 0 -q --json >"$TMP/r.json"
	echo "$(json "$TMP/r.json" packets) $(json "$TMP/r.json" gaps)" \
	     "$(json "$TMP/r.json" reordered)"
}

echo "1. tcpdump -c $N -w on pipe:${PIPE}a}0"
bg "${RUN[@]}" tcpdump -Z root -i "pipe:${PIPE}a}0" -c "$N" -w "$TMP/a.pcap" \
	2>"$TMP/a.err"
tpid=$BG_PID
gen_to a -n "$N"
wait_bg "$tpid"
expect_eq "1: tcpdump exit" "$WAIT_RC" 0
expect_eq "1: file" "$(recv_file "$TMP/a.pcap")" "$N 0 0"
grep -q "^$N packets captured$" "$TMP/a.err" || fail "1: $(cat "$TMP/a.err")"
grep -q "^$N packets received by filter$" "$TMP/a.err" || fail "1: $(cat "$TMP/a.err")"
grep -q "^0 packets dropped by kernel$" "$TMP/a.err" || fail "1: $(cat "$TMP/a.err")"
grep -q "listening on pipe:${PIPE}a}0, link-type EN10MB" "$TMP/a.err" ||
	fail "1: $(cat "$TMP/a.err")"
echo "   $(tr '\n' ';' <"$TMP/a.err")"

echo "2. filter udp port 9 over ports 8-10"
bg "${RUN[@]}" tcpdump -Z root -i "pipe:${PIPE}b}0" -c 10000 -w "$TMP/b.pcap" \
	udp port 9 2>"$TMP/b.err"
tpid=$BG_PID
gen_to b -n 30000 -d 10.1.0.1:8-10
wait_bg "$tpid"
expect_eq "2: tcpdump exit" "$WAIT_RC" 0
expect_eq "2: packets" "$(tcpdump -nn -r "$TMP/b.pcap" 2>/dev/null | wc -l)" 10000
expect_eq "2: port 9" \
	"$(tcpdump -nn -r "$TMP/b.pcap" 2>/dev/null | grep -c '\.9: UDP')" 10000
grep -q "^10000 packets received by filter$" "$TMP/b.err" ||
	fail "2: $(cat "$TMP/b.err")"
# and the complement
bg "${RUN[@]}" tcpdump -Z root -i "pipe:${PIPE}c}0" -c 20000 -w "$TMP/c.pcap" \
	not udp port 9 2>"$TMP/c.err"
tpid=$BG_PID
gen_to c -n 30000 -d 10.1.0.1:8-10
wait_bg "$tpid"
expect_eq "2: others" \
	"$(tcpdump -nn -r "$TMP/c.pcap" 2>/dev/null | grep -vc '\.9: UDP')" 20000

echo "3. errors as libpcap words them"
tcpdump -r "$TMP/a.pcap" 'udp port' >/dev/null 2>"$TMP/stock.err" || true
rc=0
"${RUN[@]}" tcpdump -i "pipe:${PIPE}e}0" 'udp port' 2>"$TMP/e.err" || rc=$?
expect_eq "3: bad filter exit" "$rc" 1
expect_eq "3: bad filter message" "$(grep -v '^tcpdump: listening' "$TMP/e.err")" \
	"$(grep -v '^reading from' "$TMP/stock.err")"
dev=pmnosuch$$
rc=0
tcpdump -i "$dev" 2>"$TMP/stock.err" || rc=$?
expect_eq "3: stock exit" "$rc" 1
rc=0
"${RUN[@]}" tcpdump -i "$dev" 2>"$TMP/e.err" || rc=$?
expect_eq "3: unknown device exit" "$rc" 1
expect_eq "3: unknown device" "$(head -1 "$TMP/e.err")" "$(head -1 "$TMP/stock.err")"
rc=0
"${RUN[@]}" tcpdump -i "xdp:$dev" 2>"$TMP/e.err" || rc=$?
expect_eq "3: xdp: unknown device exit" "$rc" 1
expect_eq "3: xdp: unknown device" "$(head -1 "$TMP/e.err")" \
	"tcpdump: xdp:$dev: No such device exists"
echo "   $(tr '\n' ' ' <"$TMP/e.err")"

echo "4. a libpcap program on the library"
timeout 60 "$PKTMAP" gen -i "pcap:$TMP/g.pcap" -n "$N" -l 60-1514 -T 0 -q
bg "$PKTMAP" recv -i "pipe:${PIPE}i{0" -n "$N" -T 0 -q --json >"$TMP/i.json"
rpid=$BG_PID
sleep 0.3
timeout 60 "$PCAP_COMPAT_PROG" inject "pipe:${PIPE}i}0" "$TMP/g.pcap" \
	>"$TMP/i.out" || fail "4: inject: $(cat "$TMP/i.out")"
wait_bg "$rpid"
expect_eq "4: injected" "$(cat "$TMP/i.out")" "injected $N"
expect_eq "4: received" "$(json "$TMP/i.json" packets)" "$N"
expect_eq "4: gaps" "$(json "$TMP/i.json" gaps)" 0
expect_eq "4: reordered" "$(json "$TMP/i.json" reordered)" 0

"$PCAP_COMPAT_PROG" next "pipe:${PIPE}o}0" 9000 "udp dst port 9" >"$TMP/o.out" \
	2>"$TMP/o.err" &
ppid=$!
BG_PIDS+=("$ppid")
gen_to o -n 27000 -d 10.1.0.1:8-10
wait_bg "$ppid"
expect_eq "4: next exit" "$WAIT_RC" 0
expect_eq "4: next" "$(cat "$TMP/o.out")" "got 9000 recv 9000 drop 0"

"$PCAP_COMPAT_PROG" select "pipe:${PIPE}s}0" 5000 >"$TMP/s.out" 2>"$TMP/s.err" &
ppid=$!
BG_PIDS+=("$ppid")
gen_to s -n 5000
wait_bg "$ppid"
expect_eq "4: select" "$(cat "$TMP/s.out")" "got 5000"

timeout 60 "$PCAP_COMPAT_PROG" api "pipe:${PIPE}p}0" || fail "4: api"

echo "5. offline files through the library"
tcpdump -nn -vv -r "$TMP/g.pcap" >"$TMP/stock.txt" 2>&1
LD_LIBRARY_PATH=$PKTMAP_PCAP_LIBDIR tcpdump -nn -vv -r "$TMP/g.pcap" \
	>"$TMP/lib.txt" 2>&1
cmp -s "$TMP/stock.txt" "$TMP/lib.txt" || fail "5: tcpdump -r differs"
LD_LIBRARY_PATH=$PKTMAP_PCAP_LIBDIR tcpdump --version 2>&1 |
	grep -q "with pktmap" || fail "5: the library is not the one loaded"

echo "6. LD_PRELOAD variant"
# without the test runner's LD_LIBRARY_PATH (which names the library's
# directory): only the preload can make tcpdump open a pipe: port
bg env -u LD_LIBRARY_PATH "${RUN[@]}" --preload tcpdump -Z root -i "pipe:${PIPE}l}0" -c 1000 \
	-w "$TMP/l.pcap" 2>"$TMP/l.err"
tpid=$BG_PID
gen_to l -n 1000
wait_bg "$tpid"
expect_eq "6: preload" "$(recv_file "$TMP/l.pcap")" "1000 0 0"

if command -v tshark >/dev/null 2>&1; then
	echo "6. tshark -c $N -w, started after gen made the pipe"
	# gen (root, every capability) makes the pipe's region first; dumpcap,
	# which drops its capabilities, joins it through the socket of gen's
	# cleaner (docs/libpcap.md, docs/design.md), and gets every frame.
	BG_TIMEOUT=120 bg "$PKTMAP" gen -i "pipe:${PIPE}t{0" -n "$N" -R 100k -T 0 -q
	gpid=$BG_PID
	for _ in $(seq 600); do
		[ "$(ports_named "pipe:${PIPE}t{0")" = 1 ] && break
		sleep 0.1
	done
	[ "$(ports_named "pipe:${PIPE}t{0")" = 1 ] || fail "6: gen did not open pipe:${PIPE}t{0"
	bg "${RUN[@]}" tshark -i "pipe:${PIPE}t}0" -c "$N" -w "$TMP/t.pcapng" \
		2>"$TMP/t.err"
	tpid=$BG_PID
	wait_bg "$tpid"
	[ "$WAIT_RC" = 0 ] || fail "6: tshark exit $WAIT_RC: $(tr '\n' ' ' <"$TMP/t.err")"
	wait_bg "$gpid"
	expect_eq "6: gen exit" "$WAIT_RC" 0
	expect_eq "6: tshark file" "$(recv_file "$TMP/t.pcapng")" "$N 0 0"
else
	[ "${CI:-}" != true ] || fail "tshark is not installed (CI must have it)"
	echo "6. tshark not installed: skipped"
fi

echo "PASS"
