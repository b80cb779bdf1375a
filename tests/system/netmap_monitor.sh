#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# netmap's monitor ports on pktmap (src/monitor.c, docs/netmap.md): nmt
# (tests/netmap/nmt.c, both builds) receiving on "PORT/t", "/r", "/rt"
# checks every copy as a receiver checks packets: every sequence number,
# every byte, in order, and exactly COUNT of them.
#
#   nmt gen --- netmap:mPID{0 ---> nmt recv
#                   |  /t               |  /r, /rt
#                   v                   v
#               nmt recv (monitor)   nmt recv (monitor)
#
#   nmt gen --- valeX:a ---> switch ---> valeX:b
#                   | /t
#                   v
#               nmt recv (monitor)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

B=${PKTMAP_BUILD_ROOT:?}
LIB=$B/tests/nmt_lib
RAW=$B/tests/nmt_raw
RUN=("$PKTMAP" netmap-run --quiet)
P="m$$"
N=5000
# a monitor queue that holds every copy: no drop whatever the scheduling
Q="@conf:slots=8192"
on_exit() {
	local rc=$?
	rm -f /dev/shm/pktmap-"$(id -u)"/pipe."$P"* /dev/shm/pktmap-"$(id -u)"/.pipe."$P"*
	(exit "$rc")
	cleanup
}
trap on_exit EXIT
[ -x "$LIB" ] && [ -x "$RAW" ] || fail "nmt_lib/nmt_raw not built"

# watch CASE GEN_PORT RECV_PORT MON_PORT MON_CMD...: gen waits (NMT_GO)
# until the receiver and the monitor are open; all three must succeed.
watch() {
	local case=$1 gport=$2 rport=$3 mport=$4
	shift 4
	mkfifo "$TMP/$case.go"
	NMT_GO="$TMP/$case.go" bg "${GEN[@]}" gen "$gport" "$N" 200 poll >"$TMP/$case.tx" 2>&1
	local g=$BG_PID
	wait_for "$TMP/$case.tx" '^ready'
	bg "${RECV[@]}" recv "$rport" "$N" 200 poll >"$TMP/$case.rx" 2>&1
	local r=$BG_PID
	wait_for "$TMP/$case.rx" '^ready'
	bg "$@" recv "$mport" "$N" 200 poll >"$TMP/$case.mon" 2>&1
	local m=$BG_PID
	wait_for "$TMP/$case.mon" '^ready'
	echo go >"$TMP/$case.go"
	for pid in "$g" "$r" "$m"; do
		wait_bg "$pid"
		[ "$WAIT_RC" = 0 ] || fail "$case: $(cat "$TMP/$case".*)"
	done
	grep -q "^received $N in order, bytes ok" "$TMP/$case.mon" ||
		fail "$case: monitor: $(cat "$TMP/$case.mon")"
	echo "  $case: monitor $(tail -n 1 "$TMP/$case.mon")"
}

echo "1. /t on the sender's end (libnetmap monitor), /r and /rt on the receiver's (raw, netmap-run)"
GEN=("$LIB") RECV=("$LIB")
watch t "netmap:$P{0" "netmap:$P}0" "netmap:$P{0/t$Q" "$LIB"
watch r "netmap:${P}b{0" "netmap:${P}b}0" "netmap:${P}b}0/r$Q" "${RUN[@]}" "$RAW"
watch rt "netmap:${P}c{0" "netmap:${P}c}0" "netmap:${P}c}0/rt$Q" "${RUN[@]}" "$RAW"
echo "2. pktmap names through the emulation: netmap:pipe:NAME{0/t"
watch native "netmap:pipe:${P}d{0" "netmap:pipe:${P}d}0" "netmap:pipe:${P}d{0/t$Q" "$LIB"

echo "3. a switch port: valeX:a/t sees every frame a sends"
SW="valem$(($$ % 100000))"
BG_TIMEOUT=120 bg "$PKTMAP" switch "$SW" -T 0 -q >"$TMP/sw.out" 2>&1
swpid=$BG_PID
for _ in $(seq 300); do
	"$PKTMAP" switch --list "$SW" >/dev/null 2>&1 && break
	sleep 0.1
done
"$PKTMAP" switch --list "$SW" >/dev/null 2>&1 || fail "switch $SW did not start: $(cat "$TMP/sw.out")"
# the switch may drop towards b (a receiver starved beside busy loops);
# a's TX, which the monitor copies, has every frame
export NMT_ETH=1
mkfifo "$TMP/sw.go"
NMT_GO="$TMP/sw.go" NMT_RATE=20000 bg "${RUN[@]}" "$RAW" gen "$SW:a" "$N" 200 poll >"$TMP/sw.tx" 2>&1
g=$BG_PID
wait_for "$TMP/sw.tx" '^ready'
NMT_GAPS=1 bg "$LIB" recv "$SW:b" "$N" 200 poll >"$TMP/sw.rx" 2>&1
r=$BG_PID
wait_for "$TMP/sw.rx" '^ready'
bg "$LIB" recv "$SW:a/t$Q" "$N" 200 poll >"$TMP/sw.mon" 2>&1
m=$BG_PID
wait_for "$TMP/sw.mon" '^ready'
echo go >"$TMP/sw.go"
for pid in "$g" "$m" "$r"; do
	wait_bg "$pid"
	[ "$WAIT_RC" = 0 ] || fail "switch: $(cat "$TMP"/sw.*)"
done
grep -q "^received $N in order, bytes ok" "$TMP/sw.mon" ||
	fail "switch: monitor: $(cat "$TMP/sw.mon")"
echo "  switch: monitor $(tail -n 1 "$TMP/sw.mon"); b $(tail -n 1 "$TMP/sw.rx")"
unset NMT_ETH
kill "$swpid"
wait_bg "$swpid"

echo "4. one line where a monitor cannot be had (the program adds its own)"
out=$("$LIB" recv "netmap:${P}e{0/z" 1 60 2>&1 || true)
expect_eq "/z: one line says why" \
	"$(echo "$out" | grep -c "zero-copy monitors (/z) are not available: .*use /r, /t or /rt")" 1
out=$("$PKTMAP" netmap-run "$RAW" recv "netmap:${P}f{0/r" 1 60 2>&1 || true)
expect_eq "no port: one line says why" \
	"$(echo "$out" | grep -c "^pktmap netmap: .*no port 'pipe:${P}f{0' is open")" 1
echo "$out" | sed 's/^/  /'
echo "PASS"
